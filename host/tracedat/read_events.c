// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the events of a trace.dat file, read and printed.
 *
 * One job: walk the pages of every buffer and CPU of an opened file
 * (read.c) in timestamp order.  Every page is copied, its commit size
 * bounded by the page and its events walked with the bounded walker
 * (<hvtrace/page.h>) before libtraceevent's kbuffer sees it; a page that
 * fails is skipped and counted.  Records reach libtraceevent from a
 * scratch area with zeroed slack, and events whose format places a field
 * beyond RD_FIELD_LIMIT are printed raw.  Printing follows trace-cmd
 * report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <trace-seq.h>

#include <hvtrace/page.h>

#include "rw-local.h"

/* --- events
 * ------------------------------------------------------------------- */

/* Load and validate the next page of a CPU; false at the end of its data. */
static bool rd_load_page(struct hvtrace_tracedat_file *f, struct rd_buffer *b,
			 struct rd_cpu *p)
{
	while (p->next < p->off + p->size) {
		struct hvt_page_iter it;
		uint64_t commit, ts;
		uint32_t size, n = 0;
		int item;

		if (!p->page) {
			/* 8 bytes of slack: kbuffer reads the lost count
			 * at the end of the data. */
			p->page = calloc(1, b->page_size + 8);
			p->kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					      KBUFFER_ENDIAN_LITTLE);
			if (!p->page || !p->kb)
				return false;
		}
		if (p->off + p->size - p->next < b->page_size ||
		    rd_at(f, p->next, p->page, b->page_size)) {
			f->errors++; /* a partial page ends the CPU */
			p->next = p->off + p->size;
			return false;
		}
		p->next += b->page_size;
		commit = rd_le64(p->page + HVT_PAGE_COMMIT_OFF);
		ts = rd_le64(p->page);
		size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
		if (size > b->page_size - HVT_PAGE_HDR_SIZE) {
			f->errors++;
			continue;
		}
		if ((commit & HVT_MISSED_STORED) &&
		    size + 8 > b->page_size - HVT_PAGE_HDR_SIZE) {
			f->errors++;
			continue;
		}
		hvt_page_iter_init(&it, p->page + HVT_PAGE_HDR_SIZE, size, ts);
		while ((item = hvt_page_next(&it)) > 0)
			if (item == HVT_ITEM_DATA)
				n++;
		if (item < 0) {
			f->errors++;
			continue;
		}
		if (!n)
			continue;
		kbuffer_load_subbuffer(p->kb, p->page);
		return true;
	}
	return false;
}

/* Make p->ev the next event of the CPU, if any. */
static void rd_fill(struct hvtrace_tracedat_file *f, struct rd_buffer *b,
		    struct rd_cpu *p, bool advance)
{
	unsigned long long ts;
	void *ev = NULL;

	if (advance && p->have)
		ev = kbuffer_next_event(p->kb, &ts);
	else if (p->have)
		return;
	p->have = false;
	for (;;) {
		if (!ev) {
			if (!rd_load_page(f, b, p))
				return;
			ev = kbuffer_read_event(p->kb, &ts);
			if (!ev)
				continue;
		}
		p->ev = ev;
		/* A guest file's top-level buffer: on its host's clock. */
		if (f->tsync && b == &f->buf[0])
			ts = rd_tsync_calc(f, (uint32_t)(p - b->cpu), ts);
		p->ts = ts + (uint64_t)f->ts_offset;
		p->missed = kbuffer_missed_events(p->kb);
		p->ev_size = (uint32_t)kbuffer_event_size(p->kb);
		p->have = true;
		return;
	}
}

HVTRACE_API int hvtrace_tracedat_next(struct hvtrace_tracedat_file *f,
				      struct hvtrace_tracedat_event *ev)
{
	struct rd_cpu *best = NULL;
	unsigned int i, c, bb = 0, bc = 0;

	if (!f || !ev)
		return hvt_err(-EINVAL, "hvtrace_tracedat_next: NULL");
	for (i = 0; i < f->nr_buf; i++) {
		struct rd_buffer *b = &f->buf[i];

		if (b->latency)
			continue;
		for (c = 0; c < b->nr_cpus; c++) {
			struct rd_cpu *p = &b->cpu[c];

			if (!f->started)
				rd_fill(f, b, p, false);
			if (p->have && (!best || p->ts < best->ts)) {
				best = p;
				bb = i;
				bc = c;
			}
		}
	}
	f->started = true;
	if (!best)
		return 0;
	ev->buffer = bb;
	ev->cpu = bc;
	ev->ts = best->ts;
	ev->missed = best->missed;
	ev->size = best->ev_size;
	/* The walker bounded every event; keep one more guard for size. */
	if (ev->size > RD_FIELD_LIMIT)
		ev->size = RD_FIELD_LIMIT;
	/* Only the previous record's bytes are dirty: the slack stays 0. */
	memset(f->scratch, 0, f->scratch_used);
	memcpy(f->scratch, best->ev, ev->size);
	f->scratch_used = ev->size;
	ev->data = f->scratch;
	rd_fill(f, &f->buf[bb], best, true);
	return 1;
}

static void rd_prefix(struct hvtrace_tracedat_file *f, unsigned int buffer,
		      FILE *out)
{
	const char *name;

	if (f->nr_buf < 2)
		return;
	/* The top-level buffer has no tag, as in trace-cmd. */
	name = buffer ? f->buf[buffer].name : "";
	if (*name)
		fprintf(out, "%*s: ", f->name_width, name);
	else
		fprintf(out, "%*s  ", f->name_width, "");
}

/* The event's line after its tag (a buffer's, a file's). */
static int rd_print_line(struct hvtrace_tracedat_file *f,
			 const struct hvtrace_tracedat_event *ev, FILE *out,
			 bool tag)
{
	static const char spaces[] = "                    ";
	struct tep_record rec;
	struct tep_event *event;
	struct trace_seq s;
	const char *name;
	uint16_t id;
	int len;

	if (!f || !ev || !out)
		return -EINVAL;
	memset(&rec, 0, sizeof(rec));
	rec.ts = ev->ts;
	rec.size = (int)ev->size;
	rec.record_size = (int)ev->size;
	/*
	 * A record shorter than its format's fields is still printed from
	 * the zeroed scratch behind it; saying it is that long keeps
	 * libtraceevent's "rest of the record" lengths from going negative.
	 */
	if (ev->data == f->scratch && ev->size >= 2) {
		uint16_t tid =
			(uint16_t)(((const uint8_t *)ev->data)[0] |
				   (((const uint8_t *)ev->data)[1] << 8));

		if (f->min_size[tid] > ev->size)
			rec.size = (int)f->min_size[tid];
	}
	rec.data = (void *)ev->data;
	rec.cpu = (int)ev->cpu;
	rec.missed_events = ev->missed;
	rec.locked = 1;

	trace_seq_init(&s);
	if (tag)
		rd_prefix(f, ev->buffer, out);
	if (ev->missed > 0)
		trace_seq_printf(&s, "CPU:%u [%lld EVENTS DROPPED]\n", ev->cpu,
				 (long long)ev->missed);
	else if (ev->missed < 0)
		trace_seq_printf(&s, "CPU:%u [EVENTS DROPPED]\n", ev->cpu);

	id = ev->size >= 2 ? (uint16_t)(((const uint8_t *)ev->data)[0] |
					(((const uint8_t *)ev->data)[1] << 8))
			   : 0;
	event = ev->size >= 8 && !f->bad_ids[id]
			? tep_find_event_by_record(f->tep, &rec)
			: NULL;
	if (ev->size >= 8) {
		tep_print_event(f->tep, &s, &rec, "%16s-%-5d [%03d]",
				TEP_PRINT_COMM, TEP_PRINT_PID, TEP_PRINT_CPU);
	} else {
		trace_seq_printf(&s, "%16s-%-5d [%03u]", "<...>", 0, ev->cpu);
	}
	tep_print_event(f->tep, &s, &rec, " %6.1000d:", TEP_PRINT_TIME);
	name = event ? event->name : "(NULL)";
	trace_seq_printf(&s, " %s: ", name);
	len = (int)strlen(name);
	if (len < 20)
		trace_seq_printf(&s, "%.*s", 20 - len, spaces);
	if (event)
		tep_print_event(f->tep, &s, &rec, "%s", TEP_PRINT_INFO);
	else
		trace_seq_printf(&s, "[UNKNOWN TYPE %u]", id);
	if (s.len && s.buffer[s.len - 1] == '\n')
		s.len--;
	trace_seq_terminate(&s);
	if (f->ksyms && memchr(s.buffer, HVT_KS_TAIL, s.len)) {
		/* Symbols in the kernel's forms (the decoders' rule). */
		struct trace_seq x;

		trace_seq_init(&x);
		hvt_ksyms_expand(&x, s.buffer, s.len);
		fprintf(out, "%s\n", x.buffer);
		trace_seq_destroy(&x);
	} else {
		fprintf(out, "%s\n", s.buffer);
	}
	trace_seq_destroy(&s);
	return 0;
}

HVTRACE_API int
hvtrace_tracedat_print_event(struct hvtrace_tracedat_file *f,
			     const struct hvtrace_tracedat_event *ev, FILE *out)
{
	return rd_print_line(f, ev, out, true);
}

/* What trace-cmd report prints after the events of @f. */
static void rd_report_errors(const struct hvtrace_tracedat_file *f,
			     const char *path)
{
	if (f->errors)
		fprintf(stderr,
			"hvtrace report: %s: skipped %llu malformed page(s)\n",
			path, (unsigned long long)f->errors);
	if (f->bad_formats)
		fprintf(stderr,
			"hvtrace report: %s: skipped %llu damaged format or "
			"symbol text(s); their events print raw\n",
			path, (unsigned long long)f->bad_formats);
}

static unsigned int rd_report_cpus(const struct hvtrace_tracedat_file *f)
{
	/* trace-cmd prints the larger of CPUCOUNT and the top CPUs. */
	return f->buf[0].nr_cpus > f->cpucount ? f->buf[0].nr_cpus
					       : f->cpucount;
}

static const char *rd_base(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* The widest of the files' names and the buffer names of files [0, @upto). */
static int rd_tag_width(const char *const *paths,
			struct hvtrace_tracedat_file *const *f, unsigned int n,
			unsigned int upto)
{
	unsigned int i, b;
	int w = 0;

	for (i = 0; i < n; i++)
		if ((int)strlen(rd_base(paths[i])) > w)
			w = (int)strlen(rd_base(paths[i]));
	for (i = 0; i < upto; i++)
		for (b = 1; b < f[i]->nr_buf; b++)
			if ((int)strlen(f[i]->buf[b].name) > w)
				w = (int)strlen(f[i]->buf[b].name);
	return w;
}

/*
 * Several files in one time line, as trace-cmd report -i A -i B prints
 * them (a host file and its guests' files: each guest file's TIME_SHIFT
 * puts its times on the host's clock): "FILE: cpus=N" for each, then
 * every event of every file by time (the earlier file first on a tie).
 * Each line is tagged as trace-cmd tags it: a top-level buffer's with its
 * file's name, another buffer's with the buffer's name, right-aligned to
 * the widest tag (a "cpus=" line to the widest known by then: trace-cmd
 * learns a file's buffers after printing its line).
 */
static int rd_report_multi(const char *const *paths, unsigned int n, FILE *out)
{
	struct hvtrace_tracedat_file **f;
	struct hvtrace_tracedat_event *ev;
	int *have, ret = 0, w;
	unsigned int i, best;

	f = calloc(n, sizeof(*f));
	ev = calloc(n, sizeof(*ev));
	have = calloc(n, sizeof(*have));
	if (!f || !ev || !have) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		ret = hvtrace_tracedat_open(paths[i], &f[i]);
		if (ret)
			goto out;
	}
	for (i = 0; i < n; i++)
		fprintf(out, "%*s: cpus=%u\n", rd_tag_width(paths, f, n, i),
			rd_base(paths[i]), rd_report_cpus(f[i]));
	w = rd_tag_width(paths, f, n, n);
	for (i = 0; i < n; i++) {
		have[i] = hvtrace_tracedat_next(f[i], &ev[i]);
		if (have[i] < 0) {
			ret = have[i];
			goto out;
		}
	}
	for (;;) {
		best = n;
		for (i = 0; i < n; i++)
			if (have[i] > 0 &&
			    (best == n || ev[i].ts < ev[best].ts))
				best = i;
		if (best == n)
			break;
		fprintf(out, "%*s: ", w,
			ev[best].buffer ? f[best]->buf[ev[best].buffer].name
					: rd_base(paths[best]));
		rd_print_line(f[best], &ev[best], out, false);
		have[best] = hvtrace_tracedat_next(f[best], &ev[best]);
		if (have[best] < 0) {
			ret = have[best];
			goto out;
		}
	}
	for (i = 0; i < n; i++)
		rd_report_errors(f[i], paths[i]);
out:
	for (i = 0; f && i < n; i++)
		hvtrace_tracedat_close(f[i]);
	free(f);
	free(ev);
	free(have);
	return ret;
}

HVTRACE_API int hvtrace_tracedat_report_files(const char *const *paths,
					      unsigned int n, FILE *out,
					      unsigned int flags)
{
	struct hvtrace_tracedat_file *f;
	struct hvtrace_tracedat_event ev;
	int ret;

	if (!paths || !n || !out)
		return hvt_err(-EINVAL, "report: no file given");
	if (n > 1 && (flags & HVTRACE_TDAT_REPORT_STAT))
		return hvt_err(-EINVAL, "report: the statistics are of one "
					"file: give one with --stat");
	if (n > 1)
		return rd_report_multi(paths, n, out);
	ret = hvtrace_tracedat_open(paths[0], &f);
	if (ret)
		return ret;
	fprintf(out, "cpus=%u\n", rd_report_cpus(f));
	if (flags & HVTRACE_TDAT_REPORT_STAT) {
		fprintf(out, "\nKernel buffer statistics:\n"
			     "  Note: \"entries\" are the entries left in the "
			     "kernel ring buffer and are not\n"
			     "        recorded in the trace data. They should "
			     "all be zero.\n\n");
		if (f->cpustats)
			fprintf(out, "%s\n", f->cpustats);
		else
			fprintf(out, " No stats in this file\n");
		for (unsigned int c = 0; c < f->buf[0].nr_cpus; c++)
			fprintf(out,
				"CPU%u data recorded at offset=0x%llx\n"
				"    %llu bytes in size\n",
				c, (unsigned long long)f->buf[0].cpu[c].off,
				(unsigned long long)f->buf[0].cpu[c].size);
		hvtrace_tracedat_close(f);
		return 0;
	}
	while ((ret = hvtrace_tracedat_next(f, &ev)) > 0)
		hvtrace_tracedat_print_event(f, &ev, out);
	rd_report_errors(f, paths[0]);
	hvtrace_tracedat_close(f);
	return ret < 0 ? ret : 0;
}

HVTRACE_API int hvtrace_tracedat_report(const char *path, FILE *out,
					unsigned int flags)
{
	return hvtrace_tracedat_report_files(&path, 1, out, flags);
}
