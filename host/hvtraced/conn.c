// SPDX-License-Identifier: MIT
/*
 * hvtraced: connections.
 *
 * Every peer is non-blocking and read at most one buffer per epoll round,
 * so a peer that floods costs its own share of the loop and no more.  What
 * the daemon queues for a peer is bounded: replies to an agent (pings,
 * notices) up to D_AGENT_QUEUE -- beyond that the daemon stops reading
 * from it until it drains; pages to a tool up to --client-queue -- beyond
 * that the daemon leaves the pages in the area, or, where another tool
 * takes them, drops them for this tool and counts them (fanout.c); other
 * replies to a tool up to D_TOOL_REPLY_SLACK -- a tool that lets that much pile
 * up is disconnected.  Bytes that do not decode cost an error count; a local
 * agent or tool that keeps sending them is disconnected, a guest's chardev
 * never is (the decoder resynchronises).
 *
 * This layer knows no role.  A connection starts unbound: it must say
 * HELLO within D_HELLO_DEADLINE_MS, and a peer that access.c refused gets
 * its refusal as the answer.  The HELLO's role picks the handler
 * registered for it (conn_role_register()), which binds the connection to
 * itself (conn_bind()) or refuses it; from then on every decoded frame
 * goes to that handler, and the limits above are the ones its struct
 * conn_ops names.  Connections the daemon opens itself (a guest's
 * chardev) are created bound.
 *
 * A page goes out from the buffer its source read it into (struct
 * page_buf): a PAGE's queued chunk holds the frame's head and points to
 * the page, so every tool of a CPU is sent the one copy.  Buffers no
 * queue holds any more wait in a pool (up to PAGE_BUF_POOL_BYTES) for the
 * next reads rather than going back to malloc(): pages come and go at
 * the rate a tool reads, and memory handed back to the system and taken
 * again costs a page fault and a cleared page per 4 KiB, where a virtual
 * machine's balloon may have given the page back to its host in between.
 * Measured here (record NAME of 120 MB, as in
 * tests/bench/remote_read.sh): 0.25-0.9 s, mostly 0.6-0.9 s, with each
 * burst's frames freed (malloc trims its heap); 0.22-0.35 s with them
 * pooled.
 *
 * A stop (SIGTERM, SIGINT, SIGHUP) first hands the tools what is queued
 * for them (conns_flush_all()): the pages were taken from their areas,
 * whose read positions a restarted daemon resumes after.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon.h"

#define CONN_BUF		(64u * 1024u)
#define CONN_MAX_ROLES		8

static void conn_first_frame(struct conn *c, const struct hvt_msg *m);

/* Accepted, no HELLO yet: held to a local agent's limits. */
static const struct conn_ops conn_unbound_ops = {
	.name = "new",
	.frame = conn_first_frame,
	.rbuf_size = CONN_BUF,
	.max_errors = D_AGENT_MAX_ERRORS,
	.takes_fds = true,
	.pauses = true,
};

static const struct conn_ops *conn_roles[CONN_MAX_ROLES];

void conn_role_register(const struct conn_ops *ops)
{
	if (ops->hello_role < CONN_MAX_ROLES)
		conn_roles[ops->hello_role] = ops;
}

void conn_bind(struct conn *c, const struct conn_ops *ops)
{
	c->ops = ops;
}

struct conn *conn_new(int fd, const struct conn_ops *ops)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint32_t bufsize;
	struct conn *c;

	if (!ops)
		ops = &conn_unbound_ops;
	bufsize = ops->event ? 0 : ops->rbuf_size;
	/* One allocation: the receive buffer follows the struct. */
	c = malloc(sizeof(*c) + bufsize);
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->ops = ops;
	c->id = ++D->next_conn_id;
	c->created_ms = d_now_ms();
	if (bufsize) {
		c->rbuf = (uint8_t *)(c + 1);
		hvt_proto_dec_init(&c->dec, c->rbuf, bufsize, bufsize);
	}
	ev.data.ptr = c;
	if (epoll_ctl(D->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		d_log("epoll_ctl: %s", strerror(errno));
		free(c);
		return NULL;
	}
	c->ev = EPOLLIN;
	c->next = D->conns;
	if (D->conns)
		D->conns->prev = c;
	D->conns = c;
	D->nr_conns++;
	return c;
}

void conn_update_events(struct conn *c)
{
	struct epoll_event ev;
	uint32_t want = 0;

	if (c->dead)
		return;
	if (!c->paused && !c->closing)
		want |= EPOLLIN;
	if (c->q.head)
		want |= EPOLLOUT;
	if (c->ops->event) /* paused: not watched (a doorbell, bell.c) */
		want = c->paused ? 0 : EPOLLIN;
	if (want == c->ev)
		return;
	ev.events = want;
	ev.data.ptr = c;
	if (!epoll_ctl(D->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		c->ev = want;
}

#define CONN_FLUSH_IOV	    64			 /* iovecs a sendmsg() takes */
#define PAGE_BUF_POOL_BYTES (8u * 1024u * 1024u) /* page buffers kept */

/* Page buffers no queue holds any more, for the next reads (the top). */
static struct page_buf *page_buf_pool;
static size_t page_buf_pool_bytes;

struct page_buf *page_buf_get(uint32_t size)
{
	struct page_buf *pb = page_buf_pool;

	/* The pool's first, when it is big enough; one that is not (from
	 * a remote of smaller sub-buffers) goes. */
	if (pb) {
		page_buf_pool = pb->next;
		page_buf_pool_bytes -= pb->size;
		if (pb->size < size) {
			free(pb);
			pb = NULL;
		}
	}
	if (!pb) {
		pb = malloc(sizeof(*pb) + size);
		if (!pb)
			return NULL;
		pb->size = size;
	}
	pb->next = NULL;
	pb->refs = 1;
	return pb;
}

void page_buf_put(struct page_buf *pb)
{
	if (!pb || --pb->refs)
		return;
	if (page_buf_pool_bytes + pb->size <= PAGE_BUF_POOL_BYTES) {
		pb->next = page_buf_pool;
		page_buf_pool = pb;
		page_buf_pool_bytes += pb->size;
		return;
	}
	free(pb);
}

struct page_buf *page_buf_own(struct page_buf *pb, uint32_t size)
{
	if (pb && pb->refs == 1 && pb->size >= size)
		return pb;
	page_buf_put(pb);
	return page_buf_get(size);
}

void page_bufs_free(void)
{
	struct page_buf *pb;

	while ((pb = page_buf_pool)) {
		page_buf_pool = pb->next;
		free(pb);
	}
	page_buf_pool_bytes = 0;
}

/* A chunk leaves its queue, sent or not: a page's ticket and buffer let
 * go. */
static void outq_chunk_done(struct out_chunk *ch)
{
	if (ch->ticket)
		ticket_put(ch->ticket);
	page_buf_put(ch->pb);
	free(ch);
}

static void outq_free_chunk(struct outq *q, struct out_chunk *ch)
{
	q->bytes -= ch->len - ch->off;
	if (ch->page)
		q->page_bytes -= ch->len - ch->off;
	outq_chunk_done(ch);
}

static void outq_clear(struct outq *q)
{
	struct out_chunk *ch, *n;

	for (ch = q->head; ch; ch = n) {
		n = ch->next;
		outq_free_chunk(q, ch);
	}
	q->head = q->tail = NULL;
}

/*
 * Queue @m's frame; a page's (@pb) goes out from @pb itself: the chunk
 * holds the frame's head, and its tail is the page in @pb, which the
 * chunk holds a reference to until it is sent.
 */
static int conn_push(struct conn *c, const struct hvt_msg *m, bool page,
		     struct ps_ticket *ticket, struct page_buf *pb)
{
	const void *tail = NULL;
	struct out_chunk *ch;
	uint32_t tail_len = 0;
	int n, head;

	if (c->dead || c->fd < 0)
		return -EPIPE;
	n = hvt_msg_encoded_size(m);
	if (n < 0)
		return n;
	head = n - (pb ? (int)m->u.page.len : 0);
	ch = malloc(sizeof(*ch) + (size_t)head);
	if (!ch)
		return -ENOMEM;
	if (pb)
		head = hvt_msg_encode_head(ch->data, (uint32_t)head, m, &tail,
					   &tail_len);
	else
		head = hvt_msg_encode(ch->data, (uint32_t)head, m);
	if (head < 0) {
		free(ch);
		return head;
	}
	ch->next = NULL;
	ch->head = (uint32_t)head;
	ch->len = (uint32_t)head + tail_len;
	ch->off = 0;
	ch->page = page;
	ch->ticket = ticket;
	if (ticket)
		ticket_get(ticket);
	ch->pb = pb;
	ch->tail = tail;
	if (pb)
		pb->refs++;
	n = (int)ch->len;
	if (c->q.tail)
		c->q.tail->next = ch;
	else
		c->q.head = ch;
	c->q.tail = ch;
	c->q.bytes += (size_t)n;
	if (page)
		c->q.page_bytes += (size_t)n;
	conn_update_events(c);
	return 0;
}

int conn_send(struct conn *c, const struct hvt_msg *m)
{
	const struct conn_ops *o = c->ops;

	if (o->reply_slack && c->q.bytes - c->q.page_bytes > o->reply_slack) {
		d_log("%s connection %u does not read its replies: "
		      "disconnecting it",
		      o->name, c->id);
		conn_close(c);
		return -ENOBUFS;
	}
	if (o->queue_max && c->q.bytes > o->queue_max)
		return -ENOBUFS;
	return conn_push(c, m, false, NULL, NULL);
}

int conn_send_page(struct conn *c, const struct hvt_msg *m,
		   struct ps_ticket *ticket, struct page_buf *pb)
{
	return conn_push(c, m, true, ticket, pb);
}

/* Take @w sent bytes off the front of @q. */
static void outq_sent(struct outq *q, size_t w)
{
	while (w) {
		struct out_chunk *ch = q->head;
		size_t take = ch->len - ch->off;

		if (take > w)
			take = w;
		q->bytes -= take;
		if (ch->page)
			q->page_bytes -= take;
		ch->off += (uint32_t)take;
		w -= take;
		if (ch->off == ch->len) {
			q->head = ch->next;
			if (!q->head)
				q->tail = NULL;
			outq_chunk_done(ch);
		}
	}
}

/*
 * Write what the queue holds, up to CONN_FLUSH_IOV chunks a system call:
 * a tool taking a backlog of pages costs one sendmsg() per many pages,
 * not one send() per page.
 */
void conn_flush(struct conn *c)
{
	/* Each round writes bytes or stops, so the queue bounds it. */
	while (c->q.head && !c->dead) {
		struct iovec iov[CONN_FLUSH_IOV];
		struct msghdr mh = { .msg_iov = iov };
		struct out_chunk *ch;
		ssize_t w;

		/* A chunk is its head, then the page it points to. */
		for (ch = c->q.head; ch && mh.msg_iovlen + 2 <= CONN_FLUSH_IOV;
		     ch = ch->next) {
			if (ch->off < ch->head) {
				iov[mh.msg_iovlen].iov_base =
					ch->data + ch->off;
				iov[mh.msg_iovlen].iov_len = ch->head - ch->off;
				mh.msg_iovlen++;
			}
			if (ch->len > ch->head) {
				uint32_t at = ch->off > ch->head
						      ? ch->off - ch->head
						      : 0;

				iov[mh.msg_iovlen].iov_base =
					(void *)(ch->tail + at);
				iov[mh.msg_iovlen].iov_len =
					ch->len - ch->head - at;
				mh.msg_iovlen++;
			}
		}
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			d_dbg("connection %u: write: %s", c->id,
			      strerror(errno));
			conn_close(c);
			return;
		}
		if (!w)
			break;	/* (a stream socket sends something or fails) */
		outq_sent(&c->q, (size_t)w);
	}
	if (c->paused && c->q.bytes < D_AGENT_QUEUE / 2)
		c->paused = false;
	if (c->ops->flushed && !c->dead)
		c->ops->flushed(c);
	conn_update_events(c);
}

void conn_reply_error(struct conn *c, uint32_t req, uint32_t chan, int status,
		      const char *text)
{
	struct hvt_msg r;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_ERROR;
	r.flags = HVT_PF_REPLY;
	r.req = req;
	r.chan = chan;
	r.u.result.status = status < 0 && status >= -HVT_PROTO_MAX_STATUS ?
				    status : -EPROTO;
	r.u.result.text.ptr = text;
	r.u.result.text.len = (uint32_t)strnlen(text, HVT_PROTO_TEXT_MAX);
	conn_send(c, &r);
}

void conn_reply_result(struct conn *c, const struct hvt_msg *req,
		       uint16_t type, int status, uint32_t id, uint32_t bit,
		       const char *fmt, ...)
{
	char text[HVT_PROTO_TEXT_MAX + 1];
	struct hvt_msg r;
	va_list ap;

	text[0] = '\0';
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(text, sizeof(text), fmt, ap);
		va_end(ap);
	}
	memset(&r, 0, sizeof(r));
	r.type = type;
	r.flags = HVT_PF_REPLY;
	r.req = req->req;
	r.chan = req->chan;
	r.u.result.status = status < 0 && status >= -HVT_PROTO_MAX_STATUS ?
				    status : (status ? -EIO : 0);
	r.u.result.id = id;
	r.u.result.bit = bit;
	/* No control characters in one-line texts except tabs. */
	for (char *p = text; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			*p = ' ';
	r.u.result.text.ptr = text;
	r.u.result.text.len = (uint32_t)strlen(text);
	conn_send(c, &r);
}

int conn_take_fd(struct conn *c)
{
	int fd;

	if (!c->nr_fds)
		return -1;
	fd = c->fds[0];
	c->nr_fds--;
	memmove(c->fds, c->fds + 1, (size_t)c->nr_fds * sizeof(c->fds[0]));
	return fd;
}

static void conn_drop_fds(struct conn *c)
{
	while (c->nr_fds > 0)
		close(c->fds[--c->nr_fds]);
}

void conn_close(struct conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	if (c->ops->closed)
		c->ops->closed(c);
}

/* New connections must say HELLO in time; returns the next deadline. */
void conns_deadlines(uint64_t now, uint64_t *next)
{
	struct conn *c;

	for (c = D->conns; c; c = c->next) {
		uint64_t due = c->created_ms + D_HELLO_DEADLINE_MS;

		if (c->ops != &conn_unbound_ops || c->dead)
			continue;
		if (now >= due) {
			d_log("connection %u (pid %d) sent no HELLO within %d "
			      "ms: closing it",
			      c->id, (int)c->pid, D_HELLO_DEADLINE_MS);
			conn_close(c);
		} else if (*next > due) {
			*next = due;
		}
	}
}

void conns_reap(void)
{
	struct conn *c, *n;

	for (c = D->conns; c; c = n) {
		n = c->next;
		if (c->closing && !c->dead && !c->q.head)
			conn_close(c);
		if (!c->dead)
			continue;
		epoll_ctl(D->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		outq_clear(&c->q);
		conn_drop_fds(c);
		if (c->prev)
			c->prev->next = c->next;
		else
			D->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		D->nr_conns--;
		free(c->denied);
		free(c);
	}
}

/*
 * On a stop: hand every tool what is queued for it before the socket
 * closes.  Those pages were read from their areas and the read positions
 * posted (hvt_area_publish_pos()), so a successor resumes after them; a
 * tool that reads its socket to the end gets them, whatever the size of
 * its socket buffer.  A tool that takes nothing for @ms loses them, and
 * the log says how many bytes.
 */
void conns_flush_all(int ms)
{
	uint64_t deadline = d_now_ms() + (uint64_t)ms, now;
	struct pollfd pfd[64];
	struct conn *c;
	int n;

	for (;;) {
		n = 0;
		for (c = D->conns; c && n < 64; c = c->next) {
			if (c->dead || !c->tool || !c->q.head)
				continue;
			conn_flush(c);
			if (c->dead || !c->q.head)
				continue;
			pfd[n].fd = c->fd;
			pfd[n].events = POLLOUT;
			n++;
		}
		now = d_now_ms();
		if (!n || now >= deadline)
			break;
		if (poll(pfd, (nfds_t)n, (int)(deadline - now)) < 0 &&
		    errno != EINTR)
			break;
	}
	for (c = D->conns; c; c = c->next)
		if (!c->dead && c->tool && c->q.head)
			d_log("stopping: tool connection %u (pid %d) did not "
			      "take %zu queued bytes within %d ms; they are "
			      "lost to it",
			      c->id, (int)c->pid, c->q.bytes, ms);
}

/* --- incoming ------------------------------------------------------------- */

static void conn_accept(struct conn *l)
{
	struct ucred cred;
	char why[512];
	socklen_t len;
	struct conn *c;
	int fd, i;

	for (i = 0; i < 32; i++) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				d_log("accept: %s", strerror(errno));
			return;
		}
		if (D->nr_conns >= D_MAX_CONNS) {
			d_log("refusing a connection: %u already open",
			      D->nr_conns);
			close(fd);
			continue;
		}
		c = conn_new(fd, NULL);
		if (!c) {
			close(fd);
			continue;
		}
		len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
			d_log("refusing a connection: no peer credentials "
			      "(%s)",
			      strerror(errno));
			conn_close(c);
			continue;
		}
		c->pid = cred.pid;
		c->uid = cred.uid;
		if (!access_peer_check(&c->cred, cred.pid, cred.uid, why,
				       sizeof(why))) {
			/* Answered at its HELLO, then closed. */
			d_log("refusing connection %u (pid %d): %s", c->id,
			      (int)cred.pid, why);
			c->denied = strdup(why);
			if (!c->denied)
				conn_close(c);
		}
		d_dbg("connection %u from pid %d", c->id, (int)c->pid);
	}
}

static void conn_protocol_error(struct conn *c, int err, const char *why)
{
	c->errors++;
	if (c->ops->bad_frame)
		c->ops->bad_frame(c);
	d_dbg("connection %u: %s (%s)", c->id, why ? why : "bad bytes",
	      strerror(-err));
}

void conn_reply_hello(struct conn *c, const struct hvt_msg *m, uint32_t role,
		      int status, const char *text)
{
	struct hvt_msg r;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_HELLO;
	r.flags = HVT_PF_REPLY;
	r.req = m->req;
	r.u.hello.min_version = HVT_PROTO_VERSION;
	r.u.hello.max_version = HVT_PROTO_VERSION;
	r.u.hello.role = role;
	r.u.hello.pid = (uint32_t)getpid();
	r.u.hello.status = status;
	r.u.hello.text.ptr = text;
	r.u.hello.text.len = (uint32_t)strnlen(text, HVT_PROTO_TEXT_MAX);
	conn_send(c, &r);
}

/* A peer access_peer_check() refused: say why, in the answer its HELLO
 * expects (or as an error), then close. */
static const struct conn_ops *conn_role(uint32_t hello_role)
{
	return hello_role < CONN_MAX_ROLES ? conn_roles[hello_role] : NULL;
}

static void conn_refuse(struct conn *c, const struct hvt_msg *m)
{
	const struct conn_ops *role = conn_role(m->u.hello.role);

	c->closing = true;
	if (m->flags & HVT_PF_REPLY)
		return;
	if (m->type != HVT_MSG_HELLO)
		conn_reply_error(c, m->req, m->chan, -EACCES, c->denied);
	else
		conn_reply_hello(c, m,
				 role ? role->reply_role : HVT_ROLE_DAEMON,
				 -EACCES, c->denied);
}

/* "hvtraced takes agents (role 1) and tools (role 4) on this socket" */
static void conn_wrong_role(struct conn *c, const struct hvt_msg *m)
{
	char text[HVT_PROTO_TEXT_MAX + 1];
	size_t len;
	uint32_t i;
	int n;

	len = (size_t)snprintf(text, sizeof(text), "hvtraced takes");
	for (i = 0, n = 0; i < CONN_MAX_ROLES && len < sizeof(text); i++) {
		if (!conn_roles[i])
			continue;
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%s %ss (role %u)", n++ ? " and" : "",
					conn_roles[i]->name, i);
	}
	if (len < sizeof(text))
		snprintf(text + len, sizeof(text) - len, " on this socket");
	conn_reply_error(c, m->req, 0, -EPROTO, text);
	c->closing = true;
}

/* An unbound connection: HELLO first, then the role it asks for. */
static void conn_first_frame(struct conn *c, const struct hvt_msg *m)
{
	const struct conn_ops *role;

	if (c->denied) {
		conn_refuse(c, m);
		return;
	}
	if (m->type != HVT_MSG_HELLO || (m->flags & HVT_PF_REPLY)) {
		conn_protocol_error(c, -EPROTO, "no HELLO first");
		if (!(m->flags & HVT_PF_REPLY))
			conn_reply_error(c, m->req, m->chan, -EPROTO,
					 "send HELLO first");
		return;
	}
	role = conn_role(m->u.hello.role);
	if (!role || !role->hello) {
		conn_wrong_role(c, m);
		return;
	}
	role->hello(c, m);
}

static void conn_dispatch(struct conn *c, const struct hvt_frame *f)
{
	const char *why = NULL;
	struct hvt_msg m;
	int ret;

	c->frames_in++;
	ret = hvt_msg_decode(f, &m, &why);
	if (ret) {
		conn_protocol_error(c, ret, why);
		if (!(f->flags & HVT_PF_REPLY))
			conn_reply_error(c, f->req, f->chan, ret,
					 why ? why : "malformed message");
		return;
	}
	c->ops->frame(c, &m);
}

static void conn_read(struct conn *c)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(HVT_ATTACH_MAX_FDS * sizeof(int))];
	} cm;
	struct msghdr mh = { 0 };
	struct cmsghdr *ch;
	struct hvt_frame f;
	struct iovec iov;
	uint8_t *room;
	ssize_t n;
	int ret;

	iov.iov_len = hvt_proto_dec_room(&c->dec, &room);
	iov.iov_base = room;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	/* Time-sync answers are stamped with their arrival, not with the
	 * time their frame gets decoded. */
	c->rx_ns = d_now_ns();
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		d_dbg("connection %u: read: %s", c->id, strerror(errno));
		conn_close(c);
		return;
	}
	for (ch = CMSG_FIRSTHDR(&mh); ch; ch = CMSG_NXTHDR(&mh, ch)) {
		int *fds = (int *)CMSG_DATA(ch);
		size_t k, nfd;

		if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			/* Agents pass one descriptor, tools those of an
			 * attach by pid (HVT_ATTACH_MAX_FDS). */
			if (c->ops->takes_fds &&
			    c->nr_fds < (int)HVT_ATTACH_MAX_FDS)
				c->fds[c->nr_fds++] = fds[k];
			else
				close(fds[k]);
		}
	}
	if (n == 0) {
		d_dbg("connection %u closed by the peer", c->id);
		conn_close(c);
		return;
	}
	hvt_proto_dec_added(&c->dec, (uint32_t)n);
	/* Bounded by the decoder's buffer. */
	while (!c->dead && (ret = hvt_proto_dec_next(&c->dec, &f)) != 0) {
		if (ret < 0) {
			conn_protocol_error(c, ret, "bytes that are not a "
						    "frame");
			continue;
		}
		conn_dispatch(c, &f);
	}
	if (c->dead)
		return;
	/*
	 * A local peer that keeps breaking the protocol is dropped: too
	 * many bad frames, or too many bytes that were no frame at all.  A
	 * guest's chardev never is: the decoder resynchronises instead.
	 */
	if (c->ops->max_errors &&
	    (c->errors > c->ops->max_errors ||
	     c->dec.skipped > D_MAX_GARBAGE) &&
	    !c->closing) {
		struct hvt_msg bye;

		d_log("connection %u (pid %d) broke the protocol %llu times: "
		      "disconnecting it",
		      c->id, (int)c->pid, (unsigned long long)c->errors);
		memset(&bye, 0, sizeof(bye));
		bye.type = HVT_MSG_BYE;
		bye.u.bye.reason = HVT_BYE_PROTOCOL;
		bye.u.bye.status = -EPROTO;
		bye.u.bye.text.ptr = "too many protocol errors";
		bye.u.bye.text.len = 24;
		conn_push(c, &bye, false, NULL, NULL);
		c->closing = true;
		conn_update_events(c);
	}
	/* Stop reading a peer that does not drain what it provokes. */
	if (c->q.bytes > D_AGENT_QUEUE && c->ops->pauses && !c->paused) {
		c->paused = true;
		conn_update_events(c);
	}
}

void conn_handle(struct conn *c, uint32_t events)
{
	if (c->dead)
		return;
	if (c->ops->event) {
		c->ops->event(c, events);
		return;
	}
	if (events & EPOLLOUT)
		conn_flush(c);
	if (c->dead)
		return;
	if (c->closing && (events & (EPOLLHUP | EPOLLERR))) {
		conn_close(c);	/* nobody left to read what is queued */
		return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_read(c);
}

static void conn_signal_event(struct conn *c, uint32_t events)
{
	struct signalfd_siginfo si;

	(void)events;
	while (read(c->fd, &si, sizeof(si)) == sizeof(si)) {
		d_log("signal %u: shutting down", si.ssi_signo);
		D->stop = 1;
	}
}

static void conn_listen_event(struct conn *c, uint32_t events)
{
	(void)events;
	conn_accept(c);
}

static const struct conn_ops conn_listen_ops = {
	.name = "listen",
	.event = conn_listen_event,
};

static const struct conn_ops conn_signal_ops = {
	.name = "signal",
	.event = conn_signal_event,
};

struct conn *conn_listen(int fd)
{
	return conn_new(fd, &conn_listen_ops);
}

struct conn *conn_signal(int fd)
{
	return conn_new(fd, &conn_signal_ops);
}
