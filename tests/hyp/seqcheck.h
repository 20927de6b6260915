/* SPDX-License-Identifier: MIT */
/*
 * hvt-hyp: the per-CPU model of what the hypervisor must have written.
 *
 * Each hypercall is traced as hyp_enter, host_hcall, hyp_exit (a "triple";
 * an "pair" when host_hcall is disabled).  The EL1 payload makes its calls
 * in the order hvt_hc_schedule() gives, so every host_hcall names its call
 * number (a0) and its result is predictable.  The checker follows the
 * events of one CPU and records, between consecutive triples, the pairs
 * seen and the call numbers skipped, which is what the enable/disable test
 * reads back.
 */
#ifndef HVT_HYP_SEQCHECK_H
#define HVT_HYP_SEQCHECK_H

#include "hyp_tool.h"

#define SEQ_MAX_TRANS	16

/* Between two triples: pairs seen and calls that left no event at all. */
struct seq_trans {
	uint64_t after;		/* call number of the triple before */
	uint64_t pairs;		/* enter/exit pairs without host_hcall */
	uint64_t silent;	/* calls with no event at all */
};

struct seqck {
	int cpu;
	bool strict;		/* check the call structure too */
	bool synced;		/* false: skip to the next hyp_enter */
	int state;		/* 0 idle, 1 after enter, 2 after hcall */
	uint64_t enter_elr;
	bool cur_hcall;
	uint64_t cur_i;
	bool cur_done;
	uint64_t last_ts;
	bool have_ts;
	bool have_triple;
	uint64_t last_i;
	uint64_t pairs;
	bool have_first;
	uint64_t first_i;
	bool saw_done;
	uint64_t done_calls, done_bad;
	uint64_t last_selftest;
	bool have_selftest;
	int last_type;

	uint64_t n[HVT_HYP_NR_EVENTS];
	uint64_t triples, pairs_total, skipped, lost, unknown;
	uint64_t triples_since_mark, pairs_since_mark;

	int ntrans;
	struct seq_trans trans[SEQ_MAX_TRANS];

	uint64_t errors;
	char first_error[256];
};

void seq_init(struct seqck *s, int cpu, bool strict, bool synced);
void seq_event(struct seqck *s, const struct hyp_ev *ev);
void seq_lost(struct seqck *s, uint64_t lost);
void seq_mark(struct seqck *s);
void seq_error(struct seqck *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint64_t seq_expected_ret(uint64_t func, uint64_t a0, uint64_t a1,
			  uint64_t a2, int cpu);

#endif /* HVT_HYP_SEQCHECK_H */
