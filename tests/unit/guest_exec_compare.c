// SPDX-License-Identifier: MIT
/*
 * The executor's checks: a plan commits only on the CPU it was built for
 * and only while meta->write and meta->lost still hold the values it was
 * built against.  Each refusal must leave the CPU sections untouched (the
 * checks come before the first store).  A plan with an op that has no
 * source is rejected without a commit; one with too many ops is rejected
 * before the critical section starts.  After every refusal the ring keeps
 * working and reads back cleanly.  On x86_64 the executor of the compact
 * plan (hvtg_rseq_append_asm()) is held to the same checks.
 */
#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

static struct th_area ta;
static struct hvt_rb_cpu cpu0, cpu1;
static uint8_t *snap;

static void snapshot(void)
{
	memcpy(snap, ta.mem + HVT_CPU_OFFSET, ta.size - HVT_CPU_OFFSET);
}

static void unchanged(const char *what)
{
	if (memcmp(snap, ta.mem + HVT_CPU_OFFSET, ta.size - HVT_CPU_OFFSET))
		t_fail("%s: a refused plan changed the CPU sections", what);
}

static uint64_t now;

static void plan(struct hvt_rb_cpu *cb, struct hvt_rb_plan *p, uint32_t len)
{
	static uint8_t pay[256];
	struct hvt_common_fields c = { 7, 0, 0, 99 };
	struct hvt_iovec iov = { pay, len };

	memset(pay, 0x33, sizeof(pay));
	t_ok(hvt_rb_plan_write(cb, p, now += 100, &c, &iov, 1));
}

/* Run a plan that must commit, retrying kernel aborts. */
static void commit(struct hvt_rb_plan *p)
{
	int ret;

	do {
		ret = hvtg_rseq_exec(p);
	} while (ret == HVTG_EXEC_ABORTED);
	t_eq(ret, HVTG_EXEC_COMMITTED);
}

/* Run a plan that must be refused with @want (retrying kernel aborts). */
static void refused(struct hvt_rb_plan *p, int want, const char *what)
{
	int ret;

	snapshot();
	do {
		ret = hvtg_rseq_exec(p);
	} while (ret == HVTG_EXEC_ABORTED);
	if (ret != want)
		t_fail("%s: executor returned %d, expected %d", what, ret,
		       want);
	if (want != HVTG_EXEC_REJECT || p->nr_ops > HVT_RB_MAX_OPS)
		unchanged(what);
}

#if HVTG_HAVE_APPEND_EXEC
static void aplan(struct hvt_rb_cpu *cb, struct hvt_rb_append *a,
		  uint32_t len)
{
	static uint8_t pay[256];
	struct hvt_common_fields c = { 8, 0, 0, 98 };

	memset(pay, 0x44, sizeof(pay));
	t_eq(hvt_rb_plan_append(cb, a, now += 100, &c, pay, len), 0);
}

static int aexec(const struct hvt_rb_append *a)
{
	int ret;

	do {
		ret = hvtg_rseq_append_asm(a, hvtg_tls.rs);
	} while (ret == HVTG_EXEC_ABORTED);
	return ret;
}

static void arefused(const struct hvt_rb_append *a, int want,
		     const char *what)
{
	int ret;

	snapshot();
	ret = aexec(a);
	if (ret != want)
		t_fail("%s: executor returned %d, expected %d", what, ret,
		       want);
	unchanged(what);
}

/* The compact plan's executor refuses exactly as the general one. */
static void compact_checks(void)
{
	struct hvt_rb_append a1, a2;
	uint64_t e0 = th_entries(&ta, 0);

	aplan(&cpu0, &a1, 16);
	aplan(&cpu0, &a2, 24);
	t_eq(aexec(&a2), HVTG_EXEC_COMMITTED);
	t_equ(th_entries(&ta, 0), e0 + 1);
	arefused(&a1, HVTG_EXEC_STALE, "compact: write word moved on");
	aplan(&cpu0, &a1, 16);
	a1.expect_write ^= 1;
	arefused(&a1, HVTG_EXEC_STALE, "compact: expect_write differs");
	aplan(&cpu0, &a1, 16);
	a1.expect_lost += 1;
	arefused(&a1, HVTG_EXEC_STALE, "compact: expect_lost differs");
	aplan(&cpu0, &a1, 16);
	a1.cpu = 1;
	arefused(&a1, HVTG_EXEC_CPU, "compact: labelled for another CPU");
	/* An empty tail page is not the compact case. */
	{
		struct hvt_common_fields c = { 8, 0, 0, 98 };

		t_eq(hvt_rb_plan_append(&cpu1, &a1, now += 100, &c, &c, 8),
		     1);
	}
	aplan(&cpu0, &a1, 16);
	t_eq(aexec(&a1), HVTG_EXEC_COMMITTED);
	t_equ(th_entries(&ta, 0), e0 + 2);
}
#endif

int main(void)
{
	struct hvt_rb_plan p1, p2;
	uint64_t w0, l0, missed;
	int i;

	th_area_new(&ta, 2, 4, 4096, HVT_MODE_CONSUME, HVT_CLOCK_COUNTER);
	snap = malloc(ta.size);
	t_assert(snap);
	t_ok(th_pin(0));
	t_ok(hvt_area_cpu(ta.mem, ta.size, 0, &cpu0));
	t_ok(hvt_area_cpu(ta.mem, ta.size, 1, &cpu1));
	t_ok(hvtg_thread_init());
	now = hvtg_counter_read();

	/* A plan built, then overtaken by another writer's commit. */
	plan(&cpu0, &p1, 16);
	plan(&cpu0, &p2, 24);
	commit(&p2);
	refused(&p1, HVTG_EXEC_STALE, "write word moved on");

	/* Fabricated mismatches of each word, with everything else valid. */
	plan(&cpu0, &p1, 16);
	p1.expect_write ^= 1;
	refused(&p1, HVTG_EXEC_STALE, "expect_write differs");
	plan(&cpu0, &p1, 16);
	p1.expect_lost += 1;
	refused(&p1, HVTG_EXEC_STALE, "expect_lost differs");

	/* Built for CPU 1's buffer while running on CPU 0. */
	plan(&cpu1, &p1, 16);
	t_equ(p1.cpu, 1);
	refused(&p1, HVTG_EXEC_CPU, "plan for another CPU");
	/* ... and for CPU 0's buffer but labelled for CPU 1. */
	plan(&cpu0, &p1, 16);
	p1.cpu = 1;
	refused(&p1, HVTG_EXEC_CPU, "plan labelled for another CPU");

#if HVTG_HAVE_APPEND_EXEC
	compact_checks();
#endif

	/* Too many ops: refused before the section. */
	plan(&cpu0, &p1, 16);
	p1.nr_ops = HVT_RB_MAX_OPS + 1;
	refused(&p1, HVTG_EXEC_REJECT, "too many ops");

	/* An op without a source: no commit (earlier ops may have run, as
	 * after an abort; nothing of them is trusted). */
	plan(&cpu0, &p1, 16);
	t_assert(p1.nr_ops >= 3);
	w0 = th_meta(&ta, 0)->write;
	l0 = th_meta(&ta, 0)->lost;
	p1.ops[p1.nr_ops - 1].src = NULL;
	refused(&p1, HVTG_EXEC_REJECT, "op without a source");
	t_equ(th_meta(&ta, 0)->write, w0);
	t_equ(th_meta(&ta, 0)->lost, l0);

	/* A DROP plan overtaken by another drop (lost moved, write not). */
	for (i = 0; i < 200; i++) {
		plan(&cpu0, &p1, 200);
		commit(&p1);
		if (p1.kind == HVT_PLAN_DROP)
			break;
	}
	t_equ(p1.kind, HVT_PLAN_DROP);
	plan(&cpu0, &p1, 200);
	plan(&cpu0, &p2, 200);
	t_equ(p1.kind, HVT_PLAN_DROP);
	l0 = th_meta(&ta, 0)->lost;
	commit(&p2);
	t_equ(th_meta(&ta, 0)->lost, l0 + 1);
	refused(&p1, HVTG_EXEC_STALE, "lost word moved on");

	/* Everything committed reads back; refused plans left no event. */
	t_equ(th_walk(&ta, 0, NULL, NULL, &missed), th_entries(&ta, 0));
	t_equ(th_entries(&ta, 1), 0);
	printf("cpu0: %llu events, %llu lost\n",
	       (unsigned long long)th_entries(&ta, 0),
	       (unsigned long long)th_lost(&ta, 0));
	free(snap);
	th_area_free(&ta);
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
