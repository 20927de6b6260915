// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: the applications' UNIX socket.
 *
 * Access control is the socket's permissions: mode 0660 (--mode), owned
 * by group "hvtrace" when that group exists (--group), so only root and
 * the group's members can connect.  Each client gets the area descriptors
 * with its HELLO reply: the area file read-write (rings) and read-only
 * (control page).  A descriptor opened read-write covers the whole file,
 * control page included; neither a PCI BAR resource file nor a /dev/shm
 * file can be split by offset, so a guest process that wants to can write
 * the control page.  That is inside the guest's trust domain (it could as
 * well corrupt its own rings), and the host never reads its decisions
 * back from that page.  See docs/proxy.md.
 *
 * Requests are validated here before they travel on: a client cannot set
 * the replay flag, name another client's channel, or make the agent read
 * another process's /proc entries.  A client that vanishes costs its
 * registrations on the host (CLIENT_GONE), nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <hvtrace/abi.h>

#include "hvt_util.h"

#include "agent.h"

/*
 * The gid of group @name from /etc/group, or -1.  Parsed here rather than
 * with getgrnam(): the agent is linked statically for a busybox guest,
 * where glibc's NSS modules are not available.
 */
static long group_gid(const char *name)
{
	char line[1024];
	size_t len = strlen(name);
	long gid = -1;
	FILE *f;

	f = fopen("/etc/group", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p, *end;

		if (strncmp(line, name, len) || line[len] != ':')
			continue;
		p = strchr(line + len + 1, ':');
		if (!p)
			break;
		gid = strtol(p + 1, &end, 10);
		if (end == p + 1 || *end != ':' || gid < 0)
			gid = -1;
		break;
	}
	fclose(f);
	return gid;
}

int clients_listen(struct agent *ag)
{
	struct sockaddr_un sa;
	long gid;
	int fd, ret;

	ret = hvt_util_sock_prepare(ag->sock_path, &sa);
	switch (ret) {
	case 0:
		break;
	case -ENAMETOOLONG:
		agent_log("socket path too long: %s", ag->sock_path);
		return ret;
	case -EEXIST:
		agent_log("%s exists and is not a socket: remove it or "
			  "choose another --socket",
			  ag->sock_path);
		return ret;
	case -EADDRINUSE:
		agent_log("another hvtrace-agent is listening on %s: "
			  "stop it first, or use another --socket",
			  ag->sock_path);
		return ret;
	default:
		agent_log("cannot create the directory of %s: %s",
			  ag->sock_path, strerror(-ret));
		return ret;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, 64)) {
		ret = -errno;
		agent_log("cannot listen on %s: %s", ag->sock_path,
			  strerror(-ret));
		close(fd);
		return ret;
	}
	gid = ag->group ? group_gid(ag->group) : -1;
	if (gid >= 0 && chown(ag->sock_path, (uid_t)-1, (gid_t)gid))
		agent_log("warning: cannot give %s to group %s: %s",
			  ag->sock_path, ag->group, strerror(errno));
	if (ag->group && gid < 0)
		agent_dbg("no group '%s': the socket stays with group %d",
			  ag->group, (int)getgid());
	if (chmod(ag->sock_path, ag->sock_mode))
		agent_log("warning: cannot chmod %s: %s", ag->sock_path,
			  strerror(errno));
	ag->lfd = fd;
	return 0;
}

int read_comm(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	if (pid <= 0 || tid <= 0 || size < 2)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid,
		 (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		n--;
	if ((size_t)n > HVT_PROTO_COMM_MAX)
		n = HVT_PROTO_COMM_MAX;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	return n ? 0 : -EIO;
}

struct client *client_by_chan(struct agent *ag, uint32_t chan)
{
	struct client *c;

	for (c = ag->clients; c; c = c->next)
		if (c->chan == chan)
			return c;
	return NULL;
}

void clients_accept(struct agent *ag)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	char comm[32];
	int fd, i;

	/* A bounded batch per wake-up; the rest waits for the next round. */
	for (i = 0; i < 16; i++) {
		fd = accept4(ag->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				agent_log("accept: %s", strerror(errno));
			return;
		}
		if (ag->nr_clients >= AGENT_MAX_CLIENTS) {
			agent_log("refusing a client: %d already connected",
				  AGENT_MAX_CLIENTS);
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
			c->pid = cred.pid;
			c->uid = cred.uid;
		}
		c->fd = fd;
		do {
			c->chan = ag->next_chan++;
		} while (!c->chan || client_by_chan(ag, c->chan));
		hvt_proto_dec_init(&c->dec, c->rbuf, sizeof(c->rbuf),
				   sizeof(c->rbuf));
		c->next = ag->clients;
		ag->clients = c;
		ag->nr_clients++;
		agent_dbg("client %u connected (pid %d, uid %d)", c->chan,
			  (int)c->pid, (int)c->uid);
		if (c->pid > 0 &&
		    !read_comm(c->pid, c->pid, comm, sizeof(comm)))
			link_send_cmdline(ag, (uint32_t)c->pid, comm);
	}
}

void client_poll_prep(struct client *c, struct pollfd *pfd)
{
	pfd->fd = c->fd;
	pfd->events = 0;
	/* Backpressure: stop reading while replies pile up unread. */
	if (!c->closing && c->q.bytes < AGENT_CLIENT_QUEUE)
		pfd->events |= POLLIN;
	if (c->q.head)
		pfd->events |= POLLOUT;
}

void client_reply(struct agent *ag, uint32_t chan, const struct hvt_msg *m)
{
	struct client *c = client_by_chan(ag, chan);

	if (!c || c->closing)
		return;
	if (c->q.bytes > 4 * AGENT_CLIENT_QUEUE) {
		agent_log("client %u (pid %d) does not read its replies: "
			  "disconnecting it",
			  c->chan, (int)c->pid);
		c->closing = true;
		outq_clear(&c->q);
		return;
	}
	outq_push(&c->q, m, NULL, 0);
}

static void client_error(struct agent *ag, struct client *c,
			 const struct hvt_msg *req, int status,
			 const char *text)
{
	struct hvt_msg r;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_ERROR;
	r.flags = HVT_PF_REPLY;
	r.req = req ? req->req : 0;
	r.u.result.status = status;
	r.u.result.text.ptr = text;
	r.u.result.text.len = (uint32_t)strnlen(text, HVT_PROTO_TEXT_MAX);
	client_reply(ag, c->chan, &r);
}

void client_record_reg(struct client *c, const char *def, uint32_t id,
		       uint32_t bit)
{
	size_t i;

	for (i = 0; i < c->nr_regs; i++)
		if (c->regs[i].id == id) {
			c->regs[i].refs++;
			return;
		}
	if (c->nr_regs == c->cap_regs) {
		size_t cap = c->cap_regs ? c->cap_regs * 2 : 8;
		struct creg *n = realloc(c->regs, cap * sizeof(*n));

		if (!n)
			return;
		c->regs = n;
		c->cap_regs = cap;
	}
	c->regs[c->nr_regs].def = strdup(def);
	if (!c->regs[c->nr_regs].def)
		return;
	c->regs[c->nr_regs].id = id;
	c->regs[c->nr_regs].bit = bit;
	c->regs[c->nr_regs].refs = 1;
	c->nr_regs++;
}

void client_forget_reg(struct client *c, uint32_t id)
{
	size_t i;

	for (i = 0; i < c->nr_regs; i++)
		if (c->regs[i].id == id) {
			if (--c->regs[i].refs)
				return;
			free(c->regs[i].def);
			c->regs[i] = c->regs[--c->nr_regs];
			return;
		}
}

void clients_notice(struct agent *ag, const struct hvt_msg *m)
{
	struct client *c;
	size_t i;

	for (c = ag->clients; c; c = c->next)
		for (i = 0; i < c->nr_regs; i++)
			if (c->regs[i].id == m->u.event_state.id) {
				if (c->q.bytes < AGENT_CLIENT_QUEUE)
					outq_push(&c->q, m, NULL, 0);
				break;
			}
}

static void client_hello(struct agent *ag, struct client *c,
			 const struct hvt_msg *m)
{
	int fds[2] = { ag->area_fd, ag->ctrl_fd };
	struct hvt_msg r;

	if (m->u.hello.role != HVT_ROLE_CLIENT ||
	    m->u.hello.min_version > HVT_PROTO_VERSION ||
	    m->u.hello.max_version < HVT_PROTO_MIN_VERSION) {
		client_error(ag, c, m, -EPROTONOSUPPORT,
			     "this agent speaks protocol version 1 to "
			     "clients (role 3)");
		c->closing = true;
		return;
	}
	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_HELLO;
	r.flags = HVT_PF_REPLY;
	r.req = m->req;
	r.u.hello.min_version = HVT_PROTO_VERSION;
	r.u.hello.max_version = HVT_PROTO_VERSION;
	r.u.hello.role = HVT_ROLE_AGENT;
	r.u.hello.nr_fds = 2;
	r.u.hello.pid = (uint32_t)getpid();
	r.u.hello.nr_cpus = ag->info.nr_cpus;
	r.u.hello.clock_id = ag->info.clock_id;
	r.u.hello.writer_kind = HVT_WRITER_GUEST;
	r.u.hello.area_offset = 0;
	r.u.hello.area_size = ag->area_size;
	r.u.hello.generation = ag->generation;
	r.u.hello.name.ptr = ag->name;
	r.u.hello.name.len = (uint32_t)strlen(ag->name);
	if (outq_push(&c->q, &r, fds, 2)) {
		c->closing = true;
		return;
	}
	c->hello_done = true;
}

static void client_forward(struct agent *ag, struct client *c,
			   const struct hvt_msg *m)
{
	struct pending *p;
	struct hvt_msg f = *m;

	if (ag->nr_pend >= AGENT_MAX_PENDING) {
		client_error(ag, c, m, -EBUSY,
			     "too many requests waiting for the host: retry "
			     "later");
		return;
	}
	f.chan = c->chan;
	f.req = 0;
	p = pending_new(m->type, c->chan, m->req, &f);
	if (!p) {
		client_error(ag, c, m, -ENOMEM, "agent out of memory");
		return;
	}
	link_submit(ag, p);
}

static void client_cmdline(struct agent *ag, struct client *c,
			   const struct hvt_msg *m)
{
	char comm[32];

	/* Only threads of the client's own process, named by the kernel. */
	if (c->pid <= 0 || m->u.cmdline.pid > INT32_MAX ||
	    read_comm(c->pid, (pid_t)m->u.cmdline.pid, comm, sizeof(comm)))
		return;
	link_send_cmdline(ag, m->u.cmdline.pid, comm);
}

static void client_frame(struct agent *ag, struct client *c,
			 const struct hvt_frame *f)
{
	const char *why = NULL;
	struct hvt_msg m;
	int ret;

	ret = hvt_msg_decode(f, &m, &why);
	if (ret) {
		c->errors++;
		if (!(f->flags & HVT_PF_REPLY)) {
			struct hvt_msg req = { .req = f->req };

			client_error(ag, c, &req, ret,
				     why ? why : "malformed message");
		}
		return;
	}
	if (m.flags & HVT_PF_REPLY)
		return;	/* clients have nothing to answer */
	if (m.type == HVT_MSG_HELLO) {
		client_hello(ag, c, &m);
		return;
	}
	if (!c->hello_done) {
		c->errors++;
		client_error(ag, c, &m, -EPROTO, "send HELLO first");
		return;
	}
	switch (m.type) {
	case HVT_MSG_REGISTER:
		if (m.u.reg.flags) {
			c->errors++;
			client_error(ag, c, &m, -EINVAL,
				     "clients cannot set REGISTER flags");
			return;
		}
		if (c->nr_regs >= AGENT_MAX_REGS) {
			client_error(ag, c, &m, -EMFILE,
				     "too many registrations on this "
				     "connection");
			return;
		}
		client_forward(ag, c, &m);
		break;
	case HVT_MSG_UNREGISTER:
	case HVT_MSG_DELETE:
		client_forward(ag, c, &m);
		break;
	case HVT_MSG_CMDLINE:
		client_cmdline(ag, c, &m);
		break;
	case HVT_MSG_BYE:
		c->closing = true;
		break;
	default:
		c->errors++;
		client_error(ag, c, &m, -EOPNOTSUPP,
			     "the agent does not take this message from "
			     "clients");
		break;
	}
}

static void client_close(struct agent *ag, struct client *c)
{
	struct client **pp;
	size_t i;

	for (pp = &ag->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	ag->nr_clients--;
	agent_dbg("client %u gone (pid %d, %zu registrations)", c->chan,
		  (int)c->pid, c->nr_regs);
	link_client_gone(ag, c->chan);
	close(c->fd);
	outq_clear(&c->q);
	for (i = 0; i < c->nr_regs; i++)
		free(c->regs[i].def);
	free(c->regs);
	free(c);
}

void client_poll_done(struct agent *ag, struct client *c,
		      const struct pollfd *pfd)
{
	struct hvt_frame f;
	uint8_t *room;
	uint32_t space;
	ssize_t n;
	int ret;

	if (pfd->revents & POLLNVAL) {
		c->closing = true;
		outq_clear(&c->q);
		return;
	}
	if (pfd->revents & POLLOUT) {
		if (outq_flush(&c->q, c->fd, true) < 0) {
			c->closing = true;
			outq_clear(&c->q);
			return;
		}
	}
	if (c->closing && (pfd->revents & (POLLHUP | POLLERR))) {
		outq_clear(&c->q);
		return;
	}
	if (!(pfd->revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	space = hvt_proto_dec_room(&c->dec, &room);
	n = recv(c->fd, room, space, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		c->closing = true;
		outq_clear(&c->q);
		return;
	}
	if (n > 0)
		hvt_proto_dec_added(&c->dec, (uint32_t)n);
	/* Bounded by the decoder's buffer (one read's worth of frames). */
	while ((ret = hvt_proto_dec_next(&c->dec, &f)) != 0) {
		if (ret < 0) {
			c->errors++;
			continue;
		}
		client_frame(ag, c, &f);
	}
	if (c->errors > AGENT_CLIENT_MAX_ERRORS && !c->closing) {
		agent_log("client %u (pid %d) broke the protocol %llu times: "
			  "disconnecting it",
			  c->chan, (int)c->pid,
			  (unsigned long long)c->errors);
		c->closing = true;
	}
}

void clients_reap(struct agent *ag)
{
	struct client *c, *n;

	for (c = ag->clients; c; c = n) {
		n = c->next;
		if (c->closing && !c->q.head)
			client_close(ag, c);
	}
}
