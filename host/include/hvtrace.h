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

/* --- the Linux ring-buffer mmap ABI, for areas and the host kernel ------ */

/*
 * One CPU buffer presented as the Linux ring-buffer mmap ABI
 * (include/uapi/linux/trace_mmap.h): a meta page laid out as struct
 * trace_buffer_meta (struct hvt_trace_buffer_meta), the sub-buffers in id
 * order, and a get-reader operation.  The same handle serves a CPU of a
 * trace area and a CPU of the host kernel's own ring buffer, so everything
 * built on it (records, decoding, text, streaming) is one code path.
 *
 * Area view: ids 0..nr-1 are the writer's ring slots, mapped read-only from
 * the area file (live, unvalidated writer memory: for inspection only);
 * ids nr and nr+1 are two private reader pages that get-reader fills with
 * validated, self-contained sub-buffers from hvtrace_cpu_read_page().  They
 * are used alternately, so that, as with the kernel, a new reader page
 * always comes with a new reader.id; new events that continue the writer's
 * current sub-buffer are appended to the current reader page instead
 * (same id, reader.read grows), again as the kernel does.
 *
 * Kernel view: the real per_cpu/cpuN/trace_pipe_raw mapping and
 * TRACE_MMAP_IOCTL_GET_READER.  Where the kernel cannot map it (before
 * Linux 6.10), ids 0 and 1 are two private reader pages that get-reader
 * fills with read() of whole sub-buffers from trace_pipe_raw
 * (hvtrace_ring_fallback() says so).
 *
 * Meta fields after get-reader, for all three:
 *   reader.id          sub-buffer id of the reader page
 *   reader.read        bytes of the reader page's data handed to the
 *                      consumer (counted as read); a consumer reads from
 *                      its own position (0 on a new id) up to this offset
 *   reader.lost_events events lost right before the reader page (the area
 *                      and read() views set it; the kernel's mapping stores
 *                      the count in the page and reports 0 here).  All mark
 *                      the page itself with RB_MISSED_EVENTS/_STORED.
 *   entries            events committed (the area view: since attach)
 *   overrun            events lost to overwriting (area: also events hidden
 *                      in pages skipped as malformed)
 *   read               events handed to the consumer
 *   entries - overrun - read == events still unread in the ring.
 */
struct hvtrace_ring;

/**
 * hvtrace_ring_open_area - present CPU @cpu of an area as the mmap ABI
 * @a:   the area (must outlive the ring; the ring consumes through it)
 * @cpu: CPU buffer
 * @out: the new handle
 *
 * Return: 0, -EINVAL (no such CPU), -ENOMEM, or the mmap error.
 */
HVTRACE_API int hvtrace_ring_open_area(struct hvtrace_area *a, int cpu,
				       struct hvtrace_ring **out);

struct hvtrace_kring;

/**
 * hvtrace_ring_open_kring - present CPU @cpu of a guest kernel's ring (read
 * from guest RAM, hvtrace_kring_open()) as the mmap ABI
 * @k:   the ring (must outlive the view; the view reads through it)
 * @cpu: CPU
 * @out: the new handle
 *
 * The view has no writer sub-buffers, only two private reader pages (ids
 * 0 and 1) that get-reader fills from hvtrace_kring_read_page().  Record
 * timestamps are the guest's trace clock, not related to the host's:
 * rec->host_ns equals rec->ts and hvtrace_ring_now_ns() returns 0.
 *
 * Return: 0, -EINVAL (no such CPU), -ENOMEM.
 */
HVTRACE_API int hvtrace_ring_open_kring(struct hvtrace_kring *k, int cpu,
					struct hvtrace_ring **out);

/**
 * hvtrace_ring_open_kernel - map a CPU buffer of the host kernel's tracing
 * @instance: NULL for the top-level buffer, an instance name ("foo" for
 *            instances/foo), or the absolute path of a tracefs instance
 *            directory
 * @cpu:      CPU
 * @out:      the new handle
 *
 * Mounts tracefs at /sys/kernel/tracing first if it is not mounted.
 * Where the kernel cannot map the buffer (before Linux 6.10, or a buffer
 * with a snapshot), or the environment says HVTRACE_KERNEL_RING=read, the
 * same view is kept with read() of whole sub-buffers from trace_pipe_raw
 * (see hvtrace_ring_fallback()).  HVTRACE_KERNEL_RING=auto (or unset)
 * tries the mmap first; HVTRACE_KERNEL_RING=mmap refuses the fallback.
 *
 * Return: 0; -ENOENT (no tracefs, instance or CPU), -EACCES, -EINVAL (a
 * bad HVTRACE_KERNEL_RING), -EPROTO (a meta page we do not understand),
 * -ENOMEM; with HVTRACE_KERNEL_RING=mmap also -EOPNOTSUPP (the kernel
 * cannot mmap ring buffers: Linux 6.10 or later is needed) or -EBUSY (a
 * snapshot blocks mapping).
 */
HVTRACE_API int hvtrace_ring_open_kernel(const char *instance, int cpu,
					 struct hvtrace_ring **out);

/**
 * hvtrace_tracefs_dir - the directory of a host tracing instance
 * @instance: as for hvtrace_ring_open_kernel() (NULL: the top level)
 * @buf:      output
 * @size:     bytes at @buf
 *
 * Mounts tracefs at /sys/kernel/tracing first if it is not mounted.
 * Return: 0, or -ENOENT with hvtrace_last_error() saying what to do.
 */
HVTRACE_API int hvtrace_tracefs_dir(const char *instance, char *buf,
				    size_t size);

/** hvtrace_ring_close - unmap and free; NULL is a no-op */
HVTRACE_API void hvtrace_ring_close(struct hvtrace_ring *r);

/** hvtrace_ring_meta - the meta page (read-only; changes on get-reader) */
HVTRACE_API const struct hvt_trace_buffer_meta *
hvtrace_ring_meta(const struct hvtrace_ring *r);

/**
 * hvtrace_ring_subbuf - sub-buffer @id of the view
 *
 * Return: its address (meta_page_size + id * subbuf_size into the view),
 * or NULL when @id >= nr_subbufs.
 */
HVTRACE_API const void *hvtrace_ring_subbuf(const struct hvtrace_ring *r,
					    uint32_t id);

/**
 * hvtrace_ring_get_reader - TRACE_MMAP_IOCTL_GET_READER
 *
 * Hands the consumer the next events: either more on the current reader
 * page (same reader.id, larger reader.read) or a new reader page (new
 * reader.id).  Updates the meta page.
 *
 * Return: 0, or a negative errno.
 */
HVTRACE_API int hvtrace_ring_get_reader(struct hvtrace_ring *r);

/** hvtrace_ring_cpu - the CPU number this ring reads */
HVTRACE_API int hvtrace_ring_cpu(const struct hvtrace_ring *r);

/** hvtrace_ring_is_kernel - true for a host kernel buffer */
HVTRACE_API bool hvtrace_ring_is_kernel(const struct hvtrace_ring *r);

/**
 * hvtrace_ring_fallback - why a kernel buffer is read without the mmap ABI
 *
 * Return: NULL for an area, or a kernel buffer mapped through the
 * ring-buffer mmap ABI; else a short phrase saying why per_cpu/cpuN/
 * trace_pipe_raw is read with read() instead ("no ring-buffer mmap on
 * this kernel", "HVTRACE_KERNEL_RING=read", ...).  Valid until
 * hvtrace_ring_close().
 */
HVTRACE_API const char *hvtrace_ring_fallback(const struct hvtrace_ring *r);

/**
 * hvtrace_ring_clock_is_ns - whether record timestamps count nanoseconds
 *
 * Always true for areas (host_ns); for the kernel, false when the trace
 * clock is a counter ("counter", "x86-tsc", "uptime"), which trace_pipe
 * prints as a raw number.
 */
HVTRACE_API bool hvtrace_ring_clock_is_ns(const struct hvtrace_ring *r);

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
 * writer dropped after its last page (see hvtrace_cpu_take_trailing_lost())
 *
 * Return: the count (0 for kernel rings).
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

/** hvtrace_merge_free - free; NULL is a no-op */
HVTRACE_API void hvtrace_merge_free(struct hvtrace_merge *m);

/* --- decoding (libtraceevent) -------------------------------------------- */

/*
 * Built-in events of the loopback writer (system "hvtrace").  Ids sit at
 * HVTRACE_BUILTIN_ID_BASE, clear of the ids a Linux kernel assigns to its
 * own events and of the hypervisor's (HVT_HYP_ID_BASE); see
 * docs/reading.md.
 */
#define HVTRACE_BUILTIN_SYSTEM		"hvtrace"
#define HVTRACE_BUILTIN_ID_BASE		0xe000u
/* selftest: u64 id, printed "id=%llu" */
#define HVTRACE_EVENT_SELFTEST_ID	(HVTRACE_BUILTIN_ID_BASE + 0)
#define HVTRACE_EVENT_SELFTEST_BIT	0u

struct hvtrace_decoder;
struct tep_handle;

/**
 * hvtrace_decoder_new - an empty decoder for a 64-bit little-endian writer
 * @subbuf_size: sub-buffer size, for the header_page description
 * @out:         the new handle
 *
 * Loads the header_page/header_event descriptions that tracefs would show
 * for such a writer, and nothing else.
 */
HVTRACE_API int hvtrace_decoder_new(uint32_t subbuf_size,
				    struct hvtrace_decoder **out);

/**
 * hvtrace_decoder_new_area - a decoder for an area: its headers, the
 * built-in hvtrace events and, by writer kind, the hypervisor events
 */
HVTRACE_API int hvtrace_decoder_new_area(const struct hvtrace_area *a,
					 struct hvtrace_decoder **out);

/**
 * hvtrace_decoder_new_kernel - a decoder for a kernel's events
 * @tracefs: tracefs mount point, or NULL for the default; or a directory
 *           laid out like tracefs holding another kernel's files (a guest
 *           kernel's events/header_page, events/header_event,
 *           events/SYSTEM/EVENT/format, saved_cmdlines, and optionally
 *           kallsyms: see docs/guest-kernel.md)
 *
 * Loads every event format, the headers, saved_cmdlines (pid to comm)
 * and the symbols: /proc/kallsyms for the default tracefs, @tracefs/
 * kallsyms when that file exists (never the host's symbols for another
 * kernel's directory).
 */
HVTRACE_API int hvtrace_decoder_new_kernel(const char *tracefs,
					   struct hvtrace_decoder **out);

/** hvtrace_decoder_free - free; NULL is a no-op */
HVTRACE_API void hvtrace_decoder_free(struct hvtrace_decoder *d);

/**
 * hvtrace_decoder_add_format - add one event from its format file text
 * @d:      decoder
 * @system: the event's system ("hypervisor", "user_events", ...)
 * @format: the text of events/<system>/<name>/format
 * @len:    bytes of @format
 *
 * The entry point for every other source of formats (hypervisor events,
 * user events registered by guests).
 *
 * Return: 0, -EEXIST (an event with that id is already known), -EINVAL
 * (libtraceevent could not parse it; hvtrace_last_error() says why).
 */
HVTRACE_API int hvtrace_decoder_add_format(struct hvtrace_decoder *d,
					   const char *system,
					   const char *format, size_t len);

/**
 * hvtrace_decoder_add_builtin - add the built-in formats for a writer kind
 * @writer_kind: HVT_WRITER_*; the hvtrace system is always added, the
 *               hypervisor events for HVT_WRITER_HYP
 */
HVTRACE_API int hvtrace_decoder_add_builtin(struct hvtrace_decoder *d,
					    uint32_t writer_kind);

/** hvtrace_decoder_tep - the libtraceevent handle (owned by the decoder) */
HVTRACE_API struct tep_handle *
hvtrace_decoder_tep(const struct hvtrace_decoder *d);

/**
 * hvtrace_decoder_set_comm - name a pid (a guest's cmdline, a writer's
 * thread); comm is cut to 15 characters like the kernel's
 */
HVTRACE_API int hvtrace_decoder_set_comm(struct hvtrace_decoder *d, int pid,
					 const char *comm);

/**
 * hvtrace_decoder_load_cmdlines - (re)read the kernel's saved_cmdlines
 * @tracefs: tracefs mount point, or NULL for the default
 *
 * For kernel decoders: comms of tasks that appeared after the decoder was
 * made.  Return: 0 or a negative errno.
 */
HVTRACE_API int hvtrace_decoder_load_cmdlines(struct hvtrace_decoder *d,
					      const char *tracefs);

/** hvtrace_decoder_comm - the comm of @pid, or NULL when unknown */
HVTRACE_API const char *hvtrace_decoder_comm(const struct hvtrace_decoder *d,
					     int pid);

/** hvtrace_decoder_event_name - "system:name" parts of an event id */
HVTRACE_API int hvtrace_decoder_event_name(const struct hvtrace_decoder *d,
					   unsigned int id,
					   const char **system,
					   const char **name);

/* --- text like trace_pipe ------------------------------------------------- */

enum hvtrace_text_flags {
	/* Print the timestamp as a raw count (" %12llu"), as the kernel does
	 * for trace clocks that are not in nanoseconds. */
	HVTRACE_TEXT_RAW_TS = 1u << 0,
};

/**
 * hvtrace_decoder_format - one record as a trace_pipe line
 * @d:     decoder
 * @rec:   record
 * @ts_ns: the timestamp to print (rec->host_ns for areas, rec->ts for the
 *         kernel, as its trace_pipe does)
 * @flags: enum hvtrace_text_flags
 * @buf:   output
 * @size:  bytes at @buf
 *
 * Writes "<comm>-<pid> [<cpu>] <flags> <sec>.<usec>: <event>: <fields>\n"
 * exactly as the kernel's trace_pipe formats it (comm right-aligned to 16,
 * pid left-aligned to 7, cpu %03d, the five latency flag characters,
 * microseconds rounded like the kernel's ns2usecs()).  Events of the
 * kernel's own "ftrace" system print without the "<event>: " prefix, as
 * the kernel does.  Unknown ids print "UNKNOWN id=<id>".
 *
 * Return: the length of the line (like snprintf: may exceed @size - 1,
 * then the output is cut), or a negative errno.
 */
HVTRACE_API int hvtrace_decoder_format(struct hvtrace_decoder *d,
				       const struct hvtrace_record *rec,
				       uint64_t ts_ns, unsigned int flags,
				       char *buf, size_t size);

/**
 * hvtrace_format_lost - the kernel's lost-events line for @cpu:
 * "CPU:<cpu> [LOST <n> EVENTS]\n", or "CPU:<cpu> [LOST EVENTS]\n" for
 * HVTRACE_LOST_UNKNOWN
 *
 * Return: length, as hvtrace_decoder_format().
 */
HVTRACE_API int hvtrace_format_lost(int cpu, uint64_t lost, char *buf,
				    size_t size);

/**
 * hvtrace_header_page_text - events/header_page as tracefs prints it for a
 * 64-bit writer with @subbuf_size sub-buffers
 */
HVTRACE_API int hvtrace_header_page_text(uint32_t subbuf_size, char *buf,
					 size_t size);

/** hvtrace_header_event_text - events/header_event as tracefs prints it */
HVTRACE_API int hvtrace_header_event_text(char *buf, size_t size);

/**
 * hvtrace_builtin_format - the format file text of a built-in hvtrace
 * event by index (0 = selftest)
 * @index:  event index (its enable bit)
 * @name:   set to the event's name
 * @id:     set to its id
 *
 * Return: the text, or NULL when @index is past the last built-in event.
 */
HVTRACE_API const char *hvtrace_builtin_format(unsigned int index,
					       const char **name,
					       unsigned int *id);

/* --- loopback writer ------------------------------------------------------ */

/*
 * A local writer process that formats an area file and writes selftest
 * events into it with one pinned thread per CPU, through the writer core's
 * direct API: the whole pipeline without a VM.
 */
struct hvtrace_loopback;

struct hvtrace_loopback_params {
	const char *path;	/* area file to create (/dev/shm/NAME) */
	uint32_t nr_cpus;	/* CPU buffers = writer threads */
	uint32_t nr_subbufs;	/* per CPU, power of two */
	uint32_t subbuf_size;	/* power of two, 4K..64K */
	uint32_t mode;		/* HVT_MODE_* */
	uint32_t clock_id;	/* HVT_CLOCK_COUNTER or HVT_CLOCK_MONO_NS */
	uint64_t events;	/* per CPU; 0: until stopped */
	uint64_t rate;		/* events/s per CPU; 0: as fast as possible */
	double duration;	/* seconds; 0: no limit */
	/* Start with the selftest event enabled in the control page (the
	 * writer plays the host's part until a host takes control); false:
	 * wait, writing nothing, until a host enables it. */
	bool pre_enable;
};

/* One writer thread's account. */
struct hvtrace_loopback_cpu_stats {
	uint64_t written;	/* committed into the ring */
	uint64_t dropped;	/* ring full (consume mode): counted lost */
	uint64_t next_id;	/* written + dropped: the next id */
	uint64_t disabled_waits; /* polls that found the event disabled */
	uint64_t syncs;		/* time-sync requests answered */
	uint64_t resets;	/* reset requests served */
	int host_cpu;		/* CPU the thread is pinned to, -1 if none */
};

/**
 * hvtrace_loopback_create - create, lock and format the area file
 *
 * Refuses (-EBUSY) when another live writer holds the file (writers keep
 * an exclusive flock() on it while they live).  The file is created 0600
 * (the writer's user only: hvtraced attaches it for others) and sized
 * exactly for the geometry.
 *
 * Return: 0 or a negative errno (hvtrace_last_error() says why).
 */
HVTRACE_API int hvtrace_loopback_create(const struct hvtrace_loopback_params *p,
					struct hvtrace_loopback **out);

/**
 * hvtrace_loopback_run - write until done (events/duration) or stopped
 *
 * Starts one thread per CPU, pinned to host CPU (cpu % online CPUs), and
 * waits for them.  Marks the area STOPPED when they are done.
 */
HVTRACE_API int hvtrace_loopback_run(struct hvtrace_loopback *lb);

/** hvtrace_loopback_stop - ask the writer threads to stop (signal safe) */
HVTRACE_API void hvtrace_loopback_stop(struct hvtrace_loopback *lb);

/** hvtrace_loopback_get_stats - one writer thread's account */
HVTRACE_API int hvtrace_loopback_get_stats(const struct hvtrace_loopback *lb,
					   unsigned int cpu,
					   struct hvtrace_loopback_cpu_stats *st);

/** hvtrace_loopback_get_info - the area geometry and clock it wrote */
HVTRACE_API int hvtrace_loopback_get_info(const struct hvtrace_loopback *lb,
					  struct hvtrace_area_info *info);

/**
 * hvtrace_area_sync_local - a time-sync sample read from this host's own
 * clock, for a writer known to run on this host (the loopback writer):
 * the CPU counter or CLOCK_MONOTONIC, per the area's clock, read between
 * two host clock reads
 *
 * Needs no control page and no help from the writer.  Wrong for a writer
 * elsewhere (a guest, a hypervisor, a file from another boot).
 * Return: 0, or -EINVAL for an area whose clock is not one of those.
 */
HVTRACE_API int hvtrace_area_sync_local(struct hvtrace_area *a);

/** hvtrace_loopback_destroy - unmap, unlock and free (keeps the file) */
HVTRACE_API void hvtrace_loopback_destroy(struct hvtrace_loopback *lb);

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

/* --- a guest kernel's own ftrace ring buffer, from guest RAM ------------- */

/*
 * A Linux guest (6.12 or later) started with reserve_mem= and
 * trace_instance=NAME@LABEL keeps that tracing instance's ring buffer in a
 * reserved physical range.  When the guest's RAM is a host file (a QEMU
 * memory-backend-file), the host reads that ring in place: no agent, no
 * copy in the guest, and after the guest died.  See docs/guest-kernel.md.
 */
struct hvtrace_kring;

enum hvtrace_kring_layout {
	HVTRACE_KRING_LAYOUT_6_12 = 1,	/* a ring_buffer_meta per CPU */
	HVTRACE_KRING_LAYOUT_6_15 = 2,	/* global meta + per-CPU metas */
};

struct hvtrace_kring_info {
	uint32_t layout;		/* enum hvtrace_kring_layout */
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;		/* per CPU, the reader page included */
	uint32_t cpu_meta_size;		/* header bytes before buffers[] */
	uint32_t nr_magic;		/* meta magics the scan saw */
	uint64_t offset;		/* offset of the ring's first meta in
					 * the file (or in the VMM mapping) */
	uint64_t size;			/* bytes from there to the end of the
					 * last CPU's sub-buffers */
	uint64_t addr;			/* hvtrace_kring_open_pid(): the VMM's
					 * virtual address of the first meta;
					 * 0 for a file */
};

/* Counters of one CPU of a guest kernel ring, as this reader saw it. */
struct hvtrace_kring_stats {
	uint64_t read;		/* events returned */
	uint64_t bytes;		/* data bytes returned */
	uint64_t lost_events;	/* events reported lost with an exact count */
	uint64_t lost_pages;	/* pages overwritten before they were read,
				 * at least (whole laps of the ring leave no
				 * trace); their events are reported lost,
				 * count unknown */
	uint64_t skipped_pages;	/* pages skipped as malformed */
	uint64_t errors;	/* malformed metas, pages and events seen */
	uint64_t retries;	/* copies thrown away because the guest
				 * reused the page meanwhile */
	uint64_t now_ts;	/* newest event returned (guest clock) */
};

/**
 * hvtrace_kring_open - find a guest kernel's ftrace ring in a guest RAM file
 * @path:   the guest RAM file (QEMU memory-backend-file, or a kept copy)
 * @offset: file offset of the ring's first meta (the global meta for 6.15
 *          and later, CPU 0's meta for 6.12), or 0 to scan the file for
 *          it at every 4 KiB boundary
 * @out:    the new handle
 *
 * Maps the file PROT_READ (the host never writes guest memory) and
 * validates the ring's metas: magic, sizes, sub-buffer size and count,
 * and that every CPU's block lies inside the file.  The scan costs one
 * 4-byte read per 4 KiB of the file and takes the first ring it can
 * validate.
 *
 * Return: 0; -ENOENT, -EACCES (the file), -ENODATA (no ring meta in the
 * file: the guest was not started with reserve_mem= and trace_instance=,
 * or has not booted that far), -EPROTONOSUPPORT (a meta of an unknown
 * layout; hvtrace_last_error() names what was found), -EINVAL (a meta
 * whose geometry does not fit the file).
 */
HVTRACE_API int hvtrace_kring_open(const char *path, uint64_t offset,
				   struct hvtrace_kring **out);

/**
 * hvtrace_kring_open_pid - find a guest kernel's ftrace ring in the memory
 * of a running VMM process (QEMU started by anything)
 * @pid: the VMM process
 * @out: the new handle
 *
 * Scans the writable mappings of 64 MiB or more of @pid for the meta magic
 * at every 4 KiB boundary, independent of the guest's physical layout.  A
 * shared file mapping (memory-backend-file, memfd) whose descriptor @pid
 * holds is mapped PROT_READ through /proc/PID/fd/N; other memory is read
 * through /proc/PID/mem with pread() (2 MiB reads during the scan, pages
 * that /proc/PID/pagemap reports unpopulated skipped).  The ring must lie
 * inside one mapping.  Needs ptrace read access to @pid.
 *
 * Return: 0; -ESRCH (no such process), -EACCES (no ptrace read access:
 * hvtrace_last_error() says what to do), -ENODATA (no ring), and the
 * errors of hvtrace_kring_open() for a ring found but refused (-EINVAL
 * for one that crosses the end of its mapping).
 */
HVTRACE_API int hvtrace_kring_open_pid(int pid, struct hvtrace_kring **out);

/** hvtrace_kring_close - unmap and free; NULL is a no-op */
HVTRACE_API void hvtrace_kring_close(struct hvtrace_kring *k);

/** hvtrace_kring_get_info - the layout and geometry found at open */
HVTRACE_API int hvtrace_kring_get_info(const struct hvtrace_kring *k,
				       struct hvtrace_kring_info *info);

/**
 * hvtrace_kring_read_page - the next events of one CPU of a guest kernel
 * ring, as a validated, self-contained ftrace sub-buffer
 * @k:    ring
 * @cpu:  CPU
 * @page: output, at least the ring's subbuf_size bytes
 * @size: bytes at @page
 * @info: filled when a page is returned (may be NULL); info->seq is the
 *        sub-buffer's position in the ring
 *
 * Reads in ring order from the oldest page (the meta's head) to the one
 * holding the commit, while the guest writes or after it died.  Each page
 * is copied, then the copy is kept only if the guest did not reuse the
 * page meanwhile (docs/design.md states the rule), and every event of it
 * goes through the project's page walker.  Pages the guest overwrote
 * before they were read are reported on the next page returned:
 * RB_MISSED_EVENTS, and info->lost_events = HVTRACE_LOST_UNKNOWN (the
 * ring does not record how many events they held; stats count the pages).
 * Malformed metas and pages are counted as errors and skipped.
 *
 * Return: 1 when @page was filled, 0 when nothing new is committed,
 * -EINVAL, -ENOSPC (@size too small), -EIO (the file shrank under the
 * mapping).
 */
HVTRACE_API int hvtrace_kring_read_page(struct hvtrace_kring *k, int cpu,
					void *page, size_t size,
					struct hvtrace_page_info *info);

/** hvtrace_kring_get_stats - what this reader saw of one CPU */
HVTRACE_API int hvtrace_kring_get_stats(const struct hvtrace_kring *k,
					int cpu,
					struct hvtrace_kring_stats *st);

/* --- event catalogs ---------------------------------------------------- */

/* One event format as a tracefs format file would show it. */
struct hvtrace_catalog_format {
	char *system;
	char *name;
	uint32_t id;
	char *text; /* the whole format file */
};

/*
 * A list of event formats: what a buffer's pages refer to.  Zero it
 * before the first use; hvtrace_catalog_free() empties it again.
 */
struct hvtrace_catalog {
	struct hvtrace_catalog_format *fmt;
	unsigned int nr;
	unsigned int cap;
	int *bit; /* enable bit of each format (remote writers), or -1 */
};

/**
 * hvtrace_catalog_add - append a copy of one format
 * @bit: its enable bit in the writer's control page, or -1
 */
HVTRACE_API int hvtrace_catalog_add(struct hvtrace_catalog *c,
				    const char *system, const char *name,
				    uint32_t id, const char *text, int bit);

/**
 * hvtrace_catalog_add_writer - append the formats a writer of @writer_kind
 * (HVT_WRITER_*) uses: the built-in "hvtrace" events, and a hypervisor's
 * events for HVT_WRITER_HYP
 */
HVTRACE_API int hvtrace_catalog_add_writer(struct hvtrace_catalog *c,
					   uint32_t writer_kind);

/** hvtrace_catalog_find - the format of event @id (NULL: none), its bit */
HVTRACE_API const struct hvtrace_catalog_format *
hvtrace_catalog_find(const struct hvtrace_catalog *c, uint32_t id, int *bit);

/** hvtrace_catalog_free - free every format; the catalog is empty after */
HVTRACE_API void hvtrace_catalog_free(struct hvtrace_catalog *c);

/* --- packing events into sub-buffers ------------------------------------ */

/*
 * Builds ftrace sub-buffers from events: the page header time_stamp is
 * the first event's timestamp, later events carry deltas (TIME_EXTEND
 * when a delta needs more than 27 bits), and a page that follows lost
 * events carries RB_MISSED_EVENTS (and RB_MISSED_STORED with the count, 8
 * bytes kept free for it).  Full pages go to @emit.  The fields are the
 * packer's; read pages and the counters only.
 */
struct hvtrace_pack {
	uint8_t *page;
	uint32_t page_size;
	uint32_t data_size; /* page_size - 16 */
	uint32_t pos;	    /* data bytes used */
	bool open;	    /* the page has at least one event */
	uint64_t last_ts;   /* timestamp of the last event packed */
	uint64_t missed;    /* lost events before this page */
	bool missed_set;
	bool missed_unknown; /* lost, count not known */
	uint64_t pages;	     /* pages emitted */
	int (*emit)(void *ctx, const uint8_t *page, uint32_t size);
	void *ctx;
};

/** hvtrace_pack_init - a packer of @page_size sub-buffers */
HVTRACE_API int hvtrace_pack_init(struct hvtrace_pack *p, uint32_t page_size,
				  int (*emit)(void *ctx, const uint8_t *page,
					      uint32_t size),
				  void *ctx);

/** hvtrace_pack_fini - free the packer (pages not flushed are dropped) */
HVTRACE_API void hvtrace_pack_fini(struct hvtrace_pack *p);

/**
 * hvtrace_pack_add_event - pack one event at @ts
 * @rec: the record (common fields first), @len bytes, a multiple of 4
 */
HVTRACE_API int hvtrace_pack_add_event(struct hvtrace_pack *p, uint64_t ts,
				       const uint8_t *rec, uint32_t len);

/**
 * hvtrace_pack_add_lost - events were lost here: close the page; the next
 * one reports @count (or "an unknown number" when @known is false)
 */
HVTRACE_API int hvtrace_pack_add_lost(struct hvtrace_pack *p, uint64_t count,
				      bool known);

/** hvtrace_pack_flush - emit the page being filled, if it has events */
HVTRACE_API int hvtrace_pack_flush(struct hvtrace_pack *p);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_H */
