// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a ring of hvtrace_ring_open_source() fed hostile pages,
 * read through its cursor.
 *
 * Input: a list of pages, each
 *   0-1  len = u16 % 4200 (may exceed the 4096-byte sub-buffer)
 *   2    seq (u8): the same as the page before asks for an append
 *   3    bit 0: the page has a source loss (lost_events 1 + bit 1..7),
 *        bit 7: an unknown one; bit 6: the cursor reads after this page;
 *        bit 5: the page is lent (HVTRACE_PAGE_LENT), in a buffer of
 *        exactly len bytes that its release frees
 *   4..  len bytes of the page (what is missing reads as 0)
 *
 * Beyond the sanitizers: every record lies inside a reader page of the
 * view, or inside a lent page not yet released, and within the bytes
 * handed over, its size is a 4-byte multiple, and the stats add up
 * (events read == events the ring handed over, pages == pages given);
 * every lent page is released once, by the close at the latest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>

#include "hvt_fuzz.h"

/* ring.c's area and guest kernel views are not reached from here. */
int hvtrace_cpu_read_page(struct hvtrace_area *a, int cpu, void *page,
			  size_t size, struct hvtrace_page_info *info)
{
	abort();
}
int hvtrace_cpu_get_stats(struct hvtrace_area *a, int cpu,
			  struct hvtrace_cpu_stats *st)
{
	abort();
}
uint64_t hvtrace_cpu_take_trailing_lost(struct hvtrace_area *a, int cpu)
{
	abort();
}
uint64_t hvtrace_area_to_host_ns(const struct hvtrace_area *a, uint64_t ts,
				 uint64_t *err_ns)
{
	abort();
}
int hvtrace_kring_read_page(struct hvtrace_kring *k, int cpu, void *page,
			    size_t size, struct hvtrace_page_info *info)
{
	abort();
}
int hvtrace_kring_get_stats(const struct hvtrace_kring *k, int cpu,
			    struct hvtrace_kring_stats *st)
{
	abort();
}
int hvtrace_kring_get_info(const struct hvtrace_kring *k,
			   struct hvtrace_kring_info *info)
{
	abort();
}

#define SUBBUF 4096

#define MAX_LENT 4 /* lent pages a ring may hold (in place, held) */

struct src {
	const uint8_t *in;
	size_t size, pos;
	uint8_t page[4200 + 8];
	unsigned int pages;
	bool pause;
	struct {
		uint8_t *buf;
		uint32_t len;
	} lent[MAX_LENT];
	unsigned int nr_lent; /* lent, not released */
};

/* Whether [p, p + n) lies in a lent page's data not yet released. */
static bool in_lent(const struct src *s, const uint8_t *p, uint32_t n)
{
	unsigned int i;

	for (i = 0; i < MAX_LENT; i++)
		if (s->lent[i].buf && p >= s->lent[i].buf + 16 &&
		    p + n <= s->lent[i].buf + s->lent[i].len)
			return true;
	return false;
}

static int next_page(void *ctx, int cpu, struct hvtrace_ring_page *pg)
{
	struct src *s = ctx;
	uint32_t len, have;
	uint8_t hdr[4] = { 0 };

	if (s->pause || s->pos >= s->size)
		return 0;
	have = s->size - s->pos < 4 ? (uint32_t)(s->size - s->pos) : 4;
	memcpy(hdr, s->in + s->pos, have);
	s->pos += have;
	len = (uint32_t)(hdr[0] | hdr[1] << 8) % 4200;
	memset(s->page, 0, sizeof(s->page));
	have = s->size - s->pos < len ? (uint32_t)(s->size - s->pos) : len;
	memcpy(s->page, s->in + s->pos, have);
	s->pos += have;
	pg->data = s->page;
	pg->len = len;
	pg->seq = hdr[2];
	pg->lost_events = (hdr[3] & 0x80) ? HVTRACE_LOST_UNKNOWN :
			  (hdr[3] & 1) ? 1 + ((hdr[3] >> 1) & 0x1f) : 0;
	s->pause = hdr[3] & 0x40;
	s->pages++;
	if ((hdr[3] & 0x20) && s->nr_lent < MAX_LENT) {
		unsigned int i;

		for (i = 0; s->lent[i].buf; i++)
			;
		s->lent[i].buf = malloc(len ? len : 1);
		fuzz_assert(s->lent[i].buf);
		memcpy(s->lent[i].buf, s->page, len);
		s->lent[i].len = len;
		s->nr_lent++;
		pg->data = s->lent[i].buf;
		pg->flags = HVTRACE_PAGE_LENT;
		pg->owner = &s->lent[i];
	}
	return 1;
}

static void release(void *ctx, int cpu, const struct hvtrace_ring_page *pg)
{
	struct src *s = ctx;
	unsigned int i = (unsigned int)((const char *)pg->owner -
					(const char *)s->lent) /
			 sizeof(s->lent[0]);

	fuzz_assert(i < MAX_LENT && s->lent[i].buf == pg->data);
	free(s->lent[i].buf);
	s->lent[i].buf = NULL;
	s->nr_lent--;
}

static const struct hvtrace_ring_source_ops ops = {
	.next_page = next_page,
	.release = release,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct src s = { .in = data, .size = size };
	struct hvtrace_ring_source_stats st;
	struct hvtrace_ring *r;
	struct hvtrace_record rec;
	const uint8_t *lo, *hi;
	uint64_t n = 0;
	int ret, rounds;

	if (hvtrace_ring_open_source(&ops, &s, 0, SUBBUF, &r))
		abort();
	lo = hvtrace_ring_subbuf(r, 0);
	hi = lo + 2 * SUBBUF;
	for (rounds = 0; rounds < 100000; rounds++) {
		ret = hvtrace_ring_peek(r, &rec);
		fuzz_assert(ret >= 0);
		if (!ret) {
			if (!s.pause && s.pos >= s.size)
				break;
			s.pause = false;
			continue;
		}
		fuzz_assert(((const uint8_t *)rec.data >= lo + 16 &&
			     (const uint8_t *)rec.data + rec.size <= hi) ||
			    in_lent(&s, rec.data, rec.size));
		fuzz_assert(rec.size % 4 == 0);
		n++;
		hvtrace_ring_consume(r);
	}
	fuzz_assert(!hvtrace_ring_source_stats(r, &st));
	fuzz_assert(st.pages == s.pages);
	fuzz_assert(st.events == n);
	fuzz_assert(st.skipped + st.empty <= st.pages);
	hvtrace_ring_close(r);
	fuzz_assert(s.nr_lent == 0);
	return 0;
}
