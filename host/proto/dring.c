// SPDX-License-Identifier: MIT
/*
 * libhvtrace-daemon: a remote's CPU buffer, read through hvtraced, as a
 * ring of the core (hvtrace_ring_open_source()), so that the record
 * cursor, hvtrace_merge, decoding and text are the ones of an area.
 *
 * Each ring subscribes the feed to its (remote, CPU) and has the feed route
 * that pair's pages to a queue of its own (dfeed.c), so a ring that pulls
 * takes only its pages and leaves the others' queued for their rings.
 * The ring's "next page" lends the core the feed's page
 * (HVTRACE_PAGE_LENT: the feed's page is private and nothing writes it);
 * the core validates it and reads a whole page in place, copying only what
 * it must rewrite, and hands it back (release), which frees it.
 *
 * Losses, reported as the next record's lost count (text: "CPU:N [LOST n
 * EVENTS]"), never silently:
 *   - the ring's own (a page's RB_MISSED_EVENTS/_STORED; the PAGE's
 *     lost_events where the page header carries none: an empty PAGE of a
 *     drain that closes a writer's account);
 *   - what hvtraced dropped for this subscriber: the increase of the
 *     PAGE's dropped_events since the last PAGE of this subscription.  The
 *     ring's subscription covers its CPU only, so the increase is this
 *     CPU's whichever way the daemon keeps its totals.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>

#include "dfeed.h"

struct dring {
	struct hvtrace_daemon_feed *f;
	uint32_t remote;
	uint32_t cpu;
	uint32_t sub;
	uint64_t dropped_events;		/* this subscription's total */
};

static uint64_t dring_lost_add(uint64_t a, uint64_t b)
{
	if (a == HVTRACE_LOST_UNKNOWN || b == HVTRACE_LOST_UNKNOWN ||
	    a + b < a)
		return HVTRACE_LOST_UNKNOWN;
	return a + b;
}

static int dring_next_page(void *ctx, int cpu, struct hvtrace_ring_page *pg)
{
	struct dring *d = ctx;
	struct hvtrace_daemon_page *p;
	uint64_t drops, lost;
	int ret;

	(void)cpu;
	for (;;) {
		ret = hvt_dfeed_take(d->f, d->remote, d->cpu, &p);
		if (ret <= 0)
			return ret;
		if (p->sub == d->sub)
			break;
		free(p);	/* another subscription's copy */
	}
	drops = hvtrace_daemon_page_drops(p, &d->dropped_events);
	/* The ring's losses: in the page header when it has the flag, else
	 * only in the PAGE. */
	lost = hvt_page_unmarked_lost(p->data, p->len, p->lost_events);
	pg->data = p->data;
	pg->len = p->len;
	pg->seq = p->seq;
	pg->flags = HVTRACE_PAGE_LENT |
		    ((p->flags & HVT_PAGEF_TAIL) ? HVTRACE_PAGE_TAIL : 0);
	pg->lost_events = dring_lost_add(lost, drops);
	pg->owner = p;
	return 1;
}

static void dring_release(void *ctx, int cpu,
			  const struct hvtrace_ring_page *pg)
{
	(void)ctx;
	(void)cpu;
	free(pg->owner);
}

static int dring_to_host(void *ctx, int cpu, uint64_t ts, uint64_t *ns,
			 uint64_t *err_ns)
{
	struct dring *d = ctx;

	(void)cpu;
	return hvt_dfeed_map(d->f, d->remote, ts, ns, err_ns);
}

static void dring_close(void *ctx, int cpu)
{
	struct dring *d = ctx;

	(void)cpu;
	/* Best effort: a feed whose daemon went away has no subscription. */
	hvt_dfeed_unsubscribe(d->f, d->sub);
	hvt_dfeed_unroute(d->f, d->remote, d->cpu);
	free(d);
}

static const struct hvtrace_ring_source_ops dring_ops = {
	.next_page = dring_next_page,
	.to_host = dring_to_host,
	.close = dring_close,
	.release = dring_release,
};

int hvt_dring_open(struct hvtrace_daemon_feed *f, uint32_t remote, uint32_t cpu,
		   int ring_cpu, uint32_t subbuf_size,
		   struct hvtrace_ring **out)
{
	struct dring *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return hvt_err(-ENOMEM, "out of memory");
	d->f = f;
	d->remote = remote;
	d->cpu = cpu;
	/* Route first: pages may arrive while SUBSCRIBE is answered. */
	ret = hvt_dfeed_route(f, remote, cpu);
	if (ret)
		goto fail_free;
	ret = hvtrace_daemon_feed_subscribe(f, remote, (int)cpu, 0, &d->sub);
	if (ret)
		goto fail_route;
	ret = hvtrace_ring_open_source(&dring_ops, d, ring_cpu, subbuf_size,
				       out);
	if (ret) {
		hvt_dfeed_unsubscribe(f, d->sub);
		goto fail_route;
	}
	return 0;
fail_route:
	hvt_dfeed_unroute(f, remote, cpu);
fail_free:
	free(d);
	return ret;
}

int hvtrace_daemon_ring_open(struct hvtrace_daemon_feed *f, uint32_t remote,
			     int cpu, struct hvtrace_ring **out)
{
	struct hvt_remote_rec rec;
	int ret;

	if (!f || !out || cpu < 0)
		return hvt_err(-EINVAL, "hvtrace_daemon_ring_open: bad "
					"argument");
	*out = NULL;
	ret = hvt_dfeed_remote(f, remote, &rec);
	if (ret)
		return ret;
	if ((uint32_t)cpu >= rec.nr_cpus)
		return hvt_err(-EINVAL,
			       "remote '%.32s' has no CPU %d (it has "
			       "%u)",
			       rec.name, cpu, rec.nr_cpus);
	return hvt_dring_open(f, remote, (uint32_t)cpu, cpu,
			      rec.subbuf_size ? rec.subbuf_size : 4096, out);
}
