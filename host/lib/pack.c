// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the page packer.
 *
 * Events reach the recorder one by one (from an area's reader, or walked
 * out of kernel pages) with timestamps already converted to the file's
 * clock.  The packer lays them out again as ftrace sub-buffers:
 *
 *   +0   u64 time_stamp   the first event's timestamp (its delta is 0)
 *   +8   u64 commit       data bytes | RB_MISSED_EVENTS | RB_MISSED_STORED
 *   +16  events           u32 header (type_len:5 | delta:27), payload:
 *                           1..112 bytes: type_len = bytes / 4
 *                           more:         type_len 0, u32 bytes + 4
 *                         a delta above 27 bits is carried by a
 *                         TIME_EXTEND (type_len 30, u32 delta >> 27)
 *        [u64 lost]       after the data when RB_MISSED_STORED
 *
 * Packing instead of copying pages as they come keeps the file compact
 * (a reader that polls often gets many short pages) and lets timestamps
 * be rewritten: deltas are recomputed, so any monotonic conversion works.
 * Losses are page-level in ftrace, so a loss closes the current page and
 * the next page carries the count; 8 bytes stay free on such a page so
 * the count always fits, as the kernel arranges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>

#include "hvtrace-local.h"

#define PK_SMALL_MAX (HVT_TYPE_DATA_MAX * 4u) /* 112 */

static void pk_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void pk_put64(uint8_t *p, uint64_t v)
{
	pk_put32(p, (uint32_t)v);
	pk_put32(p + 4, (uint32_t)(v >> 32));
}

int hvtrace_pack_init(struct hvtrace_pack *p, uint32_t page_size,
		      int (*emit)(void *ctx, const uint8_t *page,
				  uint32_t size),
		      void *ctx)
{
	memset(p, 0, sizeof(*p));
	if (page_size < HVT_ABI_MIN_SUBBUF_SIZE ||
	    page_size > HVT_ABI_MAX_SUBBUF_SIZE)
		return -EINVAL;
	p->page = calloc(1, page_size);
	if (!p->page)
		return -ENOMEM;
	p->page_size = page_size;
	p->data_size = page_size - HVT_PAGE_HDR_SIZE;
	p->emit = emit;
	p->ctx = ctx;
	return 0;
}

void hvtrace_pack_fini(struct hvtrace_pack *p)
{
	free(p->page);
	p->page = NULL;
}

/* Bytes the data area may use on this page. */
static uint32_t pk_limit(const struct hvtrace_pack *p)
{
	return (p->missed_set && !p->missed_unknown) ? p->data_size - 8
						     : p->data_size;
}

int hvtrace_pack_flush(struct hvtrace_pack *p)
{
	uint64_t commit;
	uint32_t size;
	int ret;

	if (!p->open)
		return 0;
	commit = p->pos;
	size = HVT_PAGE_HDR_SIZE + p->pos;
	if (p->missed_set) {
		commit |= HVT_MISSED_EVENTS;
		if (!p->missed_unknown) {
			commit |= HVT_MISSED_STORED;
			pk_put64(p->page + HVT_PAGE_HDR_SIZE + p->pos,
				 p->missed);
			size += 8;
		}
	}
	pk_put64(p->page + HVT_PAGE_COMMIT_OFF, commit);
	ret = p->emit(p->ctx, p->page, size);
	p->pages++;
	p->open = false;
	p->pos = 0;
	p->missed = 0;
	p->missed_set = false;
	p->missed_unknown = false;
	/* No clearing: a page is written before it is emitted, and only
	 * its @size bytes are (the writer pads the rest with zeros). */
	return ret;
}

int hvtrace_pack_add_lost(struct hvtrace_pack *p, uint64_t count, bool known)
{
	int ret = 0;

	if (known && !count)
		return 0;
	/* A loss sits between pages: the open page ends here. */
	if (p->open)
		ret = hvtrace_pack_flush(p);
	if (p->missed_set && !p->missed_unknown && known)
		p->missed += count;
	else if (!known)
		p->missed_unknown = true;
	else
		p->missed = count;
	p->missed_set = true;
	return ret;
}

/* Whether an event of @len bytes at @ts goes on the open page. */
static bool pk_appends(const struct hvtrace_pack *p, uint64_t ts, uint32_t len)
{
	uint64_t delta;
	uint32_t need;

	if (!p->open)
		return false;
	delta = ts < p->last_ts ? 0 : ts - p->last_ts;
	need = (len <= PK_SMALL_MAX ? 4 : 8) + len +
	       (delta > HVT_TS_MASK ? 8u : 0u);
	/* TIME_EXTEND carries 59 bits; a larger jump starts a new page,
	 * whose header holds the absolute time. */
	return p->pos + need <= pk_limit(p) && !(delta >> 59);
}

/* Whether @it's record is one add_event() would write back as it is. */
static bool pk_plain(const struct hvt_page_iter *it, int item, uint32_t min_len)
{
	const uint8_t *e = it->data + it->evt_pos;

	if (item != HVT_ITEM_DATA || it->len < min_len)
		return false;
	/* Small records in the 4-byte form, larger ones with their exact
	 * length word. */
	if (it->len <= PK_SMALL_MAX)
		return e + 4 == it->payload;
	return e + 8 == it->payload && hvt_rd32(e + 4) == it->len + 4;
}

/*
 * A block's run of small records, kept apart from hvt_pack_add_page()'s
 * loop so that what changes from record to record stays in registers:
 * in that loop, with its calls, the compiler keeps the walk's position,
 * its time and the last time in memory, and each record then waits on a
 * store and a load.  The run takes records in the 4-byte form whose
 * rewritten header needs no time extend, which fit the block's page and
 * which the caller need not note (the noted field is the one before),
 * and rewrites each in place as the loop does.  It stops before the first
 * record it does not take; the loop looks at that one.
 *
 * With the reader's index, where each record starts is read from it, so
 * no record waits on the one before; a record where the index and the
 * data disagree ends the run.  Without one, each start is found from
 * the record before, checked as hvt_page_next() checks it.
 */
struct pk_run {
	const struct hvt_pack_page_in *in;
	uint8_t *dst;	     /* the block's copy, at the records' offsets */
	uint32_t end;	     /* the block's page ends at this offset */
	const uint32_t *off; /* the index, or NULL */
	uint32_t k, nr;	     /* next entry, entries */
	/* the walk: where it stands, and the time there */
	uint32_t pos;
	uint64_t ts;
	/* what the loop tallies */
	uint64_t prev;
	uint32_t n, unknown, clamped, note_last;
	bool noted;
};

/* What a run needs of its records, in locals. */
struct pk_run_ctx {
	const uint8_t *data;
	uint8_t *dst;
	const uint16_t *idmap;
	struct hvt_clock_affine clk;
	uint32_t end;	    /* min(the data's end, the block's page end) */
	uint32_t min_type;  /* the shortest record taken, in words */
	uint32_t note_type; /* with a note: the shortest that holds it */
	uint32_t note_off;
	uint32_t note_last;
	uint16_t unknown_id;
	bool note;
};

/* The clock conversion a run's loop is built for (pk_run()). */
enum pk_clock { PK_CLOCK_NONE, PK_CLOCK_UNSYNCED, PK_CLOCK_SYNCED };

static inline __attribute__((always_inline)) uint64_t
pk_convert(const struct hvt_clock_affine *clk, enum pk_clock mode, uint64_t ts)
{
	struct hvt_clock_affine a = *clk;

	/* hvt_clock_affine_to_host() with its tests of the mode known. */
	a.identity = mode == PK_CLOCK_NONE;
	a.synced = mode == PK_CLOCK_SYNCED;
	return hvt_clock_affine_to_host(&a, ts);
}

static inline __attribute__((always_inline)) bool
pk_run_take(const struct pk_run_ctx *c, enum pk_clock mode, uint32_t at,
	    uint32_t next, uint32_t hdr, uint64_t *ts, uint64_t *prev,
	    uint32_t *unknown, uint32_t *clamped)
{
	uint32_t type = hdr & ((1u << HVT_TYPE_LEN_BITS) - 1);
	uint64_t nts = *ts + (hdr >> HVT_TYPE_LEN_BITS), t, delta;
	uint16_t id;
	bool held;

	if (type < c->min_type || type > HVT_TYPE_DATA_MAX ||
	    next - at != 4 + type * 4 || next > c->end)
		return false;
	if (c->note) {
		uint32_t v;

		if (type < c->note_type)
			return false;
		memcpy(&v, c->data + at + 4 + c->note_off, 4);
		if (v != c->note_last)
			return false;
	}
	t = pk_convert(&c->clk, mode, nts);
	held = t < *prev;
	if (held)
		t = *prev;
	delta = t - *prev;
	if (delta > HVT_TS_MASK)
		return false;
	memcpy(&id, c->data + at + 4, 2);
	id = c->idmap[id];
	pk_put32(c->dst + at, type | (uint32_t)delta << HVT_TYPE_LEN_BITS);
	memcpy(c->dst + at + 4, &id, 2);
	*clamped += held;
	*unknown += id == c->unknown_id;
	*prev = t;
	*ts = nts;
	return true;
}

/* The loops of a run, built once for each clock mode. */
static inline __attribute__((always_inline)) void
pk_run_loop(struct pk_run *r, const struct pk_run_ctx *cp, enum pk_clock mode)
{
	const struct pk_run_ctx c = *cp;
	uint32_t size = r->in->size, pos = r->pos, k = r->k, n = 0;
	uint32_t unknown = 0, clamped = 0, next, hdr;
	uint64_t ts = r->ts, prev = r->prev;

	if (r->off && k < r->nr && r->off[k] == pos) {
		/* off[nr] is where the last record ends. */
		const uint32_t *off = r->off;
		uint32_t nr = r->nr, k0 = k;

		for (; k < nr; k++) {
			uint32_t at = off[k];

			next = off[k + 1];
			if (next > c.end || next < at + 8)
				break;
			hdr = hvt_rd32(c.data + at);
			if (!pk_run_take(&c, mode, at, next, hdr, &ts, &prev,
					 &unknown, &clamped))
				break;
		}
		n = k - k0;
		pos = off[k];
	} else if (!r->off) {
		for (; size - pos >= 8; n++) {
			hdr = hvt_rd32(c.data + pos);
			next = pos + 4 +
			       (hdr & ((1u << HVT_TYPE_LEN_BITS) - 1)) * 4;
			if (!pk_run_take(&c, mode, pos, next, hdr, &ts, &prev,
					 &unknown, &clamped))
				break;
			pos = next;
		}
	}
	r->pos = pos;
	r->ts = ts;
	r->prev = prev;
	r->k = k;
	r->n += n;
	r->unknown += unknown;
	r->clamped += clamped;
}

static __attribute__((noinline)) void pk_run(struct pk_run *r)
{
	const struct hvt_pack_page_in *in = r->in;
	struct pk_run_ctx c = {
		.data = in->data,
		.dst = r->dst,
		.idmap = in->idmap,
		.clk = *in->clk,
		.end = r->end < in->size ? r->end : in->size,
		.min_type = in->min_len > 4 ? (in->min_len + 3) / 4 : 1,
		.note_type = (in->note_off + 4 + 3) / 4,
		.note_off = in->note_off,
		.note_last = r->note_last,
		.unknown_id = in->unknown_id,
		.note = in->note != NULL,
	};

	if (c.note && !r->noted)
		return; /* the loop notes the first */
	if (c.clk.identity)
		pk_run_loop(r, &c, PK_CLOCK_NONE);
	else if (!c.clk.synced)
		pk_run_loop(r, &c, PK_CLOCK_UNSYNCED);
	else
		pk_run_loop(r, &c, PK_CLOCK_SYNCED);
}

/* The index entry after a record the loop walked itself. */
static inline uint32_t pk_index_step(const uint32_t *off, uint32_t nr,
				     uint32_t k, uint32_t evt_pos)
{
	if (k >= nr)
		return k;
	return off[k] == evt_pos ? k + 1 : nr;
}

int hvt_pack_add_page(struct hvtrace_pack *p, const struct hvt_pack_page_in *in,
		      struct hvt_pack_page_out *out)
{
	const struct hvt_item_index *ix = in->ix && in->ix->nr ? in->ix : NULL;
	struct pk_run r = {
		.in = in,
		.prev = in->prev,
		.off = ix ? ix->off : NULL,
		.nr = ix ? ix->nr : 0,
	};
	uint64_t t, delta, run_ts;
	uint32_t hdr, at, base = 0, limit = 0;
	bool have = in->have_prev, block = false, held;
	struct hvt_page_iter it;
	uint8_t *d = p->page + HVT_PAGE_HDR_SIZE;
	uint16_t id;
	int item, ret = 0;

	hvt_page_iter_init(&it, in->data, in->size, in->ts);
	for (;;) {
		/* Where the caller goes on if this record stays with it. */
		at = it.pos;
		run_ts = it.ts;
		item = hvt_page_next(&it);
		if (item > 0)
			r.k = pk_index_step(r.off, r.nr, r.k, it.evt_pos);
		if (item <= 0 || !pk_plain(&it, item, in->min_len))
			break;
		t = hvt_clock_affine_to_host(in->clk, it.ts);
		held = have && t < r.prev;
		if (held)
			t = r.prev; /* as the caller's event path holds it */
		memcpy(&id, it.payload, 2);
		id = in->idmap[id];
		if (!block && pk_appends(p, t, it.len)) {
			/* The open page takes it: as add_event() does. */
			ret = hvtrace_pack_add_event(p, t, it.payload, it.len);
			if (ret)
				break;
			memcpy(d + p->pos - it.len, &id, 2);
		} else {
			if (!block) {
				/* The rest of the page starts a fresh one,
				 * copied once and rewritten in place. */
				if (p->open) {
					ret = hvtrace_pack_flush(p);
					if (ret)
						break;
				}
				limit = pk_limit(p);
				memcpy(d, in->data + at,
				       in->size - at < limit ? in->size - at
							     : limit);
				base = at;
				pk_put64(p->page, t);
				r.prev = t;
				r.dst = d - base;
				r.end = base + limit;
				p->open = true;
				p->pos = 0;
				block = true;
			}
			delta = t - r.prev;
			/* add_event() would add a TIME_EXTEND or close the
			 * page: that record stays with the caller. */
			if (delta > HVT_TS_MASK || it.pos - base > limit)
				break;
			hdr = (hvt_rd32(in->data + at) &
			       ((1u << HVT_TYPE_LEN_BITS) - 1)) |
			      (uint32_t)delta << HVT_TYPE_LEN_BITS;
			pk_put32(d + at - base, hdr);
			memcpy(d + (uint32_t)(it.payload - it.data) - base, &id,
			       2);
			p->pos = it.pos - base;
			p->last_ts = t;
		}
		r.clamped += held;
		r.unknown += id == in->unknown_id;
		if (in->note) {
			bool holds = it.len >= in->note_off + 4;
			uint32_t v = 0;

			if (holds)
				memcpy(&v, it.payload + in->note_off, 4);
			if (!holds || !r.noted || v != r.note_last)
				in->note(in->note_ctx, it.payload, it.len);
			/* After a record too short to hold the field, the
			 * next is noted whatever it holds. */
			r.note_last = v;
			r.noted = holds;
		}
		r.prev = t;
		have = true;
		r.n++;
		if (block) {
			/* The block's records that follow, in one run. */
			uint32_t n0 = r.n;

			r.pos = it.pos;
			r.ts = it.ts;
			pk_run(&r);
			it.pos = r.pos;
			it.ts = r.ts;
			if (r.n != n0) {
				p->pos = r.pos - base;
				p->last_ts = r.prev;
			}
		}
	}
	/* A page opened for the block with nothing in it stays closed. */
	if (block && !p->pos)
		p->open = false;
	out->events = r.n;
	out->unknown = r.unknown;
	out->clamped = r.clamped;
	out->last_ts = r.prev;
	out->pos = at;
	out->ts = run_ts;
	return ret;
}

int hvtrace_pack_add_event(struct hvtrace_pack *p, uint64_t ts,
			   const uint8_t *rec, uint32_t len)
{
	uint32_t need, hdr_len, limit, at;
	uint64_t delta;
	uint8_t *d;
	int ret;

	if (!len || (len & 3))
		return -EINVAL;
	hdr_len = len <= PK_SMALL_MAX ? 4 : 8;
	if (p->open && ts < p->last_ts)
		ts = p->last_ts; /* callers keep time monotonic; be safe */
	delta = p->open ? ts - p->last_ts : 0;
	need = hdr_len + len + (delta > HVT_TS_MASK ? 8u : 0u);
	if (p->open && !pk_appends(p, ts, len)) {
		ret = hvtrace_pack_flush(p);
		if (ret)
			return ret;
		delta = 0;
		need = hdr_len + len;
	}
	if (!p->open) {
		delta = 0;
		need = hdr_len + len;
		if (need > pk_limit(p)) {
			if (need > p->data_size)
				return -E2BIG;
			/* No room left for the lost count: still say that
			 * events were lost, without the number. */
			p->missed_unknown = true;
		}
		pk_put64(p->page, ts);
		p->open = true;
		p->pos = 0;
	}
	d = p->page + HVT_PAGE_HDR_SIZE;
	at = p->pos;
	if (delta > HVT_TS_MASK) {
		pk_put32(d + at,
			 HVT_TYPE_TIME_EXTEND | ((uint32_t)(delta & HVT_TS_MASK)
						 << HVT_TYPE_LEN_BITS));
		pk_put32(d + at + 4, (uint32_t)(delta >> HVT_TS_BITS));
		at += 8;
		delta = 0;
	}
	limit = (uint32_t)delta << HVT_TYPE_LEN_BITS;
	if (hdr_len == 4) {
		pk_put32(d + at, (len / 4) | limit);
	} else {
		pk_put32(d + at, 0 | limit);
		pk_put32(d + at + 4, len + 4);
	}
	memcpy(d + at + hdr_len, rec, len);
	p->pos = at + hdr_len + len;
	p->last_ts = ts;
	return 0;
}
