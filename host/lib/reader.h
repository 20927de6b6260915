/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace internals: what the per-CPU reader's two halves share --
 * attaching (reader_attach.c) and reading (reader.c).  The slot, page and
 * descriptor primitives themselves are the writer's, in
 * <hvtrace/ring_slot.h>; these bind them to a reader's CPU buffer and add
 * the two reads every step starts from: the commit word (W1 pair) and the
 * oldest page the ring still holds.
 */
#ifndef HVT_HOST_READER_H
#define HVT_HOST_READER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <hvtrace/abi.h>
#include <hvtrace/ring_slot.h>

#include "hvtrace-local.h"

static inline const struct hvt_subbuf_desc *rd_desc(const struct hvt_rd_cpu *c,
						    uint32_t seq)
{
	return &c->meta->desc[hvt_slot(c->nr_subbufs, seq)];
}

static inline const uint8_t *rd_page(const struct hvt_rd_cpu *c, uint32_t seq)
{
	return c->pages + hvt_slot_page_off(c->nr_subbufs, c->subbuf_size, seq);
}

/* Load the commit word; 0 with *w set, or -EBADMSG when it is impossible. */
static inline int rd_load_word(struct hvt_rd_cpu *c, uint64_t *w)
{
	/* W1 pair: everything the writer published up to this word. */
	uint64_t v = __atomic_load_n(&c->meta->write, __ATOMIC_ACQUIRE);

	if (HVT_WORD_OFFSET(v) > c->data_size) {
		if (v != c->last_bad_word) {
			c->errors++;
			c->last_bad_word = v;
		}
		return -EBADMSG;
	}
	*w = v;
	return 0;
}

/* The descriptor of @seq, read with the W2 pair (ring_slot.h). */
static inline bool rd_read_desc(const struct hvt_rd_cpu *c, uint32_t seq,
			 uint64_t *eb, uint64_t *lb)
{
	return hvt_slot_read_desc(rd_desc(c, seq), seq, eb, lb);
}

/* Oldest page of the ring whose descriptor still names it. */
static inline uint32_t rd_oldest(const struct hvt_rd_cpu *c, uint32_t tail)
{
	uint32_t s = tail - (c->nr_subbufs - 1), i;
	uint64_t eb, lb;

	for (i = 0; i < c->nr_subbufs; i++, s++)
		if (rd_read_desc(c, s, &eb, &lb))
			return s;
	return tail;
}

/* The writer's unplaced counter; relaxed, it orders nothing. */
static inline uint64_t rd_unplaced_now(const struct hvt_rd_cpu *c)
{
	return __atomic_load_n(&c->meta->unplaced, __ATOMIC_RELAXED);
}

#endif /* HVT_HOST_READER_H */
