// SPDX-License-Identifier: MIT
/*
 * Enabling and disabling from the host takes effect in the running guest,
 * with nothing restarted.  The workload (ue_seq --duration) runs two
 * threads that count iterations at 200 a second and write an event only
 * while hvt_seq is enabled, so a gap in the numbers shows when it was
 * off:
 *
 *   1. registered, never enabled: no event arrives (1.5 s);
 *   2. enabled: events arrive, and the guest reports seeing the bit set;
 *   3. disabled: the guest reports it, and once the events in flight are
 *      read (DRAIN) no further one arrives for 2 s while the workload
 *      keeps counting;
 *   4. enabled again: events arrive again, numbered after a gap (the
 *      iterations that ran while disabled wrote nothing), each exactly
 *      once and in order, every field right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"

#define THREADS 2
#define RATE	200
#define SECONDS 60

static uint32_t max_seen(const struct e_seq *s, unsigned int t)
{
	uint32_t q, m = 0;

	for (q = 0; q < s->max_seq; q++)
		if (s->seen[t][q])
			m = q + 1;
	return m; /* one past the highest seq seen, 0: none */
}

int main(void)
{
	static struct e_seq s;
	struct e_guest g;
	const char *l;
	char run[256];
	uint64_t n0, n1, t0;
	uint32_t before[THREADS], q, t, off_at, on_at;

	e_init(NULL);
	snprintf(run, sizeof(run),
		 "ue_seq --threads %d --duration %d --rate %d --hold", THREADS,
		 SECONDS, RATE);
	e_guest_start(&g, "enable", run, NULL);
	e_wait_event(&g, "hvt_seq", 60000);
	e_seq_init(&s, &g, THREADS, SECONDS * RATE + 1000);

	/* 1. Registered but disabled: nothing is written. */
	e_seq_collect(&s, 1500, 0);
	e_drain(&g, e_seq_dispatch, NULL);
	if (s.n)
		t_fail("%llu events arrived before the host enabled any",
		       (unsigned long long)s.n);

	/* 2. Enabled: the guest sees the bit and writes. */
	t0 = h_now_ns();
	e_enable(&g, "hvt_seq", true);
	l = e_console_line(&g, "ue_seq: t0 enabled at seq ", "ue_seq: error",
			   20000);
	on_at = (uint32_t)strtoul(l, NULL, 10);
	e_seq_collect(&s, 20000, 200);
	if (s.n < 200)
		t_fail("only %llu events within 20 s of enabling",
		       (unsigned long long)s.n);
	printf("enabled: guest saw it at seq %u; 200 events within %.0f ms\n",
	       on_at, (double)(h_now_ns() - t0) / 1e6);

	/* 3. Disabled: the guest sees it; after what was in flight, no more
	 *    events while the workload keeps counting. */
	e_enable(&g, "hvt_seq", false);
	l = e_console_line(&g, "ue_seq: t0 disabled at seq ", "ue_seq: error",
			   20000);
	off_at = (uint32_t)strtoul(l, NULL, 10);
	e_seq_collect(&s, 300, 0);
	e_drain(&g, e_seq_dispatch, NULL);
	n0 = s.n;
	for (t = 0; t < THREADS; t++)
		before[t] = max_seen(&s, t);
	e_seq_collect(&s, 2000, 0);
	e_drain(&g, e_seq_dispatch, NULL);
	n1 = s.n;
	if (n1 != n0)
		t_fail("%llu events arrived while hvt_seq was disabled",
		       (unsigned long long)(n1 - n0));
	if (before[0] > off_at + 1)
		t_fail("thread 0 wrote seq %u after it saw the disable at %u",
		       before[0] - 1, off_at);
	printf("disabled: guest saw it at seq %u; no event for 2 s (%llu so "
	       "far)\n",
	       off_at, (unsigned long long)n0);

	/* 4. Enabled again: more events, after a gap. */
	e_enable(&g, "hvt_seq", true);
	l = e_console_line(&g, "ue_seq: t0 enabled at seq ", "ue_seq: error",
			   20000);
	on_at = (uint32_t)strtoul(l, NULL, 10);
	e_seq_collect(&s, 20000, n0 + 200);
	e_drain(&g, e_seq_dispatch, NULL);
	if (s.n < n0 + 200)
		t_fail("only %llu events within 20 s of enabling again",
		       (unsigned long long)(s.n - n0));
	for (t = 0; t < THREADS; t++) {
		uint32_t first = 0;

		for (q = before[t]; q < s.max_seq; q++)
			if (s.seen[t][q]) {
				first = q;
				break;
			}
		if (!first)
			t_fail("thread %u wrote nothing after the re-enable",
			       t);
		/* 2 s at RATE per second went by while disabled. */
		if (first < before[t] + RATE)
			t_fail("thread %u: seq %u right after %u: no gap while "
			       "disabled",
			       t, first, before[t]);
		printf("thread %u: last seq before the disable %u, first after "
		       "the re-enable %u\n",
		       t, before[t] - 1, first);
	}
	printf("enable: %llu events in all; guest saw the re-enable at seq "
	       "%u\n",
	       (unsigned long long)s.n, on_at);
	t_equ(s.lost, 0);
	e_seq_free(&s);
	e_guest_stop(&g);
	h_pass();
	return 0;
}
