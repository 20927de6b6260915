/* SPDX-License-Identifier: MIT */
/*
 * The writer benchmark's inner loop, shared by the EL2 image (hyp/el2/
 * bench.c) and its native twin (tests/hyp/bench_native_loop.c) so both
 * time exactly the same source.  The includer defines HVT_HYP_WRITER and
 * the two platform hooks of <hvtrace/hyp_events.h> first.
 */
#ifndef HVT_HYP_BENCH_LOOP_H
#define HVT_HYP_BENCH_LOOP_H

#include <stdint.h>

#include <hvt_hyp/hcall.h>

/* @n host_hcall events (48-byte records); returns how many failed. */
static inline uint64_t hvt_hyp_bench_loop(uint64_t n)
{
	uint64_t i, fails = 0;

	for (i = 0; i < n; i++)
		fails += hvt_hyp_trace_host_hcall(HVT_HC_ADD, i, i * 3, ~i,
						  (int64_t)i) != 0;
	return fails;
}

#endif /* HVT_HYP_BENCH_LOOP_H */
