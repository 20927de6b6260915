// SPDX-License-Identifier: MIT
/*
 * libhvtrace: merging per-CPU rings into one stream ordered by time.
 *
 * Each CPU's records are in order; across CPUs the merge returns the
 * oldest pending record (by host_ns) once no CPU can still produce an
 * older one:
 *
 *   - every ring has a record pending: the oldest of them is safe;
 *   - the oldest pending record is older than the reorder window on the
 *     host clock (hvtrace_ring_now_ns()): a CPU that is idle now would
 *     have to commit an event more than a window after taking its
 *     timestamp to be out of order;
 *   - for rings whose clock cannot be related to the host's, the window
 *     has passed since the ring handed the record over (all records of
 *     one get-reader share that time, so a backlog waits once per page,
 *     not once per record);
 *   - the caller flushes (post-mortem reads, end of stream).
 *
 * So a CPU with nothing pending delays the others by at most the window.
 * Empty rings are polled again at most every MERGE_REPOLL_NS while other
 * rings have records, so a busy CPU is not slowed by get-reader calls
 * (an ioctl for the kernel) on an idle one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvtrace-local.h"

#define MERGE_REPOLL_NS		20000ULL	/* 20 us */
/* A record this long pending is returned whatever the clocks say. */
#define MERGE_MAX_HOLD_NS	1000000000ULL	/* 1 s */

struct merge_slot {
	struct hvtrace_ring *ring;
	bool pending;
	struct hvtrace_record rec;
	uint64_t seen_ns;		/* host time the ring handed it over */
	uint64_t polled_ns;		/* last poll that found nothing */
};

struct hvtrace_merge {
	unsigned int nr;
	uint64_t window_ns;
	int last;			/* slot returned last, to consume */
	struct merge_slot slot[];
};

HVTRACE_API int hvtrace_merge_new(struct hvtrace_ring *const *rings,
				  unsigned int nr, uint64_t window_ns,
				  struct hvtrace_merge **out)
{
	struct hvtrace_merge *m;
	unsigned int i;

	if (!rings || !nr || !out)
		return hvt_err(-EINVAL, "hvtrace_merge_new: no rings");
	m = calloc(1, sizeof(*m) + nr * sizeof(m->slot[0]));
	if (!m)
		return hvt_err(-ENOMEM, "out of memory");
	m->nr = nr;
	m->window_ns = window_ns;
	m->last = -1;
	for (i = 0; i < nr; i++) {
		if (!rings[i]) {
			free(m);
			return hvt_err(-EINVAL, "hvtrace_merge_new: ring %u is "
						"NULL", i);
		}
		m->slot[i].ring = rings[i];
	}
	*out = m;
	return 0;
}

HVTRACE_API int hvtrace_merge_last_ring(const struct hvtrace_merge *m)
{
	return m ? m->last : -1;
}

HVTRACE_API void hvtrace_merge_free(struct hvtrace_merge *m)
{
	free(m);
}

/* Poll the empty rings; @force ignores the repoll interval. */
static int merge_fill(struct hvtrace_merge *m, uint64_t now, bool force,
		      bool *polled_all)
{
	bool any = false;
	unsigned int i;
	int ret;

	for (i = 0; i < m->nr; i++)
		any |= m->slot[i].pending;
	*polled_all = true;
	for (i = 0; i < m->nr; i++) {
		struct merge_slot *s = &m->slot[i];

		if (s->pending)
			continue;
		if (any && !force && now - s->polled_ns < MERGE_REPOLL_NS) {
			*polled_all = false;
			continue;
		}
		ret = hvtrace_ring_peek(s->ring, &s->rec);
		if (ret < 0)
			return ret;
		if (ret) {
			s->pending = true;
			s->seen_ns = now;
			if (s->rec.fetched_ns && s->rec.fetched_ns <= now)
				s->seen_ns = s->rec.fetched_ns;
		} else {
			s->polled_ns = now;
		}
	}
	return 0;
}

static int merge_pick(struct hvtrace_merge *m, bool *all)
{
	unsigned int i;
	int best = -1;

	*all = true;
	for (i = 0; i < m->nr; i++) {
		struct merge_slot *s = &m->slot[i];

		if (!s->pending) {
			*all = false;
			continue;
		}
		if (best < 0 || s->rec.host_ns < m->slot[best].rec.host_ns)
			best = (int)i;
	}
	return best;
}

static bool merge_ready(struct hvtrace_merge *m, int best, uint64_t now)
{
	struct merge_slot *s = &m->slot[best];
	uint64_t rnow = hvtrace_ring_now_ns(s->ring);

	if (now - s->seen_ns >= MERGE_MAX_HOLD_NS)
		return true;
	if (rnow)
		return s->rec.host_ns + m->window_ns <= rnow;
	return now - s->seen_ns >= m->window_ns;
}

HVTRACE_API int hvtrace_merge_next(struct hvtrace_merge *m,
				   struct hvtrace_record *rec, bool flush)
{
	uint64_t now;
	bool all, polled_all;
	int best, ret, pass;

	if (!m || !rec)
		return hvt_err(-EINVAL, "hvtrace_merge_next: NULL argument");
	if (m->last >= 0) {
		hvtrace_ring_consume(m->slot[m->last].ring);
		m->slot[m->last].pending = false;
		m->last = -1;
	}
	now = hvt_host_now_ns();
	/* Pass 0 honours the repoll interval; pass 1 polls every empty ring
	 * before deciding that the oldest record must wait. */
	for (pass = 0; pass < 2; pass++) {
		ret = merge_fill(m, now, pass == 1, &polled_all);
		if (ret)
			return ret;
		best = merge_pick(m, &all);
		if (best < 0) {
			if (polled_all)
				return 0;
			continue;
		}
		if (all || flush || merge_ready(m, best, now)) {
			*rec = m->slot[best].rec;
			m->last = best;
			return 1;
		}
		if (polled_all)
			return 0;
	}
	return 0;
}
