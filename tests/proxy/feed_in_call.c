// SPDX-License-Identifier: MIT
/*
 * Pages that come while a feed waits for an answer are not lost.
 *
 * A loopback writer fills a 2-CPU consume-mode area with COUNT events per
 * CPU and stops; the area is attached to a private hvtraced whose tool
 * queue is 64 KiB.  A feed that takes pages from the socket only while
 * fewer than FEED_PAGES wait (HVTRACE_DAEMON_FEED_PAGES) opens the ring
 * of CPU 0, lets hvtraced fill its queue and the socket with CPU 0's pages
 * (SETTLE_MS), then opens the ring of CPU 1: its REMOTES and SUBSCRIBE
 * answers come behind those pages, far more than FEED_PAGES.  The feed
 * must keep them (a bounded amount: what hvtraced had out), not drop them:
 * reading both rings to the end of a drain, every id of each CPU comes
 * out once, in order, with no loss reported on a record or after the last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT	   40000u /* about 200 pages of 4 KiB per CPU */
#define FEED_PAGES "4"
#define SETTLE_MS  300

int main(void)
{
	struct hvtrace_daemon *dc = h_start("--client-queue 64K");
	struct hvtrace_ring *rings[2];
	struct hvtrace_daemon_feed *f;
	struct hvtrace_merge *m;
	struct hvt_remote_rec rec;
	struct hvtrace_record r;
	uint64_t next[2] = {0, 0}, lost[2] = {0, 0};
	int ret, idle = 0, round, drained = 0;
	uint32_t cpu;

	h_filled_remote(dc, "fc", 2, COUNT, 512, &rec);
	f = h_small_feed(FEED_PAGES);
	t_ok(hvtrace_daemon_ring_open(f, rec.id, 0, &rings[0]));
	usleep(SETTLE_MS * 1000);
	t_ok(hvtrace_daemon_ring_open(f, rec.id, 1, &rings[1]));
	t_ok(hvtrace_merge_new(rings, 2, 1000000, &m));

	t_ok(hvtrace_daemon_feed_drain_start(f, rec.id));
	for (round = 0; round < 100000 && idle < 3; round++) {
		uint64_t got = 0, id;

		while ((ret = hvtrace_merge_next(m, &r, true)) == 1) {
			t_assert(r.cpu == 0 || r.cpu == 1);
			t_assert(r.size >= 16);
			memcpy(&id, (const uint8_t *)r.data + 8, 8);
			if (r.lost_before == HVTRACE_LOST_UNKNOWN)
				t_fail("CPU %d: a loss of unknown size before "
				       "id %llu",
				       r.cpu, (unsigned long long)id);
			lost[r.cpu] += r.lost_before;
			if (r.lost_before)
				printf("CPU %d: %llu lost before id %llu\n",
				       r.cpu, (unsigned long long)r.lost_before,
				       (unsigned long long)id);
			if (id != next[r.cpu] + lost[r.cpu])
				t_fail("CPU %d: id %llu where %llu was due",
				       r.cpu, (unsigned long long)id,
				       (unsigned long long)(next[r.cpu] +
							    lost[r.cpu]));
			next[r.cpu]++;
			got++;
		}
		t_ok(ret);
		ret = hvtrace_daemon_feed_drained(f);
		if (ret < 0)
			t_fail("drain: %s", hvtrace_last_error());
		drained |= ret;
		if (!got && !drained)
			usleep(1000);
		idle = drained && !got ? idle + 1 : 0;
	}
	t_assert(drained);
	for (cpu = 0; cpu < 2; cpu++) {
		uint64_t t = hvtrace_ring_take_trailing_lost(rings[cpu]);

		t_assert(t != HVTRACE_LOST_UNKNOWN);
		lost[cpu] += t;
		printf("cpu %u: %llu read, %llu lost of %u written\n", cpu,
		       (unsigned long long)next[cpu],
		       (unsigned long long)lost[cpu], COUNT);
		t_equ(lost[cpu], 0);
		t_equ(next[cpu], COUNT);
	}
	hvtrace_merge_free(m);
	hvtrace_ring_close(rings[0]);
	hvtrace_ring_close(rings[1]);
	hvtrace_daemon_feed_close(f);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
