// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: the control channel to the host.
 *
 * Two transports, one protocol:
 *
 *   chardev  a virtio-serial port (/dev/virtio-ports/hvtrace-control).
 *            No descriptor passing, no peer credentials.  The host end is
 *            a QEMU chardev socket that hvtraced connects to whenever it
 *            likes: while nobody is connected, poll() reports POLLHUP,
 *            read() returns 0 and writes would block.  The agent then
 *            stops polling the port and probes it every 500 ms (no busy
 *            loop), and says HELLO when the host appears.  Bytes may be
 *            lost at a (re)connection, so the stream decoder resynchronises
 *            on the next valid frame.
 *   socket   hvtraced's UNIX socket on the same machine (no VM): the HELLO
 *            carries the area descriptor (SCM_RIGHTS) so the daemon maps
 *            exactly the file the agent formatted.  Reconnects every second
 *            when the daemon is away.
 *
 * Session (docs/proxy.md has the state machine): either side may send
 * HELLO; the other answers with its own identity.  When a session comes up
 * the agent replays what the host must know -- every live registration
 * (REGISTER with HVT_REG_REPLAY and the binding the client holds), the
 * clients that left while the link was down (CLIENT_GONE), the requests
 * that waited for the host, and the clients' comms.  The daemon treats a
 * replay of a reference it already holds as a no-op, so replaying after a
 * mere reconnect is harmless, and after a daemon restart it rebuilds the
 * host's registry.  Requests a client made while no host was there wait up
 * to --host-wait, then fail with EHOSTDOWN; requests in flight when the
 * link drops fail with ECONNRESET.
 *
 * This file holds the transports, the session and the pending requests;
 * link_frame.c handles the frames from the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <hvtrace/abi.h>

#include "agent.h"

#define LINK_RETRY_MS		1000
#define LINK_PROBE_MS		500
#define LINK_HELLO_RETRY_MS	2000
#define LINK_REQUEST_MS		15000
#define LINK_MAX_GONE		4096

void link_init(struct agent *ag, enum link_kind kind, const char *path)
{
	struct link *l = &ag->link;

	l->kind = kind;
	snprintf(l->path, sizeof(l->path), "%s", path);
	l->fd = -1;
	l->next_req = 1;
	hvt_proto_dec_init(&l->dec, l->rbuf, sizeof(l->rbuf), sizeof(l->rbuf));
}

/* --- pending requests ----------------------------------------------------- */

struct pending *pending_new(uint16_t type, uint32_t chan, uint32_t client_req,
			    const struct hvt_msg *m)
{
	struct pending *p = calloc(1, sizeof(*p));
	const struct hvt_str *s = NULL;
	struct hvt_str *d = NULL;

	if (!p)
		return NULL;
	p->type = type;
	p->chan = chan;
	p->client_req = client_req;
	p->msg = *m;
	p->msg.flags = 0;
	p->msg.chan = chan;
	if (type == HVT_MSG_REGISTER) {
		s = &m->u.reg.def;
		d = &p->msg.u.reg.def;
	} else if (type == HVT_MSG_DELETE) {
		s = &m->u.arg.s;
		d = &p->msg.u.arg.s;
	}
	if (s) {
		p->store = malloc(s->len + 1);
		if (!p->store) {
			free(p);
			return NULL;
		}
		memcpy(p->store, s->ptr, s->len);
		p->store[s->len] = '\0';
		d->ptr = (const char *)p->store;
		if (type == HVT_MSG_REGISTER)
			p->def = (char *)p->store;
	}
	return p;
}

void pending_free(struct pending *p)
{
	free(p->store);
	free(p);
}

void pending_unlink(struct agent *ag, struct pending *p)
{
	struct pending **pp;

	for (pp = &ag->pend; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			ag->nr_pend--;
			return;
		}
}

/* Answer the client that waits on @p (if any) with an error. */
void pending_fail(struct agent *ag, struct pending *p, int status,
		  const char *text)
{
	struct hvt_msg r;

	if (p->chan == 0 && p->type == HVT_MSG_REGISTER)
		ag->trig_pending = false;
	if (!p->client_req)
		return;
	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_ERROR;
	r.flags = HVT_PF_REPLY;
	r.req = p->client_req;
	r.u.result.status = status;
	r.u.result.text.ptr = text;
	r.u.result.text.len = (uint32_t)strlen(text);
	client_reply(ag, p->chan, &r);
}

int link_push(struct agent *ag, const struct hvt_msg *m)
{
	struct link *l = &ag->link;
	int ret;

	if (l->fd < 0 || l->hup)
		return -ENOTCONN;
	ret = outq_push(&l->q, m, NULL, 0);
	if (ret)
		return ret;
	l->frames_out++;
	/*
	 * Send at once rather than on the next poll round: time-sync answers
	 * must leave right after their clock reading, or the extra delay on
	 * the way back skews the host's estimate of when it was taken.  What
	 * does not go now stays queued for POLLOUT.
	 */
	if (outq_flush(&l->q, l->fd, l->kind == LINK_SOCKET) < 0)
		agent_dbg("write to the host failed; the next poll handles it");
	return 0;
}

static void pending_send(struct agent *ag, struct pending *p)
{
	struct link *l = &ag->link;

	do {
		p->host_req = l->next_req++;
	} while (!p->host_req);
	p->msg.req = p->host_req;
	p->deadline_ms = agent_now_ms() + LINK_REQUEST_MS;
	if (link_push(ag, &p->msg)) {
		pending_unlink(ag, p);
		pending_fail(ag, p, -ENOMEM, "agent out of memory");
		pending_free(p);
	}
}

int link_submit(struct agent *ag, struct pending *p)
{
	struct link *l = &ag->link;

	if (l->q.bytes > AGENT_LINK_QUEUE) {
		pending_fail(ag, p, -EBUSY,
			     "the host does not read the control channel; "
			     "retry later");
		pending_free(p);
		return -EBUSY;
	}
	/* Append, so requests reach the host in the order they came. */
	{
		struct pending **pp = &ag->pend;

		while (*pp)
			pp = &(*pp)->next;
		*pp = p;
		ag->nr_pend++;
	}
	if (l->up) {
		pending_send(ag, p);
	} else {
		p->deadline_ms = agent_now_ms() + ag->host_wait_ms;
		agent_dbg("%s from client %u waits for the host",
			  hvt_msg_type_name(p->type), p->chan);
	}
	return 0;
}

struct pending *pending_by_req(struct agent *ag, uint32_t req)
{
	struct pending *p;

	if (!req)
		return NULL;
	for (p = ag->pend; p; p = p->next)
		if (p->host_req == req)
			return p;
	return NULL;
}

/* --- session -------------------------------------------------------------- */

void link_hello(struct agent *ag, const struct hvt_msg *answer_to)
{
	struct link *l = &ag->link;
	struct hvt_msg m;
	int fds[1] = { ag->area_fd };
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_HELLO;
	if (answer_to) {
		m.flags = HVT_PF_REPLY;
		m.req = answer_to->req;
		m.u.hello.min_version = HVT_PROTO_VERSION;
		m.u.hello.max_version = HVT_PROTO_VERSION;
	} else {
		do {
			m.req = l->next_req++;
		} while (!m.req);
		m.u.hello.min_version = HVT_PROTO_MIN_VERSION;
		m.u.hello.max_version = HVT_PROTO_VERSION;
		l->hello_ms = agent_now_ms();
	}
	m.u.hello.role = HVT_ROLE_AGENT;
	/* This boot's kernel files, then the formats, follow each session
	 * (kformats.c). */
	m.u.hello.caps = kformats_offered(ag) ? HVT_CAP_AGENT_KBOOT : 0;
	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.nr_cpus = ag->info.nr_cpus;
	m.u.hello.clock_id = ag->info.clock_id;
	m.u.hello.writer_kind = HVT_WRITER_GUEST;
	m.u.hello.area_offset = 0;
	m.u.hello.area_size = ag->area_size;
	m.u.hello.generation = ag->generation;
	m.u.hello.name.ptr = ag->name;
	m.u.hello.name.len = (uint32_t)strlen(ag->name);
	/* Over a local socket the area itself travels with the HELLO. */
	if (l->kind == LINK_SOCKET) {
		m.u.hello.nr_fds = 1;
		ret = outq_push(&l->q, &m, fds, 1);
	} else {
		ret = outq_push(&l->q, &m, NULL, 0);
	}
	if (ret)
		agent_log("cannot queue HELLO: %s", strerror(-ret));
	else
		l->frames_out++;
}

static int creg_cmp(const void *a, const void *b)
{
	const struct creg *const *x = a, *const *y = b;

	return (*x)->id < (*y)->id ? -1 : (*x)->id > (*y)->id;
}

static void link_replay_reg(struct agent *ag, uint32_t chan, const char *def,
			    uint32_t id, uint32_t bit)
{
	struct pending *p;
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REGISTER;
	m.u.reg.flags = HVT_REG_REPLAY;
	m.u.reg.want_id = id;
	m.u.reg.want_bit = bit;
	m.u.reg.def.ptr = def;
	m.u.reg.def.len = (uint32_t)strlen(def);
	p = pending_new(HVT_MSG_REGISTER, chan, 0, &m);
	if (!p)
		return;
	p->replay = true;
	p->next = NULL;
	{
		struct pending **pp = &ag->pend;

		while (*pp)
			pp = &(*pp)->next;
		*pp = p;
		ag->nr_pend++;
	}
	pending_send(ag, p);
}

static void link_register_trigger(struct agent *ag)
{
	struct pending *p;
	struct hvt_msg m;

	if (ag->trig_bound) {
		link_replay_reg(ag, 0, AGENT_TRIGGER_EVENT, ag->trig_id,
				ag->trig_bit);
		return;
	}
	if (ag->trig_pending)
		return;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REGISTER;
	m.u.reg.def.ptr = AGENT_TRIGGER_EVENT;
	m.u.reg.def.len = (uint32_t)strlen(AGENT_TRIGGER_EVENT);
	p = pending_new(HVT_MSG_REGISTER, 0, 0, &m);
	if (!p)
		return;
	ag->trig_pending = true;
	link_submit(ag, p);
}

/* The session is up: tell the host everything it must know. */
void link_replay(struct agent *ag)
{
	struct link *l = &ag->link;
	struct creg **all = NULL;
	struct client *c;
	struct pending *p;
	size_t n = 0, i;
	char comm[32];

	l->replayed = true;
	l->sessions++;
	agent_log("host session %llu up on %s",
		  (unsigned long long)l->sessions, l->path);
	for (c = ag->clients; c; c = c->next)
		if (c->pid > 0 &&
		    !read_comm(c->pid, c->pid, comm, sizeof(comm)))
			link_send_cmdline(ag, (uint32_t)c->pid, comm);
	link_register_trigger(ag);

	/* Registrations in id order: a fresh registry then tends to hand
	 * out the same ids again. */
	for (c = ag->clients; c; c = c->next)
		n += c->nr_regs;
	if (n) {
		all = calloc(n, sizeof(*all));
		if (all) {
			size_t k = 0;

			for (c = ag->clients; c; c = c->next)
				for (i = 0; i < c->nr_regs; i++)
					all[k++] = &c->regs[i];
			qsort(all, n, sizeof(*all), creg_cmp);
			for (i = 0; i < n; i++) {
				/* Find the owner of all[i]. */
				for (c = ag->clients; c; c = c->next)
					if (all[i] >= c->regs &&
					    all[i] < c->regs + c->nr_regs)
						break;
				if (c)
					link_replay_reg(ag, c->chan,
							all[i]->def,
							all[i]->id,
							all[i]->bit);
			}
			free(all);
		}
	}
	for (i = 0; i < l->nr_gone; i++) {
		struct hvt_msg m;

		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_CLIENT_GONE;
		p = pending_new(HVT_MSG_CLIENT_GONE, l->gone[i], 0, &m);
		if (p)
			link_submit(ag, p);
	}
	l->nr_gone = 0;
	kformats_session_up(ag);
	/* Requests that waited for the host, in arrival order. */
	for (p = ag->pend; p; p = p->next)
		if (!p->host_req)
			pending_send(ag, p);
}

/* Fail what was sent but not answered: the host may never answer it. */
void link_fail_inflight(struct agent *ag, const char *why)
{
	struct pending *p, *n;

	for (p = ag->pend; p; p = n) {
		n = p->next;
		if (!p->host_req)
			continue;
		pending_unlink(ag, p);
		if (p->replay) {
			pending_free(p);
			continue;
		}
		pending_fail(ag, p, -ECONNRESET, why);
		pending_free(p);
	}
}

void link_down(struct agent *ag, const char *why, bool close_fd)
{
	struct link *l = &ag->link;

	if (l->up || l->fd >= 0)
		agent_log("host link %s down: %s", l->path, why);
	l->up = false;
	l->replayed = false;
	outq_clear(&l->q);
	hvt_proto_dec_reset(&l->dec);
	link_fail_inflight(ag, "the host connection dropped before it "
			       "answered; retry");
	if (close_fd && l->fd >= 0) {
		close(l->fd);
		l->fd = -1;
		l->next_try_ms = agent_now_ms() + LINK_RETRY_MS;
	} else {
		l->hup = true;
		l->next_try_ms = agent_now_ms() + LINK_PROBE_MS;
	}
}

static void link_open(struct agent *ag)
{
	struct link *l = &ag->link;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	l->next_try_ms = agent_now_ms() + LINK_RETRY_MS;
	if (l->kind == LINK_CHARDEV) {
		fd = open(l->path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			agent_dbg("cannot open %s: %s", l->path,
				  strerror(errno));
			return;
		}
		l->fd = fd;
		l->hup = true;	/* probe says whether the host is there */
		l->next_try_ms = 0;
		return;
	}
	if (strlen(l->path) >= sizeof(sa.sun_path))
		return;
	strcpy(sa.sun_path, l->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		agent_dbg("cannot connect to %s: %s", l->path,
			  strerror(errno));
		close(fd);
		return;
	}
	l->fd = fd;
	l->hup = false;
	hvt_proto_dec_reset(&l->dec);
	agent_log("connected to hvtraced at %s", l->path);
	link_hello(ag, NULL);
}

void link_client_gone(struct agent *ag, uint32_t chan)
{
	struct link *l = &ag->link;
	struct pending *p, *n;
	struct hvt_msg m;

	/* Requests of the client that never left: drop them. */
	for (p = ag->pend; p; p = n) {
		n = p->next;
		if (p->chan == chan && !p->host_req) {
			pending_unlink(ag, p);
			pending_free(p);
		}
	}
	if (!l->up) {
		if (l->nr_gone == l->cap_gone && l->cap_gone < LINK_MAX_GONE) {
			size_t cap = l->cap_gone ? l->cap_gone * 2 : 16;
			uint32_t *g = realloc(l->gone, cap * sizeof(*g));

			if (g) {
				l->gone = g;
				l->cap_gone = cap;
			}
		}
		if (l->nr_gone < l->cap_gone)
			l->gone[l->nr_gone++] = chan;
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_CLIENT_GONE;
	p = pending_new(HVT_MSG_CLIENT_GONE, chan, 0, &m);
	if (p)
		link_submit(ag, p);
}

void link_send_cmdline(struct agent *ag, uint32_t pid, const char *comm)
{
	struct hvt_msg m;

	if (!ag->link.up || ag->link.q.bytes > AGENT_LINK_QUEUE)
		return;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_CMDLINE;
	m.u.cmdline.pid = pid;
	m.u.cmdline.comm.ptr = comm;
	m.u.cmdline.comm.len = (uint32_t)strnlen(comm, HVT_PROTO_COMM_MAX);
	if (m.u.cmdline.comm.len)
		link_push(ag, &m);
}

void link_bye(struct agent *ag)
{
	struct link *l = &ag->link;
	struct hvt_msg m;
	int i;

	if (!l->up)
		return;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_BYE;
	m.u.bye.reason = HVT_BYE_SHUTDOWN;
	if (link_push(ag, &m))
		return;
	/* Best effort, bounded: the host may not be reading. */
	for (i = 0; i < 10 && l->q.head; i++) {
		struct pollfd pfd = { .fd = l->fd, .events = POLLOUT };

		if (poll(&pfd, 1, 20) <= 0)
			continue;
		if (outq_flush(&l->q, l->fd, l->kind == LINK_SOCKET) < 0)
			break;
	}
}

/* --- poll integration ----------------------------------------------------- */

void link_poll_prep(struct agent *ag, struct pollfd *pfd, uint64_t now,
		    uint64_t *next_ms)
{
	struct link *l = &ag->link;
	struct pending *p;

	pfd->fd = -1;
	pfd->events = 0;
	pfd->revents = 0;
	if (l->fd >= 0 && !l->hup) {
		pfd->fd = l->fd;
		pfd->events = POLLIN;
		if (l->q.head)
			pfd->events |= POLLOUT;
		if (!l->up && *next_ms > l->hello_ms + LINK_HELLO_RETRY_MS)
			*next_ms = l->hello_ms + LINK_HELLO_RETRY_MS;
	} else if (*next_ms > l->next_try_ms) {
		*next_ms = l->next_try_ms;
	}
	for (p = ag->pend; p; p = p->next)
		if (p->deadline_ms && *next_ms > p->deadline_ms)
			*next_ms = p->deadline_ms;
	/* Formats to send and room in the queue: come back at once. */
	if (kformats_busy(ag))
		*next_ms = now;
}

void link_tick(struct agent *ag, uint64_t now)
{
	struct link *l = &ag->link;
	struct pending *p, *n;

	if (l->fd < 0 && now >= l->next_try_ms)
		link_open(ag);
	if (l->fd >= 0 && l->hup && now >= l->next_try_ms) {
		struct pollfd pfd = { .fd = l->fd, .events = POLLIN };

		if (poll(&pfd, 1, 0) >= 0 && !(pfd.revents & POLLHUP)) {
			l->hup = false;
			hvt_proto_dec_reset(&l->dec);
			agent_log("the host opened %s", l->path);
			link_hello(ag, NULL);
		} else {
			l->next_try_ms = now + LINK_PROBE_MS;
		}
	}
	if (l->fd >= 0 && !l->hup && !l->up &&
	    now >= l->hello_ms + LINK_HELLO_RETRY_MS)
		link_hello(ag, NULL);
	kformats_tick(ag);
	for (p = ag->pend; p; p = n) {
		n = p->next;
		if (!p->deadline_ms || now < p->deadline_ms)
			continue;
		pending_unlink(ag, p);
		if (p->host_req)
			pending_fail(ag, p, -ETIMEDOUT,
				     "the host did not answer in time");
		else
			pending_fail(ag, p, -EHOSTDOWN,
				     "no host is attached to this agent's "
				     "control channel (start hvtraced and "
				     "attach the guest, or retry later)");
		pending_free(p);
	}
}

void link_poll_done(struct agent *ag, const struct pollfd *pfd, uint64_t now)
{
	struct link *l = &ag->link;
	struct hvt_frame f;
	uint8_t *room;
	uint32_t space;
	ssize_t n;
	int ret;

	if (pfd->fd < 0 || !pfd->revents)
		return;
	if (pfd->revents & POLLNVAL) {
		l->fd = -1;
		link_down(ag, "descriptor closed", true);
		return;
	}
	if (pfd->revents & POLLOUT) {
		ret = outq_flush(&l->q, l->fd, l->kind == LINK_SOCKET);
		if (ret < 0) {
			link_down(ag, strerror(-ret), l->kind == LINK_SOCKET);
			return;
		}
	}
	if (!(pfd->revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	space = hvt_proto_dec_room(&l->dec, &room);
	n = read(l->fd, room, space);
	/* When a PING's bytes arrived: the first half of its answer. */
	l->rx_clock = agent_clock_read(ag->info.clock_id);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* A chardev reads 0 while the host is not connected. */
		link_down(ag, n == 0 ? "the host closed the channel" :
				       strerror(errno),
			  l->kind == LINK_SOCKET || n < 0);
		return;
	}
	hvt_proto_dec_added(&l->dec, (uint32_t)n);
	/* Bounded by the decoder's buffer. */
	while ((ret = hvt_proto_dec_next(&l->dec, &f)) != 0) {
		if (ret < 0) {
			l->errors++;
			agent_dbg("skipped bytes on the control channel (%s)",
				  strerror(-ret));
			continue;
		}
		link_frame(ag, &f);
	}
	(void)now;
}
