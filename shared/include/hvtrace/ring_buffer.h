/* SPDX-License-Identifier: MIT */
/*
 * hvtrace writer core: the freestanding, lockless, per-CPU ring buffer that
 * writes ftrace sub-buffers into a trace area.  See shared/ring_buffer.c for
 * the design and the memory-ordering protocol.
 *
 * Two ways to commit an event:
 *
 *  - direct:  hvt_rb_write() / hvt_rb_reserve() + hvt_rb_commit().  The
 *             caller guarantees a single writer per CPU buffer at a time
 *             (a hypervisor with interrupts masked, a pinned thread).
 *
 *  - planned: hvt_rb_plan_write() builds a *plan* -- a short list of copies
 *             plus one final commit store -- and the caller executes it in
 *             a context that can abort and retry it as a whole (a Linux
 *             restartable sequence, see guest/lib/rseq_x86_64.S).  This is
 *             what lets any number of preemptible threads and processes
 *             share one CPU buffer without locks.  hvt_rb_plan_append()
 *             plans the common write in a compact form for such an
 *             executor.
 *
 * Both paths produce the same bytes; the direct executor is simply
 * hvt_rb_plan_exec().
 */
#ifndef HVTRACE_RING_BUFFER_H
#define HVTRACE_RING_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "errno.h"

/* Largest plan: desc (2), finish (3), page header, ts (3), event header,
 * common fields, HVT_RB_MAX_IOV payload pieces, record padding. */
#define HVT_RB_MAX_IOV		8u
#define HVT_RB_MAX_OPS		(12u + HVT_RB_MAX_IOV)

struct hvt_iovec {
	const void *base;
	uint32_t len;
};

/*
 * Writer-private handle for one CPU buffer.  Built once by
 * hvt_rb_cpu_init() or hvt_rb_cpu_attach(); geometry is never re-read from
 * shared memory afterwards.
 */
struct hvt_rb_cpu {
	struct hvt_cpu_meta *meta;
	uint8_t *pages;			/* sub-buffer 0 */
	const struct hvt_control *ctrl;	/* host-owned, read-only here */
	const struct hvt_ctrl_wake *wake; /* &ctrl->wake[cpu] */
	uint32_t wake_seen;		/* a gen claimed already (a hint) */
	uint32_t cpu;
	uint32_t nr_subbufs;
	uint32_t subbuf_size;
	uint32_t data_size;		/* subbuf_size - page header */
	uint32_t mode;			/* HVT_MODE_* */
	uint32_t max_record;		/* largest record (common + payload) */
};

/* One copy of a plan. */
struct hvt_rb_op {
	void *dst;
	const void *src;
	uint32_t len;
	uint32_t pad;
};

/* What a plan does when it commits. */
enum hvt_rb_plan_kind {
	HVT_PLAN_APPEND = 1,	/* event on the current sub-buffer */
	HVT_PLAN_SWITCH,	/* finish current, start next, write event */
	HVT_PLAN_SEAL,		/* ring full: pad and close the current page */
	HVT_PLAN_DROP,		/* ring full and sealed: count one lost event */
};

/*
 * A plan is valid only while meta->write == expect_write and
 * meta->lost == expect_lost, and only on the CPU it was built for.  An
 * executor checks both words, performs ops[0..nr_pre), a release fence,
 * ops[nr_pre..nr_ops), then stores commit_val to *commit_ptr with release
 * semantics.  Nothing in a plan is visible to the host until that store.
 */
struct hvt_rb_plan {
	uint64_t *write_ptr;		/* &meta->write */
	uint64_t *lost_ptr;		/* &meta->lost */
	uint64_t expect_write;
	uint64_t expect_lost;
	uint64_t *commit_ptr;
	uint64_t commit_val;
	uint32_t kind;			/* enum hvt_rb_plan_kind */
	uint32_t cpu;
	uint32_t nr_pre;
	uint32_t nr_ops;
	struct hvt_rb_op ops[HVT_RB_MAX_OPS];
	/* Storage the ops point into. */
	struct {
		uint64_t ts_pair[2];	/* { HVT_TS_KEY_INVALID, ts } */
		uint64_t ts_key;	/* new commit word */
		uint64_t page_hdr[2];	/* new page: time_stamp, commit 0 */
		uint64_t old_commit;	/* finished page's commit field */
		uint64_t missed;	/* count stored after finished data */
		uint32_t evt[4];	/* TIME_EXTEND + event header (+len) */
		uint32_t pad_evt[2];	/* tail padding event */
		uint32_t desc_seq;
		uint32_t zero;		/* record padding source */
		struct hvt_subbuf_desc desc_rest;
		struct hvt_common_fields common;
	} s;
};

/**
 * hvt_rb_cpu_init - format a fresh CPU buffer (writer side)
 * @cb:          handle to fill
 * @meta:        the CPU section's meta region (hvt_meta_size() bytes)
 * @pages:       nr_subbufs * subbuf_size bytes of sub-buffers
 * @ctrl:        the area's control page
 * @cpu:         CPU number
 * @nr_subbufs:  sub-buffers in the ring (>= 2)
 * @subbuf_size: bytes per sub-buffer (power of two, 4 KiB..64 KiB)
 * @mode:        HVT_MODE_CONSUME or HVT_MODE_OVERWRITE
 *
 * Return: 0, or -HVT_EINVAL for an unsupported geometry.
 */
int hvt_rb_cpu_init(struct hvt_rb_cpu *cb, struct hvt_cpu_meta *meta,
		    uint8_t *pages, const struct hvt_control *ctrl, uint32_t cpu,
		    uint32_t nr_subbufs, uint32_t subbuf_size, uint32_t mode);

/**
 * hvt_rb_cpu_attach - open an already formatted CPU buffer
 *
 * Same arguments as hvt_rb_cpu_init() but leaves shared memory untouched;
 * used by additional writer processes that share a guest's area.
 */
int hvt_rb_cpu_attach(struct hvt_rb_cpu *cb, struct hvt_cpu_meta *meta,
		      uint8_t *pages, const struct hvt_control *ctrl,
		      uint32_t cpu, uint32_t nr_subbufs, uint32_t subbuf_size,
		      uint32_t mode);

/**
 * hvt_rb_plan_write - plan one event
 * @cb:    CPU buffer
 * @plan:  plan to fill (caller storage, may live on the stack)
 * @ts:    event timestamp, read *after* the caller last executed a plan
 * @common: common fields to put first in the record (common_type etc.)
 * @iov:   payload pieces, concatenated after the common fields
 * @niov:  number of pieces (<= HVT_RB_MAX_IOV)
 *
 * Reads the buffer's shared state and prepares the copies that write the
 * event.  If the ring is full in consume mode the plan instead seals the
 * current page or counts the event as lost (plan->kind tells which).
 *
 * Return: 0 with a plan to execute, -HVT_E2BIG if the record can never fit
 * in a sub-buffer, -HVT_EINVAL for bad arguments.
 */
int hvt_rb_plan_write(struct hvt_rb_cpu *cb, struct hvt_rb_plan *plan,
		      uint64_t ts, const struct hvt_common_fields *common,
		      const struct hvt_iovec *iov, uint32_t niov);

/*
 * A compact plan for the common write: an APPEND of one payload piece,
 * without TIME_EXTEND, to a tail page that already holds an event.  Valid
 * under the same conditions as struct hvt_rb_plan (meta->write ==
 * expect_write, meta->lost == expect_lost, on CPU @cpu).  Executing it
 * makes exactly the stores the general plan for the same write makes, in
 * the same order:
 *
 *   meta->ts_key = HVT_TS_KEY_INVALID; meta->ts = ts;
 *   meta->ts_key = commit_val;			(W3)
 *   hdr_len bytes of hdr at dst; common after it; len bytes of src after
 *   that; pad zero bytes;
 *   meta->write = commit_val (release)		(W1)
 *
 * An executor may store all 8 bytes of hdr at dst when hdr_len is 4: the
 * common fields overwrite the upper half next.  The layout is fixed
 * (guest/lib/rseq_x86_64.S reads it; guest/lib/rseq.c checks offsets).
 */
struct hvt_rb_append {
	struct hvt_cpu_meta *meta;	/* write, ts_key, ts, lost */
	uint64_t expect_write;
	uint64_t expect_lost;
	uint64_t commit_val;		/* the new meta->write */
	uint64_t ts;			/* for the ts cache */
	uint8_t *dst;			/* the event header */
	uint64_t hdr;			/* event header, little-endian */
	struct hvt_common_fields common;
	const void *src;		/* payload */
	uint32_t len;			/* payload bytes */
	uint32_t hdr_len;		/* 4, or 8 for a record over 112 B */
	uint32_t pad;			/* zero bytes after the payload */
	uint32_t cpu;
};

/**
 * hvt_rb_plan_append - plan the common write compactly, if it applies
 * @cb:     CPU buffer
 * @a:      compact plan to fill
 * @ts:     event timestamp (as for hvt_rb_plan_write())
 * @common: common fields
 * @src:    payload (one piece)
 * @len:    payload bytes
 *
 * Makes the same decisions as hvt_rb_plan_write() (and the direct path's
 * fused append): the same commit value, timestamp and bytes.
 *
 * Return: 0 with @a filled; 1 when the write is not that case (an empty
 * or full tail page, a TIME_EXTEND, a record that never fits): plan it
 * with hvt_rb_plan_write() instead, which also reports the errors.
 */
int hvt_rb_plan_append(struct hvt_rb_cpu *cb, struct hvt_rb_append *a,
		       uint64_t ts, const struct hvt_common_fields *common,
		       const void *src, uint32_t len);

/**
 * hvt_rb_plan_exec - execute a plan as the only writer of its CPU buffer
 *
 * The direct executor.  It does not re-check expect_write/expect_lost:
 * the caller's single-writer guarantee makes them hold.
 */
void hvt_rb_plan_exec(const struct hvt_rb_plan *plan);

/**
 * hvt_rb_write - write one event (single writer per CPU buffer)
 * @cb:     CPU buffer
 * @ts:     timestamp
 * @common: common fields
 * @iov:    payload pieces
 * @niov:   number of pieces
 *
 * Return: 0 when written, -HVT_ENOSPC when the ring was full in consume
 * mode (the event is counted in meta->lost), -HVT_E2BIG when the record
 * cannot fit in a sub-buffer, -HVT_EINVAL for bad arguments.
 */
int hvt_rb_write(struct hvt_rb_cpu *cb, uint64_t ts,
		 const struct hvt_common_fields *common,
		 const struct hvt_iovec *iov, uint32_t niov);

/*
 * Reserve/commit (single writer per CPU buffer).  hvt_rb_reserve() returns
 * where the caller writes @len payload bytes (after the common fields, which
 * it fills itself from @common); nothing is visible to readers until
 * hvt_rb_commit().  A reservation must be committed before the next
 * reserve or write on the same CPU buffer.
 */
struct hvt_rb_reservation {
	struct hvt_rb_plan plan;
	uint8_t *payload;
	uint32_t len;
};

/**
 * hvt_rb_reserve - reserve space for one event
 *
 * Return: pointer to @len writable bytes, or NULL when the event was not
 * reserved; then *@err is -HVT_ENOSPC (counted as lost), -HVT_E2BIG or
 * -HVT_EINVAL.
 */
void *hvt_rb_reserve(struct hvt_rb_cpu *cb, struct hvt_rb_reservation *r,
		     uint64_t ts, const struct hvt_common_fields *common,
		     uint32_t len, int *err);

/** hvt_rb_commit - publish a reservation made by hvt_rb_reserve() */
void hvt_rb_commit(struct hvt_rb_cpu *cb, struct hvt_rb_reservation *r);

/**
 * hvt_rb_put_page - commit a whole ftrace sub-buffer from another ring
 * @cb:   CPU buffer (single writer: the caller is its only one)
 * @page: the sub-buffer as Linux's trace_pipe_raw returns it: u64
 *        time_stamp, u64 commit (data size | RB_MISSED_* flags), data
 * @len:  bytes readable at @page
 * @lost: events lost right before it (its own RB_MISSED_* flags and
 *        stored count are not looked at: the caller decodes them)
 *
 * For the agent's kernel copy (abi.h, HVT_WRITER_GUEST_KERNEL): the page
 * is walked with the host's page walker (every event inside its commit,
 * data events counted), copied into the next slot and committed with the
 * same stores and barriers as a page switch (W2, W3, W1), so the host's
 * reader takes it like any page and counts @lost exactly through the
 * descriptors.
 *
 * Return: 0 when committed; -HVT_ENOSPC when the ring is full in consume
 * mode (nothing changed: keep the page, try again once the host read);
 * -HVT_ENODATA when the page holds no data event (nothing changed: carry
 * @lost to the next page); -HVT_EBADMSG for a malformed page or
 * -HVT_E2BIG for one larger than this ring's sub-buffers (nothing
 * changed); -HVT_EINVAL for bad arguments.
 */
int hvt_rb_put_page(struct hvt_rb_cpu *cb, const uint8_t *page, uint32_t len,
		    uint64_t lost);

/**
 * hvt_rb_count_unplaced - count an event that no CPU buffer took
 *
 * For a writer running on a CPU the area has no buffer for (pass the
 * buffer of cpu % nr_cpus) or one that gave up after too many failed
 * attempts (pass the buffer it tried).  Adds one to meta->unplaced with a
 * relaxed atomic add, safe from any number of writers at once; the host
 * reports it as lost.
 */
void hvt_rb_count_unplaced(struct hvt_rb_cpu *cb);

/**
 * hvt_rb_entries - events committed on this CPU buffer so far
 */
uint64_t hvt_rb_entries(const struct hvt_rb_cpu *cb);

/**
 * hvt_rb_poll_reset - serve a host reset request for this CPU, if any
 *
 * A reset closes the current sub-buffer so the next event starts a fresh
 * one, and acknowledges the request in meta->reset_ack.  The host skips
 * everything before the acknowledged page.  Single-writer contexts only.
 *
 * Return: 1 if a reset was served, 0 otherwise.
 */
int hvt_rb_poll_reset(struct hvt_rb_cpu *cb);

/* --- armed wakeups (shared/ring_wake.c) -------------------------------- */

/* The slow half of hvt_rb_wake_due(): 1 when this writer must ring. */
int hvt_rb_wake_slow(struct hvt_rb_cpu *cb, uint64_t wake);

/**
 * hvt_rb_wake_due - after a commit: must this writer ring the doorbell?
 *
 * One load and a compare while no reader is armed.  When one is, and this
 * CPU buffer has committed up to its watermark, exactly one writer of the
 * arming gets 1 (the protocol is in shared/ring_wake.c).
 */
static inline int hvt_rb_wake_due(struct hvt_rb_cpu *cb)
{
	/* W2: relaxed; see ring_wake.c for why no fence is needed here. */
	uint64_t wake = __atomic_load_n(&cb->wake->word, __ATOMIC_RELAXED);

	/* A gen this handle saw claimed needs nothing more: one load of the
	 * control page and a compare with our own copy. */
	if (__builtin_expect(HVT_WAKE_GEN(wake) ==
				     __atomic_load_n(&cb->wake_seen,
						     __ATOMIC_RELAXED),
			     1))
		return 0;
	return hvt_rb_wake_slow(cb, wake);
}

/**
 * hvt_wake_word - the wake word a reader stores in its CPU's control entry
 * (step A2, a relaxed store): generation @gen (any value other than the one
 * the writers last claimed; a reader counts its own, never reading it back),
 * ringing once the buffer has committed @mark bytes (at least one) past
 * @read_word, the commit word read up to (@data_size: bytes of data per
 * sub-buffer).  The reader then makes every writer CPU pass a full barrier
 * (A3) and loads the commit word again (A4) before it sleeps.
 */
uint64_t hvt_wake_word(uint32_t gen, uint64_t read_word, uint32_t mark,
		       uint32_t data_size);

/* --- enable check ----------------------------------------------------- */

/**
 * hvt_event_enabled - the writer's fast-path check: one load and a mask
 * @ctrl: the area's control page (host-owned, read-only)
 * @bit:  the event's enable bit (< HVT_ABI_MAX_EVENTS)
 */
static inline int hvt_event_enabled(const struct hvt_control *ctrl,
				    uint32_t bit)
{
	/*
	 * Relaxed: the bit is a hint; the host's later disable is not
	 * ordered against events already being written.
	 */
	return (__atomic_load_n(&ctrl->enable[(bit >> 6) &
					      (HVT_ABI_MAX_EVENTS / 64 - 1)],
				__ATOMIC_RELAXED) >>
		(bit & 63)) &
	       1;
}

/* --- area (writer side) ---------------------------------------------- */

struct hvt_area_params {
	uint64_t area_size;	/* bytes available */
	uint32_t nr_cpus;
	uint32_t nr_subbufs;	/* 0: as many as fit in area_size */
	uint32_t subbuf_size;
	uint32_t mode;
	uint32_t writer_kind;
	uint32_t clock_id;
	uint64_t clock_freq_hz;
	uint32_t clock_mult;
	uint32_t clock_shift;
	uint32_t writer_pid;
	const char *name;
	/*
	 * Bytes at the end of area_size kept for a kernel section (agent
	 * copy mode, abi.h): the area takes area_size - kernel_size and its
	 * header names the section right after it.  0: none.  A multiple
	 * of 4096; the caller formats the section itself.
	 */
	uint64_t kernel_size;
};

/**
 * hvt_area_format - lay out and format a whole trace area (writer side)
 * @area:  start of the area memory, zero-filled or stale
 * @p:     geometry; nr_subbufs 0 means "fill area_size"
 *
 * Writes the header and formats every CPU buffer, then publishes the
 * header magic last (release).  The control page is left alone: the host
 * owns it (a fresh ring starts at the host's consumer position, so a stale
 * control page cannot make it look full).
 *
 * Return: 0, or -HVT_EINVAL / -HVT_ENOSPC when the geometry does not fit.
 */
int hvt_area_format(void *area, const struct hvt_area_params *p);

/**
 * hvt_area_cpu - open CPU @cpu of a formatted area for writing
 *
 * Validates the header before trusting it (a writer process may attach to
 * an area another process formatted).  Return: 0 or -HVT_EINVAL.
 */
int hvt_area_cpu(void *area, uint64_t area_size, uint32_t cpu,
		 struct hvt_rb_cpu *cb);

/**
 * hvt_area_sync_pending - is a host time-sync request waiting?
 * @area: the area
 * @req:  set to the request to answer
 *
 * A writer answers with hvt_area_sync_answer(), reading its clock *between*
 * the two calls, so the answer cannot predate the request.
 *
 * Return: 1 if a request awaits an answer, 0 otherwise.
 */
int hvt_area_sync_pending(const void *area, uint64_t *req);

/**
 * hvt_area_sync_answer - answer request @req with the writer clock @clock
 */
void hvt_area_sync_answer(void *area, uint64_t req, uint64_t clock);

/**
 * hvt_area_sync_poll - answer a pending request with a clock value read
 * before the call (convenience for writers that poll very often; prefer
 * hvt_area_sync_pending() + hvt_area_sync_answer())
 *
 * Return: 1 if a request was answered.
 */
int hvt_area_sync_poll(void *area, uint64_t clock);

/**
 * hvt_area_validate - check a header snapshot against its own geometry
 * @h:         header copy
 * @area_size: bytes actually available (file or BAR size)
 * @why:       set to a static description of the first problem
 *
 * Shared by writers and the host so both apply the same rules.
 * Return: 0 or -HVT_EINVAL.
 */
int hvt_area_validate(const struct hvt_area_header *h, uint64_t area_size,
		      const char **why);

#endif /* HVTRACE_RING_BUFFER_H */
