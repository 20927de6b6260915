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
 * Return: an enum hvt_page_item (>= 0), or -HVT_EBADMSG when the item is
 * malformed (its length runs past the committed size, or a zero-length
 * data event).  After an error the iterator stays at the bad item.
 */
int hvt_page_next(struct hvt_page_iter *it);

#endif /* HVTRACE_PAGE_H */
