/* SPDX-License-Identifier: MIT */
/*
 * A trace.dat generator for the trace.dat unit tests: writes a file with
 * the library's writer and packer, and keeps a list of every event it put
 * in, so tests can compare what the reader gives back.
 *
 * The file has four buffers with different geometry:
 *   ""       top-level, 2 CPUs, 4 KiB pages
 *   "wide"   3 CPUs, 16 KiB pages
 *   "single" 1 CPU, 4 KiB pages
 *   "empty"  2 CPUs, no pages at all
 * and three events of a system "tdt": small (u32 a, u64 b), big (char
 * buf[200] -- a record over 112 bytes, so type_len 0), and str (a
 * __data_loc string).  Timestamps repeat across buffers (ties), jump by
 * more than 27 bits (TIME_EXTEND), and losses of known and unknown size
 * are recorded.
 *
 * Rooms (host/tracedat/write.c), the writer's other layout, by @rooms:
 *   GEN_ROOMS_NONE  none: every buffer's pages behind the metadata
 *   GEN_ROOMS_ALL   64 pages of room for every CPU of every buffer: all
 *                   pages stay in their rooms, whose tails are holes
 *   GEN_ROOMS_SOME  none for the top-level buffer; one page for "wide"'s
 *                   CPU 2 (it brings two, a loss closing the first: the
 *                   buffer moves behind the metadata, its rooms left
 *                   unused), 64 pages for the others of "wide" and for
 *                   "single", one for "empty"
 */
#ifndef TDAT_GEN_H
#define TDAT_GEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace-tracedat.h>

#include "../../host/tracedat/tracedat-local.h"
#include "hvt_test.h"

#define GEN_MAX_EVENTS 4096
#define GEN_ID_SMALL   1001
#define GEN_ID_BIG     1002
#define GEN_ID_STR     1003
#define GEN_PID	       4242
#define GEN_COMM       "tdtproc"

enum gen_rooms { GEN_ROOMS_NONE, GEN_ROOMS_ALL, GEN_ROOMS_SOME };

struct gen_event {
	unsigned int buffer, cpu;
	uint64_t ts;
	int64_t missed;
	uint32_t size;
	uint8_t data[256];
};

struct gen {
	struct hvtrace_tracedat_writer *w;
	struct hvtrace_pack pack[4][3];
	int buf[4];
	struct gen_event ev[GEN_MAX_EVENTS];
	unsigned int nr;
	int64_t pending_missed[4][3];
};

struct gen_emit {
	struct gen *g;
	unsigned int b, c;
};

static struct gen_emit gen_emit_ctx[4][3];

static inline int gen_emit(void *ctx, const uint8_t *page, uint32_t size)
{
	struct gen_emit *e = ctx;

	return hvtrace_tracedat_writer_add_page(e->g->w, e->g->buf[e->b], e->c,
						page, size);
}

static const char gen_common[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char "
	"common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

static inline void gen_format(struct gen *g, const char *name, unsigned int id,
			      const char *fields, const char *print)
{
	char text[2048];
	int n;

	n = snprintf(text, sizeof(text),
		     "name: %s\nID: %u\nformat:\n%s\n%s\nprint fmt: %s\n", name,
		     id, gen_common, fields, print);
	t_ok(hvtrace_tracedat_writer_add_format(g->w, "tdt", text, (size_t)n));
}

static inline void gen_put(struct gen *g, unsigned int b, unsigned int c,
			   uint64_t ts, unsigned int kind, uint64_t v)
{
	struct gen_event *e = &g->ev[g->nr++];
	struct hvt_common_fields cf = {.common_pid = GEN_PID};

	t_assert(g->nr <= GEN_MAX_EVENTS);
	memset(e, 0, sizeof(*e));
	e->buffer = b;
	e->cpu = c;
	e->ts = ts;
	e->missed = g->pending_missed[b][c];
	g->pending_missed[b][c] = 0;
	if (kind == 0) {
		cf.common_type = GEN_ID_SMALL;
		e->size = 24;
		memcpy(e->data + 8, &(uint32_t){(uint32_t)v}, 4);
		memcpy(e->data + 16, &v, 8);
	} else if (kind == 1) {
		cf.common_type = GEN_ID_BIG;
		e->size = 212;
		snprintf((char *)e->data + 8, 200, "big-%llu",
			 (unsigned long long)v);
		memcpy(e->data + 208, &(uint32_t){(uint32_t)v}, 4);
	} else {
		char s[32];
		uint32_t loc;
		int n = snprintf(s, sizeof(s), "msg %llu",
				 (unsigned long long)v) +
			1;

		cf.common_type = GEN_ID_STR;
		loc = ((uint32_t)n << 16) | 12; /* data at 12, n bytes */
		memcpy(e->data + 8, &loc, 4);
		memcpy(e->data + 12, s, (size_t)n);
		e->size = (uint32_t)(12 + n + 3) & ~3u;
	}
	memcpy(e->data, &cf, sizeof(cf));
	t_ok(hvtrace_pack_add_event(&g->pack[b][c], ts, e->data, e->size));
}

static inline void gen_lost(struct gen *g, unsigned int b, unsigned int c,
			    uint64_t n, bool known)
{
	t_ok(hvtrace_pack_add_lost(&g->pack[b][c], n, known));
	g->pending_missed[b][c] = known ? (int64_t)n : -1;
}

/* The rooms of buffer @b, CPU @c, in pages, for layout @rooms. */
static inline uint64_t gen_room_pages(enum gen_rooms rooms, unsigned int b,
				      unsigned int c)
{
	if (rooms == GEN_ROOMS_ALL)
		return 64;
	if (rooms == GEN_ROOMS_NONE || b == 0)
		return 0;
	return (b == 1 && c == 2) || b == 3 ? 1 : 64;
}

/* Write the file with rooms @rooms; the events in it are kept in @g (the
 * reader's order is the caller's to derive). */
static inline void gen_file_rooms(struct gen *g, const char *path,
				  enum gen_rooms rooms)
{
	static const unsigned int cpus[4] = {2, 3, 1, 2};
	static const uint32_t psz[4] = {4096, 16384, 4096, 4096};
	static const char *const names[4] = {"", "wide", "single", "empty"};
	struct hvt_tdat_blob hp = {0}, he = {0};
	uint64_t ts;
	unsigned int b, c, i;

	memset(g, 0, sizeof(*g));
	t_ok(hvtrace_tracedat_writer_create(path, 4096, &g->w));
	t_ok(hvt_tdat_header_page_text(&hp, 16384));
	t_ok(hvt_tdat_header_event_text(&he));
	t_ok(hvtrace_tracedat_writer_set_headers(g->w, hp.data, hp.len, he.data,
						 he.len));
	hvt_tdat_blob_free(&hp);
	hvt_tdat_blob_free(&he);
	gen_format(g, "small", GEN_ID_SMALL,
		   "\tfield:u32 a;\toffset:8;\tsize:4;\tsigned:0;\n"
		   "\tfield:u64 b;\toffset:16;\tsize:8;\tsigned:0;\n",
		   "\"a=%u b=%llu\", REC->a, REC->b");
	gen_format(g, "big", GEN_ID_BIG,
		   "\tfield:char buf[200];\toffset:8;\tsize:200;\tsigned:0;\n"
		   "\tfield:u32 n;\toffset:208;\tsize:4;\tsigned:0;\n",
		   "\"%s n=%u\", REC->buf, REC->n");
	gen_format(g, "str", GEN_ID_STR,
		   "\tfield:__data_loc char[] "
		   "msg;\toffset:8;\tsize:4;\tsigned:0;\n",
		   "\"%s\", __get_str(msg)");
	t_ok(hvtrace_tracedat_writer_add_cmdline(g->w, GEN_PID, GEN_COMM));
	t_ok(hvtrace_tracedat_writer_add_option(g->w, HVT_TDAT_OPT_TRACECLOCK,
						"[mono]\n", 8));
	t_ok(hvtrace_tracedat_writer_add_option(g->w, HVT_TDAT_OPT_CPUCOUNT,
						&(uint32_t){3}, 4));
	for (b = 0; b < 4; b++) {
		int r = hvtrace_tracedat_writer_add_buffer(
			g->w, names[b], "mono", cpus[b], psz[b]);

		t_assert(r >= 0);
		g->buf[b] = r;
		for (c = 0; c < cpus[b]; c++) {
			gen_emit_ctx[b][c] = (struct gen_emit){g, b, c};
			t_ok(hvtrace_pack_init(&g->pack[b][c], psz[b],
						gen_emit, &gen_emit_ctx[b][c]));
			if (gen_room_pages(rooms, b, c))
				t_ok(hvt_tdat_writer_set_room(
					g->w, g->buf[b], c,
					gen_room_pages(rooms, b, c) * psz[b]));
		}
	}
	t_ok(hvt_tdat_writer_lay_rooms(g->w));
	/* Too late once laid out. */
	t_eq(hvt_tdat_writer_set_room(g->w, g->buf[0], 0, 4096), -EBUSY);
	/* Ticks shared by several buffers (ties), small steps, big jumps. */
	ts = 1000000000ULL;
	for (i = 0; i < 600; i++) {
		ts += (i % 50 == 49) ? (1ULL << 30) + i : (i % 3 ? 7 : 0);
		gen_put(g, 0, i % 2, ts, i % 3, i);
		if (i % 2 == 0)
			gen_put(g, 1, i % 3, ts, (i / 2) % 3, 100000 + i);
		if (i % 5 == 0)
			gen_put(g, 2, 0, ts, 2, 200000 + i);
		if (i == 100)
			gen_lost(g, 0, 1, 17, true);
		if (i == 300)
			gen_lost(g, 1, 2, 0, false);
		if (i == 400)
			gen_lost(g, 2, 0, 5, true);
	}
	for (b = 0; b < 4; b++)
		for (c = 0; c < cpus[b]; c++) {
			t_ok(hvtrace_pack_flush(&g->pack[b][c]));
			hvtrace_pack_fini(&g->pack[b][c]);
		}
	t_ok(hvtrace_tracedat_writer_finish(g->w));
	g->w = NULL;
}

static inline void gen_file(struct gen *g, const char *path)
{
	gen_file_rooms(g, path, GEN_ROOMS_NONE);
}

/* The order the reader must return: by time, then buffer, then CPU; a
 * CPU's own events keep their order (stable sort). */
static inline int gen_cmp(const void *a, const void *b)
{
	const struct gen_event *x = *(const struct gen_event *const *)a;
	const struct gen_event *y = *(const struct gen_event *const *)b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->buffer != y->buffer)
		return x->buffer < y->buffer ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x < y ? -1 : (x > y);
}

static inline void gen_sorted(struct gen *g, const struct gen_event **out)
{
	unsigned int i;

	for (i = 0; i < g->nr; i++)
		out[i] = &g->ev[i];
	qsort(out, g->nr, sizeof(*out), gen_cmp);
}

#endif /* TDAT_GEN_H */
