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

HVTRACE_API int
hvtrace_tracedat_print_event(struct hvtrace_tracedat_file *f,
			     const struct hvtrace_tracedat_event *ev, FILE *out)
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
	fprintf(out, "%s\n", s.buffer);
	trace_seq_destroy(&s);
	return 0;
}

HVTRACE_API int hvtrace_tracedat_report(const char *path, FILE *out,
					unsigned int flags)
{
	struct hvtrace_tracedat_file *f;
	struct hvtrace_tracedat_event ev;
	int ret;

	ret = hvtrace_tracedat_open(path, &f);
	if (ret)
		return ret;
	/* trace-cmd prints the larger of CPUCOUNT and the top CPUs. */
	fprintf(out, "cpus=%u\n",
		f->buf[0].nr_cpus > f->cpucount ? f->buf[0].nr_cpus
						: f->cpucount);
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
	if (f->errors)
		fprintf(stderr,
			"hvtrace report: %s: skipped %llu malformed page(s)\n",
			path, (unsigned long long)f->errors);
	if (f->bad_formats)
		fprintf(stderr,
			"hvtrace report: %s: skipped %llu damaged format or "
			"symbol text(s); their events print raw\n",
			path, (unsigned long long)f->bad_formats);
	hvtrace_tracedat_close(f);
	return ret < 0 ? ret : 0;
}
