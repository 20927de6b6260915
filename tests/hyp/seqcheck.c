// SPDX-License-Identifier: MIT
/*
 * hvt-hyp: the per-CPU checker of hypervisor event streams (seqcheck.h).
 *
 * Field checks apply always: every host_hcall must carry exactly the
 * arguments hvt_hc_schedule() gives for its call number and the result the
 * hypercall semantics (hvt_hyp/hcall.h, re-implemented here) give for
 * them, and timestamps never go backwards on a CPU.  Structure checks
 * (enter, [hcall,] exit; consecutive call numbers) apply in strict mode.
 */
#include <stdarg.h>
#include <string.h>

#include <hvt_hyp/hcall.h>

#include "seqcheck.h"

void seq_error(struct seqck *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->errors++) {
		int n = snprintf(s->first_error, sizeof(s->first_error),
				 "cpu%d: ", s->cpu);

		va_start(ap, fmt);
		vsnprintf(s->first_error + n, sizeof(s->first_error) - n, fmt,
			  ap);
		va_end(ap);
	}
}

void seq_init(struct seqck *s, int cpu, bool strict, bool synced)
{
	memset(s, 0, sizeof(*s));
	s->cpu = cpu;
	s->strict = strict;
	s->synced = synced;
	s->last_type = -1;
}

/* The semantics of the rig's hypercalls, independently of the image. */
uint64_t seq_expected_ret(uint64_t func, uint64_t a0, uint64_t a1,
			  uint64_t a2, int cpu)
{
	switch (func) {
	case HVT_HC_NOP:
		return 0;
	case HVT_HC_ADD:
		return a0 + a1 + a2;
	case HVT_HC_MIX:
		return (a0 * 0x9e3779b97f4a7c15ULL) ^ (a1 >> 7) ^ (a2 << 3);
	case HVT_HC_CPU:
		return (uint64_t)cpu;
	case HVT_HC_DONE:
		return 0;
	default:
		return (uint64_t)-1;
	}
}

static void seq_add_trans(struct seqck *s, uint64_t after, uint64_t pairs,
			  uint64_t silent)
{
	if (s->ntrans < SEQ_MAX_TRANS) {
		s->trans[s->ntrans].after = after;
		s->trans[s->ntrans].pairs = pairs;
		s->trans[s->ntrans].silent = silent;
	}
	s->ntrans++;
}

/* A call ended (hyp_exit): account it as a triple or a pair. */
static void seq_call_done(struct seqck *s)
{
	if (!s->cur_hcall) {
		s->pairs++;
		s->pairs_total++;
		s->pairs_since_mark++;
		return;
	}
	if (s->cur_done) {
		if (s->have_triple && s->done_calls != s->last_i + 1 + s->pairs)
			seq_error(s, "HVT_HC_DONE reports %llu calls after call %llu and %llu uncounted calls",
				  (unsigned long long)s->done_calls,
				  (unsigned long long)s->last_i,
				  (unsigned long long)s->pairs);
		s->saw_done = true;
		return;
	}
	s->triples++;
	s->triples_since_mark++;
	if (!s->have_first) {
		s->have_first = true;
		s->first_i = s->cur_i;
	}
	if (s->have_triple) {
		uint64_t gap = s->cur_i - s->last_i - 1;

		if (s->cur_i <= s->last_i) {
			seq_error(s, "call %llu after call %llu",
				  (unsigned long long)s->cur_i,
				  (unsigned long long)s->last_i);
		} else if (gap == s->pairs) {
			if (s->pairs)
				seq_add_trans(s, s->last_i, s->pairs, 0);
		} else if (!s->pairs) {
			/* Calls that left no event: everything disabled. */
			seq_add_trans(s, s->last_i, 0, gap);
		} else {
			seq_error(s, "calls %llu..%llu: %llu skipped but %llu enter/exit pairs seen",
				  (unsigned long long)s->last_i,
				  (unsigned long long)s->cur_i,
				  (unsigned long long)gap,
				  (unsigned long long)s->pairs);
		}
	}
	s->have_triple = true;
	s->last_i = s->cur_i;
	s->pairs = 0;
}

static void seq_check_hcall(struct seqck *s, const struct hyp_ev *ev)
{
	const struct hvt_hyp_rec_host_hcall *h = &ev->u.host_hcall;
	uint64_t f, a0, a1, a2, want;

	if (h->func == HVT_HC_DONE) {
		if (h->ret != 0)
			seq_error(s, "HVT_HC_DONE returned %lld", (long long)h->ret);
		s->done_calls = h->a0;
		s->done_bad = h->a1;
		if (h->a1)
			seq_error(s, "the payload saw %llu wrong hypercall results",
				  (unsigned long long)h->a1);
		return;
	}
	hvt_hc_schedule(h->a0, (uint32_t)s->cpu, &f, &a0, &a1, &a2);
	if (h->func != f || h->a1 != a1 || h->a2 != a2)
		seq_error(s, "call %llu: func 0x%llx a1 0x%llx a2 0x%llx, the payload makes func 0x%llx a1 0x%llx a2 0x%llx",
			  (unsigned long long)h->a0,
			  (unsigned long long)h->func,
			  (unsigned long long)h->a1,
			  (unsigned long long)h->a2, (unsigned long long)f,
			  (unsigned long long)a1, (unsigned long long)a2);
	want = seq_expected_ret(h->func, h->a0, h->a1, h->a2, s->cpu);
	if ((uint64_t)h->ret != want)
		seq_error(s, "call %llu (func 0x%llx): ret %lld, expected %lld",
			  (unsigned long long)h->a0,
			  (unsigned long long)h->func, (long long)h->ret,
			  (long long)want);
}

void seq_event(struct seqck *s, const struct hyp_ev *ev)
{
	if (s->have_ts && ev->ts < s->last_ts)
		seq_error(s, "timestamp went back from %llu to %llu",
			  (unsigned long long)s->last_ts,
			  (unsigned long long)ev->ts);
	s->last_ts = ev->ts;
	s->have_ts = true;
	if (ev->type < 0) {
		s->unknown++;
		seq_error(s, "a record that is no hypervisor event (%u bytes)",
			  ev->len);
		return;
	}
	s->n[ev->type]++;
	s->last_type = ev->type;
	if (ev->type == HVT_HYP_EVENT_host_hcall)
		seq_check_hcall(s, ev);
	if (ev->type == HVT_HYP_EVENT_selftest) {
		/* Ids are the host's sync tokens: increasing from one host. */
		if (s->strict && s->have_selftest &&
		    ev->u.selftest.id <= s->last_selftest)
			seq_error(s, "selftest id %llu after %llu",
				  (unsigned long long)ev->u.selftest.id,
				  (unsigned long long)s->last_selftest);
		s->last_selftest = ev->u.selftest.id;
		s->have_selftest = true;
	}
	if (ev->type == HVT_HYP_EVENT_hyp_enter &&
	    (ev->u.hyp_enter.ec != 0x16 || ev->u.hyp_enter.iss != 0))
		seq_error(s, "hyp_enter ec=0x%x iss=0x%x: the payload only makes hvc #0",
			  ev->u.hyp_enter.ec, ev->u.hyp_enter.iss);

	if (!s->strict)
		return;
	if (!s->synced) {
		if (ev->type != HVT_HYP_EVENT_hyp_enter) {
			s->skipped++;
			return;
		}
		s->synced = true;
	}
	switch (ev->type) {
	case HVT_HYP_EVENT_hyp_enter:
		if (s->state != 0)
			seq_error(s, "hyp_enter inside a call (state %d)",
				  s->state);
		if (s->saw_done)
			seq_error(s, "an event after HVT_HC_DONE");
		s->state = 1;
		s->enter_elr = ev->u.hyp_enter.elr;
		s->cur_hcall = false;
		s->cur_done = false;
		break;
	case HVT_HYP_EVENT_host_hcall:
		if (s->state != 1)
			seq_error(s, "host_hcall outside hyp_enter/hyp_exit (state %d)",
				  s->state);
		s->state = 2;
		s->cur_hcall = true;
		s->cur_i = ev->u.host_hcall.a0;
		s->cur_done = ev->u.host_hcall.func == HVT_HC_DONE;
		break;
	case HVT_HYP_EVENT_hyp_exit:
		if (s->state == 0) {
			seq_error(s, "hyp_exit without hyp_enter");
			break;
		}
		if (ev->u.hyp_exit.elr != s->enter_elr)
			seq_error(s, "hyp_exit to 0x%llx, entered from 0x%llx",
				  (unsigned long long)ev->u.hyp_exit.elr,
				  (unsigned long long)s->enter_elr);
		s->state = 0;
		seq_call_done(s);
		break;
	case HVT_HYP_EVENT_selftest:
		if (s->state != 0)
			seq_error(s, "selftest inside a call");
		break;
	default:
		break;
	}
}

/* Events were lost here: the call structure cannot be followed across. */
void seq_lost(struct seqck *s, uint64_t lost)
{
	s->lost += lost;
	s->synced = false;
	s->state = 0;
	s->have_triple = false;
	s->pairs = 0;
}

void seq_mark(struct seqck *s)
{
	s->triples_since_mark = 0;
	s->pairs_since_mark = 0;
}
