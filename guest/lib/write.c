// SPDX-License-Identifier: MIT
/*
 * The write path: plan with the writer core, commit with the
 * restartable-sequence executor, re-plan whenever the attempt did not
 * commit.
 *
 *   cpu  = rseq cpu_id                       (a load, no system call)
 *   ts   = area clock                        (re-read on every attempt:
 *                                             a plan needs a timestamp
 *                                             taken after the buffer's
 *                                             last commit it saw)
 *   plan = hvt_rb_plan_write(cpus[cpu], ts)  (reads shared state only)
 *   exec = hvtg_rseq_exec_asm(plan)          (checks cpu, write, lost;
 *                                             copies; commits)
 *
 * The common write (one payload piece appended to a tail page that
 * already holds an event, no TIME_EXTEND) takes a shorter road first: the
 * core's compact plan (hvt_rb_plan_append(), a dozen words instead of a
 * list of copies) and the executor made for it (hvtg_rseq_append_asm(),
 * x86_64), with the same checks and the same single commit store.  Any
 * other write, and an attempt of the short road that did not commit, goes
 * through the general loop below.  hvtg_writev() with one piece takes the
 * short road too.
 *
 * An attempt that does not commit (the kernel aborted it, the thread
 * moved to another CPU, or another writer committed first) has changed
 * nothing a reader trusts, so retrying from the top is always safe.  Each
 * failed comparison means another writer made progress, so writers as a
 * whole never stall; a single writer gives up with -EAGAIN only after
 * HVTG_MAX_TRIES consecutive failures.
 *
 * Nothing is lost silently: a write on a CPU the area has no buffer for,
 * and a write that gives up, is counted in the area's 'unplaced' counter
 * of a CPU buffer (hvt_rb_count_unplaced()), which the host reports as
 * lost, before the error is returned.
 */
#include <errno.h>

#include "hvtg_internal.h"

#define HVTG_MAX_TRIES	(1u << 20)

_Static_assert(HVTG_MAX_IOV == HVT_RB_MAX_IOV, "iovec limit");

static int wr_unbound(void)
{
	return hvtg_err(-EBADF, "event handle not bound: call "
				"hvtg_event_bind() first");
}

/* Count an attempt that did not commit; 0, or the executor's -EINVAL. */
static inline int wr_count_retry(int r)
{
	switch (r) {
	case HVTG_EXEC_ABORTED:
		hvtg_tls.st.aborted++;
		return 0;
	case HVTG_EXEC_CPU:
		hvtg_tls.st.cpu_moved++;
		return 0;
	case HVTG_EXEC_STALE:
		hvtg_tls.st.stale++;
		return 0;
	default:
		return hvtg_err(-EINVAL,
				"the writer core produced a plan the "
				"executor refuses (an op without a "
				"source)");
	}
}

#if HVTG_HAVE_APPEND_EXEC
/*
 * The short road: one attempt with the compact plan.  Returns 0 when the
 * event committed, 1 when the general loop must write it (the case does
 * not apply, or the attempt did not commit and was counted).
 */
static inline __attribute__((always_inline)) int
wr_append(struct hvtg_area *a, uint32_t id, const void *payload,
	  uint32_t len)
{
	struct hvtg_rseq_abi *rs = hvtg_tls.rs;
	int32_t tid = hvtg_tls.tid;
	struct hvt_common_fields common;
	struct hvt_rb_append ap;
	uint32_t cpu;
	int r;

	if (__builtin_expect(!rs, 0))
		return 1;	/* the general loop sets the thread up */
	cpu = __atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
	if (__builtin_expect(cpu >= a->nr_cpus, 0))
		return 1;	/* the general loop reports it */
	common.common_type = (uint16_t)id;
	common.common_flags = 0;
	common.common_preempt_count = 0;
	common.common_pid = tid;
	if (hvt_rb_plan_append(&a->cpus[cpu], &ap,
			       hvtg_clock_read(a->clock_id), &common, payload,
			       len))
		return 1;
	r = hvtg_rseq_append_asm(&ap, rs);
	if (__builtin_expect(r == HVTG_EXEC_COMMITTED, 1)) {
		hvtg_tls.st.committed++;
		if (__builtin_expect(hvt_rb_wake_due(&a->cpus[cpu]), 0))
			hvtg_bell_ring(a);
		return 0;
	}
	wr_count_retry(r);	/* never a rejection: no op lists here */
	return 1;
}
#endif

/* The general loop; inlined into both entry points. */
static inline __attribute__((always_inline)) int
wr_commit(struct hvtg_area *a, uint32_t id, const struct hvt_iovec *iov,
	  uint32_t niov)
{
	struct hvt_common_fields common;
	struct hvt_rb_plan plan;
	uint32_t tries, cpu;
	int ret, r;

	if (__builtin_expect(!hvtg_tls.rs, 0)) {
		ret = hvtg_thread_init();
		if (ret)
			return ret;
	}
	common.common_type = (uint16_t)id;
	common.common_flags = 0;
	common.common_preempt_count = 0;
	common.common_pid = hvtg_tls.tid;

	for (tries = 0; tries < HVTG_MAX_TRIES; tries++) {
		cpu = __atomic_load_n(&hvtg_tls.rs->cpu_id, __ATOMIC_RELAXED);
		if (__builtin_expect(cpu >= a->nr_cpus, 0)) {
			hvt_rb_count_unplaced(&a->cpus[cpu % a->nr_cpus]);
			hvtg_tls.st.unplaced++;
			return hvtg_err(-ENXIO,
					"running on CPU %u but the area has "
					"buffers for CPUs 0..%u only (the "
					"event is counted as lost)",
					cpu, a->nr_cpus - 1);
		}
		ret = hvt_rb_plan_write(&a->cpus[cpu], &plan,
					hvtg_clock_read(a->clock_id), &common,
					iov, niov);
		if (__builtin_expect(ret, 0))
			/* HVT_E* values are Linux errno values. */
			return hvtg_err(ret, ret == -E2BIG ?
						     "record larger than a "
						     "sub-buffer can hold "
						     "(see hvtg_area_info "
						     "max_payload)" :
						     "bad payload pieces");

		r = hvtg_rseq_exec_asm(&plan, hvtg_tls.rs);
		switch (r) {
		case HVTG_EXEC_COMMITTED:
			if (__builtin_expect(plan.kind == HVT_PLAN_DROP, 0)) {
				hvtg_tls.st.dropped++;
				return -ENOSPC;
			}
			if (__builtin_expect(plan.kind == HVT_PLAN_SEAL, 0)) {
				/* The full page is closed; plan again. */
				hvtg_tls.st.sealed++;
				break;
			}
			hvtg_tls.st.committed++;	/* APPEND or SWITCH */
			if (__builtin_expect(hvt_rb_wake_due(&a->cpus[cpu]), 0))
				hvtg_bell_ring(a);
			return 0;
		default:
			ret = wr_count_retry(r);
			if (ret)
				return ret;
			break;
		}
	}
	hvt_rb_count_unplaced(&a->cpus[cpu]);
	hvtg_tls.st.unplaced++;
	return hvtg_err(-EAGAIN,
			"event not committed after %u attempts: the CPU "
			"buffer keeps changing under this writer (the event "
			"is counted as lost)",
			HVTG_MAX_TRIES);
}

/* hvtg_write() through the general loop, out of line: the short road
 * then needs no frame for a general plan. */
static __attribute__((noinline)) int
wr_write_general(struct hvtg_area *a, uint32_t id, const void *payload,
		 uint32_t len)
{
	struct hvt_iovec iov;

	iov.base = payload;
	iov.len = len;
	return wr_commit(a, id, &iov, len ? 1 : 0);
}

int hvtg_write(const struct hvtg_event *ev, const void *payload, size_t len)
{
	if (__builtin_expect(!hvtg_enabled(ev), 0))
		return ev->priv_area ? -ENODATA : wr_unbound();
	if (__builtin_expect(len > UINT32_MAX, 0))
		return -E2BIG;
	if (__builtin_expect(len && !payload, 0))
		return -EINVAL;
#if HVTG_HAVE_APPEND_EXEC
	if (__builtin_expect(!wr_append(ev->priv_area, ev->priv_id, payload,
					(uint32_t)len),
			     1))
		return 0;
#endif
	return wr_write_general(ev->priv_area, ev->priv_id, payload,
				(uint32_t)len);
}

int hvtg_writev(const struct hvtg_event *ev, const struct iovec *iov,
		int iovcnt)
{
	struct hvt_iovec v[HVTG_MAX_IOV];
	int i;

	if (__builtin_expect(!hvtg_enabled(ev), 0))
		return ev->priv_area ? -ENODATA : wr_unbound();
	if (iovcnt < 0 || iovcnt > HVTG_MAX_IOV || (iovcnt && !iov))
		return -EINVAL;
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > UINT32_MAX)
			return -E2BIG;
		if (iov[i].iov_len && !iov[i].iov_base)
			return -EINVAL;
		v[i].base = iov[i].iov_base;
		v[i].len = (uint32_t)iov[i].iov_len;
	}
#if HVTG_HAVE_APPEND_EXEC
	if (iovcnt == 1 &&
	    !wr_append(ev->priv_area, ev->priv_id, v[0].base, v[0].len))
		return 0;
#endif
	return wr_commit(ev->priv_area, ev->priv_id, v, (uint32_t)iovcnt);
}
