// SPDX-License-Identifier: MIT
/*
 * A remote read through hvtraced as rings of the core: one
 * hvtrace_daemon_ring_open() per CPU on one feed, merged by hvtrace_merge
 * exactly as the CPUs of an area are.
 *
 * Two loopback areas are attached to a private hvtraced, each written
 * before it is read by a writer that then stops:
 *   - "big": 3 CPUs, COUNT events each, room for all of them.  Every
 *     event must come out once, on its CPU, ids 0..COUNT-1 in order, no
 *     loss reported, each CPU's ring taking only its own pages (the feed
 *     routes them), the merged stream in host time order;
 *   - "full": 2 CPUs of 4 sub-buffers, consume mode, OVER events each:
 *     the writer drops what does not fit, after its last page.  Per CPU,
 *     the events read plus the losses the ring reports (on records and
 *     hvtrace_ring_take_trailing_lost() after a drain) must be exactly
 *     what the writer wrote, the ids read consecutive from 0;
 *   - "live": 1 CPU written at 3000 events/s while it is read: its
 *     COUNT events come out once, in order, none lost, and the events the
 *     writer added to its current sub-buffer between two reads are
 *     appended to the ring's reader page (same reader.id).
 * Copies: no event is copied twice by a ring, and the whole pages of "big"
 * (nothing to rewrite in them) are not copied at all: the ring reads them
 * where the client received them (stats copied == 0).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT	3000
#define OVER	5000
#define MAXCPU	4

struct tally {
	uint64_t events[MAXCPU];
	uint64_t lost[MAXCPU];
	uint64_t unknown[MAXCPU];
	uint64_t next_id[MAXCPU];
	uint64_t copied; /* bytes the rings copied */
	uint64_t out_of_order;
};

static void make_area(const char *name, const char *cpus, const char *events,
		      const char *pages, const char *rate)
{
	char area[128];
	struct h_proc p;
	int st;

	snprintf(area, sizeof(area), "%s/%s.area", h_dir, name);
	if (rate)
		h_proc_start(&p, "bin/hvtrace", "loopback", "--area", area,
			     "--cpus", cpus, "--events", events, "--pages",
			     pages, "--mode", "consume", "--rate", rate,
			     "--background", "--quiet", NULL);
	else
		h_proc_start(&p, "bin/hvtrace", "loopback", "--area", area,
			     "--cpus", cpus, "--events", events, "--pages",
			     pages, "--mode", "consume", "--quiet", NULL);
	st = h_proc_wait(&p, 60000);
	if (st)
		t_fail("loopback writer for %s: exit %d", name, st);
	h_proc_start(&p, "bin/hvtrace", "daemon", "attach", "--area", area,
		     "--name", name, "--socket", h_dsock, NULL);
	st = h_proc_wait(&p, 30000);
	if (st)
		t_fail("attach %s: exit %d", name, st);
}

/* Read every CPU of @name through rings on one feed until a drain brings
 * nothing new and, with @want, @want events came. */
static void read_remote(struct hvtrace_daemon *dc, const char *name,
			struct tally *y, uint32_t *nr_cpus, uint64_t want,
			uint64_t *appended)
{
	struct hvtrace_ring *rings[MAXCPU], *none;
	struct hvtrace_daemon_feed *f;
	struct hvt_remote_rec rec;
	struct hvtrace_merge *m;
	struct hvtrace_record r;
	uint64_t last_ns = 0, n, t0;
	uint32_t cpu;
	int idle = 0, ret, round;
	uint64_t total = 0;

	memset(y, 0, sizeof(*y));
	h_remote(dc, name, &rec);
	if (rec.nr_cpus > MAXCPU)
		t_fail("%s: %u CPUs", name, rec.nr_cpus);
	*nr_cpus = rec.nr_cpus;
	t_ok(hvtrace_daemon_feed_open(h_dsock, &f));
	for (cpu = 0; cpu < rec.nr_cpus; cpu++)
		t_ok(hvtrace_daemon_ring_open(f, rec.id, (int)cpu,
					      &rings[cpu]));
	t_eq(hvtrace_daemon_ring_open(f, rec.id, (int)rec.nr_cpus, &none),
	     -EINVAL);
	t_ok(hvtrace_merge_new(rings, rec.nr_cpus, 1000000, &m));
	t0 = h_now_ns();
	for (round = 0; round < 3000 && (idle < 3 || total < want); round++) {
		uint64_t got = 0;

		if (want && total < want)
			usleep(10000);	/* a live writer: read as it writes */
		t_ok(hvtrace_daemon_feed_drain(f, rec.id));
		while ((ret = hvtrace_merge_next(m, &r, true)) == 1) {
			uint64_t id;

			t_assert(r.cpu >= 0 && (uint32_t)r.cpu < rec.nr_cpus);
			t_assert(r.size >= 16);
			memcpy(&id, (const uint8_t *)r.data + 8, 8);
			if (id != y->next_id[r.cpu])
				t_fail("%s CPU %d: id %llu, expected %llu",
				       name, r.cpu, (unsigned long long)id,
				       (unsigned long long)y->next_id[r.cpu]);
			y->next_id[r.cpu]++;
			y->events[r.cpu]++;
			if (r.lost_before == HVTRACE_LOST_UNKNOWN)
				y->unknown[r.cpu]++;
			else
				y->lost[r.cpu] += r.lost_before;
			if (r.host_ns < last_ns)
				y->out_of_order++;
			last_ns = r.host_ns;
			got++;
		}
		t_ok(ret);
		total += got;
		idle = got ? 0 : idle + 1;
	}
	t0 = h_now_ns() - t0;
	*appended = 0;
	for (cpu = 0; cpu < rec.nr_cpus; cpu++) {
		struct hvtrace_ring_source_stats st;

		n = hvtrace_ring_take_trailing_lost(rings[cpu]);
		if (n == HVTRACE_LOST_UNKNOWN)
			y->unknown[cpu]++;
		else
			y->lost[cpu] += n;
		t_ok(hvtrace_ring_source_stats(rings[cpu], &st));
		t_equ(hvtrace_ring_errors(rings[cpu]), 0);
		t_equ(st.skipped, 0);
		t_equ(st.events, y->events[cpu]);
		*appended += st.appended;
		/* At most one copy of each event's bytes (about 20 each). */
		t_assert(st.copied <= 32 * st.events);
		y->copied += st.copied;
		printf("%s cpu %u: %llu events, %llu lost, %llu pages "
		       "(%llu appended), %llu bytes copied\n",
		       name, cpu, (unsigned long long)y->events[cpu],
		       (unsigned long long)y->lost[cpu],
		       (unsigned long long)st.pages,
		       (unsigned long long)st.appended,
		       (unsigned long long)st.copied);
	}
	printf("%s: read in %.1f ms\n", name, (double)t0 / 1e6);
	hvtrace_merge_free(m);
	for (cpu = 0; cpu < rec.nr_cpus; cpu++)
		hvtrace_ring_close(rings[cpu]);
	hvtrace_daemon_feed_close(f);
}

int main(void)
{
	struct hvtrace_daemon *dc = h_start(NULL);
	struct tally y;
	uint32_t cpu, nr;
	uint64_t appended;
	char count[16], over[16];

	snprintf(count, sizeof(count), "%d", COUNT);
	snprintf(over, sizeof(over), "%d", OVER);
	make_area("big", "3", count, "64", NULL);
	make_area("full", "2", over, "4", NULL);

	read_remote(dc, "big", &y, &nr, 0, &appended);
	t_eq(nr, 3);
	for (cpu = 0; cpu < nr; cpu++) {
		t_equ(y.events[cpu], COUNT);
		t_equ(y.lost[cpu], 0);
		t_equ(y.unknown[cpu], 0);
	}
	t_equ(y.out_of_order, 0);
	t_equ(y.copied, 0); /* whole pages, read in place */

	read_remote(dc, "full", &y, &nr, 0, &appended);
	t_eq(nr, 2);
	for (cpu = 0; cpu < nr; cpu++) {
		t_equ(y.unknown[cpu], 0);
		t_assert(y.events[cpu] > 0 && y.events[cpu] < OVER);
		t_equ(y.events[cpu] + y.lost[cpu], OVER);
	}
	t_equ(y.out_of_order, 0);

	/* A live writer: the tail page grows between reads, and what it
	 * gained is appended to the ring's reader page. */
	make_area("live", "1", count, "64", "3000");
	read_remote(dc, "live", &y, &nr, COUNT, &appended);
	t_equ(y.events[0], COUNT);
	t_equ(y.lost[0] + y.unknown[0], 0);
	t_assert(appended > 0);
	hvtrace_daemon_close(dc);
	printf("dring_merge: exact per-CPU counts through rings of hvtraced\n");
	return 0;
}
