// SPDX-License-Identifier: MIT
/*
 * Two guests traced at once by one hvtraced, each separately: no
 * cross-talk.  Both register the same event name (and, with fresh
 * registries, get the same id), write at the same time, and tag every
 * record with their own host name, which is the guest's name:
 *
 *   - each subscription carries only its guest's records (the tag), all
 *     of them exactly once and in order, with no loss;
 *   - each remote's registry, counters and clock are its own: per-CPU
 *     read + lost == written matches what that guest wrote;
 *   - enabling the event on one guest enables it there only: the other
 *     guest's workload keeps waiting for its own enable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define COUNT_A 8000
#define COUNT_B 6000

static void check_stats(struct e_guest *g, const struct e_seq *s,
			uint64_t expect)
{
	struct hvt_m_stats st[8];
	unsigned int n, cpu;
	uint64_t written = 0;

	n = e_stats(g, st, 8);
	for (cpu = 0; cpu < n; cpu++) {
		uint64_t *v = st[cpu].v;

		if (v[E_ST_READ] + v[E_ST_LOST] != v[E_ST_WRITTEN] ||
		    v[E_ST_LOST] || v[E_ST_READ] != s->per_cpu[cpu])
			t_fail("%s cpu %u: read %llu lost %llu written %llu, "
			       "received %llu",
			       g->name, cpu, (unsigned long long)v[E_ST_READ],
			       (unsigned long long)v[E_ST_LOST],
			       (unsigned long long)v[E_ST_WRITTEN],
			       (unsigned long long)s->per_cpu[cpu]);
		written += v[E_ST_WRITTEN];
	}
	if (written != expect)
		t_fail("%s: hvtraced counted %llu written, expected %llu",
		       g->name, (unsigned long long)written,
		       (unsigned long long)expect);
}

int main(void)
{
	static struct e_seq sa, sb;
	struct hvt_remote_rec ra, rb;
	struct e_guest a, b;
	const char *da = NULL, *db = NULL;
	char run_a[256], run_b[256];
	uint64_t deadline;

	e_init(NULL);
	snprintf(run_a, sizeof(run_a),
		 "ue_seq --threads 2 --count %d --rate 2000 --hold", COUNT_A);
	snprintf(run_b, sizeof(run_b),
		 "ue_seq --threads 3 --count %d --rate 1500 --migrate 500 "
		 "--hold",
		 COUNT_B);
	e_guest_start(&a, "a", run_a, NULL);
	e_guest_start(&b, "b", run_b, NULL);
	e_wait_event(&a, "hvt_seq", 60000);
	e_wait_event(&b, "hvt_seq", 60000);
	e_remote(&a, &ra);
	e_remote(&b, &rb);
	if (ra.id == rb.id)
		t_fail("both guests are remote %u", ra.id);
	e_seq_init(&sa, &a, 2, COUNT_A);
	e_seq_init(&sb, &b, 3, COUNT_B);
	printf("hvt_seq is id %d on %s and id %d on %s\n", sa.id, a.name, sb.id,
	       b.name);
	e_enable(&a, "hvt_seq", true);
	e_seq_collect(&sa, 30000, 1000);
	if (sa.n < 1000)
		t_fail("%s: only %llu events after the enable", a.name,
		       (unsigned long long)sa.n);
	if (sb.n || e_console_line(&b, "ue_seq: enabled", NULL, 0))
		t_fail("enabling hvt_seq on %s enabled it on %s too", a.name,
		       b.name);
	e_enable(&b, "hvt_seq", true);
	deadline = h_now_ns() + 80000000000ull;
	while (!da || !db) {
		const char *l;

		if (h_now_ns() > deadline)
			t_fail("the workloads did not finish within 80 s");
		if (!da && (l = e_console_line(&a, "ue_seq: done ",
					       "ue_seq: error", 0)))
			da = strdup(l);
		if (!db && (l = e_console_line(&b, "ue_seq: done ",
					       "ue_seq: error", 0)))
			db = strdup(l);
		e_seq_collect(NULL, 200, 0);
	}
	e_drain(&a, e_seq_dispatch, NULL);
	e_drain(&b, e_seq_dispatch, NULL);
	if (e_kv(da, "wrote") != 2 * COUNT_A ||
	    e_kv(db, "wrote") != 3 * COUNT_B)
		t_fail("the guests wrote: %s / %s", da, db);
	e_seq_check_exact(&sa, COUNT_A);
	e_seq_check_exact(&sb, COUNT_B);
	t_equ(sa.other, 0);
	t_equ(sb.other, 0);
	t_equ(sa.lost + sb.lost, 0);
	check_stats(&a, &sa, 2 * COUNT_A);
	check_stats(&b, &sb, 3 * COUNT_B);
	printf("two guests: %s delivered %llu events, %s %llu, each only its "
	       "own\n",
	       a.name, (unsigned long long)sa.n, b.name,
	       (unsigned long long)sb.n);
	e_seq_free(&sa);
	e_seq_free(&sb);
	e_guest_stop(&a);
	e_guest_stop(&b);
	h_pass();
	return 0;
}
