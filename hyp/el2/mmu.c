// SPDX-License-Identifier: MIT
/*
 * EL2 stage-1 identity map (non-VHE EL2 translation regime, TTBR0_EL2).
 *
 * 4 KiB granule, 32-bit VA (T0SZ = 32): the walk starts at level 1, whose
 * four entries are 1 GiB blocks:
 *
 *   0x00000000-0x3fffffff  Device-nGnRnE, execute-never (UART, GIC, ...)
 *   0x40000000-0x7fffffff  Normal write-back, inner shareable (RAM)
 *   0x80000000-0xffffffff  unmapped
 *
 * The writer core needs Normal memory: it uses exclusive/acquire/release
 * accesses and word copies, which Device memory does not support.
 *
 * QEMU does not model caches, so the tables need no cache maintenance
 * here; on hardware they would have to be cleaned to the point of
 * coherency before the secondary CPUs (MMU still off) walk them.
 */
#include "hyp.h"

#define PTE_BLOCK	0x1ULL
#define PTE_ATTR(i)	((uint64_t)(i) << 2)	/* MAIR_EL2 index */
#define PTE_AP_RW	(1ULL << 6)	/* AP[2:1] = 01 (AP[1] RES1 at EL2) */
#define PTE_SH_INNER	(3ULL << 8)
#define PTE_AF		(1ULL << 10)
#define PTE_XN		(1ULL << 54)

#define MAIR_DEVICE_IDX	0
#define MAIR_NORMAL_IDX	1
#define MAIR_VALUE	(0x00ULL << (8 * MAIR_DEVICE_IDX) | \
			 0xffULL << (8 * MAIR_NORMAL_IDX))

#define TCR_T0SZ(n)	((uint64_t)(n))
#define TCR_IRGN0_WBWA	(1ULL << 8)
#define TCR_ORGN0_WBWA	(1ULL << 10)
#define TCR_SH0_INNER	(3ULL << 12)
#define TCR_TG0_4K	(0ULL << 14)
#define TCR_PS_4G	(0ULL << 16)
#define TCR_EL2_RES1	((1ULL << 31) | (1ULL << 23))

#define SCTLR_M		(1ULL << 0)
#define SCTLR_C		(1ULL << 2)
#define SCTLR_I		(1ULL << 12)
#define SCTLR_EL2_RES1	0x30c50830ULL

static uint64_t mmu_l1[512] __aligned(4096);

void mmu_init_tables(void)
{
	uint32_t i;

	for (i = 0; i < ARRAY_SIZE(mmu_l1); i++)
		mmu_l1[i] = 0;
	mmu_l1[0] = 0x00000000ULL | PTE_BLOCK | PTE_ATTR(MAIR_DEVICE_IDX) |
		    PTE_AP_RW | PTE_AF | PTE_XN;
	mmu_l1[1] = 0x40000000ULL | PTE_BLOCK | PTE_ATTR(MAIR_NORMAL_IDX) |
		    PTE_AP_RW | PTE_SH_INNER | PTE_AF;
	/* The table stores complete before any CPU's walker reads them. */
	dsb(ish);
}

void mmu_enable(void)
{
	write_sysreg(mair_el2, MAIR_VALUE);
	write_sysreg(tcr_el2, TCR_T0SZ(32) | TCR_IRGN0_WBWA | TCR_ORGN0_WBWA |
				      TCR_SH0_INNER | TCR_TG0_4K | TCR_PS_4G |
				      TCR_EL2_RES1);
	write_sysreg(ttbr0_el2, (uintptr_t)mmu_l1);
	/* No stale translations: invalidate, wait, resynchronize. */
	dsb(ish);
	__asm__ volatile("tlbi alle2" : : : "memory");
	dsb(ish);
	isb();
	write_sysreg(sctlr_el2, SCTLR_EL2_RES1 | SCTLR_M | SCTLR_C | SCTLR_I);
	/* The new translation regime applies from the next instruction. */
	isb();
}
