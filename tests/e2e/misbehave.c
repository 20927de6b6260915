// SPDX-License-Identifier: MIT
/*
 * A misbehaving guest: a program in guest A maps A's whole trace area and
 * keeps overwriting random ranges of it with random bytes (header,
 * control page, CPU metadata, descriptors, pages), while a workload in A
 * keeps writing real events and hvtraced reads A for a subscriber.
 * At the same time guest B, attached to the same hvtraced, runs the exact
 * delivery workload.
 *
 *   - hvtraced keeps running and answering;
 *   - what it hands on from A is only pages libtraceevent's kbuffer
 *     parses (every page of A is decoded here);
 *   - it counts A's malformed data as errors (STATS);
 *   - B gets every event exactly once, in order, with nothing lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "e2e.h"

#define COUNT 10000

struct bad {
	uint32_t sub;
	struct tep_handle *tep;
	uint64_t pages, records;
};

static void bad_record(void *arg, struct tep_handle *tep, struct tep_event *ev,
		       struct tep_record *rec)
{
	struct bad *b = arg;

	(void)tep;
	(void)ev;
	(void)rec;
	b->records++;
}

static void bad_page(void *arg, const struct hvt_msg *m)
{
	struct bad *b = arg;

	if (m->type == HVT_MSG_PAGE && m->req == b->sub) {
		b->pages++;
		/* Fails the test if kbuffer refuses the page. */
		h_decode_page(b->tep, &m->u.page, bad_record, b);
	}
}

int main(void)
{
	static struct e_seq s;
	struct hvt_m_stats st[8];
	struct hvt_remote_rec ra, rb;
	struct e_guest a, b;
	struct hvt_msg m, r;
	struct bad bad = {0};
	const char *done = NULL, *l;
	char run[256];
	uint64_t deadline, errors = 0;
	unsigned int n, cpu;

	e_init(NULL);
	/* B first: its workload waits for the enable, so no page of it
	 * comes while A starts. */
	snprintf(run, sizeof(run),
		 "ue_seq --threads 2 --count %d --rate 1000 --migrate 301 "
		 "--hold",
		 COUNT);
	e_guest_start(&b, "good", run, NULL);
	e_wait_event(&b, "hvt_seq", 60000);
	e_seq_init(&s, &b, 2, COUNT);
	/* A: a workload writing real events, and 5 s later the scribbler. */
	e_guest_start(&a, "bad",
		      "ue_seq --threads 2 --duration 120 --rate 1000 & "
		      "sleep 5; area_scribble --seconds 40 --seed 7 "
		      "--full-every 0; sleep 600",
		      NULL);
	e_wait_event(&a, "hvt_seq", 60000);
	bad.tep = h_tep(e_dc, a.remote);
	e_page_hook = bad_page;
	e_page_hook_arg = &bad;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = a.remote;
	m.u.subscribe.cpu = -1;
	t_ok(hvtrace_daemon_call(e_dc, &m, &r, 10000, e_seq_dispatch, NULL));
	t_eq(r.u.result.status, 0);
	bad.sub = r.u.result.id;
	e_enable(&a, "hvt_seq", true);
	e_console_line(&a, "area_scribble: scribbling over", NULL, 60000);
	e_enable(&b, "hvt_seq", true);
	deadline = h_now_ns() + 60000000000ull;
	while (!done) {
		if (h_now_ns() > deadline)
			t_fail("guest %s did not finish within 60 s", b.name);
		if ((l = e_console_line(&b, "ue_seq: done ", "ue_seq: error",
					0)))
			done = strdup(l);
		e_seq_collect(NULL, 500, 0);
	}
	if (e_console_line(&a, "area_scribble: ", NULL, 0))
		t_fail("the scribbler ended before the good guest's run did");
	e_drain(&b, e_seq_dispatch, NULL);
	e_drain(&a, e_seq_dispatch, NULL);

	/* B: exact. */
	e_seq_check_exact(&s, COUNT);
	t_equ(s.lost, 0);
	t_equ(s.dropped, 0);
	if (e_kv(done, "wrote") != 2 * COUNT)
		t_fail("%s: %s", b.name, done);
	n = e_stats(&b, st, 8);
	for (cpu = 0; cpu < n; cpu++) {
		uint64_t *v = st[cpu].v;

		if (v[E_ST_READ] != v[E_ST_WRITTEN] || v[E_ST_LOST] ||
		    v[E_ST_ERRORS])
			t_fail("%s cpu %u: read %llu lost %llu written %llu "
			       "errors %llu",
			       b.name, cpu, (unsigned long long)v[E_ST_READ],
			       (unsigned long long)v[E_ST_LOST],
			       (unsigned long long)v[E_ST_WRITTEN],
			       (unsigned long long)v[E_ST_ERRORS]);
	}

	/* A: errors counted, hvtraced alive and still serving both. */
	n = e_stats(&a, st, 8);
	for (cpu = 0; cpu < n; cpu++) {
		uint64_t *v = st[cpu].v;

		printf("%s cpu %u: written %llu read %llu lost %llu errors "
		       "%llu\n",
		       a.name, cpu, (unsigned long long)v[E_ST_WRITTEN],
		       (unsigned long long)v[E_ST_READ],
		       (unsigned long long)v[E_ST_LOST],
		       (unsigned long long)v[E_ST_ERRORS]);
		errors += v[E_ST_ERRORS];
	}
	if (!errors)
		t_fail("hvtraced counted no error in %s's scribbled area",
		       a.name);
	e_remote(&a, &ra);
	e_remote(&b, &rb);
	t_eq(rb.state, HVT_REMOTE_CONNECTED);
	printf("misbehave: %s scribbled its area: hvtraced counted %llu "
	       "errors and handed on %llu pages (%llu records, all parsed by "
	       "kbuffer); %s got %llu events exactly\n",
	       a.name, (unsigned long long)errors,
	       (unsigned long long)bad.pages, (unsigned long long)bad.records,
	       b.name, (unsigned long long)s.n);
	tep_free(bad.tep);
	e_seq_free(&s);
	e_guest_stop(&b);
	e_guest_stop(&a);
	h_pass();
	return 0;
}
