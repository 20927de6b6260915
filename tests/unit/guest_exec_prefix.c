// SPDX-License-Identifier: MIT
/*
 * Every prefix of a plan is invisible.  A writer killed or aborted inside
 * its critical section has performed some prefix of the plan's stores (in
 * op order, each op front to back) and not the commit.  For every kind of
 * plan (append on an empty page, append, append with TIME_EXTEND, page
 * switch reusing a slot, page switch finishing a page with a missed-events
 * count, seal, drop) and for EVERY byte-prefix of its stores, starting
 * from the same ring:
 *
 *   - a reader sees exactly the events it saw before (count, payloads,
 *     timestamps), the same entries and lost counters -- except that in
 *     overwrite mode, once the slot claim is stored, the page in the slot
 *     being reused counts as overwritten (it is about to be);
 *   - the next writer's event commits on top with its exact timestamp
 *     (so a half-written ts cache is never trusted), or, on a full
 *     consume ring, is counted as lost exactly once.
 */
#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

#define MAXEV 1024

struct evlist {
	int n;
	uint32_t page[MAXEV];
	uint64_t ts[MAXEV];
	uint32_t len[MAXEV];
	uint32_t sum[MAXEV];
};

static void collect(const struct th_event *e, void *arg)
{
	struct evlist *l = arg;
	uint32_t s = 0, i;

	if (l->n >= MAXEV)
		t_fail("too many events");
	for (i = 0; i < e->len; i++)
		s = s * 31 + e->payload[i];
	l->page[l->n] = e->seq;
	l->ts[l->n] = e->ts;
	l->len[l->n] = e->len;
	l->sum[l->n] = s;
	l->n++;
}

static uint64_t clock_now = 1000000;
static uint8_t pay[512];

static void plan_event(struct hvt_rb_cpu *cb, struct hvt_rb_plan *p,
		       uint64_t ts, uint32_t len)
{
	struct hvt_common_fields c = { 5, 0, 0, 77 };
	struct hvt_iovec iov = { pay, len };

	t_ok(hvt_rb_plan_write(cb, p, ts, &c, &iov, 1));
}

static void put(struct hvt_rb_cpu *cb, uint32_t len)
{
	struct hvt_rb_plan p;
	int ret;

	plan_event(cb, &p, clock_now += 1000, len);
	do {
		ret = hvtg_rseq_exec(&p);
	} while (ret == HVTG_EXEC_ABORTED);
	t_eq(ret, HVTG_EXEC_COMMITTED);
}

/* Perform the first @bytes bytes of the plan's stores, no commit. */
static void apply_prefix(const struct hvt_rb_plan *p, uint32_t bytes)
{
	uint32_t i, j;

	for (i = 0; i < p->nr_ops && bytes; i++)
		for (j = 0; j < p->ops[i].len && bytes; j++, bytes--)
			((uint8_t *)p->ops[i].dst)[j] =
				((const uint8_t *)p->ops[i].src)[j];
}

static uint32_t plan_bytes(const struct hvt_rb_plan *p)
{
	uint32_t i, n = 0;

	for (i = 0; i < p->nr_ops; i++)
		n += p->ops[i].len;
	return n;
}

enum kind { K_EMPTY, K_APPEND, K_EXTEND, K_SWITCH_REUSE, K_SWITCH_MISSED,
	    K_SEAL, K_DROP, K_NR };
static const char *const kname[K_NR] = { "append on an empty page", "append",
					 "append with TIME_EXTEND",
					 "switch reusing a slot",
					 "switch after drops", "seal", "drop" };

static void run(enum kind k)
{
	struct th_area ta;
	struct hvt_rb_cpu cb;
	struct hvt_rb_plan victim, next;
	struct evlist *before = calloc(1, sizeof(*before));
	struct evlist *after = calloc(1, sizeof(*after));
	uint8_t *snap;
	uint64_t e0, l0, vts;
	uint32_t total, b, mode;
	int full = (k == K_SEAL || k == K_DROP), i, ret, skip;
	struct hvt_cpu_meta *m;

	t_assert(before && after);
	mode = k == K_SWITCH_REUSE ? HVT_MODE_OVERWRITE : HVT_MODE_CONSUME;
	th_area_new(&ta, 1, 2, 4096, mode, HVT_CLOCK_COUNTER);
	t_ok(hvt_area_cpu(ta.mem, ta.size, 0, &cb));
	m = th_meta(&ta, 0);

	/* Shape the ring. */
	switch (k) {
	case K_EMPTY:
		break;
	case K_APPEND:
	case K_EXTEND:
		put(&cb, 20);
		put(&cb, 33);
		break;
	case K_SWITCH_REUSE:
		/* Wrap the 2-page ring, then fill the tail page. */
		while (HVT_WORD_SEQ(m->write) < 3 ||
		       HVT_WORD_OFFSET(m->write) + 132 <= 4080)
			put(&cb, 100);
		break;
	case K_SWITCH_MISSED:
	case K_SEAL:
	case K_DROP:
		/* Fill both pages, seal, drop a few. */
		for (i = 0; i < 200 && m->lost < 3; i++)
			put(&cb, 100);
		t_equ(m->lost, 3);
		if (k == K_SWITCH_MISSED) {
			/* The host consumed page 0: room for one page. */
			ta.ctrl->consumer[0] = 1;
		} else if (k == K_SEAL) {
			/* A fresh full ring whose tail page is open. */
			th_area_free(&ta);
			th_area_new(&ta, 1, 2, 4096, HVT_MODE_CONSUME,
				    HVT_CLOCK_COUNTER);
			t_ok(hvt_area_cpu(ta.mem, ta.size, 0, &cb));
			m = th_meta(&ta, 0);
			while (HVT_WORD_SEQ(m->write) == 0 ||
			       HVT_WORD_OFFSET(m->write) + 132 <= 4080)
				put(&cb, 100);
		}
		break;
	default:
		break;
	}

	vts = clock_now + (k == K_EXTEND ? (1ull << 30) : 500);
	plan_event(&cb, &victim, vts, 120);
	switch (k) {
	case K_SWITCH_REUSE:
	case K_SWITCH_MISSED:
		t_equ(victim.kind, HVT_PLAN_SWITCH);
		t_assert(victim.nr_pre == 1);
		break;
	case K_SEAL:
		t_equ(victim.kind, HVT_PLAN_SEAL);
		break;
	case K_DROP:
		t_equ(victim.kind, HVT_PLAN_DROP);
		break;
	default:
		t_equ(victim.kind, HVT_PLAN_APPEND);
		break;
	}
	total = plan_bytes(&victim);
	snap = malloc(ta.size);
	t_assert(snap);
	memcpy(snap, ta.mem, ta.size);
	th_walk(&ta, 0, collect, before, NULL);
	e0 = th_entries(&ta, 0);
	l0 = th_lost(&ta, 0);

	for (b = 0; b <= total; b++) {
		memcpy(ta.mem + HVT_CPU_OFFSET, snap + HVT_CPU_OFFSET,
		       ta.size - HVT_CPU_OFFSET);
		apply_prefix(&victim, b);

		after->n = 0;
		th_walk(&ta, 0, collect, after, NULL);
		/*
		 * Overwrite mode: once the slot claim (the first store) is
		 * made, the oldest page counts as overwritten, as it is about
		 * to be: a reader loses exactly that page's events (reported
		 * as overrun), never sees a torn one.
		 */
		skip = 0;
		if (k == K_SWITCH_REUSE && b > 0)
			while (skip < before->n &&
			       before->page[skip] == before->page[0])
				skip++;
		if (after->n != before->n - skip ||
		    memcmp(after->ts, before->ts + skip,
			   sizeof(uint64_t) * after->n) ||
		    memcmp(after->len, before->len + skip,
			   sizeof(uint32_t) * after->n) ||
		    memcmp(after->sum, before->sum + skip,
			   sizeof(uint32_t) * after->n))
			t_fail("%s: prefix of %u/%u bytes changed what a "
			       "reader sees",
			       kname[k], b, total);
		t_equ(th_entries(&ta, 0), e0);
		t_equ(th_lost(&ta, 0), l0);

		/* The next writer, with a known timestamp. */
		plan_event(&cb, &next, vts + 7, full ? 120 : 16);
		do {
			ret = hvtg_rseq_exec(&next);
		} while (ret == HVTG_EXEC_ABORTED);
		t_eq(ret, HVTG_EXEC_COMMITTED);
		if (full) {
			/* A seal closes the page first, then drops. */
			if (next.kind == HVT_PLAN_SEAL) {
				plan_event(&cb, &next, vts + 8, 120);
				t_eq(hvtg_rseq_exec(&next),
				     HVTG_EXEC_COMMITTED);
			}
			t_equ(next.kind, HVT_PLAN_DROP);
			t_equ(th_lost(&ta, 0), l0 + 1);
			t_equ(th_entries(&ta, 0), e0);
			continue;
		}
		t_equ(th_entries(&ta, 0), e0 + 1);
		after->n = 0;
		th_walk(&ta, 0, collect, after, NULL);
		/* In overwrite mode the oldest page may have gone. */
		t_assert(after->n >= 1);
		if (after->ts[after->n - 1] != vts + 7)
			t_fail("%s: after a prefix of %u/%u bytes the next "
			       "event's time is %llu, expected %llu",
			       kname[k], b, total,
			       (unsigned long long)after->ts[after->n - 1],
			       (unsigned long long)(vts + 7));
		if (k <= K_EXTEND)
			t_equ(after->n, before->n + 1);
	}
	printf("%-26s %3u prefixes, each invisible\n", kname[k], total + 1);
	free(snap);
	free(before);
	free(after);
	th_area_free(&ta);
}

int main(void)
{
	int k;

	t_ok(th_pin(0));
	memset(pay, 0x6b, sizeof(pay));
	for (k = 0; k < K_NR; k++)
		run((enum kind)k);
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
