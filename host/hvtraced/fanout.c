// SPDX-License-Identifier: MIT
/*
 * hvtraced: fan-out -- reading the rings and handing pages to subscribers.
 *
 * The daemon is the only consumer of each area it owns: it reads pages
 * with hvtrace_cpu_read_page(), which publishes consumer progress, so a
 * producer-consumer ring never overwrites what the daemon has not read.
 * Where a remote's pages come from is its page sources' business
 * (page_source.c: an area, a guest kernel's ring): this file reads pages,
 * and a drain's trailing drops, only through their ops, each CPU of the
 * remote from the source it belongs to.  It gives each page to every
 * subscription that covers its CPU, and reads a CPU only while someone
 * subscribes to it, so an unwatched area keeps its data for the first
 * subscriber.
 *
 * Each tool has a page budget (subs.c): page bytes queued for
 * its socket.  A CPU is read only while at least one of its
 * subscriptions has room for another page; while every subscription of
 * a CPU is over its budget, the daemon leaves that CPU's pages in the
 * area, so the area's own mode decides what is lost, exactly as when the
 * area is read directly (a consume-mode writer's counted drops, an
 * overwrite lap).  When the tool's socket takes its queue (EPOLLOUT,
 * conn_flush()), fanout_room() reads again at once.  Where several tools
 * take the same CPU, a page that one of them has no room for is dropped
 * for that subscription only: a tool that stops reading costs only
 * itself.  Such drops are counted per subscription and per CPU, and each
 * PAGE of a CPU carries that CPU's totals (dropped_pages,
 * dropped_events), so the tool sees every loss at the CPU it happened.
 * When no page follows the drops, an empty PAGE (a sub-buffer with no
 * events) of that CPU carries the counters as soon as the tool's queue
 * has room.  A DRAIN reads the remote's subscribed CPUs to their end (at
 * most one lap of each ring) at the pace the tools take the pages, hands
 * on the events a consume-mode writer dropped after its last page (the
 * lost_events of an empty PAGE), and is answered after those pages, so
 * that a drained tool's account closes: read + lost == written.
 *
 * Shared memory gives no wake-up, so rings are polled: every poll_min
 * while pages keep coming, backing off by doubling to poll_max when a
 * round finds nothing, and not at all without subscriptions.  A round
 * reads at most D_PAGES_PER_TICK pages a CPU, so that every connection
 * is served between rounds; a CPU that stopped at that cap while a
 * subscription still had room holds a backlog, and the next round comes
 * as soon as the loop has served its connections, not a poll interval
 * later (a pre-filled area drains at the pace of its tools, not at 64
 * pages a CPU per millisecond).  A guest
 * whose agent takes armed wakeups (wake.c) is not polled while it sleeps:
 * each round notes, per remote, which CPUs it read, whether it found
 * pages and whether it stopped at its page cap, for wake.c to arm the
 * idle ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hvt_util.h>

#include "daemon.h"

/* Room kept in a tool's queue beyond a page: the PAGE frame's header. */
#define FO_FRAME_SLACK 128u

/* A DRAIN waiting for its pages to reach the tool (fanout_drain_begin()). */
struct fo_drain {
	struct fo_drain *next;
	struct conn *c;
	struct remote *r;
	struct hvt_msg req;	/* the request's header: type, req, chan */
	uint32_t pages;		/* read while it waited */
	struct d_cpus pending_cpus;	/* CPUs not yet read to their end */
	uint32_t *left;		/* per CPU: pages it may still read (a lap) */
};

static struct fo_drain *fo_drains;

/* One read of a remote: per CPU, what it found (fo_read_remote()). */
struct fo_round {
	struct d_cpus empty;	/* read to the end: no page was left */
	uint32_t n[D_MAX_CPUS];	/* pages read */
	bool capped;		/* a CPU stopped at the page cap, not held */
};

bool fanout_active(void)
{
	return D->nr_subs > 0;
}

/* The CPUs of @r someone subscribes to, into @want (every CPU an area
 * may have: subs.c refuses a CPU the remote has not). */
static void wanted_cpus(const struct remote *r, struct d_cpus *want)
{
	const struct conn *c;
	const struct sub *s;
	uint32_t cpu;

	memset(want, 0, sizeof(*want));
	for (c = D->conns; c; c = c->next) {
		if (!c->tool || c->dead)
			continue;
		for (s = c->tool->subs; s; s = s->next) {
			if (s->remote != r)
				continue;
			if (s->cpu >= 0) {
				d_cpus_add(want, (uint32_t)s->cpu);
				continue;
			}
			for (cpu = 0; cpu < page_source_listed_cpus(r); cpu++)
				d_cpus_add(want, cpu);
		}
	}
}

/* -1 is every CPU the remote lists; a guest kernel's beside its area are
 * subscribed by number. */
static bool sub_covers(const struct sub *s, const struct remote *r,
		       uint32_t cpu)
{
	return s->remote == r &&
	       (s->cpu < 0 ? cpu < page_source_listed_cpus(r)
			   : (uint32_t)s->cpu == cpu) &&
	       cpu < s->nr_cpus;
}

/* Bytes tool @t may still queue, past what a parallel pass promised. */
static size_t tool_room(const struct tool *t)
{
	size_t used = t->c->q.page_bytes + t->page_reserve;

	return used < t->page_budget ? t->page_budget - used : 0;
}

/* Whether tool @t's page budget takes @len more bytes now. */
static bool tool_fits(const struct tool *t, size_t len)
{
	return t->c->q.page_bytes + len <= t->page_budget;
}

/* The subscriptions of connection @c: a tool's, none for another. */
static struct sub *conn_subs(const struct conn *c)
{
	return c->tool ? c->tool->subs : NULL;
}

/* Pages of @r's CPU @cpu (of @size bytes) that some subscription has room
 * for (at most @max), flushing a full tool's queue to its socket first.
 * 0: every subscription of the CPU is over its budget, and each such
 * tool is marked held, so that fanout_room() reads again when its socket
 * takes the queue. */
static uint32_t cpu_room(struct remote *r, uint32_t cpu, uint32_t max,
			 uint32_t size)
{
	size_t per = size + FO_FRAME_SLACK;
	uint32_t best = 0;
	struct conn *c;
	struct sub *s;

	for (c = D->conns; c && best < max; c = c->next) {
		for (s = conn_subs(c); s && !c->dead && best < max;
		     s = s->next) {
			size_t n;

			if (!sub_covers(s, r, cpu))
				continue;
			if (tool_room(c->tool) < per)
				conn_flush(c);
			if (c->dead)
				break;
			n = tool_room(c->tool) / per;
			if (n > best)
				best = n > max ? max : (uint32_t)n;
			break; /* one look per tool */
		}
	}
	if (best)
		return best;
	for (c = D->conns; c; c = c->next)
		for (s = conn_subs(c); s && !c->dead; s = s->next)
			if (sub_covers(s, r, cpu))
				c->tool->held = true;
	return 0;
}

void fanout_room(struct conn *c)
{
	struct tool *t = c->tool;

	if (!t || !t->held ||
	    tool_room(t) < HVT_PROTO_MAX_PAGE + FO_FRAME_SLACK)
		return;
	t->held = false;
	D->next_poll_us = 0; /* read now */
}

/* A PAGE with no events, for counters no page carries: a slow tool's
 * dropped pages, a writer's drops after its last page (@lost, marked in
 * the sub-buffer itself as the kernel marks a missed count, so that a
 * reader of the page alone sees it too). */
static int send_empty_page(struct conn *c, const struct sub *s, uint32_t cpu,
			   uint64_t lost)
{
	uint8_t empty[HVT_PAGE_HDR_SIZE + 8];
	uint64_t commit = HVT_MISSED_EVENTS | HVT_MISSED_STORED;
	struct hvt_msg m;

	memset(empty, 0, sizeof(empty));
	if (lost) {
		memcpy(empty + HVT_PAGE_COMMIT_OFF, &commit, 8);
		memcpy(empty + HVT_PAGE_HDR_SIZE, &lost, 8);
	}
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_PAGE;
	m.req = s->id;
	m.chan = s->remote->id;
	m.u.page.cpu = cpu;
	m.u.page.lost_events = lost;
	m.u.page.dropped_pages = s->cpus[cpu].dropped_pages;
	m.u.page.dropped_events = s->cpus[cpu].dropped_events;
	m.u.page.data = empty;
	m.u.page.len = lost ? sizeof(empty) : HVT_PAGE_HDR_SIZE;
	return conn_send_page(c, &m, NULL, NULL);
}

/* Page @page (of a sub-buffer of @size bytes) of @r's CPU @cpu to every
 * subscription of the CPU; one without room drops it, counted for that
 * CPU. */
static void deliver(struct remote *r, uint32_t cpu, struct page_buf *pb,
		    uint32_t size, const struct hvtrace_page_info *info,
		    struct ps_ticket *ticket)
{
	const uint8_t *page = pb->data;
	uint64_t commit;
	uint32_t len;
	struct conn *c;
	struct sub *s;

	memcpy(&commit, page + HVT_PAGE_COMMIT_OFF, 8);
	len = HVT_PAGE_HDR_SIZE + info->size +
	      ((commit & HVT_MISSED_STORED) ? 8 : 0);
	if (len > size)
		len = size;
	for (c = D->conns; c; c = c->next) {
		if (!c->tool || c->dead)
			continue;
		for (s = c->tool->subs; s; s = s->next) {
			struct sub_cpu *sc;
			struct hvt_msg m;

			if (!sub_covers(s, r, cpu))
				continue;
			sc = &s->cpus[cpu];
			if (!tool_fits(c->tool, len + FO_FRAME_SLACK))
				conn_flush(c);
			if (c->dead)
				break;
			if (!tool_fits(c->tool, len + FO_FRAME_SLACK)) {
				/* Another tool took the page; this one lags:
				 * its loss, counted at this CPU. */
				sc->dropped_pages++;
				sc->dropped_events +=
					info->entries + info->lost_events;
				continue;
			}
			memset(&m, 0, sizeof(m));
			m.type = HVT_MSG_PAGE;
			m.req = s->id;
			m.chan = r->id;
			m.u.page.cpu = cpu;
			m.u.page.flags = (info->flags & HVTRACE_PAGE_TAIL) ?
						 HVT_PAGEF_TAIL : 0;
			m.u.page.seq = info->seq;
			m.u.page.entries = info->entries;
			m.u.page.lost_events = info->lost_events;
			m.u.page.dropped_pages = sc->dropped_pages;
			m.u.page.dropped_events = sc->dropped_events;
			m.u.page.first_ts = info->first_ts;
			m.u.page.data = page;
			m.u.page.len = len;
			if (!conn_send_page(c, &m, ticket, pb)) {
				s->pages++;
				sc->reported_pages = sc->dropped_pages;
			}
		}
	}
}

/* A page just read from @ps's CPU @local, with the reader's position
 * after it (@pos, NULL: none), to every subscription of the CPU; the
 * position is posted once every queue it went to has sent it. */
static void fo_deliver_read(struct remote *r, struct page_source *ps,
			    uint32_t local, struct page_buf *pb,
			    const struct hvtrace_page_info *info,
			    const struct hvtrace_read_pos *pos)
{
	struct ps_ticket *t = pos ? ticket_new(ps, local, pos) : NULL;

	deliver(r, ps->first_cpu + local, pb, ps->subbuf_size, info, t);
	if (t)
		ticket_put(t);
}

/* Events a consume-mode writer dropped after its last page (its ring was
 * full, then it stopped writing): no page will carry them, so a drain
 * hands them on as an empty PAGE with that lost count, once every
 * subscription of the CPU has room for it.  False: not yet (no room). */
static bool drain_trailing(struct remote *r, uint32_t cpu)
{
	struct page_source *ps;
	struct conn *c;
	struct sub *s;
	uint32_t local;
	uint64_t n;

	ps = page_source_of(r, cpu, &local);
	if (!ps || !ps->ops->take_trailing_lost)
		return true; /* its pages carry their own losses */
	for (c = D->conns; c; c = c->next)
		for (s = conn_subs(c); s && !c->dead; s = s->next)
			if (sub_covers(s, r, cpu) && !tool_fits(c->tool, 256))
				return false;
	n = ps->ops->take_trailing_lost(ps, local);
	if (!n)
		return true;
	for (c = D->conns; c; c = c->next)
		for (s = conn_subs(c); s && !c->dead; s = s->next)
			if (sub_covers(s, r, cpu) &&
			    send_empty_page(c, s, cpu, n)) {
				/* still told, as a dropped page's events */
				s->cpus[cpu].dropped_pages++;
				s->cpus[cpu].dropped_events += n;
			}
	return true;
}

/* Read @r's CPUs in @want on this thread, each while a subscription has
 * room, at most D_PAGES_PER_TICK pages a CPU. */
static void fo_read_serial(struct remote *r, const struct d_cpus *want,
			   struct fo_round *out)
{
	struct hvtrace_page_info info;
	struct hvtrace_read_pos pos;
	struct page_source *ps;
	uint32_t i, cpu, k, room;

	for (ps = r->sources; ps; ps = ps->next) {
		for (i = 0; i < ps->nr_cpus; i++) {
			cpu = ps->first_cpu + i;
			if (!d_cpus_has(want, cpu))
				continue;
			room = 0;
			for (k = 0; k < D_PAGES_PER_TICK; k++) {
				if (!room &&
				    !(room = cpu_room(r, cpu,
						      D_PAGES_PER_TICK - k,
						      ps->subbuf_size)))
					break; /* held: the pages stay */
				/* The last page's buffer, unless a queue
				 * still holds it. */
				ps->pb = page_buf_own(ps->pb, ps->subbuf_size);
				if (!ps->pb)
					break; /* no memory: the pages stay */
				if (ps->ops->read_page(ps, i, ps->pb->data,
						       ps->subbuf_size,
						       &info) <= 0) {
					d_cpus_add(&out->empty, cpu);
					break;
				}
				room--;
				r->wake.found = true;
				r->pages_read++;
				r->thread_pages[0]++;
				fo_deliver_read(
					r, ps, i, ps->pb, &info,
					page_source_read_pos(ps, i, &pos)
						? NULL
						: &pos);
			}
			out->n[cpu] = k;
			if (!d_cpus_has(&out->empty, cpu))
				r->wake.more = true; /* capped or held: read
						      * again */
			if (k == D_PAGES_PER_TICK)
				out->capped = true; /* not held: at once */
		}
	}
}

/*
 * Parallel reading.  A remote with many CPUs subscribed (at least
 * D_READERS_AUTO_CPUS, or 2 with --reader-threads N > 1), whose page sources
 * all read different CPUs at once safely (page_source_ops parallel: an area's
 * hvtrace_cpu_read_page() keeps its state per CPU), is read by the daemon's
 * reader threads (common/workers.c): each pass, every subscribed CPU is one
 * job, run by thread (its index among the jobs) % threads, which reads up to
 * D_STAGE_PAGES of its pages (D_STAGE_BYTES at most) into the CPU's stage.
 * Then the loop's thread hands the staged pages out, CPU after CPU, in each
 * CPU's order, exactly as the serial loop does, and passes again while a CPU
 * filled its stage, up to D_PAGES_PER_TICK pages per CPU per poll.  Only the
 * reading (the copy out of shared memory and its validation) runs on the
 * threads; subscriptions, budgets and sockets stay on the loop's thread,
 * which before each pass gives each CPU as many pages as a subscription of it
 * has room for, reserving that room in the tools' queues (page_reserve) so
 * that the CPUs of one pass do not promise the same room twice.
 */
struct fo_stage {
	struct remote *r;
	uint32_t nr_cpus;
	uint32_t subbuf_size;		/* a slot: the sources' largest */
	uint32_t per_cpu;		/* pages staged per CPU per pass */
	struct page_buf **pbs;		/* nr_cpus x per_cpu pages */
	struct hvtrace_page_info *info; /* nr_cpus x per_cpu */
	struct hvtrace_read_pos *pos;	/* nr_cpus x per_cpu: after each */
	bool *has_pos;			/* nr_cpus x per_cpu */
	uint32_t *n;			/* pages staged, per CPU */
	uint32_t *limit;		/* pages to stage this pass, per CPU */
	uint32_t cpus[D_MAX_CPUS];	/* this pass's jobs: CPUs */
	unsigned int nr_jobs;
};

void fanout_free(struct remote *r)
{
	size_t i;

	if (!r->stage)
		return;
	for (i = 0;
	     r->stage->pbs && i < (size_t)r->stage->nr_cpus * r->stage->per_cpu;
	     i++)
		page_buf_put(r->stage->pbs[i]);
	free(r->stage->pbs);
	free(r->stage->info);
	free(r->stage->pos);
	free(r->stage->has_pos);
	free(r->stage->n);
	free(r->stage->limit);
	free(r->stage);
	r->stage = NULL;
}

void fanout_stop(void)
{
	hvt_util_workers_stop(D->readers);
	D->readers = NULL;
}

/* @r's stage for its sources' geometry, or NULL (no memory). */
static struct fo_stage *fo_stage_get(struct remote *r)
{
	struct fo_stage *s = r->stage;
	const struct page_source *ps;
	/* Every CPU of the remote (at most D_MAX_CPUS: page_source.c); at
	 * most D_STAGE_BYTES per CPU, whatever the sub-buffer size. */
	uint32_t nr_cpus = r->nr_cpus, size = 0, per_cpu;
	size_t slots;

	for (ps = r->sources; ps; ps = ps->next)
		if (ps->subbuf_size > size)
			size = ps->subbuf_size;
	if (!size)
		return NULL;
	per_cpu = D_STAGE_BYTES / size;

	if (per_cpu > D_STAGE_PAGES)
		per_cpu = D_STAGE_PAGES;
	if (!per_cpu)
		per_cpu = 1;
	if (s && s->nr_cpus == nr_cpus && s->subbuf_size == size)
		return s;
	fanout_free(r);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	r->stage = s;
	s->r = r;
	s->nr_cpus = nr_cpus;
	s->subbuf_size = size;
	s->per_cpu = per_cpu;
	slots = (size_t)nr_cpus * per_cpu;
	s->pbs = calloc(slots, sizeof(*s->pbs));
	s->info = calloc(slots, sizeof(*s->info));
	s->pos = calloc(slots, sizeof(*s->pos));
	s->has_pos = calloc(slots, sizeof(*s->has_pos));
	s->n = calloc(s->nr_cpus, sizeof(*s->n));
	s->limit = calloc(s->nr_cpus, sizeof(*s->limit));
	if (!s->pbs || !s->info || !s->pos || !s->has_pos || !s->n ||
	    !s->limit) {
		fanout_free(r);
		return NULL;
	}
	return s;
}

/* Job @j of a pass, on a reader thread: stage CPU cpus[j]'s next pages. */
static void fo_job(void *ctx, unsigned int j, void *scratch)
{
	struct fo_stage *s = ctx;
	uint32_t cpu = s->cpus[j], k = 0, local;
	size_t slot = (size_t)cpu * s->per_cpu;
	struct page_source *ps = page_source_of(s->r, cpu, &local);

	(void)scratch;
	for (; ps && k < s->limit[cpu]; k++) {
		if (ps->ops->read_page(ps, local, s->pbs[slot + k]->data,
				       ps->subbuf_size,
				       &s->info[slot + k]) <= 0)
			break;
		/* Per CPU, as the read: safe on this thread. */
		s->has_pos[slot + k] =
			!page_source_read_pos(ps, local, &s->pos[slot + k]);
	}
	s->n[cpu] = k;
}

/* Whether @r is read by the reader threads, which start at first use. */
static bool fo_parallel(struct remote *r, const struct d_cpus *want)
{
	const struct page_source *ps;
	unsigned int nr = 0;
	uint32_t cpu;
	int ret;

	if (!r->sources || D->reader_threads == 1)
		return false;
	for (ps = r->sources; ps; ps = ps->next)
		if (!ps->ops->parallel)
			return false;
	for (cpu = 0; cpu < r->nr_cpus; cpu++)
		nr += d_cpus_has(want, cpu);
	if (nr < (D->reader_threads ? 2u : D_READERS_AUTO_CPUS))
		return false;
	if (!D->readers) {
		ret = hvt_util_workers_start(
			D->reader_threads, D_READERS_AUTO,
			D->reader_threads ? D->reader_threads : D_READERS_AUTO,
			0, &D->readers);
		if (ret) {
			d_log("cannot start reader threads (%s): reading "
			      "with one",
			      strerror(-ret));
			D->reader_threads = 1;
			return false;
		}
		d_log("reading large areas with %u threads",
		      hvt_util_workers_nr(D->readers));
	}
	return fo_stage_get(r) != NULL;
}

/* Pages each job's CPU may stage this pass: what a subscription of it
 * has room for, reserved in the tools' queues.  Jobs left with none are
 * held (their pages stay in the area) and leave the pass. */
static void fo_pass_limits(struct fo_stage *s)
{
	unsigned int j, kept = 0;
	struct page_source *ps;
	struct conn *c;
	struct sub *sb;

	for (j = 0; j < s->nr_jobs; j++) {
		uint32_t cpu = s->cpus[j], local, n = 0, k;
		size_t per;

		ps = page_source_of(s->r, cpu, &local);
		per = (ps ? ps->subbuf_size : 0) + FO_FRAME_SLACK;
		if (ps)
			n = cpu_room(s->r, cpu, s->per_cpu, ps->subbuf_size);
		/* Each slot a buffer of its own: the last pass's pages may
		 * still wait in tools' queues. */
		for (k = 0; k < n; k++) {
			struct page_buf **pb =
				&s->pbs[(size_t)cpu * s->per_cpu + k];

			*pb = page_buf_own(*pb, s->subbuf_size);
			if (!*pb)
				n = k; /* no memory: the rest stay */
		}
		s->limit[cpu] = n;
		s->n[cpu] = 0;
		if (!n)
			continue;
		for (c = D->conns; c; c = c->next)
			for (sb = conn_subs(c); sb && !c->dead; sb = sb->next)
				if (sub_covers(sb, s->r, cpu)) {
					c->tool->page_reserve +=
						(size_t)n * per;
					break;
				}
		s->cpus[kept++] = cpu;
	}
	s->nr_jobs = kept;
}

static void fo_pass_release(void)
{
	struct conn *c;

	for (c = D->conns; c; c = c->next)
		if (c->tool)
			c->tool->page_reserve = 0;
}

/* One poll of @r on the reader threads; what the serial loop records. */
static void fo_read_parallel(struct remote *r, const struct d_cpus *want,
			     struct fo_round *out)
{
	struct fo_stage *s = r->stage;
	unsigned int round, j, nr = hvt_util_workers_nr(D->readers);
	uint32_t cpu, k;
	bool full = true;

	s->nr_jobs = 0;
	for (cpu = 0; cpu < s->nr_cpus; cpu++)
		if (d_cpus_has(want, cpu))
			s->cpus[s->nr_jobs++] = cpu;
	for (round = 0; full && round * s->per_cpu < D_PAGES_PER_TICK;
	     round++) {
		fo_pass_limits(s);
		if (s->nr_jobs)
			hvt_util_workers_pass(D->readers, s->nr_jobs, fo_job,
					      s);
		fo_pass_release();
		full = false;
		for (j = 0; j < s->nr_jobs; j++) {
			struct page_source *ps;
			uint32_t local;
			size_t slot;

			cpu = s->cpus[j];
			slot = (size_t)cpu * s->per_cpu;
			ps = page_source_of(r, cpu, &local);
			for (k = 0; ps && k < s->n[cpu]; k++)
				fo_deliver_read(r, ps, local, s->pbs[slot + k],
						&s->info[slot + k],
						s->has_pos[slot + k]
							? &s->pos[slot + k]
							: NULL);
			r->pages_read += s->n[cpu];
			r->thread_pages[j % nr] += s->n[cpu];
			out->n[cpu] += s->n[cpu];
			if (s->n[cpu])
				r->wake.found = true;
			if (s->n[cpu] < s->limit[cpu])
				d_cpus_add(&out->empty, cpu);
			else
				full = true;
		}
	}
	/* The rounds ran out while a CPU still took a full pass (a held
	 * one's limit is 0: it took none): a backlog. */
	for (j = 0; full && j < s->nr_jobs; j++)
		if (s->n[s->cpus[j]] &&
		    s->n[s->cpus[j]] == s->limit[s->cpus[j]])
			out->capped = true;
	for (cpu = 0; cpu < s->nr_cpus; cpu++)
		if (d_cpus_has(want, cpu) && !d_cpus_has(&out->empty, cpu))
			r->wake.more = true; /* capped or held: read again */
}

/* Read @r's wanted CPUs once, serially or on the reader threads. */
static void fo_read_remote(struct remote *r, const struct d_cpus *want,
			   struct fo_round *out)
{
	clocks_update(r); /* a changed model goes ahead of the pages */
	out->capped = false;
	memset(&out->empty, 0, sizeof(out->empty));
	memset(out->n, 0, sizeof(uint32_t) * r->nr_cpus);
	if (fo_parallel(r, want))
		fo_read_parallel(r, want, out);
	else
		fo_read_serial(r, want, out);
}

/* --- DRAIN ---------------------------------------------------------------- */

static void fo_drain_free(struct fo_drain **pp)
{
	struct fo_drain *d = *pp;

	*pp = d->next;
	free(d->left);
	free(d);
}

/* What round @out of @r did for the DRAINs of @r: a CPU read to its end
 * (or through a lap) is done once its trailing drops are handed on; a
 * DRAIN with every CPU done is answered, after its pages. */
static void fo_drains_update(struct remote *r, const struct d_cpus *want,
			     const struct fo_round *out)
{
	struct fo_drain **pp = &fo_drains, *d;
	uint32_t cpu;

	while ((d = *pp)) {
		bool done = true;

		if (d->r != r) {
			pp = &d->next;
			continue;
		}
		for (cpu = 0; cpu < r->nr_cpus; cpu++) {
			if (!d_cpus_has(&d->pending_cpus, cpu))
				continue;
			d->pages += out->n[cpu];
			d->left[cpu] = d->left[cpu] > out->n[cpu] ?
					       d->left[cpu] - out->n[cpu] :
					       0;
			if (!d_cpus_has(want, cpu) ||
			    ((d_cpus_has(&out->empty, cpu) || !d->left[cpu]) &&
			     drain_trailing(r, cpu)))
				d->pending_cpus.w[cpu / 64] &=
					~(1ull << (cpu % 64));
			else
				done = false;
		}
		if (!done) {
			r->wake.more = true; /* keep reading it */
			pp = &d->next;
			continue;
		}
		conn_reply_result(d->c, &d->req, HVT_MSG_DRAIN, 0, d->pages, 0,
				  NULL);
		conn_flush(d->c);
		fo_drain_free(pp);
	}
}

void fanout_drain_begin(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	struct fo_drain *d = calloc(1, sizeof(*d));
	struct page_source *ps;
	struct fo_round *out;
	struct d_cpus want;
	uint32_t i;

	if (d)
		d->left = calloc(r->nr_cpus ? r->nr_cpus : 1,
				 sizeof(*d->left));
	out = malloc(sizeof(*out));
	if (!d || !d->left || !out) {
		if (d)
			free(d->left);
		free(d);
		free(out);
		conn_reply_error(c, m->req, m->chan, -ENOMEM, "out of memory");
		return;
	}
	d->c = c;
	d->r = r;
	d->req.type = m->type;
	d->req.req = m->req;
	d->req.chan = m->chan;
	wanted_cpus(r, &want);
	d->pending_cpus = want;
	for (ps = r->sources; ps; ps = ps->next)
		for (i = 0; i < ps->nr_cpus; i++)
			d->left[ps->first_cpu + i] = ps->nr_subbufs + 1;
	d->next = fo_drains;
	fo_drains = d;
	/* Read now: a small backlog is answered at once. */
	memset(out, 0, sizeof(*out));
	if (remote_has_pages(r))
		fo_read_remote(r, &want, out);
	else
		out->empty = want;
	fo_drains_update(r, &want, out);
	free(out);
	D->next_poll_us = 0;
}

void fanout_forget(struct conn *c, struct remote *r)
{
	struct fo_drain **pp = &fo_drains;

	while (*pp)
		if ((c && (*pp)->c == c) || (r && (*pp)->r == r))
			fo_drain_free(pp);
		else
			pp = &(*pp)->next;
}

/* --- the poll ------------------------------------------------------------- */

/* Drops no page has reported yet: an empty page of that CPU tells them. */
static void fo_report_drops(void)
{
	struct conn *c;
	struct sub *s;
	uint32_t cpu;

	for (c = D->conns; c; c = c->next) {
		for (s = conn_subs(c); s && !c->dead; s = s->next) {
			for (cpu = 0; cpu < s->nr_cpus; cpu++) {
				struct sub_cpu *sc = &s->cpus[cpu];

				if (sc->reported_pages == sc->dropped_pages ||
				    !tool_fits(c->tool, 256))
					continue;
				if (!send_empty_page(c, s, cpu, 0))
					sc->reported_pages = sc->dropped_pages;
			}
		}
	}
}

bool fanout_poll(void)
{
	static struct fo_round out;
	bool any = false, capped = false;
	struct remote *r;

	for (r = D->remotes; r; r = r->next) {
		struct d_cpus want;

		r->wake.want = 0;
		r->wake.found = r->wake.more = false;
		if (!remote_has_pages(r))
			continue;
		wanted_cpus(r, &want);
		if (d_cpus_empty(&want))
			continue;
		/* wake.c arms CPUs 0..63 only (a remote of more CPUs is
		 * always polled): what it needs is whether anyone reads. */
		r->wake.want = want.w[0] ? want.w[0] : ~0ull;
		fo_read_remote(r, &want, &out);
		fo_drains_update(r, &want, &out);
		any |= r->wake.found;
		capped |= out.capped;
	}
	fo_report_drops();
	/* Fast while data flows, backing off to poll_max when idle. */
	if (any)
		D->poll_us = D->poll_min_us;
	else if (D->poll_us < D->poll_max_us)
		D->poll_us = D->poll_us * 2 > D->poll_max_us ? D->poll_max_us :
							       D->poll_us * 2;
	/* Flush now: the pages should leave while they are fresh. */
	{
		struct conn *c;

		for (c = D->conns; c; c = c->next)
			if (conn_subs(c) && c->q.head && !c->dead)
				conn_flush(c);
	}
	return capped;
}
