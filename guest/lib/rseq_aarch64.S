/* SPDX-License-Identifier: MIT */
/*
 * The restartable-sequence executor for struct hvt_rb_plan, aarch64.
 *
 *   int hvtg_rseq_exec_asm(const struct hvt_rb_plan *plan,	(x0)
 *			    struct rseq *rs);			(x1)
 *
 * Same contract and section layout as guest/lib/rseq_x86_64.S (read its
 * comment first); only the memory ordering differs, because AArch64 may
 * make stores visible out of program order:
 *
 *   W1  the commit is an STLR (store-release): every earlier store of the
 *       plan is visible before it.  Pairs with the host's (and a
 *       planner's) acquire load of meta->write (or meta->lost).
 *   W2  after the pre-ops (ops[0 .. nr_pre), the desc.seq claim of a
 *       reused slot) a DMB ISHST orders them before every later store into
 *       the slot.  Pairs with the host's acquire fence between copying a
 *       page and re-reading its desc.seq.
 *   W3  ops whose destination lies in the first 64 bytes of the CPU meta
 *       (the ts_key/ts cache next to meta->write) are stored one aligned
 *       8-byte word at a time with STLR, so ts_key = INVALID, ts and
 *       ts_key = new word become visible in that order.  Pairs with the
 *       planner's ts_key load, ts load, acquire fence, ts_key load
 *       (rb_last_ts()).
 *
 * Other copies never make an unaligned access (the ring may be mapped as
 * Device memory through a PCI BAR): 8-byte words when source and
 * destination are 8-aligned, 4-byte words when 4-aligned, else bytes.
 *
 * Only caller-saved registers (x9-x17) are used and the stack is not
 * touched, so the abort handler can simply return.
 */

#define PLAN_WRITE_PTR		0
#define PLAN_LOST_PTR		8
#define PLAN_EXPECT_WRITE	16
#define PLAN_EXPECT_LOST	24
#define PLAN_COMMIT_PTR		32
#define PLAN_COMMIT_VAL		40
#define PLAN_CPU		52
#define PLAN_NR_PRE		56
#define PLAN_NR_OPS		60
#define PLAN_OPS		64
#define OP_DST			0
#define OP_SRC			8
#define OP_LEN			16
#define OP_SIZE			24
#define PLAN_MAX_OPS		20	/* HVT_RB_MAX_OPS */
#define META_CACHE_BYTES	64	/* write, ts_key, ts, lost, ... */

#define RSEQ_CPU_ID		4
#define RSEQ_CS			8

/* glibc's RSEQ_SIG for little-endian aarch64: "brk #0x45e0". */
#define RSEQ_SIG		0xd428bc00

#define EXEC_COMMITTED		0
#define EXEC_ABORTED		1
#define EXEC_CPU		2
#define EXEC_STALE		3
#define EXEC_REJECT		-22

#if defined(__aarch64__)

	.section .data.rel.ro, "aw", @progbits
	.p2align 5
	.type	hvtg_rseq_cs, %object
hvtg_rseq_cs:
	.long	0
	.long	0
	.quad	hvtg_rseq_start_ip
	.quad	hvtg_rseq_post_commit_ip - hvtg_rseq_start_ip
	.quad	hvtg_rseq_abort_ip
	.size	hvtg_rseq_cs, 32

	.text
	.p2align 4
	.globl	hvtg_rseq_exec_asm
	.hidden	hvtg_rseq_exec_asm
	.type	hvtg_rseq_exec_asm, %function
hvtg_rseq_exec_asm:
	.cfi_startproc
	ldr	w9, [x0, #PLAN_NR_OPS]
	cmp	w9, #PLAN_MAX_OPS
	b.hi	.Lreject_out
	/* w16: ops left before the W2 fence */
	ldr	w16, [x0, #PLAN_NR_PRE]
	add	x10, x0, #PLAN_OPS
	ldr	x11, [x0, #PLAN_WRITE_PTR]
	ldr	x12, [x0, #PLAN_LOST_PTR]
	adrp	x13, hvtg_rseq_cs
	add	x13, x13, :lo12:hvtg_rseq_cs
	/* Arm the section: the instruction right before start_ip. */
	str	x13, [x1, #RSEQ_CS]
	.globl	hvtg_rseq_start_ip
	.hidden	hvtg_rseq_start_ip
hvtg_rseq_start_ip:
	ldr	w13, [x1, #RSEQ_CPU_ID]
	ldr	w14, [x0, #PLAN_CPU]
	cmp	w13, w14
	b.ne	.Lcpu
	ldr	x13, [x11]
	ldr	x14, [x0, #PLAN_EXPECT_WRITE]
	cmp	x13, x14
	b.ne	.Lstale
	ldr	x13, [x12]
	ldr	x14, [x0, #PLAN_EXPECT_LOST]
	cmp	x13, x14
	b.ne	.Lstale
	cbz	w9, .Lcommit
.Lop:
	ldp	x13, x14, [x10, #OP_DST]	/* dst, src */
	ldr	w15, [x10, #OP_LEN]
	cbz	x14, .Lreject
	/* W3: a ts-cache op gets ordered word stores. */
	sub	x17, x13, x11
	cmp	x17, #META_CACHE_BYTES
	b.hs	.Lcopy
	orr	x17, x13, x15
	tst	x17, #7
	b.ne	.Lcopy
.Lordered:
	cbz	w15, .Lnext
	ldr	x17, [x14], #8
	stlr	x17, [x13]
	add	x13, x13, #8
	sub	w15, w15, #8
	b	.Lordered
.Lcopy:
	orr	x17, x13, x14
	tst	x17, #7
	b.ne	.Lcopy4
.Lcopy8:
	cmp	w15, #8
	b.lo	.Lcopy4
	ldr	x17, [x14], #8
	str	x17, [x13], #8
	sub	w15, w15, #8
	b	.Lcopy8
.Lcopy4:
	orr	x17, x13, x14
	tst	x17, #3
	b.ne	.Lcopy1
1:	cmp	w15, #4
	b.lo	.Lcopy1
	ldr	w17, [x14], #4
	str	w17, [x13], #4
	sub	w15, w15, #4
	b	1b
.Lcopy1:
	cbz	w15, .Lnext
	ldrb	w17, [x14], #1
	strb	w17, [x13], #1
	sub	w15, w15, #1
	b	.Lcopy1
.Lnext:
	add	x10, x10, #OP_SIZE
	sub	w9, w9, #1
	cbz	w16, 2f
	sub	w16, w16, #1
	cbnz	w16, 2f
	/* W2: the slot claim is visible before any byte of the slot. */
	dmb	ishst
2:	cbnz	w9, .Lop
.Lcommit:
	ldr	x13, [x0, #PLAN_COMMIT_PTR]
	ldr	x14, [x0, #PLAN_COMMIT_VAL]
	/* W1: the committing store-release, last instruction of the
	 * section. */
	stlr	x14, [x13]
	.globl	hvtg_rseq_post_commit_ip
	.hidden	hvtg_rseq_post_commit_ip
hvtg_rseq_post_commit_ip:
	str	xzr, [x1, #RSEQ_CS]
	mov	w0, #EXEC_COMMITTED
	ret
.Lcpu:
	str	xzr, [x1, #RSEQ_CS]
	mov	w0, #EXEC_CPU
	ret
.Lstale:
	str	xzr, [x1, #RSEQ_CS]
	mov	w0, #EXEC_STALE
	ret
.Lreject:
	str	xzr, [x1, #RSEQ_CS]
.Lreject_out:
	mov	w0, #EXEC_REJECT
	ret
	/* The signature the kernel checks right before abort_ip. */
	.inst	RSEQ_SIG
	.globl	hvtg_rseq_abort_ip
	.hidden	hvtg_rseq_abort_ip
hvtg_rseq_abort_ip:
	mov	w0, #EXEC_ABORTED
	ret
	.cfi_endproc
	.globl	hvtg_rseq_exec_end
	.hidden	hvtg_rseq_exec_end
hvtg_rseq_exec_end:
	.size	hvtg_rseq_exec_asm, . - hvtg_rseq_exec_asm

#endif /* __aarch64__ */

	.section .note.GNU-stack, "", %progbits
