// SPDX-License-Identifier: MIT
/*
 * The packer's page-level path (hvt_pack_add_page(), what the recorder
 * does with a validated page) against its event path (each record through
 * hvtrace_pack_add_event() at its converted time, the id rewritten after):
 * the pages emitted must be the same byte for byte.
 *
 * Source pages are random writer pages: records of 4..112 bytes (4-byte
 * form) and larger (length word), deltas up to 2^27 - 1, partial pages
 * and pages full to the last byte, losses before a page, pages that start
 * before the last record's time; and, on some pages, what the page-level path
 * must leave to the event path: a TIME_EXTEND, a padding record, a small record
 * in the long form, a length word that is not exact, a record shorter
 * than the common fields, a bare padding header at the end.  Clocks: none
 * (host ns), a writer not yet synced, and synced models whose rate shrinks
 * or stretches deltas (past 27 bits, so the event path adds TIME_EXTENDs;
 * before the base, held at 0).  Id maps: random, with an unknown id.
 * The affine snapshot converts every timestamp as hvt_clock_to_host()
 * does, and both paths count the same records, unknown ids and clamps.
 *
 * The page-level path runs twice: walking the page itself, and with the
 * index of record starts that the reader's validation writes down
 * (hvt_subbuf_take()), as the recorder gives it.  Records carry a "pid"
 * at the noted offset that changes now and then; every path must note
 * the same sequence of pids (each change at least once).
 */
#include <stdlib.h>

#include <hvtrace/page.h>

#include "../../host/lib/subbuf.h"
#include "../../host/tracedat/tracedat-local.h"
#include "hvt_test.h"

#define PAGE	 4096u
#define DATA	 (PAGE - HVT_PAGE_HDR_SIZE)
#define MIN_LEN	 8u
#define NR_PAGES 400u
#define OUT_MAX	 (4u << 20)
#define NOTE_OFF  4u /* the pid's offset in a record */
#define NOTES_MAX (1u << 20)

struct out {
	uint8_t *b;
	size_t len;
};

static uint64_t xs = 0x2545f4914f6cdd1dULL;
static uint32_t cur_pid = 100;

static uint64_t rnd(void)
{
	xs ^= xs << 13;
	xs ^= xs >> 7;
	xs ^= xs << 17;
	return xs;
}

static int on_page(void *ctx, const uint8_t *page, uint32_t size)
{
	struct out *o = ctx;

	t_assert(o->len + PAGE <= OUT_MAX);
	memcpy(o->b + o->len, page, size);
	memset(o->b + o->len + size, 0, PAGE - size);
	o->len += PAGE;
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* A record of @len payload bytes at @at; returns its bytes, 0 if full. */
static uint32_t put_rec(uint8_t *d, uint32_t at, uint32_t len, uint32_t delta,
			bool long_form, uint32_t short_word)
{
	uint32_t i, hdr = long_form || len > 112 ? 8 : 4;

	if (at + hdr + len > DATA)
		return 0;
	if (hdr == 4) {
		put32(d + at, len / 4 | delta << HVT_TYPE_LEN_BITS);
	} else {
		put32(d + at, delta << HVT_TYPE_LEN_BITS);
		put32(d + at + 4, len + 4 - short_word);
	}
	for (i = 0; i < len; i++)
		d[at + hdr + i] = (uint8_t)rnd();
	if (len >= NOTE_OFF + 4) {
		if (rnd() % 16 == 0)
			cur_pid = 100 + (uint32_t)(rnd() % 4);
		put32(d + at + hdr + NOTE_OFF, cur_pid);
	}
	return hdr + len;
}

/* A writer page: returns its committed size.  @odd: one item the
 * page-level path must refuse. */
static uint32_t make_page(uint8_t *page, uint64_t *ts, bool odd)
{
	uint8_t *d = page + HVT_PAGE_HDR_SIZE;
	uint32_t at = 0, n, len, delta, k = 0, odd_at = (uint32_t)(rnd() % 40);
	uint32_t stop = rnd() % 4 ? DATA : (uint32_t)(rnd() % DATA);
	uint64_t adv = 0;

	memcpy(page, ts, 8);
	for (;;) {
		bool big = rnd() % 8 == 0;

		len = big ? 116 + 4 * (uint32_t)(rnd() % 80)
			  : MIN_LEN + 4 * (uint32_t)(rnd() % 27);
		delta = rnd() % 512 ? (uint32_t)(rnd() % 1000)
				    : (uint32_t)(rnd() & HVT_TS_MASK);
		if (odd && k == odd_at) {
			switch (rnd() % 6) {
			case 0: /* TIME_EXTEND */
				if (at + 8 > DATA)
					goto out;
				put32(d + at,
				      HVT_TYPE_TIME_EXTEND |
					      (delta << HVT_TYPE_LEN_BITS));
				put32(d + at + 4, 3);
				n = 8;
				adv = 3ULL << HVT_TS_BITS;
				break;
			case 1: /* padding record */
				if (at + 16 > DATA)
					goto out;
				put32(d + at, HVT_TYPE_PADDING);
				put32(d + at + 4, 12);
				n = 16;
				break;
			case 2: /* small record, long form */
				n = put_rec(d, at, MIN_LEN, delta, true, 0);
				break;
			case 3: /* length word not exact */
				n = put_rec(d, at, 200, delta, true,
					    1 + (uint32_t)(rnd() % 3));
				break;
			case 4: /* shorter than the common fields */
				n = put_rec(d, at, 4, delta, false, 0);
				break;
			default: /* bare padding header at the end */
				if (at + 4 > DATA)
					goto out;
				put32(d + at, HVT_TYPE_PADDING);
				at += 4;
				goto out;
			}
		} else {
			n = put_rec(d, at, len, delta, false, 0);
		}
		if (!n && stop == DATA && DATA - at >= 4 + MIN_LEN &&
		    DATA - at <= 4 + 112 && rnd() % 2) {
			/* Fill the page to its last byte (no room for a
			 * loss count: the packer must not take it whole
			 * after a loss). */
			n = put_rec(d, at, DATA - at - 4, delta, false, 0);
			*ts += delta;
			at += n;
			break;
		}
		if (!n || at + n > stop)
			break;
		*ts += delta + adv;
		adv = 0;
		at += n;
		k++;
	}
out:
	memset(page + 8, 0, 8);
	memcpy(page + 8, &at, 4);
	return at;
}

struct path {
	struct hvtrace_pack p;
	struct out o;
	uint64_t last;
	bool have;
	uint64_t events, unknown, clamped;
	/* the pids noted, a change at a time (short records: 0) */
	uint32_t *notes;
	size_t nr_notes;
};

static void note(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct path *x = ctx;
	uint32_t v = 0;

	if (len >= NOTE_OFF + 4)
		memcpy(&v, rec + NOTE_OFF, 4);
	if (x->nr_notes && x->notes[x->nr_notes - 1] == v)
		return;
	t_assert(x->nr_notes < NOTES_MAX);
	x->notes[x->nr_notes++] = v;
}

/* The event path, as the recorder takes it record by record, from
 * @pos (running time @run) on. */
static void by_event(struct path *x, const uint8_t *page, uint32_t size,
		     const struct hvt_clock_model *m, const uint16_t *map,
		     uint16_t unknown, uint32_t pos, uint64_t run)
{
	struct hvt_page_iter it;
	int item;

	hvt_page_iter_init(&it, page + HVT_PAGE_HDR_SIZE, size, run);
	it.pos = pos;
	while ((item = hvt_page_next(&it)) > 0) {
		uint16_t id;
		uint64_t t;

		if (item != HVT_ITEM_DATA || it.len < MIN_LEN)
			continue;
		t = hvt_clock_to_host(m, it.ts, NULL);
		if (x->have && t < x->last) {
			t = x->last;
			x->clamped++;
		}
		x->last = t;
		x->have = true;
		t_ok(hvtrace_pack_add_event(&x->p, t, it.payload, it.len));
		memcpy(&id, it.payload, 2);
		id = map[id];
		memcpy(x->p.page + HVT_PAGE_HDR_SIZE + x->p.pos - it.len, &id,
		       2);
		x->unknown += id == unknown;
		x->events++;
		note(x, it.payload, it.len); /* as rc_area_page() does */
	}
}

/* The page-level path first, the rest by event, as rc_area_page() does;
 * with @ix, given the index the reader's validation writes down.
 * Returns the records left to the event path. */
static uint32_t by_page(struct path *x, const uint8_t *page, uint32_t size,
			const struct hvt_clock_model *m, const uint16_t *map,
			uint16_t unknown, struct hvt_item_index *ix)
{
	static uint8_t copy[PAGE];
	struct hvt_clock_affine clk;
	struct hvt_pack_page_out o;
	struct hvt_pack_page_in in = {
		.data = page + HVT_PAGE_HDR_SIZE,
		.size = size,
		.clk = &clk,
		.idmap = map,
		.unknown_id = unknown,
		.min_len = MIN_LEN,
		.have_prev = x->have,
		.prev = x->last,
		.note = note,
		.note_ctx = x,
		.note_off = NOTE_OFF,
	};
	uint64_t before;

	memcpy(&in.ts, page, 8);
	if (ix) {
		struct hvt_take t;
		uint64_t ts;
		int ret;

		memcpy(&ts, page, 8);
		ret = hvt_subbuf_take(page + HVT_PAGE_HDR_SIZE, size, DATA, 0,
				      ts, 0, copy, &t, ix);
		/* A page the reader would skip has no index.  The reader's
		 * page (the copy) ends before a bare padding header. */
		if (ret > 0) {
			t_assert(t.end == size || t.end + 4 == size);
			t_assert(ix->nr > 0 && ix->nr < ix->cap);
			t_equ(ix->off[0], 0);
			t_equ(ix->off[ix->nr], t.end);
			t_memeq(copy + HVT_PAGE_HDR_SIZE,
				page + HVT_PAGE_HDR_SIZE, t.end);
			page = copy;
			size = t.end;
			in.data = page + HVT_PAGE_HDR_SIZE;
			in.size = size;
			in.ix = ix;
		}
	}
	hvt_clock_affine_get(m, &clk);
	t_ok(hvt_pack_add_page(&x->p, &in, &o));
	t_assert(o.pos <= size);
	if (o.events) {
		x->last = o.last_ts;
		x->have = true;
		x->events += o.events;
		x->unknown += o.unknown;
		x->clamped += o.clamped;
	}
	before = x->events;
	by_event(x, page, size, m, map, unknown, o.pos, o.ts);
	return (uint32_t)(x->events - before);
}

static void model(struct hvt_clock_model *m, unsigned int kind)
{
	struct hvt_clock_sample s;
	double rate[] = {1.0, 0.37, 2.9, 1.7e-3, 41.0};

	switch (kind) {
	case 0:
		hvt_clock_init(m, HVT_CLOCK_HOST_NS, 0, 0, 0);
		return;
	case 1: /* not synced: the writer's ticks at its frequency */
		hvt_clock_init(m, HVT_CLOCK_COUNTER, 2600000000ULL, 0, 0);
		return;
	default:
		break;
	}
	hvt_clock_init(m, HVT_CLOCK_COUNTER, 1000000000ULL, 0, 0);
	/* Two samples at the rate wanted, around writer time 2^40. */
	s.writer = 1ULL << 40;
	s.host_send = 5000000000ULL;
	s.host_recv = s.host_send + 2;
	hvt_clock_add(m, &s);
	s.writer += 1000000000ULL;
	s.host_send += (uint64_t)(1e9 * rate[(kind - 2) % 5]);
	s.host_recv = s.host_send + 2;
	hvt_clock_add(m, &s);
}

static void path_init(struct path *x)
{
	memset(x, 0, sizeof(*x));
	x->o.b = malloc(OUT_MAX);
	x->notes = malloc(NOTES_MAX * sizeof(*x->notes));
	t_assert(x->o.b && x->notes);
	t_ok(hvtrace_pack_init(&x->p, PAGE, on_page, &x->o));
}

static void path_fini(struct path *x)
{
	hvtrace_pack_fini(&x->p);
	free(x->o.b);
	free(x->notes);
}

/* @x wrote what the event path @b wrote, and noted the same pids. */
static void path_same(struct path *x, struct path *b)
{
	t_ok(hvtrace_pack_flush(&x->p));
	t_equ(x->events, b->events);
	t_equ(x->unknown, b->unknown);
	t_equ(x->clamped, b->clamped);
	t_equ(x->o.len, b->o.len);
	t_memeq(x->o.b, b->o.b, x->o.len);
	t_equ(x->nr_notes, b->nr_notes);
	t_memeq(x->notes, b->notes, x->nr_notes * sizeof(*x->notes));
}

int main(void)
{
	static uint8_t page[PAGE];
	static uint32_t ix_off[PAGE / 8 + 2];
	uint16_t *map = calloc(65536, sizeof(*map));
	unsigned int kind, i, whole = 0, part = 0;

	t_assert(map);
	for (kind = 0; kind < 7; kind++) {
		/* a: page-level, walking; c: page-level, with the index;
		 * b: event by event */
		struct path a, b, c;
		struct hvt_item_index ix = {
			.off = ix_off,
			.cap = hvt_item_index_cap(DATA),
		};
		struct hvt_clock_model m;
		struct hvt_clock_affine clk;
		uint16_t unknown = (uint16_t)(rnd() | 1);
		uint64_t ts = (1ULL << 40) - (kind == 6 ? 4000000 : 0);

		t_assert(ix.cap <= sizeof(ix_off) / sizeof(ix_off[0]));
		model(&m, kind);
		hvt_clock_affine_get(&m, &clk);
		for (i = 0; i < 65536; i++)
			map[i] = rnd() % 5 ? (uint16_t)rnd() : unknown;
		path_init(&a);
		path_init(&b);
		path_init(&c);
		for (i = 0; i < NR_PAGES; i++) {
			uint32_t size;
			uint64_t lost = rnd() % 16 ? 0 : rnd() % 100;
			bool known = rnd() % 4 != 0;
			uint64_t t, start;

			/* A new page starts after the last record, now and
			 * then before it (held at the last time). */
			start = ts;
			size = make_page(page, &ts, rnd() % 5 == 0);
			for (t = start; t < ts + 3000000; t += 299993)
				t_equ(hvt_clock_affine_to_host(&clk, t),
				      hvt_clock_to_host(&m, t, NULL));
			ts = rnd() % 8 ? ts + rnd() % 3000 : ts - rnd() % 3000;
			if (lost) {
				t_ok(hvtrace_pack_add_lost(&a.p, lost, known));
				t_ok(hvtrace_pack_add_lost(&b.p, lost, known));
				t_ok(hvtrace_pack_add_lost(&c.p, lost, known));
			}
			if (by_page(&a, page, size, &m, map, unknown, NULL))
				part++;
			else
				whole++;
			by_page(&c, page, size, &m, map, unknown, &ix);
			memcpy(&t, page, 8);
			by_event(&b, page, size, &m, map, unknown, 0, t);
		}
		t_ok(hvtrace_pack_flush(&b.p));
		path_same(&a, &b);
		path_same(&c, &b);
		printf("clock %u: %llu records (%llu held), %zu pages, %zu "
		       "pid changes noted, same bytes with and without the "
		       "index\n",
		       kind, (unsigned long long)a.events,
		       (unsigned long long)a.clamped, a.o.len / PAGE,
		       a.nr_notes);
		path_fini(&a);
		path_fini(&b);
		path_fini(&c);
	}
	printf("%u pages wholly by the page-level path, %u partly by the "
	       "event path\n",
	       whole, part);
	/* Both paths must have been taken for the comparison to mean much. */
	t_assert(whole > NR_PAGES);
	t_assert(part > NR_PAGES / 2);
	free(map);
	return 0;
}
