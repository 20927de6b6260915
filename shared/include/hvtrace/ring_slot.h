/* SPDX-License-Identifier: MIT */
/*
 * hvtrace ring slots (freestanding): the primitives the writer
 * (shared/ring_buffer.c) and the readers of a CPU buffer (the host's page
 * reader and its totals, host/lib/reader*.c and totals.c) share.
 *
 *   slot(seq)   = seq & (nr_subbufs - 1)     nr_subbufs is a power of two
 *   page(seq)   = pages + slot(seq) * subbuf_size
 *   desc(seq)   = meta->desc[slot(seq)]
 *
 * A reader proves a copy of a slot intact with the W2 pair of the protocol
 * (see "Reading without the writer" in shared/ring_buffer.c): it loads the
 * descriptor's seq with acquire (hvt_slot_claimed()), copies, and loads it
 * again after an acquire fence (hvt_slot_kept()).  The writer stores seq
 * and issues a release fence before its first byte into a reused slot, so
 * an unchanged seq means no byte of the copy came from another page.
 * hvt_slot_read_desc() applies that pair to the descriptor's own counts.
 */
#ifndef HVTRACE_RING_SLOT_H
#define HVTRACE_RING_SLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "abi.h"

/* Slot of page @seq in a ring of @nr_subbufs (a power of two) slots. */
static inline uint32_t hvt_slot(uint32_t nr_subbufs, uint32_t seq)
{
	return seq & (nr_subbufs - 1);
}

/* Byte offset of page @seq from the first page of the CPU section. */
static inline uint64_t hvt_slot_page_off(uint32_t nr_subbufs,
					 uint32_t subbuf_size, uint32_t seq)
{
	return (uint64_t)hvt_slot(nr_subbufs, seq) * subbuf_size;
}

/*
 * W2 pair, first half: whether the slot's descriptor names page @seq now.
 * Acquire, so that what is read of the slot afterwards is not older.
 */
static inline bool hvt_slot_claimed(const struct hvt_subbuf_desc *d,
				    uint32_t seq)
{
	return __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE) == seq;
}

/*
 * W2 pair, second half: whether the descriptor still names @seq after
 * everything read of the slot since hvt_slot_claimed() (the acquire fence
 * orders those reads before this load; pairs with the writer's release
 * fence after its store of desc.seq).
 */
static inline bool hvt_slot_kept(const struct hvt_subbuf_desc *d,
				 uint32_t seq)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&d->seq, __ATOMIC_RELAXED) == seq;
}

/*
 * Read the counts of page @seq's descriptor consistently: seq before and
 * after them (W2 pair).  Returns false, with *eb and *lb undefined, when
 * the slot holds another page (or changed while it was read).
 */
static inline bool hvt_slot_read_desc(const struct hvt_subbuf_desc *d,
				      uint32_t seq, uint64_t *eb,
				      uint64_t *lb)
{
	if (!hvt_slot_claimed(d, seq))
		return false;
	*eb = __atomic_load_n(&d->entries_before, __ATOMIC_RELAXED);
	*lb = __atomic_load_n(&d->lost_before, __ATOMIC_RELAXED);
	return hvt_slot_kept(d, seq);
}

#endif /* HVTRACE_RING_SLOT_H */
