// SPDX-License-Identifier: MIT
/*
 * In-image writer benchmark (boot parameter bench=N): CPU 0 writes N
 * host_hcall events (48-byte records) through the same emit path the
 * hypercall handler uses, timed with the counter, then N disabled calls
 * (the enable-bit check alone), prints the result and powers off.
 * Under TCG the numbers only mean something as a ratio against the same
 * code built natively (tests/hyp/bench_native.c) in the same run.
 */
#include "trace.h"

#include <hvt_hyp/bench_loop.h>

static uint64_t ticks_to_ps_per_event(uint64_t ticks, uint64_t n)
{
	/* ticks * 1e9 / freq fits 64 bits for runs under ~5 minutes. */
	uint64_t ns = ticks * 1000000000ULL / hyp_counter_freq;

	return n ? ns * 1000 / n : 0;
}

void bench_run(uint64_t n)
{
	struct hyp_cpu *hc = &hyp_cpus[0];
	uint64_t t0, t1, t2, fails;

	/* The benchmark enables its events itself, whatever the host says. */
	hc->shadow.enable[0] = HVT_HYP_ENABLE_MASK;
	hvt_hyp_bench_loop(1000);	/* warm up */
	t0 = arch_counter();
	fails = hvt_hyp_bench_loop(n);
	t1 = arch_counter();
	hc->shadow.enable[0] = 0;
	hvt_hyp_bench_loop(n);
	t2 = arch_counter();
	hyp_printf("BENCH-EL2 events=%llu write_ps=%llu disabled_ps=%llu failed=%llu counter_hz=%llu\n",
		   (unsigned long long)n,
		   (unsigned long long)ticks_to_ps_per_event(t1 - t0, n),
		   (unsigned long long)ticks_to_ps_per_event(t2 - t1, n),
		   (unsigned long long)fails,
		   (unsigned long long)hyp_counter_freq);
	hc->done = 1;
	hyp_poweroff("benchmark done");
}
