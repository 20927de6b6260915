/* SPDX-License-Identifier: MIT */
/*
 * The restartable-sequence executor for struct hvt_rb_plan, x86_64.
 *
 *   int hvtg_rseq_exec_asm(const struct hvt_rb_plan *plan,	(%rdi)
 *			    struct rseq *rs);			(%rsi)
 *
 * One critical section, entered by storing the address of hvtg_rseq_cs
 * into rs->rseq_cs.  From .Lstart up to (not including) .Lpost_commit the
 * kernel moves the thread to the abort handler if it is preempted,
 * migrated or signalled; the handler returns HVTG_EXEC_ABORTED.  Inside:
 *
 *   1. rs->cpu_id == plan->cpu, else return HVTG_EXEC_CPU;
 *   2. *plan->write_ptr == expect_write and *plan->lost_ptr ==
 *      expect_lost, else return HVTG_EXEC_STALE;
 *   3. every op in order, ops[0 .. nr_ops), each a forward copy of any
 *      length and alignment; an op with src == NULL leaves the section
 *      without committing and returns HVTG_EXEC_REJECT (-EINVAL): in a
 *      shared ring nothing may be written outside the section, so a
 *      reserve-style op has no meaning here;
 *   4. the store of commit_val to *commit_ptr, the last instruction of
 *      the section.
 *
 * Whatever stops the section before step 4 (abort, SIGKILL, a failed
 * check, a rejected op) leaves only bytes no reader trusts yet: bytes past
 * the committed offset, the tail page's header commit field, a claimed but
 * unpublished slot, and a ts cache whose key no longer matches the commit
 * word (see shared/ring_buffer.c).  Only writers running on plan->cpu
 * touch its buffer, and on one CPU only one of them can be inside this
 * section at a time without being aborted, so a successful section is
 * atomic with respect to every other writer of the buffer.
 *
 * Memory ordering.  x86-64 is TSO: stores become visible to other CPUs in
 * program order, loads are not reordered with older loads, and a plain
 * MOV store has release semantics.  Hence no fence instruction here:
 *
 *   W1  the commit MOV is a release store; it pairs with the host's (and
 *       a planner's) acquire load of meta->write (or meta->lost).
 *   W2  the pre-ops (ops[0 .. nr_pre), the claim of a reused slot's
 *       desc.seq) are stored before any later op writes into that slot;
 *       the release fence the core asks for between them pairs with the
 *       host's acquire fence between copying a page and re-reading its
 *       desc.seq.  TSO store order provides it, so nr_pre needs no code.
 *   W3  ts_key = INVALID, ts, then ts_key = new word: the copies run
 *       forward and in op order, so they become visible in that order;
 *       pairs with the planner's ts_key load, ts load, acquire fence,
 *       ts_key load (rb_last_ts()).
 *
 * No string instruction (rep movs) is used: fast-string stores may become
 * visible out of order, which would break W3 inside the 16-byte ts op.
 *
 * Only caller-saved registers are used and the stack is not touched, so
 * the abort handler can simply return.
 */

/* struct hvt_rb_plan (shared/include/hvtrace/ring_buffer.h); guest/lib/
 * rseq.c checks these offsets at compile time. */
#define PLAN_WRITE_PTR		0
#define PLAN_LOST_PTR		8
#define PLAN_EXPECT_WRITE	16
#define PLAN_EXPECT_LOST	24
#define PLAN_COMMIT_PTR		32
#define PLAN_COMMIT_VAL		40
#define PLAN_CPU		52
#define PLAN_NR_OPS		60
#define PLAN_OPS		64
#define OP_DST			0
#define OP_SRC			8
#define OP_LEN			16
#define OP_SIZE			24
#define PLAN_MAX_OPS		20	/* HVT_RB_MAX_OPS */

/* struct hvt_rb_append (the compact plan); rseq.c checks these too. */
#define AP_META			0
#define AP_EXPECT_WRITE		8
#define AP_EXPECT_LOST		16
#define AP_COMMIT_VAL		24
#define AP_TS			32
#define AP_DST			40
#define AP_HDR			48
#define AP_COMMON		56
#define AP_SRC			64
#define AP_LEN			72
#define AP_HDR_LEN		76
#define AP_PAD			80
#define AP_CPU			84

/* struct hvt_cpu_meta (abi.h) */
#define META_WRITE		0
#define META_TS_KEY		8
#define META_TS			16
#define META_LOST		24

/* struct rseq (linux/rseq.h) */
#define RSEQ_CPU_ID		4
#define RSEQ_CS			8

#define RSEQ_SIG		0x53053053

#define EXEC_COMMITTED		0
#define EXEC_ABORTED		1
#define EXEC_CPU		2
#define EXEC_STALE		3
#define EXEC_REJECT		-22

#if defined(__x86_64__)

/* Copy the last (%r11d & 7) bytes from (%r10) to (%r9) with 4, 2 and
 * 1-byte moves, forward, advancing both; clobbers %eax. */
	.macro	COPY_BELOW8
	testl	$4, %r11d
	jz	7f
	movl	(%r10), %eax
	movl	%eax, (%r9)
	addq	$4, %r10
	addq	$4, %r9
7:	testl	$2, %r11d
	jz	8f
	movzwl	(%r10), %eax
	movw	%ax, (%r9)
	addq	$2, %r10
	addq	$2, %r9
8:	testl	$1, %r11d
	jz	9f
	movzbl	(%r10), %eax
	movb	%al, (%r9)
	addq	$1, %r10
	addq	$1, %r9
9:
	.endm

/* Arm the critical section @cs and start it at the label @start: the
 * arming store must be the instruction right before start_ip, so that a
 * preemption after it finds the IP inside the range. */
	.macro	ARM_SECTION cs, start
	leaq	\cs(%rip), %rax
	movq	%rax, RSEQ_CS(%rsi)
	.globl	\start
	.hidden	\start
\start:
	.endm

/* Leave an executor with @code in %eax: disarm the critical section first
 * (rseq_cs := 0), so no descriptor address outlives the call. */
	.macro	DISARM_RET code
	movq	$0, RSEQ_CS(%rsi)
	movl	$\code, %eax
	ret
	.endm

	.section .data.rel.ro, "aw", @progbits
	.p2align 5
	.type	hvtg_rseq_cs, @object
/* struct rseq_cs: version, flags, start_ip, post_commit_offset, abort_ip */
hvtg_rseq_cs:
	.long	0
	.long	0
	.quad	hvtg_rseq_start_ip
	.quad	hvtg_rseq_post_commit_ip - hvtg_rseq_start_ip
	.quad	hvtg_rseq_abort_ip
	.size	hvtg_rseq_cs, 32

	.p2align 5
	.type	hvtg_rseq_append_cs, @object
hvtg_rseq_append_cs:
	.long	0
	.long	0
	.quad	hvtg_rseq_append_start_ip
	.quad	hvtg_rseq_append_post_commit_ip - hvtg_rseq_append_start_ip
	.quad	hvtg_rseq_append_abort_ip
	.size	hvtg_rseq_append_cs, 32

	.text
	.p2align 4
	.globl	hvtg_rseq_exec_asm
	.hidden	hvtg_rseq_exec_asm
	.type	hvtg_rseq_exec_asm, @function
hvtg_rseq_exec_asm:
	.cfi_startproc
	movl	PLAN_NR_OPS(%rdi), %ecx
	cmpl	$PLAN_MAX_OPS, %ecx
	ja	.Lreject_out
	leaq	PLAN_OPS(%rdi), %r8
	movq	PLAN_WRITE_PTR(%rdi), %r9
	movq	PLAN_LOST_PTR(%rdi), %r10
	ARM_SECTION hvtg_rseq_cs, hvtg_rseq_start_ip
	movl	RSEQ_CPU_ID(%rsi), %eax
	cmpl	PLAN_CPU(%rdi), %eax
	jne	.Lcpu
	movq	(%r9), %rax
	cmpq	PLAN_EXPECT_WRITE(%rdi), %rax
	jne	.Lstale
	movq	(%r10), %rax
	cmpq	PLAN_EXPECT_LOST(%rdi), %rax
	jne	.Lstale
	testl	%ecx, %ecx
	jz	.Lcommit
.Lop:
	movq	OP_DST(%r8), %r9
	movq	OP_SRC(%r8), %r10
	movl	OP_LEN(%r8), %r11d
	testq	%r10, %r10
	jz	.Lreject
	cmpl	$8, %r11d
	jb	.Ltail
.Lcopy8:
	movq	(%r10), %rax
	movq	%rax, (%r9)
	addq	$8, %r10
	addq	$8, %r9
	subl	$8, %r11d
	cmpl	$8, %r11d
	jae	.Lcopy8
.Ltail:
	COPY_BELOW8
	addq	$OP_SIZE, %r8
	decl	%ecx
	jnz	.Lop
.Lcommit:
	movq	PLAN_COMMIT_PTR(%rdi), %r9
	movq	PLAN_COMMIT_VAL(%rdi), %rax
	/* W1: the committing store, last instruction of the section. */
	movq	%rax, (%r9)
	.globl	hvtg_rseq_post_commit_ip
	.hidden	hvtg_rseq_post_commit_ip
hvtg_rseq_post_commit_ip:
	DISARM_RET EXEC_COMMITTED
.Lcpu:
	DISARM_RET EXEC_CPU
.Lstale:
	DISARM_RET EXEC_STALE
.Lreject:
	movq	$0, RSEQ_CS(%rsi)
.Lreject_out:
	movl	$EXEC_REJECT, %eax
	ret
	/* The signature the kernel checks right before abort_ip, encoded as
	 * "ud1 RSEQ_SIG(%rip), %edi" so the bytes disassemble cleanly. */
	.byte	0x0f, 0xb9, 0x3d
	.long	RSEQ_SIG
	.globl	hvtg_rseq_abort_ip
	.hidden	hvtg_rseq_abort_ip
hvtg_rseq_abort_ip:
	/* The kernel cleared rs->rseq_cs before jumping here. */
	movl	$EXEC_ABORTED, %eax
	ret
	.cfi_endproc
	.globl	hvtg_rseq_exec_end
	.hidden	hvtg_rseq_exec_end
hvtg_rseq_exec_end:
	.size	hvtg_rseq_exec_asm, . - hvtg_rseq_exec_asm

/*
 *   int hvtg_rseq_append_asm(const struct hvt_rb_append *ap,	(%rdi)
 *			      struct rseq *rs);			(%rsi)
 *
 * The same section for the compact plan of the common write (see
 * struct hvt_rb_append): the same checks (CPU, write word, lost word),
 * then the stores that plan stands for, in its order, then the commit
 * store as the last instruction.  The same results, and the same memory
 * ordering argument: W3 is the three ts-cache MOVs in order; W1 the
 * commit MOV; no slot is claimed, so there is no W2.  The payload is
 * copied forward 16 bytes per iteration with two 8-byte MOVs, then 8, 4,
 * 2, 1-byte moves for the rest.  No SSE register is written: with
 * 16-byte MOVDQU copies here, code running after the writes (the
 * disabled-check benchmark) measured a third slower on the development
 * machine.
 */
	.text
	.p2align 4
	.globl	hvtg_rseq_append_asm
	.hidden	hvtg_rseq_append_asm
	.type	hvtg_rseq_append_asm, @function
hvtg_rseq_append_asm:
	.cfi_startproc
	movq	AP_META(%rdi), %r8
	movq	AP_DST(%rdi), %r9
	movq	AP_SRC(%rdi), %r10
	movl	AP_LEN(%rdi), %r11d
	movl	AP_HDR_LEN(%rdi), %edx
	ARM_SECTION hvtg_rseq_append_cs, hvtg_rseq_append_start_ip
	movl	RSEQ_CPU_ID(%rsi), %eax
	cmpl	AP_CPU(%rdi), %eax
	jne	.Lap_cpu
	movq	META_WRITE(%r8), %rax
	cmpq	AP_EXPECT_WRITE(%rdi), %rax
	jne	.Lap_stale
	movq	META_LOST(%r8), %rax
	cmpq	AP_EXPECT_LOST(%rdi), %rax
	jne	.Lap_stale
	/* W3: ts_key = INVALID, ts, ts_key = the new word, in this order. */
	movq	$-1, META_TS_KEY(%r8)
	movq	AP_TS(%rdi), %rax
	movq	%rax, META_TS(%r8)
	movq	AP_COMMIT_VAL(%rdi), %rcx
	movq	%rcx, META_TS_KEY(%r8)
	/* Event header (8 bytes; with a 4-byte header the common fields
	 * overwrite the upper half next), then the common fields. */
	movq	AP_HDR(%rdi), %rax
	movq	%rax, (%r9)
	addq	%rdx, %r9
	movq	AP_COMMON(%rdi), %rax
	movq	%rax, (%r9)
	addq	$8, %r9
	cmpl	$16, %r11d
	jb	.Lap_tail
.Lap_copy16:
	movq	(%r10), %rax
	movq	%rax, (%r9)
	movq	8(%r10), %rax
	movq	%rax, 8(%r9)
	addq	$16, %r10
	addq	$16, %r9
	subl	$16, %r11d
	cmpl	$16, %r11d
	jae	.Lap_copy16
.Lap_tail:
	testl	%r11d, %r11d
	jz	.Lap_pad
	testl	$8, %r11d
	jz	1f
	movq	(%r10), %rax
	movq	%rax, (%r9)
	addq	$8, %r10
	addq	$8, %r9
1:	COPY_BELOW8
.Lap_pad:
	/* Record padding: 0 to 3 zero bytes, exactly (the record may end
	 * at the page's end). */
	movl	AP_PAD(%rdi), %edx
	testl	%edx, %edx
	jz	.Lap_commit
	testl	$2, %edx
	jz	4f
	movw	$0, (%r9)
	addq	$2, %r9
4:	testl	$1, %edx
	jz	.Lap_commit
	movb	$0, (%r9)
.Lap_commit:
	/* W1: the committing store, last instruction of the section. */
	movq	%rcx, META_WRITE(%r8)
	.globl	hvtg_rseq_append_post_commit_ip
	.hidden	hvtg_rseq_append_post_commit_ip
hvtg_rseq_append_post_commit_ip:
	DISARM_RET EXEC_COMMITTED
.Lap_cpu:
	DISARM_RET EXEC_CPU
.Lap_stale:
	DISARM_RET EXEC_STALE
	.byte	0x0f, 0xb9, 0x3d
	.long	RSEQ_SIG
	.globl	hvtg_rseq_append_abort_ip
	.hidden	hvtg_rseq_append_abort_ip
hvtg_rseq_append_abort_ip:
	movl	$EXEC_ABORTED, %eax
	ret
	.cfi_endproc
	.globl	hvtg_rseq_append_end
	.hidden	hvtg_rseq_append_end
hvtg_rseq_append_end:
	.size	hvtg_rseq_append_asm, . - hvtg_rseq_append_asm

#endif /* __x86_64__ */

	.section .note.GNU-stack, "", %progbits
