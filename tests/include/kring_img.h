/* SPDX-License-Identifier: MIT */
/*
 * Guest RAM images holding a guest kernel's persistent ftrace ring, built
 * by hand in a memfd, for the kring tests (golden, hostile) and the fuzz
 * seed generator.  Layout comments: tests/unit/kring_golden.c.
 */
#ifndef HVT_KRING_IMG_H
#define HVT_KRING_IMG_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>

#include "hvt_test.h"

#define SB		4096u
#define VA_BASE		0xff7afe2e80000000ull	/* a guest vmap address */
#define MAGIC		0xBADFEEDu

static uint8_t *img;
static size_t img_size;
static int mfd = -1;
static char path[64];

static inline void w32(uint64_t off, uint32_t v) { memcpy(img + off, &v, 4); }
static inline void w64(uint64_t off, uint64_t v) { memcpy(img + off, &v, 8); }

static inline void img_new(size_t size)
{
	free(img);
	img = calloc(1, size);
	t_assert(img);
	img_size = size;
}

static inline void img_sync(void)
{
	t_assert(ftruncate(mfd, (off_t)img_size) == 0);
	t_assert(pwrite(mfd, img, img_size, 0) == (ssize_t)img_size);
}

/* A marker event at data offset *off of the page at @page. */
static inline void put_marker(uint64_t page, uint32_t *off, uint32_t delta,
		       uint32_t seq)
{
	uint64_t d = page + 16 + *off;

	w32(d, delta << 5 | 3);		/* type_len 3: 12-byte payload */
	w32(d + 4, 7);			/* common_type 7, flags 0, preempt 0 */
	w32(d + 8, 42);			/* common_pid 42 */
	w32(d + 12, seq);		/* the sequence number */
	*off += 16;
}

static inline void page_hdr(uint64_t page, uint64_t ts, uint64_t commit)
{
	w64(page, ts);			/* time_stamp */
	w64(page + 8, commit);		/* commit: data bytes */
}

/* Page @page rewritten with one marker @seq at @ts (a new lap). */
static inline void page_one(uint64_t page, uint64_t ts, uint32_t seq)
{
	uint32_t off = 0;

	memset(img + page, 0, SB);
	put_marker(page, &off, 0, seq);
	page_hdr(page, ts, off);
}

/*
 * The 6.12 image: 64 KiB of "RAM", the ring at 0x3000 (found by the
 * scan), 2 CPUs, 4 sub-buffers of 4096 each (the reader page and 3 ring
 * pages).
 *   meta 56 + buffers 4 * 4 = 72 bytes -> sub-buffers at meta + 0x1000
 *   block = 0x1000 + 4 * 0x1000 = 0x5000: CPU 1's meta at 0x8000
 */
#define R612		0x3000ull
#define BLK612		0x5000ull

static inline uint64_t m612(int cpu) { return R612 + cpu * BLK612; }
static inline uint64_t slot612(int cpu, int slot)
{
	return m612(cpu) + SB + (uint64_t)slot * SB;
}

static inline void meta612(int cpu, uint64_t first, int head_slot,
			   int commit_slot, const int *buffers)
{
	uint64_t m = m612(cpu);
	int i;

	w32(m + 0, MAGIC);			/* magic */
	w32(m + 4, 56);				/* struct_size */
	w64(m + 8, 0xffffffff81000000ull);	/* text_addr (unused) */
	w64(m + 16, 0xffffffff82000000ull);	/* data_addr (unused) */
	w64(m + 24, first);			/* first_buffer: slot 0 */
	w64(m + 32, first + head_slot * SB);	/* head_buffer */
	w64(m + 40, first + commit_slot * SB);	/* commit_buffer */
	w32(m + 48, SB);			/* subbuf_size */
	w32(m + 52, 4);				/* nr_subbufs (reader too) */
	for (i = 0; i < 4; i++)
		w32(m + 56 + 4 * i, (uint32_t)buffers[i]);
}


/*
 * The golden 6.12 ring (@first0, @first1: the CPUs' first_buffer VAs):
 *   CPU 0  ids 1..3 = slots 1..3, head id 1, commit id 3
 *          id 1  ts 1000: seq 1 (+0), 2 (+10), 3 (+10)
 *          id 2  ts 2000: seq 4, TIME_EXTEND 1 << 27, seq 5 (+5), padding
 *          id 3  ts 3000: seq 6, 7 (+1) committed; seq 8 (+2) not yet
 *          reader page (slot 0): stale events 900, 901
 *   CPU 1  head = commit = id 1: ts 50, seq 100
 */
static inline void kimg_612(uint64_t first0, uint64_t first1)
{
	static const int ident[4] = { 0, 1, 2, 3 };
	uint32_t off;

	img_new(0x10000);
	/* CPU 0: ring ids 1..3 are slots 1..3 (buffers[] identity); head is
	 * id 1, the commit is on id 3. */
	meta612(0, first0, 1, 3, ident);
	/* reader page (slot 0): stale bytes a host must never return */
	page_hdr(slot612(0, 0), 999, 32);
	off = 0;
	put_marker(slot612(0, 0), &off, 0, 900);
	put_marker(slot612(0, 0), &off, 0, 901);
	/* id 1 (slot 1): ts 1000; seq 1 at +0, 2 at +10, 3 at +10 -> 48 B */
	off = 0;
	put_marker(slot612(0, 1), &off, 0, 1);
	put_marker(slot612(0, 1), &off, 10, 2);
	put_marker(slot612(0, 1), &off, 10, 3);
	page_hdr(slot612(0, 1), 1000, off);
	/* id 2 (slot 2): ts 2000; seq 4; TIME_EXTEND of 1 << 27 (header
	 * 30, array[0] 1); seq 5 at +5; a 20-byte padding (header 29,
	 * array[0] 16) to close the page -> 16 + 8 + 16 + 20 = 60 B */
	off = 0;
	put_marker(slot612(0, 2), &off, 0, 4);
	w32(slot612(0, 2) + 16 + off, 30);
	w32(slot612(0, 2) + 16 + off + 4, 1);
	off += 8;
	put_marker(slot612(0, 2), &off, 5, 5);
	w32(slot612(0, 2) + 16 + off, 29);
	w32(slot612(0, 2) + 16 + off + 4, 16);
	off += 20;
	page_hdr(slot612(0, 2), 2000, off);
	t_equ(off, 60);
	/* id 3 (slot 3), the commit page: ts 3000; seq 6, seq 7 at +1
	 * committed (32 B); seq 8 at +2 written but not committed */
	off = 0;
	put_marker(slot612(0, 3), &off, 0, 6);
	put_marker(slot612(0, 3), &off, 1, 7);
	put_marker(slot612(0, 3), &off, 2, 8);
	page_hdr(slot612(0, 3), 3000, 32);

	/* CPU 1: head and commit on id 1 (slot 1), one event, ts 50 */
	meta612(1, first1, 1, 1, ident);
	off = 0;
	put_marker(slot612(1, 1), &off, 0, 100);
	page_hdr(slot612(1, 1), 50, off);
	img_sync();
}

/* The golden 6.12 ring written to the memfd and opened by a scan. */
static inline struct hvtrace_kring *kimg_open_612(uint64_t first0,
						  uint64_t first1)
{
	struct hvtrace_kring *k;

	kimg_612(first0, first1);
	img_sync();
	t_ok(hvtrace_kring_open(path, 0, &k));
	return k;
}

#endif /* HVT_KRING_IMG_H */
