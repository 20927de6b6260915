// SPDX-License-Identifier: MIT
/*
 * libhvtrace: what the recorder (record.c) and its source sets
 * (record_area.c, record_remote.c) share: per-CPU packing on the host
 * clock, event ids unique in the file and below 0x8000, host pids named
 * from /proc (also those reader threads met), the options and metadata
 * writers, and the host kernel as a source (hvt_tdat_rkernel_*(), at
 * the end): its tracefs instance on the mono trace clock, its events in
 * the top-level buffer, and its headers, formats, kallsyms, printk
 * formats, saved_cmdlines, trace clock and CPU statistics in the file.
 * The file layout is in docs/tracedat.md.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <hvtrace/page.h>

#include "tracedat-local.h"

/* --- per-CPU packing ------------------------------------------------------ */

/* Pages from the packer go to the writer. */
static int rcpu_emit(void *ctx, const uint8_t *page, uint32_t size)
{
	struct hvt_tdat_rcpu *c = ctx;
	int ret;

	ret = hvtrace_tracedat_writer_add_page(c->w, *c->buffer, c->cpu, page,
					       size);
	if (!ret)
		c->st->bytes += c->pack.page_size;
	return ret;
}

int hvt_tdat_rcpu_init(struct hvt_tdat_rcpu *c,
		       struct hvtrace_tracedat_writer *w, const int *buffer,
		       uint32_t cpu, uint32_t subbuf_size,
		       struct hvtrace_tracedat_source_stats *st)
{
	c->w = w;
	c->buffer = buffer;
	c->cpu = cpu;
	c->st = st;
	return hvtrace_pack_init(&c->pack, subbuf_size, rcpu_emit, c);
}

void hvt_tdat_rcpu_fini(struct hvt_tdat_rcpu *c)
{
	hvtrace_pack_fini(&c->pack);
}

int hvt_tdat_rcpu_put_event(struct hvt_tdat_rcpu *c, uint64_t ts,
			    const uint8_t *rec, uint32_t len)
{
	int ret;

	if (c->have_ts && ts < c->last_ts) {
		ts = c->last_ts;
		c->st->clamped++;
	}
	c->last_ts = ts;
	c->have_ts = true;
	ret = hvtrace_pack_add_event(&c->pack, ts, rec, len);
	if (ret == -E2BIG) {
		c->st->errors++;
		return 0;
	}
	if (!ret)
		c->st->events++;
	return ret;
}

int hvt_tdat_rcpu_put_event_id(struct hvt_tdat_rcpu *c, uint64_t ts,
			       const uint8_t *rec, uint32_t len, uint16_t id)
{
	struct hvtrace_pack *p = &c->pack;
	uint64_t events = c->st->events;
	int ret;

	ret = hvt_tdat_rcpu_put_event(c, ts, rec, len);
	/* Packed: the copy ends the open page's data. */
	if (!ret && c->st->events != events)
		memcpy(p->page + HVT_PAGE_HDR_SIZE + p->pos - len, &id, 2);
	return ret;
}

int hvt_tdat_rcpu_put_lost(struct hvt_tdat_rcpu *c, uint64_t n, bool known)
{
	if (known)
		c->st->lost += n;
	else
		c->st->lost_unknown++;
	return hvtrace_pack_add_lost(&c->pack, n, known);
}

/*
 * The page packer of every source set whose reader hands over validated
 * pages (areas, and remotes read through their rings): the packer takes
 * what it can a page at a time (hvt_pack_add_page(): one copy, the ids
 * and deltas rewritten in place, the clock model taken once for the
 * page); the records it leaves, if any, go record by record, with the
 * same result.
 */
int hvt_tdat_rcpu_put_page(struct hvt_tdat_rcpu *c,
			   const struct hvt_tdat_page *pg, uint64_t *end_ts)
{
	struct hvt_pack_page_out out;
	struct hvt_pack_page_in in = {
		.data = pg->data,
		.size = pg->size,
		.ts = pg->ts,
		.ix = pg->ix,
		.clk = pg->clk,
		.idmap = pg->idmap,
		.unknown_id = pg->unknown_id,
		.min_len = sizeof(struct hvt_common_fields),
		.have_prev = c->have_ts,
		.prev = c->last_ts,
		.note = pg->note,
		.note_ctx = pg->note_ctx,
		.note_off = 4, /* common_pid */
	};
	struct hvt_page_iter it;
	int ret, item;

	*end_ts = pg->ts;
	ret = hvt_pack_add_page(&c->pack, &in, &out);
	if (out.events) {
		c->last_ts = out.last_ts;
		c->have_ts = true;
		c->st->events += out.events;
		c->st->clamped += out.clamped;
		c->st->unknown += out.unknown;
	}
	if (ret)
		return ret;
	hvt_page_iter_init(&it, pg->data, pg->size, pg->ts);
	it.pos = out.pos;
	it.ts = out.ts;
	while ((item = hvt_page_next(&it)) > 0) {
		uint16_t id, fid;

		if (item != HVT_ITEM_DATA)
			continue;
		if (it.len < sizeof(struct hvt_common_fields)) {
			c->st->errors++;
			continue;
		}
		memcpy(&id, it.payload, 2);
		fid = pg->idmap[id];
		if (fid == pg->unknown_id)
			c->st->unknown++;
		if (pg->note)
			pg->note(pg->note_ctx, it.payload, it.len);
		ret = hvt_tdat_rcpu_put_event_id(
			c, hvt_clock_affine_to_host(pg->clk, it.ts),
			it.payload, it.len, fid);
		if (ret)
			return ret;
	}
	if (item < 0)
		c->st->errors++; /* the reader validated it: not expected */
	*end_ts = it.ts;
	return 0;
}

/* --- file-wide event ids -------------------------------------------------- */

int hvt_tdat_ids_init(struct hvt_tdat_ids *ids)
{
	memset(ids, 0, sizeof(*ids));
	ids->text = calloc(65536, sizeof(*ids->text));
	ids->sys = calloc(65536, sizeof(*ids->sys));
	return ids->text && ids->sys ? 0 : -ENOMEM;
}

void hvt_tdat_ids_fini(struct hvt_tdat_ids *ids)
{
	free(ids->text);
	free(ids->sys);
	ids->text = NULL;
	ids->sys = NULL;
}

bool hvt_tdat_ids_used(const struct hvt_tdat_ids *ids,
		       const struct hvt_tdat_rkernel *rk, uint32_t id)
{
	return id >= HVT_TDAT_ID_LIMIT || id == ids->unknown_id ||
	       ids->text[id] || (rk && hvt_tdat_kernel_has_id(rk->k, id));
}

int hvt_tdat_ids_alloc(const struct hvt_tdat_ids *ids,
		       const struct hvt_tdat_rkernel *rk, uint32_t *id)
{
	uint32_t i;

	for (i = HVT_TDAT_ID_LIMIT - 1; i > 0 && hvt_tdat_ids_used(ids, rk, i);
	     i--)
		;
	if (!i)
		return hvt_err(-ENOSPC, "no free event id left in the file");
	*id = i;
	return 0;
}

uint32_t hvt_tdat_ids_find(const struct hvt_tdat_ids *ids, const char *system,
			   const char *text, char **out)
{
	uint32_t j;
	char *t;

	for (j = 1; j < HVT_TDAT_ID_LIMIT; j++) {
		if (!ids->text[j] || strcmp(ids->sys[j], system))
			continue;
		t = hvt_tdat_format_set_id(text, j);
		if (t && !strcmp(t, ids->text[j])) {
			if (out)
				*out = t;
			else
				free(t);
			return j;
		}
		free(t);
	}
	return 0;
}

/* --- event patterns ------------------------------------------------------- */

int hvt_tdat_events_dup(const char *const *events, char ***out)
{
	unsigned int n = 0, i;
	char **v;

	while (events && events[n])
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i] = strdup(events[i]);
		if (!v[i]) {
			hvt_tdat_events_free(v);
			return -ENOMEM;
		}
	}
	*out = v;
	return 0;
}

void hvt_tdat_events_free(char **events)
{
	unsigned int i;

	for (i = 0; events && events[i]; i++)
		free(events[i]);
	free(events);
}

/* --- host pids ------------------------------------------------------------ */

bool hvt_tdat_pid_first(uint8_t **seen, int pid)
{
	if (pid <= 0 || pid >= HVT_TDAT_PID_MAX)
		return false;
	if (!*seen) {
		*seen = calloc(HVT_TDAT_PID_MAX / 8, 1);
		if (!*seen)
			return false;
	}
	if ((*seen)[pid / 8] & (1u << (pid % 8)))
		return false;
	(*seen)[pid / 8] |= (uint8_t)(1u << (pid % 8));
	return true;
}

void hvt_tdat_hyp_pids(uint8_t *data, uint32_t size, uint64_t ts)
{
	struct hvt_page_iter it;
	const int32_t hyp = HVT_HYP_PID;
	int item;

	hvt_page_iter_init(&it, data, size, ts);
	while ((item = hvt_page_next(&it)) > 0) {
		uint8_t *pid;

		if (item != HVT_ITEM_DATA ||
		    it.len < sizeof(struct hvt_common_fields))
			continue;
		pid = data + (it.payload - it.data) +
		      offsetof(struct hvt_common_fields, common_pid);
		if (!memcmp(pid, "\0\0\0\0", 4))
			memcpy(pid, &hyp, 4);
	}
}

int hvt_tdat_pid_name(struct hvtrace_tracedat_writer *w, int pid)
{
	struct hvt_tdat_blob b = {0};
	char p[64];
	int ret;

	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	ret = hvt_tdat_read_file(p, &b, 64);
	if (!ret) {
		b.data[strcspn(b.data, "\n")] = '\0';
		if (b.data[0])
			ret = hvtrace_tracedat_writer_add_cmdline(w, pid,
								  b.data);
		else
			ret = -ENOENT;
	}
	hvt_tdat_blob_free(&b);
	return ret;
}

/*
 * Naming pids from /proc beats the kernel's saved_cmdlines, which is a
 * small table (128 entries by default) that only tasks traced at a
 * context switch refresh, so it often holds the name of an earlier
 * process with the same pid; saved_cmdlines names only the pids /proc
 * could not.
 */
void hvt_tdat_pids_note(struct hvt_tdat_pids *p,
			struct hvtrace_tracedat_writer *w, uint8_t *named,
			int pid)
{
	if (p->nr >= HVT_TDAT_SRC_MAX_PIDS ||
	    !hvt_tdat_pid_first(&p->seen, pid))
		return;
	p->nr++;
	if (!hvt_tdat_pid_name(w, pid) && named)
		named[pid / 8] |= (uint8_t)(1u << (pid % 8));
}

/*
 * A pid in an event, on a reader thread: kept for the calling thread to
 * name (hvt_tdat_pend_fold()) unless the source named it already.  The
 * source's bitmap only changes between passes, so reading it here is
 * safe.
 */
void hvt_tdat_pend_note(struct hvt_tdat_pend *x, const struct hvt_tdat_pids *p,
			int pid)
{
	unsigned int i;

	if (pid == x->last_pid)
		return;
	x->last_pid = pid;
	if (pid <= 0 || pid >= HVT_TDAT_PID_MAX ||
	    p->nr >= HVT_TDAT_SRC_MAX_PIDS ||
	    (p->seen && ((p->seen[pid / 8] >> (pid % 8)) & 1)))
		return;
	for (i = 0; i < x->nr; i++)
		if (x->pid[i] == pid)
			return;
	/* The source names at most HVT_TDAT_SRC_MAX_PIDS: no CPU can
	 * bring more. */
	if (x->nr >= HVT_TDAT_SRC_MAX_PIDS)
		return;
	if (!x->pid) {
		x->pid = malloc(HVT_TDAT_SRC_MAX_PIDS * sizeof(*x->pid));
		if (!x->pid)
			return; /* unnamed, as a pid /proc cannot name */
	}
	x->pid[x->nr++] = pid;
}

void hvt_tdat_pend_fold(struct hvt_tdat_pend *x, struct hvt_tdat_pids *p,
			struct hvtrace_tracedat_writer *w, uint8_t *named)
{
	unsigned int i;

	for (i = 0; i < x->nr; i++)
		hvt_tdat_pids_note(p, w, named, x->pid[i]);
	x->nr = 0;
}

void hvt_tdat_pend_fini(struct hvt_tdat_pend *x)
{
	free(x->pid);
	x->pid = NULL;
	x->nr = 0;
}

void hvt_tdat_pids_fini(struct hvt_tdat_pids *p)
{
	free(p->seen);
	p->seen = NULL;
	p->nr = 0;
}

/* --- metadata and finishing ----------------------------------------------- */

int hvt_tdat_rec_add_optionf(struct hvtrace_tracedat_writer *w, uint16_t id,
			     const char *fmt, ...)
{
	va_list ap;
	char *text;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return hvt_err(-EINVAL, "bad option text");
	text = malloc((size_t)n + 1);
	if (!text)
		return hvt_err(-ENOMEM, "out of memory");
	va_start(ap, fmt);
	vsnprintf(text, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ret = hvtrace_tracedat_writer_add_option(w, id, text, (uint32_t)n + 1);
	free(text);
	return ret;
}

int hvt_tdat_rec_add_buffer_stat(struct hvtrace_tracedat_writer *w,
				 const char *name, const char *own_clock,
				 uint64_t err_ns)
{
	if (own_clock)
		return hvt_tdat_rec_add_optionf(
			w, HVT_TDAT_OPT_CPUSTAT,
			"\nBuffer: %s\n\nclock: %s (the writer's own times, "
			"not the host's CLOCK_MONOTONIC: no time sync)\n",
			name, own_clock);
	if (err_ns)
		return hvt_tdat_rec_add_optionf(
			w, HVT_TDAT_OPT_CPUSTAT,
			"\nBuffer: %s\n\nclock: mono (the host's "
			"CLOCK_MONOTONIC through a clock model, error bound "
			"+-%.3f us)\n",
			name, (double)err_ns / 1e3);
	return hvt_tdat_rec_add_optionf(w, HVT_TDAT_OPT_CPUSTAT,
					"\nBuffer: %s\n\nclock: mono (the "
					"host's CLOCK_MONOTONIC)\n",
					name);
}

int hvt_tdat_rec_own_clock(struct hvtrace_tracedat_writer *w, int buffer,
			   const char *name, uint64_t err_ns, uint64_t events)
{
	if (err_ns != UINT64_MAX)
		return 0;
	if (events)
		fprintf(stderr,
			"hvtrace record: '%s': times are the writer's own "
			"(buffer clock 'writer'), not the host's "
			"CLOCK_MONOTONIC (hvtraced has no clock model of it: "
			"no time sync)\n",
			name);
	return hvt_tdat_writer_set_buffer_clock(w, buffer, "writer");
}

int hvt_tdat_rec_add_cpustat(struct hvtrace_tracedat_writer *w,
			     const struct hvt_tdat_cpustat *cs)
{
	/* Times "%5llu.%06llu" like the kernel's stats files. */
	return hvt_tdat_rec_add_optionf(
		w, HVT_TDAT_OPT_CPUSTAT,
		"CPU: %u\nentries: %llu\noverrun: %llu\n"
		"commit overrun: 0\nbytes: %llu\n"
		"oldest event ts: %5llu.%06llu\n"
		"now ts: %5llu.%06llu\ndropped events: %llu\n"
		"read events: %llu\n",
		cs->cpu, (unsigned long long)cs->entries,
		(unsigned long long)cs->overrun, (unsigned long long)cs->bytes,
		(unsigned long long)(cs->oldest_ns / 1000000000),
		(unsigned long long)(cs->oldest_ns % 1000000000 / 1000),
		(unsigned long long)(cs->now_ns / 1000000000),
		(unsigned long long)(cs->now_ns % 1000000000 / 1000),
		(unsigned long long)cs->dropped, (unsigned long long)cs->read);
}

int hvt_tdat_rec_set_headers(struct hvtrace_tracedat_writer *w,
			     struct hvt_tdat_rkernel *rk, uint32_t subbuf_size)
{
	struct hvt_tdat_blob hp = {0}, he = {0};
	int ret;

	/* The kernel's own when it is recorded. */
	if (rk &&
	    !hvt_tdat_kernel_file(rk->k, "events/header_page", false, &hp) &&
	    !hvt_tdat_kernel_file(rk->k, "events/header_event", false, &he) &&
	    hp.len && he.len) {
		ret = hvtrace_tracedat_writer_set_headers(w, hp.data, hp.len,
							  he.data, he.len);
		hvt_tdat_blob_free(&hp);
		hvt_tdat_blob_free(&he);
		return ret;
	}
	hp.len = 0;
	he.len = 0;
	ret = hvt_tdat_header_page_text(&hp, subbuf_size);
	if (!ret)
		ret = hvt_tdat_header_event_text(&he);
	if (!ret)
		ret = hvtrace_tracedat_writer_set_headers(w, hp.data, hp.len,
							  he.data, he.len);
	hvt_tdat_blob_free(&hp);
	hvt_tdat_blob_free(&he);
	return ret;
}

int hvt_tdat_rec_add_unknown(struct hvtrace_tracedat_writer *w, uint32_t id)
{
	struct hvt_tdat_blob b = {0};
	int ret;

	ret = hvt_tdat_unknown_format_text(&b, id);
	if (!ret)
		ret = hvtrace_tracedat_writer_add_format(w, "hvtrace", b.data,
							 b.len);
	hvt_tdat_blob_free(&b);
	return ret;
}

int hvt_tdat_rec_add_options(struct hvtrace_tracedat_writer *w,
			     struct hvt_tdat_rkernel *rk)
{
	static const char version[] = "hvtrace " HVT_VERSION;
	struct hvt_tdat_blob b = {0};
	struct utsname u;
	int ret;

	/* The kernel's trace clock if it is recorded, else mono. */
	if (rk && !hvt_tdat_kernel_file(rk->k, "trace_clock", false, &b) &&
	    b.len)
		ret = hvtrace_tracedat_writer_add_option(
			w, HVT_TDAT_OPT_TRACECLOCK, b.data,
			(uint32_t)b.len + 1);
	else
		ret = hvtrace_tracedat_writer_add_option(
			w, HVT_TDAT_OPT_TRACECLOCK, "[mono]\n", 8);
	hvt_tdat_blob_free(&b);
	if (!ret && !uname(&u))
		ret = hvt_tdat_rec_add_optionf(
			w, HVT_TDAT_OPT_UNAME, "%s %s %s %s", u.sysname,
			u.nodename, u.release, u.machine);
	if (!ret)
		ret = hvtrace_tracedat_writer_add_option(
			w, HVT_TDAT_OPT_VERSION, version, sizeof(version));
	return ret;
}

int hvt_tdat_rec_add_cpucount(struct hvtrace_tracedat_writer *w, uint32_t cpus)
{
	uint8_t x[4] = {(uint8_t)cpus, (uint8_t)(cpus >> 8),
			(uint8_t)(cpus >> 16), (uint8_t)(cpus >> 24)};

	return hvtrace_tracedat_writer_add_option(w, HVT_TDAT_OPT_CPUCOUNT, x,
						  4);
}

int hvt_tdat_rec_end(struct hvtrace_tracedat_writer *w, int ret)
{
	char why[512];

	if (!ret)
		return hvtrace_tracedat_writer_finish(w);
	snprintf(why, sizeof(why), "%s", hvtrace_last_error());
	hvtrace_tracedat_writer_abort(w);
	return hvt_err(ret, "%s", why);
}

/* --- the host kernel as a recorded source --------------------------------- */

#define RK_EVENTS_PER_READ 4096u /* per CPU and call, for fairness */

int hvt_tdat_rkernel_open(const char *instance, struct hvt_tdat_rkernel **out)
{
	struct hvt_tdat_kernel_opts ko = {
		.instance = instance,
		.clock = "mono",
	};

	return hvt_tdat_rkernel_open_guest(&ko, out);
}

int hvt_tdat_rkernel_open_guest(const struct hvt_tdat_kernel_opts *ko,
				struct hvt_tdat_rkernel **out)
{
	struct hvt_tdat_rkernel *rk;
	int ret;

	rk = calloc(1, sizeof(*rk));
	if (!rk)
		return hvt_err(-ENOMEM, "out of memory");
	ret = hvt_tdat_kernel_open(ko, &rk->k);
	if (ret) {
		free(rk);
		return ret;
	}
	rk->guest = hvt_tdat_kernel_is_guest(rk->k);
	/* A guest's pids are named by its ring's own records as well
	 * (docs/guest-kernel.md, "Task names"). */
	if (rk->guest && (ret = hvtrace_decoder_new(4096, &rk->dec))) {
		hvt_tdat_kernel_close(rk->k);
		free(rk);
		return ret;
	}
	rk->nr_cpus = hvt_tdat_kernel_nr_cpus(rk->k);
	rk->subbuf_size = hvt_tdat_kernel_subbuf_size(rk->k);
	rk->st.kernel = true;
	rk->st.nr_cpus = rk->nr_cpus;
	*out = rk;
	return 0;
}

int hvt_tdat_rkernel_add_buffer(struct hvt_tdat_rkernel *rk,
				struct hvtrace_tracedat_writer *w,
				uint8_t *named)
{
	uint32_t c;
	int ret;

	rk->w = w;
	rk->named = named;
	rk->cpu = hvt_calloc_lines(rk->nr_cpus, sizeof(*rk->cpu));
	if (!rk->cpu)
		return hvt_err(-ENOMEM, "out of memory");
	for (c = 0; c < rk->nr_cpus; c++) {
		ret = hvt_tdat_rcpu_init(&rk->cpu[c], w, &rk->buffer, c,
					 rk->subbuf_size, &rk->st);
		if (ret)
			return hvt_err(ret, "out of memory");
	}
	ret = hvtrace_tracedat_writer_add_buffer(w, "",
						 hvt_tdat_kernel_clock(rk->k),
						 rk->nr_cpus, rk->subbuf_size);
	if (ret < 0)
		return ret;
	rk->buffer = ret;
	return 0;
}

int hvt_tdat_rkernel_enable(struct hvt_tdat_rkernel *rk, char *const *events,
			    unsigned int *hits)
{
	unsigned int i;
	int ret;

	for (i = 0; events && events[i]; i++) {
		ret = hvt_tdat_kernel_enable(rk->k, events[i]);
		if (ret < 0)
			return ret;
		hits[i] += (unsigned int)ret;
	}
	return 0;
}

int hvt_tdat_rkernel_start(struct hvt_tdat_rkernel *rk)
{
	int ret;

	/* Half-way or not, _close() puts back what was changed. */
	ret = hvt_tdat_kernel_start(rk->k);
	rk->started = !ret;
	return ret;
}

/*
 * The format of guest event @id, met for the first time, into the
 * decoder that names pids, when it is one of the events that can (the
 * decoder looks at sched and task events only): best effort, a format
 * that is missing or refused only names nothing.
 */
static void rk_learn_format(struct hvt_tdat_rkernel *rk, uint16_t id)
{
	const struct hvtrace_catalog_format *f;

	if (hvt_tdat_kernel_event_format(rk->k, id, &rk->dcat))
		return;
	f = hvtrace_catalog_find(&rk->dcat, id, NULL);
	if (f && (!strcmp(f->system, "sched") || !strcmp(f->system, "task")))
		hvtrace_decoder_add_format(rk->dec, f->system, f->text,
					   strlen(f->text));
}

/* The pids a guest's record names, as of its time. */
static void rk_learn(struct hvt_tdat_rkernel *rk, uint32_t cpu,
		     const struct hvt_tdat_krec *kr)
{
	struct hvtrace_record rec = {
		.ts = kr->ts,
		.data = kr->data,
		.size = kr->size,
		.cpu = (int)cpu,
	};

	hvtrace_decoder_learn_comms(rk->dec, &rec);
}

/* Kernel events of one CPU: timestamps are already mono; ids kept. */
static int rk_read_cpu(struct hvt_tdat_rkernel *rk, struct hvt_tdat_rcpu *c)
{
	struct hvt_tdat_krec kr;
	unsigned int n;
	int ret;

	for (n = 0; n < RK_EVENTS_PER_READ; n++) {
		uint16_t id;
		int32_t pid;

		ret = hvt_tdat_kernel_next(rk->k, c->cpu, &kr);
		if (ret <= 0)
			return ret < 0 ? ret : (int)n;
		if (kr.lost || kr.lost_unknown) {
			ret = hvt_tdat_rcpu_put_lost(c, kr.lost,
						     !kr.lost_unknown);
			if (ret)
				return ret;
		}
		if (kr.size < sizeof(struct hvt_common_fields)) {
			rk->st.errors++;
			continue;
		}
		memcpy(&id, kr.data, 2);
		memcpy(&pid, kr.data + 4, 4);
		if (rk->dec && !((rk->seen[id / 64] >> (id % 64)) & 1))
			rk_learn_format(rk, id);
		rk->seen[id / 64] |= 1ULL << (id % 64);
		if (rk->dec)
			rk_learn(rk, c->cpu, &kr);
		if (!rk->guest) /* a guest's pids are not the host's */
			hvt_tdat_pids_note(&rk->pids, rk->w, rk->named, pid);
		ret = hvt_tdat_rcpu_put_event(c, kr.ts, kr.data, kr.size);
		if (ret)
			return ret;
	}
	return (int)n;
}

int hvt_tdat_rkernel_read(struct hvt_tdat_rkernel *rk)
{
	unsigned int n = 0;
	uint32_t c;
	int ret;

	if (!rk->started)
		return 0;
	for (c = 0; c < rk->nr_cpus; c++) {
		ret = rk_read_cpu(rk, &rk->cpu[c]);
		if (ret < 0)
			return ret;
		n += (unsigned int)ret;
	}
	return (int)n;
}

void hvt_tdat_rkernel_stop(struct hvt_tdat_rkernel *rk)
{
	if (!rk || rk->stopped)
		return;
	hvt_tdat_kernel_stop(rk->k);
	rk->stopped = true;
}

int hvt_tdat_rkernel_drain(struct hvt_tdat_rkernel *rk)
{
	unsigned int pass;
	uint32_t c;
	int ret = 0, rd;

	hvt_tdat_rkernel_stop(rk);
	/* Bounded: tracing is off. */
	for (pass = 0; rk->started && pass < 1024; pass++) {
		rd = hvt_tdat_rkernel_read(rk);
		if (rd < 0) {
			rk->st.errors++;
			break;
		}
		if (!rd)
			break;
	}
	rk->st.errors += hvt_tdat_kernel_errors(rk->k);
	for (c = 0; rk->cpu && c < rk->nr_cpus && !ret; c++)
		ret = hvtrace_pack_flush(&rk->cpu[c].pack);
	return ret;
}

int hvt_tdat_rkernel_add_formats(struct hvt_tdat_rkernel *rk)
{
	unsigned int i;
	int ret;

	ret = hvt_tdat_kernel_formats(rk->k, rk->seen, &rk->cat);
	for (i = 0; !ret && i < rk->cat.nr; i++)
		ret = hvtrace_tracedat_writer_add_format(
			rk->w, rk->cat.fmt[i].system, rk->cat.fmt[i].text,
			strlen(rk->cat.fmt[i].text));
	return ret;
}

/* saved_cmdlines: the pids /proc could not name, and nothing else named
 * (a guest's pids: the kernel's table names processes of the same
 * number that are rarely in the file). */
static int rk_add_cmdlines(struct hvt_tdat_rkernel *rk, char *text)
{
	char *line, *next;
	int ret = 0;

	for (line = text; !ret && line && *line; line = next) {
		char comm[64];
		int pid;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%d %63[^\n]", &pid, comm) != 2)
			continue;
		if (pid > 0 && pid < HVT_TDAT_PID_MAX && rk->named &&
		    (rk->named[pid / 8] >> (pid % 8)) & 1)
			continue; /* /proc named it */
		if (hvt_tdat_writer_named(rk->w, pid))
			continue;
		ret = hvtrace_tracedat_writer_add_cmdline(rk->w, pid, comm);
	}
	return ret;
}

static int rk_add_learned(void *arg, int pid, const char *comm)
{
	return hvtrace_tracedat_writer_add_cmdline(arg, pid, comm);
}

/*
 * A guest's symbols for the KALLSYMS section, once per recording: the
 * kernel image's of this boot, read from its RAM
 * (hvtrace_ksyms_from_kring()), with the module symbols of its formats
 * folder's kallsyms (@folder, a rig guest's console lines of the modules
 * it loaded; NULL: none).  No RAM table: none (the folder's text is taken
 * as it is), and a note says so once when there is no folder text either.
 */
static void rk_ram_ksyms(struct hvt_tdat_rkernel *rk,
			 const struct hvt_tdat_blob *folder)
{
	struct hvtrace_kring *kr = hvt_tdat_kernel_kring(rk->k);
	struct hvtrace_ksyms *ks = NULL, *mods = NULL;
	const char *text;
	size_t len;
	int ret;

	if (rk->ksyms_tried)
		return;
	rk->ksyms_tried = true;
	/* Rings hvtraced serves: the table it read from the guest's RAM. */
	text = hvt_tdat_kernel_ksyms(rk->k, &len);
	if (!kr && !text)
		return;
	ret = kr ? hvtrace_ksyms_from_kring(kr, &ks, NULL)
		 : hvtrace_ksyms_parse(text, len, &ks);
	if (ret) {
		if (!folder)
			fprintf(stderr,
				"hvtrace record: note: the guest kernel's "
				"function names print in hex (never the "
				"host's): %s\n",
				hvtrace_last_error());
		return;
	}
	if (folder && !hvtrace_ksyms_parse(folder->data, folder->len, &mods) &&
	    hvtrace_ksyms_add_modules(ks, mods) < 0)
		fprintf(stderr,
			"hvtrace record: note: the guest's modules are left "
			"out of its symbols: %s\n",
			hvtrace_last_error());
	if (hvtrace_ksyms_text(ks, &rk->ksyms_text, &rk->ksyms_len))
		fprintf(stderr,
			"hvtrace record: note: the guest kernel's function "
			"names print in hex (never the host's): %s\n",
			hvtrace_last_error());
	hvtrace_ksyms_free(mods);
	hvtrace_ksyms_free(ks);
}

int hvt_tdat_rkernel_add_files(struct hvt_tdat_rkernel *rk)
{
	struct hvt_tdat_blob b = {0};
	int ret = 0;

	/* The host's symbols, or a guest's own (the table in its RAM with
	 * the modules of its formats folder's kallsyms; that text alone
	 * without a RAM table): never the host's for a guest. */
	if (!rk->guest) {
		if (!hvt_tdat_read_file("/proc/kallsyms", &b, 256u << 20))
			ret = hvtrace_tracedat_writer_set_kallsyms(
				rk->w, b.data, b.len);
	} else {
		bool folder =
			!hvt_tdat_kernel_file(rk->k, "kallsyms", true, &b);

		rk_ram_ksyms(rk, folder ? &b : NULL);
		if (rk->ksyms_text)
			ret = hvtrace_tracedat_writer_set_kallsyms(
				rk->w, rk->ksyms_text, rk->ksyms_len);
		else if (folder)
			ret = hvtrace_tracedat_writer_set_kallsyms(
				rk->w, b.data, b.len);
	}
	if (!ret && !hvt_tdat_kernel_file(rk->k, "printk_formats", true, &b))
		ret = hvtrace_tracedat_writer_set_printk(rk->w, b.data, b.len);
	if (!ret && !hvt_tdat_kernel_file(rk->k, "saved_cmdlines", true, &b))
		ret = rk_add_cmdlines(rk, b.data);
	/* The ring's own newest name of a pid replaces the table's: one
	 * line per pid (the writer keeps the last name given). */
	if (!ret && rk->dec)
		ret = hvtrace_decoder_comm_each(rk->dec, HVTRACE_COMM_LEARNED,
						rk_add_learned, rk->w);
	hvt_tdat_blob_free(&b);
	return ret;
}

int hvt_tdat_rkernel_add_cpustats(struct hvt_tdat_rkernel *rk)
{
	struct hvt_tdat_blob b = {0};
	uint32_t c;
	int ret = 0;

	for (c = 0; c < rk->nr_cpus && !ret; c++) {
		if (hvt_tdat_kernel_cpu_stats(rk->k, c, &b))
			continue;
		/* The kernel's file has no "CPU:" line. */
		ret = hvt_tdat_rec_add_optionf(rk->w, HVT_TDAT_OPT_CPUSTAT,
					       "CPU: %u\n%s", c, b.data);
	}
	hvt_tdat_blob_free(&b);
	return ret;
}

void hvt_tdat_rkernel_close(struct hvt_tdat_rkernel *rk)
{
	uint32_t c;

	if (!rk)
		return;
	hvt_tdat_kernel_close(rk->k);
	for (c = 0; rk->cpu && c < rk->nr_cpus; c++)
		hvt_tdat_rcpu_fini(&rk->cpu[c]);
	free(rk->cpu);
	hvt_tdat_pids_fini(&rk->pids);
	hvtrace_catalog_free(&rk->cat);
	hvtrace_catalog_free(&rk->dcat);
	free(rk->ksyms_text);
	hvtrace_decoder_free(rk->dec);
	free(rk);
}
