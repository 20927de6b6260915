// SPDX-License-Identifier: MIT
/*
 * Armed wakeups through the agent (docs/design.md, "Waking the reader"):
 * hvtraced polls its rings once a minute here (--poll-us and
 * --poll-max-us 60 s, a backstop of an hour), so an event can reach a
 * subscriber within the test's time only by the doorbell: the writer
 * rings the agent, the agent sends DOORBELL, the daemon reads at once
 * (then settles with one more round 1 ms later, finds nothing, and arms
 * again).
 *
 * A workload writes 8 events 200 ms apart; each must arrive (decoded by
 * libtraceevent, every field checked) before the next is written, and the
 * remote's counters must show doorbells and the daemon asleep.  With
 * --no-wakeups the first event does not arrive.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT 8

/* Receive until record @want has arrived (within @timeout_ms). */
static void wait_record(struct hvtrace_daemon *dc, struct tep_handle *tep,
			struct h_e2e *seen, unsigned int want, int timeout_ms)
{
	uint64_t deadline = h_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct hvt_msg m;
	int ret;

	while (seen->n < want) {
		if (h_now_ns() > deadline)
			t_fail("record %u did not arrive within %d ms: no "
			       "doorbell woke the daemon (it polls once a "
			       "minute here)",
			       want - 1, timeout_ms);
		ret = hvtrace_daemon_recv(dc, &m, 200);
		if (ret < 0)
			t_fail("%s", hvtrace_last_error());
		if (ret && m.type == HVT_MSG_PAGE)
			h_decode_page(tep, &m.u.page, h_e2e_record, seen);
	}
}

static void run(struct hvtrace_daemon *dc, struct h_agent *a)
{
	static unsigned int counts[COUNT];
	struct h_e2e seen = {.total = COUNT, .count = counts};
	uint64_t bells0 = h_info_u64(dc, a->remote, "wake_doorbells");
	uint64_t sleeps0 = h_info_u64(dc, a->remote, "wake_sleeps");
	struct tep_handle *tep;
	const char *line;
	char text[256];
	struct h_proc w;
	unsigned int i;

	memset(counts, 0, sizeof(counts));
	h_proc_start(&w, "guest/workloads/ue_writer", "--socket", a->sock,
		     "--count", "8", "--gap-ms", "200", "--wait-enable",
		     "20000", NULL);
	seen.pid = w.pid;
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "registered id=%d", &seen.id) != 1)
		t_fail("workload: %s", line);
	tep = h_tep(dc, a->remote);
	t_eq(h_result(dc, HVT_MSG_ENABLE, a->remote, 1, "hvt_e2e", text,
		      sizeof(text)),
	     0);
	line = h_proc_line(&w, 15000);
	if (strcmp(line, "enabled"))
		t_fail("workload: %s", line);
	for (i = 0; i < COUNT; i++) {
		line = h_proc_line(&w, 15000);
		if (strncmp(line, "wrote seq=", 10))
			t_fail("workload: %s", line);
		wait_record(dc, tep, &seen, i + 1, 10000);
	}
	t_eq(h_proc_wait(&w, 10000), 0);
	for (i = 0; i < COUNT; i++)
		if (counts[i] != 1)
			t_fail("seq %u arrived %u times", i, counts[i]);
	/* Every record arrived although the daemon polls once a minute:
	 * doorbells brought them (one may bring two under load). */
	if (h_info_u64(dc, a->remote, "wake_doorbells") - bells0 < 1)
		t_fail("no doorbell counted");
	/* Under load a doorbell may come while the daemon still waits for
	 * the BARRIER answer: then it did not count as asleep that time. */
	if (h_info_u64(dc, a->remote, "wake_sleeps") - sleeps0 < 1)
		t_fail("the daemon never slept");
	printf("%u records, rung for: %llu doorbells, %llu sleeps\n",
	       seen.n,
	       (unsigned long long)(h_info_u64(dc, a->remote,
					       "wake_doorbells") -
				    bells0),
	       (unsigned long long)(h_info_u64(dc, a->remote, "wake_sleeps") -
				    sleeps0));
	tep_free(tep);
}

int main(void)
{
	struct hvtrace_daemon *dc;
	struct h_agent a;
	struct hvt_msg m, r;

	dc = h_start("--poll-us 60000000 --poll-max-us 60000000 "
		     "--wake-backstop-ms 3600000");
	h_agent_start(&a, "wk", NULL);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = a.remote;
	m.u.subscribe.cpu = -1;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 10000, NULL, NULL));
	t_eq(r.u.result.status, 0);
	run(dc, &a);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
