// SPDX-License-Identifier: MIT
/*
 * Hostile writers: areas whose header, commit words, descriptors and pages
 * lie.  For every case the reader must not crash, read out of bounds (this
 * test is also run under ASan+UBSan) or hang (an alarm fails the test),
 * must count the problem in the CPU's error counter where it can tell, and
 * must keep returning intact events from the parts that are not corrupt
 * and from the other CPU.
 *
 * Each case reports its own failures; the test fails if any case did.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"
#include "../foundation/fnd.h"

#define NR_CPUS		2
#define NR_SUBBUFS	8
#define SUBBUF		4096
#define FULL_PAGES	5	/* CPU 0: pages 0..4 final, 5 the tail */

static const char *cur_case;
static int failures, cases;

#define check(cond, fmt, ...)                                                 \
	do {                                                                  \
		if (!(cond)) {                                                \
			failures++;                                           \
			fprintf(stderr, "FAIL [%s] %s:%d: " fmt "\n",         \
				cur_case, __FILE__, __LINE__, ##__VA_ARGS__); \
		}                                                             \
	} while (0)

struct hx {
	char path[64];
	uint8_t *area;
	uint64_t size;
	struct hvt_rb_cpu cb[NR_CPUS];
	uint64_t written[NR_CPUS];
	uint32_t tail;			/* CPU 0's tail seq after setup */
	uint64_t page_entries[NR_SUBBUFS];	/* CPU 0, per seq */
};

/* A fresh area: CPU 0 with FULL_PAGES final pages and a partly filled
 * tail, CPU 1 with a few pages; nothing lost. */
static void hx_setup(struct hx *x, uint32_t mode)
{
	struct hvt_cpu_meta *m;
	uint32_t s;
	int cpu;

	memset(x, 0, sizeof(*x));
	snprintf(x->path, sizeof(x->path), "/dev/shm/hvt-hostile-%d",
		 getpid());
	x->area = fnd_area_create(x->path, NR_CPUS, NR_SUBBUFS, SUBBUF, mode,
				  &x->size);
	if (!x->area)
		t_fail("cannot create %s: %s", x->path, strerror(errno));
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		t_ok(hvt_area_cpu(x->area, x->size, cpu, &x->cb[cpu]));
	m = fnd_meta(x->area, 0);
	while (!(HVT_WORD_SEQ(m->write) == FULL_PAGES &&
		 HVT_WORD_OFFSET(m->write) > 1500))
		t_eq(fnd_write(&x->cb[0], x->written[0]++), 0);
	for (int i = 0; i < 300; i++)
		t_eq(fnd_write(&x->cb[1], x->written[1]++), 0);
	x->tail = HVT_WORD_SEQ(m->write);
	for (s = 0; s < x->tail; s++)
		x->page_entries[s] = m->desc[s + 1].entries_before -
				     m->desc[s].entries_before;
	x->page_entries[x->tail] = HVT_WORD_ENTRIES(m->write);
}

static void hx_teardown(struct hx *x)
{
	munmap(x->area, x->size);
	unlink(x->path);
}

struct rd_result {
	uint64_t read, lost, calls, first_seq, last_seq;
	int last_ret;
};

/*
 * Read @cpu until the reader says nothing is new (bounded: a reader that
 * keeps returning pages forever fails the case).  Every returned event
 * must be an intact record, in order; with @exact, the gaps between them
 * must be exactly the losses the pages report (not so when the writer's
 * counters lie: then the reported losses are whatever it claimed).
 */
static struct rd_result rd_all(struct hvtrace_area *a, int cpu,
			       uint64_t next, bool exact)
{
	static uint8_t page[SUBBUF];
	struct rd_result r = { .first_seq = UINT64_MAX };
	struct hvtrace_page_info info;
	int ret;

	while ((ret = hvtrace_cpu_read_page(a, cpu, page, sizeof(page),
					    &info)) == 1) {
		struct hvt_page_iter it;
		uint64_t commit = hvt_rd64(page + 8);
		int item;

		if (++r.calls > 100000) {
			check(0, "cpu %d: reader never runs dry", cpu);
			break;
		}
		check((commit & HVT_COMMIT_SIZE_MASK) <= SUBBUF - 16,
		      "cpu %d: returned page commit 0x%llx", cpu,
		      (unsigned long long)commit);
		r.lost += info.lost_events;
		if (exact)
			next += info.lost_events;
		hvt_page_iter_init(&it, page + 16,
				   (uint32_t)(commit & HVT_COMMIT_SIZE_MASK),
				   hvt_rd64(page));
		while ((item = hvt_page_next(&it)) > 0) {
			const char *why;
			uint64_t seq;

			if (item != HVT_ITEM_DATA)
				continue;
			if (fnd_check(it.payload, it.len, (uint32_t)cpu, &seq,
				      &why)) {
				check(0, "cpu %d: bad record: %s", cpu, why);
				continue;
			}
			check(exact ? seq == next : seq >= next,
			      "cpu %d: got seq %llu, expected %s%llu", cpu,
			      (unsigned long long)seq, exact ? "" : ">= ",
			      (unsigned long long)next);
			check(it.ts == fnd_ts(seq), "cpu %d: seq %llu ts %llu",
			      cpu, (unsigned long long)seq,
			      (unsigned long long)it.ts);
			if (r.first_seq == UINT64_MAX)
				r.first_seq = seq;
			r.last_seq = seq;
			next = seq + 1;
			r.read++;
		}
		check(item == HVT_ITEM_END,
		      "cpu %d: the reader returned a malformed page", cpu);
	}
	r.last_ret = ret;
	return r;
}

static struct hvtrace_area *hx_open(struct hx *x)
{
	struct hvtrace_area *a = NULL;
	int ret = hvtrace_area_open(x->path, 0, 0, 0, &a);

	if (ret)
		t_fail("[%s] open: %d %s", cur_case, ret, hvtrace_last_error());
	return a;
}

/* CPU 1 is untouched by every case: all of it must read back. */
static void check_other_cpu(struct hx *x, struct hvtrace_area *a)
{
	struct hvtrace_cpu_stats st;
	struct rd_result r = rd_all(a, 1, 0, true);

	check(r.read == x->written[1] && r.lost == 0,
	      "cpu 1: read %llu lost %llu of %llu", (unsigned long long)r.read,
	      (unsigned long long)r.lost, (unsigned long long)x->written[1]);
	check(hvtrace_cpu_get_stats(a, 1, &st) == 0 && st.errors == 0,
	      "cpu 1: errors %llu", (unsigned long long)st.errors);
}

static uint64_t cpu_errors(struct hvtrace_area *a, int cpu)
{
	struct hvtrace_cpu_stats st;

	if (hvtrace_cpu_get_stats(a, cpu, &st)) {
		check(0, "get_stats(%d) failed: %s", cpu, hvtrace_last_error());
		return 0;
	}
	return st.errors;
}

/* Every other entry point on the damaged CPU must survive too. */
static void poke_everything(struct hvtrace_area *a, int cpu)
{
	static uint8_t page[SUBBUF];
	struct hvtrace_cpu_stats st;
	int i;

	hvtrace_cpu_get_stats(a, cpu, &st);
	hvtrace_cpu_take_trailing_lost(a, cpu);
	hvtrace_cpu_seek(a, cpu, true);
	for (i = 0; i < 4 * NR_SUBBUFS; i++)
		if (hvtrace_cpu_read_page(a, cpu, page, sizeof(page),
					  NULL) != 1)
			break;
	hvtrace_cpu_seek(a, cpu, false);
	hvtrace_cpu_read_page(a, cpu, page, sizeof(page), NULL);
	hvtrace_cpu_get_stats(a, cpu, &st);
}

static uint8_t *page_of(struct hx *x, uint32_t seq)
{
	return fnd_page(x->area, 0, seq);
}

/* Offset of the data item number @n (0-based) on page @seq of CPU 0. */
static uint32_t item_offset(struct hx *x, uint32_t seq, uint32_t n)
{
	uint8_t *pg = page_of(x, seq);
	struct hvt_page_iter it;
	uint32_t size = seq == x->tail ?
				HVT_WORD_OFFSET(fnd_meta(x->area, 0)->write) :
				(uint32_t)(hvt_rd64(pg + 8) &
					   HVT_COMMIT_SIZE_MASK);

	hvt_page_iter_init(&it, pg + 16, size, hvt_rd64(pg));
	while (hvt_page_next(&it) > 0)
		if (it.payload && n-- == 0)
			return it.evt_pos;
	t_fail("no item %u on page %u", n, seq);
}

/* --- header cases ------------------------------------------------------ */

struct hdr_case {
	const char *name;
	size_t off;		/* field offset in the header */
	int width;		/* 1, 2, 4 or 8 bytes */
	uint64_t value;
	int want;		/* expected return */
	const char *says;	/* the message must contain this */
};

#define HF(f) offsetof(struct hvt_area_header, f), \
	(int)sizeof(((struct hvt_area_header *)0)->f)

static const struct hdr_case hdr_cases[] = {
	{ "garbage magic", HF(magic), 0x4141414141414141ULL, -EINVAL,
	  "not an hvtrace area" },
	{ "zero magic (not formatted yet)", HF(magic), 0, -EAGAIN, "yet" },
	{ "ABI version 1", HF(abi_version), 1, -EINVAL, "ABI version" },
	{ "ABI version 3", HF(abi_version), 3, -EINVAL, "ABI version" },
	{ "big-endian writer", HF(endian), HVT_AREA_BIG_ENDIAN, -EINVAL,
	  "byte order" },
	{ "32-bit writer", HF(long_size), 4, -EINVAL, "long size" },
	{ "header size 100", HF(header_size), 100, -EINVAL, "header size" },
	{ "page size 8192", HF(page_size), 8192, -EINVAL, "4096" },
	{ "sub-buffer 3000", HF(subbuf_size), 3000, -EINVAL,
	  "sub-buffer size" },
	{ "sub-buffer 128K", HF(subbuf_size), 131072, -EINVAL,
	  "sub-buffer size" },
	{ "0 CPUs", HF(nr_cpus), 0, -EINVAL, "CPU count" },
	{ "257 CPUs", HF(nr_cpus), 257, -EINVAL, "CPU count" },
	{ "3 CPUs in a 2-CPU file", HF(nr_cpus), 3, -EINVAL, "size" },
	{ "3 sub-buffers", HF(nr_subbufs), 3, -EINVAL, "sub-buffer count" },
	{ "1 sub-buffer", HF(nr_subbufs), 1, -EINVAL, "sub-buffer count" },
	{ "16 sub-buffers", HF(nr_subbufs), 16, -EINVAL, "" },
	{ "mode 7", HF(mode), 7, -EINVAL, "mode" },
	{ "control at 0x3000", HF(control_offset), 0x3000, -EINVAL, "control" },
	{ "CPUs at 0x2000", HF(cpu_offset), 0x2000, -EINVAL, "CPU section" },
	{ "CPUs at 0x4000", HF(cpu_offset), 0x4000, -EINVAL, "CPU section" },
	{ "CPUs at 0x6000", HF(cpu_offset), 0x6000, -EINVAL, "CPU section" },
	{ "meta size 0", HF(meta_size), 0, -EINVAL, "meta size" },
	{ "stride + 4096", HF(cpu_stride),
	  0, /* patched below: real + 4096 */ -EINVAL, "stride" },
	{ "area larger than the file", HF(area_size), 1ULL << 40, -EINVAL,
	  "larger than the mapping" },
	{ "area size 2^64-1", HF(area_size), ~0ULL, -EINVAL, "mapping" },
	{ "area smaller than its geometry", HF(area_size), 0x3000, -EINVAL,
	  "geometry" },
	{ "clock 9", HF(clock_id), 9, -EINVAL, "clock" },
	{ "clock shift 64", HF(clock_shift), 64, -EINVAL, "shift" },
	{ "kernel section in a loopback area", HF(kernel_size), 8192,
	  -EINVAL, "kernel section" },
	{ "kernel offset without a size", HF(kernel_offset), 0x100000,
	  -EINVAL, "kernel section" },
};

static void put_field(uint8_t *h, size_t off, int width, uint64_t v)
{
	memcpy(h + off, &v, (size_t)width);	/* little-endian host */
}

static void test_header(void)
{
	struct hvt_area_header saved;
	struct hvtrace_area *a;
	struct hx x;
	size_t i;
	int ret;

	hx_setup(&x, HVT_MODE_CONSUME);
	memcpy(&saved, x.area, sizeof(saved));
	for (i = 0; i < sizeof(hdr_cases) / sizeof(hdr_cases[0]); i++) {
		const struct hdr_case *c = &hdr_cases[i];
		uint64_t v = c->value;
		const char *msg;

		cur_case = c->name;
		cases++;
		if (c->off == offsetof(struct hvt_area_header, cpu_stride))
			v = saved.cpu_stride + 4096;
		memcpy(x.area, &saved, sizeof(saved));
		put_field(x.area, c->off, c->width, v);
		a = NULL;
		ret = hvtrace_area_open(x.path, 0, 0, 0, &a);
		msg = hvtrace_last_error();
		check(ret == c->want, "open returned %d, expected %d (%s)", ret,
		      c->want, msg ? msg : "");
		check(!a || ret == 0, "a handle came back with an error");
		if (ret == 0)
			hvtrace_area_close(a);
		check(msg && strstr(msg, x.path),
		      "message does not name the file: '%s'", msg ? msg : "");
		check(msg && strstr(msg, c->says),
		      "message does not say '%s': '%s'", c->says,
		      msg ? msg : "");
	}
	/* A counter clock without a frequency. */
	cur_case = "counter clock at 0 Hz";
	cases++;
	memcpy(x.area, &saved, sizeof(saved));
	((struct hvt_area_header *)x.area)->clock_id = HVT_CLOCK_COUNTER;
	((struct hvt_area_header *)x.area)->clock_freq_hz = 0;
	ret = hvtrace_area_open(x.path, 0, 0, 0, &a);
	check(ret == -EINVAL, "open returned %d", ret);
	if (!ret)
		hvtrace_area_close(a);
	memcpy(x.area, &saved, sizeof(saved));
	/* A guest's kernel section (agent copy mode) that is not 4 KiB
	 * aligned, overlaps the area or wraps around. */
	{
		static const struct {
			const char *name;
			uint64_t off, size;	/* off 0: the area's end */
		} ks[] = {
			{ "kernel section offset unaligned", 100, 8192 },
			{ "kernel section size unaligned", 0, 8000 },
			{ "kernel section inside the area", 0x5000, 8192 },
			{ "kernel section wrapping around",
			  ~0ULL & ~4095ULL, 8192 },
		};
		struct hvt_area_header *h = (struct hvt_area_header *)x.area;
		const char *msg;

		for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
			cur_case = ks[i].name;
			cases++;
			memcpy(x.area, &saved, sizeof(saved));
			h->writer_kind = HVT_WRITER_GUEST;
			h->kernel_offset = ks[i].off == 100 ? h->area_size + 100
					   : ks[i].off ? ks[i].off
						       : h->area_size;
			h->kernel_size = ks[i].size;
			ret = hvtrace_area_open(x.path, 0, 0, 0, &a);
			msg = hvtrace_last_error();
			check(ret == -EINVAL, "open returned %d", ret);
			check(msg && strstr(msg, "kernel section"),
			      "message does not say 'kernel section': '%s'",
			      msg ? msg : "");
			if (!ret)
				hvtrace_area_close(a);
		}
		/* A well-formed one opens. */
		cur_case = "kernel section after a guest's area";
		cases++;
		memcpy(x.area, &saved, sizeof(saved));
		h->writer_kind = HVT_WRITER_GUEST;
		h->kernel_offset = h->area_size;
		h->kernel_size = 8192;
		ret = hvtrace_area_open(x.path, 0, 0, 0, &a);
		check(ret == 0, "open returned %d (%s)", ret,
		      hvtrace_last_error());
		if (!ret)
			hvtrace_area_close(a);
	}
	memcpy(x.area, &saved, sizeof(saved));
	hx_teardown(&x);
}

/* Files shorter than they claim, or than any area. */
static void test_short_files(void)
{
	static const struct {
		const char *name;
		int64_t cut;	/* new size; negative: size + cut */
		const char *says;
	} cuts[] = {
		{ "empty file", 0, "" },
		{ "header page only", 4096, "too small" },
		{ "header and control only", 20480, "larger than the mapping" },
		{ "file one page short", -4096, "larger than the mapping" },
		{ "file one byte short", -1, "larger than the mapping" },
	};
	struct hvtrace_area *a;
	struct hx x;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		const char *msg;
		off_t len;

		cur_case = cuts[i].name;
		cases++;
		hx_setup(&x, HVT_MODE_CONSUME);
		len = cuts[i].cut >= 0 ? cuts[i].cut :
					 (off_t)x.size + cuts[i].cut;
		t_ok(truncate(x.path, len) ? -errno : 0);
		a = NULL;
		ret = hvtrace_area_open(x.path, 0, 0, 0, &a);
		msg = hvtrace_last_error();
		check(ret == -EINVAL, "open returned %d (%s)", ret,
		      msg ? msg : "");
		check(msg && strstr(msg, cuts[i].says),
		      "message does not say '%s': '%s'", cuts[i].says,
		      msg ? msg : "");
		if (!ret)
			hvtrace_area_close(a);
		/* An explicit size beyond the file is refused too. */
		ret = hvtrace_area_open(x.path, 0, x.size, 0, &a);
		check(ret == -EINVAL, "open with size returned %d", ret);
		if (!ret)
			hvtrace_area_close(a);
		hx_teardown(&x);
	}
}

/* --- CPU data cases ---------------------------------------------------- */

/*
 * What a CPU data case expects on CPU 0 after the corruption:
 *   min_errors  the error counter must reach at least this
 *   hidden      events that must not come back (they sat in damaged
 *               data), all others must, in order; UINT64_MAX: don't know
 */
struct data_case {
	const char *name;
	void (*corrupt)(struct hx *x);
	uint64_t min_errors;
	uint64_t (*hidden)(struct hx *x, uint64_t already);
	bool counters_lie;	/* loss reports follow the lie: no exact gaps */
};

static uint64_t hidden_none(struct hx *x, uint64_t already)
{
	return 0;
}

static uint64_t hidden_page2(struct hx *x, uint64_t already)
{
	return x->page_entries[2];
}

static uint64_t hidden_tail(struct hx *x, uint64_t already)
{
	return x->page_entries[x->tail];
}

static uint64_t hidden_all(struct hx *x, uint64_t already)
{
	return x->written[0] - already;
}

static void c_word_offset(struct hx *x)
{
	struct hvt_cpu_meta *m = fnd_meta(x->area, 0);

	m->write = HVT_WORD(HVT_WORD_SEQ(m->write), HVT_WORD_ENTRIES(m->write),
			    0xffff);
}

static void c_word_seq_ahead(struct hx *x)
{
	struct hvt_cpu_meta *m = fnd_meta(x->area, 0);

	m->write = HVT_WORD(HVT_WORD_SEQ(m->write) + 1000, 3, 40);
}

static void c_word_seq_behind(struct hx *x)
{
	struct hvt_cpu_meta *m = fnd_meta(x->area, 0);

	m->write = HVT_WORD(HVT_WORD_SEQ(m->write) - 100, 3, 40);
}

static void c_word_entries(struct hx *x)
{
	struct hvt_cpu_meta *m = fnd_meta(x->area, 0);

	m->write = HVT_WORD(HVT_WORD_SEQ(m->write), 0xffff,
			    HVT_WORD_OFFSET(m->write));
}

static void c_desc_tail_lies(struct hx *x)
{
	fnd_meta(x->area, 0)->desc[x->tail].seq = x->tail + 77;
}

static void c_desc_page2_lies(struct hx *x)
{
	fnd_meta(x->area, 0)->desc[2].seq = 2 + NR_SUBBUFS;
}

static void c_commit_huge(struct hx *x)
{
	uint64_t v = SUBBUF;	/* more than the 4080 data bytes */

	memcpy(page_of(x, 2) + 8, &v, 8);
}

static void c_commit_reserved(struct hx *x)
{
	uint64_t v = hvt_rd64(page_of(x, 2) + 8) | (1ULL << 28);

	memcpy(page_of(x, 2) + 8, &v, 8);
}

static void c_commit_high(struct hx *x)
{
	uint64_t v = hvt_rd64(page_of(x, 2) + 8) | (1ULL << 40);

	memcpy(page_of(x, 2) + 8, &v, 8);
}

static void c_commit_mid_event(struct hx *x)
{
	/* End the page 6 bytes into its second event. */
	uint64_t v = item_offset(x, 2, 1) + 6;

	memcpy(page_of(x, 2) + 8, &v, 8);
}

static void c_event_past_commit(struct hx *x)
{
	/* Turn the second event into a large event of 5000 bytes. */
	uint8_t *e = page_of(x, 2) + 16 + item_offset(x, 2, 1);
	uint32_t hdr = 0, len = 5000;

	memcpy(e, &hdr, 4);
	memcpy(e + 4, &len, 4);
}

static void c_event_zero_len(struct hx *x)
{
	uint8_t *e = page_of(x, 2) + 16 + item_offset(x, 2, 1);
	uint32_t hdr = 0, len = 0;

	memcpy(e, &hdr, 4);
	memcpy(e + 4, &len, 4);
}

static void c_padding_past_commit(struct hx *x)
{
	uint8_t *e = page_of(x, 2) + 16 + item_offset(x, 2, 1);
	uint32_t hdr = HVT_TYPE_PADDING | (1u << 5), len = 60000;

	memcpy(e, &hdr, 4);
	memcpy(e + 4, &len, 4);
}

static void c_small_past_commit(struct hx *x)
{
	/* The page's last data event claims 28 words. */
	uint8_t *pg = page_of(x, 2);
	uint32_t size = (uint32_t)(hvt_rd64(pg + 8) & HVT_COMMIT_SIZE_MASK);
	uint32_t n = (uint32_t)x->page_entries[2] - 1;
	uint8_t *e = pg + 16 + item_offset(x, 2, n);
	uint32_t hdr = 28;

	/* Shrink the commit to end right after this event's header + 8. */
	uint64_t v = (uint64_t)(e - pg - 16) + 12;

	t_assert(v <= size);
	memcpy(e, &hdr, 4);
	memcpy(pg + 8, &v, 8);
}

static void c_time_extend_truncated(struct hx *x)
{
	/* The tail page's last committed item is a TIME_EXTEND header with
	 * no array word. */
	struct hvt_cpu_meta *m = fnd_meta(x->area, 0);
	uint32_t off = HVT_WORD_OFFSET(m->write);
	uint32_t hdr = HVT_TYPE_TIME_EXTEND | (5u << 5);

	memcpy(page_of(x, x->tail) + 16 + off, &hdr, 4);
	m->write = HVT_WORD(x->tail, HVT_WORD_ENTRIES(m->write), off + 4);
}

static void c_time_extend_final(struct hx *x)
{
	/* Same on a final page: the commit ends 4 bytes into a
	 * TIME_EXTEND. */
	uint8_t *pg = page_of(x, 2);
	uint32_t at = item_offset(x, 2, 1);
	uint32_t hdr = HVT_TYPE_TIME_EXTEND | (5u << 5);
	uint64_t v = at + 4;

	memcpy(pg + 16 + at, &hdr, 4);
	memcpy(pg + 8, &v, 8);
}

static void c_entries_backwards(struct hx *x)
{
	fnd_meta(x->area, 0)->desc[3].entries_before -= 7;
}

static void c_lost_backwards(struct hx *x)
{
	/* Page 3 claims 100 drops before it, page 4 none: the drop counter
	 * went backwards between them. */
	fnd_meta(x->area, 0)->desc[3].lost_before = 100;
}

static void c_all_desc_tail(struct hx *x)
{
	struct hvt_cpu_meta *m = fnd_meta(x->area, 0);

	for (int i = 0; i < NR_SUBBUFS; i++)
		m->desc[i].seq = x->tail;
}

static void c_garbage_meta(struct hx *x)
{
	/* Every byte of the meta page random. */
	uint8_t *m = (uint8_t *)fnd_meta(x->area, 0);
	uint64_t r = 0x1234567;

	for (uint32_t i = 0; i < hvt_meta_size(NR_SUBBUFS); i++) {
		r = fnd_mix(r + i);
		m[i] = (uint8_t)r;
	}
}

static void c_garbage_pages(struct hx *x)
{
	/* Every page's bytes random, the meta intact. */
	uint64_t r = 0x89abcdef;

	for (uint32_t s = 0; s <= x->tail; s++) {
		uint8_t *pg = page_of(x, s);

		for (uint32_t i = 0; i < SUBBUF; i++) {
			r = fnd_mix(r + i);
			pg[i] = (uint8_t)r;
		}
	}
}

static const struct data_case data_cases[] = {
	{ "word offset beyond the page", c_word_offset, 1, hidden_all, false },
	{ "word seq far ahead", c_word_seq_ahead, 1, NULL, true },
	{ "word seq behind", c_word_seq_behind, 1, NULL, true },
	{ "word entries lie", c_word_entries, 0, hidden_none, false },
	{ "tail descriptor names another page", c_desc_tail_lies, 1,
	  hidden_tail, false },
	{ "final page descriptor names another page", c_desc_page2_lies, 0,
	  hidden_page2, false },
	{ "commit larger than the page", c_commit_huge, 1,
	  hidden_page2, false },
	{ "commit with a reserved bit", c_commit_reserved, 1,
	  hidden_page2, false },
	{ "commit with high bits", c_commit_high, 1, hidden_page2, false },
	{ "commit ends inside an event", c_commit_mid_event, 1,
	  hidden_page2, false },
	{ "large event runs past the commit", c_event_past_commit, 1,
	  hidden_page2, false },
	{ "large event of length 0", c_event_zero_len, 1, hidden_page2, false },
	{ "padding runs past the commit", c_padding_past_commit, 1,
	  hidden_page2, false },
	{ "small event runs past the commit", c_small_past_commit, 1,
	  hidden_page2, false },
	{ "TIME_EXTEND truncated on the tail", c_time_extend_truncated, 1,
	  hidden_tail, false },
	{ "TIME_EXTEND truncated on a final page", c_time_extend_final, 1,
	  hidden_page2, false },
	{ "entries_before goes backwards", c_entries_backwards, 1, NULL, true },
	{ "lost_before goes backwards", c_lost_backwards, 1, NULL, true },
	{ "every descriptor names the tail", c_all_desc_tail, 0, NULL, true },
	{ "garbage meta page", c_garbage_meta, 0, NULL, true },
	{ "garbage pages", c_garbage_pages, 1, NULL, false },
};

static void run_data_case(const struct data_case *c, uint32_t mode,
			  bool read_first)
{
	struct hvtrace_area *a;
	struct rd_result r1 = { 0 }, r2;
	uint64_t hidden, errs;
	struct hx x;

	cases++;
	hx_setup(&x, mode);
	a = hx_open(&x);
	if (read_first) {
		/* Read the first page, then the writer turns hostile in
		 * data not read yet. */
		static uint8_t page[SUBBUF];
		struct hvtrace_page_info info;

		if (hvtrace_cpu_read_page(a, 0, page, sizeof(page), &info) ==
		    1)
			r1.read = info.entries;
	}
	c->corrupt(&x);
	r2 = rd_all(a, 0, r1.read, !c->counters_lie);
	check(r2.last_ret == 0, "cpu 0: read ended with %d (%s)", r2.last_ret,
	      hvtrace_last_error());
	errs = cpu_errors(a, 0);
	check(errs >= c->min_errors, "cpu 0: %llu errors counted, expected "
	      ">= %llu", (unsigned long long)errs,
	      (unsigned long long)c->min_errors);
	if (c->hidden) {
		hidden = c->hidden(&x, r1.read);
		check(r1.read + r2.read == x.written[0] - hidden,
		      "cpu 0: read %llu + %llu, expected %llu - %llu hidden",
		      (unsigned long long)r1.read, (unsigned long long)r2.read,
		      (unsigned long long)x.written[0],
		      (unsigned long long)hidden);
	}
	/* Still no hang or crash when the calls go on. */
	r2 = rd_all(a, 0, 0, false);
	check(r2.read == 0, "cpu 0: %llu more events on a second pass",
	      (unsigned long long)r2.read);
	check_other_cpu(&x, a);
	poke_everything(a, 0);
	hvtrace_area_close(a);

	/* A fresh reader attaching to the damaged area survives too. */
	a = hx_open(&x);
	rd_all(a, 0, 0, false);
	poke_everything(a, 0);
	check_other_cpu(&x, a);
	hvtrace_area_close(a);
	hx_teardown(&x);
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: hostile_area hung (alarm)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(2);
}

int main(void)
{
	static char names[64][128];
	size_t i;
	int n = 0;

	fnd_need_shm();
	signal(SIGALRM, on_alarm);
	alarm(120);

	test_header();
	test_short_files();
	for (i = 0; i < sizeof(data_cases) / sizeof(data_cases[0]); i++) {
		static const uint32_t modes[] = { HVT_MODE_CONSUME,
						  HVT_MODE_OVERWRITE };

		for (int v = 0; v < 4; v++) {
			snprintf(names[n], sizeof(names[n]), "%s (%s%s)",
				 data_cases[i].name,
				 v & 1 ? "overwrite" : "consume",
				 v & 2 ? ", after reading a page" : "");
			cur_case = names[n];
			run_data_case(&data_cases[i], modes[v & 1], v & 2);
			n = (n + 1) % 64;
		}
	}
	if (failures) {
		fprintf(stderr, "%d check(s) failed in %d cases\n", failures,
			cases);
		return 1;
	}
	printf("ok: %d hostile cases: no crash, no hang, errors counted, "
	       "the other CPU intact\n", cases);
	return 0;
}
