/* SPDX-License-Identifier: MIT */
/*
 * EL2 exception vectors.
 *
 * Only "lower EL, AArch64, synchronous" is expected: the EL1 payload's
 * hvc.  It saves the EL1 context (struct hyp_regs, 272 bytes) on the EL2
 * stack, calls hyp_handle_lower_sync() and returns with eret.  Anything
 * else saves the context and calls hyp_handle_unexpected(regs, kind),
 * which reports the syndrome and powers off.
 *
 * struct hyp_regs: x0..x30 at 0..240, elr at 248, spsr at 256.
 */
#define HYP_REGS_SIZE	272

	.macro	save_frame
	sub	sp, sp, #HYP_REGS_SIZE
	stp	x0, x1, [sp, #16 * 0]
	stp	x2, x3, [sp, #16 * 1]
	stp	x4, x5, [sp, #16 * 2]
	stp	x6, x7, [sp, #16 * 3]
	stp	x8, x9, [sp, #16 * 4]
	stp	x10, x11, [sp, #16 * 5]
	stp	x12, x13, [sp, #16 * 6]
	stp	x14, x15, [sp, #16 * 7]
	stp	x16, x17, [sp, #16 * 8]
	stp	x18, x19, [sp, #16 * 9]
	stp	x20, x21, [sp, #16 * 10]
	stp	x22, x23, [sp, #16 * 11]
	stp	x24, x25, [sp, #16 * 12]
	stp	x26, x27, [sp, #16 * 13]
	stp	x28, x29, [sp, #16 * 14]
	mrs	x21, elr_el2
	mrs	x22, spsr_el2
	stp	x30, x21, [sp, #16 * 15]
	str	x22, [sp, #16 * 16]
	.endm

	/* Restore the context at [x0] and return to it with SP_EL2 = x1. */
	.macro	restore_frame_eret
	mov	sp, x1
	ldp	x30, x21, [x0, #16 * 15]
	ldr	x22, [x0, #16 * 16]
	msr	elr_el2, x21
	msr	spsr_el2, x22
	ldp	x2, x3, [x0, #16 * 1]
	ldp	x4, x5, [x0, #16 * 2]
	ldp	x6, x7, [x0, #16 * 3]
	ldp	x8, x9, [x0, #16 * 4]
	ldp	x10, x11, [x0, #16 * 5]
	ldp	x12, x13, [x0, #16 * 6]
	ldp	x14, x15, [x0, #16 * 7]
	ldp	x16, x17, [x0, #16 * 8]
	ldp	x18, x19, [x0, #16 * 9]
	ldp	x20, x21, [x0, #16 * 10]
	ldp	x22, x23, [x0, #16 * 11]
	ldp	x24, x25, [x0, #16 * 12]
	ldp	x26, x27, [x0, #16 * 13]
	ldp	x28, x29, [x0, #16 * 14]
	ldp	x0, x1, [x0, #16 * 0]
	eret
	.endm

	.macro	ventry target
	.balign	128
	b	\target
	.endm

	.macro	vunexpected kind
vector_unexpected_\kind:
	save_frame
	mov	x0, sp
	mov	x1, #\kind
	bl	hyp_handle_unexpected
	b	.
	.endm

	.text
	.balign	2048
	.global	hyp_vectors
hyp_vectors:
	/* current EL, SP_EL0 */
	ventry	vector_unexpected_0
	ventry	vector_unexpected_1
	ventry	vector_unexpected_2
	ventry	vector_unexpected_3
	/* current EL, SP_EL2 */
	ventry	vector_unexpected_4
	ventry	vector_unexpected_5
	ventry	vector_unexpected_6
	ventry	vector_unexpected_7
	/* lower EL, AArch64 */
	ventry	vector_lower_sync
	ventry	vector_unexpected_9
	ventry	vector_unexpected_10
	ventry	vector_unexpected_11
	/* lower EL, AArch32 */
	ventry	vector_unexpected_12
	ventry	vector_unexpected_13
	ventry	vector_unexpected_14
	ventry	vector_unexpected_15

vector_lower_sync:
	save_frame
	mov	x0, sp
	bl	hyp_handle_lower_sync
	mov	x0, sp
	add	x1, sp, #HYP_REGS_SIZE
	restore_frame_eret

	vunexpected 0
	vunexpected 1
	vunexpected 2
	vunexpected 3
	vunexpected 4
	vunexpected 5
	vunexpected 6
	vunexpected 7
	vunexpected 9
	vunexpected 10
	vunexpected 11
	vunexpected 12
	vunexpected 13
	vunexpected 14
	vunexpected 15

/* void hyp_eret_to(struct hyp_regs *frame, uint64_t sp_el2) */
	.global	hyp_eret_to
hyp_eret_to:
	restore_frame_eret
