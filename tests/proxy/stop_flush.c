// SPDX-License-Identifier: MIT
/*
 * A stopped hvtraced hands its tools what it queued for them, and its
 * successor resumes after it: across the restart every event is read
 * once, and none is lost.
 *
 * A loopback writer fills a one-CPU consume-mode area with COUNT events
 * (about 2.4 MB in 4 KiB pages) and stops; it is attached to a private
 * hvtraced whose tool queue is 1 MiB.  A tool subscribes and reads
 * nothing for SETTLE_MS: hvtraced fills the socket and its queue for the
 * tool from the area and posts its read position in the area's control
 * page; the rest stays in the area.  hvtraced is then stopped (SIGTERM)
 * while the tool reads its socket to the end: it must get every page the
 * daemon had read, well beyond what the socket alone holds.  A new
 * hvtraced attaches the area again from its state file and resumes after
 * that position; the tool subscribes again and drains.  The ids read,
 * before and after, are 0..COUNT-1, each once, in order, with no loss
 * reported.
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
	uint64_t next, lost, dropped, dup, gaps;
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
	y->lost += m->u.page.lost_events;
	y->dropped = m->u.page.dropped_events;
	h_decode_page(tep, &m->u.page, count_rec, y);
}

/* Stop hvtraced and read @dc to its end, every page to @y. */
static void stop_reading(struct hvtrace_daemon *dc, struct tally *y)
{
	struct hvt_msg m;
	int ret, k;

	t_ok(kill(h_dpid, SIGTERM));
	for (k = 0; k < 1000; k++) {
		ret = hvtrace_daemon_recv(dc, &m, 10);
		if (ret < 0)
			return;
		if (ret == 1)
			on_msg(y, &m);
	}
	t_fail("hvtraced's socket stayed open 10 s after SIGTERM");
}

int main(void)
{
	struct hvtrace_daemon *dc = h_start("--client-queue 1M");
	struct hvt_remote_rec rec;
	struct tally y = {0};
	struct hvt_msg m, r;
	uint64_t before;

	h_filled_remote(dc, "sf", 1, COUNT, 1024, &rec);
	tep = h_tep(dc, rec.id);
	y.sub = h_subscribe(dc, rec.id, 1024);
	usleep(SETTLE_MS * 1000);
	stop_reading(dc, &y);
	hvtrace_daemon_close(dc);
	before = y.next;
	printf("before the restart: ids up to %llu, %llu lost, %llu dropped "
	       "for the tool\n",
	       (unsigned long long)before, (unsigned long long)y.lost,
	       (unsigned long long)y.dropped);

	dc = h_restart("--client-queue 1M");
	h_remote(dc, "sf", &rec);
	y.sub = h_subscribe(dc, rec.id, 1024);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_DRAIN;
	m.chan = rec.id;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 30000, on_msg, &y));
	t_eq(r.type, HVT_MSG_DRAIN);
	t_eq(r.u.result.status, 0);
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
	/* The stop must have had a queue to hand on, or this tested
	 * nothing: more than the socket holds (about 32000 events here). */
	if (before < 40000u)
		t_fail("only %llu of %u events came before the restart: "
		       "hvtraced's queue held none of them (raise COUNT or "
		       "--client-queue)",
		       (unsigned long long)before, COUNT);
	if (before == COUNT)
		t_fail("all %u events came before the restart: nothing was "
		       "left for the new hvtraced to resume (raise COUNT)",
		       COUNT);
	tep_free(tep);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
