/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace - Linux ring buffers: the ring-buffer mmap ABI over
 * trace areas and the host kernel, and a guest kernel's own ftrace ring
 * buffer read from guest RAM.
 *
 * Part of the core library; <hvtrace.h> includes it, and it may be
 * included on its own.  Conventions as in <hvtrace.h>.
 */
#ifndef HVTRACE_RING_H
#define HVTRACE_RING_H

#include <hvtrace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- the Linux ring-buffer mmap ABI, for areas and the host kernel ------ */

/*
 * One CPU buffer presented as the Linux ring-buffer mmap ABI
 * (include/uapi/linux/trace_mmap.h): a meta page laid out as struct
 * trace_buffer_meta (struct hvt_trace_buffer_meta), the sub-buffers in id
 * order, and a get-reader operation.  The same handle serves a CPU of a
 * trace area, a CPU of the host kernel's own ring buffer, of a guest
 * kernel's ring read from guest RAM and of a caller's page source
 * (hvtrace_ring_open_source(): a remote read through hvtraced), so
 * everything built on it (records, decoding, text, streaming) is one code
 * path.
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
 * Source view (hvtrace_ring_open_source()): as the guest kernel view, two
 * private reader pages (ids 0 and 1) that get-reader fills from the
 * caller's pages, validated as hostile input.
 *
 * Meta fields after get-reader, for all of them:
 *   reader.id          sub-buffer id of the reader page
 *   reader.read        bytes of the reader page's data handed to the
 *                      consumer (counted as read); a consumer reads from
 *                      its own position (0 on a new id) up to this offset
 *   reader.lost_events events lost right before the reader page (the
 *                      area, guest kernel, source and read() views set
 *                      it; the kernel's mapping stores the count in the
 *                      page and reports 0 here).  All mark the page
 *                      itself with RB_MISSED_EVENTS/_STORED.
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

/* --- a ring whose pages a caller supplies --------------------------------- */

/*
 * A page of a ring source (struct hvtrace_ring_source_ops.next_page): an
 * ftrace sub-buffer of a 64-bit little-endian writer, from anywhere (a
 * network, a file, another process).  The ring trusts nothing in it.
 */
struct hvtrace_ring_page {
	const void *data;	/* the sub-buffer: 16-byte header, then data;
				 * kept valid by the source until its next
				 * next_page call or its close, or, for a
				 * page flagged HVTRACE_PAGE_LENT, until the
				 * ring releases it */
	uint32_t len;		/* bytes at @data (the header included) */
	uint32_t seq;		/* the writer's sub-buffer sequence number:
				 * the same as the page before says these
				 * events continue that sub-buffer (a tail
				 * page that grew) */
	uint32_t flags;		/* HVTRACE_PAGE_TAIL (informative);
				 * HVTRACE_PAGE_LENT: @data is private
				 * memory that nothing writes until the ring
				 * hands it to @release, so the ring may
				 * read it in place */
	uint64_t lost_events;	/* events lost right before the page that its
				 * header does not count (RB_MISSED_EVENTS/
				 * _STORED count themselves): a transport's
				 * drops.  0, a count, or HVTRACE_LOST_UNKNOWN */
	void *owner;		/* the source's own, for @release */
};

/**
 * struct hvtrace_ring_source_ops - where the pages of a source ring come from
 * @next_page: fill @pg with the next page of CPU @cpu; return 1 with a
 *             page, 0 when none is there now, or a negative errno (handed
 *             to the ring's caller).  Must not block for long: the cursor
 *             calls it whenever its reader page is used up.
 * @to_host:   the host CLOCK_MONOTONIC time of writer timestamp @ts and the
 *             error bound of that mapping (@err_ns may be NULL); 0, or a
 *             negative errno when no mapping is known (the record's host_ns
 *             is then @ts).  NULL: the source's clock is not the host's
 *             (host_ns == ts, hvtrace_ring_now_ns() says 0).
 * @close:     called by hvtrace_ring_close() (may be NULL)
 * @release:   a page flagged HVTRACE_PAGE_LENT is done with (required by a
 *             source that lends pages, read only for lent pages): called
 *             once per lent page, at the latest before @close
 */
struct hvtrace_ring_source_ops {
	int (*next_page)(void *ctx, int cpu, struct hvtrace_ring_page *pg);
	int (*to_host)(void *ctx, int cpu, uint64_t ts, uint64_t *ns,
		       uint64_t *err_ns);
	void (*close)(void *ctx, int cpu);
	void (*release)(void *ctx, int cpu, const struct hvtrace_ring_page *pg);
};

/**
 * hvtrace_ring_open_source - present CPU @cpu of a caller's page source as
 * the mmap ABI
 * @ops:         the source (must outlive the ring)
 * @ctx:         passed to every hook
 * @cpu:         the CPU number records carry
 * @subbuf_size: sub-buffer size of the source's writer (a power of two,
 *               4 KiB to 1 MiB); longer pages are malformed
 * @out:         the new handle
 *
 * Laid out as the guest kernel view: a meta page and two private reader
 * pages (ids 0 and 1).  get-reader takes the next page of the source and
 * validates it as hostile input with the readers' one sub-buffer
 * validation (every event through the project's page walker), copying it
 * once, straight to where the cursor reads it: to the free reader page,
 * or, when it continues the writer sub-buffer of the current reader page
 * (same @seq, nothing lost before it, its time_stamp where that page's
 * events end), appended to it (same reader.id, larger reader.read), as
 * the kernel hands over events added to its reader page.  A lent page
 * (HVTRACE_PAGE_LENT) that needs nothing rewritten (a whole sub-buffer
 * whose header already says its losses, with no trailing padding) is
 * validated where it lies and becomes the reader page in place, with no
 * copy; the ring releases it when the reader moves past it.  A page whose
 * data holds no event passes its losses on to the next one.  A malformed
 * page (a length or commit size past the sub-buffer, a bad event) is
 * counted (hvtrace_ring_errors(), stats skipped) and skipped, and the next
 * record reports its events lost (HVTRACE_LOST_UNKNOWN).
 *
 * Records carry the page header's losses plus the page's lost_events as
 * rec->lost_before, and rec->host_ns from @ops->to_host.
 *
 * Return: 0, -EINVAL (no @ops->next_page, a bad @subbuf_size or @cpu),
 * -ENOMEM.
 */
HVTRACE_API int
hvtrace_ring_open_source(const struct hvtrace_ring_source_ops *ops, void *ctx,
			 int cpu, uint32_t subbuf_size,
			 struct hvtrace_ring **out);

/* What a source ring did with its source's pages. */
struct hvtrace_ring_source_stats {
	uint64_t pages;		/* pages the source gave */
	uint64_t appended;	/* of them appended to the reader page */
	uint64_t skipped;	/* of them malformed, skipped */
	uint64_t empty;		/* of them with no event */
	uint64_t events;	/* events handed over */
	uint64_t copied;	/* bytes copied (each event once) */
	uint64_t lost_events;	/* events reported lost with a count */
	uint64_t lost_unknown;	/* reports of losses of unknown count */
	uint64_t map_errors;	/* to_host failures (host_ns = ts) */
	uint64_t err_ns;	/* the largest error bound to_host gave */
};

/**
 * hvtrace_ring_source_stats - what a ring of hvtrace_ring_open_source() did
 *
 * Return: 0; -EINVAL (not a source ring).
 */
HVTRACE_API int
hvtrace_ring_source_stats(const struct hvtrace_ring *r,
			  struct hvtrace_ring_source_stats *st);

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
 * kernel addresses (text/data, first_buffer at or above
 * 0xff00000000000000), and that every CPU's block lies inside the file.
 * The scan costs one 4-byte read per 4 KiB of the file, reads all of it
 * and takes a ring only when exactly one validates (a guest user can
 * plant a fake meta in its memory).  With @offset 0, the environment
 * variable HVTRACE_KRING_OFFSET gives the offset instead of a scan.
 *
 * Return: 0; -ENOENT, -EACCES (the file), -ENODATA (no ring meta in the
 * file: the guest was not started with reserve_mem= and trace_instance=,
 * or has not booted that far), -EPROTONOSUPPORT (a meta of an unknown
 * layout; hvtrace_last_error() names what was found), -EINVAL (a meta
 * whose geometry does not fit the file, or not the kernel's addresses),
 * -ENOTUNIQ (more than one ring validates: hvtrace_last_error() names
 * their offsets; give the real one as @offset).
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

/**
 * struct hvtrace_kring_source - where a ring found by hvtrace_kring_open_pid()
 * lies: the descriptor its reader reads (kept by the handle) and the
 * mapping of the VMM it was found in
 * @fd:      a shared file of guest RAM (@mapped) or /proc/PID/mem
 * @pagemap: /proc/PID/pagemap with /proc/PID/mem, or -1
 * @mapped:  @fd is mapped PROT_READ at @foff
 * @base:    the VMM's address of the mapping
 * @size:    its length
 * @foff:    the file offset it maps (@mapped)
 */
struct hvtrace_kring_source {
	int fd;
	int pagemap;
	bool mapped;
	uint64_t base;
	uint64_t size;
	uint64_t foff;
};

/**
 * hvtrace_kring_pid_source - the descriptors and mapping of a ring that
 * hvtrace_kring_open_pid() found, to hand to another process (hvtraced):
 * they were opened with the caller's rights, the kernel's ptrace check
 * passed.  The descriptors stay the handle's.
 *
 * Return: 0; -EINVAL (not a ring found in a process).
 */
HVTRACE_API int hvtrace_kring_pid_source(const struct hvtrace_kring *k,
					 struct hvtrace_kring_source *src);

/**
 * hvtrace_kring_open_source - find the ring again in a mapping described by
 * @src (from hvtrace_kring_pid_source(), maybe in another process), reading
 * only through its descriptors (copied: the caller keeps @src's); @pid
 * names the VMM in messages.  Everything in @src is checked: 64 MiB to
 * 1 TiB, page aligned, and the ring must lie inside.
 *
 * Return: 0; -EINVAL; the errors of hvtrace_kring_open().
 */
HVTRACE_API int hvtrace_kring_open_source(int pid,
					  const struct hvtrace_kring_source *src,
					  struct hvtrace_kring **out);

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
 * One call takes at most 4 snapshots of the meta and looks at most at
 * 1024 pages; empty or malformed pages beyond that are walked by the next
 * calls (this one returns 0).
 *
 * Return: 1 when @page was filled, 0 when nothing new is committed,
 * -EINVAL, -ENOSPC (@size too small), -EIO (the file shrank under the
 * mapping).
 */
HVTRACE_API int hvtrace_kring_read_page(struct hvtrace_kring *k, int cpu,
					void *page, size_t size,
					struct hvtrace_page_info *info);

struct hvtrace_ksyms;
struct hvtrace_ksyms_info;

/**
 * hvtrace_ksyms_from_kring - a guest kernel's symbols, read from its RAM
 * @k:    the guest's RAM (hvtrace_kring_open(), _open_pid(), _open_source())
 * @out:  the new table (<hvtrace-events.h>: hvtrace_ksyms_lookup(),
 *        hvtrace_decoder_set_ksyms(), ...)
 * @info: where it was found (note offset, KASLR offset, phys_base, RAM
 *        split, encoding); NULL: not wanted
 *
 * Finds the VMCOREINFO note the kernel (x86-64, CONFIG_VMCORE_INFO,
 * CONFIG_KALLSYMS, 6.0+) keeps in a page of its RAM and decodes the
 * compressed kallsyms tables it points at: the kernel image's symbols,
 * as the guest's /proc/kallsyms lists them (no modules), with this
 * boot's KASLR addresses.  Every byte read is hostile input: notes,
 * tables and names are validated (docs/guest-kernel.md, "Function
 * names").
 *
 * Return: 0; -EINVAL; -ENOENT (no note); -ENOTUNIQ (notes that differ,
 * and not exactly one points at valid tables: a guest user can plant
 * one; the message names their offsets); -EINVAL for a note or table
 * refused (hvtrace_last_error() says what); -EIO (the file shrank);
 * -ENOMEM.
 */
HVTRACE_API int hvtrace_ksyms_from_kring(struct hvtrace_kring *k,
					 struct hvtrace_ksyms **out,
					 struct hvtrace_ksyms_info *info);

struct hvtrace_decoder;

/**
 * hvtrace_decoder_ksyms_from_kring - name a guest's addresses from its RAM
 * @d:    a decoder of that guest kernel's formats
 *        (hvtrace_decoder_new_kernel() of its tracefs copy)
 * @k:    the guest's RAM, as for hvtrace_ksyms_from_kring()
 * @info: where the table was found; NULL: not wanted
 *
 * What every reader of a guest kernel ring in guest RAM calls once per
 * open: the kernel image's table of this boot is read from @k
 * (hvtrace_ksyms_from_kring(), which decodes every symbol: a fraction of
 * a second for a distribution kernel), the module symbols of the table
 * @d had are added to it (its formats folder's kallsyms: a rig guest
 * prints its modules' lines on its console; hvtrace_ksyms_add_modules()),
 * and it is installed (hvtrace_decoder_set_ksyms()), so that %ps and %pS
 * arguments and ftrace:print's ip print as function names.  Without a
 * table in @k, the table @d had is kept as it is.  The host's own symbols
 * are never used: without a table, addresses stay in hex.
 *
 * Return: 0 (the table is installed); 1 (no table in @k, or its modules
 * could not be added: the table @d had is kept); or
 * hvtrace_ksyms_from_kring()'s error when @d had none, @d unchanged, with
 * hvtrace_last_error() saying why (the caller tells the user once).
 */
HVTRACE_API int hvtrace_decoder_ksyms_from_kring(struct hvtrace_decoder *d,
						 struct hvtrace_kring *k,
						 struct hvtrace_ksyms_info *info);

/** hvtrace_kring_get_stats - what this reader saw of one CPU */
HVTRACE_API int hvtrace_kring_get_stats(const struct hvtrace_kring *k,
					int cpu,
					struct hvtrace_kring_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_RING_H */
