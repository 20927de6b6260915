// SPDX-License-Identifier: MIT
/*
 * Per-thread restartable-sequence setup for the executor in
 * rseq_<arch>.S.
 *
 * glibc 2.35 and later registers one struct rseq per thread itself and
 * exports where it lives (__rseq_offset from the thread pointer,
 * __rseq_size).  The kernel accepts one registration per thread, so the
 * library uses glibc's when there is one.  When glibc did not register
 * (GLIBC_TUNABLES=glibc.pthread.rseq=0, an older libc) the library
 * registers a thread-local area of its own on the thread's first write.
 * An area registered this way is never unregistered: the kernel stops
 * using it when the thread exits, and a later thread that reuses the
 * memory starts with fresh thread-local state and registers again.
 *
 * fork() keeps the calling thread's registration in the child (same
 * address, same thread-local state); only the cached thread id changes,
 * which an atfork handler refreshes.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define HVTG_GLIBC_RSEQ 1
#else
#define HVTG_GLIBC_RSEQ 0
#endif

#include "hvtg_internal.h"

#ifndef __NR_rseq
#define __NR_rseq -1
#endif

#if defined(__x86_64__)
#define HVTG_RSEQ_SIG 0x53053053u
#elif defined(__aarch64__)
#define HVTG_RSEQ_SIG 0xd428bc00u
#else
#define HVTG_RSEQ_SIG 0u
#endif

/* The assembly hard-codes these offsets. */
_Static_assert(offsetof(struct hvt_rb_plan, write_ptr) == 0, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, lost_ptr) == 8, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, expect_write) == 16, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, expect_lost) == 24, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, commit_ptr) == 32, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, commit_val) == 40, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, cpu) == 52, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, nr_pre) == 56, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, nr_ops) == 60, "plan");
_Static_assert(offsetof(struct hvt_rb_plan, ops) == 64, "plan");
_Static_assert(sizeof(struct hvt_rb_op) == 24, "op");
_Static_assert(offsetof(struct hvt_rb_op, src) == 8, "op");
_Static_assert(offsetof(struct hvt_rb_op, len) == 16, "op");
_Static_assert(HVT_RB_MAX_OPS == 20, "rseq_*.S PLAN_MAX_OPS");
_Static_assert(offsetof(struct hvt_rb_append, meta) == 0, "append");
_Static_assert(offsetof(struct hvt_rb_append, expect_write) == 8, "append");
_Static_assert(offsetof(struct hvt_rb_append, expect_lost) == 16, "append");
_Static_assert(offsetof(struct hvt_rb_append, commit_val) == 24, "append");
_Static_assert(offsetof(struct hvt_rb_append, ts) == 32, "append");
_Static_assert(offsetof(struct hvt_rb_append, dst) == 40, "append");
_Static_assert(offsetof(struct hvt_rb_append, hdr) == 48, "append");
_Static_assert(offsetof(struct hvt_rb_append, common) == 56, "append");
_Static_assert(offsetof(struct hvt_rb_append, src) == 64, "append");
_Static_assert(offsetof(struct hvt_rb_append, len) == 72, "append");
_Static_assert(offsetof(struct hvt_rb_append, hdr_len) == 76, "append");
_Static_assert(offsetof(struct hvt_rb_append, pad) == 80, "append");
_Static_assert(offsetof(struct hvt_rb_append, cpu) == 84, "append");
_Static_assert(offsetof(struct hvt_cpu_meta, ts_key) == 8 &&
		       offsetof(struct hvt_cpu_meta, ts) == 16 &&
		       offsetof(struct hvt_cpu_meta, lost) == 24,
	       "meta offsets in rseq_x86_64.S");
_Static_assert(offsetof(struct hvtg_rseq_abi, cpu_id) == 4, "rseq");
_Static_assert(offsetof(struct hvtg_rseq_abi, rseq_cs) == 8, "rseq");
/* The aarch64 executor orders stores into the first 64 meta bytes (W3). */
_Static_assert(offsetof(struct hvt_cpu_meta, ts_key) < 64 &&
		       offsetof(struct hvt_cpu_meta, ts) + 8 <= 64 &&
		       offsetof(struct hvt_cpu_meta, desc) >= 64,
	       "ts cache inside the first 64 bytes of the meta");

__thread struct hvtg_tls hvtg_tls;
static __thread struct hvtg_rseq_abi hvtg_own_rseq;

static pthread_once_t hvtg_atfork_once = PTHREAD_ONCE_INIT;

static void hvtg_atfork_child(void)
{
	/* Only the forking thread exists in the child; its id changed. */
	if (hvtg_tls.rs)
		hvtg_tls.tid = (int32_t)syscall(SYS_gettid);
}

static void hvtg_atfork_setup(void)
{
	pthread_atfork(NULL, NULL, hvtg_atfork_child);
}

static struct hvtg_rseq_abi *hvtg_glibc_area(void)
{
#if HVTG_GLIBC_RSEQ && HVTG_HAVE_RSEQ_EXEC
	struct hvtg_rseq_abi *rs;

	if (__rseq_size < 20)	/* registration disabled or failed */
		return NULL;
	rs = (struct hvtg_rseq_abi *)((char *)__builtin_thread_pointer() +
				      __rseq_offset);
	/* RSEQ_CPU_ID_UNINITIALIZED (-1) / REGISTRATION_FAILED (-2). */
	if ((int32_t)__atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED) < 0)
		return NULL;
	return rs;
#else
	return NULL;
#endif
}

int hvtg_thread_init(void)
{
	struct hvtg_tls *t = &hvtg_tls;
	struct hvtg_rseq_abi *rs;
	long ret;

	if (t->rs)
		return 0;
	if (t->err)
		return t->err;
	if (!HVTG_HAVE_RSEQ_EXEC) {
		t->err = hvtg_err(-ENOSYS,
				  "libhvtrace-guest has no restartable-"
				  "sequence executor for this architecture "
				  "(x86_64 and aarch64 only)");
		return t->err;
	}
	pthread_once(&hvtg_atfork_once, hvtg_atfork_setup);

	rs = hvtg_glibc_area();
	if (!rs) {
		rs = &hvtg_own_rseq;
		/* RSEQ_CPU_ID_UNINITIALIZED until the kernel fills it. */
		rs->cpu_id = (uint32_t)-1;
		ret = syscall(__NR_rseq, rs, sizeof(*rs), 0, HVTG_RSEQ_SIG);
		if (ret) {
			int e = errno;

			if (e == ENOSYS)
				t->err = hvtg_err(-ENOSYS,
						  "this kernel has no rseq "
						  "system call (Linux 4.18 or "
						  "later is needed)");
			else if (e == EBUSY)
				t->err = hvtg_err(-EBUSY,
						  "another rseq area is "
						  "registered for this thread "
						  "but the C library does not "
						  "export it; use glibc 2.35 "
						  "or later with rseq enabled");
			else
				t->err = hvtg_err(-e,
						  "rseq registration failed: "
						  "%s",
						  strerror(e));
			return t->err;
		}
		t->own = 1;
	}
	t->tid = (int32_t)syscall(SYS_gettid);
	/* Published last: hvtg_thread_ready() tests only rs. */
	t->rs = rs;
	return 0;
}

const char *hvtg_rseq_owner(void)
{
	if (!hvtg_tls.rs)
		return NULL;
	return hvtg_tls.own ? "own" : "glibc";
}

int hvtg_rseq_exec(const struct hvt_rb_plan *plan)
{
	int ret = hvtg_thread_ready();

	if (ret)
		return ret;
	return hvtg_rseq_exec_asm(plan, hvtg_tls.rs);
}

#if !HVTG_HAVE_RSEQ_EXEC
/* Other architectures: no executor; hvtg_thread_init() refuses first. */
int hvtg_rseq_exec_asm(const struct hvt_rb_plan *plan,
		       struct hvtg_rseq_abi *rs)
{
	return -ENOSYS;
}
const char hvtg_rseq_exec_end[1], hvtg_rseq_abort_ip[1];
const char hvtg_rseq_start_ip[1], hvtg_rseq_post_commit_ip[1];
#endif

int hvtg_get_thread_stats(struct hvtg_thread_stats *st)
{
	if (!st)
		return -EINVAL;
	*st = hvtg_tls.st;
	return 0;
}
