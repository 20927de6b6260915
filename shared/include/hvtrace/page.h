/* SPDX-License-Identifier: MIT */
/*
 * hvtrace ftrace sub-buffer walker (freestanding).
 *
 * Used by the writer (to recover the last timestamp of a page after an
 * aborted write) and by the host reader (to validate and decode pages it
 * copied out of shared memory).  The walker never reads outside
 * [data, data + size) and always advances, so it terminates on any input.
 */
#ifndef HVTRACE_PAGE_H
#define HVTRACE_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "errno.h"

/* What hvt_page_next() found. */
enum hvt_page_item {
	HVT_ITEM_END = 0,	/* no more events */
	HVT_ITEM_DATA,		/* a data event: payload/len valid */
	HVT_ITEM_PADDING,	/* padding (skipped, no payload) */
	HVT_ITEM_TIME,		/* TIME_EXTEND or TIME_STAMP (ts updated) */
};

struct hvt_page_iter {
	const uint8_t *data;	/* first byte after the page header */
	uint32_t size;		/* committed data bytes */
	uint32_t pos;		/* offset of the next event header */
	uint64_t ts;		/* running timestamp */
	/* filled for HVT_ITEM_DATA */
	const uint8_t *payload;
	uint32_t len;		/* payload bytes (multiple of 4) */
	uint32_t evt_pos;	/* offset of this item's header */
};

/**
 * hvt_page_iter_init - start walking a sub-buffer's data
 * @it:    iterator
 * @data:  bytes after the 16-byte page header
 * @size:  committed size (flags already masked off, <= bytes readable)
 * @ts:    the page header time_stamp
 */
static inline void hvt_page_iter_init(struct hvt_page_iter *it,
				      const uint8_t *data, uint32_t size,
				      uint64_t ts)
{
	it->data = data;
	it->size = size;
	it->pos = 0;
	it->ts = ts;
	it->payload = NULL;
	it->len = 0;
	it->evt_pos = 0;
}

static inline uint32_t hvt_rd32(const uint8_t *p)
{
	/* Byte loads: the page may be any alignment in a host copy. */
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t hvt_rd64(const uint8_t *p)
{
	return (uint64_t)hvt_rd32(p) | ((uint64_t)hvt_rd32(p + 4) << 32);
}

/**
 * hvt_page_next - decode the next item of a sub-buffer
 * @it: iterator
 *
 * The one page walker of the project: the writer (timestamp recovery), the
 * host reader (validation), the decoder and the trace.dat reader all use
 * it, so they agree on what a page means.  It accepts exactly the pages
 * that the kernel's reader and libtraceevent's kbuffer parse the same way.
 * Inline: it is the decoder's hot loop.
 *
 * Return: an enum hvt_page_item (>= 0), or -HVT_EBADMSG when the item is
 * malformed (its length runs past the committed size, a padding length
 * kbuffer would read differently, stray bytes at the end, or a zero-length
 * data event).  After an error the iterator stays at the bad item.  At a
 * bare 4-byte padding header the walk ends (HVT_ITEM_END) without
 * consuming it, so it->pos < it->size tells the caller to trim it.
 */
static inline int hvt_page_next(struct hvt_page_iter *it)
{
	uint32_t hdr, type, left, len;
	const uint8_t *e;

	/*
	 * Accept exactly the pages the kernel's reader and libtraceevent's
	 * kbuffer both parse the same way; anything they could disagree on
	 * is malformed, so a page we pass on can never make kbuffer walk off
	 * its end.
	 */
	if (it->pos >= it->size)
		return HVT_ITEM_END;
	left = it->size - it->pos;
	if (left < HVT_EVT_HDR_SIZE)
		return -HVT_EBADMSG;	/* 1..3 stray bytes */
	e = it->data + it->pos;
	hdr = hvt_rd32(e);
	type = hdr & ((1u << HVT_TYPE_LEN_BITS) - 1);
	it->evt_pos = it->pos;

	switch (type) {
	case HVT_TYPE_PADDING:
		if (left < 8) {
			/*
			 * A bare 4-byte padding header ends the page.  The
			 * kernel never commits one (it leaves it after the
			 * commit); kbuffer would read its missing length
			 * word past the data.  Stop here without consuming
			 * it, so a caller can trim the page to it->pos.
			 */
			return HVT_ITEM_END;
		}
		len = hvt_rd32(e + 4);
		/* kbuffer skips 4 + array[0] bytes: it must stay aligned and
		 * inside the data. */
		if (len < 4 || (len & 3) || len > left - 4)
			return -HVT_EBADMSG;
		it->ts += hdr >> HVT_TYPE_LEN_BITS;
		it->pos += 4 + len;
		return HVT_ITEM_PADDING;
	case HVT_TYPE_TIME_EXTEND:
	case HVT_TYPE_TIME_STAMP:
		if (left < 8)
			return -HVT_EBADMSG;
		{
			uint64_t v = ((uint64_t)hvt_rd32(e + 4) << HVT_TS_BITS) +
				     (hdr >> HVT_TYPE_LEN_BITS);

			if (type == HVT_TYPE_TIME_EXTEND)
				it->ts += v;
			else
				/* Absolute: top 5 bits from the running ts. */
				it->ts = v | (it->ts & (0xf8ULL << 56));
		}
		it->pos += 8;
		return HVT_ITEM_TIME;
	case 0:
		if (left < 8)
			return -HVT_EBADMSG;
		len = hvt_rd32(e + 4);
		if (len < 4 + 4 || len - 4 > left - 8)
			return -HVT_EBADMSG;
		len = ((len - 4 + 3) & ~3u);
		if (len > left - 8)
			return -HVT_EBADMSG;
		it->payload = e + 8;
		it->len = len;
		it->ts += hdr >> HVT_TYPE_LEN_BITS;
		it->pos += 8 + len;
		return HVT_ITEM_DATA;
	default:
		len = type * 4;
		if (len > left - 4)
			return -HVT_EBADMSG;
		it->payload = e + 4;
		it->len = len;
		it->ts += hdr >> HVT_TYPE_LEN_BITS;
		it->pos += 4 + len;
		return HVT_ITEM_DATA;
	}
}


#endif /* HVTRACE_PAGE_H */
