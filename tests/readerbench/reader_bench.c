// SPDX-License-Identifier: MIT
/*
 * Reader benchmark: turning ftrace sub-buffers into records.
 *
 * The same pages (written by the writer core: selftest-sized records, and
 * a mix of sizes with occasional time extends) are walked, in one run and
 * interleaved, by
 *
 *   ours     hvtrace_subbuf_iter_init() + hvtrace_subbuf_next(), the
 *            walker the stream path uses
 *   kbuffer  libtraceevent's kbuffer_load_subbuffer() +
 *            kbuffer_read_event()/kbuffer_next_event()
 *
 * Each records the timestamp, address and size of every event, so both do
 * the same work.  Also measured: the whole area path (mmap view,
 * get-reader copies and validation, cursor) and trace_pipe text
 * formatting, for context.
 *
 * Prints "BENCH <name> <value> <unit>" lines; the target is ours >= 2x
 * kbuffer (reader_iter_vs_kbuffer).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <kbuffer.h>

#include <hvtrace.h>
#include <hvtrace/ring_buffer.h>

#define SUBBUF		4096
#define NR_PAGES	1024	/* 4 MiB of pages */
#define MIN_SECS	0.25
#define ROUNDS		5

static uint64_t rng = 0x853c49e6748fea9bULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct pages {
	uint8_t *mem;		/* NR_PAGES sub-buffers */
	uint64_t events;	/* per pass */
	uint64_t bytes;		/* committed data bytes per pass */
};

/* Fill an overwrite-mode ring of NR_PAGES with events; return the pages
 * in order (the tail page closed by one more page switch). */
static void make_pages(struct pages *p, int mixed)
{
	struct hvt_area_params ap = {
		.nr_cpus = 1, .nr_subbufs = NR_PAGES, .subbuf_size = SUBBUF,
		.mode = HVT_MODE_OVERWRITE, .writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "bench",
	};
	struct hvt_common_fields c = {
		.common_type = HVTRACE_EVENT_SELFTEST_ID, .common_pid = 1,
	};
	struct hvt_rb_cpu cb;
	uint8_t payload[256];
	uint64_t ts = 1000, id = 0, w;
	void *area;
	uint32_t i;

	ap.area_size = hvt_area_size(1, NR_PAGES, SUBBUF);
	if (posix_memalign(&area, 4096, ap.area_size))
		exit(1);
	memset(area, 0, ap.area_size);
	if (hvt_area_format(area, &ap) || hvt_area_cpu(area, ap.area_size, 0,
						       &cb))
		exit(1);
	memset(payload, 0x5a, sizeof(payload));
	/* Exactly NR_PAGES finished pages: stop when page NR_PAGES starts. */
	for (;;) {
		struct hvt_iovec iov = { payload, 8 };

		w = cb.meta->write;
		if (HVT_WORD_SEQ(w) == NR_PAGES)
			break;
		if (mixed) {
			uint64_t r = rnd();

			iov.len = r % 10 ? 8 + (uint32_t)(r >> 8) % 56
					 : 100 + (uint32_t)(r >> 8) % 150;
			ts += r % 97 == 0 ? (1ULL << 28) : (r >> 20) % 500;
		} else {
			ts += 137;
		}
		memcpy(payload, &id, 8);
		id++;
		hvt_rb_write(&cb, ts, &c, &iov, 1);
	}
	p->mem = malloc((size_t)NR_PAGES * SUBBUF);
	if (!p->mem)
		exit(1);
	/* Page NR_PAGES (the tail) reused slot 0; slots 1..N-1 hold the
	 * finished pages 1..N-1.  Take those, and page 1 once more, for N
	 * finished pages. */
	memcpy(p->mem, (uint8_t *)cb.pages + SUBBUF,
	       (size_t)(NR_PAGES - 1) * SUBBUF);
	memcpy(p->mem + (size_t)(NR_PAGES - 1) * SUBBUF,
	       (uint8_t *)cb.pages + SUBBUF, SUBBUF);
	p->events = 0;
	p->bytes = 0;
	for (i = 0; i < NR_PAGES; i++) {
		struct hvtrace_subbuf_iter it;
		struct hvtrace_record rec;

		if (hvtrace_subbuf_iter_init(&it, p->mem + (size_t)i * SUBBUF,
					     SUBBUF, 0))
			exit(1);
		p->bytes += it.size;
		while (hvtrace_subbuf_next(&it, &rec) == 1)
			p->events++;
	}
	free(area);
}

static uint64_t sink;

static uint64_t pass_ours(const struct pages *p)
{
	uint64_t n = 0, acc = 0;
	uint32_t i;

	for (i = 0; i < NR_PAGES; i++) {
		struct hvtrace_subbuf_iter it;
		struct hvtrace_record rec;

		hvtrace_subbuf_iter_init(&it, p->mem + (size_t)i * SUBBUF,
					 SUBBUF, 0);
		while (hvtrace_subbuf_next(&it, &rec) == 1) {
			acc += rec.ts + rec.size + (uintptr_t)rec.data;
			n++;
		}
	}
	sink += acc;
	return n;
}

static uint64_t pass_kbuffer(const struct pages *p, struct kbuffer *kb)
{
	uint64_t n = 0, acc = 0;
	uint32_t i;

	for (i = 0; i < NR_PAGES; i++) {
		unsigned long long ts;
		void *d;

		kbuffer_load_subbuffer(kb, p->mem + (size_t)i * SUBBUF);
		for (d = kbuffer_read_event(kb, &ts); d;
		     d = kbuffer_next_event(kb, &ts)) {
			acc += ts + (uint64_t)kbuffer_event_size(kb) +
			       (uintptr_t)d;
			n++;
		}
	}
	sink += acc;
	return n;
}

/* Best rate over ROUNDS rounds of at least MIN_SECS each. */
struct meas {
	double best;		/* passes per second */
};

static void measure(struct meas *m, const struct pages *p, int which,
		    struct kbuffer *kb)
{
	double t0 = now(), t;
	uint64_t passes = 0, n = 0;

	do {
		n += which ? pass_kbuffer(p, kb) : pass_ours(p);
		passes++;
		t = now() - t0;
	} while (t < MIN_SECS);
	if (n != passes * p->events) {
		fprintf(stderr, "reader_bench: %s saw %llu events, expected "
				"%llu\n",
			which ? "kbuffer" : "ours", (unsigned long long)n,
			(unsigned long long)(passes * p->events));
		exit(1);
	}
	if ((double)passes / t > m->best)
		m->best = (double)passes / t;
}

static void compare(const char *tag, int mixed)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
	struct meas ours = { 0 }, theirs = { 0 };
	struct pages p;
	int r;

	make_pages(&p, mixed);
	for (r = 0; r < ROUNDS; r++) {	/* interleaved: same conditions */
		measure(&ours, &p, 0, kb);
		measure(&theirs, &p, 1, kb);
	}
	printf("# %s: %llu events, %llu data bytes in %d pages per pass\n",
	       tag, (unsigned long long)p.events, (unsigned long long)p.bytes,
	       NR_PAGES);
	printf("BENCH reader_iter_%s_events %.0f events/s\n", tag,
	       ours.best * (double)p.events);
	printf("BENCH reader_iter_%s_mbps %.1f MB/s\n", tag,
	       ours.best * (double)p.bytes / 1e6);
	printf("BENCH reader_kbuffer_%s_events %.0f events/s\n", tag,
	       theirs.best * (double)p.events);
	printf("BENCH reader_kbuffer_%s_mbps %.1f MB/s\n", tag,
	       theirs.best * (double)p.bytes / 1e6);
	printf("BENCH reader_iter_vs_kbuffer_%s %.2f x\n", tag,
	       ours.best / theirs.best);
	kbuffer_free(kb);
	free(p.mem);
}

/* The whole area path: mmap view + get-reader + cursor, plus text. */
static void area_path(void)
{
	struct hvt_area_params ap = {
		.nr_cpus = 1, .nr_subbufs = NR_PAGES, .subbuf_size = SUBBUF,
		.mode = HVT_MODE_OVERWRITE, .writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "bench",
	};
	struct hvt_common_fields c = {
		.common_type = HVTRACE_EVENT_SELFTEST_ID, .common_pid = 1,
	};
	double best_ring = 0, best_text = 0;
	struct hvtrace_decoder *dec;
	struct hvt_rb_cpu cb;
	char path[64], line[256];
	uint64_t id, total = 0;
	uint8_t *mem;
	int fd, r;

	snprintf(path, sizeof(path), "/dev/shm/hvt-bench-%d", getpid());
	ap.area_size = hvt_area_size(1, NR_PAGES, SUBBUF);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)ap.area_size))
		exit(1);
	mem = mmap(NULL, ap.area_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	close(fd);
	if (mem == MAP_FAILED || hvt_area_format(mem, &ap) ||
	    hvt_area_cpu(mem, ap.area_size, 0, &cb))
		exit(1);
	for (id = 0; id < (uint64_t)(NR_PAGES - 1) * 204; id++) {
		struct hvt_iovec iov = { &id, 8 };

		hvt_rb_write(&cb, 1000 + id * 137, &c, &iov, 1);
	}
	if (hvtrace_decoder_new(SUBBUF, &dec) ||
	    hvtrace_decoder_add_builtin(dec, HVT_WRITER_LOOPBACK))
		exit(1);
	for (r = 0; r < ROUNDS; r++) {
		struct hvtrace_area *a;
		struct hvtrace_ring *ring;
		struct hvtrace_record rec;
		uint64_t n = 0;
		double t0, t;

		/* A read-only attach starts at the oldest page each time. */
		if (hvtrace_area_open(path, 0, 0, 0, &a) ||
		    hvtrace_ring_open_area(a, 0, &ring))
			exit(1);
		t0 = now();
		while (hvtrace_ring_peek(ring, &rec) == 1) {
			n++;
			hvtrace_ring_consume(ring);
		}
		t = now() - t0;
		if (n / t > best_ring)
			best_ring = (double)n / t;
		total = n;
		hvtrace_ring_close(ring);
		hvtrace_area_close(a);

		if (hvtrace_area_open(path, 0, 0, 0, &a) ||
		    hvtrace_ring_open_area(a, 0, &ring))
			exit(1);
		t0 = now();
		n = 0;
		while (hvtrace_ring_peek(ring, &rec) == 1) {
			sink += (uint64_t)hvtrace_decoder_format(
				dec, &rec, rec.host_ns, 0, line, sizeof(line));
			n++;
			hvtrace_ring_consume(ring);
		}
		t = now() - t0;
		if (n / t > best_text)
			best_text = (double)n / t;
		hvtrace_ring_close(ring);
		hvtrace_area_close(a);
	}
	printf("# area path: %llu events per pass through the mmap view\n",
	       (unsigned long long)total);
	printf("BENCH reader_ring_cursor_events %.0f events/s\n", best_ring);
	printf("BENCH reader_text_lines %.0f lines/s\n", best_text);
	hvtrace_decoder_free(dec);
	munmap(mem, ap.area_size);
	unlink(path);
}

int main(void)
{
	compare("selftest", 0);
	compare("mixed", 1);
	area_path();
	printf("# checksum %llu\n", (unsigned long long)sink);
	return 0;
}
