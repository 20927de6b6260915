// SPDX-License-Identifier: MIT
/*
 * libhvtrace-client: the application side of the agent's socket.
 *
 *   hvtc_open      connect, HELLO; the reply carries the area descriptors
 *                  (SCM_RIGHTS: rings read-write, control page read-only),
 *                  which hvtg_area_open_fds() maps
 *   hvtc_register  REGISTER -> RESULT {status, id, bit, text};
 *                  hvtg_event_bind(id, bit) on success
 *   notices        EVENT_STATE frames the agent forwards; kept until
 *                  hvtc_process() (bounded: later ones are dropped)
 *
 * Everything the agent sends is checked by the shared codec before use;
 * descriptors arrive only with the HELLO reply and any others are closed.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/abi.h>
#include <hvtrace/proto.h>

#include "hvt_util.h"

#include "hvtrace-client.h"

#define HVTC_MAX_NOTICES	256

struct hvtc_reg {
	struct hvtg_event *ev;
	uint32_t id;
	uint32_t bit;
};

struct hvtc_notice {
	uint32_t id;
	bool on;
};

struct hvtc {
	int fd;
	int timeout_ms;
	pthread_mutex_t lock;
	uint32_t next_req;
	struct hvtg_area *area;
	struct hvtc_reg *regs;
	size_t nr_regs, cap_regs;
	struct hvtc_notice notices[HVTC_MAX_NOTICES];
	unsigned int nr_notices;
	int fds[2];		/* received with the HELLO reply */
	int nr_fds;
	bool dead;
	struct hvt_proto_dec dec;
	uint8_t rbuf[HVT_PROTO_AGENT_FRAME];
	uint8_t wbuf[HVT_PROTO_AGENT_FRAME];
};

static __thread char hvtc_msg[512];

const char *hvtc_last_error(void)
{
	return hvtc_msg[0] ? hvtc_msg : "no error";
}

static int __attribute__((format(printf, 2, 3))) cl_err(int err,
							const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hvtc_msg, sizeof(hvtc_msg), fmt, ap);
	va_end(ap);
	return err;
}

static uint64_t cl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cl_drop_fds(struct hvtc *c)
{
	while (c->nr_fds > 0)
		close(c->fds[--c->nr_fds]);
}

static int cl_send(struct hvtc *c, const struct hvt_msg *m)
{
	int n = hvt_msg_encode(c->wbuf, sizeof(c->wbuf), m), off = 0;

	if (n < 0)
		return cl_err(n, "cannot encode a %s message (%s)",
			      hvt_msg_type_name(m->type), strerror(-n));
	while (off < n) {
		ssize_t w = send(c->fd, c->wbuf + off, (size_t)(n - off),
				 MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			c->dead = true;
			return cl_err(-ECONNRESET,
				      "the hvtrace agent closed the connection "
				      "(%s)",
				      strerror(errno));
		}
		off += (int)w;
	}
	return 0;
}

/* Read what is available (waiting up to @wait_ms); 0, or -errno. */
static int cl_fill(struct hvtc *c, int wait_ms)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} cm;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	struct msghdr mh = { 0 };
	struct cmsghdr *ch;
	struct iovec iov;
	uint8_t *room;
	ssize_t n;
	int r;

	r = poll(&pfd, 1, wait_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return -ETIMEDOUT;
	iov.iov_len = hvt_proto_dec_room(&c->dec, &room);
	iov.iov_base = room;
	if (!iov.iov_len)
		return -ENOBUFS;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	for (ch = CMSG_FIRSTHDR(&mh); ch; ch = CMSG_NXTHDR(&mh, ch)) {
		int *fd = (int *)CMSG_DATA(ch);
		size_t k, nfd;

		if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			if (c->nr_fds < 2)
				c->fds[c->nr_fds++] = fd[k];
			else
				close(fd[k]);
		}
	}
	if (n == 0) {
		c->dead = true;
		return -ECONNRESET;
	}
	hvt_proto_dec_added(&c->dec, (uint32_t)n);
	return 0;
}

static void cl_notice(struct hvtc *c, const struct hvt_msg *m)
{
	if (m->type != HVT_MSG_EVENT_STATE || (m->flags & HVT_PF_REPLY))
		return;
	if (c->nr_notices < HVTC_MAX_NOTICES) {
		c->notices[c->nr_notices].id = m->u.event_state.id;
		c->notices[c->nr_notices].on = m->u.event_state.enabled;
		c->nr_notices++;
	}
}

/*
 * Wait for the reply to @req; notices that arrive meanwhile are queued.
 * The reply view stays valid until the next decoder call.
 */
static int cl_wait(struct hvtc *c, uint32_t req, struct hvt_msg *reply)
{
	uint64_t deadline = cl_now_ms() + (uint64_t)c->timeout_ms;

	for (;;) {
		struct hvt_frame f;
		uint64_t now;
		int ret;

		while ((ret = hvt_proto_dec_next(&c->dec, &f)) != 0) {
			if (ret < 0)
				continue;	/* skipped; counted in dec */
			if (hvt_msg_decode(&f, reply, NULL))
				continue;
			if (!(reply->flags & HVT_PF_REPLY)) {
				cl_notice(c, reply);
				continue;
			}
			if (reply->req == req)
				return 0;
		}
		if (c->dead)
			return cl_err(-ECONNRESET, "the hvtrace agent closed "
						   "the connection");
		now = cl_now_ms();
		if (now >= deadline)
			return cl_err(-ETIMEDOUT,
				      "no answer from the hvtrace agent within "
				      "%d ms",
				      c->timeout_ms);
		ret = cl_fill(c, (int)(deadline - now));
		if (ret && ret != -ETIMEDOUT)
			return cl_err(ret, "reading from the hvtrace agent: %s",
				      strerror(-ret));
	}
}

/* Copy a reply's text into the thread's error message. */
static int cl_result_err(const struct hvt_msg *r, const char *what)
{
	int st = r->u.result.status;

	if (r->type == HVT_MSG_ERROR || r->u.result.text.len)
		return cl_err(st ? st : -EPROTO, "%s: %.*s", what,
			      (int)r->u.result.text.len, r->u.result.text.ptr);
	return cl_err(st, "%s: %s", what, strerror(-st));
}

int hvtc_open(const char *path, struct hvtc **out)
{
	struct hvtg_area_fds afds;
	struct hvt_msg m, r;
	struct hvtc *c;
	int ret;

	if (!out)
		return cl_err(-EINVAL, "hvtc_open: no output handle");
	*out = NULL;
	if (!path)
		path = getenv("HVTRACE_AGENT_SOCKET");
	if (!path || !*path)
		path = HVTC_DEFAULT_SOCKET;

	c = calloc(1, sizeof(*c));
	if (!c)
		return cl_err(-ENOMEM, "out of memory");
	c->timeout_ms = HVTC_DEFAULT_TIMEOUT_MS;
	c->next_req = 1;
	pthread_mutex_init(&c->lock, NULL);
	hvt_proto_dec_init(&c->dec, c->rbuf, sizeof(c->rbuf),
			   sizeof(c->rbuf));
	c->fd = hvt_util_sock_connect(path);
	if (c->fd < 0) {
		ret = c->fd;
		c->fd = -1;
		if (ret == -ENAMETOOLONG)
			cl_err(ret, "agent socket path too long: %s", path);
		else if (ret == -EACCES || ret == -EPERM)
			cl_err(ret,
			       "no permission to connect to the hvtrace agent "
			       "at %s: join the socket's group (hvtrace) or "
			       "run as root",
			       path);
		else if (ret == -EMFILE || ret == -ENFILE || ret == -ENOBUFS ||
			 ret == -ENOMEM)
			cl_err(ret, "socket: %s", strerror(-ret));
		else
			cl_err(ret,
			       "the hvtrace agent is not running (%s: %s): "
			       "start hvtrace-agent, or set "
			       "HVTRACE_AGENT_SOCKET to its socket",
			       path, strerror(-ret));
		goto fail;
	}

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_HELLO;
	m.req = c->next_req++;
	m.u.hello.min_version = HVT_PROTO_MIN_VERSION;
	m.u.hello.max_version = HVT_PROTO_VERSION;
	m.u.hello.role = HVT_ROLE_CLIENT;
	m.u.hello.pid = (uint32_t)getpid();
	ret = cl_send(c, &m);
	if (ret)
		goto fail;
	ret = cl_wait(c, m.req, &r);
	if (ret)
		goto fail;
	if (r.type != HVT_MSG_HELLO || r.u.hello.role != HVT_ROLE_AGENT) {
		if (r.type == HVT_MSG_ERROR)
			ret = cl_result_err(&r, "the agent refused the client");
		else
			ret = cl_err(-EPROTO,
				     "%s does not speak the hvtrace agent "
				     "protocol",
				     path);
		goto fail;
	}
	if (r.u.hello.status) {
		ret = cl_err(r.u.hello.status, "the agent refused: %.*s",
			     (int)r.u.hello.text.len, r.u.hello.text.ptr);
		goto fail;
	}
	if (r.u.hello.nr_fds != 2 || c->nr_fds != 2) {
		ret = cl_err(-EPROTO,
			     "the agent sent %d area descriptors, expected 2",
			     c->nr_fds);
		goto fail;
	}
	memset(&afds, 0, sizeof(afds));
	afds.area_fd = c->fds[0];
	afds.area_offset = r.u.hello.area_offset;
	afds.area_size = r.u.hello.area_size;
	afds.ctrl_fd = c->fds[1];
	afds.ctrl_offset = r.u.hello.area_offset + HVT_CONTROL_OFFSET;
	ret = hvtg_area_open_fds(&afds, &c->area);
	cl_drop_fds(c);
	if (ret) {
		cl_err(ret, "cannot map the area the agent handed over: %s",
		       hvtg_last_error());
		goto fail;
	}
	/* The same agent's doorbell; without it the host polls the area. */
	hvtg_area_set_doorbell(c->area, path);
	*out = c;
	return 0;
fail:
	hvtc_close(c);
	return ret;
}

void hvtc_close(struct hvtc *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nr_regs; i++)
		hvtg_event_unbind(c->regs[i].ev);
	if (c->fd >= 0)
		close(c->fd);
	cl_drop_fds(c);
	hvtg_area_close(c->area);
	free(c->regs);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

struct hvtg_area *hvtc_area(struct hvtc *c)
{
	return c ? c->area : NULL;
}

void hvtc_set_timeout(struct hvtc *c, int timeout_ms)
{
	if (c && timeout_ms > 0)
		c->timeout_ms = timeout_ms;
}

static int cl_name_tid(struct hvtc *c, pid_t tid)
{
	struct hvt_msg m;
	char path[64], comm[32];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return cl_err(-errno, "cannot read %s: %s", path,
			      strerror(errno));
	n = fread(comm, 1, sizeof(comm) - 1, f);
	fclose(f);
	while (n && (comm[n - 1] == '\n' || (unsigned char)comm[n - 1] < 0x20))
		n--;
	if (n > HVT_PROTO_COMM_MAX)
		n = HVT_PROTO_COMM_MAX;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)comm[i] < 0x20 || comm[i] == 0x7f)
			comm[i] = '?';
	if (!n)
		return 0;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_CMDLINE;
	m.u.cmdline.pid = (uint32_t)tid;
	m.u.cmdline.comm.ptr = comm;
	m.u.cmdline.comm.len = (uint32_t)n;
	return cl_send(c, &m);
}

int hvtc_name_thread(struct hvtc *c)
{
	int ret;

	if (!c)
		return cl_err(-EINVAL, "no connection");
	pthread_mutex_lock(&c->lock);
	ret = cl_name_tid(c, (pid_t)syscall(SYS_gettid));
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int hvtc_register(struct hvtc *c, const char *definition,
		  struct hvtg_event *ev)
{
	struct hvt_msg m, r;
	size_t len;
	int ret;

	if (!c || !definition || !ev)
		return cl_err(-EINVAL, "hvtc_register: NULL argument");
	len = strlen(definition);
	if (!len || len > HVT_PROTO_DEF_MAX)
		return cl_err(len ? -E2BIG : -EINVAL,
			      "definition is %s (at most 511 bytes)",
			      len ? "too long" : "empty");
	pthread_mutex_lock(&c->lock);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REGISTER;
	m.req = c->next_req++;
	m.u.reg.def.ptr = definition;
	m.u.reg.def.len = (uint32_t)len;
	ret = cl_send(c, &m);
	if (!ret)
		ret = cl_wait(c, m.req, &r);
	if (ret)
		goto out;
	if (r.type != HVT_MSG_REGISTER || r.u.result.status) {
		ret = cl_result_err(&r, "registration refused");
		goto out;
	}
	if (c->nr_regs == c->cap_regs) {
		size_t cap = c->cap_regs ? 2 * c->cap_regs : 16;
		struct hvtc_reg *n = realloc(c->regs, cap * sizeof(*n));

		if (!n) {
			ret = cl_err(-ENOMEM, "out of memory");
			goto out;
		}
		c->regs = n;
		c->cap_regs = cap;
	}
	ret = hvtg_event_bind(c->area, ev, r.u.result.id, r.u.result.bit);
	if (ret) {
		cl_err(ret, "the host answered an unusable binding: %s",
		       hvtg_last_error());
		goto out;
	}
	c->regs[c->nr_regs].ev = ev;
	c->regs[c->nr_regs].id = r.u.result.id;
	c->regs[c->nr_regs].bit = r.u.result.bit;
	c->nr_regs++;
	/* The calling thread's name, so the host can label its records. */
	cl_name_tid(c, (pid_t)syscall(SYS_gettid));
	ret = 0;
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int hvtc_event_id(struct hvtc *c, const struct hvtg_event *ev)
{
	size_t i;
	int ret = -ENOENT;

	if (!c || !ev)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->nr_regs; i++)
		if (c->regs[i].ev == ev) {
			ret = (int)c->regs[i].id;
			break;
		}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int hvtc_unregister(struct hvtc *c, struct hvtg_event *ev)
{
	struct hvt_msg m, r;
	size_t i;
	int ret;

	if (!c || !ev)
		return cl_err(-EINVAL, "hvtc_unregister: NULL argument");
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->nr_regs; i++)
		if (c->regs[i].ev == ev)
			break;
	if (i == c->nr_regs) {
		ret = cl_err(-ENOENT, "that handle was not registered through "
				      "this connection");
		goto out;
	}
	hvtg_event_unbind(ev);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_UNREGISTER;
	m.req = c->next_req++;
	m.u.unreg.id = c->regs[i].id;
	c->regs[i] = c->regs[--c->nr_regs];
	ret = cl_send(c, &m);
	if (!ret)
		ret = cl_wait(c, m.req, &r);
	if (!ret && (r.type != HVT_MSG_UNREGISTER || r.u.result.status))
		ret = cl_result_err(&r, "unregister refused");
out:
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int hvtc_delete(struct hvtc *c, const char *name)
{
	struct hvt_msg m, r;
	size_t len;
	int ret;

	if (!c || !name)
		return cl_err(-EINVAL, "hvtc_delete: NULL argument");
	len = strlen(name);
	if (!len || len > HVT_PROTO_DEF_MAX)
		return cl_err(-EINVAL, "bad event name length");
	pthread_mutex_lock(&c->lock);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_DELETE;
	m.req = c->next_req++;
	m.u.arg.s.ptr = name;
	m.u.arg.s.len = (uint32_t)len;
	ret = cl_send(c, &m);
	if (!ret)
		ret = cl_wait(c, m.req, &r);
	if (!ret && (r.type != HVT_MSG_DELETE || r.u.result.status))
		ret = cl_result_err(&r, "delete refused");
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int hvtc_fd(struct hvtc *c)
{
	return c ? c->fd : -EINVAL;
}

int hvtc_process(struct hvtc *c,
		 void (*fn)(void *arg, uint32_t id, bool enabled), void *arg)
{
	struct hvtc_notice n[HVTC_MAX_NOTICES];
	unsigned int i, nr;
	struct hvt_frame f;
	struct hvt_msg m;
	int ret = 0;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (!c->dead) {
		ret = cl_fill(c, 0);
		if (ret == -ETIMEDOUT)
			ret = 0;
	}
	while ((i = (unsigned int)hvt_proto_dec_next(&c->dec, &f)) != 0)
		if ((int)i == 1 && !hvt_msg_decode(&f, &m, NULL))
			cl_notice(c, &m);
	nr = c->nr_notices;
	memcpy(n, c->notices, nr * sizeof(n[0]));
	c->nr_notices = 0;
	cl_drop_fds(c);
	pthread_mutex_unlock(&c->lock);
	for (i = 0; fn && i < nr; i++)
		fn(arg, n[i].id, n[i].on);
	if (ret < 0 && !nr)
		return cl_err(ret, "the hvtrace agent went away");
	return (int)nr;
}
