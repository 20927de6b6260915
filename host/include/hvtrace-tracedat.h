/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-tracedat - trace-cmd's trace.dat files: recording, writing and
 * reading them.
 *
 * Built on libhvtrace (<hvtrace.h>): the recorder reads trace areas, the
 * host kernel's ring and remotes of hvtraced through that library's
 * readers.  Same conventions: negative errno returns, hvtrace_last_error()
 * for the words, opaque handles.
 */
#ifndef HVTRACE_TRACEDAT_H
#define HVTRACE_TRACEDAT_H

#include <hvtrace.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * hvtrace writes trace-cmd's trace.dat format, version 7, uncompressed:
 * what trace-cmd report (3.x) and KernelShark (2.x) open.  The host
 * kernel's events, if recorded, go in the top-level buffer; every trace
 * area goes in a buffer of its own named after it.  All buffers share one
 * time base, the host's CLOCK_MONOTONIC ("mono"): the kernel records with
 * the mono trace clock and remote timestamps are converted when written.
 * See docs/tracedat.md for the layout.
 */

/* --- recording ------------------------------------------------------------- */

struct hvtrace_tracedat_record;

enum hvtrace_tracedat_record_flags {
	/* Attach areas read-only: no control page (no enabling, no time
	 * sync, no consumer progress); for post-mortem copies and areas
	 * another host process owns. */
	HVTRACE_TDAT_REC_NO_CONTROL = 1u << 0,
};

struct hvtrace_tracedat_record_opts {
	const char *path;		/* output trace.dat */
	bool kernel;			/* record the host kernel too */
	const char *kernel_instance;	/* NULL/"": top-level tracefs
					 * instance; else instances/NAME,
					 * created if missing and removed
					 * afterwards */
	/* Event patterns to enable ("sys", "sys:event", "sys/event",
	 * "event", "all"; globs), NULL-terminated; NULL: the kernel keeps
	 * the events it has enabled, remote writers get all theirs. */
	const char *const *events;
	unsigned int flags;		/* enum hvtrace_tracedat_record_flags */
	/* Fields added later: zero-initialise the struct. */
	const char *socket;		/* hvtraced's socket, for remotes;
					 * NULL: the default */
	/* A guest kernel's persistent ring (docs/guest-kernel.md) in the
	 * top-level buffer instead of the host kernel: in the guest RAM
	 * file @guest_ram, or in the memory of VMM process @guest_pid, with
	 * the formats of @guest_formats (a copy of the guest's tracefs
	 * files).  Read as it is (nothing enabled, the guest's own trace
	 * clock), up to its newest event, then the recording is done.  It
	 * records alone: not with @kernel, areas or remotes. */
	const char *guest_ram;
	int guest_pid;
	const char *guest_formats;
};

/**
 * hvtrace_tracedat_record_create - prepare a recording
 * @o:   options (copied)
 * @out: the new handle
 *
 * Creates the output file and, with @o->kernel, opens the kernel's
 * tracefs instance (nothing is changed there until _start()).
 *
 * Return: 0 or a negative errno (hvtrace_last_error() says why).
 */
HVTRACE_API int hvtrace_tracedat_record_create(
	const struct hvtrace_tracedat_record_opts *o,
	struct hvtrace_tracedat_record **out);

/**
 * hvtrace_tracedat_record_add_area - record a trace area in its own buffer
 * @r:    recording (before _start())
 * @spec: "PATH[@OFFSET[+SIZE]]"
 * @name: buffer name, or NULL for the area's own name
 *
 * Return: the source index (>= 0) or a negative errno.
 */
HVTRACE_API int hvtrace_tracedat_record_add_area(
	struct hvtrace_tracedat_record *r, const char *spec, const char *name);

/**
 * hvtrace_tracedat_record_add_remote - record a remote of hvtraced
 * @r:      recording (before _start())
 * @remote: the remote's name (a guest, agent, hypervisor or area that
 *          hvtraced owns)
 * @name:   buffer name, or NULL for @remote
 *
 * The first remote connects to hvtraced (@o->socket of _create()).  The
 * remote is read through the daemon: its formats from the daemon (again
 * when an event id without a format shows up), timestamps converted with
 * the daemon's clock model.  Without event patterns the recording takes
 * what the daemon has enabled; with them it enables the matching events
 * and puts back what it changed when it finishes.  Areas and remotes go
 * in separate recordings.
 *
 * Return: the source index (>= 0) or a negative errno.
 */
HVTRACE_API int hvtrace_tracedat_record_add_remote(
	struct hvtrace_tracedat_record *r, const char *remote, const char *name);

struct hvtrace_daemon_kring;

/**
 * hvtrace_tracedat_record_add_remote_kring - record the guest kernel's own
 * ring of a remote beside its user events
 * @r:       recording (before _start()), with @remote added
 * @remote:  the remote's name (or its buffer name)
 * @ring:    its guest kernel's ring (hvtrace_daemon_kring_open_served():
 *           the pages hvtraced reads, in ring or copy mode, on the
 *           recording's feed); the caller's: keep it open until the
 *           recording is finished
 * @formats: the guest kernel's formats, a folder laid out like its tracefs
 *           (the one @ring was opened with)
 *
 * The ring's events go in a buffer of their own, "REMOTE-kernel", with
 * the guest's CPUs.  Its trace clock must be mono (the guest agent's),
 * and the remote's clock the guest's mono clock: the records go on the
 * host's clock with the daemon's model of the guest, as the remote's user
 * events do.  Event ids are given file ids at first sight (kept when
 * free, else renumbered below 0x8000, records rewritten); records
 * committed before _start() are skipped (those whose host time lies
 * before the start by more than the clock model's error bound).
 *
 * Return: the source index (>= 0) or a negative errno.
 */
HVTRACE_API int hvtrace_tracedat_record_add_remote_kring(
	struct hvtrace_tracedat_record *r, const char *remote,
	struct hvtrace_daemon_kring *ring, const char *formats);

/**
 * hvtrace_tracedat_record_add_remote_kring_pair - record the guest kernel's
 * own ring of a remote into a guest file of its own, paired with the
 * recording's file as trace-cmd record -A pairs a host and a guest
 * @r, @remote, @ring, @formats: as hvtrace_tracedat_record_add_remote_kring()
 * @guest_path: the guest file to write
 * @vmm_pid:    the VMM process running the guest (its vCPU threads are
 *              found by name, "CPU N/..."), or 0 when unknown
 *
 * The guest file holds the ring in its top-level buffer on the guest's
 * own clock, with the guest's formats, kallsyms and comms, a TRACEID
 * option and a TIME_SHIFT option: samples of the daemon's clock model
 * of the guest (guest time, host offset; interpolated), taken while
 * recording.  The recording's file gets a TRACEID and a GUEST option
 * naming the guest (@remote), its trace id and each vCPU's host thread
 * (-1: not found).  trace-cmd report -i FILE -i GUEST_FILE then prints
 * one timeline, and KernelShark pairs the two.  The guest file is
 * finished when the recording stops.
 *
 * Return: the source index (>= 0) or a negative errno.
 */
HVTRACE_API int hvtrace_tracedat_record_add_remote_kring_pair(
	struct hvtrace_tracedat_record *r, const char *remote,
	struct hvtrace_daemon_kring *ring, const char *formats,
	const char *guest_path, int vmm_pid);

/**
 * hvtrace_tracedat_record_set_reader_threads - threads that read the areas
 * @r: recording (before _start())
 * @n: reader threads, the calling thread included; 0 (the default):
 *     automatic, one per area CPU buffer up to the online CPUs and 8;
 *     1: everything on the calling thread; at most 256
 *
 * The CPU buffers of all areas are dealt out to the threads; each CPU is
 * always read by the same thread, so the file does not depend on @n.
 * Never more threads than area CPU buffers.  Remotes are read on the
 * calling thread (hvtraced reads their pages).
 *
 * Return: 0 or a negative errno (-EBUSY once started, -EINVAL above 256).
 */
HVTRACE_API int
hvtrace_tracedat_record_set_reader_threads(struct hvtrace_tracedat_record *r,
					   unsigned int n);

/**
 * hvtrace_tracedat_record_reader_threads - reader threads in use
 * @r: recording
 *
 * Return: the number of reader threads (the calling thread included)
 * once started, 0 before.
 */
HVTRACE_API unsigned int
hvtrace_tracedat_record_reader_threads(const struct hvtrace_tracedat_record *r);

/**
 * hvtrace_tracedat_record_start - enable events, sync clocks, start reading
 *
 * Kernel: selects the mono trace clock, clears the buffer, enables the
 * selected events and turns tracing on.  Areas: enables the selected
 * events in the control page and takes time-sync samples.  Remotes:
 * fetches their formats, subscribes to their pages, enables the selected
 * events through hvtraced.
 */
HVTRACE_API int hvtrace_tracedat_record_start(struct hvtrace_tracedat_record *r);

/**
 * hvtrace_tracedat_record_poll - read what is pending, once
 * @r:           recording
 * @max_wait_ms: sleep at most this long when nothing was pending
 *
 * Return: 1 while recording goes on; 0 once every area's or remote's
 * writer has stopped (or died, or the remote was detached) and its data
 * was drained (never with only the kernel recorded); a negative errno on
 * a fatal error.
 */
HVTRACE_API int hvtrace_tracedat_record_poll(struct hvtrace_tracedat_record *r,
					     unsigned int max_wait_ms);

/* Per-buffer counters. */
struct hvtrace_tracedat_source_stats {
	char name[64];			/* buffer name; "" for the kernel */
	bool kernel;
	bool finished;			/* writer stopped/died and drained */
	uint32_t nr_cpus;
	uint64_t events;		/* events written to the file */
	uint64_t lost;			/* events lost, as recorded in the file */
	uint64_t lost_unknown;		/* pages that lost an unknown number */
	uint64_t trailing_lost;		/* drops after the last page (in the
					 * CPU statistics only) */
	uint64_t bytes;			/* page bytes written (file data) */
	uint64_t errors;		/* malformed data skipped */
	uint64_t unknown;		/* events of an id with no format */
	uint64_t clamped;		/* timestamps held back to keep order */
	uint64_t sync_err_ns;		/* clock model error bound (areas) */
};

/** hvtrace_tracedat_record_nr_sources - kernel (if any) + areas/remotes */
HVTRACE_API unsigned int
hvtrace_tracedat_record_nr_sources(const struct hvtrace_tracedat_record *r);

/** hvtrace_tracedat_record_source_stats - counters of source @i */
HVTRACE_API int hvtrace_tracedat_record_source_stats(
	const struct hvtrace_tracedat_record *r, unsigned int i,
	struct hvtrace_tracedat_source_stats *st);

/**
 * hvtrace_tracedat_record_stop - stop and drain: counters are final after
 *
 * Stops the kernel's tracing and the areas' writers (tracing off in their
 * control pages), reads everything left (what remotes committed until
 * now, through hvtraced), puts back the events enabled on remotes and
 * closes the last pages.
 */
HVTRACE_API int hvtrace_tracedat_record_stop(struct hvtrace_tracedat_record *r);

/**
 * hvtrace_tracedat_record_finish - drain, restore, write the file, free
 *
 * Stops the kernel's tracing, reads what is left, puts the kernel's
 * settings back, and writes the complete trace.dat.  Safe to call after
 * an interruption at any point after _create().
 *
 * Return: 0 or a negative errno; @r is freed either way.
 */
HVTRACE_API int hvtrace_tracedat_record_finish(struct hvtrace_tracedat_record *r);

/** hvtrace_tracedat_record_abort - restore and free; no file is left */
HVTRACE_API void hvtrace_tracedat_record_abort(struct hvtrace_tracedat_record *r);

/* --- the host kernel, live ----------------------------------------------- */

struct hvtrace_tracedat_kernel;

/**
 * hvtrace_tracedat_kernel_open - own a host tracefs instance for a live read
 * @instance: instances/NAME, created when missing and removed again by
 *            _close(); NULL or "": the top-level instance
 * @events:   patterns of events to enable, as for a recording
 *            (NULL-terminated); NULL: the instance keeps what it has
 * @out:      the new handle
 *
 * Sets the instance up as a recording does: trace clock mono (the host's
 * CLOCK_MONOTONIC), buffer cleared, @events enabled, tracing on.  The
 * caller reads each CPU through hvtrace_tracedat_kernel_ring().
 *
 * Return: 0 or a negative errno (-ENOENT: a pattern matched no event, or
 * no tracefs; -EACCES: not root); what was changed is put back.
 */
HVTRACE_API int
hvtrace_tracedat_kernel_open(const char *instance, const char *const *events,
			     struct hvtrace_tracedat_kernel **out);

/** hvtrace_tracedat_kernel_nr_cpus - the instance's CPU buffers */
HVTRACE_API unsigned int
hvtrace_tracedat_kernel_nr_cpus(const struct hvtrace_tracedat_kernel *k);

/**
 * hvtrace_tracedat_kernel_ring - the ring of CPU @cpu, the handle's (not to
 * be closed); NULL when there is no such CPU
 */
HVTRACE_API struct hvtrace_ring *
hvtrace_tracedat_kernel_ring(struct hvtrace_tracedat_kernel *k,
			     unsigned int cpu);

/**
 * hvtrace_tracedat_kernel_stop - turn the instance's tracing_on off, as a
 * reader's end: what its buffers hold can still be read to their end,
 * nothing new is written (_close() puts tracing_on back)
 */
HVTRACE_API void
hvtrace_tracedat_kernel_stop(struct hvtrace_tracedat_kernel *k);

/**
 * hvtrace_tracedat_kernel_close - put back the instance's clock, events and
 * tracing_on, remove it if _open() created it, free @k (NULL: nothing)
 */
HVTRACE_API void
hvtrace_tracedat_kernel_close(struct hvtrace_tracedat_kernel *k);

/* --- writing (the low-level writer the recorder uses) ---------------------- */

struct hvtrace_tracedat_writer;

/**
 * hvtrace_tracedat_writer_create - start a trace.dat v7 file
 * @path:      output (created now, written by _finish())
 * @page_size: the traced host's page size: the top-level buffer's
 *             sub-buffer size
 * @out:       the new handle
 */
HVTRACE_API int hvtrace_tracedat_writer_create(
	const char *path, uint32_t page_size,
	struct hvtrace_tracedat_writer **out);

/** hvtrace_tracedat_writer_set_headers - events/header_page, header_event */
HVTRACE_API int hvtrace_tracedat_writer_set_headers(
	struct hvtrace_tracedat_writer *w, const char *header_page,
	size_t hp_len, const char *header_event, size_t he_len);

/**
 * hvtrace_tracedat_writer_add_format - an event format file text
 * @system: its system; "ftrace" goes to the ftrace events section
 */
HVTRACE_API int hvtrace_tracedat_writer_add_format(
	struct hvtrace_tracedat_writer *w, const char *system,
	const char *text, size_t len);

/** hvtrace_tracedat_writer_set_kallsyms - /proc/kallsyms text */
HVTRACE_API int hvtrace_tracedat_writer_set_kallsyms(
	struct hvtrace_tracedat_writer *w, const char *text, size_t len);

/** hvtrace_tracedat_writer_set_printk - printk_formats text */
HVTRACE_API int hvtrace_tracedat_writer_set_printk(
	struct hvtrace_tracedat_writer *w, const char *text, size_t len);

/** hvtrace_tracedat_writer_add_cmdline - pid to comm (last one wins) */
HVTRACE_API int hvtrace_tracedat_writer_add_cmdline(
	struct hvtrace_tracedat_writer *w, int pid, const char *comm);

/**
 * hvtrace_tracedat_writer_add_option - a trace-cmd option for the first
 * options section (TRACECLOCK 4, UNAME 5, CPUSTAT 2, CPUCOUNT 8, ...);
 * the writer writes the section, buffer and DONE options itself
 */
HVTRACE_API int hvtrace_tracedat_writer_add_option(
	struct hvtrace_tracedat_writer *w, uint16_t id, const void *data,
	uint32_t len);

/**
 * hvtrace_tracedat_writer_add_buffer - declare a buffer
 * @name:      "" for the top-level buffer (exists from the start with no
 *             CPUs; this sets its CPUs and clock), else a unique name
 * @clock:     its trace clock ("mono")
 * @nr_cpus:   CPUs
 * @page_size: its sub-buffer size (the file's page size for the top one)
 *
 * Return: the buffer index (0 for the top-level one) or a negative errno.
 */
HVTRACE_API int hvtrace_tracedat_writer_add_buffer(
	struct hvtrace_tracedat_writer *w, const char *name, const char *clock,
	uint32_t nr_cpus, uint32_t page_size);

/**
 * hvtrace_tracedat_writer_add_page - append one sub-buffer to a CPU
 * @size: bytes at @page (header included); the page is zero-padded to the
 *        buffer's page size in the file
 */
HVTRACE_API int hvtrace_tracedat_writer_add_page(
	struct hvtrace_tracedat_writer *w, int buffer, uint32_t cpu,
	const void *page, size_t size);

/** hvtrace_tracedat_writer_data_bytes - page bytes appended so far */
HVTRACE_API uint64_t hvtrace_tracedat_writer_data_bytes(
	const struct hvtrace_tracedat_writer *w);

/**
 * hvtrace_tracedat_writer_finish - write the file and free the writer
 *
 * Return: 0, or a negative errno (the incomplete file is removed).
 */
HVTRACE_API int hvtrace_tracedat_writer_finish(
	struct hvtrace_tracedat_writer *w);

/** hvtrace_tracedat_writer_abort - free; the output file is removed */
HVTRACE_API void hvtrace_tracedat_writer_abort(
	struct hvtrace_tracedat_writer *w);

/* --- an unfinished recording --------------------------------------------------- */

/* What hvtrace_tracedat_recover() found in a journal. */
struct hvtrace_tracedat_recover_stats {
	uint64_t pages;	      /* pages written into the file */
	uint64_t bad_records; /* damaged or cut-off records skipped */
	uint64_t bad_bytes;   /* bytes skipped with them */
	uint64_t bad_pages;   /* pages the writer refused (counted) */
	bool torn;	      /* the journal ended inside a record */
};

/**
 * hvtrace_tracedat_recover - write the trace.dat of a killed recording
 * @path: the recording's output file; its journal is @path".unfinished"
 * @st: what was found (may be NULL)
 *
 * A recorder keeps what it recorded in @path".unfinished" until @path is
 * complete.  This writes @path from that journal (the metadata as at the
 * start of the recording, every page up to about the last write-out) and
 * removes the journal.  Damaged records are skipped and counted.
 *
 * Return: 0; -ENOENT when there is no journal; -EBUSY while a recorder
 * still holds it; another negative errno (the journal is kept).
 */
HVTRACE_API int
hvtrace_tracedat_recover(const char *path,
			 struct hvtrace_tracedat_recover_stats *st);

/**
 * hvtrace_tracedat_unfinished - is @path an unfinished recording?
 *
 * Return: 1 when its journal is there and no recorder holds it (a killed
 * recording: recover it), 2 while a recorder holds it, 0 otherwise.
 */
HVTRACE_API int hvtrace_tracedat_unfinished(const char *path);

/* --- reading ----------------------------------------------------------------- */

/*
 * A reader of trace.dat files (versions 6 and 7, uncompressed), hvtrace's
 * own or trace-cmd's.  The file is untrusted: every offset and size is
 * checked, every page is walked with bounds before libtraceevent sees it,
 * and a malformed page is skipped and counted, never followed.
 */
struct hvtrace_tracedat_file;
struct tep_handle;

struct hvtrace_tracedat_event {
	unsigned int buffer;		/* 0: the top-level buffer */
	unsigned int cpu;
	uint64_t ts;			/* in the buffer's clock (ns) */
	/* events lost right before this one: > 0 the count, -1 an unknown
	 * number, 0 none */
	int64_t missed;
	const void *data;		/* the record, common fields first */
	uint32_t size;			/* bytes at data */
};

/** hvtrace_tracedat_open - open and index a trace.dat file */
HVTRACE_API int hvtrace_tracedat_open(const char *path,
				      struct hvtrace_tracedat_file **out);

/** hvtrace_tracedat_close - free; NULL is a no-op */
HVTRACE_API void hvtrace_tracedat_close(struct hvtrace_tracedat_file *f);

/** hvtrace_tracedat_tep - the file's libtraceevent handle (owned by @f) */
HVTRACE_API struct tep_handle *
hvtrace_tracedat_tep(const struct hvtrace_tracedat_file *f);

/** hvtrace_tracedat_version - the file version (6 or 7) */
HVTRACE_API int hvtrace_tracedat_version(const struct hvtrace_tracedat_file *f);

/** hvtrace_tracedat_nr_buffers - buffers, the top-level one included */
HVTRACE_API unsigned int
hvtrace_tracedat_nr_buffers(const struct hvtrace_tracedat_file *f);

/** hvtrace_tracedat_buffer_name - "" for the top-level buffer */
HVTRACE_API const char *
hvtrace_tracedat_buffer_name(const struct hvtrace_tracedat_file *f,
			     unsigned int i);

/** hvtrace_tracedat_buffer_cpus - CPUs of buffer @i */
HVTRACE_API unsigned int
hvtrace_tracedat_buffer_cpus(const struct hvtrace_tracedat_file *f,
			     unsigned int i);

/** hvtrace_tracedat_buffer_clock - trace clock of buffer @i */
HVTRACE_API const char *
hvtrace_tracedat_buffer_clock(const struct hvtrace_tracedat_file *f,
			      unsigned int i);

/** hvtrace_tracedat_cpustats - the CPU statistics text saved in the file */
HVTRACE_API const char *
hvtrace_tracedat_cpustats(const struct hvtrace_tracedat_file *f);

/**
 * hvtrace_tracedat_next - the next event of all buffers in time order
 * @ev: filled; ev->data stays valid until the next call
 *
 * Ties go to the lower buffer, then the lower CPU, as trace-cmd orders.
 *
 * Return: 1 with an event, 0 at the end, a negative errno.
 */
HVTRACE_API int hvtrace_tracedat_next(struct hvtrace_tracedat_file *f,
				      struct hvtrace_tracedat_event *ev);

/** hvtrace_tracedat_errors - malformed pages skipped so far */
HVTRACE_API uint64_t
hvtrace_tracedat_errors(const struct hvtrace_tracedat_file *f);

/**
 * hvtrace_tracedat_print_event - print @ev as trace-cmd report does
 *
 * "[BUFFER: ]<comm>-<pid> [<cpu>] <sec>.<usec>: <event>: <fields>\n",
 * preceded by "CPU:<cpu> [<n> EVENTS DROPPED]" when events were lost.
 */
HVTRACE_API int hvtrace_tracedat_print_event(struct hvtrace_tracedat_file *f,
					     const struct hvtrace_tracedat_event *ev,
					     FILE *out);

enum hvtrace_tracedat_report_flags {
	HVTRACE_TDAT_REPORT_STAT = 1u << 0,	/* statistics, no events */
};

/**
 * hvtrace_tracedat_report - print a whole file like trace-cmd report
 * @path:  the file
 * @out:   where to print
 * @flags: enum hvtrace_tracedat_report_flags
 *
 * Return: 0, or a negative errno (the file could not be read).
 */
HVTRACE_API int hvtrace_tracedat_report(const char *path, FILE *out,
					unsigned int flags);

/**
 * hvtrace_tracedat_report_files - print files in one time line like
 * trace-cmd report -i FILE -i FILE...
 * @paths: the files (a host file first, then its guests' files, whose
 *         TIME_SHIFT puts their times on the host's clock)
 * @n:     how many; one prints as hvtrace_tracedat_report() does
 * @out:   where to print
 * @flags: enum hvtrace_tracedat_report_flags (STAT: one file only)
 *
 * With several files: a "FILE: cpus=N" line for each, then the events of
 * all of them by time, each line led by its file's name.
 *
 * Return: 0, or a negative errno (a file could not be read).
 */
HVTRACE_API int hvtrace_tracedat_report_files(const char *const *paths,
					      unsigned int n, FILE *out,
					      unsigned int flags);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_TRACEDAT_H */
