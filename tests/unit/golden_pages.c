// SPDX-License-Identifier: MIT
/*
 * Golden pages: hand-built sub-buffers whose every byte is spelled out and
 * commented below, put into a real area file, then decoded three ways:
 *
 *   1. hvtrace_cpu_read_page() on the area (the host reader), its output
 *      pages parsed with libtraceevent's kbuffer;
 *   2. kbuffer on the raw golden pages;
 *   3. hvt_page_next() on the raw golden pages.
 *
 * Each must give exactly the timestamps, ids, payloads and lost counts
 * computed by hand in the comments (the expected[] table).  Nothing here
 * is produced by the code under test.
 *
 * Encoding reminders (ftrace, little-endian): an event header word is
 * time_delta << 5 | type_len; type_len 1..28 = data of 4 * type_len bytes,
 * 0 = data whose length + 4 is in the next word, 29 = padding (next word:
 * bytes after the header; a bare header with delta 0 is a 4-byte null
 * event), 30 = TIME_EXTEND (delta = next word << 27 | time_delta), 31 =
 * TIME_STAMP (absolute, same split).
 *
 * The area: 1 CPU, 4 sub-buffers of 4096 bytes, consume mode.
 *   seq 0  final page, 7 events, every encoding, tail padding to the end
 *   seq 1  final page, RB_MISSED_EVENTS|RB_MISSED_STORED, stored count 5,
 *          ends with a 4-byte null padding
 *   seq 2  final page, RB_MISSED_EVENTS without a stored count (the
 *          descriptors say 3 lost), a TIME_STAMP
 *   seq 3  the tail page: 2 committed events, then uncommitted bytes;
 *          later one more event is "committed" on it
 *
 * Then a fresh ring read before its first event, with and without a seek
 * to the newest data: the first event keeps its own timestamp.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <kbuffer.h>

#include <hvtrace.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"
#include "../foundation/fnd.h"

#define SUBBUF		4096u
#define NR_SUBBUFS	4u

/* Little-endian byte spelling of literal words. */
#define W32(x)                                                                \
	(uint8_t)((x) & 0xff), (uint8_t)(((x) >> 8) & 0xff),                   \
		(uint8_t)(((x) >> 16) & 0xff), (uint8_t)(((x) >> 24) & 0xff)
#define W64(x) W32((uint32_t)((x) & 0xffffffffULL)), W32((uint32_t)((x) >> 32))
/* Common fields: u16 common_type, u8 flags 0, u8 preempt 0, s32 pid. */
#define COMMON(id, pid) W32((uint32_t)(id)), W32((uint32_t)(pid))
/* Filler bytes b, b+1, ... */
#define FILL4(b)                                                              \
	(uint8_t)(b), (uint8_t)((b) + 1), (uint8_t)((b) + 2), (uint8_t)((b) + 3)
#define FILL8(b) FILL4(b), FILL4((b) + 4)
#define FILL16(b) FILL8(b), FILL8((b) + 8)
#define FILL32(b) FILL16(b), FILL16((b) + 16)
#define FILL64(b) FILL32(b), FILL32((b) + 32)

/* --- seq 0 ----------------------------------------------------------- */

static const uint8_t page0_hdr[16] = {
	W64(0x00000000000f4240ULL),	/* time_stamp = 1000000 */
	W64(0x0000000000000ff0ULL),	/* commit = 4080: full, no flags */
};

static const uint8_t page0_data[] = {
	/* @0 e0: type_len 3 (12 bytes), delta 0      -> ts 1000000 */
	W32(0x00000003),
	COMMON(0x0101, 1), FILL4(0xa0),
	/* @16 e1: type_len 28 (112 bytes, the largest small event),
	 * delta 5 (0xbc = 5 << 5 | 28)               -> ts 1000005 */
	W32(0x000000bc),
	COMMON(0x0102, 2), FILL64(0x00), FILL32(0x40), FILL8(0x60),
	/* @132 e2: type_len 0, delta 7 (0xe0 = 7 << 5), array[0] = 124 =
	 * 120 payload bytes + 4                       -> ts 1000012 */
	W32(0x000000e0), W32(0x0000007c),
	COMMON(0x0103, 3), FILL64(0x80), FILL32(0xc0), FILL16(0xe0),
	/* @260 TIME_EXTEND exactly at the 27-bit boundary: type_len 30,
	 * time_delta 0, array[0] = 1: delta = 1 << 27 = 134217728 */
	W32(0x0000001e), W32(0x00000001),
	/* @268 e3: type_len 2, delta 0     -> ts 1000012 + 134217728
	 *                                        = 135217740 */
	W32(0x00000002),
	COMMON(0x0104, 4),
	/* @280 e4: type_len 2, the largest plain delta 2^27 - 1 =
	 * 134217727 (0xffffffe2 = 0x7ffffff << 5 | 2)
	 *                                  -> ts 135217740 + 134217727
	 *                                        = 269435467 */
	W32(0xffffffe2),
	COMMON(0x0105, 5),
	/* @292 TIME_EXTEND of 0x123456789 = 4886718345: time_delta =
	 * 0x3456789 (low 27 bits), array[0] = 0x24 (the rest >> 27);
	 * 0x3456789 << 5 | 30 = 0x68acf13e */
	W32(0x68acf13e), W32(0x00000024),
	/* @300 e5: type_len 4 (16 bytes), delta 3 (0x64 = 3 << 5 | 4)
	 *                      -> ts 269435467 + 4886718345 + 3
	 *                            = 5156153815 */
	W32(0x00000064),
	COMMON(0x0106, 6), FILL8(0x10),
	/* @320 e6: type_len 1 (4 bytes: common_type 0x0107, flags 0xaa,
	 * preempt 0xbb, no pid), delta 9 (0x121)  -> ts 5156153824 */
	W32(0x00000121),
	W32(0xbbaa0107),
	/* @328 tail padding: type_len 29, delta 1 (0x3d), array[0] = 3748
	 * = 4080 - 328 - 4 bytes after the header: to the page end */
	W32(0x0000003d), W32(0x00000ea4),
};
HVT_STATIC_ASSERT(sizeof(page0_data) == 336, "page 0 spelled out");

/* --- seq 1 ----------------------------------------------------------- */

static const uint8_t page1_hdr[16] = {
	W64(0x0000000165a0bc00ULL),	/* time_stamp = 6000000000 */
	/* commit: RB_MISSED_EVENTS (bit 31) | RB_MISSED_STORED (bit 30) |
	 * 148 data bytes */
	W64(0x00000000c0000094ULL),
};

static const uint8_t page1_data[] = {
	/* @0 e7: type_len 0, delta 0, array[0] = 121: a 117-byte payload,
	 * read as 120 (lengths round up to 4)  -> ts 6000000000 */
	W32(0x00000000), W32(0x00000079),
	COMMON(0x0108, 8), FILL64(0x20), FILL32(0x60), FILL16(0x80),
	/* @128 e8: type_len 3, delta 100 (0xc83 = 100 << 5 | 3)
	 *                                      -> ts 6000000100 */
	W32(0x00000c83),
	COMMON(0x0109, 9), FILL4(0x30),
	/* @144 4-byte null padding: type_len 29, delta 0, no array word */
	W32(0x0000001d),
	/* @148 = commit size: the stored missed-events count, a long */
	W64(0x0000000000000005ULL),
};
HVT_STATIC_ASSERT(sizeof(page1_data) == 148 + 8, "page 1 spelled out");

/* --- seq 2 ----------------------------------------------------------- */

static const uint8_t page2_hdr[16] = {
	W64(0x0000000165a0bfe8ULL),	/* time_stamp = 6000001000 */
	/* commit: RB_MISSED_EVENTS only (count unknown) | 32 data bytes */
	W64(0x0000000080000020ULL),
};

static const uint8_t page2_data[] = {
	/* @0 e9: type_len 2, delta 0            -> ts 6000001000 */
	W32(0x00000002),
	COMMON(0x010a, 10),
	/* @12 TIME_STAMP 7000000000 = 0x1a13b8600: time_delta = 0x13b8600,
	 * array[0] = 0x34; 0x13b8600 << 5 | 31 = 0x2770c01f */
	W32(0x2770c01f), W32(0x00000034),
	/* @20 e10: type_len 2, delta 50 (0x642 = 50 << 5 | 2)
	 *                                       -> ts 7000000050 */
	W32(0x00000642),
	COMMON(0x010b, 11),
};
HVT_STATIC_ASSERT(sizeof(page2_data) == 32, "page 2 spelled out");

/* --- seq 3, the tail ------------------------------------------------- */

static const uint8_t page3_hdr[16] = {
	W64(0x00000001dcd65000ULL),	/* time_stamp = 8000000000 */
	W64(0x0000000000000000ULL),	/* commit 0: the word bounds it */
};

static const uint8_t page3_data[] = {
	/* @0 e11: type_len 2, delta 0           -> ts 8000000000 */
	W32(0x00000002),
	COMMON(0x010c, 12),
	/* @12 e12: type_len 4, delta 20 (0x284 = 20 << 5 | 4)
	 *                                       -> ts 8000000020 */
	W32(0x00000284),
	COMMON(0x010d, 13), FILL8(0x40),
	/* @32 uncommitted: an event still being written (word offset 32) */
	W32(0x00000022),
	COMMON(0x7777, 99),
};

/* Appended later at @32, then the word says offset 44, 3 entries. */
static const uint8_t page3_more[] = {
	/* e13: type_len 2, delta 5 (0xa2)   -> ts 8000000025 */
	W32(0x000000a2),
	COMMON(0x010e, 14),
};

/* --- what every decoder must return ---------------------------------- */

struct golden_event {
	uint64_t ts;
	uint16_t id;
	int32_t pid;		/* -1: the record is shorter than 8 bytes */
	uint32_t len;		/* payload bytes the decoder reports */
	uint8_t fill;		/* byte 8 + k is fill + k */
	const uint8_t *raw;	/* or exactly these bytes */
};

static const uint8_t e6_raw[4] = { 0x07, 0x01, 0xaa, 0xbb };

static const struct golden_event expected[] = {
	/* seq 0 */
	{ 1000000, 0x0101, 1, 12, 0xa0, NULL },
	{ 1000005, 0x0102, 2, 112, 0x00, NULL },
	{ 1000012, 0x0103, 3, 120, 0x80, NULL },
	{ 135217740, 0x0104, 4, 8, 0, NULL },
	{ 269435467, 0x0105, 5, 8, 0, NULL },
	{ 5156153815ULL, 0x0106, 6, 16, 0x10, NULL },
	{ 5156153824ULL, 0x0107, -1, 4, 0, e6_raw },
	/* seq 1 */
	{ 6000000000ULL, 0x0108, 8, 120, 0x20, NULL },
	{ 6000000100ULL, 0x0109, 9, 12, 0x30, NULL },
	/* seq 2 */
	{ 6000001000ULL, 0x010a, 10, 8, 0, NULL },
	{ 7000000050ULL, 0x010b, 11, 8, 0, NULL },
	/* seq 3 */
	{ 8000000000ULL, 0x010c, 12, 8, 0, NULL },
	{ 8000000020ULL, 0x010d, 13, 16, 0x40, NULL },
	/* appended on seq 3 */
	{ 8000000025ULL, 0x010e, 14, 8, 0, NULL },
};
#define NR_EXPECTED ((int)(sizeof(expected) / sizeof(expected[0])))

/* Raw pages, with what kbuffer and the walker must see in each. */
struct golden_page {
	const uint8_t *hdr, *data;
	uint32_t data_len;
	uint32_t first, nr;	/* expected[first .. first + nr) */
	long long kb_missed;	/* kbuffer_missed_events(): -1 = unknown */
	const char *items;	/* walker items: D data, T time, P padding */
};

static const struct golden_page pages[] = {
	{ page0_hdr, page0_data, sizeof(page0_data), 0, 7, 0, "DDDTDDTDDP" },
	{ page1_hdr, page1_data, sizeof(page1_data), 7, 2, 5, "DD" },
	{ page2_hdr, page2_data, sizeof(page2_data), 9, 2, -1, "DTD" },
	{ page3_hdr, page3_data, sizeof(page3_data), 11, 2, 0, "DD" },
};

/* What hvtrace_cpu_read_page() must return, call by call. */
struct golden_read {
	uint32_t first, nr;
	uint64_t lost;
	uint32_t seq, size;
	uint64_t first_ts;
	uint32_t flags;
};

static const struct golden_read reads[] = {
	{ 0, 7, 0, 0, 4080, 1000000, 0 },
	/* 144, not 148: the bare 4-byte padding header at @144 is left out
	 * of the page passed on (kbuffer would read its missing length word
	 * past the data; the kernel never commits one). */
	{ 7, 2, 5, 1, 144, 6000000000ULL, 0 },
	{ 9, 2, 3, 2, 32, 6000001000ULL, 0 },
	{ 11, 2, 0, 3, 32, 8000000000ULL, HVTRACE_PAGE_TAIL },
};
/* After the append: only the new event, the page starting at the running
 * timestamp of e12. */
static const struct golden_read read_more = {
	13, 1, 0, 3, 12, 8000000020ULL, HVTRACE_PAGE_TAIL
};

static void check_event(int idx, uint64_t ts, const uint8_t *data,
			uint32_t len, const char *who)
{
	const struct golden_event *e = &expected[idx];
	uint32_t k;

	if (ts != e->ts)
		t_fail("%s: event %d: ts %llu, expected %llu", who, idx,
		       (unsigned long long)ts, (unsigned long long)e->ts);
	if (len != e->len)
		t_fail("%s: event %d: length %u, expected %u", who, idx, len,
		       e->len);
	if (e->raw) {
		if (memcmp(data, e->raw, len))
			t_fail("%s: event %d: payload bytes differ", who, idx);
		return;
	}
	if ((uint16_t)(data[0] | data[1] << 8) != e->id || data[2] || data[3])
		t_fail("%s: event %d: id 0x%02x%02x, expected 0x%04x", who, idx,
		       data[1], data[0], e->id);
	if ((int32_t)hvt_rd32(data + 4) != e->pid)
		t_fail("%s: event %d: pid %d, expected %d", who, idx,
		       (int32_t)hvt_rd32(data + 4), e->pid);
	for (k = 0; k + 8 < len; k++)
		if (data[8 + k] != (uint8_t)(e->fill + k))
			t_fail("%s: event %d: payload byte %u is 0x%02x, "
			       "expected 0x%02x",
			       who, idx, 8 + k, data[8 + k],
			       (uint8_t)(e->fill + k));
}

/* Decode a whole sub-buffer with kbuffer; returns events seen. */
static uint32_t kb_decode(struct kbuffer *kb, uint8_t *sub, uint32_t first,
			  long long want_missed, const char *who)
{
	unsigned long long ts;
	uint32_t n = 0;
	void *d;

	t_eq(kbuffer_load_subbuffer(kb, sub), 0);
	if (kbuffer_missed_events(kb) != want_missed)
		t_fail("%s: kbuffer missed %d, expected %lld", who,
		       kbuffer_missed_events(kb), want_missed);
	for (d = kbuffer_read_event(kb, &ts); d;
	     d = kbuffer_next_event(kb, &ts)) {
		if (first + n >= (uint32_t)NR_EXPECTED)
			t_fail("%s: more events than expected", who);
		check_event((int)(first + n), ts, d,
			    (uint32_t)kbuffer_event_size(kb), who);
		n++;
	}
	return n;
}

static void walk_raw(const struct golden_page *g, int idx)
{
	struct hvt_page_iter it;
	char who[32], items[32];
	uint32_t n = 0, ni = 0;
	uint64_t commit = hvt_rd64(g->hdr + 8);
	uint32_t size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	int ret;

	snprintf(who, sizeof(who), "walker page %d", idx);
	if (idx == 3)
		size = 32;	/* the tail: bounded by the commit word */
	hvt_page_iter_init(&it, g->data, size, hvt_rd64(g->hdr));
	while ((ret = hvt_page_next(&it)) > 0) {
		t_assert(ni + 1 < sizeof(items));
		items[ni++] = ret == HVT_ITEM_DATA ? 'D' :
			      ret == HVT_ITEM_TIME ? 'T' : 'P';
		if (ret == HVT_ITEM_DATA) {
			check_event((int)(g->first + n), it.ts, it.payload,
				    it.len, who);
			n++;
		}
	}
	items[ni] = '\0';
	if (ret != HVT_ITEM_END)
		t_fail("%s: walker error %d at offset %u", who, ret, it.pos);
	if (strcmp(items, g->items))
		t_fail("%s: items '%s', expected '%s'", who, items, g->items);
	t_eq(n, g->nr);
}

/*
 * A reader that attaches to a fresh ring before its first event, directly
 * or after seeking to the newest data, must still report the first
 * event's own timestamp: the empty tail page has no time_stamp until that
 * event writes it.
 */
static void fresh_ring(struct kbuffer *kb, bool seek_newest)
{
	static uint8_t out[SUBBUF];
	struct hvt_common_fields c = { .common_type = 0x0201,
				       .common_pid = 21 };
	static const uint8_t pl[4] = { 1, 2, 3, 4 };
	struct hvt_iovec iov = { pl, sizeof(pl) };
	struct hvtrace_page_info info;
	struct hvtrace_area *a;
	struct hvt_rb_cpu cb;
	unsigned long long ts;
	char path[64];
	uint64_t size;
	uint8_t *area;
	void *d;

	snprintf(path, sizeof(path), "/dev/shm/hvt-golden-%d", getpid());
	area = fnd_area_create(path, 1, NR_SUBBUFS, SUBBUF, HVT_MODE_CONSUME,
			       &size);
	if (!area)
		t_fail("cannot create %s: %s", path, strerror(errno));
	t_ok(hvt_area_cpu(area, size, 0, &cb));
	if (hvtrace_area_open(path, 0, 0, 0, &a))
		t_fail("open %s: %s", path, hvtrace_last_error());
	t_eq(hvtrace_cpu_read_page(a, 0, out, sizeof(out), &info), 0);
	if (seek_newest)
		t_ok(hvtrace_cpu_seek(a, 0, false));
	t_eq(hvtrace_cpu_read_page(a, 0, out, sizeof(out), &info), 0);
	/* The first event: ts 123456789, written after the reader looked. */
	t_eq(hvt_rb_write(&cb, 123456789, &c, &iov, 1), 0);
	t_eq(hvtrace_cpu_read_page(a, 0, out, sizeof(out), &info), 1);
	t_equ(info.entries, 1);
	t_eq(kbuffer_load_subbuffer(kb, out), 0);
	d = kbuffer_read_event(kb, &ts);
	t_assert(d);
	if (info.first_ts != 123456789 || ts != 123456789)
		t_fail("fresh ring%s: page ts %llu, event ts %llu, expected "
		       "123456789",
		       seek_newest ? " after a seek to the newest data" : "",
		       (unsigned long long)info.first_ts, ts);
	t_memeq((uint8_t *)d + 8, pl, sizeof(pl));
	hvtrace_area_close(a);
	munmap(area, size);
	unlink(path);
}

int main(void)
{
	static uint8_t raw[SUBBUF + 64], out[SUBBUF];
	struct hvtrace_page_info info;
	struct hvtrace_cpu_stats st;
	struct hvtrace_area *a;
	struct hvt_cpu_meta *m;
	struct kbuffer *kb;
	char path[64];
	uint64_t size;
	uint8_t *area;
	uint32_t i;
	int ret;

	fnd_need_shm();
	kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	t_assert(kb);

	/* 2 and 3: the raw pages, with kbuffer and with the walker. */
	for (i = 0; i < 4; i++) {
		const struct golden_page *g = &pages[i];
		char who[32];

		memset(raw, 0, sizeof(raw));
		memcpy(raw, g->hdr, 16);
		memcpy(raw + 16, g->data, g->data_len);
		if (i == 3)	/* the tail's commit comes from the word */
			memcpy(raw + 8, (const uint8_t[]){ W64(32ULL) }, 8);
		snprintf(who, sizeof(who), "kbuffer raw page %u", i);
		t_eq(kb_decode(kb, raw, g->first, g->kb_missed, who), g->nr);
		walk_raw(g, (int)i);
	}

	/* 1: a real area file carrying the golden pages. */
	snprintf(path, sizeof(path), "/dev/shm/hvt-golden-%d", getpid());
	area = fnd_area_create(path, 1, NR_SUBBUFS, SUBBUF, HVT_MODE_CONSUME,
			       &size);
	if (!area)
		t_fail("cannot create %s: %s", path, strerror(errno));
	m = fnd_meta(area, 0);
	for (i = 0; i < 4; i++) {
		uint8_t *pg = fnd_page(area, 0, i);

		memset(pg, 0, SUBBUF);
		memcpy(pg, pages[i].hdr, 16);
		memcpy(pg + 16, pages[i].data, pages[i].data_len);
	}
	/*
	 * Descriptors: events the writer handled before each page.
	 *   seq 0: nothing before
	 *   seq 1: 7 committed on seq 0, then 5 dropped
	 *   seq 2: 7 + 2 committed, 5 + 3 dropped
	 *   seq 3: 9 + 2 committed, 8 dropped
	 */
	{
		static const struct hvt_subbuf_desc d[4] = {
			{ 0, 0, 0, 0, 0 },
			{ 1, 0, 7, 5, 5 },
			{ 2, 0, 9, 8, 3 },
			{ 3, 0, 11, 8, 0 },
		};

		memcpy(m->desc, d, sizeof(d));
	}
	m->lost = 8;
	/* Commit word: seq 3, 2 entries, 32 bytes. */
	m->write = 0x0000000300020020ULL;
	t_equ(m->write, HVT_WORD(3, 2, 32));

	if (hvtrace_area_open(path, 0, 0, 0, &a))
		t_fail("open %s: %s", path, hvtrace_last_error());
	for (i = 0; i < sizeof(reads) / sizeof(reads[0]) + 1; i++) {
		const struct golden_read *r = i < 4 ? &reads[i] : &read_more;
		char who[32];

		if (i == 4) {
			/* Nothing new yet. */
			t_eq(hvtrace_cpu_read_page(a, 0, out, sizeof(out),
						   &info), 0);
			/* The writer commits e13 on the tail page. */
			memcpy(fnd_page(area, 0, 3) + 16 + 32, page3_more,
			       sizeof(page3_more));
			__atomic_store_n(&m->write, 0x000000030003002cULL,
					 __ATOMIC_RELEASE);
			t_equ(m->write, HVT_WORD(3, 3, 44));
		}
		memset(out, 0x5a, sizeof(out));
		ret = hvtrace_cpu_read_page(a, 0, out, sizeof(out), &info);
		if (ret != 1)
			t_fail("read %u: returned %d (%s)", i, ret,
			       hvtrace_last_error());
		t_equ(info.lost_events, r->lost);
		t_equ(info.entries, r->nr);
		t_equ(info.seq, r->seq);
		t_equ(info.size, r->size);
		t_equ(info.first_ts, r->first_ts);
		t_equ(info.flags, r->flags);
		t_equ(hvt_rd64(out), r->first_ts);
		snprintf(who, sizeof(who), "reader page %u", i);
		t_eq(kb_decode(kb, out, r->first, (long long)r->lost, who),
		     r->nr);
	}
	t_eq(hvtrace_cpu_read_page(a, 0, out, sizeof(out), &info), 0);

	t_ok(hvtrace_cpu_get_stats(a, 0, &st));
	t_equ(st.read, 14);
	t_equ(st.dropped, 8);
	t_equ(st.lost, 8);
	t_equ(st.overrun, 0);
	t_equ(st.skipped, 0);
	t_equ(st.written, 22);
	t_equ(st.entries, 0);
	t_equ(st.trailing, 0);
	t_equ(st.writer_lost, 8);
	t_equ(st.errors, 0);
	t_equ(st.oldest_ts, 1000000);
	/* Newest committed: the tail page started at 8000000000 and its
	 * last event is at 8000000025. */
	t_assert(st.now_ts >= 8000000000ULL && st.now_ts <= 8000000025ULL);

	hvtrace_area_close(a);
	munmap(area, size);
	unlink(path);

	fresh_ring(kb, false);
	fresh_ring(kb, true);
	kbuffer_free(kb);
	printf("ok: %d golden events decoded identically by the reader, "
	       "kbuffer and the walker; first events of fresh rings keep "
	       "their timestamps\n", NR_EXPECTED);
	return 0;
}
