// SPDX-License-Identifier: MIT
/*
 * A page the client's feed has no room for is counted, at its CPU, never
 * dropped unsaid.  A loopback writer fills a 2-CPU consume-mode area with
 * COUNT events per CPU and stops; the area is attached to a private
 * hvtraced.  A feed that may queue only FEED_PAGES pages
 * (HVTRACE_DAEMON_FEED_PAGES) subscribes to every CPU and asks for a
 * blocking DRAIN: the pages that arrive before the answer overflow its
 * queue.  Then, CPU by CPU, the pages that came out must hold ids that
 * run on without a gap once each page's new drops
 * (hvtrace_daemon_page_drops()) are added in, the drops must be counted
 * (some, since the queue was far too small), and read + dropped must be
 * COUNT for each CPU: the empty page a finished drain sends carries what
 * no later page could.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT	  20000u
#define FEED_PAGES "8"

struct cpu_tally {
	uint64_t next_id; /* the id expected next, drops added in */
	uint64_t read, dropped, pages;
	uint64_t seen;	  /* hvtrace_daemon_page_drops() state */
	uint32_t cpu;
};

static int take_rec(void *arg, uint64_t ts, const uint8_t *rec,
		    uint32_t len)
{
	struct cpu_tally *t = arg;
	uint64_t id;

	(void)ts;
	/* hvtrace:selftest: the 8-byte common fields, then a u64 id */
	if (len < 16)
		t_fail("cpu %u: a record of %u bytes", t->cpu, len);
	memcpy(&id, rec + 8, 8);
	if (id != t->next_id)
		t_fail("cpu %u: id %llu where %llu was due (a loss not "
		       "counted where it happened)",
		       t->cpu, (unsigned long long)id,
		       (unsigned long long)t->next_id);
	t->next_id++;
	t->read++;
	return 0;
}

int main(void)
{
	struct hvtrace_daemon *dc = h_start(NULL);
	struct hvtrace_daemon_feed *f;
	struct hvtrace_daemon_page *pg;
	struct cpu_tally t[2];
	struct hvt_remote_rec rec;
	uint32_t sub, cpu;
	int ret;

	h_filled_remote(dc, "fo", 2, COUNT, 512, &rec);
	f = h_small_feed(FEED_PAGES);
	t_eq(hvtrace_daemon_feed_subscribe(f, rec.id, -1, 0, &sub), 0);
	if (hvtrace_daemon_feed_drain(f, rec.id))
		t_fail("drain: %s", hvtrace_last_error());
	t_eq(hvtrace_daemon_feed_drained(f), 1);

	memset(t, 0, sizeof(t));
	t[1].cpu = 1;
	while ((ret = hvtrace_daemon_feed_next(f, 0, &pg)) == 1) {
		struct cpu_tally *c;
		uint64_t lost = 0, drops;

		if (pg->cpu > 1)
			t_fail("a page of CPU %u", pg->cpu);
		c = &t[pg->cpu];
		drops = hvtrace_daemon_page_drops(pg, &c->seen);
		c->dropped += drops + pg->lost_events;
		c->next_id += drops + pg->lost_events;
		c->pages++;
		if (hvtrace_daemon_page_walk(pg->data, pg->len, &lost,
					     take_rec, c) < 0)
			t_fail("cpu %u: a malformed page", pg->cpu);
		free(pg);
	}
	t_eq(ret, 0);
	for (cpu = 0; cpu < 2; cpu++) {
		printf("cpu %u: %llu read + %llu dropped at the feed, %llu "
		       "pages\n",
		       cpu, (unsigned long long)t[cpu].read,
		       (unsigned long long)t[cpu].dropped,
		       (unsigned long long)t[cpu].pages);
		if (t[cpu].read + t[cpu].dropped != COUNT)
			t_fail("cpu %u: read %llu + dropped %llu != written %u",
			       cpu, (unsigned long long)t[cpu].read,
			       (unsigned long long)t[cpu].dropped, COUNT);
	}
	if (!t[0].dropped && !t[1].dropped)
		t_fail("a queue of %s pages took a drain of the whole area: "
		       "nothing overflowed",
		       FEED_PAGES);
	hvtrace_daemon_feed_close(f);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
