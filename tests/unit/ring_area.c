// SPDX-License-Identifier: MIT
/*
 * The ring-buffer mmap view of an area CPU, checked against the semantics
 * of the kernel's trace_buffer_meta and TRACE_MMAP_IOCTL_GET_READER:
 *
 *   - layout: meta page, ids 0..nr-1 are the writer's slots (live, the
 *     same bytes the writer wrote), the reader pages follow;
 *   - get-reader on an empty ring changes nothing;
 *   - new events continuing the writer's sub-buffer are appended to the
 *     reader page (same reader.id, reader.read grows); a new sub-buffer
 *     comes with a new reader.id; reader.read is the byte count handed
 *     over, and the page parses with libtraceevent's kbuffer;
 *   - entries/overrun/read follow the kernel's meaning, with
 *     entries - overrun - read == events still unread;
 *   - lost events (consume-mode drops, overwrite-mode overruns) appear in
 *     reader.lost_events and as RB_MISSED_EVENTS|STORED with the count;
 *   - the record cursor returns every event once, in order, with the
 *     loss reported on the first record after it; the merge orders two
 *     CPUs by time.
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
#define NR		8
#define SUBBUF		4096
#define EVT_BYTES	20	/* 4-byte header + 8 common + u64 */

struct ctx {
	char path[64];
	uint8_t *mem;
	uint64_t size;
	struct hvt_rb_cpu cb[NR_CPUS];
	struct hvtrace_area *a;
	uint64_t next_id[NR_CPUS];
	uint64_t ts;
};

static char cur_path[64];

/* A failing check exits: do not leave the area behind. */
static void remove_area(void)
{
	if (cur_path[0])
		unlink(cur_path);
}

static void setup(struct ctx *x, uint32_t mode)
{
	struct hvt_area_params p = {
		.nr_cpus = NR_CPUS, .nr_subbufs = NR, .subbuf_size = SUBBUF,
		.mode = mode, .writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "ring-area",
	};
	int fd, cpu;

	memset(x, 0, sizeof(*x));
	snprintf(x->path, sizeof(x->path), "/dev/shm/hvt-ring-area-%d",
		 getpid());
	snprintf(cur_path, sizeof(cur_path), "%s", x->path);
	x->size = hvt_area_size(NR_CPUS, NR, SUBBUF);
	p.area_size = x->size;
	fd = open(x->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)x->size) ? -errno : 0);
	x->mem = mmap(NULL, x->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	t_assert(x->mem != MAP_FAILED);
	close(fd);
	t_ok(hvt_area_format(x->mem, &p));
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		t_ok(hvt_area_cpu(x->mem, x->size, cpu, &x->cb[cpu]));
	if (hvtrace_area_open(x->path, 0, 0, HVTRACE_OPEN_CONTROL, &x->a))
		t_fail("open: %s", hvtrace_last_error());
	x->ts = 1000000;
}

static void teardown(struct ctx *x)
{
	hvtrace_area_close(x->a);
	munmap(x->mem, x->size);
	unlink(x->path);
}

/* One selftest-shaped event: u64 id, consecutive per CPU. */
static int put(struct ctx *x, int cpu, uint64_t dts)
{
	struct hvt_common_fields c = {
		.common_type = HVTRACE_EVENT_SELFTEST_ID,
		.common_pid = 100 + cpu,
	};
	uint64_t id = x->next_id[cpu]++;
	struct hvt_iovec iov = { &id, 8 };

	x->ts += dts;
	return hvt_rb_write(&x->cb[cpu], x->ts, &c, &iov, 1);
}

static uint64_t page_commit(const void *page)
{
	uint64_t c;

	memcpy(&c, (const uint8_t *)page + 8, 8);
	return c;
}

/* Parse the reader page with kbuffer; return the ids, check order. */
static unsigned int kb_ids(const void *page, uint64_t *ids, unsigned int max)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
	unsigned long long ts;
	unsigned int n = 0;
	void *d;

	t_assert(kb);
	t_eq(kbuffer_load_subbuffer(kb, (void *)page), 0);
	for (d = kbuffer_read_event(kb, &ts); d && n < max;
	     d = kbuffer_next_event(kb, &ts))
		memcpy(&ids[n++], (uint8_t *)d + 8, 8);
	kbuffer_free(kb);
	return n;
}

/* The meta counters are refreshed by get-reader (as the kernel's are):
 * call right after one. */
static void check_unread(struct ctx *x, struct hvtrace_ring *r, int cpu)
{
	const struct hvt_trace_buffer_meta *m = hvtrace_ring_meta(r);
	struct hvtrace_cpu_stats st;

	t_ok(hvtrace_cpu_get_stats(x->a, cpu, &st));
	t_equ(m->entries - m->overrun - m->read, st.entries);
}

/*
 * Read @r to its end: every event's id (the payload's second u64) is the
 * one after the last, plus the events reported lost before it.  Adds the
 * events read to *got and the events reported lost to *lost.
 */
static void drain_in_order(struct hvtrace_ring *r, uint64_t *got,
			   uint64_t *lost)
{
	struct hvtrace_record rec;
	uint64_t expect = 0, id;
	int ret;

	while ((ret = hvtrace_ring_peek(r, &rec)) == 1) {
		memcpy(&id, (const uint8_t *)rec.data + 8, 8);
		if (rec.lost_before) {
			t_assert(rec.lost_before != HVTRACE_LOST_UNKNOWN);
			*lost += rec.lost_before;
			expect += rec.lost_before;
		}
		t_equ(id, expect);
		expect++;
		(*got)++;
		hvtrace_ring_consume(r);
	}
	t_eq(ret, 0);
}

static void test_layout_and_append(void)
{
	const struct hvt_trace_buffer_meta *m;
	struct hvtrace_ring *r;
	uint64_t ids[512];
	uint32_t first_id;
	unsigned int i, n;
	struct ctx x;

	setup(&x, HVT_MODE_CONSUME);
	t_ok(hvtrace_ring_open_area(x.a, 0, &r));
	m = hvtrace_ring_meta(r);
	t_equ(m->meta_page_size, (uint32_t)sysconf(_SC_PAGESIZE));
	t_equ(m->meta_struct_len, 80);
	t_equ(m->subbuf_size, SUBBUF);
	t_equ(m->nr_subbufs, NR + 2);
	t_equ(m->reader.id, NR);
	t_equ(m->reader.read, 0);
	t_equ(m->entries, 0);
	t_equ(m->read, 0);
	t_assert(!hvtrace_ring_subbuf(r, NR + 2));
	t_assert(!hvtrace_ring_is_kernel(r));
	t_eq(hvtrace_ring_cpu(r), 0);
	/* Contiguous, in id order, as a kernel mapping is. */
	t_assert((const uint8_t *)hvtrace_ring_subbuf(r, 0) ==
		 (const uint8_t *)m + m->meta_page_size);
	t_assert((const uint8_t *)hvtrace_ring_subbuf(r, NR + 1) ==
		 (const uint8_t *)m + m->meta_page_size +
			 (size_t)(NR + 1) * SUBBUF);

	/* Empty ring: nothing changes. */
	t_ok(hvtrace_ring_get_reader(r));
	t_equ(m->reader.id, NR);
	t_equ(m->reader.read, 0);

	/* Five events: a new reader page with exactly their bytes. */
	for (i = 0; i < 5; i++)
		t_eq(put(&x, 0, 10), 0);
	t_ok(hvtrace_ring_get_reader(r));
	first_id = m->reader.id;
	t_equ(first_id, NR + 1);
	t_equ(m->reader.read, 5 * EVT_BYTES);
	t_equ(m->reader.lost_events, 0);
	t_equ(page_commit(hvtrace_ring_subbuf(r, first_id)), 5 * EVT_BYTES);
	t_equ(m->entries, 5);
	t_equ(m->read, 5);
	t_equ(m->overrun, 0);
	n = kb_ids(hvtrace_ring_subbuf(r, first_id), ids, 512);
	t_eq(n, 5);
	for (i = 0; i < n; i++)
		t_equ(ids[i], i);

	/* Ids 0..nr-1 are the writer's slots: the very bytes it wrote. */
	for (i = 0; i < NR; i++)
		t_memeq(hvtrace_ring_subbuf(r, i),
			x.cb[0].pages + (size_t)i * SUBBUF, SUBBUF);

	/* Three more on the same writer page: appended, same id. */
	for (i = 0; i < 3; i++)
		t_eq(put(&x, 0, 10), 0);
	t_ok(hvtrace_ring_get_reader(r));
	t_equ(m->reader.id, first_id);
	t_equ(m->reader.read, 8 * EVT_BYTES);
	t_equ(m->entries, 8);
	t_equ(m->read, 8);
	n = kb_ids(hvtrace_ring_subbuf(r, first_id), ids, 512);
	t_eq(n, 8);
	for (i = 0; i < n; i++)
		t_equ(ids[i], i);
	check_unread(&x, r, 0);

	/* Nothing new: same id, same read. */
	t_ok(hvtrace_ring_get_reader(r));
	t_equ(m->reader.id, first_id);
	t_equ(m->reader.read, 8 * EVT_BYTES);

	/* Fill the writer page and start the next: the rest of the first
	 * page is appended (its padding included), then the next page
	 * arrives with a new id. */
	for (i = 0; i < 250; i++)
		t_eq(put(&x, 0, 10), 0);
	t_ok(hvtrace_ring_get_reader(r));
	t_equ(m->reader.id, first_id);
	t_equ(m->reader.read, SUBBUF - 16);
	n = kb_ids(hvtrace_ring_subbuf(r, first_id), ids, 512);
	t_eq(n, (SUBBUF - 16) / EVT_BYTES);
	t_ok(hvtrace_ring_get_reader(r));
	t_equ(m->reader.id, NR);
	t_equ(m->reader.read, (8 + 250 - n) * EVT_BYTES);
	t_equ(m->read, 258);
	t_equ(m->entries, 258);
	n = kb_ids(hvtrace_ring_subbuf(r, NR), ids, 512);
	t_eq(n, 258 - (SUBBUF - 16) / EVT_BYTES);
	t_equ(ids[0], (SUBBUF - 16) / EVT_BYTES);
	check_unread(&x, r, 0);
	hvtrace_ring_close(r);
	teardown(&x);
}

static void test_lost_consume(void)
{
	const struct hvt_trace_buffer_meta *m;
	struct hvtrace_record rec;
	struct hvtrace_ring *r;
	uint64_t expect = 0, lost_seen = 0, dropped = 0;
	bool saw_meta_lost = false;
	struct ctx x;
	int i, ret;

	setup(&x, HVT_MODE_CONSUME);
	t_ok(hvtrace_ring_open_area(x.a, 1, &r));
	m = hvtrace_ring_meta(r);
	/* No reader: the ring fills and the writer drops. */
	for (i = 0; i < 4000; i++)
		if (put(&x, 1, 7) == -HVT_ENOSPC)
			dropped++;
	t_assert(dropped > 1000);
	/* Read it all through the cursor, then free room and write one
	 * more: the page that follows the drops reports them. */
	while ((ret = hvtrace_ring_peek(r, &rec)) == 1) {
		uint64_t id;

		memcpy(&id, (const uint8_t *)rec.data + 8, 8);
		if (rec.lost_before) {
			t_equ(expect + rec.lost_before, id);
			lost_seen += rec.lost_before;
			expect = id;
		}
		t_equ(id, expect);
		t_eq(rec.cpu, 1);
		t_eq(rec.size, 16);
		expect++;
		hvtrace_ring_consume(r);
	}
	t_eq(ret, 0);
	check_unread(&x, r, 1);
	t_eq(put(&x, 1, 7), 0);
	t_ok(hvtrace_ring_get_reader(r));
	if (m->reader.lost_events) {
		uint64_t c = page_commit(hvtrace_ring_subbuf(r, m->reader.id));
		uint64_t stored;

		saw_meta_lost = true;
		t_equ(m->reader.lost_events, dropped);
		t_assert(c & HVT_MISSED_EVENTS);
		t_assert(c & HVT_MISSED_STORED);
		memcpy(&stored,
		       (const uint8_t *)hvtrace_ring_subbuf(r, m->reader.id) +
			       16 + (c & HVT_COMMIT_SIZE_MASK),
		       8);
		t_equ(stored, dropped);
	}
	t_assert(saw_meta_lost);
	/* The cursor sees the same page: the loss, then the event. */
	t_eq(hvtrace_ring_peek(r, &rec), 1);
	t_equ(rec.lost_before, dropped);
	{
		uint64_t id;

		memcpy(&id, (const uint8_t *)rec.data + 8, 8);
		t_equ(id, x.next_id[1] - 1);
		lost_seen += rec.lost_before;
	}
	hvtrace_ring_consume(r);
	t_eq(hvtrace_ring_peek(r, &rec), 0);
	t_equ(lost_seen, dropped);
	t_equ(m->read + dropped, x.next_id[1]);
	check_unread(&x, r, 1);
	hvtrace_ring_close(r);
	teardown(&x);
}

static void test_overwrite(void)
{
	const struct hvt_trace_buffer_meta *m;
	struct hvtrace_record rec;
	struct hvtrace_ring *r;
	uint64_t got = 0, lost = 0;
	struct ctx x;
	int i;

	setup(&x, HVT_MODE_OVERWRITE);
	t_ok(hvtrace_ring_open_area(x.a, 0, &r));
	m = hvtrace_ring_meta(r);
	for (i = 0; i < 5000; i++)
		t_eq(put(&x, 0, 3), 0);
	/* The first peek fetches the first reader page: overrun counts
	 * what was gone already, reported as lost on that page. */
	t_eq(hvtrace_ring_peek(r, &rec), 1);
	t_assert(m->overrun > 0);
	t_equ(rec.lost_before, m->overrun);
	t_equ(m->reader.lost_events, m->overrun);
	t_equ(m->entries, 5000);
	check_unread(&x, r, 0);
	drain_in_order(r, &got, &lost);
	t_equ(got + lost, 5000);
	t_equ(lost, m->overrun);
	t_equ(m->read, got);
	t_equ(m->entries - m->overrun - m->read, 0);
	hvtrace_ring_close(r);
	teardown(&x);
}

static void test_merge(void)
{
	struct hvtrace_ring *r[NR_CPUS];
	struct hvtrace_merge *mg;
	struct hvtrace_record rec;
	uint64_t last = 0, n = 0, per[NR_CPUS] = { 0 };
	struct ctx x;
	int i, ret;

	setup(&x, HVT_MODE_CONSUME);
	for (i = 0; i < NR_CPUS; i++)
		t_ok(hvtrace_ring_open_area(x.a, i, &r[i]));
	/* Interleaved timestamps across the CPUs, uneven bursts. */
	for (i = 0; i < 600; i++)
		t_eq(put(&x, (i / 3 + i / 7) & 1, 5), 0);
	t_ok(hvtrace_merge_new(r, NR_CPUS, 0, &mg));
	while ((ret = hvtrace_merge_next(mg, &rec, true)) == 1) {
		uint64_t id;

		t_assert(rec.ts > last);	/* unique, increasing */
		t_equ(rec.host_ns, rec.ts);	/* ns clock, no samples */
		last = rec.ts;
		memcpy(&id, (const uint8_t *)rec.data + 8, 8);
		t_equ(id, per[rec.cpu]);
		per[rec.cpu]++;
		n++;
	}
	t_eq(ret, 0);
	t_equ(n, 600);
	t_equ(per[0], x.next_id[0]);
	t_equ(per[1], x.next_id[1]);
	hvtrace_merge_free(mg);
	for (i = 0; i < NR_CPUS; i++)
		hvtrace_ring_close(r[i]);
	teardown(&x);
}

/* A writer that scribbles over a finished page: the view hands out the
 * pages around it, reports the hidden events as lost, counts an error. */
static void test_hostile(void)
{
	struct hvtrace_cpu_stats st;
	struct hvtrace_ring *r;
	uint64_t got = 0, lost = 0;
	struct ctx x;
	uint8_t *page1;
	int i;

	setup(&x, HVT_MODE_CONSUME);
	t_ok(hvtrace_ring_open_area(x.a, 0, &r));
	for (i = 0; i < 3 * 204 + 10; i++)
		t_eq(put(&x, 0, 10), 0);
	/* Page 1: a data event claiming to run far past the page. */
	page1 = x.cb[0].pages + SUBBUF;
	memset(page1 + 16 + 200, 0, 8);
	page1[16 + 200 + 4] = 0xff;
	page1[16 + 200 + 5] = 0xff;
	drain_in_order(r, &got, &lost);
	t_ok(hvtrace_cpu_get_stats(x.a, 0, &st));
	t_assert(st.errors >= 1);
	t_assert(lost > 0);
	t_equ(got + lost, x.next_id[0]);
	hvtrace_ring_close(r);
	teardown(&x);
}

int main(void)
{
	atexit(remove_area);
	test_layout_and_append();
	test_hostile();
	test_lost_consume();
	test_overwrite();
	test_merge();
	printf("ok: mmap view layout, get-reader, counters, losses, hostile "
	       "page, merge\n");
	return 0;
}
