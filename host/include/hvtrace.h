/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace - read hvtrace trace areas as ftrace data.
 *
 * A trace area is shared memory that one writer (a hypervisor, a guest VM
 * or a local process) fills with per-CPU rings of Linux ftrace
 * sub-buffers.  libhvtrace maps the writer's pages read-only, validates
 * every offset, length and count it reads from them, and hands out ftrace
 * sub-buffers, decoded events and trace_pipe-style text.  The only page it
 * writes is the area's control page (enable bits, consumer progress,
 * time sync), and only when opened with HVTRACE_OPEN_CONTROL.
 *
 * All functions return 0 (or a count) on success and a negative errno on
 * failure; hvtrace_last_error() then describes the failure in words.
 * Handles are opaque.  A handle may be used by one thread at a time.
 */
#ifndef HVTRACE_H
#define HVTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HVT_BUILD_LIB)
#define HVTRACE_API __attribute__((visibility("default")))
#else
#define HVTRACE_API
#endif

/**
 * hvtrace_last_error - text describing the calling thread's last failure
 *
 * Says what was wrong and, where it can, what to do.  Valid until the next
 * libhvtrace call on the same thread.
 */
HVTRACE_API const char *hvtrace_last_error(void);

/* --- trace areas ------------------------------------------------------ */

struct hvtrace_area;

enum hvtrace_open_flags {
	/* Map the control page read-write: this host owns the area (enable
	 * bits, consumer progress, time sync).  One owner per area. */
	HVTRACE_OPEN_CONTROL = 1u << 0,
	/* With HVTRACE_OPEN_CONTROL: post the readers' positions in the
	 * control page, and start each reader after the last event a
	 * previous owner opened with this flag returned (a restarted
	 * daemon); without it, reading starts at the oldest data. */
	HVTRACE_OPEN_RESUME = 1u << 1,
	/* With HVTRACE_OPEN_RESUME: reads do not post the position; the
	 * owner posts it with hvtrace_cpu_post_pos() once what it read is
	 * safe (handed on), so that a successor after a crash resumes
	 * after what was handed on, not merely read. */
	HVTRACE_OPEN_POST_LATER = 1u << 2,
};

struct hvtrace_area_info {
	char name[32];
	uint32_t writer_kind;		/* HVT_WRITER_* */
	uint32_t mode;			/* HVT_MODE_* */
	uint32_t state;			/* HVT_STATE_* (as last read) */
	uint32_t nr_cpus;
	uint32_t nr_subbufs;		/* per CPU */
	uint32_t subbuf_size;
	uint64_t area_size;
	uint64_t file_offset;		/* where the area starts in its file */
	uint64_t generation;		/* bumped each time the writer formats */
	uint32_t clock_id;		/* HVT_CLOCK_* */
	uint32_t clock_mult;
	uint32_t clock_shift;
	uint32_t writer_pid;
	uint64_t clock_freq_hz;
	/* A guest's kernel section (agent copy mode, <hvtrace/abi.h>): an
	 * area of writer kind HVT_WRITER_GUEST_KERNEL at kernel_offset from
	 * this area's start (file_offset + kernel_offset in the file),
	 * kernel_size bytes; both 0 when there is none. */
	uint64_t kernel_offset;
	uint64_t kernel_size;
};

/**
 * hvtrace_area_open - attach to a trace area in a file
 * @path:   a file holding the area (/dev/shm/..., a QEMU memory-backend
 *          file, a post-mortem copy)
 * @offset: byte offset of the area in the file (multiple of 4096)
 * @size:   bytes of the area, or 0 for "to the end of the file"
 * @flags:  enum hvtrace_open_flags
 * @out:    the new handle
 *
 * Maps the writer-owned part PROT_READ and validates the header; the
 * geometry is snapshotted once and never re-read.
 *
 * Return: 0; -ENOENT, -EACCES, -EINVAL (not a valid area: see
 * hvtrace_last_error()), -EAGAIN (the writer has not formatted it yet).
 */
HVTRACE_API int hvtrace_area_open(const char *path, uint64_t offset,
				  uint64_t size, unsigned int flags,
				  struct hvtrace_area **out);

/**
 * hvtrace_area_open_spec - hvtrace_area_open() from "PATH[@OFFSET[+SIZE]]"
 *
 * OFFSET and SIZE accept 0x hex and K/M/G suffixes, as the CLI does.
 */
HVTRACE_API int hvtrace_area_open_spec(const char *spec, unsigned int flags,
				       struct hvtrace_area **out);

/** hvtrace_area_close - unmap and free; NULL is a no-op */
HVTRACE_API void hvtrace_area_close(struct hvtrace_area *a);

/** hvtrace_area_get_info - the validated geometry and identity */
HVTRACE_API int hvtrace_area_get_info(const struct hvtrace_area *a,
				      struct hvtrace_area_info *info);

/**
 * hvtrace_area_writer_state - the writer's current state and generation
 * @state: HVT_STATE_* as the writer last wrote it (informational)
 * @generation: the header's generation now
 *
 * Return: 1 if the generation differs from the one attached to, or the
 * header's magic is cleared (the writer re-formatted the area or is doing
 * so: close and reopen), 0 if not, -EIO if the file shrank under the
 * mapping.
 */
HVTRACE_API int hvtrace_area_writer_state(const struct hvtrace_area *a,
					  uint32_t *state,
					  uint64_t *generation);

/* --- control page (needs HVTRACE_OPEN_CONTROL) ----------------------- */

/**
 * hvtrace_area_set_tracing - tracing_on for the whole area
 *
 * Folded into the effective enable bitmap that writers test, so a writer
 * still needs only one load and a mask.
 */
HVTRACE_API int hvtrace_area_set_tracing(struct hvtrace_area *a, bool on);
HVTRACE_API bool hvtrace_area_get_tracing(const struct hvtrace_area *a);

/**
 * hvtrace_area_set_event - enable or disable event enable-bit @bit
 *
 * Return: 0, -EPERM without HVTRACE_OPEN_CONTROL, -ERANGE for a bit at or
 * above HVT_ABI_MAX_EVENTS, -EIO if the file shrank under the mapping.
 */
HVTRACE_API int hvtrace_area_set_event(struct hvtrace_area *a,
				       unsigned int bit, bool on);
/** hvtrace_area_event_enabled - the host's own record of @bit */
HVTRACE_API bool hvtrace_area_event_enabled(const struct hvtrace_area *a,
					    unsigned int bit);

/**
 * hvtrace_area_reset_cpu - ask the writer to close its current sub-buffer
 * and discard everything before it (per-CPU reset)
 *
 * Returns once the request is posted; the reader skips the discarded data
 * when the writer acknowledges it.  Only writers that poll for resets
 * serve it (the EL2 hypervisor and the loopback writer do; guest user
 * space writers do not, since no single thread owns a guest CPU buffer).
 */
HVTRACE_API int hvtrace_area_reset_cpu(struct hvtrace_area *a, int cpu);

/**
 * hvtrace_area_set_clock - publish counter-to-host-time parameters
 *
 * host_ns = epoch_ns + ((cnt - epoch_cnt) * mult >> shift), for writers
 * that convert timestamps themselves.
 */
HVTRACE_API int hvtrace_area_set_clock(struct hvtrace_area *a, uint32_t mult,
				       uint32_t shift, uint64_t epoch_cnt,
				       uint64_t epoch_ns);

/**
 * hvtrace_area_send_command - post a command to the writer (HVT_CMD_*)
 *
 * The writer acts on it once, when it next polls its control page (a
 * writer that does not know the command ignores it).
 */
HVTRACE_API int hvtrace_area_send_command(struct hvtrace_area *a,
					  uint32_t cmd);

/* --- armed wakeups ------------------------------------------------------- */

/**
 * hvtrace_area_wake_arm - arm a doorbell on CPU @cpu: the writer that commits
 * @mark bytes (at least one) past what this reader has read rings once
 *
 * Step A2 of the armed-wakeup handshake (docs/design.md, "Waking the
 * reader").  The caller then has every CPU of the area's writers pass a
 * full barrier (membarrier(2) for writers on this host, the agent's
 * BARRIER for a guest's) and calls hvtrace_area_wake_pending() before it
 * sleeps.  Needs the owner's control page.
 *
 * Return: 0, -EINVAL (no such CPU), -EPERM (not the owner).
 */
HVTRACE_API int hvtrace_area_wake_arm(struct hvtrace_area *a, int cpu,
				      uint32_t mark);

/**
 * hvtrace_area_wake_pending - after the barrier: has CPU @cpu committed up to
 * the position its last hvtrace_area_wake_arm() armed?  Then read it rather
 * than sleep.
 *
 * Return: 1 or 0, -EINVAL (no such CPU).
 */
HVTRACE_API int hvtrace_area_wake_pending(struct hvtrace_area *a, int cpu);

/* --- time --------------------------------------------------------------- */

/**
 * hvtrace_area_sync - take one time-sync sample through the control page
 * @timeout_ms: how long to wait for the writer's answer
 *
 * Stamps CLOCK_MONOTONIC before posting the request and after seeing the
 * answer; keeps the sample in the area's clock model.
 *
 * Return: 0, -ETIMEDOUT if the writer did not answer (it answers only
 * while it runs), -EPERM without HVTRACE_OPEN_CONTROL, -EAGAIN if the
 * answer changed while it was read (retry), -EIO if the file shrank under
 * the mapping, -EINVAL for a NULL area.
 */
HVTRACE_API int hvtrace_area_sync(struct hvtrace_area *a, int timeout_ms);

/**
 * hvtrace_area_add_sync_sample - feed the clock model a sample taken
 * elsewhere (for example over a guest's control channel)
 * @host_send: host CLOCK_MONOTONIC ns before the request left
 * @writer:    the writer's clock when it answered
 * @host_recv: host CLOCK_MONOTONIC ns when the answer arrived
 */
HVTRACE_API void hvtrace_area_add_sync_sample(struct hvtrace_area *a,
					      uint64_t host_send,
					      uint64_t writer,
					      uint64_t host_recv);

/**
 * hvtrace_area_to_host_ns - convert a writer timestamp to host
 * CLOCK_MONOTONIC nanoseconds with the current clock model
 * @err_ns: if not NULL, the model's error bound in ns: half the width of
 *          the intersection of every recent sample's bracket, once the
 *          rate is fitted (UINT64_MAX before the first sample)
 */
HVTRACE_API uint64_t hvtrace_area_to_host_ns(const struct hvtrace_area *a,
					     uint64_t ts, uint64_t *err_ns);

/**
 * struct hvtrace_clock_map - a clock model as a reader applies it
 *
 * What maps a writer timestamp to host CLOCK_MONOTONIC ns and states its
 * error bound (docs/design.md, section 5): an area's model
 * (hvtrace_area_clock_map()) or one hvtraced sent for a remote (CLOCK,
 * docs/proxy.md).  hvtrace_clock_map_to_host() is the one conversion:
 * hvtrace_area_to_host_ns() goes through it too, so the same map gives
 * the same ns and bound wherever it is applied.
 */
struct hvtrace_clock_map {
	uint32_t clock_id;	/* HVT_CLOCK_*; 0: no model (the writer's
				 * own times, bound UINT64_MAX) */
	uint32_t flags;		/* HVTRACE_CLOCK_SYNCED */
	uint64_t generation;	/* hvtraced's count of the remote's models
				 * (0 for an area's own) */
	uint64_t base_writer;	/* the newest sample's writer time */
	uint64_t base_host;	/* ... on the host's clock */
	uint64_t rate_int;	/* ns per tick: rate_int + rate_frac / 2^64 */
	uint64_t rate_frac;
	uint64_t err_ns;	/* bound at base_writer; UINT64_MAX unsynced */
	double rate_err;	/* bound of the rate's error, ns per tick */
	double drift_half;	/* half the allowed drift, ns per tick^2 */
};

#define HVTRACE_CLOCK_SYNCED	0x1u	/* a time-sync sample was fitted */

/**
 * hvtrace_area_clock_map - the area's clock model as it stands now
 * @m: filled (generation 0)
 */
HVTRACE_API void hvtrace_area_clock_map(const struct hvtrace_area *a,
					struct hvtrace_clock_map *m);

/**
 * hvtrace_clock_map_to_host - map writer timestamp @ts with @m
 * @err_ns: if not NULL, the bound at @ts: err_ns + rate_err * |d| +
 *          drift_half * d^2 with d = @ts - base_writer, rounded up
 *          (UINT64_MAX unsynced, without a model, or past 2^64)
 *
 * No model (clock_id 0) leaves @ts as it is; HVT_CLOCK_HOST_NS too (bound
 * err_ns, 0).  No I/O, no allocation.
 *
 * Return: host CLOCK_MONOTONIC ns (0 or UINT64_MAX where the map leaves
 * the range).
 */
HVTRACE_API uint64_t hvtrace_clock_map_to_host(
	const struct hvtrace_clock_map *m, uint64_t ts, uint64_t *err_ns);

/* --- consuming reads, one CPU at a time -------------------------------- */

struct hvtrace_page_info {
	uint64_t lost_events;	/* events lost right before this page */
	uint64_t first_ts;	/* page header time_stamp (writer clock) */
	uint32_t entries;	/* data events in the page */
	uint32_t size;		/* committed data bytes */
	uint32_t seq;		/* writer's sub-buffer sequence number */
	uint32_t flags;		/* HVTRACE_PAGE_* */
};

#define HVTRACE_PAGE_TAIL	(1u << 0)	/* the writer's current page:
						 * more may follow on it */
/* a ring source's page, lent until released (hvtrace_ring_source_ops) */
#define HVTRACE_PAGE_LENT (1u << 1)

/**
 * hvtrace_cpu_read_page - consume the next events of one CPU as a page
 * @a:     area
 * @cpu:   CPU buffer
 * @page:  output, @size bytes (at least the area's subbuf_size)
 * @size:  bytes available at @page
 * @info:  filled when a page is returned (may be NULL)
 *
 * Produces a self-contained ftrace sub-buffer holding only events not
 * returned before (so it is often shorter than a full sub-buffer), with
 * RB_MISSED_EVENTS/RB_MISSED_STORED and the count set when events were
 * lost since the previous page.  Reads never wait for the writer and
 * never let it tear a returned event.  Malformed writer data is counted in
 * the CPU's error counter and skipped; the events it hid are counted as
 * lost.
 *
 * Return: 1 when @page was filled, 0 when nothing new was committed,
 * negative errno on failure.
 */
HVTRACE_API int hvtrace_cpu_read_page(struct hvtrace_area *a, int cpu,
				      void *page, size_t size,
				      struct hvtrace_page_info *info);

/*
 * Per-CPU counters.  Exact accounting holds at every moment:
 *
 *   written == read + lost + discarded + unread + trailing
 *
 * where unread is committed data still in the ring (entries), lost counts
 * events this reader reported as lost (overrun + dropped + skipped) and
 * trailing counts drops that no later page has reported yet.  "Every
 * moment" means within one writer generation: a writer that re-formats
 * the area restarts its counters (hvtrace_area_writer_state() reports it;
 * reopen the area).  Events overwritten before this reader attached are
 * not part of "written" (counting starts at the oldest page present then).
 */
struct hvtrace_cpu_stats {
	uint64_t written;	/* events the writer handled since attach:
				 * committed + dropped */
	uint64_t entries;	/* committed, still unread in the ring */
	uint64_t overrun;	/* overwritten before they were read */
	uint64_t dropped;	/* dropped by the writer (ring full), reported */
	uint64_t skipped;	/* hidden by malformed pages this reader skipped */
	uint64_t lost;		/* overrun + dropped + skipped */
	uint64_t trailing;	/* dropped, not yet followed by a page */
	uint64_t discarded;	/* skipped on purpose (reset, seek to newest) */
	uint64_t read;		/* events returned by this reader */
	uint64_t bytes;		/* data bytes returned */
	uint64_t errors;	/* malformed words, descriptors or pages seen */
	uint64_t writer_lost;	/* the writer's own drop counter (meta->lost) */
	uint64_t oldest_ts;	/* first event still readable, writer clock */
	uint64_t now_ts;	/* newest committed event, writer clock */
	uint64_t unplaced;	/* of dropped: events the writer could place
				 * in no buffer (a CPU beyond the area, or a
				 * write given up), reported */
};

/**
 * hvtrace_cpu_get_stats - counters of one CPU buffer, like per_cpu stats
 *
 * Return: 0 (also when the file shrank under the mapping: then only
 * @st->errors is filled), -EINVAL for a bad argument.
 */
HVTRACE_API int hvtrace_cpu_get_stats(struct hvtrace_area *a, int cpu,
				      struct hvtrace_cpu_stats *st);

/*
 * Where a CPU's reader stands: the fields of the control page's read
 * position (struct hvt_ctrl_pos), as a read left them.
 */
struct hvtrace_read_pos {
	uint64_t accounted;	/* events read or reported lost up to here */
	uint64_t unplaced;	/* unplaced events reported */
	uint32_t seq;		/* the sub-buffer */
	uint32_t pos;		/* data bytes of it returned */
};

/**
 * hvtrace_cpu_read_pos - the position the last read of @cpu reached
 * @a:   area opened with HVTRACE_OPEN_POST_LATER
 * @cpu: CPU buffer
 * @pos: filled
 *
 * No I/O.  Return: 0; -ENODATA before a read returned events; -EINVAL
 * for a bad argument or an area opened without HVTRACE_OPEN_POST_LATER.
 */
HVTRACE_API int hvtrace_cpu_read_pos(struct hvtrace_area *a, int cpu,
				     struct hvtrace_read_pos *pos);

/**
 * hvtrace_cpu_post_pos - post a read position for a successor
 * @a:   area opened with HVTRACE_OPEN_CONTROL | HVTRACE_OPEN_RESUME
 * @cpu: CPU buffer
 * @pos: as hvtrace_cpu_read_pos() gave it
 *
 * A successor opened with HVTRACE_OPEN_RESUME starts after @pos.  Posting
 * an earlier position than the reader reached is allowed (the successor
 * returns the events in between again, or counts them lost where the
 * writer has reused their pages); posting one that was never read is not
 * checked here, and the successor ignores it if the ring disagrees.
 *
 * Return: 0; -EPERM without HVTRACE_OPEN_CONTROL and HVTRACE_OPEN_RESUME;
 * -EINVAL for a bad argument.
 */
HVTRACE_API int hvtrace_cpu_post_pos(struct hvtrace_area *a, int cpu,
				     const struct hvtrace_read_pos *pos);

/**
 * hvtrace_cpu_take_trailing_lost - claim drops not followed by any page
 *
 * Events the writer dropped after its last page are only reported when a
 * later page starts.  At the end of a post-mortem read, this returns them
 * (and accounts them as lost) so that read + lost == written.
 */
HVTRACE_API uint64_t hvtrace_cpu_take_trailing_lost(struct hvtrace_area *a,
						    int cpu);

/**
 * hvtrace_cpu_seek - move the reader of a CPU
 * @oldest: true: the oldest unread data, which is where the reader already
 *          is (it never moves back over events it returned, so nothing is
 *          returned twice); false: skip to "now", discarding everything
 *          committed so far (counted as discarded, not lost)
 */
HVTRACE_API int hvtrace_cpu_seek(struct hvtrace_area *a, int cpu, bool oldest);

/* ===================================================================== */
/* Reading as ftrace: the ring-buffer mmap view, records, decoding, text  */
/* (host/lib/ring.c, subbuf.c, merge.c, decode.c, text.c, loopback.c)     */
/* ===================================================================== */

struct hvtrace_ring; /* <hvtrace-ring.h> */

/* --- records -------------------------------------------------------------- */

/* lost_before when the writer lost events but had no room for the count */
#define HVTRACE_LOST_UNKNOWN	UINT64_MAX

struct hvtrace_record {
	uint64_t ts;		/* ring timestamp, the writer's clock */
	uint64_t host_ns;	/* best estimate on the host CLOCK_MONOTONIC */
	const void *data;	/* the record: common fields first */
	uint32_t size;		/* bytes at data (4-byte multiple) */
	int cpu;
	/* events lost right before this record, or HVTRACE_LOST_UNKNOWN */
	uint64_t lost_before;
	/* host CLOCK_MONOTONIC when get-reader handed the record over */
	uint64_t fetched_ns;
};

/**
 * hvtrace_ring_peek - the next record of a ring, without consuming it
 * @r:   ring
 * @rec: filled when a record is returned; rec->data stays valid until the
 *       next hvtrace_ring_consume() or get-reader on @r
 *
 * Walks the reader page up to reader.read, and calls get-reader when it
 * is used up.  Every event header is bounded by the handed-over size; a
 * malformed page is skipped and counted (hvtrace_ring_errors()).
 *
 * Return: 1 with a record, 0 when nothing is pending, negative errno.
 */
HVTRACE_API int hvtrace_ring_peek(struct hvtrace_ring *r,
				  struct hvtrace_record *rec);

/** hvtrace_ring_consume - step past the record hvtrace_ring_peek() gave */
HVTRACE_API void hvtrace_ring_consume(struct hvtrace_ring *r);

/** hvtrace_ring_errors - malformed pages this ring's walker skipped */
HVTRACE_API uint64_t hvtrace_ring_errors(const struct hvtrace_ring *r);

/**
 * hvtrace_ring_take_trailing_lost - for an area ring, claim events the
 * writer dropped after its last page (see hvtrace_cpu_take_trailing_lost());
 * for a source ring, losses its source reported with no event after them
 *
 * Return: the count (HVTRACE_LOST_UNKNOWN: of unknown number; 0 for kernel
 * rings).
 */
HVTRACE_API uint64_t hvtrace_ring_take_trailing_lost(struct hvtrace_ring *r);

/**
 * hvtrace_ring_now_ns - the host CLOCK_MONOTONIC time matching the ring's
 * host_ns values now, or 0 when the ring's clock cannot be related to the
 * host's (an area whose writer never answered a time sync; a kernel trace
 * clock that is not in nanoseconds)
 */
HVTRACE_API uint64_t hvtrace_ring_now_ns(struct hvtrace_ring *r);

/* --- walking one sub-buffer ------------------------------------------------ */

/*
 * A bounded walker over one ftrace sub-buffer (64-bit little-endian
 * layout).  Fields are private; it lives on the caller's stack.
 */
struct hvtrace_subbuf_iter {
	const uint8_t *data;	/* first byte after the page header */
	uint32_t size;		/* bytes to walk */
	uint32_t pos;		/* offset of the next event header */
	uint64_t ts;		/* running timestamp */
	uint64_t lost;		/* lost before the page (from the header) */
	int cpu;
};

/**
 * hvtrace_subbuf_iter_init - start walking a sub-buffer
 * @it:          iterator
 * @subbuf:      the sub-buffer, page header first
 * @subbuf_size: bytes readable at @subbuf
 * @cpu:         copied into every record
 *
 * Return: 0, or -EBADMSG when the header's commit size does not fit.
 */
HVTRACE_API int hvtrace_subbuf_iter_init(struct hvtrace_subbuf_iter *it,
					 const void *subbuf,
					 size_t subbuf_size, int cpu);

/**
 * hvtrace_subbuf_next - the next data record of the sub-buffer
 *
 * Time extends, absolute time stamps and padding are folded into the
 * running timestamp as libtraceevent's kbuffer does.  rec->host_ns is set
 * equal to rec->ts; rec->lost_before carries the page's lost count on the
 * first record only.
 *
 * Return: 1 with a record, 0 at the end, -EBADMSG for a malformed event
 * (the iterator then stays at the end).
 */
HVTRACE_API int hvtrace_subbuf_next(struct hvtrace_subbuf_iter *it,
				    struct hvtrace_record *rec);

/* --- merging CPUs by time ------------------------------------------------- */

struct hvtrace_merge;

/**
 * hvtrace_merge_new - merge rings into one time-ordered record stream
 * @rings:     rings (borrowed; they must outlive the merge)
 * @nr:        number of rings
 * @window_ns: reorder window: a record is returned once every ring has a
 *             record pending (so none can be older), or once it is
 *             @window_ns old on the host clock (hvtrace_ring_now_ns()), or,
 *             for rings whose clock cannot be related to the host's, once
 *             @window_ns have passed since its ring handed it over
 * @out:       the new handle
 */
HVTRACE_API int hvtrace_merge_new(struct hvtrace_ring *const *rings,
				  unsigned int nr, uint64_t window_ns,
				  struct hvtrace_merge **out);

/**
 * hvtrace_merge_next - the next record in time order
 * @m:     merge
 * @rec:   filled with the record (valid until the next call)
 * @flush: return the oldest pending record without waiting for the window
 *         (post-mortem reads, end of stream)
 *
 * Return: 1 with a record, 0 when nothing is ready now, negative errno.
 */
HVTRACE_API int hvtrace_merge_next(struct hvtrace_merge *m,
				   struct hvtrace_record *rec, bool flush);

/**
 * hvtrace_merge_last_ring - which ring the record hvtrace_merge_next()
 * returned last came from: its index in the @rings of hvtrace_merge_new()
 * (a caller that merges several sources tells them apart by it)
 *
 * Return: the index, or -1 when the last call returned no record.
 */
HVTRACE_API int hvtrace_merge_last_ring(const struct hvtrace_merge *m);

/** hvtrace_merge_free - free; NULL is a no-op */
HVTRACE_API void hvtrace_merge_free(struct hvtrace_merge *m);

/* --- area totals, for hvtrace stat -------------------------------------- */

/*
 * Counters of a CPU buffer as the writer left them, independent of what
 * this process has read: like per_cpu/cpuN/stats.
 */
struct hvtrace_cpu_totals {
	uint64_t committed;	/* events committed since the area was formatted */
	uint64_t dropped;	/* events dropped, ring full (consume mode) */
	uint64_t entries;	/* committed events still unread in the ring */
	uint64_t overrun;	/* committed events overwritten before a
				 * consumer read them (overwrite mode) */
	uint64_t consumed;	/* committed events the owner's consumer
				 * has moved past */
	uint64_t bytes;		/* data bytes of the unread events' pages */
	uint64_t oldest_ts;	/* first unread page's time stamp (writer clock) */
	uint64_t now_ts;	/* newest committed event (writer clock) */
	uint64_t ctrl_errors;	/* hostile control values the writer saw */
	uint32_t tail_seq;	/* writer's current sub-buffer sequence */
	uint32_t oldest_seq;	/* oldest sub-buffer still in the ring */
	uint32_t consumer_seq;	/* owner's consumer position (consume mode) */
	uint64_t unplaced;	/* events the writer could place in no buffer
				 * (meta->unplaced), counted lost */
};

/**
 * hvtrace_cpu_get_totals - the writer-side counters of one CPU buffer
 *
 * Reads only shared memory (never the writer's help) with the same
 * validation as the reader.
 */
HVTRACE_API int hvtrace_cpu_get_totals(struct hvtrace_area *a, int cpu,
				       struct hvtrace_cpu_totals *t);

/**
 * hvtrace_cpu_held_subbufs - how many sub-buffers a CPU buffer holds
 *
 * The sub-buffers from the oldest one still unread (the owner's consumer
 * position in consume mode, else the oldest in the ring) to the writer's
 * current one, read from the descriptors only: no page is touched, so it
 * is cheap where hvtrace_cpu_get_totals() walks every page.  Shared
 * memory: a hint (a live writer moves on), but never more than the ring.
 *
 * Return: the count, 0 when no event is unread, or negative errno.
 */
HVTRACE_API int hvtrace_cpu_held_subbufs(struct hvtrace_area *a, int cpu);

#ifdef __cplusplus
}
#endif

/*
 * The rest of the core's API, by job; each header may also be included
 * on its own.
 */
#include <hvtrace-ring.h>
#include <hvtrace-events.h>
#include <hvtrace-loopback.h>

#endif /* HVTRACE_H */
