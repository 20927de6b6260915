/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: what the files of the guest kernel ring reader share
 * (hidden, never installed): the reader's state, the layout constants of
 * the kernel's ring_buffer_meta, and the one page reader of the parser
 * (kr_get() and the kr_rd*() loads).  kring.c finds and opens the ring,
 * kring_pid.c finds it in a running VMM, kring_read.c reads it.
 */
#ifndef HVT_KRING_LOCAL_H
#define HVT_KRING_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvtrace-local.h"

#define KR_MAGIC		0xBADFEEDu
#define KR_SCAN_STEP		4096u
#define KR_612_META_SIZE	56u	/* struct ring_buffer_meta, 6.12 */
#define KR_612_FIELDS		24u	/* offset of first_buffer in it */
#define KR_615_GLOBAL_SIZE	24u	/* struct ring_buffer_meta, 6.15+ */
#define KR_615_CPU_MIN		32u	/* ring_buffer_cpu_meta up to nr_subbufs */
#define KR_615_CPU_MAX		4096u
#define KR_NR_MAX		(1u << 20)
#define KR_CPUS_MAX		4096u

/*
 * What one read call may cost: at most KR_SNAPS_MAX
 * snapshots of a CPU's meta (each O(nr): buffers[] copied and checked)
 * and at most KR_WALK_MAX pages looked at.  Empty or malformed pages
 * beyond that are walked by the next calls; the cursor keeps its place.
 */
#define KR_SNAPS_MAX		4u
#define KR_WALK_MAX		1024u

/*
 * The lowest guest kernel virtual address: x86-64 with 5-level paging
 * (0xff00000000000000); arm64 and riscv64 kernels lie above it.  A meta
 * whose text, data or sub-buffer addresses lie below is not the guest
 * kernel's (one a guest user planted).
 */
#define KR_KERNEL_VA_MIN	0xff00000000000000ull

/* A scan stops at the second ring that validates, and names both. */
#define KR_CANDS_MAX		2u

/* Offsets inside the common part of a CPU meta (from first_buffer). */
#define KR_F_FIRST	0u
#define KR_F_HEAD	8u
#define KR_F_COMMIT	16u
#define KR_F_SUBBUF	24u
#define KR_F_NR		28u

struct kr_cpu {
	uint64_t fields;	/* file offset of first_buffer */
	uint64_t bufs;		/* file offset of buffers[] */
	uint64_t pages;		/* file offset of sub-buffer slot 0 */

	/* snapshot (private) */
	int32_t *buffers;	/* nr entries */
	uint32_t *id_of;	/* slot -> ring id */
	uint64_t first;		/* first_buffer the cursor belongs to */
	uint32_t snap_head;	/* the last snapshot's head and commit ids, */
	uint32_t snap_commit;	/* for the next call while snap_ok */
	bool snap_ok;

	/* cursor */
	bool started;		/* id is meaningful */
	bool page_started;	/* page_ts, slot, pos are */
	uint32_t id;
	uint32_t slot;
	uint64_t page_ts;
	uint32_t pos;
	uint64_t pos_ts;
	bool bad;		/* the commit page at bad_id is malformed */
	uint32_t bad_id;
	uint64_t pending_lost;	/* 0 or HVTRACE_LOST_UNKNOWN */

	uint8_t *copy;		/* private page copy */
	struct hvtrace_kring_stats st;
	/* what the last read call cost (the tests read them) */
	uint32_t call_snaps;	/* snapshots taken */
	uint32_t call_pages;	/* pages looked at */
};

struct hvtrace_kring {
	int fd;
	char path[512];		/* what messages name the source by */
	const char *unit;	/* "file" or "mapping" */
	const uint8_t *map;	/* the source, PROT_READ; NULL: pread(mem) */
	uint64_t size;		/* bytes of the source: bounds every offset */
	uint64_t foff;		/* file offset of map[0] */
	/* a VMM's anonymous memory: read with pread() of /proc/PID/mem */
	int mem;		/* -1 when map is set */
	int pid;
	uint64_t base;		/* VMM virtual address of offset 0 */
	int pagemap;		/* /proc/PID/pagemap, or -1 */
	int io_err;		/* first failed read since the last check */
	bool probe;		/* the scan: validate a meta, allocate nothing */
	struct hvtrace_kring_info info;
	uint32_t ring;		/* ring pages: nr_subbufs - 1 */
	uint32_t data_size;
	struct kr_cpu *cpus;
};

struct kr_snap {
	uint32_t head_id;
	uint32_t commit_id;	/* 0: the guest's reader page holds it */
};

/* The one page reader of the parser (kring.c): a failed read yields zeros. */
HVT_INTERNAL void kr_get(struct hvtrace_kring *k, uint64_t off, void *dst,
			 size_t len);

/* Loads from guest memory: single, untorn loads (the guest writes them
 * with single stores too). */
static inline uint32_t kr_rd32(struct hvtrace_kring *k, uint64_t off)
{
	uint32_t v;

	if (k->map)
		return __atomic_load_n((const uint32_t *)(k->map + off),
				       __ATOMIC_RELAXED);
	kr_get(k, off, &v, sizeof(v));
	return v;
}

static inline uint64_t kr_rd64(struct hvtrace_kring *k, uint64_t off)
{
	uint64_t v;

	if (k->map)
		return __atomic_load_n((const uint64_t *)(k->map + off),
				       __ATOMIC_RELAXED);
	kr_get(k, off, &v, sizeof(v));
	return v;
}

/* An acquire load: the guest stored what it covers before it (the fence
 * after the load pairs with the guest's store order; a pread() copied
 * before it). */
static inline uint64_t kr_rd64_acq(struct hvtrace_kring *k, uint64_t off)
{
	uint64_t v = kr_rd64(k, off);

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return v;
}

static inline uint64_t kr_align(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Ring distance from id @a forward to id @b (ids 1..ring). */
static inline uint32_t kr_dist(uint32_t ring, uint32_t a, uint32_t b)
{
	return (b + ring - a) % ring;
}

/* kring.c */
HVT_INTERNAL int kr_find(struct hvtrace_kring *k, uint64_t offset);


#endif /* HVT_KRING_LOCAL_H */
