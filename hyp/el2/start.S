/* SPDX-License-Identifier: MIT */
/*
 * Entry points of the EL2 image.
 *
 * _start: CPU 0, as QEMU starts a bare-metal ELF: at EL2 (virt with
 * virtualization=on and no EL3), MMU off, secondaries powered off.
 * hyp_secondary_entry: CPUs started by PSCI CPU_ON, x0 = context id =
 * logical CPU number.
 *
 * Both mask interrupts, check the exception level, take their stack from
 * hyp_stacks[cpu], install the EL2 vectors and call hyp_main(cpu).
 */
#include <hvtrace/hyp_layout.h>

#define HYP_STACK_SHIFT	14	/* 16 KiB, HYP_STACK_SIZE in hyp.h */

	.section .text.boot, "ax"
	.global _start
_start:
	msr	daifset, #0xf
	mov	x19, #0
	b	hyp_common_entry

	.global hyp_secondary_entry
hyp_secondary_entry:
	msr	daifset, #0xf
	mov	x19, x0

hyp_common_entry:
	cmp	x19, #HVT_HYP_MAX_CPUS
	b.hs	hyp_halt
	adrp	x1, hyp_stacks
	add	x1, x1, :lo12:hyp_stacks
	add	x2, x19, #1
	lsl	x2, x2, #HYP_STACK_SHIFT
	add	sp, x1, x2

	mrs	x1, CurrentEL
	cmp	x1, #(2 << 2)
	b.eq	1f
	lsr	x0, x1, #2
	bl	hyp_wrong_el		/* prints, never returns */
	b	hyp_halt
1:
	adrp	x1, hyp_vectors
	add	x1, x1, :lo12:hyp_vectors
	msr	vbar_el2, x1
	isb

	/* CPU 0 clears .bss (its own stack is there, still unused). */
	cbnz	x19, 3f
	adrp	x1, __bss_start
	add	x1, x1, :lo12:__bss_start
	adrp	x2, __bss_end
	add	x2, x2, :lo12:__bss_end
2:	cmp	x1, x2
	b.hs	3f
	stp	xzr, xzr, [x1], #16
	b	2b
3:
	mov	x0, x19
	bl	hyp_main
hyp_halt:
	wfi
	b	hyp_halt
