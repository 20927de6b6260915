// SPDX-License-Identifier: MIT
/*
 * Fan-out with a slow subscriber.  Two tools subscribe to the same remote;
 * one reads all the time, the other not at all while a workload writes
 * 20000 events (about 1 MB of pages).  The reading tool has the daemon's
 * default page budget (8 MiB: everything fits, however late it reads);
 * the stalled one asks for 64 KiB, which with its socket buffer holds far
 * less than 1 MB, so the daemon must drop pages for it -- and only for it:
 *
 *   - the reading tool gets every event, nothing dropped, nothing lost;
 *   - the stalled tool, once it reads, gets what was queued plus the
 *     drop counters of each CPU (in its pages, or in an empty page that
 *     reports drops no page followed), each CPU's only growing, and
 *     received + the CPUs' dropped == written exactly;
 *   - the daemon kept serving requests meanwhile, and the read positions
 *     it holds back for the stalled tool (posted once every queue has
 *     sent a page) are bounded by that tool's queue.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT	20000
#define MAX_CPUS 64

struct tally {
	int id;
	uint32_t sub;
	uint64_t events;
	uint64_t pages;
	uint64_t lost;
	uint64_t dropped_pages;	/* summed over the CPUs */
	uint64_t dropped_events;
	/* Each PAGE carries its CPU's drop totals. */
	uint64_t cpu_dropped_pages[MAX_CPUS];
	uint64_t cpu_dropped_events[MAX_CPUS];
};

static void count_rec(void *arg, struct tep_handle *tep, struct tep_event *ev,
		      struct tep_record *rec)
{
	struct tally *t = arg;

	if (ev && ev->id == t->id)
		t->events++;
}

static struct tep_handle *tep;

static void take(struct tally *t, const struct hvt_msg *m)
{
	if (m->type != HVT_MSG_PAGE || m->req != t->sub)
		return;
	t->pages++;
	t->lost += m->u.page.lost_events;
	if (m->u.page.cpu >= MAX_CPUS)
		t_fail("page of CPU %u", m->u.page.cpu);
	/* A CPU's counters only grow; the tool's loss is their sum. */
	if (m->u.page.dropped_pages < t->cpu_dropped_pages[m->u.page.cpu] ||
	    m->u.page.dropped_events < t->cpu_dropped_events[m->u.page.cpu])
		t_fail("drop counters of CPU %u went backwards",
		       m->u.page.cpu);
	t->dropped_pages += m->u.page.dropped_pages -
			    t->cpu_dropped_pages[m->u.page.cpu];
	t->dropped_events += m->u.page.dropped_events -
			     t->cpu_dropped_events[m->u.page.cpu];
	t->cpu_dropped_pages[m->u.page.cpu] = m->u.page.dropped_pages;
	t->cpu_dropped_events[m->u.page.cpu] = m->u.page.dropped_events;
	h_decode_page(tep, &m->u.page, count_rec, t);
}

int main(void)
{
	struct hvtrace_daemon *dc = h_start(NULL);
	struct hvtrace_daemon *slow;
	struct tally fast = { 0 }, st = { 0 };
	struct hvt_remote_rec rec;
	struct h_agent a;
	struct h_proc w;
	struct hvt_msg m;
	char text[256], count[16];
	const char *line;
	uint64_t deadline;
	int ret, wrote = -1, failed = -1;
	uint64_t held, queued;

	h_agent_start(&a, "fan", "--size 16M");
	if (hvtrace_daemon_open(h_dsock, &slow))
		t_fail("%s", hvtrace_last_error());
	fast.sub = h_subscribe(dc, a.remote, 0);
	st.sub = h_subscribe(slow, a.remote, 64);

	snprintf(count, sizeof(count), "%d", COUNT);
	h_proc_start(&w, "guest/workloads/ue_writer", "--socket", a.sock,
		     "--count", count, "--wait-enable", "20000", NULL);
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "registered id=%d", &fast.id) != 1)
		t_fail("workload: %s", line);
	st.id = fast.id;
	tep = h_tep(dc, a.remote);
	t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "hvt_e2e", text,
		      sizeof(text)),
	     0);

	/* Read the fast subscription; the slow one is not read at all. */
	deadline = h_now_ns() + 30000000000ull;
	while (fast.events + fast.lost < COUNT && h_now_ns() < deadline) {
		ret = hvtrace_daemon_recv(dc, &m, 200);
		if (ret < 0)
			t_fail("%s", hvtrace_last_error());
		if (ret == 1)
			take(&fast, &m);
	}
	line = h_proc_line(&w, 15000);	/* "enabled" */
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "done wrote=%d failed=%d", &wrote, &failed) != 2)
		t_fail("workload: %s", line);
	t_eq(wrote, COUNT);
	t_eq(h_proc_wait(&w, 10000), 0);
	printf("fast: %llu events in %llu pages, %llu lost, %llu dropped\n",
	       (unsigned long long)fast.events,
	       (unsigned long long)fast.pages, (unsigned long long)fast.lost,
	       (unsigned long long)fast.dropped_pages);
	t_equ(fast.events, COUNT);
	t_equ(fast.lost, 0);
	t_equ(fast.dropped_pages, 0);
	/* The daemon answered all along; it still does. */
	h_remote(dc, "fan", &rec);
	/* The read positions waiting for the stalled tool's queue: bounded
	 * by the pages that queue holds (64 KiB: 16 pages), one more per
	 * CPU, not by what the fast tool read meanwhile (ticket.c). */
	held = h_info_u64(dc, a.remote, "positions_held");
	queued = h_info_u64(dc, a.remote, "pages_queued");

	/* Now the stalled tool reads: queued pages, then the drop report. */
	deadline = h_now_ns() + 30000000000ull;
	while (st.events + st.dropped_events < COUNT &&
	       h_now_ns() < deadline) {
		ret = hvtrace_daemon_recv(slow, &m, 200);
		if (ret < 0)
			t_fail("%s", hvtrace_last_error());
		if (ret == 1)
			take(&st, &m);
	}
	printf("slow: %llu events in %llu pages, %llu pages (%llu events) "
	       "dropped, %llu lost\n",
	       (unsigned long long)st.events, (unsigned long long)st.pages,
	       (unsigned long long)st.dropped_pages,
	       (unsigned long long)st.dropped_events,
	       (unsigned long long)st.lost);
	if (!st.dropped_pages)
		t_fail("the stalled tool had nothing dropped: the test did "
		       "not fill its queue");
	t_equ(st.lost, 0);
	t_equ(st.events + st.dropped_events, COUNT);
	/* Each position held back waits for a page some queue holds, but
	 * for one per CPU (ticket.c); the stalled tool's queue holds at
	 * most 64 KiB of pages. */
	printf("read positions held back for the stalled tool: %llu; the "
	       "queues held %llu pages, %u CPUs\n",
	       (unsigned long long)held, (unsigned long long)queued,
	       rec.nr_cpus);
	if (!queued)
		t_fail("no page queued for the stalled tool: the test did not "
		       "fill its queue");
	if (held > queued + rec.nr_cpus)
		t_fail("hvtraced held %llu read positions back: more than "
		       "the queues held pages",
		       (unsigned long long)held);
	hvtrace_daemon_close(slow);
	tep_free(tep);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
