// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the recorder -- one trace.dat from the host kernel and a
 * set of sources of one kind, behind struct hvt_tdat_rset_ops
 * (tracedat-local.h):
 *
 *   sources                                per CPU               writer
 *   kernel  trace_pipe_raw ------+
 *   areas   hvtrace_cpu_read_page +--> events --> packer --> sub-buffers
 *   remotes hvtraced's page feed -+   (ts on the host clock,  (one buffer
 *                                      ids unique in the file) per source)
 *
 * This file does what does not depend on the kind: the output file and
 * its top-level buffer, the host kernel (hvt_tdat_rkernel_*() in
 * record_common.c), the event patterns and the order of the steps, the
 * counters, and the file's metadata.  The sets read their sources:
 * record_area.c (areas the process opens as their owner, on reader
 * threads) and record_remote.c (remotes hvtraced owns, through its page
 * feed).  Areas and remotes go in separate recordings.
 *
 * Time: the file has one time base, the host's CLOCK_MONOTONIC.  The
 * kernel records with its "mono" trace clock; source timestamps are
 * writer clock values, converted by each set (an area's clock model, the
 * daemon's TO_HOST) and re-encoded by the packer.  A conversion that
 * would go backwards on a CPU is held at the previous value and counted,
 * so every CPU stays monotonic.  A source with no clock model (no time
 * sync) is the exception: its buffer keeps the writer's own times under a
 * clock named after them, never "mono", and stderr says so
 * (record_area.c, hvt_tdat_rec_own_clock()).  trace-cmd 3.1.6 merges
 * all buffers of a file in one time line, so this is what lines them
 * up; its own guest
 * options (TIME_SHIFT, TSC2NSEC, GUEST) act per file or on all buffers of
 * a file at once, and so cannot describe a remote buffer sitting next to
 * the kernel's in one file.  They tie two files instead: a guest kernel's
 * ring can be recorded into a file of its own on the guest's clock (a
 * second recording of this kind, hvt_tdat_record_create_kring()), which
 * then carries TRACEID and TIME_SHIFT, and this one TRACEID and GUEST
 * (trace_id, meta_hook; record_rkring.c).
 *
 * Event ids: all buffers of a trace.dat share one set of formats, so an id
 * must mean one event in the whole file.  Kernel ids are kept.  A remote
 * event keeps its id when that id is below 0x8000 and free, or already
 * carries the very same format (two sources of the same kind share
 * formats); otherwise it is given a free id below 0x8000 and its records
 * are rewritten.  The limit is KernelShark's: it keeps event ids in an
 * int16_t (struct kshark_entry), so larger ids lose their names and
 * fields there.  Records of ids no format describes get one reserved id,
 * saved as the event hvtrace:unknown_event.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/config.h>

#include "tracedat-local.h"

static void rec_free(struct hvtrace_tracedat_record *r)
{
	if (r->ops)
		r->ops->free(r->set);
	hvt_tdat_rkernel_close(r->kern);
	hvt_tdat_events_free(r->events);
	free(r->path);
	free(r->sock);
	hvt_tdat_ids_fini(&r->ids);
	free(r->pid_named);
	free(r);
}

/* A recording of @o, or with @g, of that guest kernel's CPUs alone. */
static int rec_create(const struct hvtrace_tracedat_record_opts *o,
		      const struct hvt_tdat_guest_rings *g,
		      struct hvtrace_tracedat_record **out)
{
	struct hvtrace_tracedat_record *r;
	uint32_t page_size;
	int ret;

	if (!o || !o->path || !*o->path || !out)
		return hvt_err(-EINVAL, "record: no output file (use -o FILE)");
	r = calloc(1, sizeof(*r));
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	ret = hvt_tdat_ids_init(&r->ids);
	r->pid_named = calloc(HVT_TDAT_PID_MAX / 8, 1);
	r->path = strdup(o->path);
	r->sock = o->socket ? strdup(o->socket) : NULL;
	if (!ret)
		ret = hvt_tdat_events_dup(o->events, &r->events);
	if (ret || !r->pid_named || !r->path || (o->socket && !r->sock)) {
		rec_free(r);
		return hvt_err(-ENOMEM, "out of memory");
	}
	r->flags = o->flags;

	page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	if (o->guest_ram || o->guest_pid > 0 || g) {
		struct hvt_tdat_kernel_opts ko = {
			.guest_ram = o->guest_ram,
			.guest_pid = o->guest_pid,
			.guest_formats = o->guest_formats,
			.guest_rings = g,
		};

		if (o->kernel) {
			rec_free(r);
			return hvt_err(-EINVAL,
				       "a guest kernel's ring is recorded "
				       "alone: its events would share the "
				       "top-level buffer and event ids with "
				       "the host kernel's; record them in "
				       "separate files");
		}
		ret = hvt_tdat_rkernel_open_guest(&ko, &r->kern);
		if (ret) {
			rec_free(r);
			return ret;
		}
		page_size = r->kern->subbuf_size;
	} else if (o->kernel) {
		ret = hvt_tdat_rkernel_open(o->kernel_instance, &r->kern);
		if (ret) {
			rec_free(r);
			return ret;
		}
		page_size = r->kern->subbuf_size;
	}
	ret = hvtrace_tracedat_writer_create(o->path, page_size, &r->w);
	if (ret) {
		rec_free(r);
		return ret;
	}
	/* What is recorded survives a kill: FILE.unfinished (journal.c). */
	ret = hvt_tdat_journal_open(r->w);
	if (ret) {
		hvtrace_tracedat_writer_abort(r->w);
		r->w = NULL;
		rec_free(r);
		return ret;
	}
	if (r->kern)
		ret = hvt_tdat_rkernel_add_buffer(r->kern, r->w, r->pid_named);
	else
		ret = hvtrace_tracedat_writer_add_buffer(r->w, "", "mono", 0,
							 page_size);
	if (ret < 0) {
		hvtrace_tracedat_writer_abort(r->w);
		r->w = NULL;
		rec_free(r);
		return ret;
	}
	*out = r;
	return 0;
}

HVTRACE_API int
hvtrace_tracedat_record_create(const struct hvtrace_tracedat_record_opts *o,
			       struct hvtrace_tracedat_record **out)
{
	return rec_create(o, NULL, out);
}

int hvt_tdat_record_create_kring(const char *path, const char *formats,
				 const struct hvt_tdat_guest_rings *g,
				 struct hvtrace_tracedat_record **out)
{
	struct hvtrace_tracedat_record_opts o = {
		.path = path,
		.guest_formats = formats,
	};

	return rec_create(&o, g, out);
}

HVTRACE_API int
hvtrace_tracedat_record_add_area(struct hvtrace_tracedat_record *r,
				 const char *spec, const char *name)
{
	if (!r || !spec)
		return hvt_err(-EINVAL, "record: no area given");
	if (r->kern && r->kern->guest)
		return hvt_err(-EINVAL, "a guest kernel's ring is recorded "
					"alone (its clock is the guest's)");
	return hvt_tdat_rarea_add(r, spec, name);
}

HVTRACE_API int
hvtrace_tracedat_record_add_remote(struct hvtrace_tracedat_record *r,
				   const char *remote, const char *name)
{
	if (!r || !remote)
		return hvt_err(-EINVAL, "record: no remote given");
	if (r->kern && r->kern->guest)
		return hvt_err(-EINVAL, "a guest kernel's ring is recorded "
					"alone (its clock is the guest's)");
	return hvt_tdat_rremote_add(r, remote, name);
}

HVTRACE_API int
hvtrace_tracedat_record_add_remote_kring(struct hvtrace_tracedat_record *r,
					 const char *remote,
					 struct hvtrace_daemon_kring *ring,
					 const char *formats)
{
	if (!r || !remote || !ring)
		return hvt_err(-EINVAL, "record: no guest kernel ring given");
	return hvt_tdat_rremote_add_kring(r, remote, ring, formats, NULL, 0);
}

HVTRACE_API int hvtrace_tracedat_record_add_remote_kring_pair(
	struct hvtrace_tracedat_record *r, const char *remote,
	struct hvtrace_daemon_kring *ring, const char *formats,
	const char *guest_path, int vmm_pid)
{
	if (!r || !remote || !ring)
		return hvt_err(-EINVAL, "record: no guest kernel ring given");
	if (!guest_path || !*guest_path)
		return hvt_err(-EINVAL, "record: no guest file given");
	return hvt_tdat_rremote_add_kring(r, remote, ring, formats, guest_path,
					  vmm_pid);
}

bool hvt_tdat_rec_selected(const struct hvtrace_tracedat_record *r,
			   const char *sys, const char *name)
{
	unsigned int i;

	if (!r->events[0])
		return true;
	for (i = 0; r->events[i]; i++)
		if (hvt_tdat_pattern_match(r->events[i], sys, name))
			return true;
	return false;
}

void hvt_tdat_rec_count(const struct hvtrace_tracedat_record *r,
			const char *sys, const char *name, unsigned int *hits)
{
	unsigned int p;

	for (p = 0; r->events[p]; p++)
		if (hvt_tdat_pattern_match(r->events[p], sys, name))
			hits[p]++;
}

void hvt_tdat_rec_idle(unsigned int max_wait_ms)
{
	uint64_t us = CONFIG_HVT_HOST_POLL_US;
	struct timespec ts;

	if (us > (uint64_t)max_wait_ms * 1000)
		us = (uint64_t)max_wait_ms * 1000;
	ts.tv_sec = (time_t)(us / 1000000);
	ts.tv_nsec = (long)(us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

HVTRACE_API int
hvtrace_tracedat_record_set_reader_threads(struct hvtrace_tracedat_record *r,
					   unsigned int n)
{
	if (!r)
		return hvt_err(-EINVAL, "record: NULL");
	if (r->started)
		return hvt_err(-EBUSY, "record: reader threads are set before "
				       "recording starts");
	if (n > HVT_TDAT_REC_MAX_THREADS)
		return hvt_err(-EINVAL,
			       "record: %u reader threads (at most %u)", n,
			       HVT_TDAT_REC_MAX_THREADS);
	r->want_threads = n;
	return 0;
}

HVTRACE_API unsigned int
hvtrace_tracedat_record_reader_threads(const struct hvtrace_tracedat_record *r)
{
	return r && r->started ? r->nr_readers : 0;
}

/* Patterns that selected nothing anywhere are errors. */
static int rec_check_hits(struct hvtrace_tracedat_record *r,
			  const unsigned int *hits)
{
	unsigned int i;

	for (i = 0; r->events[i]; i++) {
		if (hits[i])
			continue;
		if (r->ops)
			return r->ops->no_match(r->set, r->events[i]);
		return hvt_err(-ENOENT,
			       "no event matches '%s' (kernel events: see "
			       "available_events in tracefs; areas: see "
			       "hvtrace stat)",
			       r->events[i]);
	}
	return 0;
}

static int rec_metadata(struct hvtrace_tracedat_record *r, bool snapshot);

static uint64_t rec_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The journal's snapshot of the metadata, once the sources' formats and
 * ids are final: what recovery writes into a killed recording's file.
 * The metadata pass runs as at the end, its writer calls going into the
 * journal only.
 */
int hvt_tdat_rec_journal_meta(struct hvtrace_tracedat_record *r)
{
	int ret;

	hvt_tdat_journal_meta_begin(r->w);
	ret = rec_metadata(r, true);
	if (ret) {
		hvt_tdat_journal_meta_end(r->w);
		return ret;
	}
	ret = hvt_tdat_journal_meta_end(r->w);
	r->journal_write_ns = rec_now_ns() + HVT_TDAT_JOURNAL_WRITE_MS * 1000000ull;
	r->journal_sync_ns = rec_now_ns() + HVT_TDAT_JOURNAL_SYNC_MS * 1000000ull;
	return ret;
}

HVTRACE_API int hvtrace_tracedat_record_start(struct hvtrace_tracedat_record *r)
{
	unsigned int *hits, n = 0;
	int ret;

	if (!r)
		return hvt_err(-EINVAL, "record: NULL");
	if (r->started)
		return 0;
	if (!hvtrace_tracedat_record_nr_sources(r))
		return hvt_err(-EINVAL,
			       "record: nothing to record: give %s or --kernel",
			       r->ops ? r->ops->kind : "areas");
	while (r->events[n])
		n++;
	hits = calloc(n + 1, sizeof(*hits));
	if (!hits)
		return hvt_err(-ENOMEM, "out of memory");
	/* Ids first: every source's formats must be final before reading;
	 * kernel ids are taken, the sources' placed around them. */
	r->ids.unknown_id = 0;
	ret = hvt_tdat_ids_alloc(&r->ids, r->kern, &r->ids.unknown_id);
	if (!ret && r->ops)
		ret = r->ops->place(r->set, hits);
	if (!ret && r->kern)
		ret = hvt_tdat_rkernel_enable(r->kern, r->events, hits);
	if (!ret)
		ret = rec_check_hits(r, hits);
	free(hits);
	if (!ret && r->ops && r->ops->pre_start)
		ret = r->ops->pre_start(r->set);
	/* The kernel first: once a writer sees its events enabled, what it
	 * does next (a trace_marker write) must land in a running buffer. */
	if (!ret && r->kern)
		ret = hvt_tdat_rkernel_start(r->kern);
	r->nr_readers = 1;
	if (!ret && r->ops)
		ret = r->ops->start(r->set);
	if (!ret)
		r->started = true;
	if (!ret)
		ret = hvt_tdat_rec_journal_meta(r);
	return ret;
}

/* What was recorded so far into the journal, every
 * HVT_TDAT_JOURNAL_WRITE_MS, and on disk every HVT_TDAT_JOURNAL_SYNC_MS. */
static int rec_journal_tick(struct hvtrace_tracedat_record *r)
{
	uint64_t now = rec_now_ns();
	bool durable;

	if (now < r->journal_write_ns)
		return 0;
	durable = now >= r->journal_sync_ns;
	r->journal_write_ns = now + HVT_TDAT_JOURNAL_WRITE_MS * 1000000ull;
	if (durable)
		r->journal_sync_ns = now + HVT_TDAT_JOURNAL_SYNC_MS * 1000000ull;
	return hvt_tdat_journal_sync(r->w, durable);
}

static int rec_poll(struct hvtrace_tracedat_record *r, unsigned int max_wait_ms);

HVTRACE_API int hvtrace_tracedat_record_poll(struct hvtrace_tracedat_record *r,
					     unsigned int max_wait_ms)
{
	int ret, jret;

	if (!r || !r->started)
		return hvt_err(-EINVAL, "record: not started");
	ret = rec_poll(r, max_wait_ms);
	jret = rec_journal_tick(r);
	return ret < 0 ? ret : jret ? jret : ret;
}

static int rec_poll(struct hvtrace_tracedat_record *r, unsigned int max_wait_ms)
{
	int kn = 0;

	if (r->kern) {
		kn = hvt_tdat_rkernel_read(r->kern);
		if (kn < 0)
			return kn;
	}
	if (r->ops)
		return r->ops->poll(r->set, kn, max_wait_ms);
	/* A guest kernel's ring: up to its newest event. */
	if (r->kern && r->kern->guest)
		return kn > 0;
	/* Only the kernel: until stopped. */
	if (!kn && max_wait_ms)
		hvt_tdat_rec_idle(max_wait_ms);
	return 1;
}

HVTRACE_API unsigned int
hvtrace_tracedat_record_nr_sources(const struct hvtrace_tracedat_record *r)
{
	if (!r)
		return 0;
	return !!r->kern + (r->ops ? r->ops->nr_sources(r->set) : 0);
}

HVTRACE_API int
hvtrace_tracedat_record_source_stats(const struct hvtrace_tracedat_record *r,
				     unsigned int i,
				     struct hvtrace_tracedat_source_stats *st)
{
	if (!r || !st || i >= hvtrace_tracedat_record_nr_sources(r))
		return hvt_err(-EINVAL, "record: no source %u", i);
	/* Source indexes: the kernel first. */
	if (r->kern && i == 0)
		*st = r->kern->st;
	else
		*st = *r->ops->stats(r->set, i - !!r->kern);
	return 0;
}

HVTRACE_API int hvtrace_tracedat_record_stop(struct hvtrace_tracedat_record *r)
{
	int ret = 0;

	if (!r)
		return hvt_err(-EINVAL, "record: NULL");
	if (r->stopped)
		return 0;
	r->stopped = true;
	/* The kernel stops producing; it is read to the end below. */
	hvt_tdat_rkernel_stop(r->kern);
	if (r->ops)
		r->ops->stop(r->set);
	if (r->kern)
		ret = hvt_tdat_rkernel_drain(r->kern);
	if (r->ops)
		ret = r->ops->drain(r->set, ret);
	return ret;
}

static int rec_metadata(struct hvtrace_tracedat_record *r, bool snapshot)
{
	uint32_t cpus = 0, sb = 4096;
	int ret;

	if (r->kern) {
		sb = r->kern->subbuf_size > sb ? r->kern->subbuf_size : sb;
		cpus = r->kern->nr_cpus;
	}
	if (r->ops)
		r->ops->geometry(r->set, &sb, &cpus);
	/* header_page / header_event: the kernel's own, else ours. */
	ret = hvt_tdat_rec_set_headers(r->w, r->kern, sb);
	/* Formats: the kernel's (seen, enabled, ftrace), then the sources'. */
	if (!ret && r->kern)
		ret = hvt_tdat_rkernel_add_formats(r->kern);
	if (!ret && r->ops)
		ret = r->ops->formats(r->set);
	/* A snapshot has it in case records of unknown ids come later. */
	if (!ret && (r->ids.unknown_total || (snapshot && r->ids.unknown_id)))
		ret = hvt_tdat_rec_add_unknown(r->w, r->ids.unknown_id);
	if (!ret && r->kern)
		ret = hvt_tdat_rkernel_add_files(r->kern);
	/* Options: the kernel's trace clock if there is one, else mono. */
	if (!ret)
		ret = hvt_tdat_rec_add_options(r->w, r->kern);
	/* CPU statistics: the kernel's (the top-level buffer) first. */
	if (!ret && r->kern)
		ret = hvt_tdat_rkernel_add_cpustats(r->kern);
	if (!ret && r->ops)
		ret = r->ops->cpustats(r->set);
	if (!ret)
		ret = hvt_tdat_rec_add_cpucount(r->w, cpus);
	/* A file of a host/guest pair: its trace id, and what the pairing
	 * adds (record_rkring.c). */
	if (!ret && r->trace_id)
		ret = hvtrace_tracedat_writer_add_option(
			r->w, HVT_TDAT_OPT_TRACEID, &r->trace_id,
			sizeof(r->trace_id));
	if (!ret && r->meta_hook)
		ret = r->meta_hook(r->meta_arg, r->w);
	return ret;
}

HVTRACE_API int
hvtrace_tracedat_record_finish(struct hvtrace_tracedat_record *r)
{
	int ret;

	if (!r)
		return hvt_err(-EINVAL, "record: NULL");
	ret = hvtrace_tracedat_record_stop(r);
	if (!ret)
		ret = rec_metadata(r, false);
	/* The kernel's settings back (and a created instance gone) before
	 * the file is complete. */
	hvt_tdat_rkernel_close(r->kern);
	r->kern = NULL;
	ret = hvt_tdat_rec_end(r->w, ret);
	r->w = NULL;
	rec_free(r);
	return ret;
}

HVTRACE_API void
hvtrace_tracedat_record_abort(struct hvtrace_tracedat_record *r)
{
	if (!r)
		return;
	hvt_tdat_rkernel_stop(r->kern);
	if (r->ops)
		r->ops->restore(r->set);
	hvtrace_tracedat_writer_abort(r->w);
	r->w = NULL;
	rec_free(r);
}
