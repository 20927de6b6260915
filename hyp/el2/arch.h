/* SPDX-License-Identifier: MIT */
/*
 * aarch64 primitives for the EL2 image: system registers, barriers, the
 * counter.  Every barrier says what it orders and with what.
 */
#ifndef HYP_ARCH_H
#define HYP_ARCH_H

#include <stdint.h>

#define read_sysreg(r)							\
	({								\
		uint64_t v_;						\
		__asm__ volatile("mrs %0, " #r : "=r"(v_));		\
		v_;							\
	})

#define write_sysreg(r, v)						\
	__asm__ volatile("msr " #r ", %0" : : "r"((uint64_t)(v)) : "memory")

#define isb()		__asm__ volatile("isb" : : : "memory")
#define dsb(opt)	__asm__ volatile("dsb " #opt : : : "memory")
#define dmb(opt)	__asm__ volatile("dmb " #opt : : : "memory")
#define cpu_relax()	__asm__ volatile("yield" : : : "memory")
#define wfi()		__asm__ volatile("wfi" : : : "memory")

/* ESR_ELx exception classes the image handles. */
#define ESR_EC_SHIFT		26
#define ESR_EC_HVC64		0x16
#define ESR_ISS_MASK		0x1ffffffu

/* HCR_EL2 */
#define HCR_RW			(1ULL << 31)	/* EL1 is AArch64 */

/* SPSR for "EL1h, D, A, I, F masked". */
#define SPSR_EL1H_MASKED	0x3c5ULL

/* SCTLR_EL1 RES1 bits, MMU and caches off (the payload runs untranslated). */
#define SCTLR_EL1_RES1		0x30d00800ULL

/*
 * The counter, for timestamps.  The isb keeps the read from being
 * performed ahead of earlier instructions (no pairing: it is a context
 * synchronization, so the value is taken no earlier than program order
 * says).
 */
static inline uint64_t arch_counter(void)
{
	isb();
	return read_sysreg(cntvct_el0);
}

/*
 * The counter, read only once every earlier load has completed: dsb ld
 * waits for them, isb keeps the counter read behind the dsb.  Used where
 * the timestamp must not predate a value just observed (a host request).
 */
static inline uint64_t arch_counter_after_loads(void)
{
	dsb(ld);
	isb();
	return read_sysreg(cntvct_el0);
}

static inline uint64_t arch_counter_freq(void)
{
	return read_sysreg(cntfrq_el0);
}

/* Logical CPU number from MPIDR_EL1: QEMU virt puts 8 CPUs per cluster. */
static inline uint32_t arch_cpu_id(void)
{
	uint64_t mpidr = read_sysreg(mpidr_el1);

	return (uint32_t)((mpidr & 0xff) + ((mpidr >> 8) & 0xff) * 8);
}

static inline uint32_t arch_current_el(void)
{
	return (uint32_t)(read_sysreg(CurrentEL) >> 2) & 3;
}

#endif /* HYP_ARCH_H */
