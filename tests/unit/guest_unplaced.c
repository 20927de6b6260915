// SPDX-License-Identifier: MIT
/*
 * Unplaced events are not lost silently.  An area with fewer CPU buffers
 * than the machine has CPUs (one buffer here): a guest-library writer
 * pinned to CPU 1 gets -ENXIO for every write, and each one is counted in
 * meta->unplaced of buffer 1 % 1 = 0 and in the thread's statistics.  The
 * host reader then reports them as lost with the buffer's next page
 * (RB_MISSED_EVENTS with the count, which kbuffer decodes too), counts
 * them in dropped and unplaced, and read + lost == written holds with
 * written including them.  A second batch after the last page is
 * reported as trailing loss.  A counter that goes backwards costs an
 * error count and counting restarts from its value.  Needs two online
 * CPUs.
 */
#include <kbuffer.h>

#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include <hvtrace.h>

#define EV_ID	42
#define EV_BIT	3
#define NR_SUBBUFS 64

static void write_on(int cpu, struct hvtg_event *ev, uint32_t n, int expect,
		     uint64_t *seq)
{
	uint32_t i;

	t_ok(th_pin(cpu));
	for (i = 0; i < n; i++) {
		uint64_t v = (*seq)++;

		t_eq(hvtg_write(ev, &v, sizeof(v)), expect);
	}
}

/* Read everything on CPU 0; return events read, add lost counts. */
static uint64_t drain(struct hvtrace_area *a, struct kbuffer *kb,
		      uint64_t *lost, uint32_t *lossy_pages)
{
	static uint8_t page[4096];
	struct hvtrace_page_info info;
	uint64_t got = 0;
	int ret;

	while ((ret = hvtrace_cpu_read_page(a, 0, page, sizeof(page),
					    &info)) == 1) {
		t_eq(kbuffer_load_subbuffer(kb, page), 0);
		if (info.lost_events) {
			t_eq(kbuffer_missed_events(kb), (int)info.lost_events);
			*lost += info.lost_events;
			(*lossy_pages)++;
		}
		got += info.entries;
	}
	t_eq(ret, 0);
	return got;
}

int main(void)
{
	static struct hvtg_event ev = HVTG_EVENT_INIT;
	struct hvtg_thread_stats st0, st1;
	struct hvtrace_cpu_stats rs;
	struct hvtrace_area *a;
	struct kbuffer *kb;
	struct th_area ta;
	uint64_t seq = 0, read, lost = 0, trailing;
	uint32_t lossy = 0;

	if (th_nr_cpus() < 2)
		t_skip("one online CPU: no CPU beyond a one-buffer area");
	th_area_new(&ta, 1, NR_SUBBUFS, 4096, HVT_MODE_CONSUME,
		    HVT_CLOCK_COUNTER);
	t_ok(hvtg_event_bind(ta.w, &ev, EV_ID, EV_BIT));
	if (hvtrace_area_open(ta.path, 0, 0, HVTRACE_OPEN_CONTROL, &a))
		t_fail("open: %s", hvtrace_last_error());
	/* After the owner attached: it starts with every event disabled. */
	th_enable(&ta, EV_BIT, 1);
	kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	t_assert(kb);

	t_ok(hvtg_get_thread_stats(&st0));
	/* Placed, unplaced (CPU 1 has no buffer), placed again over several
	 * pages: the unplaced ones are reported with the next page. */
	write_on(0, &ev, 100, 0, &seq);
	write_on(1, &ev, 37, -ENXIO, &seq);
	t_assert(strstr(hvtg_last_error(), "counted as lost"));
	t_equ(th_meta(&ta, 0)->unplaced, 37);
	write_on(0, &ev, 600, 0, &seq);
	t_ok(hvtg_get_thread_stats(&st1));
	t_equ(st1.unplaced - st0.unplaced, 37);
	t_equ(st1.committed - st0.committed, 700);

	read = drain(a, kb, &lost, &lossy);
	t_equ(read, 700);
	t_equ(lost, 37);
	t_equ(lossy, 1);
	t_ok(hvtrace_cpu_get_stats(a, 0, &rs));
	t_equ(rs.unplaced, 37);
	t_equ(rs.dropped, 37);
	t_equ(rs.lost, 37);
	t_equ(rs.written, 737);
	t_equ(rs.read + rs.lost + rs.trailing + rs.entries, rs.written);

	/* Unplaced after the last page: trailing until claimed. */
	write_on(1, &ev, 5, -ENXIO, &seq);
	t_equ(drain(a, kb, &lost, &lossy), 0);
	t_ok(hvtrace_cpu_get_stats(a, 0, &rs));
	t_equ(rs.trailing, 5);
	t_equ(rs.written, 742);
	trailing = hvtrace_cpu_take_trailing_lost(a, 0);
	t_equ(trailing, 5);
	t_ok(hvtrace_cpu_get_stats(a, 0, &rs));
	t_equ(rs.unplaced, 42);
	t_equ(rs.trailing, 0);
	t_equ(rs.read + rs.lost, rs.written);
	t_equ(rs.written, seq);

	/* A counter that goes backwards (a restarted writer, or a guest
	 * scribbling on its meta) is an error, not a huge loss. */
	{
		uint64_t errs = rs.errors;

		th_meta(&ta, 0)->unplaced = 3;
		write_on(0, &ev, 600, 0, &seq);
		t_equ(drain(a, kb, &lost, &lossy), 600);
		t_ok(hvtrace_cpu_get_stats(a, 0, &rs));
		t_assert(rs.errors > errs);
		t_equ(rs.unplaced, 42);
		t_equ(rs.trailing, 0);
		/* 3 -> 45: 42 more, counted. */
		th_meta(&ta, 0)->unplaced = 42 + 3;
		write_on(0, &ev, 600, 0, &seq);
		t_equ(drain(a, kb, &lost, &lossy), 600);
		t_ok(hvtrace_cpu_get_stats(a, 0, &rs));
		t_equ(rs.unplaced, 42 + 42);
		/* As it was, for the totals below. */
		th_meta(&ta, 0)->unplaced = 42;
	}

	/* The writer-side totals (hvtrace stat AREA) show them too. */
	{
		struct hvtrace_cpu_totals t;

		t_ok(hvtrace_cpu_get_totals(a, 0, &t));
		t_equ(t.unplaced, 42);
		t_equ(t.committed + t.dropped + t.unplaced, seq);
	}
	kbuffer_free(kb);
	hvtrace_area_close(a);
	th_area_free(&ta);
	printf("ok: 42 unplaced writes counted, reported as lost "
	       "(37 with the next page, 5 trailing); read + lost == written "
	       "== %llu\n",
	       (unsigned long long)seq);
	return 0;
}

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
