// SPDX-License-Identifier: MIT
/*
 * libhvtrace: walking one ftrace sub-buffer into records.
 *
 * The public face of the bounded walker in subbuf.h; the ring cursor
 * (ring.c) uses the same walker, so what the benchmark measures is what
 * the stream path runs.
 */
#include <errno.h>
#include <string.h>

#include "subbuf.h"

HVTRACE_API int hvtrace_subbuf_iter_init(struct hvtrace_subbuf_iter *it,
					 const void *subbuf,
					 size_t subbuf_size, int cpu)
{
	uint64_t ts, lost;
	uint32_t size;
	int ret;

	if (!it || !subbuf)
		return hvt_err(-EINVAL,
			       "hvtrace_subbuf_iter_init: NULL argument");
	memset(it, 0, sizeof(*it));
	it->cpu = cpu;
	if (subbuf_size < HVT_PAGE_HDR_SIZE || subbuf_size > (1u << 27))
		return hvt_err(-EINVAL, "sub-buffer size %zu out of range",
			       subbuf_size);
	ret = sb_header(subbuf, subbuf_size, &ts, &size, &lost);
	it->data = (const uint8_t *)subbuf + HVT_PAGE_HDR_SIZE;
	it->ts = ts;
	if (ret)
		return hvt_err(ret, "sub-buffer commit size runs past its %zu "
				    "bytes",
			       subbuf_size);
	it->size = size;
	it->lost = lost;
	return 0;
}

HVTRACE_API int hvtrace_subbuf_next(struct hvtrace_subbuf_iter *it,
				    struct hvtrace_record *rec)
{
	const uint8_t *payload;
	uint32_t len;
	int ret;

	ret = sb_step(it->data, it->size, &it->pos, &it->ts, &payload, &len);
	if (ret <= 0) {
		if (ret < 0) {
			it->pos = it->size;	/* stay at the end */
			return hvt_err(ret, "malformed event in sub-buffer");
		}
		return 0;
	}
	rec->ts = it->ts;
	rec->host_ns = it->ts;
	rec->data = payload;
	rec->size = len;
	rec->cpu = it->cpu;
	rec->lost_before = it->lost;
	rec->fetched_ns = 0;
	it->lost = 0;
	return 1;
}

/*
 * Walk [pos, limit) of @data; stop before an event that ends past @limit.
 * With @ix, write down where each record taken starts, from @pos.
 */
static int sb_count(const uint8_t *data, uint32_t size, uint32_t pos,
		    uint64_t ts, uint32_t limit, struct hvt_take *t,
		    struct hvt_item_index *ix)
{
	struct hvt_page_iter it;
	uint32_t k = 0;
	int ret;

	hvt_page_iter_init(&it, data, size, ts);
	it.pos = pos;
	t->n = 0;
	t->end = pos;
	t->end_ts = ts;
	for (;;) {
		ret = hvt_page_next(&it);
		if (ret < 0)
			return ret;
		if (ret == HVT_ITEM_END || it.pos > limit)
			break;
		if (ret == HVT_ITEM_DATA)
			t->n++;
		if (ix && k < ix->cap)
			ix->off[k] = it.evt_pos - pos;
		k++;
		t->end = it.pos;
		t->end_ts = it.ts;
	}
	if (ix) {
		/* The end of the last record closes the list. */
		ix->nr = 0;
		if (k < ix->cap) {
			ix->off[k] = t->end - pos;
			ix->nr = k;
		}
	}
	return 0;
}

int hvt_subbuf_take(const uint8_t *data, uint32_t size, uint32_t data_size,
		    uint32_t pos, uint64_t pos_ts, uint64_t lost, uint8_t *out,
		    struct hvt_take *t, struct hvt_item_index *ix)
{
	uint64_t commit, ts = pos_ts;
	bool store;
	uint32_t len;

	memset(t, 0, sizeof(*t));
	if (ix)
		ix->nr = 0;
	if (size > data_size || pos > size)
		return -EBADMSG;
	/* Validate the whole new part first: a malformed event anywhere in
	 * it makes the caller skip the page. */
	if (sb_count(data, size, pos, pos_ts, size, t, ix) < 0)
		return -EBADMSG; /* @ix->nr stays 0 */
	if (t->n == 0)
		return 0;	/* only padding (or a bare padding header) */
	store = lost && lost != HVTRACE_LOST_UNKNOWN;
	if (store && t->end - pos + 8 > data_size) {
		/*
		 * No room after the data for the lost count: pass on a
		 * shorter page that ends at an event boundary with 8 bytes to
		 * spare, so readers always get the count; the rest follows.
		 */
		struct hvt_take c;

		memset(&c, 0, sizeof(c));
		sb_count(data, size, pos, pos_ts, pos + data_size - 8, &c, ix);
		if (c.n > 0) {
			c.cut = true;
			*t = c;
		} else {
			/* Not even the first event leaves room: a writer never
			 * builds such a page.  Pass it on with
			 * RB_MISSED_EVENTS but no count rather than stall. */
			t->no_room = true;
			store = false;
			if (ix)
				ix->nr = 0; /* the walk to the cut wrote it */
		}
	}
	if (!out)
		return 1; /* validated only */
	len = t->end - pos;
	commit = len;
	memcpy(out, &ts, 8);
	memcpy(out + HVT_PAGE_HDR_SIZE, data + pos, len);
	if (lost) {
		commit |= HVT_MISSED_EVENTS;
		if (store) {
			memcpy(out + HVT_PAGE_HDR_SIZE + len, &lost, 8);
			commit |= HVT_MISSED_STORED;
		}
	}
	memcpy(out + HVT_PAGE_COMMIT_OFF, &commit, 8);
	return 1;
}
