/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-guest internals, shared by the library's files and its tests.
 */
#ifndef HVTG_INTERNAL_H
#define HVTG_INTERNAL_H

#include <stdint.h>

#include <hvtrace/abi.h>
#include <hvtrace/ring_buffer.h>

#include "hvtrace-guest.h"

#if defined(__x86_64__) || defined(__aarch64__)
#define HVTG_HAVE_RSEQ_EXEC	1
#else
#define HVTG_HAVE_RSEQ_EXEC	0
#endif

/* struct rseq as the kernel defines it (only the fields used here). */
struct hvtg_rseq_abi {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
} __attribute__((aligned(32)));

struct hvtg_area {
	uint8_t *base;			/* the mapping */
	uint64_t map_size;
	const struct hvt_control *ctrl;	/* PROT_READ */
	uint32_t nr_cpus;
	uint32_t clock_id;
	struct hvtg_area_info info;
	int bell_fd;			/* the agent's doorbell, or -1 */
	volatile uint32_t *bell_regs;	/* the ivshmem doorbell's BAR0, or
					 * NULL (then the agent relays) */
	struct hvt_rb_cpu cpus[HVT_ABI_MAX_CPUS];
};

/* Where the agent listens unless $HVTRACE_AGENT_SOCKET says otherwise
 * (hvtrace-client.h's HVTC_DEFAULT_SOCKET); the doorbell is beside it. */
#define HVTG_DEFAULT_AGENT_SOCKET "/run/hvtrace/agent.sock"
/* The ivshmem doorbell's register BAR unless $HVTRACE_BELL says otherwise
 * (qemu-scripts/guest-init.sh links it). */
#define HVTG_DEFAULT_BELL "/dev/hvtrace-bell"

/* doorbell.c: ring the host when hvt_rb_wake_due() says so. */
void hvtg_bell_ring(struct hvtg_area *a);
void hvtg_bell_close(struct hvtg_area *a);

/* Per-thread state: the rseq area in use and what the writes did. */
struct hvtg_tls {
	struct hvtg_rseq_abi *rs;	/* NULL until hvtg_thread_init() */
	int32_t tid;			/* common_pid */
	int32_t err;			/* sticky init failure, -errno */
	int own;			/* rs is this library's registration */
	struct hvtg_thread_stats st;
};

extern __thread struct hvtg_tls hvtg_tls;

/* Executor results (hvtg_rseq_exec_asm() and hvtg_rseq_exec()). */
#define HVTG_EXEC_COMMITTED	0	/* commit_val stored */
#define HVTG_EXEC_ABORTED	1	/* the kernel aborted the section */
#define HVTG_EXEC_CPU		2	/* rseq cpu_id != plan->cpu */
#define HVTG_EXEC_STALE		3	/* write or lost word changed */
#define HVTG_EXEC_REJECT	(-22)	/* -EINVAL: malformed plan */

/*
 * The restartable-sequence executor (rseq_<arch>.S).  Returns one of the
 * HVTG_EXEC_* codes; nothing is committed unless it returns
 * HVTG_EXEC_COMMITTED.  @rs must be the calling thread's registered area.
 */
int hvtg_rseq_exec_asm(const struct hvt_rb_plan *plan,
		       struct hvtg_rseq_abi *rs);

/* Code range of the executor and its abort handler (for tests). */
extern const char hvtg_rseq_exec_end[];
extern const char hvtg_rseq_abort_ip[];
extern const char hvtg_rseq_start_ip[];
extern const char hvtg_rseq_post_commit_ip[];

/*
 * The executor for the compact plan of the common write (struct
 * hvt_rb_append), x86_64 only: the same checks, results and guarantees
 * as hvtg_rseq_exec_asm().  Elsewhere every write uses the general plan.
 */
#if defined(__x86_64__)
#define HVTG_HAVE_APPEND_EXEC	1
int hvtg_rseq_append_asm(const struct hvt_rb_append *ap,
			 struct hvtg_rseq_abi *rs);

extern const char hvtg_rseq_append_end[];
extern const char hvtg_rseq_append_abort_ip[];
extern const char hvtg_rseq_append_start_ip[];
extern const char hvtg_rseq_append_post_commit_ip[];
#else
#define HVTG_HAVE_APPEND_EXEC	0
#endif

/*
 * Make sure the calling thread has a registered rseq area (glibc's, or
 * one registered here).  Return: 0 or -ENOSYS/-EBUSY (message set).
 */
int hvtg_thread_init(void);

static inline int hvtg_thread_ready(void)
{
	if (__builtin_expect(hvtg_tls.rs != NULL, 1))
		return 0;
	return hvtg_thread_init();
}

/* The CPU the calling thread runs on, from its rseq area. */
static inline uint32_t hvtg_current_cpu(void)
{
	return __atomic_load_n(&hvtg_tls.rs->cpu_id, __ATOMIC_RELAXED);
}

/**
 * hvtg_rseq_exec - run one plan in a restartable sequence (one attempt)
 *
 * Return: an HVTG_EXEC_* code, or -ENOSYS when the thread has no rseq.
 */
int hvtg_rseq_exec(const struct hvt_rb_plan *plan);

/* Where the rseq area came from: "glibc" or "own", NULL before init. */
const char *hvtg_rseq_owner(void);

/* Clock */
uint64_t hvtg_clock_read_slow(uint32_t clock_id);

static inline uint64_t hvtg_counter_read(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

static inline uint64_t hvtg_clock_read(uint32_t clock_id)
{
	if (__builtin_expect(clock_id == HVT_CLOCK_COUNTER, 1))
		return hvtg_counter_read();
	return hvtg_clock_read_slow(clock_id);
}

/* Error text (error.c): sets the thread's message, returns @err. */
int hvtg_err(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* HVTG_INTERNAL_H */
