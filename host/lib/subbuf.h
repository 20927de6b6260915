/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace internals: the record walker shared by the sub-buffer
 * iterator (subbuf.c) and the ring cursor (ring.c).
 *
 * One ftrace sub-buffer of a 64-bit little-endian writer: a 16-byte header
 * (u64 time_stamp, u64 commit) and then events.  The walker never reads
 * outside [data, data + size) and always advances by at least four bytes,
 * so it ends on any input.  Timestamps follow libtraceevent's kbuffer:
 * padding and time extends add their delta, an absolute time stamp keeps
 * the top five bits of the running time.
 */
#ifndef HVT_HOST_SUBBUF_H
#define HVT_HOST_SUBBUF_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <hvtrace/abi.h>
#include <hvtrace/page.h>

#include "hvtrace-local.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libhvtrace reads little-endian writers on little-endian hosts only"
#endif


static inline uint32_t sb_rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);	/* one unaligned-safe load */
	return v;
}

static inline uint64_t sb_rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/*
 * Step to the next data event at or after *pos, with the project's one page
 * walker (hvt_page_next(), inline), so decoding accepts exactly what the
 * reader validated and what kbuffer parses the same way.
 *
 * Return: 1 with the payload and its length set and the position and time
 * moved past the event; 0 at the end of the data (position == @size);
 * -EBADMSG for a malformed item (position left at it).
 */
static inline int sb_step(const uint8_t *data, uint32_t size, uint32_t *pos,
			  uint64_t *ts, const uint8_t **payload, uint32_t *len)
{
	struct hvt_page_iter it;
	int r;

	hvt_page_iter_init(&it, data, size, *ts);
	it.pos = *pos;
	for (;;) {
		r = hvt_page_next(&it);
		if (r == HVT_ITEM_DATA) {
			*payload = it.payload;
			*len = it.len;
			*pos = it.pos;
			*ts = it.ts;
			return 1;
		}
		if (r == HVT_ITEM_END) {
			*pos = size;
			*ts = it.ts;
			return 0;
		}
		if (r < 0) {
			*pos = it.pos;
			*ts = it.ts;
			return -EBADMSG;
		}
	}
}

/*
 * Read a sub-buffer header: the data size bounded by @subbuf_size, and the
 * lost count (0, a count, or HVTRACE_LOST_UNKNOWN).
 *
 * Return: 0, or -EBADMSG when the commit size does not fit.
 */
static inline int sb_header(const uint8_t *subbuf, size_t subbuf_size,
			    uint64_t *page_ts, uint32_t *size, uint64_t *lost)
{
	uint64_t commit = sb_rd64(subbuf + HVT_PAGE_COMMIT_OFF);
	uint64_t sz = commit & HVT_COMMIT_SIZE_MASK;
	uint64_t max = subbuf_size - HVT_PAGE_HDR_SIZE;

	*page_ts = sb_rd64(subbuf);
	*lost = 0;
	if (subbuf_size < HVT_PAGE_HDR_SIZE || sz > max) {
		*size = 0;
		return -EBADMSG;
	}
	*size = (uint32_t)sz;
	if (commit & HVT_MISSED_EVENTS) {
		*lost = HVTRACE_LOST_UNKNOWN;
		if ((commit & HVT_MISSED_STORED) && sz + 8 <= max)
			*lost = sb_rd64(subbuf + HVT_PAGE_HDR_SIZE + sz);
		if (!*lost)
			*lost = HVTRACE_LOST_UNKNOWN;
	}
	return 0;
}

/*
 * What hvt_subbuf_take() passed on from a private page copy.
 */
struct hvt_take {
	uint32_t end;		/* data offset after the last byte passed on */
	uint64_t end_ts;	/* running timestamp there */
	uint32_t n;		/* data events passed on */
	bool cut;		/* stopped early so the lost count fits: the
				 * rest of the page follows in a later call */
	bool no_room;		/* not even one event left room for the
				 * count: passed on without it (an error) */
};

/*
 * hvt_subbuf_take - validate the new events of a private page copy and
 * pass them on as a self-contained sub-buffer
 * @data:      the copy's data (after its 16-byte header)
 * @size:      committed data bytes in the copy
 * @data_size: sub-buffer size - 16
 * @pos:       data bytes already passed on (an event boundary)
 * @pos_ts:    running timestamp at @pos
 * @lost:      events lost before these (0, a count, HVTRACE_LOST_UNKNOWN)
 * @out:       output sub-buffer of @data_size + 16 bytes, or NULL to
 *             validate only (@t says what would be passed on)
 * @t:         what was passed on
 * @ix:        or NULL: where each record passed on starts in @out's data
 *
 * The one sub-buffer validation of the readers (trace areas, the guest
 * kernel's ring): every event of [@pos, @size) goes through the page
 * walker; a bare 4-byte padding header at the end is left out; a known
 * lost count is stored after the data (RB_MISSED_STORED), cutting the page
 * at an event boundary when it would not fit; an unknown one sets only
 * RB_MISSED_EVENTS.
 *
 * Return: 1 with @out built; 0 when nothing but padding is new (t->end and
 * t->end_ts say where that ends); -EBADMSG for a malformed event (nothing
 * built).
 */
HVT_INTERNAL int hvt_subbuf_take(const uint8_t *data, uint32_t size,
				 uint32_t data_size, uint32_t pos,
				 uint64_t pos_ts, uint64_t lost, uint8_t *out,
				 struct hvt_take *t, struct hvt_item_index *ix);

#endif /* HVT_HOST_SUBBUF_H */
