// SPDX-License-Identifier: MIT
/*
 * The restartable-sequence executor writes exactly what the core's direct
 * executor writes.  Two identical areas receive the same random events
 * (payload pieces of every length 0..41 at every source alignment, tiny
 * and large records, timestamp gaps that need TIME_EXTEND, page switches,
 * and in consume mode seals and drops); one through
 * hvtg_rseq_exec_asm(), the other through hvt_rb_plan_exec().  After every
 * event the two CPU sections must be byte-for-byte identical, and so must
 * the plans' kinds and commit values.  Events of at most one piece go, on
 * x86_64, through the compact plan (hvt_rb_plan_append()) and its
 * executor (hvtg_rseq_append_asm()) whenever it applies, as hvtg_write()
 * sends them: the same bytes and commit value again.
 */
#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void run(uint32_t mode, int nevents)
{
	struct th_area a, b;
	struct hvt_rb_cpu ca, cb;
	static uint8_t src[8192];
	uint64_t ts = 1000, stride;
	int i, kinds[5] = { 0 }, compact = 0;

	th_area_new(&a, 1, 4, 4096, mode, HVT_CLOCK_COUNTER);
	th_area_new(&b, 1, 4, 4096, mode, HVT_CLOCK_COUNTER);
	t_ok(th_pin(0));
	t_ok(hvtg_thread_init());
	t_ok(hvt_area_cpu(a.mem, a.size, 0, &ca));
	t_ok(hvt_area_cpu(b.mem, b.size, 0, &cb));
	stride = hvt_cpu_stride(4, 4096);
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (uint8_t)rnd();

	for (i = 0; i < nevents; i++) {
		struct hvt_common_fields common = { (uint16_t)(i & 0xffff), 0,
						    0, 1234 };
		struct hvt_iovec iov[HVT_RB_MAX_IOV];
		struct hvt_rb_plan pa, pb;
		struct hvt_rb_append ap;
		uint32_t niov = (uint32_t)(rnd() % (HVT_RB_MAX_IOV + 1)), k;
		int ret;

		for (k = 0; k < niov; k++) {
			uint32_t len = (uint32_t)(rnd() % 42);

			if (rnd() % 64 == 0)
				len = 300 + (uint32_t)(rnd() % 200);
			iov[k].base = src + rnd() % 4096;
			iov[k].len = len;
		}
		/* Mostly small gaps; sometimes one needing TIME_EXTEND. */
		ts += rnd() % 64 == 0 ? (1ull << 27) + rnd() % (1ull << 33) :
					rnd() % 5000;

		t_ok(hvt_rb_plan_write(&cb, &pb, ts, &common, iov, niov));
#if HVTG_HAVE_APPEND_EXEC
		if (niov <= 1 &&
		    !hvt_rb_plan_append(&ca, &ap, ts, &common,
					niov ? iov[0].base : NULL,
					niov ? iov[0].len : 0)) {
			t_equ(pb.kind, HVT_PLAN_APPEND);
			t_equ(ap.commit_val, pb.commit_val);
			kinds[pb.kind]++;
			compact++;
			do {
				ret = hvtg_rseq_append_asm(&ap, hvtg_tls.rs);
			} while (ret == HVTG_EXEC_ABORTED);
			t_eq(ret, HVTG_EXEC_COMMITTED);
			hvt_rb_plan_exec(&pb);
			goto compare;
		}
#endif
		t_ok(hvt_rb_plan_write(&ca, &pa, ts, &common, iov, niov));
		t_equ(pa.kind, pb.kind);
		t_equ(pa.commit_val, pb.commit_val);
		t_equ(pa.nr_ops, pb.nr_ops);
		kinds[pa.kind]++;
		/* Retry the same plan if the kernel aborted it: the plan stays
		 * valid (nothing else writes), and the retry finishes it. */
		do {
			ret = hvtg_rseq_exec(&pa);
		} while (ret == HVTG_EXEC_ABORTED);
		t_eq(ret, HVTG_EXEC_COMMITTED);
		hvt_rb_plan_exec(&pb);
#if HVTG_HAVE_APPEND_EXEC
compare:
#endif
		if (memcmp(a.mem + HVT_CPU_OFFSET, b.mem + HVT_CPU_OFFSET,
			   stride)) {
			uint64_t j;

			for (j = 0; j < stride; j++)
				if (a.mem[HVT_CPU_OFFSET + j] !=
				    b.mem[HVT_CPU_OFFSET + j])
					break;
			t_fail("event %d (plan kind %u): sections differ at "
			       "byte %llu",
			       i, pb.kind, (unsigned long long)j);
		}
	}
	printf("mode %u: %d plans: %d append (%d compact), %d switch, %d seal, "
	       "%d drop\n",
	       mode, nevents, kinds[HVT_PLAN_APPEND], compact,
	       kinds[HVT_PLAN_SWITCH], kinds[HVT_PLAN_SEAL],
	       kinds[HVT_PLAN_DROP]);
	t_assert(kinds[HVT_PLAN_APPEND] > 0 && kinds[HVT_PLAN_SWITCH] > 0);
	t_assert(compact > 0 || !HVTG_HAVE_APPEND_EXEC);
	if (mode == HVT_MODE_CONSUME)
		t_assert(kinds[HVT_PLAN_SEAL] > 0 && kinds[HVT_PLAN_DROP] > 0);
	/* The rseq-written ring reads back cleanly. */
	th_walk(&a, 0, NULL, NULL, NULL);
	th_area_free(&a);
	th_area_free(&b);
}

int main(void)
{
	run(HVT_MODE_OVERWRITE, 20000);
	run(HVT_MODE_CONSUME, 2000);
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
