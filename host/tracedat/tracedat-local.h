/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace trace.dat component: internals shared by host/tracedat files.
 *
 *   write.c    the trace.dat v7 writer (sections, options, buffers)
 *   kernel.c   the host kernel's ftrace as a page source (tracefs)
 *   formats.c  format texts: "name:"/"ID:" heads, header_page/header_event
 *              and unknown-id placeholders as blobs (the event catalogs
 *              and the page packer are the core library's)
 *   record.c   the recorder: one file, the host kernel, and a source
 *              set behind struct hvt_tdat_rset_ops (start, poll, stop,
 *              finishing)
 *   record_area.c    the source set of trace areas
 *   record_remote.c  the source set of remotes of hvtraced (rremote.h),
 *   record_rpages.c  ... and the pages of its feed
 *   record_rkring.c  the guest kernel ring of a remote (in the remote set);
 *              the pids its records name come from libhvtrace's decoder
 *              (hvtrace_decoder_learn_comms())
 *   record_common.c  what the sets share: per-CPU packing, file-wide
 *              event ids, host pids, the host kernel as a source,
 *              metadata and finishing
 *   read.c     the trace.dat v6/v7 reader and trace-cmd style printing
 */
#ifndef HVT_TRACEDAT_LOCAL_H
#define HVT_TRACEDAT_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace-tracedat.h>

#include <hvtrace-internal.h>

/* trace-cmd option and section ids (lib/trace-cmd/include/trace-cmd.h). */
enum {
	HVT_TDAT_OPT_DONE = 0,
	HVT_TDAT_OPT_DATE = 1,
	HVT_TDAT_OPT_CPUSTAT = 2,
	HVT_TDAT_OPT_BUFFER = 3,
	HVT_TDAT_OPT_TRACECLOCK = 4,
	HVT_TDAT_OPT_UNAME = 5,
	HVT_TDAT_OPT_HOOK = 6,
	HVT_TDAT_OPT_OFFSET = 7,
	HVT_TDAT_OPT_CPUCOUNT = 8,
	HVT_TDAT_OPT_VERSION = 9,
	HVT_TDAT_OPT_PROCMAPS = 10,
	HVT_TDAT_OPT_TRACEID = 11,
	HVT_TDAT_OPT_TIME_SHIFT = 12,
	HVT_TDAT_OPT_GUEST = 13,
	HVT_TDAT_OPT_TSC2NSEC = 14,
	HVT_TDAT_OPT_STRINGS = 15,
	HVT_TDAT_OPT_HEADER_INFO = 16,
	HVT_TDAT_OPT_FTRACE_EVENTS = 17,
	HVT_TDAT_OPT_EVENT_FORMATS = 18,
	HVT_TDAT_OPT_KALLSYMS = 19,
	HVT_TDAT_OPT_PRINTK = 20,
	HVT_TDAT_OPT_CMDLINES = 21,
	HVT_TDAT_OPT_BUFFER_TEXT = 22,
};

#define HVT_TDAT_MAGIC	      "\027\010\104tracing" /* 0x17 0x08 0x44 */
#define HVT_TDAT_MAGIC_LEN    10u
#define HVT_TDAT_SEC_HDR_SIZE 16u /* u16 id, u16 flags, u32 str, u64 size */
#define HVT_TDAT_SEC_COMPRESS 1u

/* --- growable byte buffer ------------------------------------------------ */

struct hvt_tdat_blob {
	char *data;
	size_t len;
	size_t cap;
};

HVT_INTERNAL int hvt_tdat_blob_add(struct hvt_tdat_blob *b, const void *p,
				   size_t len);
HVT_INTERNAL int hvt_tdat_blob_printf(struct hvt_tdat_blob *b, const char *fmt,
				      ...)
	__attribute__((format(printf, 2, 3)));
HVT_INTERNAL void hvt_tdat_blob_free(struct hvt_tdat_blob *b);

/* Has @pid a name in the file yet (a CMDLINES line)? */
HVT_INTERNAL bool hvt_tdat_writer_named(const struct hvtrace_tracedat_writer *w,
					int pid);

/*
 * Rooms (write.c): @bytes of the output kept for CPU @cpu of @buffer, so
 * that its pages go straight to their place in the file as they come.
 * A hint: a CPU that outgrows its room goes on in memory and the file is
 * still right.  Asked before hvt_tdat_writer_lay_rooms(), which places
 * every room asked for; pages are added after it.
 */
HVT_INTERNAL int hvt_tdat_writer_set_room(struct hvtrace_tracedat_writer *w,
					  int buffer, uint32_t cpu,
					  uint64_t bytes);
HVT_INTERNAL int hvt_tdat_writer_lay_rooms(struct hvtrace_tracedat_writer *w);
/* The room for a CPU that holds @held sub-buffers of @subbuf_size bytes,
 * with slack for lost-event pages and short ones. */
static inline uint64_t hvt_tdat_room_bytes(uint64_t held, uint32_t subbuf_size)
{
	return (held + held / 32 + 2) * subbuf_size;
}

/*
 * The trace clock written in the BUFFER option of @buffer (not the
 * top-level one), named anew: a buffer found not to be on the host's
 * clock after it was added.  Before hvt_tdat_writer_lay_rooms().
 */
HVT_INTERNAL int hvt_tdat_writer_set_buffer_clock(
	struct hvtrace_tracedat_writer *w, int buffer, const char *clock);

/* Read a whole (proc, tracefs) file; NUL-terminated; -errno on failure. */
HVT_INTERNAL int hvt_tdat_read_file(const char *path, struct hvt_tdat_blob *b,
				    size_t max);

/* --- format texts (formats.c); the catalogs are <hvtrace.h>'s ------------ */

/* The format saved for records of ids no format describes. */
HVT_INTERNAL int hvt_tdat_unknown_format_text(struct hvt_tdat_blob *b,
					      uint32_t id);
/* Copy of @text with its "ID: n" line set to @id; NULL on ENOMEM. */
HVT_INTERNAL char *hvt_tdat_format_set_id(const char *text, uint32_t id);
/* Parse "name: X" and "ID: n" out of a format text. */
HVT_INTERNAL int hvt_tdat_format_parse_head(const char *text, char *name,
					    size_t name_len, uint32_t *id);
/*
 * tracefs-style events/header_page and events/header_event for a writer
 * with 8-byte longs and @subbuf_size sub-buffers.
 */
HVT_INTERNAL int hvt_tdat_header_page_text(struct hvt_tdat_blob *b,
					   uint32_t subbuf_size);
HVT_INTERNAL int hvt_tdat_header_event_text(struct hvt_tdat_blob *b);

/* --- host kernel source (kernel.c) -----------------------------------------
 */

/*
 * Event selection patterns ("-e"): "sys", "sys:event", "sys/event",
 * "event" (in any system) or "all", with shell globs.
 */
HVT_INTERNAL bool hvt_tdat_pattern_match(const char *pat, const char *sys,
					 const char *name);

struct hvt_tdat_kernel;

/*
 * Where a guest kernel's CPUs come from, for a recording of them: rings
 * opened per CPU by @open (@arg; @nr_cpus CPUs, sub-buffers of
 * @subbuf_size bytes), the pages hvtraced serves
 * (hvtrace_daemon_kring_ring_open()).  The records carry the kernel's own
 * timestamps (struct hvt_tdat_krec).
 */
struct hvt_tdat_guest_rings {
	int (*open)(void *arg, int cpu, struct hvtrace_ring **out);
	void *arg;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	/* the kernel's symbols as kallsyms text, or NULL */
	const char *ksyms_text;
	size_t ksyms_len;
};

struct hvt_tdat_kernel_opts {
	const char *instance; /* NULL: the top-level instance */
	const char *clock;    /* trace clock to use, "mono" */
	/* A guest kernel's persistent ring instead of the host's tracefs:
	 * in its RAM file, or in the memory of VMM process @guest_pid, with
	 * the formats of the guest's tracefs copy @guest_formats. */
	const char *guest_ram;
	int guest_pid;
	const char *guest_formats;
	/* ... or the caller's rings (not closed here). */
	const struct hvt_tdat_guest_rings *guest_rings;
};

HVT_INTERNAL int hvt_tdat_kernel_open(const struct hvt_tdat_kernel_opts *o,
				      struct hvt_tdat_kernel **out);
/* Enable the kernel events @pattern selects; returns how many. */
HVT_INTERNAL int hvt_tdat_kernel_enable(struct hvt_tdat_kernel *k,
					const char *pattern);
HVT_INTERNAL int hvt_tdat_kernel_start(struct hvt_tdat_kernel *k);
HVT_INTERNAL void hvt_tdat_kernel_stop(struct hvt_tdat_kernel *k);
HVT_INTERNAL void hvt_tdat_kernel_close(struct hvt_tdat_kernel *k);
HVT_INTERNAL uint32_t hvt_tdat_kernel_nr_cpus(const struct hvt_tdat_kernel *k);
HVT_INTERNAL uint32_t
hvt_tdat_kernel_subbuf_size(const struct hvt_tdat_kernel *k);
HVT_INTERNAL const char *hvt_tdat_kernel_name(const struct hvt_tdat_kernel *k);
/* The trace clock the events carry ("mono"; a guest's own clock). */
HVT_INTERNAL const char *hvt_tdat_kernel_clock(const struct hvt_tdat_kernel *k);
/* A guest kernel's ring (read from guest memory, nothing enabled)? */
HVT_INTERNAL bool hvt_tdat_kernel_is_guest(const struct hvt_tdat_kernel *k);
/* That ring's guest RAM, or NULL. */
HVT_INTERNAL struct hvtrace_kring *
hvt_tdat_kernel_kring(const struct hvt_tdat_kernel *k);
/* The symbols of a guest kernel of rings (its struct hvt_tdat_guest_rings'
 * text), or NULL. */
HVT_INTERNAL const char *hvt_tdat_kernel_ksyms(const struct hvt_tdat_kernel *k,
					       size_t *len);
/* What a guest kernel's CPU @cpu was read of so far: its ring's counters
 * in guest RAM, or its ring's (hvtrace_ring_source_stats()) once
 * started. */
HVT_INTERNAL int hvt_tdat_kernel_guest_stats(const struct hvt_tdat_kernel *k,
					     uint32_t cpu,
					     struct hvtrace_kring_stats *st);

/* One kernel event; data valid until the next call for that CPU. */
struct hvt_tdat_krec {
	uint64_t ts;
	const uint8_t *data;
	uint32_t size;
	uint64_t lost;	   /* lost right before it */
	bool lost_unknown; /* lost, count not known */
};

/* 1 with @rec, 0 when nothing is pending, -errno on failure. */
HVT_INTERNAL int hvt_tdat_kernel_next(struct hvt_tdat_kernel *k, uint32_t cpu,
				      struct hvt_tdat_krec *rec);
/* The ring of @cpu once started (NULL before, or no such CPU), the
 * instance's: read it with hvtrace_ring_peek()/_consume(), not mixed with
 * hvt_tdat_kernel_next(). */
HVT_INTERNAL struct hvtrace_ring *
hvt_tdat_kernel_ring(struct hvt_tdat_kernel *k, uint32_t cpu);
/* Malformed data the kernel readers skipped. */
HVT_INTERNAL uint64_t hvt_tdat_kernel_errors(const struct hvt_tdat_kernel *k);
/* Is @id a kernel event id (as of open)? */
HVT_INTERNAL bool hvt_tdat_kernel_has_id(const struct hvt_tdat_kernel *k,
					 uint32_t id);
/* Formats of the events to save: the ftrace system, ids in @seen, and
 * the events enabled now.  @seen is a 65536-bit map. */
HVT_INTERNAL int hvt_tdat_kernel_formats(struct hvt_tdat_kernel *k,
					 const uint64_t *seen,
					 struct hvtrace_catalog *c);
/* Add the format of event @id to @c (not when it holds @id already);
 * -ENOENT: no event has @id, or its format is gone. */
HVT_INTERNAL int hvt_tdat_kernel_event_format(struct hvt_tdat_kernel *k,
					      uint32_t id,
					      struct hvtrace_catalog *c);
/* tracefs file of the instance (or top-level for printk_formats etc.). */
HVT_INTERNAL int hvt_tdat_kernel_file(struct hvt_tdat_kernel *k,
				      const char *name, bool top,
				      struct hvt_tdat_blob *b);
HVT_INTERNAL int hvt_tdat_kernel_cpu_stats(struct hvt_tdat_kernel *k,
					   uint32_t cpu,
					   struct hvt_tdat_blob *b);

/* --- recording (record_common.c, for record*.c) ---------------------------
 */

#define HVT_TDAT_ID_LIMIT 0x8000u   /* KernelShark: int16_t event ids */
#define HVT_TDAT_PID_MAX  (1 << 22) /* Linux PID_MAX_LIMIT */
#define HVT_TDAT_COMM_LEN 16	    /* TASK_COMM_LEN */

/*
 * One CPU of a source being recorded: its packer, whose pages go to
 * buffer *@buffer of @w, and the last timestamp packed (a conversion that
 * would go backwards is held there and counted, so every CPU stays
 * monotonic).  @buffer and @st are the source's: its writer buffer index
 * (set once the buffer is added) and its counters.
 */
struct HVT_CACHELINE_ALIGNED hvt_tdat_rcpu {
	struct hvtrace_tracedat_writer *w;
	const int *buffer;
	uint32_t cpu;
	struct hvtrace_pack pack;
	uint64_t last_ts;
	bool have_ts;
	struct hvtrace_tracedat_source_stats *st;
};

HVT_INTERNAL int hvt_tdat_rcpu_init(struct hvt_tdat_rcpu *c,
				    struct hvtrace_tracedat_writer *w,
				    const int *buffer, uint32_t cpu,
				    uint32_t subbuf_size,
				    struct hvtrace_tracedat_source_stats *st);
HVT_INTERNAL void hvt_tdat_rcpu_fini(struct hvt_tdat_rcpu *c);
/* One event at host time @ts; one the packer cannot take is counted. */
HVT_INTERNAL int hvt_tdat_rcpu_put_event(struct hvt_tdat_rcpu *c, uint64_t ts,
					 const uint8_t *rec, uint32_t len);
/* The same, with the record's event id (its first two bytes) written as
 * @id in the file: no copy of the record to rewrite it. */
HVT_INTERNAL int hvt_tdat_rcpu_put_event_id(struct hvt_tdat_rcpu *c,
					    uint64_t ts, const uint8_t *rec,
					    uint32_t len, uint16_t id);
/* @n events lost here (an unknown number when @known is false). */
HVT_INTERNAL int hvt_tdat_rcpu_put_lost(struct hvt_tdat_rcpu *c, uint64_t n,
					bool known);

/*
 * Records of a page its reader validated, for hvt_tdat_rcpu_put_page():
 * @data the records (a page's data, or its part from a record on, with
 * @ts the running time there), their writer times converted with @clk,
 * ids mapped by @idmap (@unknown_id counted in the CPU's unknown), @note
 * called with records whose common_pid may be new (or NULL).
 */
struct hvt_tdat_page {
	const uint8_t *data;
	uint32_t size;
	uint64_t ts;
	const struct hvt_item_index *ix; /* or NULL: the page is walked */
	const struct hvt_clock_affine *clk;
	const uint16_t *idmap;
	uint16_t unknown_id;
	void (*note)(void *ctx, const uint8_t *rec, uint32_t len);
	void *note_ctx;
};

/* The page's records into @c's packer, counted in @c's counters;
 * *@end_ts: the running time after them.  0, or the writer's -errno. */
HVT_INTERNAL int hvt_tdat_rcpu_put_page(struct hvt_tdat_rcpu *c,
					const struct hvt_tdat_page *pg,
					uint64_t *end_ts);

struct hvt_tdat_rkernel;

/*
 * The event ids of a file being recorded: all its buffers share one set
 * of formats, so an id means one event in the whole file (see record.c).
 */
struct hvt_tdat_ids {
	const char **text;   /* 65536 entries: the format placed at each id */
	const char **sys;    /* ... and its system */
	uint32_t unknown_id; /* records of ids without a format */
	uint64_t unknown_total;
};

HVT_INTERNAL int hvt_tdat_ids_init(struct hvt_tdat_ids *ids);
HVT_INTERNAL void hvt_tdat_ids_fini(struct hvt_tdat_ids *ids);
/* Is @id taken in the file (or not below HVT_TDAT_ID_LIMIT)?  @rk: the
 * kernel being recorded, whose ids are all taken, or NULL. */
HVT_INTERNAL bool hvt_tdat_ids_used(const struct hvt_tdat_ids *ids,
				    const struct hvt_tdat_rkernel *rk,
				    uint32_t id);
/* The highest free id into @id; -ENOSPC (error set) when none is left. */
HVT_INTERNAL int hvt_tdat_ids_alloc(const struct hvt_tdat_ids *ids,
				    const struct hvt_tdat_rkernel *rk,
				    uint32_t *id);
/* The id at which @text of @system is placed already, with its "ID:" line
 * rewritten to that id (another buffer of the same writer kind), or 0.
 * @out: that text (free() it), or NULL. */
HVT_INTERNAL uint32_t hvt_tdat_ids_find(const struct hvt_tdat_ids *ids,
					const char *system, const char *text,
					char **out);

/* NULL-terminated copies of event patterns (@events may be NULL). */
HVT_INTERNAL int hvt_tdat_events_dup(const char *const *events, char ***out);
HVT_INTERNAL void hvt_tdat_events_free(char **events);

/* Mark @pid in the bitmap *@seen (allocated at first use, of
 * HVT_TDAT_PID_MAX bits); true when it was not marked before. */
HVT_INTERNAL bool hvt_tdat_pid_first(uint8_t **seen, int pid);
/* Name host process @pid in the file from /proc/PID/comm; -errno when
 * it has no name there (gone, unreadable) or the writer failed. */
HVT_INTERNAL int hvt_tdat_pid_name(struct hvtrace_tracedat_writer *w, int pid);

#define HVT_TDAT_SRC_MAX_PIDS 4096u /* named from /proc per source */

/* The host pids a source named from /proc. */
struct hvt_tdat_pids {
	uint8_t *seen; /* bitmap of pids met */
	unsigned int nr;
};

/*
 * A host pid in an event of a source (kernel events, a local writer's
 * events): name it from /proc at first sight, milliseconds after its
 * event, while it almost certainly still lives -- at most
 * HVT_TDAT_SRC_MAX_PIDS per source.  A pid /proc named is marked in
 * @named (the recorder's bitmap of HVT_TDAT_PID_MAX bits, or NULL), so
 * that the kernel's saved_cmdlines names only the others.
 */
/*
 * A hypervisor's records in @data (@size bytes from time @ts, a copy of
 * the writer's): pid 0, no task, becomes HVT_HYP_PID, which the file's
 * saved_cmdlines names HVT_HYP_COMM (libtraceevent, and so trace-cmd
 * report, prints pid 0 as the idle task whatever the file says).
 */
HVT_INTERNAL void hvt_tdat_hyp_pids(uint8_t *data, uint32_t size,
				    uint64_t ts);
HVT_INTERNAL void hvt_tdat_pids_note(struct hvt_tdat_pids *p,
				     struct hvtrace_tracedat_writer *w,
				     uint8_t *named, int pid);
HVT_INTERNAL void hvt_tdat_pids_fini(struct hvt_tdat_pids *p);

/*
 * Host pids a reader thread met (common/workers.c) that its source had
 * not named yet, in the order met: the calling thread names them between
 * passes, so the file does not depend on the threads.
 */
struct hvt_tdat_pend {
	int last_pid;
	int *pid;
	unsigned int nr;
};

/* On the reader thread; @p: the source's pids (read only). */
HVT_INTERNAL void hvt_tdat_pend_note(struct hvt_tdat_pend *x,
				     const struct hvt_tdat_pids *p, int pid);
/* On the calling thread: name them (hvt_tdat_pids_note()), forget them. */
HVT_INTERNAL void hvt_tdat_pend_fold(struct hvt_tdat_pend *x,
				     struct hvt_tdat_pids *p,
				     struct hvtrace_tracedat_writer *w,
				     uint8_t *named);
HVT_INTERNAL void hvt_tdat_pend_fini(struct hvt_tdat_pend *x);

/* Counters of one CPU, as the kernel's per_cpu/cpuN/stats file has them. */
struct hvt_tdat_cpustat {
	uint32_t cpu;
	uint64_t entries;
	uint64_t overrun;
	uint64_t bytes;
	uint64_t oldest_ns; /* host CLOCK_MONOTONIC */
	uint64_t now_ns;
	uint64_t dropped;
	uint64_t read;
};

/* An option whose content is the text @fmt makes, with its NUL. */
HVT_INTERNAL int hvt_tdat_rec_add_optionf(struct hvtrace_tracedat_writer *w,
					  uint16_t id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * CPUSTAT options: the "Buffer:" line that starts a buffer's CPUs, with
 * the line that says its clock ("clock: mono (...error bound +-X us)" for
 * a buffer converted to the host's CLOCK_MONOTONIC by a clock model of
 * bound @err_ns, 0 for none; "clock: NAME (the writer's own times...)"
 * with @own_clock, the buffer's clock, for one that is not on the host's
 * clock), and one CPU's counters.
 */
HVT_INTERNAL int hvt_tdat_rec_add_buffer_stat(struct hvtrace_tracedat_writer *w,
					      const char *name,
					      const char *own_clock,
					      uint64_t err_ns);
/*
 * A remote's buffer (@buffer, @name) whose last times were not put on the
 * host's clock (@err_ns UINT64_MAX: hvtraced had no clock model of it):
 * its clock named "writer" instead of "mono", and stderr says so when it
 * has @events.  0 (nothing done) for any other bound.
 */
HVT_INTERNAL int hvt_tdat_rec_own_clock(struct hvtrace_tracedat_writer *w,
					int buffer, const char *name,
					uint64_t err_ns, uint64_t events);
HVT_INTERNAL int hvt_tdat_rec_add_cpustat(struct hvtrace_tracedat_writer *w,
					  const struct hvt_tdat_cpustat *cs);
/* header_page/header_event: the kernel's own when @rk records it and
 * they can be read, else ours for @subbuf_size sub-buffers. */
HVT_INTERNAL int hvt_tdat_rec_set_headers(struct hvtrace_tracedat_writer *w,
					  struct hvt_tdat_rkernel *rk,
					  uint32_t subbuf_size);
/* The format of records of ids nobody described, at @id. */
HVT_INTERNAL int hvt_tdat_rec_add_unknown(struct hvtrace_tracedat_writer *w,
					  uint32_t id);
/*
 * TRACECLOCK (the trace_clock file of the kernel instance @rk records,
 * else "[mono]"), UNAME and VERSION options.
 */
HVT_INTERNAL int hvt_tdat_rec_add_options(struct hvtrace_tracedat_writer *w,
					  struct hvt_tdat_rkernel *rk);
HVT_INTERNAL int hvt_tdat_rec_add_cpucount(struct hvtrace_tracedat_writer *w,
					   uint32_t cpus);
/* --- the host kernel as a recorded source (record_common.c) --------------
 */

/*
 * The host kernel being recorded, the same way by both recorders: its
 * tracefs instance (kernel.c) with the mono trace clock, its events in
 * the top-level buffer (CPUs and sub-buffer size the kernel's), ids kept,
 * host pids named from /proc, and at the end its headers, formats,
 * kallsyms, printk formats, saved_cmdlines, trace clock and CPU
 * statistics in the file.
 */
struct hvt_tdat_rkernel {
	struct hvt_tdat_kernel *k;
	struct hvtrace_tracedat_writer *w;
	int buffer; /* the top-level buffer's index */
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	struct hvt_tdat_rcpu *cpu;
	bool started;
	bool stopped;
	uint64_t seen[65536 / 64];   /* ids of the events read */
	struct hvtrace_catalog cat; /* the formats saved */
	struct hvt_tdat_pids pids;
	uint8_t *named; /* the recorder's bitmap of pids /proc named */
	bool guest;	/* a guest kernel's ring */
	/* A guest's: the names its records give (sched and task events,
	 * hvtrace_decoder_learn_comms()), with those events' formats. */
	struct hvtrace_decoder *dec;
	struct hvtrace_catalog dcat;
	struct hvtrace_tracedat_source_stats st;
	/* A guest's symbols read from its RAM with its formats folder's
	 * modules (hvtrace_ksyms_text()), once: its KALLSYMS; ksyms_tried:
	 * read or refused (said once). */
	char *ksyms_text;
	size_t ksyms_len;
	bool ksyms_tried;
};

/* Open the top-level tracefs instance, or instances/@instance (created if
 * missing); nothing changes there before _start(). */
HVT_INTERNAL int hvt_tdat_rkernel_open(const char *instance,
				       struct hvt_tdat_rkernel **out);
/* A guest kernel's ring instead (see struct hvt_tdat_kernel_opts): read
 * as it is, its pids never named from the host's /proc. */
HVT_INTERNAL int
hvt_tdat_rkernel_open_guest(const struct hvt_tdat_kernel_opts *ko,
			    struct hvt_tdat_rkernel **out);
/* Add the top-level buffer "" to @w with the kernel's CPUs.  @named: as
 * for hvt_tdat_pids_note(). */
HVT_INTERNAL int hvt_tdat_rkernel_add_buffer(struct hvt_tdat_rkernel *rk,
					     struct hvtrace_tracedat_writer *w,
					     uint8_t *named);
/* Enable the kernel events each pattern of @events (NULL-terminated)
 * selects, adding to @hits[i] how many @events[i] enabled. */
HVT_INTERNAL int hvt_tdat_rkernel_enable(struct hvt_tdat_rkernel *rk,
					 char *const *events,
					 unsigned int *hits);
/* mono clock, empty buffer, mapped, tracing on. */
HVT_INTERNAL int hvt_tdat_rkernel_start(struct hvt_tdat_rkernel *rk);
/* Pack what is pending; returns the events read or -errno. */
HVT_INTERNAL int hvt_tdat_rkernel_read(struct hvt_tdat_rkernel *rk);
/* Tracing off (once); what is in the buffer can still be read. */
HVT_INTERNAL void hvt_tdat_rkernel_stop(struct hvt_tdat_rkernel *rk);
/* Stop, read what is left, count the errors and close the last pages. */
HVT_INTERNAL int hvt_tdat_rkernel_drain(struct hvt_tdat_rkernel *rk);
/* Formats of the events to save (ftrace, seen, enabled) into the file. */
HVT_INTERNAL int hvt_tdat_rkernel_add_formats(struct hvt_tdat_rkernel *rk);
/* kallsyms, printk_formats and the saved_cmdlines /proc did not name. */
HVT_INTERNAL int hvt_tdat_rkernel_add_files(struct hvt_tdat_rkernel *rk);
/* CPUSTAT options of the kernel's CPUs (the first buffer's). */
HVT_INTERNAL int hvt_tdat_rkernel_add_cpustats(struct hvt_tdat_rkernel *rk);
/* Put back what was changed in tracefs (removing a created instance) and
 * free; @rk may be NULL. */
HVT_INTERNAL void hvt_tdat_rkernel_close(struct hvt_tdat_rkernel *rk);

/*
 * Finish the file when @ret is 0, else abort it keeping the error that
 * failed the recording; @w is gone either way.  Returns the result.
 */
HVT_INTERNAL int hvt_tdat_rec_end(struct hvtrace_tracedat_writer *w, int ret);

/* --- the recorder and its source sets (record.c) ----------------------------
 */

struct hvt_tdat_rset;

/*
 * A kind of recorded source: trace areas (record_area.c), remotes of
 * hvtraced (record_remote.c); a guest kernel ring is one more.  A set
 * holds the sources of its kind in one recording, one buffer each, and
 * reads them together (areas on reader threads, remotes on one feed).
 * record.c calls the hooks in this order:
 *   place, [kernel enable], no_match, pre_start, [kernel start], start;
 *   poll...; [kernel stop], stop, [kernel drain], drain;
 *   geometry, formats, cpustats (metadata); free.   abort: restore, free.
 */
struct hvt_tdat_rset_ops {
	const char *kind; /* "areas", "remotes": what the user gives */
	/* File ids for the formats; hits[p] += events pattern p selects. */
	int (*place)(struct hvt_tdat_rset *set, unsigned int *hits);
	/* -ENOENT with the error for pattern @pat that matched nothing. */
	int (*no_match)(struct hvt_tdat_rset *set, const char *pat);
	/* Before the kernel starts (subscriptions); may be NULL. */
	int (*pre_start)(struct hvt_tdat_rset *set);
	/* After: enabling, time sync, readers. */
	int (*start)(struct hvt_tdat_rset *set);
	/* One pass; @kernel_events: what the kernel gave in this poll.
	 * 0 once every source is done, 1 otherwise, or -errno. */
	int (*poll)(struct hvt_tdat_rset *set, int kernel_events,
		    unsigned int max_wait_ms);
	/* Producers stopped (before the kernel drains). */
	void (*stop)(struct hvt_tdat_rset *set);
	/* Read to the end and close the last pages; @ret: so far. */
	int (*drain)(struct hvt_tdat_rset *set, int ret);
	/* Put back what start() changed (abort). */
	void (*restore)(struct hvt_tdat_rset *set);
	/* Largest sub-buffer and CPU count of the set's sources. */
	void (*geometry)(struct hvt_tdat_rset *set, uint32_t *sb,
			 uint32_t *cpus);
	int (*formats)(struct hvt_tdat_rset *set);
	int (*cpustats)(struct hvt_tdat_rset *set);
	unsigned int (*nr_sources)(const struct hvt_tdat_rset *set);
	const struct hvtrace_tracedat_source_stats *(*stats)(
		const struct hvt_tdat_rset *set, unsigned int i);
	void (*free)(struct hvt_tdat_rset *set);
};

/* What every set sees of the recording. */
struct hvtrace_tracedat_record {
	struct hvtrace_tracedat_writer *w;
	char *path;
	char *sock;    /* hvtraced's socket for remotes, or NULL */
	char **events; /* NULL-terminated copy */
	unsigned int flags;
	struct hvt_tdat_rkernel *kern; /* the host kernel, or NULL */
	bool started;
	bool stopped;
	struct hvt_tdat_ids ids; /* file-wide event ids */
	uint8_t *pid_named;	 /* pids named from /proc (bitmap) */
	unsigned int want_threads; /* reader threads asked, 0: automatic */
	unsigned int nr_readers;   /* in use, with the calling thread */
	const struct hvt_tdat_rset_ops *ops; /* the source set, or NULL */
	struct hvt_tdat_rset *set;
	uint64_t journal_write_ns; /* next journal write-out (poll) */
	uint64_t journal_sync_ns;  /* next fdatasync() of it */
	/* One file of a host/guest pair (record_rkring.c): its TRACEID
	 * option (0: none), and the options the pairing adds, written
	 * last with the metadata. */
	uint64_t trace_id;
	int (*meta_hook)(void *arg, struct hvtrace_tracedat_writer *w);
	void *meta_arg;
};

/* A snapshot of @r's metadata into its journal (recovery takes the last
 * complete one): at the start, and again when what it says changed. */
HVT_INTERNAL int hvt_tdat_rec_journal_meta(struct hvtrace_tracedat_record *r);

/* A recording of the guest kernel's CPUs @g alone (the caller's, not
 * closed here), its formats in @formats, into @path: the guest file of a
 * host/guest pair.  Started, polled and finished as any recording. */
HVT_INTERNAL int
hvt_tdat_record_create_kring(const char *path, const char *formats,
			     const struct hvt_tdat_guest_rings *g,
			     struct hvtrace_tracedat_record **out);

/* Max sources of a recording, the kernel included; max reader threads. */
#define HVT_TDAT_REC_MAX_SOURCES 64u
#define HVT_TDAT_REC_MAX_THREADS 256u

/* Is an event selected by the -e patterns (all when there are none)? */
HVT_INTERNAL bool hvt_tdat_rec_selected(const struct hvtrace_tracedat_record *r,
					const char *sys, const char *name);
/* Add @hits[p] for every pattern p that selects the event. */
HVT_INTERNAL void hvt_tdat_rec_count(const struct hvtrace_tracedat_record *r,
				     const char *sys, const char *name,
				     unsigned int *hits);
/* The recorder's sleep when a poll found nothing (kernel, areas). */
HVT_INTERNAL void hvt_tdat_rec_idle(unsigned int max_wait_ms);

/* The area set (record_area.c): created at the first area. */
HVT_INTERNAL int hvt_tdat_rarea_add(struct hvtrace_tracedat_record *r,
				    const char *spec, const char *name);
/* The remote set (record_remote.c): connects at the first remote. */
HVT_INTERNAL int hvt_tdat_rremote_add(struct hvtrace_tracedat_record *r,
				      const char *remote, const char *name);
/* Is the recording's set the remote set? */
HVT_INTERNAL bool
hvt_tdat_rremote_is(const struct hvtrace_tracedat_record *r);
/* The guest kernel ring of remote @remote, added already (record_rkring.c). */
struct hvtrace_daemon_kring;
HVT_INTERNAL int hvt_tdat_rremote_add_kring(struct hvtrace_tracedat_record *r,
					    const char *remote,
					    struct hvtrace_daemon_kring *ring,
					    const char *formats,
					    const char *guest_path,
					    int vmm_pid);

/* --- the journal of an unfinished recording (journal.c, journal_parse.c) ---
 *
 * While recording, the recorder's writer also appends what it is given
 * to FILE.unfinished (mode 0600, beside the output, locked with flock()
 * while recording, removed once FILE is complete): the buffers, every
 * page, and snapshots of the metadata.  A recording killed at any
 * instant leaves it, and hvtrace_tracedat_recover() writes FILE from it.
 * docs/tracedat.md, "A killed recording", has the format and the bound.
 */
#define HVT_TDAT_JOURNAL_SUFFIX	  ".unfinished"
#define HVT_TDAT_JOURNAL_MAGIC	  "HVTJRNL1"
#define HVT_TDAT_JOURNAL_HDR	  16u /* magic, u32 version, u32 page size */
#define HVT_TDAT_JREC_MAGIC	  0x4a545648u /* "HVTJ" little-endian */
#define HVT_TDAT_JREC_HDR	  20u
#define HVT_TDAT_JREC_MAX	  (512u << 20) /* one record's payload */
#define HVT_TDAT_JOURNAL_WRITE_MS 100u	/* pages written out this often */
#define HVT_TDAT_JOURNAL_SYNC_MS  1000u /* and made durable this often */

enum hvt_tdat_jrec_type {
	HVT_TDAT_J_BUFFER = 1, /* a = index, b = CPUs; u32 page size,
				* name\0 clock\0 */
	HVT_TDAT_J_CLOCK,      /* a = buffer; clock */
	HVT_TDAT_J_PAGE,       /* a = buffer, b = CPU; the page */
	HVT_TDAT_J_META_BEGIN, /* a metadata snapshot: */
	HVT_TDAT_J_HEADERS,    /* u32 n, header_page, header_event */
	HVT_TDAT_J_FORMAT,     /* system\0 text */
	HVT_TDAT_J_KALLSYMS,   /* text */
	HVT_TDAT_J_PRINTK,     /* text */
	HVT_TDAT_J_OPTION,     /* a = id; data */
	HVT_TDAT_J_CMDLINE,    /* b = pid; comm */
	HVT_TDAT_J_META_END,   /* the snapshot is complete */
	HVT_TDAT_J_MAX
};

/* One record of a journal, as read back: @data points into the input. */
struct hvt_tdat_jrec {
	uint16_t type;
	uint16_t a;
	uint32_t b;
	uint32_t len;
	const uint8_t *data;
	uint64_t off; /* its offset in the journal */
};

/* A pass over a journal in memory; every field is checked, nothing is
 * trusted. */
struct hvt_tdat_jparse {
	const uint8_t *p;
	uint64_t size;
	uint64_t pos;
	uint32_t page_size;
	uint64_t bad_records; /* damaged records skipped */
	uint64_t bad_bytes;   /* bytes skipped with them */
	bool torn;	      /* the journal ends inside a record */
};

/* Checksum of a record: its header fields and payload. */
HVT_INTERNAL uint32_t hvt_tdat_jrec_sum(uint16_t type, uint16_t a, uint32_t b,
					const void *data, uint32_t len);
/* Check the journal's header; -EINVAL with a message if it is none. */
HVT_INTERNAL int hvt_tdat_jparse_init(struct hvt_tdat_jparse *j,
				      const uint8_t *p, uint64_t size);
/* The next good record into @r: 1, or 0 at the end.  Damaged bytes are
 * skipped up to the next good record and counted. */
HVT_INTERNAL int hvt_tdat_jparse_next(struct hvt_tdat_jparse *j,
				      struct hvt_tdat_jrec *r);

/* journal.c: the writer's side.  _open() starts the journal of @w (the
 * recorder's writer only); _sync() writes out what is buffered (and with
 * @durable, fdatasync()s it); between _meta_begin() and _meta_end() the
 * writer's metadata calls only go into the journal, as a snapshot. */
HVT_INTERNAL int hvt_tdat_journal_open(struct hvtrace_tracedat_writer *w);
HVT_INTERNAL int hvt_tdat_journal_sync(struct hvtrace_tracedat_writer *w,
				       bool durable);
HVT_INTERNAL void hvt_tdat_journal_meta_begin(struct hvtrace_tracedat_writer *w);
HVT_INTERNAL int hvt_tdat_journal_meta_end(struct hvtrace_tracedat_writer *w);
/* Is @w taking a metadata snapshot (its metadata pass says nothing)? */
HVT_INTERNAL bool hvt_tdat_journal_snapshot(const struct hvtrace_tracedat_writer *w);
/* FILE.unfinished of @path, malloc()ed; NULL without memory. */
HVT_INTERNAL char *hvt_tdat_journal_path(const char *path);

#endif /* HVT_TRACEDAT_LOCAL_H */
