// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the source set of trace areas a recording reads (record.c
 * does the rest: the file, the kernel, the steps, the metadata).
 *
 * Areas are opened by this process as their owner (or read-only with
 * HVTRACE_TDAT_REC_NO_CONTROL).  Area timestamps are writer clock values,
 * converted with the area's clock model (hvtrace_area_to_host_ns(), fed
 * by time-sync samples taken through the control page, the first ones
 * before the first page is converted).  The area's formats are those of
 * its writer kind, placed under file-wide ids (record.c).  An area is
 * done once its writer stopped (or died) and a pass found nothing more,
 * or when it was re-formatted.
 *
 * Reader threads: an area's CPU buffers are independent, and so are the
 * packers and temporary files of the writer's CPUs, so the CPUs of all
 * areas are dealt out to reader threads (the calling thread being the
 * first).  Each poll is one pass: the calling thread does what needs the
 * whole recording (writer states, time sync; the kernel in record.c),
 * then every thread reads and packs its CPUs, then the calling thread
 * folds what the threads counted into the sources' counters and names
 * the pids they met in CPU order.  A CPU is always read by the same
 * thread, page after page, so the file is the same byte for byte
 * whatever the number of threads; the clock models only change between
 * passes.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvt_util.h>
#include <hvtrace/page.h>
#include <hvtrace-loopback.h>

#include "tracedat-local.h"

#define RC_PAGES_PER_POLL 64u /* per CPU, for fairness */
/*
 * A writer that had stopped when the pass began adds nothing: its CPUs
 * are read in passes of up to 4 MiB each (a post-mortem recording of
 * 4 MiB rings takes one pass, not 16).  Each pass costs the reader
 * threads a wakeup and a wait for the slowest, about 0.15 ms with two
 * threads here, and the calling thread's turn between passes only
 * matters while something is still being written.
 */
#define RC_STOPPED_BYTES_PER_POLL (4u << 20)
#define RC_AUTO_THREADS	  8u  /* reader threads at most, when not asked */
/* Time-sync samples: every 10 ms at first, then twice as far apart each
 * time, up to every 200 ms: samples spread over the first second pin the
 * rate of the writer's clock while the recording is young. */
#define RC_SYNC_FIRST_NS  10000000ULL
#define RC_SYNC_PERIOD_NS 200000000ULL
#define RC_SYNC_GIVE_UP	  5u

/*
 * What a reader thread changes while it reads one CPU of an area: counter
 * deltas (the packer's and ours), host pids met that the source has not
 * named yet, and the result of the pass.  Folded into the source by the
 * calling thread between passes.
 */
struct HVT_CACHELINE_ALIGNED rc_cpu {
	struct hvtrace_tracedat_source_stats d;
	struct hvt_item_index ix;  /* of the page read last */
	struct hvt_tdat_pend pend; /* pids to name, in the order met */
	int ret;		   /* pages read in the pass, or -errno */
	char err[256];
};

/* CPU @cpu of area @s: one job of the reader threads. */
struct rc_job {
	struct rc_src *s;
	uint32_t cpu;
};

/* An area being recorded. */
struct rc_src {
	struct hvt_tdat_rset *r;
	char name[64];
	char spec[512];
	int buffer; /* writer buffer index */
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	struct hvt_tdat_rcpu *cpu;
	struct rc_cpu *rc; /* per CPU: what the reader thread changes */
	bool active;	   /* read in this pass */

	struct hvtrace_area *area;
	struct hvtrace_area_info info;
	struct hvtrace_catalog cat; /* with the ids used in the file */
	uint16_t *idmap;	     /* writer id -> file id */
	bool stop_seen;
	bool pass_stop; /* stop_seen before this pass */
	bool finished;
	bool gone; /* re-formatted or unreadable */
	uint64_t next_sync;
	uint64_t sync_period; /* ns to the next sample, RC_SYNC_FIRST_NS.. */
	unsigned int sync_fail;
	bool sync_off;
	/* No clock model when the recording started (no time sync): the
	 * buffer keeps the writer's raw timestamps, under clock_name. */
	bool own_clock;
	const char *clock_name;
	struct hvt_tdat_pids pids; /* host pids named (loopback) */

	struct hvtrace_tracedat_source_stats st;
};

/* The areas of a recording (record.c sees it opaque). */
struct hvt_tdat_rset {
	struct hvtrace_tracedat_record *rec;
	struct hvtrace_tracedat_writer *w;
	unsigned int flags;
	struct rc_src *src[HVT_TDAT_REC_MAX_SOURCES];
	unsigned int nr_src;

	/* Reader threads: job j is CPU j of the flattened list of all
	 * areas' CPUs (common/workers.c). */
	struct hvt_util_workers *readers;
	struct rc_job *jobs;
	unsigned int nr_jobs;
};

static void rc_free_src(struct rc_src *s)
{
	uint32_t c;

	if (!s)
		return;
	for (c = 0; s->cpu && c < s->nr_cpus; c++)
		hvt_tdat_rcpu_fini(&s->cpu[c]);
	for (c = 0; s->rc && c < s->nr_cpus; c++) {
		hvt_tdat_pend_fini(&s->rc[c].pend);
		free(s->rc[c].ix.off);
	}
	free(s->cpu);
	free(s->rc);
	free(s->idmap);
	hvt_tdat_pids_fini(&s->pids);
	hvtrace_catalog_free(&s->cat);
	hvtrace_area_close(s->area);
	free(s);
}

static void rc_threads_stop(struct hvt_tdat_rset *r);
static int rc_threads_start(struct hvt_tdat_rset *r);

static void rc_set_free(struct hvt_tdat_rset *r)
{
	unsigned int i;

	rc_threads_stop(r);
	for (i = 0; i < r->nr_src; i++)
		rc_free_src(r->src[i]);
	free(r);
}

static int rc_src_alloc_cpus(struct rc_src *s)
{
	uint32_t c;
	int ret;

	s->cpu = hvt_calloc_lines(s->nr_cpus, sizeof(*s->cpu));
	s->rc = hvt_calloc_lines(s->nr_cpus, sizeof(*s->rc));
	if (!s->cpu || !s->rc)
		return -ENOMEM;
	for (c = 0; c < s->nr_cpus; c++) {
		struct hvt_item_index *ix = &s->rc[c].ix;

		ret = hvt_tdat_rcpu_init(&s->cpu[c], s->r->w, &s->buffer, c,
					 s->subbuf_size, &s->rc[c].d);
		if (ret)
			return ret;
		ix->cap =
			hvt_item_index_cap(s->subbuf_size - HVT_PAGE_HDR_SIZE);
		ix->off = calloc(ix->cap, sizeof(*ix->off));
		if (!ix->off)
			return -ENOMEM;
	}
	s->st.nr_cpus = s->nr_cpus;
	return 0;
}

static bool rc_name_taken(const struct hvt_tdat_rset *r, const char *name)
{
	unsigned int i;

	for (i = 0; i < r->nr_src; i++)
		if (!strcmp(r->src[i]->name, name))
			return true;
	return false;
}

static const struct hvt_tdat_rset_ops rc_ops;

int hvt_tdat_rarea_add(struct hvtrace_tracedat_record *rec, const char *spec,
		       const char *name)
{
	struct hvt_tdat_rset *r;
	struct rc_src *s;
	unsigned int flags = HVTRACE_OPEN_CONTROL, i;
	char base[64];
	int ret;

	if (rec->started)
		return hvt_err(-EBUSY, "record: areas must be added before "
				       "recording starts");
	if (rec->ops && rec->ops != &rc_ops)
		return hvt_err(-EINVAL, "record: areas and remotes of hvtraced "
					"go in separate recordings");
	if (!rec->ops) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return hvt_err(-ENOMEM, "out of memory");
		r->rec = rec;
		r->w = rec->w;
		r->flags = rec->flags;
		rec->set = r;
		rec->ops = &rc_ops;
	}
	r = rec->set;
	if (r->nr_src + !!rec->kern >= HVT_TDAT_REC_MAX_SOURCES)
		return hvt_err(-ENOSPC, "record: more than %u sources",
			       HVT_TDAT_REC_MAX_SOURCES);
	s = calloc(1, sizeof(*s));
	if (!s)
		return hvt_err(-ENOMEM, "out of memory");
	s->r = r;
	snprintf(s->spec, sizeof(s->spec), "%s", spec);
	if (r->flags & HVTRACE_TDAT_REC_NO_CONTROL)
		flags = 0;
	ret = hvtrace_area_open_spec(spec, flags, &s->area);
	if (ret) {
		if (ret == -EACCES && flags)
			hvt_err(ret,
				"cannot open %s for writing its control page "
				"(%s); run as the area's owner, or record it "
				"read-only with --no-control",
				spec, hvtrace_last_error());
		rc_free_src(s);
		return ret;
	}
	hvtrace_area_get_info(s->area, &s->info);
	s->nr_cpus = s->info.nr_cpus;
	s->subbuf_size = s->info.subbuf_size;

	/* Buffer name: the given one, else the writer's, made unique. */
	if (name && *name) {
		if (rc_name_taken(r, name) || strchr(name, '\n')) {
			rc_free_src(s);
			return hvt_err(-EEXIST,
				       "buffer name '%s' is used twice: name "
				       "each area differently",
				       name);
		}
		snprintf(s->name, sizeof(s->name), "%s", name);
	} else {
		snprintf(base, sizeof(base), "%s",
			 s->info.name[0] ? s->info.name : "remote");
		for (i = 0; base[i]; i++)
			if (base[i] == '\n' || base[i] == ' ')
				base[i] = '_';
		snprintf(s->name, sizeof(s->name), "%s", base);
		for (i = 2; rc_name_taken(r, s->name) && i < 1000; i++)
			snprintf(s->name, sizeof(s->name), "%.50s-%u", base, i);
	}
	snprintf(s->st.name, sizeof(s->st.name), "%s", s->name);

	ret = rc_src_alloc_cpus(s);
	if (!ret)
		ret = hvtrace_catalog_add_writer(&s->cat, s->info.writer_kind);
	s->idmap = malloc(65536 * sizeof(*s->idmap));
	if (ret || !s->idmap) {
		rc_free_src(s);
		return hvt_err(-ENOMEM, "out of memory");
	}
	ret = hvtrace_tracedat_writer_add_buffer(r->w, s->name, "mono",
						 s->nr_cpus, s->subbuf_size);
	if (ret >= 0 && s->info.writer_kind == HVT_WRITER_HYP &&
	    hvtrace_tracedat_writer_add_cmdline(r->w, HVT_HYP_PID,
						HVT_HYP_COMM)) {
		rc_free_src(s);
		return hvt_err(-ENOMEM, "out of memory");
	}
	if (ret < 0) {
		rc_free_src(s);
		return ret;
	}
	s->buffer = ret;
	r->src[r->nr_src++] = s;
	if (s->info.writer_kind == HVT_WRITER_LOOPBACK)
		/* A local writer: a host process, named from /proc. */
		hvt_tdat_pids_note(&s->pids, r->w, rec->pid_named,
				   (int)s->info.writer_pid);
	/* Source indexes: the kernel first. */
	return (int)(r->nr_src - 1 + !!rec->kern);
}

/* Give the area's formats ids that mean one event in the whole file. */
static int rc_assign_ids(struct hvt_tdat_rset *r, struct rc_src *s)
{
	unsigned int i;
	uint32_t id;
	char *t;
	int ret;

	struct hvt_tdat_ids *ids = &r->rec->ids;
	struct hvt_tdat_rkernel *kern = r->rec->kern;

	for (i = 0; i < 65536; i++)
		s->idmap[i] = (uint16_t)ids->unknown_id;
	for (i = 0; i < s->cat.nr; i++) {
		struct hvtrace_catalog_format *f = &s->cat.fmt[i];
		uint32_t want = f->id;

		if (want > 0xffff)
			continue;
		/* The same format already placed by another area? */
		id = hvt_tdat_ids_find(ids, f->system, f->text, &t);
		if (id) {
			free(f->text);
			f->text = t;
			s->idmap[want] = (uint16_t)id;
			/* Only the first owner writes it. */
			f->id = id | 0x80000000u;
			continue;
		}
		id = want;
		if (hvt_tdat_ids_used(ids, kern, id)) {
			ret = hvt_tdat_ids_alloc(ids, kern, &id);
			if (ret)
				return ret;
			t = hvt_tdat_format_set_id(f->text, id);
			if (!t)
				return hvt_err(-ENOMEM, "out of memory");
			free(f->text);
			f->text = t;
			f->id = id;
		}
		ids->text[id] = f->text;
		ids->sys[id] = f->system;
		s->idmap[want] = (uint16_t)id;
	}
	return 0;
}

/* Take up to @n time-sync samples; false if the writer did not answer. */
static bool rc_writer_dead(const struct rc_src *s);

static bool rc_sync(struct rc_src *s, unsigned int n, int timeout_ms)
{
	struct hvtrace_clock_map map;
	unsigned int i;
	bool any = false;

	if ((s->r->flags & HVTRACE_TDAT_REC_NO_CONTROL) && !s->sync_off &&
	    s->info.writer_kind == HVT_WRITER_LOOPBACK && s->info.writer_pid &&
	    !rc_writer_dead(s)) {
		/* A live loopback writer runs on this host: its clock is
		 * ours to read, with no control page (as stream does). */
		for (i = 0; i < n; i++)
			any |= !hvtrace_area_sync_local(s->area);
	} else if (!(s->r->flags & HVTRACE_TDAT_REC_NO_CONTROL) &&
		   !s->sync_off) {
		for (i = 0; i < n; i++) {
			if (hvtrace_area_sync(s->area, timeout_ms))
				break;
			any = true;
		}
		if (any) {
			s->sync_fail = 0;
		} else if (++s->sync_fail >= RC_SYNC_GIVE_UP) {
			s->sync_off = true;
		}
	}
	/* The bound where the model stands: at the newest sample (at
	 * writer time 0 a counter's rate error alone is hours). */
	hvtrace_area_clock_map(s->area, &map);
	hvtrace_area_to_host_ns(s->area, map.base_writer, &s->st.sync_err_ns);
	s->sync_period = !s->sync_period ? RC_SYNC_FIRST_NS
			 : s->sync_period * 2 < RC_SYNC_PERIOD_NS
			       ? s->sync_period * 2
			       : RC_SYNC_PERIOD_NS;
	s->next_sync = hvt_host_now_ns() + s->sync_period;
	return any;
}

static int rc_place(struct hvt_tdat_rset *r, unsigned int *hits)
{
	unsigned int i, j;
	int ret;

	for (i = 0; i < r->nr_src; i++) {
		struct rc_src *s = r->src[i];

		ret = rc_assign_ids(r, s);
		if (ret)
			return ret;
		for (j = 0; j < s->cat.nr; j++)
			if (s->cat.bit[j] >= 0)
				hvt_tdat_rec_count(r->rec, s->cat.fmt[j].system,
						   s->cat.fmt[j].name, hits);
	}
	return 0;
}

static int rc_no_match(struct hvt_tdat_rset *r, const char *pat)
{
	(void)r;
	return hvt_err(-ENOENT,
		       "no event matches '%s' (kernel events: see "
		       "available_events in tracefs; areas: see hvtrace stat)",
		       pat);
}

/*
 * Rooms in the file for an area whose writer has stopped: each CPU's
 * pages are those its ring holds now, so the writer can put them straight
 * into their place (write.c, "Rooms").  The ring's counters are shared
 * memory: only a hint, bounded by the ring; a CPU that brings more is
 * still recorded whole.
 */
static void rc_rooms(struct rc_src *s)
{
	uint32_t c;
	int held;

	for (c = 0; c < s->nr_cpus; c++) {
		held = hvtrace_cpu_held_subbufs(s->area, (int)c);
		if (held <= 0)
			continue;
		hvt_tdat_writer_set_room(
			s->r->w, s->buffer, c,
			hvt_tdat_room_bytes((uint64_t)held, s->subbuf_size));
	}
}

/*
 * A writer with no clock model once the first samples were asked for:
 * its times cannot be put on the host's clock, so the buffer keeps them
 * as the writer wrote them, labelled with a clock that is not the host's
 * (never "mono"), and stderr says so, and why, once.  No later sample
 * changes that: the buffer has one time base.
 */
static int rc_own_clock(struct rc_src *s, bool running)
{
	struct hvt_clock_affine clk;
	const char *why;

	hvt_area_clock_affine(s->area, &clk);
	if (clk.synced)
		return 0;
	s->own_clock = true;
	s->sync_off = true;
	s->clock_name = hvt_clock_own_name(s->info.clock_id);
	s->st.sync_err_ns = UINT64_MAX;
	if (s->r->flags & HVTRACE_TDAT_REC_NO_CONTROL)
		why = "--read-only: no time sync through the control page";
	else if (!running)
		why = "its writer had stopped: no time sync";
	else
		why = "its writer did not answer time sync";
	fprintf(stderr,
		"hvtrace record: '%s': times are the writer's own (buffer "
		"clock '%s'), not the host's CLOCK_MONOTONIC (%s)\n",
		s->name, s->clock_name, why);
	return hvt_tdat_writer_set_buffer_clock(s->r->w, s->buffer,
						s->clock_name);
}

/* After the kernel started: time sync, events on, rooms, reader
 * threads. */
static int rc_start(struct hvt_tdat_rset *r)
{
	unsigned int i, j;
	int ret;

	for (i = 0; i < r->nr_src; i++) {
		struct rc_src *s = r->src[i];
		uint32_t state = 0;

		/* The clock model before the first page is converted. */
		hvtrace_area_writer_state(s->area, &state, NULL);
		if (state == HVT_STATE_RUNNING) {
			rc_sync(s, 8, 20);
		} else {
			s->sync_off = true;
			rc_rooms(s);
		}
		ret = rc_own_clock(s, state == HVT_STATE_RUNNING);
		if (ret)
			return ret;
		if (r->flags & HVTRACE_TDAT_REC_NO_CONTROL)
			continue;
		for (j = 0; j < s->cat.nr; j++) {
			if (s->cat.bit[j] < 0 ||
			    !hvt_tdat_rec_selected(r->rec, s->cat.fmt[j].system,
						   s->cat.fmt[j].name))
				continue;
			ret = hvtrace_area_set_event(
				s->area, (unsigned int)s->cat.bit[j], true);
			if (ret)
				return ret;
		}
		hvtrace_area_set_tracing(s->area, true);
	}
	ret = hvt_tdat_writer_lay_rooms(r->w);
	return ret ? ret : rc_threads_start(r);
}

/* A loopback record's pid, for the names. */
struct rc_note {
	struct rc_cpu *x;
	const struct hvt_tdat_pids *pids;
};

static void rc_note_pid(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct rc_note *n = ctx;
	int32_t pid;

	(void)len;
	memcpy(&pid, rec + 4, 4);
	hvt_tdat_pend_note(&n->x->pend, n->pids, pid);
}

/* One page read from CPU @cpu's buffer into the file (the page packer
 * of record_common.c, with the area's clock model as it is now). */
static int rc_area_page(struct rc_src *s, uint32_t cpu, uint8_t *page,
			const struct hvtrace_page_info *info)
{
	struct hvt_tdat_rcpu *c = &s->cpu[cpu];
	struct rc_cpu *x = &s->rc[cpu];
	bool loopback = s->info.writer_kind == HVT_WRITER_LOOPBACK;
	struct rc_note note = {x, &s->pids};
	struct hvt_clock_affine clk;
	struct hvt_tdat_page pg = {
		.data = page + HVT_PAGE_HDR_SIZE,
		.ix = &x->ix,
		.clk = &clk,
		.idmap = s->idmap,
		.unknown_id = (uint16_t)s->r->rec->ids.unknown_id,
		.note = loopback ? rc_note_pid : NULL,
		.note_ctx = &note,
	};
	uint64_t commit, end_ts;
	int ret;

	memcpy(&pg.ts, page, 8);
	memcpy(&commit, page + HVT_PAGE_COMMIT_OFF, 8);
	pg.size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	if (pg.size > s->subbuf_size - HVT_PAGE_HDR_SIZE) {
		x->d.errors++;
		return 0;
	}
	if (info->lost_events) {
		ret = hvt_tdat_rcpu_put_lost(c, info->lost_events,
					     info->lost_events != UINT64_MAX);
		if (ret)
			return ret;
	}
	if (s->info.writer_kind == HVT_WRITER_HYP)
		hvt_tdat_hyp_pids(page + HVT_PAGE_HDR_SIZE, pg.size, pg.ts);
	hvt_area_clock_affine(s->area, &clk);
	if (s->own_clock)
		clk.identity = true; /* the writer's raw timestamps */
	return hvt_tdat_rcpu_put_page(c, &pg, &end_ts);
}

/* Read what CPU @cpu of @s has pending (on a reader thread). */
static void rc_read_cpu(struct rc_src *s, uint32_t cpu, uint8_t *page)
{
	struct hvtrace_page_info info;
	struct rc_cpu *x = &s->rc[cpu];
	unsigned int k, max = RC_PAGES_PER_POLL;
	int ret = 0;

	if (s->stop_seen && RC_STOPPED_BYTES_PER_POLL / s->subbuf_size > max)
		max = RC_STOPPED_BYTES_PER_POLL / s->subbuf_size;
	for (k = 0; k < max; k++) {
		ret = hvt_cpu_read_page_indexed(s->area, (int)cpu, page,
						s->subbuf_size, &info, &x->ix);
		if (ret <= 0)
			break;
		ret = rc_area_page(s, cpu, page, &info);
		if (ret)
			break;
	}
	if (ret < 0) {
		/* Error texts are per thread: keep it for the caller. */
		snprintf(x->err, sizeof(x->err), "%s", hvtrace_last_error());
		x->ret = ret;
	} else {
		x->ret = (int)k;
	}
}

/* Job @j of a pass (on a reader thread): one CPU of an active area. */
static void rc_job(void *ctx, unsigned int j, void *page)
{
	struct hvt_tdat_rset *r = ctx;

	if (r->jobs[j].s->active)
		rc_read_cpu(r->jobs[j].s, r->jobs[j].cpu, page);
}

/*
 * After a pass (calling thread): the CPUs' counters into the source's,
 * their pids named in CPU order.  Returns the pages read, or the first
 * error of a CPU, with its text as the last error.
 */
static int rc_fold(struct rc_src *s)
{
	int ret = 0, n = 0;
	uint32_t c;

	for (c = 0; c < s->nr_cpus; c++) {
		struct rc_cpu *x = &s->rc[c];

		s->st.events += x->d.events;
		s->st.lost += x->d.lost;
		s->st.lost_unknown += x->d.lost_unknown;
		s->st.bytes += x->d.bytes;
		s->st.errors += x->d.errors;
		s->st.unknown += x->d.unknown;
		s->st.clamped += x->d.clamped;
		s->r->rec->ids.unknown_total += x->d.unknown;
		memset(&x->d, 0, sizeof(x->d));
		hvt_tdat_pend_fold(&x->pend, &s->pids, s->r->w,
				   s->r->rec->pid_named);
		if (x->ret < 0 && !ret) {
			ret = hvt_err(x->ret, "%s", x->err);
		} else if (x->ret > 0) {
			n += x->ret;
		}
		x->ret = 0;
	}
	return ret ? ret : n;
}

static void rc_threads_stop(struct hvt_tdat_rset *r)
{
	hvt_util_workers_stop(r->readers);
	r->readers = NULL;
	free(r->jobs);
	r->jobs = NULL;
}

static int rc_threads_start(struct hvt_tdat_rset *r)
{
	uint32_t sb = 0, c;
	unsigned int i;
	int ret;

	for (i = 0; i < r->nr_src; i++) {
		r->nr_jobs += r->src[i]->nr_cpus;
		if (r->src[i]->subbuf_size > sb)
			sb = r->src[i]->subbuf_size;
	}
	r->jobs = calloc(r->nr_jobs ? r->nr_jobs : 1, sizeof(*r->jobs));
	if (!r->jobs)
		return hvt_err(-ENOMEM, "out of memory");
	r->nr_jobs = 0;
	for (i = 0; i < r->nr_src; i++) {
		for (c = 0; c < r->src[i]->nr_cpus; c++) {
			r->jobs[r->nr_jobs].s = r->src[i];
			r->jobs[r->nr_jobs++].cpu = c;
		}
	}
	ret = hvt_util_workers_start(r->rec->want_threads, RC_AUTO_THREADS,
				     r->nr_jobs ? r->nr_jobs : 1, sb,
				     &r->readers);
	if (ret)
		return hvt_err(ret, "cannot start the reader threads: %s",
			       strerror(-ret));
	r->rec->nr_readers = hvt_util_workers_nr(r->readers);
	return 0;
}

static bool rc_writer_dead(const struct rc_src *s)
{
	/* Only a local writer's pid means something here. */
	if (s->info.writer_kind != HVT_WRITER_LOOPBACK || !s->info.writer_pid)
		return false;
	return kill((pid_t)s->info.writer_pid, 0) && errno == ESRCH;
}

static int rc_poll(struct hvt_tdat_rset *r, int kernel_events,
		   unsigned int max_wait_ms)
{
	unsigned int i, areas = 0, done = 0;
	int total = kernel_events, ret;
	uint64_t now = hvt_host_now_ns();

	/* What needs the whole recording, before the threads read. */
	for (i = 0; i < r->nr_src; i++) {
		struct rc_src *s = r->src[i];
		uint32_t state = 0;

		areas++;
		s->active = false;
		if (s->finished) {
			done++;
			continue;
		}
		if (hvtrace_area_writer_state(s->area, &state, NULL)) {
			/* Re-formatted: the data is not ours now. */
			s->gone = true;
			s->finished = true;
			s->st.finished = true;
			s->st.errors++;
			fprintf(stderr,
				"hvtrace record: the writer of '%s' "
				"re-formatted its area; stopped "
				"recording it\n",
				s->name);
			done++;
			continue;
		}
		/* Stopped before this pass: done once a pass finds nothing. */
		s->active = true;
		s->pass_stop = s->stop_seen;
		if (state == HVT_STATE_STOPPED || rc_writer_dead(s))
			s->stop_seen = true;
		if (!s->stop_seen && !s->sync_off && now >= s->next_sync)
			rc_sync(s, 1, 2);
	}
	hvt_util_workers_pass(r->readers, r->nr_jobs, rc_job, r);
	for (i = 0; i < r->nr_src; i++) {
		struct rc_src *s = r->src[i];

		if (!s->active)
			continue;
		ret = rc_fold(s);
		if (ret < 0) {
			/* An area that cannot be read is this area's
			 * problem, not the recording's. */
			s->st.errors++;
			s->finished = s->st.finished = true;
			fprintf(stderr, "hvtrace record: '%s': %s\n", s->name,
				hvtrace_last_error());
			done++;
			continue;
		}
		total += ret;
		if (s->pass_stop && ret == 0) {
			s->finished = s->st.finished = true;
			done++;
		}
	}
	if (areas && done == areas)
		return 0;
	if (!total && max_wait_ms)
		hvt_tdat_rec_idle(max_wait_ms);
	return 1;
}

static unsigned int rc_nr_sources(const struct hvt_tdat_rset *r)
{
	return r->nr_src;
}

static const struct hvtrace_tracedat_source_stats *
rc_stats(const struct hvt_tdat_rset *r, unsigned int i)
{
	return &r->src[i]->st;
}

static int rc_cpustats(struct hvt_tdat_rset *r)
{
	unsigned int i;
	uint32_t c;
	int ret = 0;

	for (i = 0; i < r->nr_src && !ret; i++) {
		struct rc_src *s = r->src[i];

		ret = hvt_tdat_rec_add_buffer_stat(
			r->w, s->name, s->own_clock ? s->clock_name : NULL,
			s->st.sync_err_ns);
		for (c = 0; c < s->nr_cpus && !ret; c++) {
			struct hvtrace_cpu_stats st;
			struct hvt_tdat_cpustat cs = {.cpu = c};

			if (hvtrace_cpu_get_stats(s->area, (int)c, &st))
				continue;
			cs.entries = st.entries;
			cs.overrun = st.overrun + st.skipped;
			cs.bytes = st.bytes;
			cs.oldest_ns = s->own_clock
					       ? st.oldest_ts
					       : hvtrace_area_to_host_ns(
							 s->area, st.oldest_ts,
							 NULL);
			cs.now_ns = s->own_clock ? st.now_ts
						 : hvtrace_area_to_host_ns(
							   s->area, st.now_ts,
							   NULL);
			cs.dropped = st.dropped;
			cs.read = st.read;
			ret = hvt_tdat_rec_add_cpustat(r->w, &cs);
		}
	}
	return ret;
}

static void rc_geometry(struct hvt_tdat_rset *r, uint32_t *sb, uint32_t *cpus)
{
	unsigned int i;

	for (i = 0; i < r->nr_src; i++) {
		if (r->src[i]->subbuf_size > *sb)
			*sb = r->src[i]->subbuf_size;
		if (r->src[i]->nr_cpus > *cpus)
			*cpus = r->src[i]->nr_cpus;
	}
}

/* Each area format once, under the id it has in the file. */
static int rc_formats(struct hvt_tdat_rset *r)
{
	unsigned int i, j;
	int ret = 0;

	for (j = 0; j < r->nr_src; j++) {
		struct rc_src *s = r->src[j];

		for (i = 0; !ret && i < s->cat.nr; i++) {
			const struct hvtrace_catalog_format *f = &s->cat.fmt[i];

			if (f->id & 0x80000000u)
				continue; /* shared: written by its owner */
			ret = hvtrace_tracedat_writer_add_format(
				r->w, f->system, f->text, strlen(f->text));
		}
	}
	return ret;
}

static void rc_restore(struct hvt_tdat_rset *r)
{
	unsigned int i;

	/* Writers stop producing for nobody. */
	for (i = 0; i < r->nr_src; i++)
		if (!(r->flags & HVTRACE_TDAT_REC_NO_CONTROL))
			hvtrace_area_set_tracing(r->src[i]->area, false);
}

/* After the kernel drained: what is left, the last pages closed. */
static int rc_drain(struct hvt_tdat_rset *r, int ret)
{
	unsigned int i, pass;
	uint32_t c;
	int rd;

	/* Bounded: the sources have stopped. */
	for (pass = 0; r->rec->started && pass < 1024; pass++) {
		int got = 0;

		for (i = 0; i < r->nr_src; i++)
			r->src[i]->active = !r->src[i]->gone;
		hvt_util_workers_pass(r->readers, r->nr_jobs, rc_job, r);
		for (i = 0; i < r->nr_src; i++) {
			if (!r->src[i]->active)
				continue;
			rd = rc_fold(r->src[i]);
			if (rd < 0) {
				r->src[i]->st.errors++;
				r->src[i]->gone = true;
				continue;
			}
			got += rd;
		}
		if (!got)
			break;
	}
	for (i = 0; i < r->nr_src && !ret; i++) {
		struct rc_src *s = r->src[i];

		for (c = 0; c < s->nr_cpus && !ret; c++) {
			struct hvtrace_cpu_stats cs;

			if (!s->gone) {
				s->st.trailing_lost +=
					hvtrace_cpu_take_trailing_lost(s->area,
								       (int)c);
				/* Malformed words, descriptors and pages the
				 * area reader skipped. */
				if (!hvtrace_cpu_get_stats(s->area, (int)c,
							   &cs))
					s->st.errors += cs.errors;
			}
			ret = hvtrace_pack_flush(&s->cpu[c].pack);
		}
		rc_fold(s); /* the last pages' bytes */
	}
	return ret;
}

static const struct hvt_tdat_rset_ops rc_ops = {
	.kind = "areas",
	.place = rc_place,
	.no_match = rc_no_match,
	.start = rc_start,
	.poll = rc_poll,
	.stop = rc_restore,
	.drain = rc_drain,
	.restore = rc_restore,
	.geometry = rc_geometry,
	.formats = rc_formats,
	.cpustats = rc_cpustats,
	.nr_sources = rc_nr_sources,
	.stats = rc_stats,
	.free = rc_set_free,
};
