// SPDX-License-Identifier: MIT
/*
 * A DRAIN reports the events a consume-mode writer dropped after its last
 * page.  A tool subscribes to an agent's one-CPU 256 KiB area and enables
 * the event; hvtraced is then stopped (SIGSTOP) while ue_seq writes COUNT
 * events from one thread, so the ring fills and the writer drops the rest.
 * No page the writer committed counts those drops: they came after the
 * last one.  hvtraced resumes and the tool asks for a DRAIN: the pages it
 * gets before the answer must hold every event the writer committed, and
 * their lost counts every event it dropped (read + lost == written), which
 * the daemon can only tell from the CPU's lost counter, as an empty PAGE.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT 20000

struct tally {
	int id;
	uint32_t sub;
	uint64_t events, lost;
	struct tep_handle *tep;
};

static void count_rec(void *arg, struct tep_handle *t, struct tep_event *ev,
		      struct tep_record *rec)
{
	struct tally *y = arg;

	if (ev && ev->id == y->id)
		y->events++;
}

static void on_msg(void *arg, const struct hvt_msg *m)
{
	struct tally *y = arg;

	if (m->type != HVT_MSG_PAGE || m->req != y->sub)
		return;
	y->lost += m->u.page.lost_events;
	h_decode_page(y->tep, &m->u.page, count_rec, y);
}

int main(void)
{
	struct hvtrace_daemon *dc;
	struct tally y = {0};
	struct h_agent a;
	struct h_proc w;
	char text[256], count[16];
	unsigned long long wrote, dropped, skipped, failed;
	const char *line;

	dc = h_start(NULL);
	h_agent_start(&a, "drainlost", "--size 256K --cpus 1");
	snprintf(count, sizeof(count), "%d", COUNT);
	h_proc_start(&w, "guest/workloads/ue_seq", "--socket", a.sock,
		     "--threads", "1", "--count", count, "--wait-enable",
		     "30000", NULL);
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "ue_seq: registered id=%d", &y.id) != 1)
		t_fail("workload: %s", line);
	y.tep = h_tep(dc, a.remote);
	y.sub = h_subscribe(dc, a.remote, 0);
	t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "hvt_seq", text,
		      sizeof(text)),
	     0);
	t_ok(kill(h_dpid, SIGSTOP));
	do
		line = h_proc_line(&w, 30000);
	while (strncmp(line, "ue_seq: done ", 13));
	if (sscanf(line,
		   "ue_seq: done wrote=%llu dropped=%llu skipped=%llu "
		   "failed=%llu",
		   &wrote, &dropped, &skipped, &failed) != 4)
		t_fail("workload: %s", line);
	t_eq(h_proc_wait(&w, 10000), 0);
	t_ok(kill(h_dpid, SIGCONT));
	printf("ue_seq: wrote %llu, dropped %llu\n", wrote, dropped);
	if (!dropped || wrote + dropped != COUNT)
		t_fail("the ring did not fill: wrote %llu, dropped %llu of %d",
		       wrote, dropped, COUNT);

	h_drain(dc, a.remote, on_msg, &y);
	printf("tool after DRAIN: %llu events, %llu lost\n",
	       (unsigned long long)y.events, (unsigned long long)y.lost);
	t_equ(y.events, wrote);
	t_equ(y.lost, dropped);
	tep_free(y.tep);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
