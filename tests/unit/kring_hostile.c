// SPDX-License-Identifier: MIT
/*
 * Hostile guest kernel rings: the golden 6.12 image (tests/include/
 * kring_img.h) and a 6.15+ global meta, with every field the host trusts
 * pushed out of range in turn.  Open-time damage must fail with the errno
 * documented for hvtrace_kring_open() and a message naming what was
 * found; read-time damage must cost counted errors and skipped pages,
 * never a crash, a hang (alarm) or an out-of-bounds read (the ASan run),
 * while the undamaged CPU stays fully readable.  A last round scribbles
 * random bytes over the metas and pages between reads.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hvtrace.h>

#include "hvt_test.h"
#include "kring_img.h"

#define FIRST0	(VA_BASE + 0x100000)
#define FIRST1	(VA_BASE + 0x200000)

static void expect_open_fail(const char *what, uint64_t offset, int err,
			     const char *needle)
{
	struct hvtrace_kring *k = NULL;
	int r;

	img_sync();
	r = hvtrace_kring_open(path, offset, &k);
	if (r != err)
		t_fail("%s: open returned %d (%s), expected %d", what, r,
		       r ? hvtrace_last_error() : "ok", err);
	if (needle && !strstr(hvtrace_last_error(), needle))
		t_fail("%s: message '%s' does not name '%s'", what,
		       hvtrace_last_error(), needle);
	t_assert(!k);
}

/* Read @cpu until it has nothing new; returns the events read. */
static uint64_t drain(struct hvtrace_kring *k, int cpu, unsigned int *pages,
		      uint64_t *lost_marks)
{
	uint8_t page[SB];
	struct hvtrace_page_info info;
	uint64_t n = 0;
	unsigned int i;
	int r;

	for (i = 0; i < 64; i++) {
		r = hvtrace_kring_read_page(k, cpu, page, sizeof(page), &info);
		if (r < 0)
			t_fail("read_page: %d (%s)", r, hvtrace_last_error());
		if (r == 0)
			return n;
		n += info.entries;
		if (pages)
			(*pages)++;
		if (lost_marks && info.lost_events)
			(*lost_marks)++;
	}
	t_fail("CPU %d never ran dry", cpu);
	return n;
}

/*
 * Damage applied after open: @damage edits the image; then CPU 0 must
 * show @want_events events (or any number when negative) with at least
 * one error, and CPU 1 its one event.
 */
static void read_case(const char *what, void (*damage)(void), int want_events,
		      bool want_errors)
{
	struct hvtrace_kring_stats st;
	struct hvtrace_kring *k;
	uint64_t n;

	k = kimg_open_612(FIRST0, FIRST1);
	damage();
	img_sync();
	alarm(10);
	n = drain(k, 0, NULL, NULL);
	alarm(0);
	t_ok(hvtrace_kring_get_stats(k, 0, &st));
	if (want_events >= 0 && n != (uint64_t)want_events)
		t_fail("%s: CPU 0 gave %llu events, expected %d", what,
		       (unsigned long long)n, want_events);
	if (want_errors && !st.errors)
		t_fail("%s: no error counted", what);
	t_equ(drain(k, 1, NULL, NULL), 1);
	hvtrace_kring_close(k);
}

static void d_buf_neg(void) { w32(m612(0) + 56 + 4, (uint32_t)-1); }
static void d_buf_big(void) { w32(m612(0) + 56 + 8, 4); }
static void d_buf_dup(void) { w32(m612(0) + 56 + 12, 1); }
static void d_head_unaligned(void) { w64(m612(0) + 32, FIRST0 + SB + 100); }
static void d_head_out(void) { w64(m612(0) + 32, FIRST0 + 4 * SB); }
static void d_head_below(void) { w64(m612(0) + 32, FIRST0 - SB); }
static void d_head_reader(void) { w64(m612(0) + 32, FIRST0); }
static void d_commit_out(void) { w64(m612(0) + 40, FIRST0 + 9 * SB); }
static void d_commit_unaligned(void) { w64(m612(0) + 40, FIRST0 + 3); }
static void d_first(void) { w64(m612(0) + 24, 0); }
static void d_subbuf(void) { w32(m612(0) + 48, 8192); }
static void d_nr(void) { w32(m612(0) + 52, 1000000); }

int main(void)
{
	mfd = memfd_create("kring_hostile", MFD_CLOEXEC);
	if (mfd < 0)
		t_skip("memfd_create: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);

	/* --- open-time ---------------------------------------------------- */
	img_new(0x10000);
	expect_open_fail("no magic", 0, -ENODATA, "no guest kernel ring");
	kimg_612(FIRST0, FIRST1);
	w32(m612(0) + 4, 0x1234);
	w32(m612(1) + 4, 0x1234);
	expect_open_fail("unknown size word", 0, -EPROTONOSUPPORT, "0x1234");
	expect_open_fail("unknown size word names offset", 0, -EPROTONOSUPPORT,
			 "0x3000");
	{
		static const uint32_t subbufs[] = { 0, 1000, 2048, 6000,
						    1u << 20, 0xffffffff };
		static const uint32_t nrs[] = { 0, 1, 2, 0x100000 + 1,
						0xffffffff, 64 };
		unsigned int i;

		for (i = 0; i < 6; i++) {
			kimg_612(FIRST0, FIRST1);
			w32(m612(0) + 48, subbufs[i]);
			w32(m612(1) + 48, subbufs[i]);
			expect_open_fail("bad subbuf_size", 0, -EINVAL, NULL);
			kimg_612(FIRST0, FIRST1);
			w32(m612(0) + 52, nrs[i]);
			w32(m612(1) + 52, nrs[i]);
			expect_open_fail("bad nr_subbufs", 0, -EINVAL, NULL);
		}
	}
	/* CPU 0's block cut by the end of the file */
	kimg_612(FIRST0, FIRST1);
	img_size = m612(0) + 0x4000;
	expect_open_fail("block past the end", 0, -EINVAL, "past the end");
	img_size = 0x10000;
	/* a file shorter than one scan step */
	img_size = 100;
	expect_open_fail("tiny file", 0, -EINVAL, "not a guest RAM file");
	img_size = 0x10000;
	/* explicit offsets */
	kimg_612(FIRST0, FIRST1);
	expect_open_fail("offset without meta", 0x1000, -ENODATA, "0x1000");
	expect_open_fail("offset unaligned", 0x3004, -EINVAL, NULL);
	expect_open_fail("offset past end", 0x100000, -EINVAL, NULL);
	/* 6.15+ global metas */
	{
		static const struct {
			uint32_t sizes;
			uint64_t total, bo;
			int err;
		} g[] = {
			{ 12 | 24u << 16, 0xa000, 88, -EPROTONOSUPPORT },
			{ 36 | 24u << 16, 0xa000, 88, -EPROTONOSUPPORT },
			{ 32 | 24u << 16, 0xffffffffffffull, 88, -EINVAL },
			{ 32 | 24u << 16, 0xa000, 0xb000, -EINVAL },
			{ 32 | 24u << 16, 0xa000, 4, -EINVAL },
			{ 32 | 24u << 16, 0xa000, 90, -EINVAL },
			{ 32 | 24u << 16, 0x1000, 88, -EINVAL },
			/* a total below one CPU meta, a wild offset */
			{ 32 | 24u << 16, 0, 0x100000000000ull, -EINVAL },
			{ 32 | 24u << 16, 31, 0x7ffffffffff8ull, -EINVAL },
		};
		unsigned int i;

		for (i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
			img_new(0x10000);
			w32(0x2000, MAGIC);
			w32(0x2004, g[i].sizes);
			w64(0x2008, g[i].total);
			w64(0x2010, g[i].bo);
			w32(0x2000 + 88 + 24, SB);
			w32(0x2000 + 88 + 28, 4);
			expect_open_fail("6.15 global meta", 0, g[i].err, NULL);
		}
	}

	/* --- read-time ---------------------------------------------------- */
	img_new(0x10000);
	read_case("buffers[] negative", d_buf_neg, 0, true);
	read_case("buffers[] past nr", d_buf_big, 0, true);
	read_case("buffers[] duplicate", d_buf_dup, 0, true);
	read_case("head unaligned", d_head_unaligned, 0, true);
	read_case("head past the ring", d_head_out, 0, true);
	read_case("head below first", d_head_below, 0, true);
	read_case("head on the reader page", d_head_reader, 0, true);
	read_case("commit past the ring", d_commit_out, 0, true);
	read_case("commit unaligned", d_commit_unaligned, 0, true);
	read_case("first_buffer moved", d_first, 0, true);
	read_case("subbuf_size changed", d_subbuf, 0, true);
	read_case("nr_subbufs changed", d_nr, 0, true);

	/* Page damage: the page is skipped and counted, the pages around it
	 * are returned and the next one carries the lost mark. */
	{
		static const uint64_t commits[] = {
			4081,			/* past the 4080 data bytes */
			60 | 1ull << 40,	/* high bits */
			60 | 1ull << 28,	/* a reserved size bit */
			58,			/* ends inside the padding */
			12,			/* ends inside seq 4's event */
		};
		unsigned int i;

		for (i = 0; i < sizeof(commits) / sizeof(commits[0]); i++) {
			struct hvtrace_kring_stats st;
			struct hvtrace_kring *k;
			unsigned int pages = 0;
			uint64_t marks = 0;

			kimg_612(FIRST0, FIRST1);
			w64(slot612(0, 2) + 8, commits[i]);	/* id 2 */
			img_sync();
			t_ok(hvtrace_kring_open(path, 0, &k));
			alarm(10);
			t_equ(drain(k, 0, &pages, &marks), 5);	/* 1-3, 6-7 */
			alarm(0);
			t_equ(pages, 2);
			t_equ(marks, 1);
			t_ok(hvtrace_kring_get_stats(k, 0, &st));
			t_equ(st.skipped_pages, 1);
			t_assert(st.errors >= 1);
			hvtrace_kring_close(k);
		}
	}
	/* The commit page malformed: the reader waits on it (errors
	 * counted) and goes on once the writer has moved past it. */
	{
		struct hvtrace_kring_stats st;
		struct hvtrace_kring *k;

		kimg_612(FIRST0, FIRST1);
		w64(slot612(0, 3) + 8, 20);	/* inside seq 7's event */
		img_sync();
		t_ok(hvtrace_kring_open(path, 0, &k));
		t_equ(drain(k, 0, NULL, NULL), 5);	/* seq 1..5 */
		t_equ(drain(k, 0, NULL, NULL), 0);
		t_ok(hvtrace_kring_get_stats(k, 0, &st));
		t_assert(st.errors >= 1);
		/* The writer moves on to id 1 (head to id 2): seq 9 */
		w64(m612(0) + 32, FIRST0 + 2 * SB);
		w64(m612(0) + 40, FIRST0 + 1 * SB);
		page_one(slot612(0, 1), 4000, 9);
		img_sync();
		t_equ(drain(k, 0, NULL, NULL), 1);
		hvtrace_kring_close(k);
	}
	/* The file truncated under the reader */
	{
		struct hvtrace_kring *k;
		uint8_t page[SB];

		k = kimg_open_612(FIRST0, FIRST1);
		t_assert(ftruncate(mfd, 0x4000) == 0);
		t_eq(hvtrace_kring_read_page(k, 0, page, sizeof(page), NULL),
		     -EIO);
		t_eq(hvtrace_kring_read_page(k, 1, page, sizeof(page), NULL),
		     -EIO);
		hvtrace_kring_close(k);
	}
	/* Bad arguments */
	{
		struct hvtrace_kring *k;
		uint8_t page[SB];

		k = kimg_open_612(FIRST0, FIRST1);
		t_eq(hvtrace_kring_read_page(k, 2, page, sizeof(page), NULL),
		     -EINVAL);
		t_eq(hvtrace_kring_read_page(k, -1, page, sizeof(page), NULL),
		     -EINVAL);
		t_eq(hvtrace_kring_read_page(k, 0, page, 100, NULL), -ENOSPC);
		hvtrace_kring_close(k);
	}
	/* Random scribbles over metas and pages between reads. */
	{
		struct hvtrace_kring *k;
		unsigned int round, i;

		srandom(12345);
		k = kimg_open_612(FIRST0, FIRST1);
		alarm(60);
		for (round = 0; round < 300; round++) {
			for (i = 0; i < 64; i++) {
				uint64_t at = R612 +
					      (uint64_t)random() % (2 * BLK612);
				img[at] = (uint8_t)random();
				if (round % 3 == 0 && at < R612 + 96)
					img[at] = (uint8_t)random() & 3;
			}
			img_sync();
			drain(k, round & 1, NULL, NULL);
		}
		alarm(0);
		hvtrace_kring_close(k);
	}
	free(img);
	printf("PASS kring_hostile\n");
	return 0;
}
