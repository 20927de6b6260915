// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the guest kernel ring walk (host/lib/kring_read.c) under
 * hostile head, commit, buffers[] and page layouts (issue 22 point 7),
 * reached directly: the input describes one 6.12 CPU block rather than
 * being the RAM image, so rings of thousands of sub-buffers with empty
 * and malformed pages between head and commit are a few bytes away.
 *
 * Input (missing bytes read as 0):
 *   0-1  nr = 3 + u16 % 4094 sub-buffers (the reader page included)
 *   2-3  head ring id = u16 % (nr + 2)  (0: the reader page; >= nr: past
 *        the ring)
 *   4-5  commit ring id = u16 % (nr + 2)
 *   6    flags: bit 0 head unaligned, bit 1 commit unaligned, bit 2 the
 *        slots of the next bytes' pairs swapped in buffers[], bit 3 one
 *        entry of buffers[] duplicated
 *   7-8  with bit 2/3: the pair/entry (u8 each, % nr)
 *   9-12 after the first drain the guest moves: new head id (u16 % (nr +
 *        2)) and commit id, as above
 *   13.. one byte per slot from 1 on: % 4 = 0 empty, 1 one marker, 2 a
 *        commit past the page, 3 a commit that ends inside the marker;
 *        later slots are empty
 *
 * Beyond the sanitizers: every read call stays inside its caps
 * (KR_SNAPS_MAX snapshots, KR_WALK_MAX pages looked at), a static ring
 * is drained in at most nr / KR_WALK_MAX + nr + 2 calls (each call
 * either returns a page or walks on), and every page returned holds
 * exactly the one marker the input put there.
 *
 * Seeds: tests/fuzz/corpus/kring_walk/ (empty pages between head and
 * commit at nr 4096, head past commit, bad pages, a moved head).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hvtrace.h>

#include "hvt_fuzz.h"
#include "kring-local.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SB	4096u
#define R	0x1000ull
#define FIRST	0xff7afe2e80100000ull

static const uint8_t *in;
static size_t in_len;

static uint32_t u8_at(size_t i) { return i < in_len ? in[i] : 0; }
static uint32_t u16_at(size_t i) { return u8_at(i) | u8_at(i + 1) << 8; }

static int fd = -1;

static void pw(uint64_t off, const void *p, size_t len)
{
	fuzz_assert(pwrite(fd, p, len, (off_t)off) == (ssize_t)len);
}

static void pw64(uint64_t off, uint64_t v) { pw(off, &v, 8); }

/* Drain CPU 0; returns the calls it took. */
static uint32_t drain(struct hvtrace_kring *k, uint32_t nr, uint8_t *page)
{
	struct hvtrace_page_info pi;
	uint32_t calls, seq;
	int r;

	for (calls = 1; calls <= nr / KR_WALK_MAX + nr + 2; calls++) {
		r = hvtrace_kring_read_page(k, 0, page, SB, &pi);
		fuzz_assert(r == 0 || r == 1);
		fuzz_assert(k->cpus[0].call_snaps <= KR_SNAPS_MAX);
		fuzz_assert(k->cpus[0].call_pages <= KR_WALK_MAX);
		if (r == 1) {
			fuzz_assert(pi.entries == 1);
			memcpy(&seq, page + 16 + 12, 4);
			fuzz_assert(seq >= 1 && seq < nr);
			continue;
		}
		/* 0: nothing new, or a cap reached with the walk to go on;
		 * a call that looked at no page ends the drain. */
		if (k->cpus[0].call_pages < KR_WALK_MAX)
			return calls;
	}
	fuzz_assert(!"the walk never ran dry");
	return calls;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t nr, head, commit, flags, i, *bufs, a, b, t;
	uint64_t hdr, ram, page;
	struct hvtrace_kring *k;
	const char *path;
	uint8_t *pg;

	in = data;
	in_len = size;
	nr = 3 + u16_at(0) % 4094;
	head = u16_at(2) % (nr + 2);
	commit = u16_at(4) % (nr + 2);
	flags = u8_at(6);
	hdr = (56 + 4ull * nr + SB - 1) & ~(uint64_t)(SB - 1);
	ram = R + hdr + (uint64_t)nr * SB;

	path = fuzz_memfd("hvt-fuzz-kring-walk", NULL, 0, &fd);
	fuzz_assert(ftruncate(fd, (off_t)ram) == 0);
	pg = calloc(1, SB);
	bufs = malloc(4ull * nr);
	fuzz_assert(pg && bufs);
	/* the meta */
	memcpy(pg, &(uint32_t){ 0xBADFEED }, 4);
	memcpy(pg + 4, &(uint32_t){ 56 }, 4);
	memcpy(pg + 8, &(uint64_t){ 0xffffffff81000000ull }, 8);
	memcpy(pg + 16, &(uint64_t){ 0xffffffff82000000ull }, 8);
	memcpy(pg + 24, &(uint64_t){ FIRST }, 8);
	memcpy(pg + 32, &(uint64_t){ FIRST + (uint64_t)head * SB +
					(flags & 1 ? 8 : 0) }, 8);
	memcpy(pg + 40, &(uint64_t){ FIRST + (uint64_t)commit * SB +
					(flags & 2 ? 8 : 0) }, 8);
	memcpy(pg + 48, &(uint32_t){ SB }, 4);
	memcpy(pg + 52, &nr, 4);
	pw(R, pg, 56);
	for (i = 0; i < nr; i++)
		bufs[i] = i;
	a = u8_at(7) % nr;
	b = u8_at(8) % nr;
	if (flags & 4) {
		t = bufs[a];
		bufs[a] = bufs[b];
		bufs[b] = t;
	}
	if (flags & 8)
		bufs[a] = bufs[b];
	pw(R + 56, bufs, 4ull * nr);
	/* the pages: slot i holds ring id i unless swapped */
	for (i = 1; i < nr && 13 + i - 1 < size; i++) {
		uint32_t kind = u8_at(13 + i - 1) % 4;

		if (!kind)
			continue;
		memset(pg, 0, SB);
		page = R + hdr + (uint64_t)i * SB;
		memcpy(pg, &(uint64_t){ 1000ull * i }, 8);
		memcpy(pg + 8, &(uint64_t){ kind == 1 ? 16 :
					    kind == 2 ? SB : 8 }, 8);
		memcpy(pg + 16, &(uint32_t){ 3 }, 4);
		memcpy(pg + 20, &(uint32_t){ 7 }, 4);
		memcpy(pg + 24, &(uint32_t){ 42 }, 4);
		memcpy(pg + 28, &i, 4);
		pw(page, pg, 32);
	}
	if (hvtrace_kring_open(path, R, &k) == 0) {
		drain(k, nr, pg);
		/* the guest moves head and commit */
		head = u16_at(9) % (nr + 2);
		commit = u16_at(11) % (nr + 2);
		pw64(R + 32, FIRST + (uint64_t)head * SB);
		pw64(R + 40, FIRST + (uint64_t)commit * SB);
		drain(k, nr, pg);
		hvtrace_kring_close(k);
	}
	free(bufs);
	free(pg);
	return 0;
}
