// SPDX-License-Identifier: MIT
/*
 * The writer benchmark's loop built natively, the way the EL2 image builds
 * it: freestanding flags (shared/Build.mk's FS_CFLAGS for x86_64), the
 * generated emit code, and the same freestanding core object.  Only the
 * platform hooks differ: a fixed CPU buffer and the TSC for the clock.
 */
#define HVT_HYP_WRITER
#include <hvtrace/hyp_events.h>

#include <hvt_hyp/bench_loop.h>

struct hvt_rb_cpu *bench_native_cb;
uint64_t bench_native_run(uint64_t n);

static inline struct hvt_rb_cpu *hvt_hyp_writer_cpu(void)
{
	return bench_native_cb;
}

static inline uint64_t hvt_hyp_writer_clock(void)
{
	return __builtin_ia32_rdtsc();
}

uint64_t bench_native_run(uint64_t n)
{
	return hvt_hyp_bench_loop(n);
}
