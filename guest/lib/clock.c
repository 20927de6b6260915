// SPDX-License-Identifier: MIT
/*
 * Writer clocks.
 *
 * The area header says which clock stamps its events; every writer of
 * the area must use that one.  Writers here read either the CPU counter
 * (HVT_CLOCK_COUNTER: rdtsc on x86_64, CNTVCT_EL0 on aarch64; one
 * instruction) or CLOCK_MONOTONIC through the vDSO (HVT_CLOCK_MONO_NS).
 *
 * Whoever formats an area (the guest agent, hvtg_area_create()) writes
 * the counter frequency and a nominal counter-to-ns conversion into the
 * header; hvtg_clock_describe() finds them.  The host does not rely on the
 * nominal values for conversion: it fits its own model from time-sync
 * samples; they only have to be close.
 */
#include <errno.h>
#include <time.h>

#include <hvtrace/config.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "hvtg_internal.h"

static uint64_t clk_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t hvtg_clock_read_slow(uint32_t clock_id)
{
	return clk_ns(CLOCK_MONOTONIC);
}

#if defined(__x86_64__)
/* One (counter, ns) pair: the counter read between two clock reads, the
 * tightest bracket of 32 tries (a try that was preempted has a wide one). */
static void clk_pair(uint64_t *cnt, uint64_t *ns, uint64_t *width)
{
	uint64_t best = UINT64_MAX, a, c, b;
	int i;

	for (i = 0; i < 32; i++) {
		a = clk_ns(CLOCK_MONOTONIC_RAW);
		c = hvtg_counter_read();
		b = clk_ns(CLOCK_MONOTONIC_RAW);
		if (b - a < best) {
			best = b - a;
			*cnt = c;
			*ns = a + (b - a) / 2;
		}
	}
	*width = best;
}

/*
 * TSC frequency: exact from CPUID leaf 0x15 when it gives the crystal
 * frequency and the TSC/crystal ratio (recent Intel), else measured over
 * 100 ms against CLOCK_MONOTONIC_RAW (the kernel's own calibrated TSC
 * time on a TSC clocksource).  Each end is the tightest of 32 bracketed
 * reads, so a preempted read (common in a TCG guest on a busy host) cannot
 * skew it; a measurement whose brackets stay wide is repeated.  With
 * brackets of a few microseconds the error is a few tens of ppm at worst.
 */
static uint64_t clk_counter_freq(void)
{
	unsigned int eax, ebx, ecx, edx;
	uint64_t c0, c1, t0, t1, w0, w1, best_f = 0, best_w = UINT64_MAX;
	int round;

	if (__get_cpuid_max(0, NULL) >= 0x15) {
		__cpuid(0x15, eax, ebx, ecx, edx);
		if (eax && ebx && ecx)
			return (uint64_t)ecx * ebx / eax;
	}
	for (round = 0; round < 3; round++) {
		struct timespec nap = { 0, 100000000 };

		clk_pair(&c0, &t0, &w0);
		nanosleep(&nap, NULL);
		clk_pair(&c1, &t1, &w1);
		if (t1 <= t0 || c1 <= c0)
			continue;
		if (w0 + w1 < best_w) {
			best_w = w0 + w1;
			best_f = (uint64_t)((unsigned __int128)(c1 - c0) *
					    1000000000u / (t1 - t0));
		}
		if (best_w < 20000)	/* both brackets tight: done */
			break;
	}
	return best_f;
}
#elif defined(__aarch64__)
static uint64_t clk_counter_freq(void)
{
	uint64_t f;

	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
}
#else
static uint64_t clk_counter_freq(void)
{
	return 0;
}
#endif

static uint64_t clk_freq_cache;

int hvtg_clock_describe(uint32_t clock_id, struct hvtg_clock *out)
{
	uint64_t f;
	uint32_t shift;

	if (!out)
		return -EINVAL;
	if (!clock_id)
		clock_id = IS_ENABLED(CONFIG_HVT_CLOCK_MONOTONIC_SRC) ?
				   HVT_CLOCK_MONO_NS :
				   HVT_CLOCK_COUNTER;
	if (clock_id == HVT_CLOCK_MONO_NS) {
		out->clock_id = HVT_CLOCK_MONO_NS;
		out->mult = 1;
		out->shift = 0;
		out->freq_hz = 0;
		return 0;
	}
	if (clock_id != HVT_CLOCK_COUNTER)
		return hvtg_err(-EINVAL,
				"clock %u cannot be written by user space: use "
				"HVT_CLOCK_COUNTER or HVT_CLOCK_MONO_NS",
				clock_id);
	/* Measured once per process (20 ms on x86_64 without CPUID 0x15). */
	f = __atomic_load_n(&clk_freq_cache, __ATOMIC_RELAXED);
	if (!f) {
		f = clk_counter_freq();
		__atomic_store_n(&clk_freq_cache, f, __ATOMIC_RELAXED);
	}
	if (!f)
		return hvtg_err(-ENOTSUP,
				"no usable CPU counter on this machine; "
				"configure CONFIG_HVT_CLOCK_MONOTONIC_SRC "
				"(make menuconfig) or format with "
				"HVT_CLOCK_MONO_NS");
	/* Largest shift <= 32 whose mult (ns per count << shift) fits in
	 * 32 bits: ns = count * mult >> shift. */
	for (shift = 32; shift; shift--) {
		uint64_t m = (((uint64_t)1000000000u << shift) + f / 2) / f;

		if (m <= UINT32_MAX)
			break;
	}
	out->clock_id = HVT_CLOCK_COUNTER;
	out->freq_hz = f;
	out->shift = shift;
	out->mult = (uint32_t)((((uint64_t)1000000000u << shift) + f / 2) / f);
	return 0;
}
