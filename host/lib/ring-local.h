/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: what the files of the ring view share (hidden, never
 * installed): the state of one CPU buffer seen through the ring-buffer
 * mmap ABI and of its record cursor.  ring.c holds the area and guest
 * kernel views, the common calls and the cursor; ring_kernel.c the host
 * kernel view.
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

struct hvtrace_ring {
	bool kernel;
	int cpu;
	size_t page_size;

	/* the view */
	struct hvt_trace_buffer_meta *meta;
	size_t meta_len;
	uint8_t *data;			/* sub-buffer id 0 */
	size_t data_len;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;
	uint8_t *resv;			/* area: the whole reservation */
	size_t resv_len;

	/* area backend, or guest kernel backend (kring) */
	struct hvtrace_area *area;
	struct hvtrace_kring *kring;
	uint32_t ring_nr;		/* writer slots */
	bool page_valid;		/* the reader page holds events */
	uint32_t page_seq;		/* writer sub-buffer it continues */

	/* kernel backend */
	int fd;
	bool kread;			/* read() instead of the mmap ABI */
	int stats_fd;			/* per_cpu/cpuN/stats (kread) */
	char why[96];			/* why kread */
	char stats_path[PATH_MAX];
	bool clock_ns;			/* trace clock counts nanoseconds */
	bool clock_mono;		/* ... and is CLOCK_MONOTONIC itself */
	bool clock_known;		/* offset below is valid */
	int64_t clock_off;		/* trace clock - CLOCK_MONOTONIC */
	uint64_t clock_synced_at;

	struct ring_cursor cur;
	uint64_t errors;
};

/* ring.c */
HVT_INTERNAL struct hvtrace_ring *ring_new(int cpu);
HVT_INTERNAL int ring_reserve(struct hvtrace_ring *r);

/* ring_kernel.c */
HVT_INTERNAL void ring_kernel_clock_sync(struct hvtrace_ring *r);
HVT_INTERNAL int ring_kernel_get_reader(struct hvtrace_ring *r);
HVT_INTERNAL int ring_kread_get_reader(struct hvtrace_ring *r);

#endif /* HVT_RING_LOCAL_H */
