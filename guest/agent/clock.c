// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: reading the area's clock for time-sync answers.
 *
 * The area header names the clock every writer of the area stamps with
 * (abi.h): HVT_CLOCK_COUNTER is the raw CPU counter (TSC on x86_64,
 * CNTVCT_EL0 on aarch64), HVT_CLOCK_MONO_NS the writer's CLOCK_MONOTONIC.
 * A PONG carries a reading of that same clock, so the host's model maps
 * exactly the values it finds in the pages.
 */
#include <time.h>

#include <hvtrace/abi.h>

#include "agent.h"

uint64_t agent_clock_read(uint32_t clock_id)
{
	struct timespec ts;

	if (clock_id == HVT_CLOCK_COUNTER) {
#if defined(__x86_64__)
		uint32_t lo, hi;

		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
		uint64_t v;

		__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
		return v;
#endif
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
