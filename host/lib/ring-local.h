/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: what the files of the ring view share (hidden, never
 * installed): the state of one CPU buffer seen through the ring-buffer
 * mmap ABI and of its record cursor, and the backend table behind it.
 *
 * struct hvtrace_ring holds only what every view has (the meta page and
 * sub-buffers, the cursor, the CPU, the error count) and a pointer to its
 * backend's operations.  Each backend embeds it in a struct of its own and
 * finds that again with container_of():
 *
 *   struct ring_priv     the views whose reader pages are two private
 *                        pages filled by copying (ring.c): the append-or-
 *                        switch rule of get-reader
 *     struct ring_area   a CPU of a trace area (ring.c)
 *     struct ring_kring  a CPU of a guest kernel's ring (ring.c)
 *     struct ring_src    a CPU whose pages a caller supplies
 *                        (ring_source.c)
 *   struct ring_kernel   a CPU of the host kernel, mmap ABI or read()
 *                        (ring_kernel.c, two operation tables)
 *
 * ring.c holds the common calls and the cursor, which call the backend
 * only through struct ring_ops.
 */
#ifndef HVT_RING_LOCAL_H
#define HVT_RING_LOCAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvtrace-local.h"

/* Resync a kernel trace clock with CLOCK_MONOTONIC this often. */
#define RING_KCLOCK_RESYNC_NS	1000000000ULL

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

struct ring_cursor {
	bool primed;
	bool have;			/* rec holds a peeked record */
	uint32_t id;			/* reader page being walked */
	uint32_t pos;			/* next event offset in its data */
	uint32_t limit;			/* handed-over bytes (reader.read) */
	uint64_t ts;			/* running timestamp at pos */
	uint64_t lost;			/* report with the next record */
	uint32_t next_pos;		/* past the peeked record */
	uint64_t next_ts;
	uint64_t fetched_ns;		/* when the data up to limit arrived */
	struct hvtrace_record rec;
};

struct hvtrace_ring;

/*
 * What differs between the views.  get_reader and close are required;
 * a NULL hook means the default said at each.
 */
struct ring_ops {
	bool kernel;			/* hvtrace_ring_is_kernel() */
	/* TRACE_MMAP_IOCTL_GET_READER: update the meta page */
	int (*get_reader)(struct hvtrace_ring *r);
	/* free what the backend holds, the embedding struct included
	 * (the common reservation is already unmapped) */
	void (*close)(struct hvtrace_ring *r);
	/* host CLOCK_MONOTONIC @now if records' host_ns relate to it, else
	 * 0 (NULL: 0) */
	uint64_t (*now_ns)(struct hvtrace_ring *r, uint64_t now);
	/* a record's host_ns from its ring timestamp (NULL: @ts) */
	uint64_t (*to_host)(struct hvtrace_ring *r, uint64_t ts);
	/* record timestamps count ns (NULL: true) */
	bool (*clock_is_ns)(const struct hvtrace_ring *r);
	/* why the kernel's mmap ABI is not used (NULL: it is, or no kernel) */
	const char *(*fallback)(const struct hvtrace_ring *r);
	/* losses no page will carry (NULL: 0) */
	uint64_t (*take_trailing_lost)(struct hvtrace_ring *r);
};

struct hvtrace_ring {
	const struct ring_ops *ops;
	int cpu;
	size_t page_size;

	/* the view */
	struct hvt_trace_buffer_meta *meta;
	size_t meta_len;
	uint8_t *data;			/* sub-buffer id 0 */
	size_t data_len;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;
	uint8_t *resv;			/* private views: the whole reservation */
	size_t resv_len;

	/* a reader page lent by the backend, shown in place of sub-buffer
	 * lent_id (NULL: none; ring_page()) */
	const uint8_t *lent;
	uint32_t lent_id;

	struct ring_cursor cur;
	uint64_t errors;
};

/* Where sub-buffer @id of the view is: the lent page, or its slot. */
static inline const uint8_t *ring_page(const struct hvtrace_ring *r,
				       uint32_t id)
{
	if (r->lent && id == r->lent_id)
		return r->lent;
	return r->data + (size_t)id * r->subbuf_size;
}

/*
 * A view with two private reader pages, ids ring_nr and ring_nr + 1
 * (after ring_nr writer slots, if any).
 */
struct ring_priv {
	struct hvtrace_ring r;
	uint32_t ring_nr;		/* id of reader page A */
	bool page_valid;		/* the reader page holds events */
	uint32_t page_seq;		/* writer sub-buffer it continues */
};

/* ring.c */
HVT_INTERNAL struct hvtrace_ring *ring_new(size_t size, size_t off, int cpu,
					   const struct ring_ops *ops);
HVT_INTERNAL int ring_reserve(struct hvtrace_ring *r, uint32_t reader_id);
HVT_INTERNAL void ring_priv_setup(struct ring_priv *p, uint32_t subbuf_size,
				  uint32_t ring_nr);
/*
 * get-reader of a private view: @fill puts the next validated,
 * self-contained sub-buffer into @page (page_info as
 * hvtrace_cpu_read_page() fills it) and returns 1, or 0 with nothing new,
 * or a negative errno; the rule that appends it or switches pages is here.
 */
HVT_INTERNAL int ring_priv_get_reader(struct ring_priv *p,
				      int (*fill)(struct ring_priv *p,
						  uint8_t *page,
						  struct hvtrace_page_info *info));

#endif /* HVT_RING_LOCAL_H */
