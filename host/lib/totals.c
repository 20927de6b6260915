// SPDX-License-Identifier: MIT
/*
 * libhvtrace: a CPU buffer's counters as the writer left them, for
 * 'hvtrace stat' (the per_cpu/cpuN/stats of an area).
 *
 * Reads only shared memory, with the reader's rules: the commit word with
 * acquire (pairs with the writer's commit store, W1), each descriptor's
 * seq before and after its fields (W2), every value bounded, and a retry
 * when the word moved while we looked.  The owner's consumer position
 * comes from the control page and is only a hint: it is used when it
 * names a page still in the ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>
#include <hvtrace/ring_slot.h>

#include "hvtrace-local.h"

struct tot_cpu {
	const struct hvt_cpu_meta *meta;
	const uint8_t *pages;
	uint32_t nr;
	uint32_t subbuf_size;
};

static bool tot_desc(const struct tot_cpu *c, uint32_t seq, uint64_t *eb)
{
	uint64_t lb;

	return hvt_slot_read_desc(&c->meta->desc[hvt_slot(c->nr, seq)], seq,
				  eb, &lb);
}

static const uint8_t *tot_page(const struct tot_cpu *c, uint32_t seq)
{
	return c->pages + hvt_slot_page_off(c->nr, c->subbuf_size, seq);
}

/* Newest committed timestamp: walk a private copy of the tail page. */
static uint64_t tot_last_ts(const struct tot_cpu *c, uint32_t tail,
			    uint32_t off, uint8_t *copy)
{
	struct hvt_page_iter it;
	uint64_t ts;

	memcpy(copy, tot_page(c, tail), HVT_PAGE_HDR_SIZE + off);
	memcpy(&ts, copy, 8);
	hvt_page_iter_init(&it, copy + HVT_PAGE_HDR_SIZE, off, ts);
	while (hvt_page_next(&it) > 0)
		;
	return it.ts;
}

/* @copy NULL: the sequences and event counts only (no page is read). */
static int tot_get(struct hvtrace_area *a, int cpu,
		   struct hvtrace_cpu_totals *t, uint8_t *copy)
{
	const struct hvt_control *ctrl;
	struct tot_cpu c;
	int tries;

	if (!a || !t)
		return hvt_err(-EINVAL,
			       "hvtrace_cpu_get_totals: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in area '%s' (it has %u)",
			       cpu, a->hdr.name, a->hdr.nr_cpus);
	c.meta = hvt_area_cpu_meta(a, (uint32_t)cpu);
	c.pages = hvt_area_cpu_pages(a, (uint32_t)cpu);
	c.nr = a->hdr.nr_subbufs;
	c.subbuf_size = a->hdr.subbuf_size;
	ctrl = (const struct hvt_control *)(a->ro + a->hdr.control_offset);

	for (tries = 0; tries < 16; tries++) {
		uint64_t w, w2, eb_tail, eb_old, eb_start, committed, bytes = 0;
		uint32_t tail, off, oldest, start, s, i, cons;

		memset(t, 0, sizeof(*t));
		/* W1 pair: all the writer published up to this word. */
		w = __atomic_load_n(&c.meta->write, __ATOMIC_ACQUIRE);
		tail = HVT_WORD_SEQ(w);
		off = HVT_WORD_OFFSET(w);
		if (off > c.subbuf_size - HVT_PAGE_HDR_SIZE) {
			return hvt_err(-EBADMSG, "CPU %d: corrupt commit word "
						 "0x%llx",
				       cpu, (unsigned long long)w);
		}
		if (!tot_desc(&c, tail, &eb_tail))
			continue;
		committed = eb_tail + HVT_WORD_ENTRIES(w);

		oldest = tail;
		eb_old = eb_tail;
		for (i = c.nr - 1; i > 0; i--) {
			if (tot_desc(&c, tail - i, &eb_old)) {
				oldest = tail - i;
				break;
			}
		}
		if (oldest == tail)
			eb_old = eb_tail;
		start = oldest;
		eb_start = eb_old;
		cons = __atomic_load_n(&ctrl->consumer[cpu], __ATOMIC_RELAXED);
		if (a->hdr.mode == HVT_MODE_CONSUME &&
		    (uint32_t)(tail - cons) < (uint32_t)(tail - oldest) &&
		    tot_desc(&c, cons, &eb_start))
			start = cons;
		if (eb_start > committed || eb_old > eb_start)
			continue;	/* moved under us, or corrupt */

		for (s = start; copy && s != tail; s++) {
			uint64_t commit;

			memcpy(&commit, tot_page(&c, s) + HVT_PAGE_COMMIT_OFF,
			       8);
			commit &= HVT_COMMIT_SIZE_MASK;
			if (commit <= c.subbuf_size - HVT_PAGE_HDR_SIZE)
				bytes += commit;
		}
		bytes += off;

		t->committed = committed;
		t->dropped = __atomic_load_n(&c.meta->lost, __ATOMIC_RELAXED);
		t->unplaced = __atomic_load_n(&c.meta->unplaced,
					      __ATOMIC_RELAXED);
		t->entries = committed - eb_start;
		t->overrun = a->hdr.mode == HVT_MODE_OVERWRITE ? eb_old : 0;
		t->consumed = a->hdr.mode == HVT_MODE_CONSUME ? eb_start : 0;
		t->bytes = bytes;
		t->tail_seq = tail;
		t->oldest_seq = oldest;
		t->consumer_seq = start;
		t->ctrl_errors = __atomic_load_n(&c.meta->ctrl_errors,
						 __ATOMIC_RELAXED);
		if (copy && t->entries)
			memcpy(&t->oldest_ts, tot_page(&c, start), 8);
		if (copy && committed)
			t->now_ts = tot_last_ts(&c, tail, off, copy);
		/* The totals belong to one commit word.  A live writer moves
		 * on all the time; retry only if it went far enough to reuse
		 * the pages we looked at (overwrite mode). */
		w2 = __atomic_load_n(&c.meta->write, __ATOMIC_ACQUIRE);
		if ((uint32_t)(HVT_WORD_SEQ(w2) - tail) < c.nr / 2) {
			return 0;
		}
	}
	return hvt_err(-EAGAIN, "CPU %d: the writer kept moving while its "
				"counters were read; retry",
		       cpu);
}

/* Reads the mapping: runs under the SIGBUS guard (see guard.c). */
HVTRACE_API int hvtrace_cpu_get_totals(struct hvtrace_area *a, int cpu,
				       struct hvtrace_cpu_totals *t)
{
	struct hvt_guard g;
	uint8_t *copy;
	int ret;

	if (!a || !t || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return tot_get(a, cpu, t, NULL);	/* reports the error */
	copy = malloc(a->hdr.subbuf_size);	/* private tail page copy */
	if (!copy)
		return hvt_err(-ENOMEM, "out of memory");
	if (hvt_guard_enter(&g, a->ro, a->size)) {
		free(copy);
		return hvt_err(-EIO, "%s: CPU %d: the file shrank under the "
				     "reader (SIGBUS); reopen the area",
			       a->path, cpu);
	}
	ret = tot_get(a, cpu, t, copy);
	hvt_guard_leave(&g);
	free(copy);
	return ret;
}

/* Descriptors only: runs under the SIGBUS guard too. */
HVTRACE_API int hvtrace_cpu_held_subbufs(struct hvtrace_area *a, int cpu)
{
	struct hvtrace_cpu_totals t;
	struct hvt_guard g;
	int ret;

	if (!a || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return tot_get(a, cpu, &t, NULL); /* reports the error */
	if (hvt_guard_enter(&g, a->ro, a->size))
		return hvt_err(-EIO,
			       "%s: CPU %d: the file shrank under the "
			       "reader (SIGBUS); reopen the area",
			       a->path, cpu);
	ret = tot_get(a, cpu, &t, NULL);
	hvt_guard_leave(&g);
	if (ret)
		return ret;
	/* Bounded by the ring whatever the shared memory says. */
	if (!t.entries)
		return 0;
	if ((uint32_t)(t.tail_seq - t.consumer_seq) >= a->hdr.nr_subbufs)
		return (int)a->hdr.nr_subbufs;
	return (int)(t.tail_seq - t.consumer_seq) + 1;
}
