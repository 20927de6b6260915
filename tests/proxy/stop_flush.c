// SPDX-License-Identifier: MIT
/*
 * What hvtraced queued for a tool survives its end: a stop hands it on, a
 * crash leaves it to the successor; across the restart every event is
 * read once, and none is lost.
 *
 * A loopback writer fills a one-CPU consume-mode area with COUNT events
 * (about 2.4 MB in 4 KiB pages) and stops; it is attached to a private
 * hvtraced whose tool queue is 1 MiB.  A tool subscribes and reads
 * nothing for SETTLE_MS: hvtraced fills the socket and its queue for the
 * tool from the area; the rest stays in the area.  Then, while the tool
 * reads its socket to the end:
 *
 *   SIGTERM: hvtraced stops; the tool must get every page it had read
 *            (its queue is handed on), well beyond what the socket alone
 *            holds;
 *   SIGKILL: hvtraced dies with its queue; it had posted its read
 *            position only for the pages its socket took
 *            (HVTRACE_OPEN_POST_LATER), so the tool gets those.
 *
 * A new hvtraced attaches the area again from its state file and resumes
 * at the posted position; the tool subscribes again and drains.  The ids
 * read, before and after, are 0..COUNT-1, each once, in order, with no
 * loss reported.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT	  120000u
#define SETTLE_MS 500

struct tally {
	uint32_t sub;
	uint64_t next, lost, dropped, dup, gaps, pages;
};

static void count_rec(void *arg, struct tep_handle *t, struct tep_event *ev,
		      struct tep_record *rec)
{
	struct tally *y = arg;
	uint64_t id;

	(void)t;
	(void)ev;
	if (rec->size < 16)
		t_fail("a record of %d bytes", rec->size);
	memcpy(&id, (const uint8_t *)rec->data + 8, 8);
	if (id < y->next) {
		if (!y->dup++)
			printf("id %llu came again (after %llu)\n",
			       (unsigned long long)id,
			       (unsigned long long)y->next - 1);
		return;
	}
	if (id > y->next) {
		if (!y->gaps++)
			printf("ids %llu-%llu did not come\n",
			       (unsigned long long)y->next,
			       (unsigned long long)id - 1);
	}
	y->next = id + 1;
}

static struct tep_handle *tep;

static void on_msg(void *arg, const struct hvt_msg *m)
{
	struct tally *y = arg;

	if (m->type != HVT_MSG_PAGE || m->req != y->sub)
		return;
	y->pages += m->u.page.entries > 0;
	y->lost += m->u.page.lost_events;
	y->dropped = m->u.page.dropped_events;
	h_decode_page(tep, &m->u.page, count_rec, y);
}

/* Stop hvtraced with @sig and read @dc to its end, every page to @y. */
static void stop_reading(struct hvtrace_daemon *dc, struct tally *y, int sig)
{
	struct hvt_msg m;
	int ret, k;

	t_ok(kill(h_dpid, sig));
	for (k = 0; k < 1000; k++) {
		ret = hvtrace_daemon_recv(dc, &m, 10);
		if (ret < 0)
			return;
		if (ret == 1)
			on_msg(y, &m);
	}
	t_fail("hvtraced's socket stayed open 10 s after %s", strsignal(sig));
}

/*
 * @sig SIGTERM: a stop hands on the queue.  SIGKILL: the queue dies with
 * the daemon; its successor must resume at the first page no socket got.
 */
static void scenario(int sig)
{
	struct hvtrace_daemon *dc, *dc2;
	struct hvt_remote_rec rec;
	struct tally y = {0};
	uint64_t before, daemon_pages, tool_pages;
	char name[8];

	dc = sig == SIGTERM ? h_start("--client-queue 1M")
			    : h_restart("--client-queue 1M");
	snprintf(name, sizeof(name), "sf%d", sig);
	h_filled_remote(dc, name, 1, COUNT, 1024, &rec);
	tep = h_tep(dc, rec.id);
	y.sub = h_subscribe(dc, rec.id, 1024);
	usleep(SETTLE_MS * 1000);
	/* What hvtraced read, asked on another connection (pages to this
	 * one would be taken from the tally). */
	t_ok(hvtrace_daemon_open(h_dsock, &dc2));
	daemon_pages = h_info_u64(dc2, rec.id, "pages_read");
	hvtrace_daemon_close(dc2);
	stop_reading(dc, &y, sig);
	hvtrace_daemon_close(dc);
	before = y.next;
	tool_pages = y.pages;
	printf("%s: hvtraced had read %llu pages; the tool got %llu, ids up "
	       "to %llu, %llu lost, %llu dropped for it\n",
	       strsignal(sig), (unsigned long long)daemon_pages,
	       (unsigned long long)tool_pages, (unsigned long long)before,
	       (unsigned long long)y.lost, (unsigned long long)y.dropped);

	dc = h_restart("--client-queue 1M");
	h_remote(dc, name, &rec);
	y.sub = h_subscribe(dc, rec.id, 1024);
	h_drain(dc, rec.id, on_msg, &y);
	printf("after: ids up to %llu (%llu after the restart), %llu lost, "
	       "%llu dropped, %llu twice, %llu gaps\n",
	       (unsigned long long)y.next,
	       (unsigned long long)(y.next - before),
	       (unsigned long long)y.lost, (unsigned long long)y.dropped,
	       (unsigned long long)y.dup, (unsigned long long)y.gaps);
	t_equ(y.dup, 0);
	t_equ(y.gaps, 0);
	t_equ(y.lost, 0);
	t_equ(y.dropped, 0);
	t_equ(y.next, COUNT);
	/* hvtraced must have had a queue beyond the socket, or this
	 * tested nothing. */
	if (daemon_pages < 200)
		t_fail("hvtraced read only %llu pages: its queue held "
		       "nothing beyond the socket (raise COUNT or "
		       "--client-queue)",
		       (unsigned long long)daemon_pages);
	if (sig == SIGTERM && tool_pages < daemon_pages)
		t_fail("the stop handed on %llu of the %llu pages hvtraced "
		       "had read",
		       (unsigned long long)tool_pages,
		       (unsigned long long)daemon_pages);
	if (before == COUNT)
		t_fail("all %u events came before the restart: nothing was "
		       "left for the new hvtraced to resume (raise COUNT)",
		       COUNT);
	tep_free(tep);
	/* The next scenario starts with this daemon stopped. */
	t_ok(kill(h_dpid, SIGTERM));
	hvtrace_daemon_close(dc);
}

int main(void)
{
	scenario(SIGTERM);
	scenario(SIGKILL);
	h_pass();
	return 0;
}
