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

#include "daemon.h"

bool fanout_active(void)
{
	return D->nr_subs > 0;
}

static uint64_t wanted_cpus(const struct remote *r)
{
	const struct conn *c;
	const struct sub *s;
	uint64_t want = 0;

	for (c = D->conns; c; c = c->next) {
		if (!c->subs || c->dead)
			continue;
		for (s = c->subs; s; s = s->next)
			if (s->remote == r)
				want |= s->cpu < 0 ? ~0ull : 1ull << s->cpu;
	}
	return want;
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

static void deliver(struct remote *r, uint32_t cpu,
		    const struct hvtrace_page_info *info)
{
	uint64_t commit;
	uint32_t len;
	struct conn *c;
	struct sub *s;

	memcpy(&commit, r->page + HVT_PAGE_COMMIT_OFF, 8);
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
			m.u.page.data = r->page;
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
	uint64_t want;
	uint32_t cpu, k;
	int pages = 0;

	if (!remote_has_pages(r))
		return 0;
	want = wanted_cpus(r);
	for (cpu = 0; want && cpu < r->info.nr_cpus; cpu++) {
		if (!((want >> cpu) & 1))
			continue;
		/* Bounded: a writer that keeps writing cannot hold us here
		 * longer than one lap of its ring. */
		for (k = 0; k <= r->info.nr_subbufs + 1; k++) {
			int ret = fanout_read(r, cpu, &info);

			if (ret <= 0)
				break;
			pages++;
			r->pages_read++;
			deliver(r, cpu, &info);
		}
		drain_trailing(r, cpu);
	}
	return pages;
}

void fanout_poll(void)
{
	struct hvtrace_page_info info;
	bool any = false;
	struct remote *r;

	for (r = D->remotes; r; r = r->next) {
		uint64_t want;
		uint32_t cpu;

		r->wake.want = 0;
		r->wake.found = r->wake.more = false;
		if (!remote_has_pages(r))
			continue;
		want = wanted_cpus(r);
		r->wake.want = want;
		for (cpu = 0; want && cpu < r->info.nr_cpus; cpu++) {
			int k;

			if (!((want >> cpu) & 1))
				continue;
			for (k = 0; k < D_PAGES_PER_TICK; k++) {
				int ret = fanout_read(r, cpu, &info);

				if (ret <= 0)
					break;
				any = true;
				r->wake.found = true;
				r->pages_read++;
				deliver(r, cpu, &info);
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
