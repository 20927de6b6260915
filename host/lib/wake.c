// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the reader's half of armed wakeups (the protocol and its
 * barrier pairs are in shared/ring_wake.c and docs/design.md, "Waking the
 * reader").
 *
 *   hvtrace_area_wake_arm()      step A2: ask CPU @cpu's writers for a
 *                                doorbell once they commit @mark bytes past
 *                                what this reader has read
 *   (the caller's barrier)       step A3: membarrier(2), or the guest's
 *                                agent (BARRIER)
 *   hvtrace_area_wake_pending()  step A4: did they, meanwhile?  Then read
 *                                now instead of sleeping
 *
 * The generation and the armed position are this reader's own record:
 * never read back from the control page, which a guest can scribble on.
 */
#include <errno.h>

#include <hvtrace/ring_buffer.h>

#include "hvtrace-local.h"

static struct hvt_rd_cpu *wake_cpu(struct hvtrace_area *a, int cpu)
{
	if (!a || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus) {
		hvt_err(-EINVAL, "no CPU %d in the area", cpu);
		return NULL;
	}
	return &a->cpus[cpu];
}

int hvtrace_area_wake_arm(struct hvtrace_area *a, int cpu, uint32_t mark)
{
	struct hvt_rd_cpu *c = wake_cpu(a, cpu);
	uint64_t wake;

	if (!c)
		return -EINVAL;
	if (!a->ctrl)
		return hvt_err(-EPERM,
			       "arming a wakeup needs the area's owner (its "
			       "control page)");
	/* Where this reader stands: the page it reads and what of it it
	 * has passed on. */
	wake = hvt_wake_word(c->wake_gen + 1, HVT_WORD(c->seq, 0, c->pos), mark,
			     c->data_size);
	c->wake_gen = HVT_WAKE_GEN(wake);
	c->wake_at = HVT_WAKE_AT(wake);
	/* A2: relaxed; the caller's barrier (A3) orders it. */
	__atomic_store_n(&a->ctrl->wake[cpu].word, wake, __ATOMIC_RELAXED);
	return 0;
}

int hvtrace_area_wake_pending(struct hvtrace_area *a, int cpu)
{
	struct hvt_rd_cpu *c = wake_cpu(a, cpu);
	uint64_t w;

	if (!c)
		return -EINVAL;
	if (c->gone)
		return 0;
	/* A4: pairs with the writer's commit store (W1). */
	w = __atomic_load_n(&c->meta->write, __ATOMIC_ACQUIRE);
	return (int32_t)(HVT_WAKE_POS(w) - c->wake_at) >= 0;
}
