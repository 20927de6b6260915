// SPDX-License-Identifier: MIT
/*
 * A remote's clock model travels in its page stream, and a reader converts
 * with it locally exactly as hvtraced would.
 *
 * Order: a subscription's first message after the RESULT of its SUBSCRIBE
 * is a CLOCK of its remote (before any PAGE); time-sync samples that refit
 * the model bring further CLOCKs, their generations rising and their
 * models different, interleaved with the pages; every CLOCK names the
 * subscription and its remote.
 *
 * Exactness: with the newest model the feed received,
 * hvtrace_daemon_feed_ts_to_host() gives, for timestamps around and far
 * from the model's base, the same host ns and the same error bound as
 * hvtraced's TO_HOST answers, to the nanosecond; a refit in between shows
 * as a CLOCK ahead of TO_HOST's answer (hvtraced queues it first), and
 * the comparison is then made again with the new model.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>

#include "harness.h"

#define N_TS	 8192	/* compared by batch (ns) */
#define N_ERR	 100	/* compared one by one (ns and bound) */

struct seen {
	uint32_t sub, remote, clock_id;
	unsigned int pages, clocks, pages_after_refit;
	bool clock_first;
	uint64_t gen;
	struct hvt_m_clock last;
};

static void on_msg(void *arg, const struct hvt_msg *m)
{
	struct seen *s = arg;

	if (m->type == HVT_MSG_PAGE) {
		if (!s->clocks)
			t_fail("a PAGE came before any CLOCK");
		t_equ(m->req, s->sub);
		s->pages++;
		if (s->clocks > 1)
			s->pages_after_refit++;
		return;
	}
	if (m->type != HVT_MSG_CLOCK)
		return;
	t_equ(m->req, s->sub);
	t_equ(m->chan, s->remote);
	if (!s->clocks && !s->pages)
		s->clock_first = true;
	if (m->u.clock.generation <= s->gen)
		t_fail("CLOCK generation %llu after %llu",
		       (unsigned long long)m->u.clock.generation,
		       (unsigned long long)s->gen);
	if (s->clocks && !memcmp(&m->u.clock.base_writer,
				 &s->last.base_writer,
				 sizeof(s->last) -
					 offsetof(struct hvt_m_clock,
						  base_writer)))
		t_fail("CLOCK generation %llu repeats the model",
		       (unsigned long long)m->u.clock.generation);
	t_equ(m->u.clock.clock_id, s->clock_id); /* the area's clock */
	s->gen = m->u.clock.generation;
	s->last = m->u.clock;
	s->clocks++;
}

static void check_order(struct hvtrace_daemon *dc)
{
	struct seen s = { 0 };
	struct hvt_remote_rec rec;
	struct h_agent a;
	struct h_proc w;
	struct hvt_msg m;
	char text[256];
	const char *line;
	int id, k, ret;

	h_agent_start(&a, "clkord", "--size 256K --cpus 1");
	h_proc_start(&w, "guest/workloads/ue_seq", "--socket", a.sock,
		     "--threads", "1", "--count", "3000", "--rate", "1500",
		     "--wait-enable", "30000", NULL);
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "ue_seq: registered id=%d", &id) != 1)
		t_fail("workload: %s", line);
	s.remote = a.remote;
	h_remote(dc, "clkord", &rec);
	s.clock_id = rec.clock_id;
	t_assert(s.clock_id != 0);
	s.sub = h_subscribe(dc, a.remote, 0);
	/* The very next message is the subscription's CLOCK. */
	ret = hvtrace_daemon_recv(dc, &m, 5000);
	t_eq(ret, 1);
	t_eq(m.type, HVT_MSG_CLOCK);
	on_msg(&s, &m);
	t_assert(s.clock_first);
	t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "hvt_seq", text,
		      sizeof(text)),
	     0);
	/* Two seconds of pages and time syncs (every 200 ms). */
	for (k = 0; k < 200; k++) {
		while ((ret = hvtrace_daemon_recv(dc, &m, 10)) == 1)
			on_msg(&s, &m);
		t_assert(ret == 0);
	}
	printf("order: %u CLOCKs (last generation %llu), %u PAGEs, %u after "
	       "the first refit\n",
	       s.clocks, (unsigned long long)s.gen, s.pages,
	       s.pages_after_refit);
	if (s.clocks < 3)
		t_fail("only %u CLOCKs in 2 s of 200 ms time syncs", s.clocks);
	t_assert(s.pages > 0);
	t_assert(s.pages_after_refit > 0);
	h_proc_wait(&w, 10000);
	h_agent_stop(&a);
}

/* Local and TO_HOST conversions of the same stamps under one model;
 * false when the model changed meanwhile (compare again). */
static bool compare_once(struct hvtrace_daemon_feed *f, uint32_t remote,
			 uint64_t *ts, uint64_t *ns, unsigned int *checked)
{
	struct hvtrace_clock_map before, after;
	uint64_t local, err, derr;
	unsigned int i;
	int ret;

	/* Any CLOCK already sent is applied first. */
	t_ok(hvtrace_daemon_feed_drain(f, remote));
	t_ok(hvtrace_daemon_feed_clock(f, remote, &before));
	t_assert(before.flags & HVTRACE_CLOCK_SYNCED);
	for (i = 0; i < N_TS; i++) {
		/* Around the base, before and after, and far away. */
		int64_t d = (int64_t)(i * 2654435761u % 4000000000u) -
			    2000000000;

		if (i % 10 == 0)
			d *= 1000;
		ts[i] = before.base_writer + (uint64_t)d;
	}
	ret = hvtrace_daemon_feed_to_host(f, remote, ts, ns, N_TS, NULL);
	t_ok(ret);
	for (i = 0; i < N_ERR; i++) {
		uint64_t one;

		t_ok(hvtrace_daemon_feed_to_host(f, remote, &ts[i * 61], &one,
						 1, &derr));
		t_ok(hvtrace_daemon_feed_ts_to_host(f, remote, ts[i * 61],
						    &local, &err));
		t_equ(local, one);
		if (err != derr)
			t_fail("bound at ts %llu: local %llu, TO_HOST %llu",
			       (unsigned long long)ts[i * 61],
			       (unsigned long long)err,
			       (unsigned long long)derr);
	}
	t_ok(hvtrace_daemon_feed_clock(f, remote, &after));
	if (after.generation != before.generation)
		return false;
	for (i = 0; i < N_TS; i++) {
		t_ok(hvtrace_daemon_feed_ts_to_host(f, remote, ts[i], &local,
						    NULL));
		if (local != ns[i])
			t_fail("ts %llu: local %llu, TO_HOST %llu",
			       (unsigned long long)ts[i],
			       (unsigned long long)local,
			       (unsigned long long)ns[i]);
	}
	*checked += N_TS;
	return true;
}

static void check_exact(struct hvtrace_daemon *dc)
{
	struct hvtrace_daemon_feed *f;
	struct hvtrace_daemon_page *pg;
	struct h_agent a;
	uint64_t *ts, *ns, local, err;
	unsigned int checked = 0, tries;

	h_agent_start(&a, "clkexact", "--size 256K --cpus 1");
	h_wait_sync(dc, "clkexact", 8, 10000);
	t_ok(hvtrace_daemon_feed_open(h_dsock, &f));
	/* No model before the subscription: a clear -ENODATA. */
	t_eq(hvtrace_daemon_feed_ts_to_host(f, a.remote, 1, &local, &err),
	     -ENODATA);
	t_ok(hvtrace_daemon_feed_subscribe(f, a.remote, -1, 0, NULL));
	while (hvtrace_daemon_feed_next(f, 0, &pg) > 0)
		free(pg);
	ts = calloc(N_TS, sizeof(*ts));
	ns = calloc(N_TS, sizeof(*ns));
	t_assert(ts && ns);
	/* Samples every 200 ms: some tries see a refit; three that do not
	 * are enough (each compares every stamp). */
	for (tries = 0; tries < 200 && checked < 3 * N_TS; tries++)
		compare_once(f, a.remote, ts, ns, &checked);
	printf("exact: %u stamps equal to TO_HOST's in %u tries\n", checked,
	       tries);
	if (checked < 3 * N_TS)
		t_fail("the model changed under every comparison");
	free(ts);
	free(ns);
	hvtrace_daemon_feed_close(f);
	h_agent_stop(&a);
}

int main(void)
{
	struct hvtrace_daemon *dc = h_start("--sync-interval 200");

	check_order(dc);
	check_exact(dc);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
