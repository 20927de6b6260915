// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the recorder's page path over arbitrary page data.
 *
 * Input: 8 bytes of page time_stamp, then the page data (the committed
 * size is the rest of the input, up to a 4 KiB page's data), as for
 * page_walk.  The time stamp's low bits also pick the clock conversion
 * (none, a writer not synced, a synced model) and the shortest record
 * the recorder takes.
 *
 * The reader's validation (hvt_subbuf_take()) takes the page and writes
 * down its index of record starts; the packer (hvt_pack_add_page()) then
 * packs the page it built twice, with the index and walking it itself.
 * Both must stay inside their buffers (ASan sees exact allocations) and
 * give the same result: the same records counted, the same place to go
 * on from, the same bytes on the page, the same records noted.  The
 * records the packer leaves then go through the event path, as the
 * recorder sends them; and the whole must come out as the event path
 * alone writes it (hvtrace_pack_add_event() record by record): the same
 * pages byte for byte, the same pids noted, change by change.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>

#include "../../host/lib/subbuf.h"
#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PAGE 4096u
#define DATA (PAGE - HVT_PAGE_HDR_SIZE)

struct run {
	struct hvtrace_pack p;
	uint8_t *emitted; /* the last page emitted */
	uint32_t emitted_size;
	uint32_t pages;
	uint64_t pages_hash; /* of every page emitted */
	/* the pids noted, change by change (a short record: 0) */
	uint32_t notes;
	uint64_t notes_hash;
	uint32_t last_note;
	/* the event path's state */
	uint64_t events, unknown, clamped, last;
	bool have;
};

static uint64_t hash(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}

static int on_page(void *ctx, const uint8_t *page, uint32_t size)
{
	struct run *r = ctx;

	fuzz_assert(size <= PAGE);
	memcpy(r->emitted, page, size);
	r->emitted_size = size;
	r->pages++;
	r->pages_hash = hash(hash(r->pages_hash, &size, 4), page, size);
	return 0;
}

static void on_note(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct run *r = ctx;
	uint32_t v = 0;

	if (len >= 8)
		memcpy(&v, rec + 4, 4);
	if (r->notes && v == r->last_note)
		return;
	r->notes++;
	r->last_note = v;
	r->notes_hash = hash(r->notes_hash, &v, 4);
}

/* The event path from @pos (running time @run_ts): each record at its
 * converted time, held at the last, its id rewritten, noted. */
static void by_event(struct run *r, const uint8_t *d, uint32_t size,
		     uint32_t pos, uint64_t run_ts,
		     const struct hvt_clock_affine *clk, const uint16_t *idmap,
		     uint32_t min_len)
{
	struct hvt_page_iter it;
	int item;

	hvt_page_iter_init(&it, d, size, run_ts);
	it.pos = pos;
	while ((item = hvt_page_next(&it)) > 0) {
		uint64_t t;
		uint16_t id;

		if (item != HVT_ITEM_DATA || it.len < min_len)
			continue;
		t = hvt_clock_affine_to_host(clk, it.ts);
		if (r->have && t < r->last) {
			t = r->last;
			r->clamped++;
		}
		r->last = t;
		r->have = true;
		fuzz_assert(hvtrace_pack_add_event(&r->p, t, it.payload,
						   it.len) == 0);
		memcpy(&id, it.payload, 2);
		id = idmap[id];
		memcpy(r->p.page + HVT_PAGE_HDR_SIZE + r->p.pos - it.len, &id,
		       2);
		r->unknown += id == 7;
		r->events++;
		on_note(r, it.payload, it.len);
	}
}

static void pack(struct run *r, const uint8_t *page_data, uint32_t size,
		 uint64_t ts, const struct hvt_clock_affine *clk,
		 const uint16_t *idmap, uint32_t min_len,
		 const struct hvt_item_index *ix, struct hvt_pack_page_out *out)
{
	struct hvt_pack_page_in in = {
		.data = page_data,
		.size = size,
		.ts = ts,
		.ix = ix,
		.clk = clk,
		.idmap = idmap,
		.unknown_id = 7,
		.min_len = min_len,
		.note = on_note,
		.note_ctx = r,
		.note_off = 4,
	};

	memset(r, 0, sizeof(*r));
	r->emitted = malloc(PAGE);
	fuzz_assert(r->emitted);
	fuzz_assert(hvtrace_pack_init(&r->p, PAGE, on_page, r) == 0);
	fuzz_assert(hvt_pack_add_page(&r->p, &in, out) == 0);
	fuzz_assert(out->pos <= size);
	r->events = out->events;
	r->unknown = out->unknown;
	r->clamped = out->clamped;
	r->last = out->last_ts;
	r->have = out->events > 0;
	by_event(r, page_data, size, out->pos, out->ts, clk, idmap, min_len);
	fuzz_assert(hvtrace_pack_flush(&r->p) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint16_t idmap[65536];
	static uint32_t off[DATA / 8 + 2];
	struct hvt_item_index ix = {off, DATA / 8 + 2, 0};
	struct hvt_pack_page_out oa, ob;
	struct hvt_clock_affine clk = {0};
	struct run a, b, e;
	struct hvt_take t;
	uint8_t *copy, *out;
	uint32_t dsize, min_len, i;
	uint64_t ts;
	int ret;

	if (size < 8 || size - 8 > DATA)
		return 0;
	memcpy(&ts, data, 8);
	dsize = (uint32_t)(size - 8);
	if (!idmap[1])
		for (i = 0; i < 65536; i++)
			idmap[i] = (uint16_t)(i * 40503u);
	switch (ts & 3) {
	case 0:
		clk.identity = true;
		break;
	case 1: /* not synced: 0.37 ns a tick */
		clk.rate_frac = (uint64_t)(0.37 * 0x1p64);
		break;
	default: /* synced: 2.5 ns a tick around a base */
		clk.synced = true;
		clk.rate_int = 2;
		clk.rate_frac = 1ULL << 63;
		clk.base_writer = ts >> 8;
		clk.base_host = 1ULL << 40;
		break;
	}
	min_len = 4u << ((ts >> 2) & 1);

	/* The reader's private copy (exact size for ASan), then its page. */
	copy = malloc(dsize ? dsize : 1);
	out = malloc(PAGE);
	fuzz_assert(copy && out);
	memcpy(copy, data + 8, dsize);
	ret = hvt_subbuf_take(copy, dsize, DATA, 0, ts, 0, out, &t, &ix);
	if (ret <= 0) {
		/* Skipped (no index), or nothing but padding. */
		fuzz_assert(ret == 0 || ix.nr == 0);
		goto out;
	}
	/* The index: ascending starts from 0, closed by the end. */
	fuzz_assert(ix.nr > 0 && ix.nr < ix.cap);
	fuzz_assert(off[0] == 0 && off[ix.nr] == t.end);
	for (i = 0; i < ix.nr; i++)
		fuzz_assert(off[i] + 8 <= off[i + 1]);

	pack(&a, out + HVT_PAGE_HDR_SIZE, t.end, ts, &clk, idmap, min_len, &ix,
	     &oa);
	pack(&b, out + HVT_PAGE_HDR_SIZE, t.end, ts, &clk, idmap, min_len, NULL,
	     &ob);
	fuzz_assert(oa.events == ob.events && oa.unknown == ob.unknown &&
		    oa.clamped == ob.clamped && oa.last_ts == ob.last_ts &&
		    oa.pos == ob.pos && oa.ts == ob.ts);
	/* The event path alone. */
	memset(&e, 0, sizeof(e));
	e.emitted = malloc(PAGE);
	fuzz_assert(e.emitted);
	fuzz_assert(hvtrace_pack_init(&e.p, PAGE, on_page, &e) == 0);
	by_event(&e, out + HVT_PAGE_HDR_SIZE, t.end, 0, ts, &clk, idmap,
		 min_len);
	fuzz_assert(hvtrace_pack_flush(&e.p) == 0);
	for (i = 0; i < 2; i++) {
		struct run *x = i ? &b : &a;

		fuzz_assert(x->events == e.events && x->unknown == e.unknown &&
			    x->clamped == e.clamped);
		fuzz_assert(x->pages == e.pages &&
			    x->pages_hash == e.pages_hash);
		fuzz_assert(x->notes == e.notes &&
			    x->notes_hash == e.notes_hash);
	}
	hvtrace_pack_fini(&a.p);
	hvtrace_pack_fini(&b.p);
	hvtrace_pack_fini(&e.p);
	free(a.emitted);
	free(b.emitted);
	free(e.emitted);
out:
	free(copy);
	free(out);
	return 0;
}
