// SPDX-License-Identifier: MIT
/*
 * libhvtrace: reading remotes through hvtraced (see the page-feed section of <hvtrace-daemon.h>).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace-events.h>
#include <hvtrace.h>
#include <hvtrace/page.h>

#include "dfeed.h"

#include "dclock.h"

/*
 * The feed's queue.  The feed takes pages from the socket only while fewer
 * than max_queued wait (HVTRACE_DAEMON_FEED_PAGES, 1 to DF_MAX_QUEUED;
 * DF_MAX_QUEUED by default): past it, the socket fills and hvtraced, whose
 * tool queue then fills too, stops reading the CPU (backpressure).
 *
 * A request's answer comes behind the pages hvtraced queued before it, so
 * while the feed waits for one (df_call()) it must take every frame: the
 * pages that come then are kept beyond max_queued, up to DF_MAX_QUEUED.
 * They are what hvtraced had out (its queue for the tool and the socket),
 * a bounded amount, not a loss: with rings of several CPUs opened one after
 * the other, the first CPUs' pages flow while the later ones subscribe.
 * Only a blocking DRAIN, whose answer follows every page of the area, is
 * held to max_queued.
 *
 * A page past the limit, or one malloc() refuses, is dropped at the feed
 * and counted at its subscription and CPU: every later page of that CPU
 * carries the count in its dropped_pages and dropped_events, beside the
 * daemon's, and a finished drain hands on what no page carried as an
 * empty page (df_report_loss()).
 */
#define DF_MAX_QUEUED 65536u

/* What the feed dropped for one subscription's CPU. */
struct df_loss {
	uint32_t sub, cpu;
	uint64_t pages, events;
	uint64_t reported; /* pages a queued page has carried */
};

/* The queue of one routed (remote, cpu): see dfeed.h. */
struct df_route {
	uint32_t remote, cpu;
	struct hvtrace_daemon_page *head, *tail;
};

struct hvtrace_daemon_feed {
	struct hvtrace_daemon *dc;
	struct hvtrace_daemon_page *head, *tail;
	unsigned int queued, max_queued;
	bool in_call;	/* waiting for the answer to a request: see above */
	struct df_loss *loss;
	size_t nr_loss, cap_loss;
	/* the DRAIN started last (hvtrace_daemon_feed_drain_start()) */
	uint32_t drain_req, drain_remote;
	int drain_state; /* 0: none out, 1: answered, -errno: refused */
	bool drain_out;
	struct hvt_dclocks clocks; /* the newest CLOCK of each remote */
	struct df_route *routes;
	unsigned int nr_routes;
};

int hvtrace_daemon_feed_open(const char *sock, struct hvtrace_daemon_feed **out)
{
	struct hvtrace_daemon_feed *f = calloc(1, sizeof(*f));
	const char *env = getenv("HVTRACE_DAEMON_FEED_PAGES");
	int ret;

	*out = NULL;
	if (!f)
		return hvt_err(-ENOMEM, "out of memory");
	f->max_queued = DF_MAX_QUEUED;
	if (env && *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);

		if (*end || !v || v > DF_MAX_QUEUED) {
			free(f);
			return hvt_err(-EINVAL,
				       "HVTRACE_DAEMON_FEED_PAGES='%s': give a "
				       "number of pages from 1 to %u",
				       env, DF_MAX_QUEUED);
		}
		f->max_queued = (unsigned int)v;
	}
	ret = hvtrace_daemon_open(sock, &f->dc);
	if (ret) {
		free(f);
		return ret;
	}
	*out = f;
	return 0;
}

/* Free a list of pages; how many there were. */
static unsigned int df_free_pages(struct hvtrace_daemon_page *p)
{
	struct hvtrace_daemon_page *n;
	unsigned int nr = 0;

	for (; p; p = n, nr++) {
		n = p->next;
		free(p);
	}
	return nr;
}

void hvtrace_daemon_feed_close(struct hvtrace_daemon_feed *f)
{
	if (!f)
		return;
	df_free_pages(f->head);
	free(f->loss);
	while (f->nr_routes)
		hvt_dfeed_unroute(f, f->routes[0].remote, f->routes[0].cpu);
	free(f->routes);
	hvtrace_daemon_close(f->dc);
	hvt_dclocks_free(&f->clocks);
	free(f);
}

int hvtrace_daemon_feed_fd(const struct hvtrace_daemon_feed *f)
{
	return hvtrace_daemon_fd(f->dc);
}

bool hvtrace_daemon_feed_pending(const struct hvtrace_daemon_feed *f)
{
	return f->head != NULL;
}

static struct df_route *df_find_route(struct hvtrace_daemon_feed *f,
				      uint32_t remote, uint32_t cpu)
{
	unsigned int i;

	for (i = 0; i < f->nr_routes; i++)
		if (f->routes[i].remote == remote && f->routes[i].cpu == cpu)
			return &f->routes[i];
	return NULL;
}

/* The feed's losses of subscription @sub's CPU @cpu; NULL if none (or,
 * with @add, no memory). */
static struct df_loss *df_loss_of(struct hvtrace_daemon_feed *f, uint32_t sub,
				  uint32_t cpu, bool add)
{
	struct df_loss *l;
	size_t i;

	for (i = 0; i < f->nr_loss; i++)
		if (f->loss[i].sub == sub && f->loss[i].cpu == cpu)
			return &f->loss[i];
	if (!add)
		return NULL;
	if (f->nr_loss == f->cap_loss) {
		size_t cap = f->cap_loss ? 2 * f->cap_loss : 8;

		l = realloc(f->loss, cap * sizeof(*l));
		if (!l)
			return NULL;
		f->loss = l;
		f->cap_loss = cap;
	}
	l = &f->loss[f->nr_loss++];
	memset(l, 0, sizeof(*l));
	l->sub = sub;
	l->cpu = cpu;
	return l;
}

static void df_enqueue(struct hvtrace_daemon_feed *f,
		       struct hvtrace_daemon_page *p)
{
	struct df_loss *l = f->nr_loss ? df_loss_of(f, p->sub, p->cpu, false)
				       : NULL;
	struct df_route *rt = df_find_route(f, p->remote, p->cpu);
	struct hvtrace_daemon_page **head = rt ? &rt->head : &f->head;
	struct hvtrace_daemon_page **tail = rt ? &rt->tail : &f->tail;

	/* The feed's own drops travel with the daemon's. */
	if (l) {
		p->dropped_pages += l->pages;
		p->dropped_events += l->events;
		l->reported = l->pages;
	}

	p->next = NULL;
	if (*tail)
		(*tail)->next = p;
	else
		*head = p;
	*tail = p;
	f->queued++;
}

/* An empty page of @l's CPU that carries its drops (after a drain). */
static void df_report_loss(struct hvtrace_daemon_feed *f, uint32_t remote,
			   struct df_loss *l)
{
	struct hvtrace_daemon_page *p =
		calloc(1, sizeof(*p) + HVT_PAGE_HDR_SIZE);

	if (!p)
		return; /* told with the next page of the CPU, if one comes */
	p->remote = remote;
	p->sub = l->sub;
	p->cpu = l->cpu;
	p->len = HVT_PAGE_HDR_SIZE;
	df_enqueue(f, p);
}

/* Keep a PAGE; apply a CLOCK; note the answer to our DRAIN; drop anything else that is
 * not ours.  A page the queue has no room for is counted, never dropped
 * unsaid. */
static void df_other(void *arg, const struct hvt_msg *m)
{
	struct hvtrace_daemon_feed *f = arg;
	struct hvtrace_daemon_page *p;
	struct df_loss *l;

	/* The model is there before the pages it maps are taken. */
	if (m->type == HVT_MSG_CLOCK) {
		hvt_dclock_apply(&f->clocks, m);
		return;
	}
	if (f->drain_out && (m->flags & HVT_PF_REPLY) &&
	    m->req == f->drain_req) {
		size_t i;

		f->drain_out = false;
		f->drain_state = 1;
		if (hvt_msg_layout(m->type, 1) != HVT_L_RESULT)
			f->drain_state = hvt_err(-EPROTO,
						 "unexpected %s reply to DRAIN",
						 hvt_msg_type_name(m->type));
		else if (m->u.result.status)
			f->drain_state = hvt_err(m->u.result.status, "%.*s",
						 (int)m->u.result.text.len,
						 m->u.result.text.ptr);
		for (i = 0; i < f->nr_loss; i++)
			if (f->loss[i].reported != f->loss[i].pages)
				df_report_loss(f, f->drain_remote,
					       &f->loss[i]);
		return;
	}
	if (m->type != HVT_MSG_PAGE || (m->flags & HVT_PF_REPLY))
		return;
	p = f->queued < (f->in_call ? DF_MAX_QUEUED : f->max_queued) ?
		    malloc(sizeof(*p) + m->u.page.len) :
		    NULL;
	if (!p) {
		l = df_loss_of(f, m->req, m->u.page.cpu, true);
		if (l) {
			l->pages++;
			l->events += m->u.page.entries +
				     m->u.page.lost_events;
		}
		return;
	}
	p->remote = m->chan;
	p->sub = m->req;
	p->cpu = m->u.page.cpu;
	p->flags = m->u.page.flags;
	p->seq = m->u.page.seq;
	p->entries = m->u.page.entries;
	p->lost_events = m->u.page.lost_events;
	p->dropped_pages = m->u.page.dropped_pages;
	p->dropped_events = m->u.page.dropped_events;
	p->first_ts = m->u.page.first_ts;
	p->len = m->u.page.len;
	memcpy(p->data, m->u.page.data, m->u.page.len);
	df_enqueue(f, p);
}

static int df_call(struct hvtrace_daemon_feed *f, struct hvt_msg *req,
		   struct hvt_msg *reply)
{
	int ret;

	f->in_call = true;
	ret = hvtrace_daemon_call(f->dc, req, reply, HVTRACE_DAEMON_TIMEOUT_MS,
				  df_other, f);
	f->in_call = false;
	return ret;
}

static int df_result(struct hvtrace_daemon_feed *f, struct hvt_msg *req,
		     struct hvt_m_result *res)
{
	struct hvt_msg r;
	int ret = df_call(f, req, &r);

	if (ret)
		return ret;
	if (hvt_msg_layout(r.type, 1) != HVT_L_RESULT)
		return hvt_err(-EPROTO, "unexpected %s reply",
			       hvt_msg_type_name(r.type));
	if (r.u.result.status)
		return hvt_err(r.u.result.status, "%.*s",
			       (int)r.u.result.text.len, r.u.result.text.ptr);
	if (res) {
		*res = r.u.result;
		res->text.ptr = NULL;
		res->text.len = 0;
	}
	return 0;
}

int hvtrace_daemon_feed_subscribe(struct hvtrace_daemon_feed *f,
				  uint32_t remote, int cpu, uint32_t queue_kib,
				  uint32_t *sub)
{
	struct hvt_m_result res;
	struct hvt_msg m;
	int ret;

	memset(&res, 0, sizeof(res));
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = remote;
	m.u.subscribe.cpu = cpu;
	m.u.subscribe.queue_kib = queue_kib;
	ret = df_result(f, &m, &res);
	if (!ret && sub)
		*sub = res.id;
	return ret;
}

int hvtrace_daemon_feed_next(struct hvtrace_daemon_feed *f, int timeout_ms,
			     struct hvtrace_daemon_page **page)
{
	struct hvt_msg m;
	int ret;

	*page = NULL;
	for (;;) {
		struct pollfd pfd = {.fd = hvtrace_daemon_fd(f->dc),
				     .events = POLLIN};

		if (f->head) {
			*page = f->head;
			f->head = f->head->next;
			if (!f->head)
				f->tail = NULL;
			f->queued--;
			(*page)->next = NULL;
			return 1;
		}
		/* Frames already received come first (a zero timeout only
		 * decodes what the client holds)... */
		ret = hvtrace_daemon_recv(f->dc, &m, 0);
		if (ret < 0)
			return ret;
		if (ret) {
			df_other(f, &m);
			continue;
		}
		/* ... then the socket, as long as the caller waits. */
		ret = poll(&pfd, 1, timeout_ms);
		if (ret < 0 && errno != EINTR)
			return hvt_err(-errno, "poll: %s", strerror(errno));
		if (ret <= 0)
			return 0;
		/* Bytes are there: a whole frame follows at once. */
		ret = hvtrace_daemon_recv(f->dc, &m, HVTRACE_DAEMON_TIMEOUT_MS);
		if (ret < 0)
			return ret;
		if (!ret)
			return hvt_err(-ETIMEDOUT,
				       "hvtraced stopped mid-frame");
		/* A page is queued and returned above; anything else (a
		 * stray message) is dropped and we look again. */
		df_other(f, &m);
	}
}

int hvt_dfeed_route(struct hvtrace_daemon_feed *f, uint32_t remote,
		    uint32_t cpu)
{
	struct df_route *v;

	if (df_find_route(f, remote, cpu))
		return 0;
	v = realloc(f->routes, (f->nr_routes + 1) * sizeof(*v));
	if (!v)
		return hvt_err(-ENOMEM, "out of memory");
	f->routes = v;
	memset(&v[f->nr_routes], 0, sizeof(*v));
	v[f->nr_routes].remote = remote;
	v[f->nr_routes].cpu = cpu;
	f->nr_routes++;
	return 0;
}

void hvt_dfeed_unroute(struct hvtrace_daemon_feed *f, uint32_t remote,
		       uint32_t cpu)
{
	struct df_route *rt = df_find_route(f, remote, cpu);

	if (!rt)
		return;
	f->queued -= df_free_pages(rt->head);
	*rt = f->routes[--f->nr_routes];
}

int hvt_dfeed_take(struct hvtrace_daemon_feed *f, uint32_t remote,
		   uint32_t cpu, struct hvtrace_daemon_page **page)
{
	struct df_route *rt = df_find_route(f, remote, cpu);
	struct hvt_msg m;
	int ret;

	*page = NULL;
	if (!rt)
		return hvt_err(-EINVAL, "remote %u CPU %u is not routed",
			       remote, cpu);
	/* Bounded: each frame received is routed (or dropped), and a full
	 * feed receives nothing more. */
	while (!rt->head && f->queued < f->max_queued) {
		struct pollfd pfd = {.fd = hvtrace_daemon_fd(f->dc),
				     .events = POLLIN};

		ret = hvtrace_daemon_recv(f->dc, &m, 0);
		if (ret < 0)
			return ret;
		if (!ret) {
			ret = poll(&pfd, 1, 0);
			if (ret < 0 && errno != EINTR)
				return hvt_err(-errno, "poll: %s",
					       strerror(errno));
			if (ret <= 0)
				return 0;
			ret = hvtrace_daemon_recv(f->dc, &m,
						  HVTRACE_DAEMON_TIMEOUT_MS);
			if (ret < 0)
				return ret;
			if (!ret)
				return hvt_err(-ETIMEDOUT,
					       "hvtraced stopped mid-frame");
		}
		df_other(f, &m);
		rt = df_find_route(f, remote, cpu); /* df_other moves none */
	}
	if (!rt->head)
		return 0;
	*page = rt->head;
	rt->head = rt->head->next;
	if (!rt->head)
		rt->tail = NULL;
	f->queued--;
	(*page)->next = NULL;
	return 1;
}

int hvt_dfeed_remote(struct hvtrace_daemon_feed *f, uint32_t remote,
		     struct hvt_remote_rec *rec)
{
	struct hvt_msg m, r;
	uint32_t i;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REMOTES;
	ret = df_call(f, &m, &r);
	if (ret)
		return ret;
	if (r.type != HVT_MSG_REMOTES)
		return hvt_err(-EPROTO, "hvtraced answered REMOTES with %s",
			       hvt_msg_type_name(r.type));
	for (i = 0; i < r.u.remotes.recs.count; i++) {
		hvt_msg_remote_at(&r.u.remotes.recs, i, rec);
		if (rec->id == remote)
			return 0;
	}
	return hvt_err(-ENOENT, "hvtraced has no remote %u (any more)",
		       remote);
}

int hvt_dfeed_unsubscribe(struct hvtrace_daemon_feed *f, uint32_t sub)
{
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_UNSUBSCRIBE;
	m.u.unsubscribe.sub = sub;
	return df_result(f, &m, NULL);
}

uint64_t hvtrace_daemon_page_drops(const struct hvtrace_daemon_page *pg,
				   uint64_t *seen)
{
	uint64_t n = 0;

	if (pg->dropped_events > *seen) {
		n = pg->dropped_events - *seen;
		*seen = pg->dropped_events;
	}
	return n;
}

int hvtrace_daemon_feed_drain_start(struct hvtrace_daemon_feed *f,
				    uint32_t remote)
{
	struct hvt_msg m;
	int ret;

	if (f->drain_out)
		return hvt_err(-EBUSY, "a DRAIN of this feed is still out");
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_DRAIN;
	m.chan = remote;
	ret = hvtrace_daemon_send(f->dc, &m);
	if (ret)
		return ret;
	f->drain_req = m.req;
	f->drain_remote = remote;
	f->drain_out = true;
	f->drain_state = 0;
	return 0;
}

int hvtrace_daemon_feed_drained(const struct hvtrace_daemon_feed *f)
{
	return f->drain_out ? 0 : f->drain_state;
}

int hvtrace_daemon_feed_drain(struct hvtrace_daemon_feed *f, uint32_t remote)
{
	struct hvt_msg m;
	int ret = hvtrace_daemon_feed_drain_start(f, remote);

	/* Pages that come before the answer are queued (and counted where
	 * the queue is full). */
	while (!ret && f->drain_out) {
		ret = hvtrace_daemon_recv(f->dc, &m, HVTRACE_DAEMON_TIMEOUT_MS);
		if (!ret)
			ret = hvt_err(-ETIMEDOUT,
				      "hvtraced did not answer a DRAIN "
				      "within %d ms",
				      HVTRACE_DAEMON_TIMEOUT_MS);
		else if (ret > 0) {
			df_other(f, &m);
			ret = 0;
		}
	}
	return ret ? ret : (f->drain_state < 0 ? f->drain_state : 0);
}

int hvtrace_daemon_feed_clock(const struct hvtrace_daemon_feed *f,
			      uint32_t remote, struct hvtrace_clock_map *m)
{
	const struct hvtrace_clock_map *k = hvt_dclock_find(&f->clocks, remote);

	if (!k)
		return -ENODATA;
	*m = *k;
	return 0;
}

int hvtrace_daemon_feed_ts_to_host(struct hvtrace_daemon_feed *f,
				   uint32_t remote, uint64_t ts, uint64_t *ns,
				   uint64_t *err_ns)
{
	const struct hvtrace_clock_map *k = hvt_dclock_find(&f->clocks, remote);

	if (!k)
		return -ENODATA;
	*ns = hvtrace_clock_map_to_host(k, ts, err_ns);
	return 0;
}

int hvtrace_daemon_feed_ts_to_host_n(struct hvtrace_daemon_feed *f,
				     uint32_t remote, const uint64_t *ts,
				     uint64_t *ns, uint64_t *err_ns, size_t n)
{
	const struct hvtrace_clock_map *k = hvt_dclock_find(&f->clocks, remote);
	size_t i;

	if (!k)
		return -ENODATA;
	for (i = 0; i < n; i++)
		ns[i] = hvtrace_clock_map_to_host(k, ts[i],
						  err_ns ? &err_ns[i] : NULL);
	return 0;
}

int hvtrace_daemon_feed_to_host(struct hvtrace_daemon_feed *f, uint32_t remote,
				const uint64_t *ts, uint64_t *ns, size_t n,
				uint64_t *err_ns)
{
	uint8_t *buf;
	size_t off = 0;
	int ret = 0;

	if (err_ns)
		*err_ns = UINT64_MAX;
	buf = malloc((size_t)HVT_PROTO_MAX_TS * 8);
	if (!buf)
		return hvt_err(-ENOMEM, "out of memory");
	while (off < n) {
		uint32_t k = n - off > HVT_PROTO_MAX_TS ? HVT_PROTO_MAX_TS
							: (uint32_t)(n - off);
		struct hvt_msg m, r;
		uint32_t i;

		for (i = 0; i < k; i++)
			hvt_msg_put_u64(buf + 8 * i, ts[off + i]);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TO_HOST;
		m.chan = remote;
		m.u.to_host.ts.ptr = buf;
		m.u.to_host.ts.count = k;
		ret = df_call(f, &m, &r);
		if (ret)
			break;
		if (r.type == HVT_MSG_ERROR) {
			ret = hvt_err(r.u.result.status ? r.u.result.status
							: -EIO,
				      "%.*s", (int)r.u.result.text.len,
				      r.u.result.text.ptr);
			break;
		}
		if (r.type != HVT_MSG_TO_HOST ||
		    r.u.to_host_reply.ns.count != k) {
			ret = hvt_err(-EPROTO, "unexpected TO_HOST reply");
			break;
		}
		if (r.u.to_host_reply.status) {
			ret = hvt_err(r.u.to_host_reply.status,
				      "hvtraced cannot convert timestamps");
			break;
		}
		for (i = 0; i < k; i++)
			ns[off + i] = hvt_msg_u64_at(&r.u.to_host_reply.ns, i);
		if (err_ns)
			*err_ns = r.u.to_host_reply.err_ns;
		off += k;
	}
	free(buf);
	return ret;
}

/* --- remotes and events ----------------------------------------------------
 */

int hvtrace_daemon_get_remotes(struct hvtrace_daemon *dc,
			       struct hvt_remote_rec **recs, uint32_t *n)
{
	struct hvt_remote_rec *v;
	struct hvt_msg m, r;
	uint32_t i;
	int ret;

	*recs = NULL;
	*n = 0;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REMOTES;
	ret = hvtrace_daemon_call(dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL,
				  NULL);
	if (ret)
		return ret;
	if (r.type != HVT_MSG_REMOTES)
		return hvt_err(-EPROTO, "hvtraced answered REMOTES with %s",
			       hvt_msg_type_name(r.type));
	v = calloc(r.u.remotes.recs.count + 1, sizeof(*v));
	if (!v)
		return hvt_err(-ENOMEM, "out of memory");
	for (i = 0; i < r.u.remotes.recs.count; i++)
		hvt_msg_remote_at(&r.u.remotes.recs, i, &v[i]);
	*recs = v;
	*n = r.u.remotes.recs.count;
	return 0;
}

void hvtrace_daemon_events_free(struct hvtrace_daemon_events *evs)
{
	unsigned int i;

	for (i = 0; i < evs->nr; i++)
		free(evs->ev[i].format);
	free(evs->ev);
	free(evs->header_page);
	free(evs->header_event);
	memset(evs, 0, sizeof(*evs));
}

static char *df_strndup(const char *p, uint32_t len)
{
	char *s = malloc((size_t)len + 1);

	if (s) {
		memcpy(s, p, len);
		s[len] = '\0';
	}
	return s;
}

static int df_add_format(struct hvtrace_daemon_events *evs,
			 const struct hvt_msg *r)
{
	const struct hvt_m_format *f = &r->u.format;
	struct hvtrace_daemon_event *e, *v;
	const char *slash;
	uint32_t nl;

	if (f->name.len == 11 && !memcmp(f->name.ptr, "header_page", 11)) {
		free(evs->header_page);
		evs->header_page = df_strndup(f->text.ptr, f->text.len);
		return evs->header_page ? 0 : -ENOMEM;
	}
	if (f->name.len == 12 && !memcmp(f->name.ptr, "header_event", 12)) {
		free(evs->header_event);
		evs->header_event = df_strndup(f->text.ptr, f->text.len);
		return evs->header_event ? 0 : -ENOMEM;
	}
	if (!f->name.len || f->name.len >= 300)
		return 0;
	v = realloc(evs->ev, (evs->nr + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	evs->ev = v;
	e = &v[evs->nr];
	memset(e, 0, sizeof(*e));
	slash = memchr(f->name.ptr, '/', f->name.len);
	if (slash) {
		nl = (uint32_t)(slash - f->name.ptr);
		if (nl >= sizeof(e->system) ||
		    f->name.len - nl - 1 >= sizeof(e->name))
			return 0;
		memcpy(e->system, f->name.ptr, nl);
		memcpy(e->name, slash + 1, f->name.len - nl - 1);
	} else {
		if (f->name.len >= sizeof(e->name))
			return 0;
		snprintf(e->system, sizeof(e->system), "%s", "user_events");
		memcpy(e->name, f->name.ptr, f->name.len);
	}
	e->id = f->id;
	e->bit = -1;
	e->format = df_strndup(f->text.ptr, f->text.len);
	if (!e->format)
		return -ENOMEM;
	evs->nr++;
	return 0;
}

int hvtrace_daemon_events_state(struct hvtrace_daemon *dc, uint32_t remote,
				struct hvtrace_daemon_events *evs)
{
	char *text = NULL, *line, *save = NULL;
	unsigned int i;
	int ret;

	ret = hvtrace_daemon_get_text(dc, remote, HVT_TEXT_EVENTS, &text, NULL);
	if (ret)
		return ret;
	for (i = 0; i < evs->nr; i++) {
		evs->ev[i].bit = -1;
		evs->ev[i].enabled = false;
	}
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char sys[64], name[256];
		unsigned int id, on;
		int bit;

		if (sscanf(line, "%63s %255s %u %d %u", sys, name, &id, &bit,
			   &on) != 5)
			continue;
		for (i = 0; i < evs->nr; i++) {
			if (strcmp(evs->ev[i].system, sys) ||
			    strcmp(evs->ev[i].name, name))
				continue;
			evs->ev[i].bit = bit;
			evs->ev[i].enabled = on != 0;
		}
	}
	free(text);
	return 0;
}

int hvtrace_daemon_events_get(struct hvtrace_daemon *dc, uint32_t remote,
			      struct hvtrace_daemon_events *out)
{
	struct hvtrace_daemon_events evs = {0};
	struct hvt_msg m, r;
	int ret, parts;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_FORMATS;
	m.chan = remote;
	ret = hvtrace_daemon_call(dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL,
				  NULL);
	/* Bounded: one format per message, at most 65536 of them. */
	for (parts = 0; !ret && parts < 65536; parts++) {
		if (r.type == HVT_MSG_ERROR) {
			ret = hvt_err(r.u.result.status ? r.u.result.status
							: -EIO,
				      "%.*s", (int)r.u.result.text.len,
				      r.u.result.text.ptr);
			break;
		}
		if (r.type != HVT_MSG_FORMATS) {
			ret = hvt_err(-EPROTO, "unexpected %s reply",
				      hvt_msg_type_name(r.type));
			break;
		}
		ret = df_add_format(&evs, &r);
		if (ret) {
			ret = hvt_err(ret, "out of memory");
			break;
		}
		if (!(r.flags & HVT_PF_MORE))
			break;
		do {
			ret = hvtrace_daemon_recv(dc, &r,
						  HVTRACE_DAEMON_TIMEOUT_MS);
		} while (ret == 1 && r.req != m.req);
		ret = ret == 1 ? 0
		      : ret    ? ret
			       : hvt_err(-ETIMEDOUT,
					 "hvtraced stopped mid-formats");
	}
	if (!ret)
		ret = hvtrace_daemon_events_state(dc, remote, &evs);
	if (ret) {
		hvtrace_daemon_events_free(&evs);
		return ret;
	}
	*out = evs;
	return 0;
}

/* The remote's formats, checked in one sandbox child for all of them
 * (hvt_decoder_add_formats()); one the built-ins hold is the same event. */
static int dfeed_add_formats(struct hvtrace_decoder *d,
			     const struct hvtrace_daemon_events *evs)
{
	struct hvt_tep_text *t;
	unsigned int i;
	int *rets, ret = 0;

	if (!evs->nr)
		return 0;
	t = calloc(evs->nr, sizeof(*t));
	rets = calloc(evs->nr, sizeof(*rets));
	if (!t || !rets) {
		free(t);
		free(rets);
		return hvt_err(-ENOMEM, "out of memory");
	}
	for (i = 0; i < evs->nr; i++)
		t[i] = (struct hvt_tep_text){
			.kind = HVT_TEP_FORMAT,
			.system = evs->ev[i].system,
			.text = evs->ev[i].format,
			.len = strlen(evs->ev[i].format),
		};
	hvt_decoder_add_formats(d, t, evs->nr, rets);
	for (i = 0; !ret && i < evs->nr; i++)
		if (rets[i] && rets[i] != -EEXIST)
			ret = rets[i];
	free(t);
	free(rets);
	return ret;
}

int hvtrace_daemon_decoder_new(const struct hvt_remote_rec *rec,
			       const struct hvtrace_daemon_events *evs,
			       struct hvtrace_decoder **out)
{
	struct hvtrace_decoder *d;
	int ret;

	ret = hvtrace_decoder_new(rec->subbuf_size ? rec->subbuf_size : 4096,
				  &d);
	if (ret)
		return ret;
	ret = hvtrace_decoder_add_builtin(d, rec->writer_kind);
	if (!ret)
		ret = dfeed_add_formats(d, evs);
	if (ret) {
		hvtrace_decoder_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

static void df_set_comm(void *arg, int pid, const char *comm)
{
	if (pid > 0)
		hvtrace_decoder_set_comm(arg, pid, comm);
}

int hvtrace_daemon_comms_load(struct hvtrace_daemon *dc, uint32_t remote,
			      struct hvtrace_decoder *d)
{
	return hvtrace_daemon_cmdlines_each(dc, remote, df_set_comm, d);
}

int hvtrace_daemon_ksyms_load(struct hvtrace_daemon *dc, uint32_t remote,
			      struct hvtrace_decoder *d)
{
	struct hvtrace_ksyms *ks;
	size_t len;
	char *text;
	int ret;

	ret = hvtrace_daemon_get_text(dc, remote, HVT_TEXT_KALLSYMS, &text,
				      &len);
	if (ret)
		return ret;
	/* The guest's text: hostile, validated line by line. */
	ret = hvtrace_ksyms_parse(text, len, &ks);
	free(text);
	if (ret)
		return hvt_err(ret, "the remote's kernel symbols are not "
				    "kallsyms text");
	/* With the modules of the decoder's formats folder, if any. */
	ret = hvtrace_decoder_set_image_ksyms(d, ks);
	return ret < 0 ? ret : 0;
}

int hvtrace_daemon_comm_read(const char *path, char *comm, size_t size)
{
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, comm, size - 1);
	ret = n < 0 ? -errno : -ENODATA;
	close(fd);
	if (n <= 0)
		return ret;
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	return 0;
}

void hvtrace_daemon_comm_local(struct hvtrace_decoder *d, int pid)
{
	char path[64], comm[32];

	if (pid <= 0 || hvtrace_decoder_comm(d, pid))
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (!hvtrace_daemon_comm_read(path, comm, sizeof(comm)))
		hvtrace_decoder_set_comm(d, pid, comm);
}

int hvtrace_daemon_page_walk(const uint8_t *data, uint32_t len, uint64_t *lost,
			     int (*cb)(void *arg, uint64_t ts,
				       const uint8_t *rec, uint32_t rec_len),
			     void *arg)
{
	struct hvt_page_iter it;
	uint64_t commit, ts;
	uint32_t size;
	int item, n = 0;

	*lost = 0;
	if (len < HVT_PAGE_HDR_SIZE)
		return -EBADMSG;
	ts = hvt_rd64(data);
	commit = hvt_rd64(data + HVT_PAGE_COMMIT_OFF);
	size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	if (size > len - HVT_PAGE_HDR_SIZE)
		return -EBADMSG;
	if (commit & HVT_MISSED_EVENTS) {
		*lost = UINT64_MAX;
		if ((commit & HVT_MISSED_STORED) &&
		    (uint64_t)size + 8 <= len - HVT_PAGE_HDR_SIZE)
			*lost = hvt_rd64(data + HVT_PAGE_HDR_SIZE + size);
	}
	hvt_page_iter_init(&it, data + HVT_PAGE_HDR_SIZE, size, ts);
	while ((item = hvt_page_next(&it)) > 0) {
		if (item != HVT_ITEM_DATA)
			continue;
		n++;
		if (cb && cb(arg, it.ts, it.payload, it.len))
			break;
	}
	return item < 0 ? -EBADMSG : n;
}

bool hvtrace_daemon_name_is_remote(const char *arg)
{
	struct stat st;

	if (!arg || !hvt_proto_name_ok(arg, (uint32_t)strlen(arg)))
		return false;
	/* A regular file of that name is an area; a directory never is. */
	return stat(arg, &st) != 0 || !S_ISREG(st.st_mode);
}

/*
 * Writer timestamp @ts of @remote to host CLOCK_MONOTONIC ns, with the
 * clock model hvtraced sent in the page stream (a CLOCK before the
 * subscription's first page and after each refit): no I/O.  Only a
 * daemon that sends no model is asked (TO_HOST).
 */
int hvt_dfeed_map(struct hvtrace_daemon_feed *f, uint32_t remote, uint64_t ts,
		  uint64_t *ns, uint64_t *err_ns)
{
	int ret = hvtrace_daemon_feed_ts_to_host(f, remote, ts, ns, err_ns);

	if (ret != -ENODATA)
		return ret;
	return hvtrace_daemon_feed_to_host(f, remote, &ts, ns, 1, err_ns);
}

uint64_t hvt_page_unmarked_lost(const uint8_t *page, uint32_t len,
				uint64_t lost)
{
	uint64_t commit = 0;

	if (len >= HVT_PAGE_HDR_SIZE)
		memcpy(&commit, page + HVT_PAGE_COMMIT_OFF, 8);
	return (commit & HVT_MISSED_EVENTS) ? 0 : lost;
}
