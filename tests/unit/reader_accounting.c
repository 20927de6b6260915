// SPDX-License-Identifier: MIT
/*
 * The host reader on a real shared-memory file: events come back in order
 * with their payloads, the returned pages parse with kbuffer, and losses
 * are counted exactly in both modes:
 *
 *   consume:   a full ring drops new events; the first page after the gap
 *              carries RB_MISSED_* with the drop count
 *   overwrite: the writer laps the reader; the first page read after the
 *              lap carries the overrun count
 *
 * and at every step written == read + lost + discarded + entries + trailing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <kbuffer.h>

#include <hvtrace.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

#define NR_CPUS		2
#define NR_SUBBUFS	8
#define SUBBUF		4096

struct ctx {
	char path[64];
	void *area;
	uint64_t size;
	struct hvt_rb_cpu cb[NR_CPUS];
	struct hvtrace_area *a;
	struct kbuffer *kb;
	uint64_t next_read[NR_CPUS];	/* next sequence number expected */
	uint64_t written[NR_CPUS];
	uint64_t lost_reported[NR_CPUS];
	uint64_t ts;
};

static void setup(struct ctx *x, uint32_t mode)
{
	struct hvt_area_params p = {
		.nr_cpus = NR_CPUS, .nr_subbufs = NR_SUBBUFS,
		.subbuf_size = SUBBUF, .mode = mode,
		.writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "accounting",
	};
	int fd, cpu;

	memset(x, 0, sizeof(*x));
	snprintf(x->path, sizeof(x->path), "/dev/shm/hvt-acct-%d", getpid());
	x->size = hvt_area_size(NR_CPUS, NR_SUBBUFS, SUBBUF);
	p.area_size = x->size;
	fd = open(x->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)x->size) ? -errno : 0);
	x->area = mmap(NULL, x->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0);
	t_assert(x->area != MAP_FAILED);
	close(fd);
	t_ok(hvt_area_format(x->area, &p));
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		t_ok(hvt_area_cpu(x->area, x->size, cpu, &x->cb[cpu]));
	if (hvtrace_area_open(x->path, 0, 0, HVTRACE_OPEN_CONTROL, &x->a))
		t_fail("open: %s", hvtrace_last_error());
	x->kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	t_assert(x->kb);
	x->ts = 1000;
}

static void teardown(struct ctx *x)
{
	hvtrace_area_close(x->a);
	munmap(x->area, x->size);
	unlink(x->path);
	kbuffer_free(x->kb);
}

/* Event payload: the per-CPU sequence number, then filler of varying
 * length derived from it (so a torn or misplaced record is caught). */
static int write_one(struct ctx *x, int cpu)
{
	uint64_t seq = x->written[cpu]++;
	uint8_t pl[8 + 64];
	uint32_t len = 8 + (uint32_t)(seq % 57);
	struct hvt_common_fields c = { .common_type = 42, .common_pid = cpu };
	struct hvt_iovec iov = { pl, len };

	memcpy(pl, &seq, 8);
	for (uint32_t i = 8; i < len; i++)
		pl[i] = (uint8_t)(seq * 31 + i);
	return hvt_rb_write(&x->cb[cpu], x->ts += 7, &c, &iov, 1);
}

static void check_invariant(struct ctx *x, int cpu)
{
	struct hvtrace_cpu_stats st;

	t_ok(hvtrace_cpu_get_stats(x->a, cpu, &st));
	if (st.written != st.read + st.lost + st.discarded + st.entries +
				  st.trailing)
		t_fail("cpu %d: written %llu != read %llu + lost %llu + "
		       "discarded %llu + entries %llu + trailing %llu",
		       cpu, (unsigned long long)st.written,
		       (unsigned long long)st.read, (unsigned long long)st.lost,
		       (unsigned long long)st.discarded,
		       (unsigned long long)st.entries,
		       (unsigned long long)st.trailing);
	t_equ(st.written, x->written[cpu]);
	t_equ(st.errors, 0);
}

/* Read everything available on @cpu; check order and payloads. */
static uint64_t drain(struct ctx *x, int cpu)
{
	static uint8_t page[SUBBUF];
	struct hvtrace_page_info info;
	uint64_t got = 0;
	int ret;

	while ((ret = hvtrace_cpu_read_page(x->a, cpu, page, sizeof(page),
					    &info)) == 1) {
		unsigned long long ts;
		void *data;
		int missed;

		t_eq(kbuffer_load_subbuffer(x->kb, page), 0);
		missed = kbuffer_missed_events(x->kb);
		if (info.lost_events) {
			t_equ(missed, info.lost_events);
			x->next_read[cpu] += info.lost_events;
			x->lost_reported[cpu] += info.lost_events;
		} else {
			t_eq(missed, 0);
		}
		for (data = kbuffer_read_event(x->kb, &ts); data;
		     data = kbuffer_next_event(x->kb, &ts)) {
			uint64_t seq;
			uint32_t len = (uint32_t)kbuffer_event_size(x->kb) - 8;
			const uint8_t *pl = (const uint8_t *)data + 8;

			memcpy(&seq, pl, 8);
			t_equ(seq, x->next_read[cpu]);
			t_eq(len, (8 + seq % 57 + 3) & ~3ull);
			for (uint32_t i = 8; i < 8 + seq % 57; i++)
				if (pl[i] != (uint8_t)(seq * 31 + i))
					t_fail("torn payload at seq %llu",
					       (unsigned long long)seq);
			x->next_read[cpu]++;
			got++;
		}
		t_eq(info.entries, got ? info.entries : 0);
	}
	t_eq(ret, 0);
	return got;
}

static void test_consume(void)
{
	struct ctx x;
	struct hvtrace_cpu_stats st;
	int i, dropped = 0;

	setup(&x, HVT_MODE_CONSUME);
	/* Interleaved writes and reads: nothing is lost. */
	for (i = 0; i < 20000; i++) {
		t_eq(write_one(&x, i & 1), 0);
		if (i % 300 == 0) {
			drain(&x, 0);
			drain(&x, 1);
			check_invariant(&x, 0);
		}
	}
	drain(&x, 0);
	drain(&x, 1);
	for (i = 0; i < NR_CPUS; i++) {
		t_equ(x.next_read[i], x.written[i]);
		t_equ(x.lost_reported[i], 0);
		check_invariant(&x, i);
	}

	/* No reader: the ring fills and the writer drops. */
	for (i = 0; i < 5000; i++)
		if (write_one(&x, 0) == -HVT_ENOSPC)
			dropped++;
	t_assert(dropped > 1000);
	check_invariant(&x, 0);
	t_ok(hvtrace_cpu_get_stats(x.a, 0, &st));
	t_equ(st.trailing, dropped);
	drain(&x, 0);
	/* Reading freed the ring; the next event starts a page that reports
	 * the drops. */
	t_eq(write_one(&x, 0), 0);
	drain(&x, 0);
	t_equ(x.lost_reported[0], dropped);
	t_equ(x.next_read[0], x.written[0]);
	check_invariant(&x, 0);
	t_ok(hvtrace_cpu_get_stats(x.a, 0, &st));
	t_equ(st.dropped, dropped);
	t_equ(st.trailing, 0);

	/* Drops with no later page: claimed at the end (post-mortem). */
	for (i = 0; i < 5000; i++)
		write_one(&x, 1);
	drain(&x, 1);
	t_ok(hvtrace_cpu_get_stats(x.a, 1, &st));
	t_assert(st.trailing > 0);
	t_equ(hvtrace_cpu_take_trailing_lost(x.a, 1), st.trailing);
	check_invariant(&x, 1);
	teardown(&x);
}

static void test_overwrite(void)
{
	struct ctx x;
	struct hvtrace_cpu_stats st;
	int i;

	setup(&x, HVT_MODE_OVERWRITE);
	for (i = 0; i < 3000; i++)
		t_eq(write_one(&x, 0), 0);
	check_invariant(&x, 0);
	t_ok(hvtrace_cpu_get_stats(x.a, 0, &st));
	t_assert(st.overrun > 1000);
	drain(&x, 0);
	/* The first page read reported exactly what was overwritten. */
	t_assert(x.lost_reported[0] > 1000);
	t_equ(x.next_read[0], x.written[0]);
	check_invariant(&x, 0);
	t_ok(hvtrace_cpu_get_stats(x.a, 0, &st));
	t_equ(st.overrun, x.lost_reported[0]);

	/* Lap the reader while it is in the middle of a page. */
	for (i = 0; i < 10; i++)
		t_eq(write_one(&x, 0), 0);
	drain(&x, 0);
	for (i = 0; i < 5000; i++)
		t_eq(write_one(&x, 0), 0);
	drain(&x, 0);
	t_equ(x.next_read[0], x.written[0]);
	check_invariant(&x, 0);
	teardown(&x);
}

static void test_seek_and_reset(void)
{
	struct ctx x;
	struct hvtrace_cpu_stats st;
	int i;

	setup(&x, HVT_MODE_CONSUME);
	for (i = 0; i < 100; i++)
		t_eq(write_one(&x, 0), 0);
	t_ok(hvtrace_cpu_seek(x.a, 0, false));
	t_ok(hvtrace_cpu_get_stats(x.a, 0, &st));
	t_equ(st.discarded, 100);
	t_equ(st.entries, 0);
	check_invariant(&x, 0);
	x.next_read[0] = x.written[0];
	t_eq(write_one(&x, 0), 0);
	t_equ(drain(&x, 0), 1);

	/* Reset: the writer closes its page; the reader discards the rest. */
	for (i = 0; i < 50; i++)
		t_eq(write_one(&x, 0), 0);
	t_ok(hvtrace_area_reset_cpu(x.a, 0));
	t_eq(hvt_rb_poll_reset(&x.cb[0]), 1);
	t_eq(hvt_rb_poll_reset(&x.cb[0]), 0);
	x.next_read[0] = x.written[0];
	t_eq(write_one(&x, 0), 0);
	t_equ(drain(&x, 0), 1);
	t_ok(hvtrace_cpu_get_stats(x.a, 0, &st));
	t_equ(st.discarded, 150);
	check_invariant(&x, 0);
	teardown(&x);
}

int main(void)
{
	test_consume();
	test_overwrite();
	test_seek_and_reset();
	printf("ok: consume, overwrite, seek and reset accounting exact\n");
	return 0;
}
