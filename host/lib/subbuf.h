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

#include "internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libhvtrace reads little-endian writers on little-endian hosts only"
#endif

#define SB_TS_MSB	(0xf8ULL << 56)

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
 * Step to the next data event at or after *pos.
 *
 * Return: 1 with the payload and its length set and the position and time
 * moved past the event; 0 at the end of the data (position == @size);
 * -EBADMSG for an event that runs past @size or a zero-length data event
 * (position left at the bad event).
 */
static inline int sb_step(const uint8_t *data, uint32_t size, uint32_t *pos,
			  uint64_t *ts, const uint8_t **payload, uint32_t *len)
{
	uint32_t p = *pos;
	uint64_t t = *ts;

	while (p < size && size - p >= HVT_EVT_HDR_SIZE) {
		const uint8_t *e = data + p;
		uint32_t left = size - p;
		uint32_t hdr = sb_rd32(e);
		uint32_t type = hdr & ((1u << HVT_TYPE_LEN_BITS) - 1);
		uint32_t delta = hdr >> HVT_TYPE_LEN_BITS;
		uint32_t n;

		if (type && type <= HVT_TYPE_DATA_MAX) {
			/* the common case: a small data event */
			n = type * 4;
			if (n > left - 4)
				goto bad;
			*payload = e + 4;
			*len = n;
			*pos = p + 4 + n;
			*ts = t + delta;
			return 1;
		}
		if (left < 8) {
			if (type == HVT_TYPE_PADDING)
				break;	/* a 4-byte null event ends the page */
			goto bad;
		}
		n = sb_rd32(e + 4);
		switch (type) {
		case 0:
			/* array[0] = payload length + 4; payload is padded
			 * to a 4-byte multiple (as kbuffer reads it) */
			if (n < 8 || n - 4 > left - 8)
				goto bad;
			n = (n - 4 + 3) & ~3u;
			if (n > left - 8)
				goto bad;
			*payload = e + 8;
			*len = n;
			*pos = p + 8 + n;
			*ts = t + delta;
			return 1;
		case HVT_TYPE_PADDING:
			if (!delta) {
				/* null padding: nothing more on this page */
				p = size;
				break;
			}
			if (n > left - 4)
				goto bad;
			/* array[0] = bytes after the header, as kbuffer
			 * skips it (always advances by at least 4) */
			t += delta;
			p += 4 + n;
			break;
		case HVT_TYPE_TIME_EXTEND:
			t += ((uint64_t)n << HVT_TS_BITS) + delta;
			p += 8;
			break;
		default:	/* HVT_TYPE_TIME_STAMP */
			t = (((uint64_t)n << HVT_TS_BITS) + delta) |
			    (t & SB_TS_MSB);
			p += 8;
			break;
		}
	}
	*pos = size;
	*ts = t;
	return 0;
bad:
	*pos = p;
	*ts = t;
	return -EBADMSG;
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
