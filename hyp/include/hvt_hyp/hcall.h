/* SPDX-License-Identifier: MIT */
/*
 * Hypercalls of the EL2 rig (SMCCC vendor-specific hypervisor service
 * range, issued with "hvc #0" from EL1: x0 = function id, x1..x3 =
 * arguments, result in x0).
 *
 *   HVT_HC_NOP      returns 0
 *   HVT_HC_ADD      returns a0 + a1 + a2 (mod 2^64)
 *   HVT_HC_MIX      returns (a0 * 0x9e3779b97f4a7c15) ^ (a1 >> 7) ^ (a2 << 3)
 *   HVT_HC_CPU      returns the caller's CPU number
 *   HVT_HC_DONE     the payload finished: a0 = calls made, a1 = results
 *                   that did not match; returns 0 and does not come back
 *                   to EL1 (the CPU parks in the hypervisor)
 *   anything else   returns HVT_HC_NOT_SUPPORTED (SMCCC's -1)
 *
 * The payload makes its calls in the order hvt_hc_schedule() gives, so a
 * test that knows the call count can predict every host_hcall event.
 */
#ifndef HVT_HYP_HCALL_H
#define HVT_HYP_HCALL_H

#include <stdint.h>

#define HVT_HC_BASE		0xc6000000u	/* SMC64 fast, vendor hyp */
#define HVT_HC_NOP		(HVT_HC_BASE + 1)
#define HVT_HC_ADD		(HVT_HC_BASE + 2)
#define HVT_HC_MIX		(HVT_HC_BASE + 3)
#define HVT_HC_CPU		(HVT_HC_BASE + 4)
#define HVT_HC_BAD		(HVT_HC_BASE + 0x7f)	/* unknown on purpose: the payload
						 * checks HVT_HC_NOT_SUPPORTED */
#define HVT_HC_DONE		(HVT_HC_BASE + 0xff)
#define HVT_HC_NOT_SUPPORTED	(-1LL)

/*
 * The i-th call of CPU @cpu: a fixed cycle of function ids (one unknown
 * id in eight exercises the error path) with arguments derived from i.
 */
static inline void hvt_hc_schedule(uint64_t i, uint32_t cpu, uint64_t *func,
				   uint64_t *a0, uint64_t *a1, uint64_t *a2)
{
	static const uint32_t cycle[8] = {
		HVT_HC_ADD, HVT_HC_NOP, HVT_HC_MIX, HVT_HC_CPU,
		HVT_HC_ADD, HVT_HC_MIX, HVT_HC_BAD, HVT_HC_ADD,
	};

	*func = cycle[i & 7];
	*a0 = i;
	*a1 = ((uint64_t)cpu << 32) | (uint32_t)(i * 3);
	*a2 = ~i;
}

#endif /* HVT_HYP_HCALL_H */
