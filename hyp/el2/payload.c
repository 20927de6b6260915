// SPDX-License-Identifier: MIT
/*
 * The EL1 payload: a stand-in for a host kernel making hypercalls.
 *
 * Runs at EL1 with its MMU off (so its data accesses are Device memory:
 * aligned only, which -mstrict-align guarantees) on its own stack.  It
 * makes the calls hvt_hc_schedule() lists, checks every result against
 * its own model of the hypercall semantics (hvt_hyp/hcall.h), and reports
 * with HVT_HC_DONE.  It shares nothing with the hypervisor but registers.
 */
#include <stdint.h>

#include <hvt_hyp/hcall.h>

void payload_entry(uint64_t cpu, uint64_t hcalls, uint64_t delay);

static uint64_t hvc(uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2)
{
	register uint64_t x0 __asm__("x0") = fn;
	register uint64_t x1 __asm__("x1") = a0;
	register uint64_t x2 __asm__("x2") = a1;
	register uint64_t x3 __asm__("x3") = a2;

	__asm__ volatile("hvc #0"
			 : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3)
			 :
			 : "memory", "x4", "x5", "x6", "x7", "x8", "x9",
			   "x10", "x11", "x12", "x13", "x14", "x15", "x16",
			   "x17");
	return x0;
}

static uint64_t expected(uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2,
			 uint64_t cpu)
{
	switch (fn) {
	case HVT_HC_NOP:
		return 0;
	case HVT_HC_ADD:
		return a0 + a1 + a2;
	case HVT_HC_MIX:
		return (a0 * 0x9e3779b97f4a7c15ULL) ^ (a1 >> 7) ^ (a2 << 3);
	case HVT_HC_CPU:
		return cpu;
	default:
		return (uint64_t)HVT_HC_NOT_SUPPORTED;
	}
}

void payload_entry(uint64_t cpu, uint64_t hcalls, uint64_t delay)
{
	uint64_t i, d, bad = 0, fn, a0, a1, a2;

	for (i = 0; !hcalls || i < hcalls; i++) {
		hvt_hc_schedule(i, (uint32_t)cpu, &fn, &a0, &a1, &a2);
		if (hvc(fn, a0, a1, a2) != expected(fn, a0, a1, a2, cpu))
			bad++;
		for (d = 0; d < delay; d++)
			__asm__ volatile("" : : : "memory");
	}
	hvc(HVT_HC_DONE, i, bad, 0);
	for (;;)
		__asm__ volatile("wfi");
}
