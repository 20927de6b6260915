/* SPDX-License-Identifier: MIT */
/*
 * hvt-hyp-test: what the run checks share (check.c, enable_test.c,
 * garbage_test.c): the per-CPU checkers of one run, the reader callback
 * that feeds them, the periodic time sync and the per-CPU report.
 */
#ifndef HVT_HYP_CHECKS_H
#define HVT_HYP_CHECKS_H

#include "seqcheck.h"

struct ck {
	struct hyp_rig *r;
	struct seqck seq[HVT_ABI_MAX_CPUS];
	uint64_t sync_every_ns, next_sync;
	uint64_t syncs, sync_fail;
	int failures;
	/* enable-test / garbage-test phase machine */
	int phase;
	uint64_t phase_start;
	uint64_t want;
	uint64_t errors_base;
};

/* Count a failure with its message when @cond does not hold. */
#define expect(c, cond, ...)						\
	do {								\
		if (!(cond)) {						\
			printf("FAIL: " __VA_ARGS__);			\
			putchar('\n');					\
			(c)->failures++;				\
		}							\
	} while (0)

/* @c reads @r; every CPU's checker strict, and @synced (see seq_init). */
void ck_init(struct ck *c, struct hyp_rig *r, bool synced);
/* Open @file as the area's owner, ck_init() and enable @events (or die). */
void ck_attach(struct ck *c, struct hyp_rig *r, const char *file,
	       double wait_s, pid_t pid, bool synced, const char *events);
/* The rig_* callback: events and losses to the CPU's checker. */
int ck_event(void *ctx, const struct hyp_ev *ev, int cpu, uint64_t lost);
/* One time sync if c->sync_every_ns passed since the last one. */
void ck_sync(struct ck *c);
/* Print what CPU @cpu's checker and the reader (@st) counted. */
void ck_report_cpu(struct ck *c, int cpu, struct hvtrace_cpu_stats *st);
/* Every CPU has c->want complete calls (or pairs) since the mark. */
bool ck_all_cpus(struct ck *c, bool pairs);
void ck_mark(struct ck *c);

#endif /* HVT_HYP_CHECKS_H */
