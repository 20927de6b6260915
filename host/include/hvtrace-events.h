/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace - events and their formats: decoding with
 * libtraceevent, trace_pipe-style text, event catalogs, and packing events
 * into ftrace sub-buffers.
 *
 * Part of the core library; <hvtrace.h> includes it, and it may be
 * included on its own.  Conventions as in <hvtrace.h>.
 */
#ifndef HVTRACE_EVENTS_H
#define HVTRACE_EVENTS_H

#include <hvtrace.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/**
 * hvtrace_decoder_comm - the comm of @pid, or NULL when unknown; valid
 * until the table changes (set_comm, load_cmdlines, learn_comms, format)
 */
HVTRACE_API const char *hvtrace_decoder_comm(const struct hvtrace_decoder *d,
					     int pid);

/**
 * hvtrace_decoder_learn_comms - name pids from a record's own fields
 * @d:   decoder
 * @rec: a record of the ring (@rec->ts: its ring time)
 *
 * A record of the scheduler's events names tasks: sched_switch its prev
 * and next task, the wakeups theirs, sched_process_fork the parent and
 * the child, task_rename the new name, ... (the "sched" and "task"
 * events whose format pairs a char[16] COMM with a PID field of the same
 * prefix; not sched_process_wait).  Each name replaces the table's name
 * of its pid (hvtrace_decoder_set_comm()) and the name an older record
 * gave (by ring time); a table name never replaces it.  The fields are
 * looked up once per event id.  hvtrace_decoder_format() calls it for
 * every record it prints; call it for records that are not printed
 * (a recording) to name their pids the same way.
 *
 * Return: how many names the record gave (0, 1 or 2), or -EINVAL.
 */
HVTRACE_API int hvtrace_decoder_learn_comms(struct hvtrace_decoder *d,
					    const struct hvtrace_record *rec);

/* Flags of hvtrace_decoder_comm_each() */
enum hvtrace_comm_flags {
	/* Only the names records gave (hvtrace_decoder_learn_comms()). */
	HVTRACE_COMM_LEARNED = 1u << 0,
};

/* Called with each entry; a non-zero return stops the walk. */
typedef int (*hvtrace_comm_fn)(void *arg, int pid, const char *comm);

/**
 * hvtrace_decoder_comm_each - every pid the decoder names, once each
 * @flags: enum hvtrace_comm_flags
 *
 * Return: 0, what @fn returned when it stopped the walk, or -EINVAL.
 */
HVTRACE_API int hvtrace_decoder_comm_each(const struct hvtrace_decoder *d,
					  unsigned int flags,
					  hvtrace_comm_fn fn, void *arg);

/* The pid -> comm table of a decoder. */
struct hvtrace_comm_stats {
	uint64_t entries;	/* pids named now */
	uint64_t learned;	/* of them, named by records */
	uint64_t replaced;	/* names a pid of the same slot took over */
	uint64_t max_entries;	/* the bound: pid % max_entries is the slot */
};

/** hvtrace_decoder_comm_stats - the table's counts; 0 or -EINVAL */
HVTRACE_API int hvtrace_decoder_comm_stats(const struct hvtrace_decoder *d,
					   struct hvtrace_comm_stats *st);

/** hvtrace_decoder_event_name - "system:name" parts of an event id */
HVTRACE_API int hvtrace_decoder_event_name(const struct hvtrace_decoder *d,
					   unsigned int id,
					   const char **system,
					   const char **name);

/* --- a guest kernel's symbols ------------------------------------------- */

/*
 * One kernel's symbol table (one guest boot: KASLR moves it at every
 * boot), never mixed with another kernel's: the host's own symbols are
 * never used for a guest.  Made from /proc/kallsyms text
 * (hvtrace_ksyms_parse()) or from guest RAM (hvtrace_ksyms_from_kring(),
 * <hvtrace-ring.h>); what a decoder names %ps/%pS/%pF/%pf arguments and
 * ftrace:print's ip with (hvtrace_decoder_set_ksyms()).
 */
struct hvtrace_ksyms;

/* Bounds of hvtrace_ksyms_parse(): a text beyond them is refused, a line
 * beyond them is skipped (counted). */
#define HVTRACE_KSYMS_TEXT_MAX		(256u << 20)	/* bytes of text */
#define HVTRACE_KSYMS_LINES_MAX		(4u << 20)	/* lines of text */
#define HVTRACE_KSYMS_LINE_MAX		600u	/* bytes of a line */
#define HVTRACE_KSYMS_NAME_MAX		511u	/* bytes of a name */
#define HVTRACE_KSYMS_MODULE_MAX	55u	/* bytes of a module name */
#define HVTRACE_KSYMS_MODULES_MAX	4096u	/* distinct modules */

/* What made a table and what it holds. */
struct hvtrace_ksyms_info {
	uint32_t symbols;	/* lines kept */
	uint32_t modules;	/* distinct module names among them */
	uint32_t skipped;	/* lines refused (parse) */
	uint32_t first_skipped;	/* line number (from 1) of the first, or 0 */
	char first_skipped_why[64];	/* what was wrong with it */
	/* hvtrace_ksyms_from_kring() only (0 otherwise) */
	uint64_t note_offset;	/* RAM offset of the VMCOREINFO note */
	uint64_t kaslr_offset;	/* KERNELOFFSET: _text - 0xffffffff81000000 */
	uint64_t phys_base;	/* NUMBER(phys_base) */
	uint64_t lowmem;	/* RAM below 4 GiB when the image sits above
				 * (QEMU's split); 0: identity */
	uint32_t percpu_absolute;	/* 1: CONFIG_KALLSYMS_ABSOLUTE_PERCPU */
	/* which kernel: for its event formats (hvtrace_ksyms_from_kring()) */
	char release[65];	/* OSRELEASE, as uname -r prints it */
	char build_id[129];	/* BUILD-ID: the GNU build id in hex; "" none */
	char banner[256];	/* linux_banner's line, as the console printed
				 * it ("Linux version ..."); "" not found */
};

/**
 * hvtrace_ksyms_parse - a symbol table from /proc/kallsyms text
 * @text: the text (hostile: a guest made it); need not end in a NUL
 * @len:  bytes of @text
 * @out:  the new table
 *
 * Each line is "%016lx %c %s" (16 hex digits, a type letter, a name of
 * 1 to HVTRACE_KSYMS_NAME_MAX printable characters) with an optional
 * "\t[MODULE]" (1 to HVTRACE_KSYMS_MODULE_MAX printable characters).  A
 * line that is not (longer than HVTRACE_KSYMS_LINE_MAX, holding a NUL
 * byte, bad hex, ...) is skipped and counted (hvtrace_ksyms_get_info()).
 *
 * Return: 0; -EINVAL (NULL argument); -E2BIG (more than
 * HVTRACE_KSYMS_TEXT_MAX bytes or HVTRACE_KSYMS_LINES_MAX lines);
 * -ENOENT (no valid line); -ENODATA (every address is 0: the kernel hid
 * them from the reader, kptr_restrict); -ENOMEM.
 */
HVTRACE_API int hvtrace_ksyms_parse(const char *text, size_t len,
				    struct hvtrace_ksyms **out);

/** hvtrace_ksyms_free - free a table; NULL is a no-op */
HVTRACE_API void hvtrace_ksyms_free(struct hvtrace_ksyms *ks);

/**
 * hvtrace_ksyms_add_modules - a kernel image's table, with its modules
 * @ks:   the image's table (hvtrace_ksyms_from_kring(): this boot's)
 * @from: a table whose module symbols ("\t[MODULE]" lines) are added, a
 *        guest's /proc/kallsyms lines of its modules (hvtrace_ksyms_parse());
 *        its image symbols are left out: @ks has the image
 *
 * Return: the number of symbols added (0: @from lists no module); -EINVAL
 * (a NULL table, or more than HVTRACE_KSYMS_MODULES_MAX modules in all);
 * -E2BIG (more than HVTRACE_KSYMS_LINES_MAX symbols); -ENOMEM.  On an
 * error @ks names what it named.
 */
HVTRACE_API int hvtrace_ksyms_add_modules(struct hvtrace_ksyms *ks,
					  const struct hvtrace_ksyms *from);

/** hvtrace_ksyms_get_info - what a table holds; 0 or -EINVAL */
HVTRACE_API int hvtrace_ksyms_get_info(const struct hvtrace_ksyms *ks,
				       struct hvtrace_ksyms_info *info);

/**
 * hvtrace_ksyms_text - the table as /proc/kallsyms text
 * @ks:   table
 * @text: a new NUL-ended buffer (free() it), every line valid
 * @len:  its bytes, the NUL not counted
 *
 * The lines kept, in their order, "%016lx %c %s[\t[MODULE]]\n": the
 * sanitized text for a trace.dat KALLSYMS section.
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
HVTRACE_API int hvtrace_ksyms_text(const struct hvtrace_ksyms *ks,
				   char **text, size_t *len);

/**
 * hvtrace_ksyms_lookup - the symbol an address lies in
 * @ks:     table
 * @addr:   a kernel address
 * @name:   its name (NULL: not wanted); valid as long as @ks
 * @offset: @addr minus the symbol's address (NULL: not wanted)
 * @size:   bytes to the next symbol, 0 when unknown (NULL: not wanted)
 * @module: the module, NULL for the kernel image (NULL: not wanted)
 *
 * A symbol spans up to the next higher address of the same module (or
 * of the image); the last one of a module or of the image, whose end is
 * unknown, matches only its own address.  Absolute symbols (types A, a:
 * per-CPU offsets) are never matched; of aliases, the first is.
 *
 * Return: 0, -ENOENT (in no symbol) or -EINVAL.
 */
HVTRACE_API int hvtrace_ksyms_lookup(const struct hvtrace_ksyms *ks,
				     uint64_t addr, const char **name,
				     uint64_t *offset, uint64_t *size,
				     const char **module);

/**
 * hvtrace_decoder_set_ksyms - the symbols a decoder prints addresses with
 * @d:  decoder
 * @ks: table, which the decoder takes (freed with it or at the next
 *      call); NULL: none, addresses print in hex
 *
 * Installs a function resolver in libtraceevent (a binary search of @ks,
 * no copy per record); an address in no symbol prints in hex.  Replaces
 * any symbols the decoder had (a formats folder's kallsyms).
 *
 * Return: 0 or -EINVAL (@d NULL: @ks is freed all the same).
 */
HVTRACE_API int hvtrace_decoder_set_ksyms(struct hvtrace_decoder *d,
					  struct hvtrace_ksyms *ks);

/**
 * hvtrace_decoder_set_image_ksyms - a kernel image's symbols, with the
 * modules of those the decoder has
 * @d:  decoder
 * @ks: a kernel image's table (hvtrace_ksyms_from_kring(), or kallsyms
 *      text a daemon read so), which the decoder takes
 *
 * As hvtrace_decoder_set_ksyms(), but the module symbols of the table the
 * decoder had (a formats folder's kallsyms, which a rig guest prints with
 * the modules it loaded) are added to @ks first
 * (hvtrace_ksyms_add_modules()).
 *
 * Return: 0; 1 when they could not be added (the decoder keeps the table
 * it had, @ks is freed); -EINVAL, -ENOMEM as hvtrace_decoder_set_ksyms().
 */
HVTRACE_API int hvtrace_decoder_set_image_ksyms(struct hvtrace_decoder *d,
						struct hvtrace_ksyms *ks);

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

#endif /* HVTRACE_EVENTS_H */
