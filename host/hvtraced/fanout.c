// SPDX-License-Identifier: MIT
/*
 * hvtraced: fan-out -- reading the rings and handing pages to subscribers.
 *
 * The daemon is the only consumer of each area it owns: it reads pages
 * with hvtrace_cpu_read_page(), which publishes consumer progress, so a
 * producer-consumer ring never overwrites what the daemon has not read (a
 * transport without an area, such as a guest kernel ring, supplies its
 * pages through its remote_ops read_page).  It gives each page to every
 * subscription that covers its CPU, and reads a CPU only while someone
 * subscribes to it, so an unwatched area keeps its data for the first
 * subscriber.
 *
 * Each tool connection has a page budget (subs.c).  A page that does not
 * fit is dropped for that subscription only; its dropped_pages and
 * dropped_events counters grow and travel in every later PAGE, so the
 * tool always knows what it missed.
 * When no page follows the drops, an empty PAGE (a sub-buffer with no
 * events) carries the counters as soon as the tool's queue has room.  A
 * DRAIN does the same for the events a consume-mode writer dropped after
 * its last page (lost_events of an empty PAGE), so that a drained tool's
 * account closes: read + lost == written.  A
 * slow tool therefore never holds up the others, the daemon, or the
 * writer.
 *
 * Shared memory gives no wake-up, so rings are polled: every poll_min
 * while pages keep coming, backing off by doubling to poll_max when a
 * round finds nothing, and not at all without subscriptions.  A guest
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
		if (!c->subs || c->dead)
			continue;
		for (s = c->subs; s; s = s->next) {
			if (s->remote != r)
				continue;
			if (s->cpu >= 0) {
				d_cpus_add(want, (uint32_t)s->cpu);
				continue;
			}
			for (cpu = 0; cpu < r->info.nr_cpus; cpu++)
				d_cpus_add(want, cpu);
		}
	}
}

static bool sub_covers(const struct sub *s, const struct remote *r,
		       uint32_t cpu)
{
	return s->remote == r && (s->cpu < 0 || (uint32_t)s->cpu == cpu);
}

/* A PAGE with no events, for counters no page carries: a slow tool's
 * dropped pages, a writer's drops after its last page (@lost). */
static int send_empty_page(struct conn *c, const struct sub *s, uint32_t cpu,
			   uint64_t lost)
{
	static const uint8_t empty[HVT_PAGE_HDR_SIZE];
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_PAGE;
	m.req = s->id;
	m.chan = s->remote->id;
	m.u.page.cpu = cpu;
	m.u.page.lost_events = lost;
	m.u.page.dropped_pages = s->dropped_pages;
	m.u.page.dropped_events = s->dropped_events;
	m.u.page.data = empty;
	m.u.page.len = sizeof(empty);
	return conn_send_page(c, &m);
}

static void deliver(struct remote *r, uint32_t cpu, const uint8_t *page,
		    const struct hvtrace_page_info *info)
{
	uint64_t commit;
	uint32_t len;
	struct conn *c;
	struct sub *s;

	memcpy(&commit, page + HVT_PAGE_COMMIT_OFF, 8);
	len = HVT_PAGE_HDR_SIZE + info->size +
	      ((commit & HVT_MISSED_STORED) ? 8 : 0);
	if (len > r->info.subbuf_size)
		len = r->info.subbuf_size;
	for (c = D->conns; c; c = c->next) {
		if (!c->subs || c->dead)
			continue;
		for (s = c->subs; s; s = s->next) {
			struct hvt_msg m;

			if (!sub_covers(s, r, cpu))
				continue;
			/* Over budget: first hand what is queued to the
			 * socket; drop only if the tool really lags. */
			if (c->q.page_bytes + len + 128 > c->page_budget)
				conn_flush(c);
			if (c->dead)
				break;
			if (c->q.page_bytes + len + 128 > c->page_budget) {
				s->dropped_pages++;
				s->dropped_events += info->entries;
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
			m.u.page.dropped_pages = s->dropped_pages;
			m.u.page.dropped_events = s->dropped_events;
			m.u.page.first_ts = info->first_ts;
			m.u.page.data = page;
			m.u.page.len = len;
			if (!conn_send_page(c, &m)) {
				s->pages++;
				s->reported_pages = s->dropped_pages;
			}
		}
	}
}

/* The next page of @cpu into r->page: the area's, or the transport's. */
static int fanout_read(struct remote *r, uint32_t cpu,
		       struct hvtrace_page_info *info)
{
	if (r->ops->read_page)
		return r->ops->read_page(r, cpu, r->page, r->info.subbuf_size,
					 info);
	return hvtrace_cpu_read_page(r->area, (int)cpu, r->page,
				     r->info.subbuf_size, info);
}

/* Events a consume-mode writer dropped after its last page (its ring was
 * full, then it stopped writing): no page will carry them, so a drain
 * hands them on as an empty PAGE with that lost count, once every
 * subscription of the CPU has room for it (else a later drain does). */
static void drain_trailing(struct remote *r, uint32_t cpu)
{
	struct conn *c;
	struct sub *s;
	uint64_t n;

	if (r->ops->read_page || !r->area)
		return; /* a transport's pages carry their own losses */
	for (c = D->conns; c; c = c->next)
		for (s = c->subs; s && !c->dead; s = s->next)
			if (sub_covers(s, r, cpu) &&
			    c->q.page_bytes + 256 > c->page_budget)
				return;
	n = hvtrace_cpu_take_trailing_lost(r->area, (int)cpu);
	if (!n)
		return;
	for (c = D->conns; c; c = c->next)
		for (s = c->subs; s && !c->dead; s = s->next)
			if (sub_covers(s, r, cpu) &&
			    send_empty_page(c, s, cpu, n)) {
				/* still told, as a dropped page's events */
				s->dropped_pages++;
				s->dropped_events += n;
			}
}

int fanout_drain_remote(struct remote *r)
{
	struct hvtrace_page_info info;
	struct d_cpus want;
	uint32_t cpu, k;
	int pages = 0;

	if (!remote_has_pages(r))
		return 0;
	clocks_update(r); /* a changed model goes ahead of the pages */
	wanted_cpus(r, &want);
	for (cpu = 0; cpu < r->info.nr_cpus; cpu++) {
		if (!d_cpus_has(&want, cpu))
			continue;
		/* Bounded: a writer that keeps writing cannot hold us here
		 * longer than one lap of its ring. */
		for (k = 0; k <= r->info.nr_subbufs + 1; k++) {
			int ret = fanout_read(r, cpu, &info);

			if (ret <= 0)
				break;
			pages++;
			r->pages_read++;
			r->thread_pages[0]++;
			deliver(r, cpu, r->page, &info);
		}
		drain_trailing(r, cpu);
	}
	return pages;
}

/*
 * Parallel reading.  An area with many CPUs subscribed (at least
 * D_READERS_AUTO_CPUS, or 2 with --reader-threads N > 1) is read by the
 * daemon's reader threads (common/workers.c): each pass, every
 * subscribed CPU is one job, run by thread (its index among the jobs) %
 * threads, which reads up to D_STAGE_PAGES of its pages (D_STAGE_BYTES
 * at most) into the CPU's stage (hvtrace_cpu_read_page() keeps its state per
 * CPU, so CPUs are read at once safely).  Then the loop's thread hands the
 * staged pages out, CPU after CPU, in each CPU's order, exactly as the serial
 * loop does, and passes again while a CPU filled its stage, up to
 * D_PAGES_PER_TICK pages per CPU per poll.  Only the reading (the copy
 * out of shared memory and its validation) runs on the threads;
 * subscriptions, budgets and sockets stay on the loop's thread.
 */
struct fo_stage {
	struct remote *r;
	uint32_t nr_cpus, subbuf_size;
	uint32_t per_cpu;		/* pages staged per CPU per pass */
	uint8_t *pages;			/* nr_cpus x per_cpu pages */
	struct hvtrace_page_info *info; /* nr_cpus x per_cpu */
	uint32_t *n;			/* pages staged, per CPU */
	uint32_t cpus[D_MAX_CPUS];	/* this pass's jobs: CPUs */
	unsigned int nr_jobs;
};

void fanout_free(struct remote *r)
{
	if (!r->stage)
		return;
	free(r->stage->pages);
	free(r->stage->info);
	free(r->stage->n);
	free(r->stage);
	r->stage = NULL;
}

void fanout_stop(void)
{
	hvt_util_workers_stop(D->readers);
	D->readers = NULL;
}

/* @r's stage for its area's geometry, or NULL (no memory). */
static struct fo_stage *fo_stage_get(struct remote *r)
{
	struct fo_stage *s = r->stage;
	/* Every CPU of the area (at most D_MAX_CPUS: subs.c); at most
	 * D_STAGE_BYTES per CPU, whatever the sub-buffer size. */
	uint32_t nr_cpus = r->info.nr_cpus < D_MAX_CPUS ? r->info.nr_cpus :
							  D_MAX_CPUS;
	uint32_t per_cpu = D_STAGE_BYTES / r->info.subbuf_size;
	size_t slots;

	if (per_cpu > D_STAGE_PAGES)
		per_cpu = D_STAGE_PAGES;
	if (!per_cpu)
		per_cpu = 1;
	if (s && s->nr_cpus == nr_cpus && s->subbuf_size == r->info.subbuf_size)
		return s;
	fanout_free(r);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	r->stage = s;
	s->r = r;
	s->nr_cpus = nr_cpus;
	s->subbuf_size = r->info.subbuf_size;
	s->per_cpu = per_cpu;
	slots = (size_t)nr_cpus * per_cpu;
	s->pages = malloc(slots * s->subbuf_size);
	s->info = calloc(slots, sizeof(*s->info));
	s->n = calloc(s->nr_cpus, sizeof(*s->n));
	if (!s->pages || !s->info || !s->n) {
		fanout_free(r);
		return NULL;
	}
	return s;
}

/* Job @j of a pass, on a reader thread: stage CPU cpus[j]'s next pages. */
static void fo_job(void *ctx, unsigned int j, void *scratch)
{
	struct fo_stage *s = ctx;
	uint32_t cpu = s->cpus[j], k;
	size_t slot = (size_t)cpu * s->per_cpu;

	(void)scratch;
	for (k = 0; k < s->per_cpu; k++) {
		if (hvtrace_cpu_read_page(
			    s->r->area, (int)cpu,
			    s->pages + (slot + k) * s->subbuf_size,
			    s->subbuf_size, &s->info[slot + k]) <= 0)
			break;
	}
	s->n[cpu] = k;
}

/* Whether @r is read by the reader threads, which start at first use. */
static bool fo_parallel(struct remote *r, const struct d_cpus *want)
{
	unsigned int nr = 0;
	uint32_t cpu;
	int ret;

	if (!r->area || r->ops->read_page || D->reader_threads == 1)
		return false;
	for (cpu = 0; cpu < r->info.nr_cpus; cpu++)
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

/* One poll of @r on the reader threads; what the serial loop records. */
static void fo_poll_parallel(struct remote *r, const struct d_cpus *want)
{
	struct fo_stage *s = r->stage;
	uint32_t total[D_MAX_CPUS] = {0}, cpu, k;
	unsigned int round, j, nr = hvt_util_workers_nr(D->readers);
	bool full = true;

	s->nr_jobs = 0;
	for (cpu = 0; cpu < s->nr_cpus; cpu++)
		if (d_cpus_has(want, cpu))
			s->cpus[s->nr_jobs++] = cpu;
	for (round = 0; full && round * s->per_cpu < D_PAGES_PER_TICK;
	     round++) {
		hvt_util_workers_pass(D->readers, s->nr_jobs, fo_job, s);
		full = false;
		for (j = 0; j < s->nr_jobs; j++) {
			size_t slot;

			cpu = s->cpus[j];
			slot = (size_t)cpu * s->per_cpu;
			for (k = 0; k < s->n[cpu]; k++)
				deliver(r, cpu,
					s->pages + (slot + k) * s->subbuf_size,
					&s->info[slot + k]);
			r->pages_read += s->n[cpu];
			r->thread_pages[j % nr] += s->n[cpu];
			total[cpu] += s->n[cpu];
			if (s->n[cpu])
				r->wake.found = true;
			if (s->n[cpu] == s->per_cpu)
				full = true;
		}
	}
	for (j = 0; j < s->nr_jobs; j++)
		if (total[s->cpus[j]] >= D_PAGES_PER_TICK)
			r->wake.more = true;
}

void fanout_poll(void)
{
	struct hvtrace_page_info info;
	bool any = false;
	struct remote *r;

	for (r = D->remotes; r; r = r->next) {
		struct d_cpus want;
		uint32_t cpu;

		r->wake.want = 0;
		r->wake.found = r->wake.more = false;
		if (!remote_has_pages(r))
			continue;
		wanted_cpus(r, &want);
		if (d_cpus_empty(&want))
			continue;
		clocks_update(r); /* a changed model goes ahead of the pages */
		/* wake.c arms CPUs 0..63 only (a remote of more CPUs is
		 * always polled): what it needs is whether anyone reads. */
		r->wake.want = want.w[0] ? want.w[0] : ~0ull;
		if (fo_parallel(r, &want)) {
			fo_poll_parallel(r, &want);
			any |= r->wake.found;
			continue;
		}
		for (cpu = 0; cpu < r->info.nr_cpus; cpu++) {
			int k;

			if (!d_cpus_has(&want, cpu))
				continue;
			for (k = 0; k < D_PAGES_PER_TICK; k++) {
				int ret = fanout_read(r, cpu, &info);

				if (ret <= 0)
					break;
				any = true;
				r->wake.found = true;
				r->pages_read++;
				r->thread_pages[0]++;
				deliver(r, cpu, r->page, &info);
			}
			if (k == D_PAGES_PER_TICK)
				r->wake.more = true;
		}
	}
	/* Drops no page has reported yet: an empty page tells them. */
	{
		struct conn *c;
		struct sub *s;

		for (c = D->conns; c; c = c->next) {
			for (s = c->subs; s && !c->dead; s = s->next) {
				uint32_t cpu =
					s->cpu < 0 ? 0 : (uint32_t)s->cpu;

				if (s->reported_pages != s->dropped_pages &&
				    c->q.page_bytes + 256 <= c->page_budget &&
				    !send_empty_page(c, s, cpu, 0))
					s->reported_pages = s->dropped_pages;
			}
		}
	}
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
			if (c->subs && c->q.head && !c->dead)
				conn_flush(c);
	}
}
