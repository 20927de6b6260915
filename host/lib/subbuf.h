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
#include <stdint.h>
#include <string.h>

#include <hvtrace/abi.h>
#include <hvtrace/page.h>

#include "internal.h"

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

#endif /* HVT_HOST_SUBBUF_H */
