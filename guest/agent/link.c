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
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
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

static void pending_unlink(struct agent *ag, struct pending *p)
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
static void pending_fail(struct agent *ag, struct pending *p, int status,
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

static int link_push(struct agent *ag, const struct hvt_msg *m)
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

static struct pending *pending_by_req(struct agent *ag, uint32_t req)
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

static void link_hello(struct agent *ag, const struct hvt_msg *answer_to)
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
static void link_replay(struct agent *ag)
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
	/* Requests that waited for the host, in arrival order. */
	for (p = ag->pend; p; p = p->next)
		if (!p->host_req)
			pending_send(ag, p);
}

/* Fail what was sent but not answered: the host may never answer it. */
static void link_fail_inflight(struct agent *ag, const char *why)
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

static void link_down(struct agent *ag, const char *why, bool close_fd)
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

/* --- frames from the host ------------------------------------------------- */

static void link_reply_error(struct agent *ag, const struct hvt_frame *f,
			     int status, const char *text)
{
	struct hvt_msg r;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_ERROR;
	r.flags = HVT_PF_REPLY;
	r.req = f->req;
	r.chan = f->chan;
	r.u.result.status = status;
	r.u.result.text.ptr = text;
	r.u.result.text.len = (uint32_t)strnlen(text, HVT_PROTO_TEXT_MAX);
	link_push(ag, &r);
}

static void link_answer(struct agent *ag, struct pending *p,
			const struct hvt_msg *m)
{
	struct client *c = p->chan ? client_by_chan(ag, p->chan) : NULL;
	struct hvt_msg r;
	int st = m->u.result.status;

	if (m->type == HVT_MSG_REGISTER && !st) {
		if (p->chan == 0) {
			ag->trig_pending = false;
			if (hvtg_event_bind(ag->w, &ag->trig_ev, m->u.result.id,
					    m->u.result.bit) == 0) {
				ag->trig_bound = true;
				ag->trig_id = m->u.result.id;
				ag->trig_bit = m->u.result.bit;
			}
		} else if (p->replay) {
			size_t i;

			for (i = 0; c && i < c->nr_regs; i++) {
				if (c->regs[i].id != p->msg.u.reg.want_id ||
				    (c->regs[i].id == m->u.result.id &&
				     c->regs[i].bit == m->u.result.bit))
					continue;
				agent_log("the host rebound '%s' from id %u "
					  "bit %u to id %u bit %u: client %u "
					  "(pid %d) must re-register it",
					  c->regs[i].def, c->regs[i].id,
					  c->regs[i].bit, m->u.result.id,
					  m->u.result.bit, c->chan,
					  (int)c->pid);
				/* What the host holds now: the next replay
				 * must name this binding. */
				c->regs[i].id = m->u.result.id;
				c->regs[i].bit = m->u.result.bit;
				break;
			}
		} else if (c) {
			client_record_reg(c, p->def, m->u.result.id,
					  m->u.result.bit);
		}
	} else if (m->type == HVT_MSG_REGISTER && p->chan == 0) {
		ag->trig_pending = false;
		agent_log("the host refused the agent's trigger event: %.*s",
			  (int)m->u.result.text.len, m->u.result.text.ptr);
	} else if (p->replay && st) {
		agent_log("the host refused a replayed registration of client "
			  "%u: %.*s",
			  p->chan, (int)m->u.result.text.len,
			  m->u.result.text.ptr);
	}
	if (m->type == HVT_MSG_UNREGISTER && !st && c)
		client_forget_reg(c, p->msg.u.unreg.id);
	if (!p->client_req || !c)
		return;
	r = *m;
	r.req = p->client_req;
	r.chan = 0;
	client_reply(ag, p->chan, &r);
}

static void link_ping(struct agent *ag, const struct hvt_msg *m)
{
	struct hvt_msg r;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_PING;
	r.flags = HVT_PF_REPLY;
	r.req = m->req;
	r.u.pong.seq = m->u.ping.seq;
	r.u.pong.host_ns = m->u.ping.host_ns;
	r.u.pong.clock_id = ag->info.clock_id;
	r.u.pong.writer_rx = ag->link.rx_clock;
	/* As late as possible: link_push() sends right after. */
	r.u.pong.writer_tx = agent_clock_read(ag->info.clock_id);
	if (r.u.pong.writer_tx < r.u.pong.writer_rx)
		r.u.pong.writer_tx = r.u.pong.writer_rx;
	link_push(ag, &r);
}

static void link_trigger(struct agent *ag, const struct hvt_msg *m)
{
	uint64_t token = m->u.trigger.token;
	struct hvt_msg r;
	int ret, cpu;

	memset(&r, 0, sizeof(r));
	r.type = HVT_MSG_TRIGGER;
	r.flags = HVT_PF_REPLY;
	r.req = m->req;
	r.u.trigger_ack.token = token;
	r.u.trigger_ack.writer_ts = agent_clock_read(ag->info.clock_id);
	ret = ag->trig_bound ? hvtg_write(&ag->trig_ev, &token, sizeof(token)) :
			       -ENOENT;
	cpu = sched_getcpu();
	r.u.trigger_ack.cpu = cpu >= 0 && cpu < (int)HVT_ABI_MAX_CPUS ?
				      (uint32_t)cpu : 0;
	r.u.trigger_ack.status = ret < 0 && ret >= -HVT_PROTO_MAX_STATUS ?
					 ret : (ret ? -EIO : 0);
	link_push(ag, &r);
}

static void link_frame(struct agent *ag, const struct hvt_frame *f)
{
	struct link *l = &ag->link;
	const char *why = NULL;
	struct pending *p;
	struct hvt_msg m;
	int ret;

	l->frames_in++;
	ret = hvt_msg_decode(f, &m, &why);
	if (ret) {
		l->errors++;
		agent_dbg("bad frame from the host: %s",
			  why ? why : "malformed");
		if (!(f->flags & HVT_PF_REPLY))
			link_reply_error(ag, f, ret, why ? why : "malformed");
		return;
	}
	if (m.type == HVT_MSG_HELLO) {
		bool same;

		if (m.u.hello.role != HVT_ROLE_HOST) {
			l->errors++;
			return;
		}
		if (!(m.flags & HVT_PF_REPLY) &&
		    (m.u.hello.min_version > HVT_PROTO_VERSION ||
		     m.u.hello.max_version < HVT_PROTO_MIN_VERSION)) {
			link_reply_error(ag, f, -EPROTONOSUPPORT,
					 "this agent speaks protocol "
					 "version 1");
			return;
		}
		if ((m.flags & HVT_PF_REPLY) && m.u.hello.status) {
			agent_log("the host refused this agent: %.*s",
				  (int)m.u.hello.text.len, m.u.hello.text.ptr);
			/* Try again later, not every HELLO retry period. */
			l->hello_ms = agent_now_ms() + 8000;
			return;
		}
		if (!(m.flags & HVT_PF_REPLY))
			link_hello(ag, &m);
		/*
		 * A host session is (pid, generation).  The same one saying
		 * HELLO again is a repeat (a guest port delivers HELLOs that
		 * waited while the agent was not there); another one is a
		 * host that started over and may have lost what was in
		 * flight: tell it everything again.
		 */
		same = l->replayed && m.u.hello.pid == l->host_pid &&
		       m.u.hello.generation == l->host_session;
		if (l->replayed && !same) {
			link_fail_inflight(ag, "the host restarted its "
					       "session; retry");
			l->replayed = false;
		}
		l->host_pid = m.u.hello.pid;
		l->host_session = m.u.hello.generation;
		l->up = true;
		if (!l->replayed)
			link_replay(ag);
		return;
	}
	if (m.flags & HVT_PF_REPLY) {
		p = pending_by_req(ag, m.req);
		if (!p)
			return;	/* late or unknown: nothing waits for it */
		pending_unlink(ag, p);
		if (m.type != p->type && m.type != HVT_MSG_ERROR) {
			l->errors++;
			pending_fail(ag, p, -EPROTO,
				     "the host answered with another message "
				     "type");
		} else {
			link_answer(ag, p, &m);
		}
		pending_free(p);
		return;
	}
	switch (m.type) {
	case HVT_MSG_PING:
		link_ping(ag, &m);
		break;
	case HVT_MSG_TRIGGER:
		link_trigger(ag, &m);
		break;
	case HVT_MSG_EVENT_STATE:
		clients_notice(ag, &m);
		break;
	case HVT_MSG_TRACING:
		agent_dbg("host: tracing %s",
			  m.u.tracing.op == HVT_TRACING_ON ? "on" : "off");
		break;
	case HVT_MSG_BYE:
		agent_log("the host said goodbye: %.*s",
			  (int)m.u.bye.text.len, m.u.bye.text.ptr);
		link_down(ag, "host ended the session",
			  l->kind == LINK_SOCKET);
		break;
	default:
		l->errors++;
		link_reply_error(ag, f, -EOPNOTSUPP,
				 "the agent does not take this message from "
				 "the host");
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
	(void)now;
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
