// SPDX-License-Identifier: MIT
/*
 * libhvtrace: a ring whose pages a caller supplies
 * (hvtrace_ring_open_source()), e.g. a remote's CPU read through hvtraced.
 *
 * Laid out as the guest kernel view (ring.c): a meta page and two private
 * reader pages, ids 0 and 1.  get-reader asks the source for its next page
 * and validates it with the readers' one sub-buffer validation
 * (hvt_subbuf_take(): every event through the page walker), which is also
 * the one copy of its events, straight to where the cursor reads them:
 *
 *   continues the current reader page    (same seq, nothing lost before it,
 *                                         page time_stamp == the running
 *                                         time after that page's events,
 *                                         and room) -> validated into the
 *                                         page after its data: same id,
 *                                         larger reader.read
 *   otherwise                             -> validated into the other page:
 *                                         new reader.id, with its losses
 *
 * An append takes the sub-buffer into the current page at its data end;
 * hvt_subbuf_take() writes a 16-byte header in front of what it copies,
 * over the last 16 bytes already there, which are saved and put back.
 *
 * A page with no event hands its losses to the next; a malformed page is
 * counted and skipped, its events lost (count unknown).  A page cut short
 * so that its lost count fits (hvt_subbuf_take()'s cut) is held and its
 * rest taken by the next get-reader: the source keeps it valid until its
 * next next_page call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring-local.h"
#include "subbuf.h"

/* Pages one get-reader looks at (empty or malformed ones are passed). */
#define RING_SRC_PAGES_PER_CALL	64

struct ring_src {
	struct ring_priv p;
	const struct hvtrace_ring_source_ops *ops;
	void *ctx;
	uint64_t pending_lost;		/* for the next page built */
	uint64_t end_ts;		/* running time after the reader
					 * page's last event */
	bool mapped;			/* a to_host conversion worked */
	/* the source's page cut short, its rest still to take */
	bool hold;
	struct hvtrace_ring_page held;
	uint32_t held_size;
	uint32_t held_pos;
	uint64_t held_ts;
	struct hvtrace_ring_source_stats st;
};

static const struct ring_ops ring_src_ops;

static struct ring_src *to_src(const struct hvtrace_ring *r)
{
	return container_of(r, struct ring_src, p.r);
}

static uint64_t lost_add(uint64_t a, uint64_t b)
{
	if (a == HVTRACE_LOST_UNKNOWN || b == HVTRACE_LOST_UNKNOWN)
		return HVTRACE_LOST_UNKNOWN;
	return a + b >= a && a + b != HVTRACE_LOST_UNKNOWN ?
		       a + b : HVTRACE_LOST_UNKNOWN;
}

static void ring_src_counters(struct ring_src *s)
{
	struct hvt_trace_buffer_meta *m = s->p.r.meta;

	/* Only what this reader saw, as for a guest kernel ring. */
	m->entries = s->st.events + s->st.lost_events;
	m->overrun = s->st.lost_events;
	m->read = s->st.events;
}

static void ring_src_lost(struct ring_src *s, uint64_t lost)
{
	if (lost == HVTRACE_LOST_UNKNOWN)
		s->st.lost_unknown++;
	else
		s->st.lost_events += lost;
}

/*
 * Validate the data [@pos, @size) of @pg (running time @pos_ts there) into
 * the view: appended to the current reader page when it continues it,
 * else into the other page.  Return: 1 built, 0 nothing but padding,
 * -EBADMSG.
 */
static int ring_src_take(struct ring_src *s, const struct hvtrace_ring_page *pg,
			 uint32_t size, uint32_t pos, uint64_t pos_ts,
			 uint64_t lost)
{
	struct hvtrace_ring *r = &s->p.r;
	struct hvt_trace_buffer_meta *m = r->meta;
	const uint8_t *data = (const uint8_t *)pg->data + HVT_PAGE_HDR_SIZE;
	uint32_t max = r->subbuf_size - HVT_PAGE_HDR_SIZE;
	uint32_t cur = m->reader.id, other = cur ? 0 : 1;
	uint8_t *cpage = r->data + (size_t)cur * r->subbuf_size;
	uint8_t save[HVT_PAGE_HDR_SIZE];
	struct hvt_take t;
	uint64_t commit;
	int ret;

	memcpy(&commit, cpage + HVT_PAGE_COMMIT_OFF, 8);
	if (s->p.page_valid && pg->seq == s->p.page_seq && !lost &&
	    !(commit & HVT_COMMIT_FLAGS) && commit == m->reader.read &&
	    pos_ts == s->end_ts && size - pos <= max - commit) {
		uint8_t *out = cpage + commit;

		memcpy(save, out, sizeof(save));
		ret = hvt_subbuf_take(data, size, max, pos, pos_ts, 0, out, &t,
				      NULL);
		memcpy(out, save, sizeof(save));
		if (ret <= 0)
			return ret;
		commit += t.end - pos;
		memcpy(cpage + HVT_PAGE_COMMIT_OFF, &commit, 8);
		m->reader.read = (uint32_t)commit;
		s->st.appended++;
	} else {
		uint8_t *opage = r->data + (size_t)other * r->subbuf_size;

		ret = hvt_subbuf_take(data, size, max, pos, pos_ts, lost,
				      opage, &t, NULL);
		if (ret <= 0)
			return ret;
		if (t.no_room)
			r->errors++;
		m->reader.id = other;
		m->reader.read = t.end - pos;
		m->reader.lost_events = lost;
		ring_src_lost(s, lost);
	}
	s->p.page_valid = true;
	s->p.page_seq = pg->seq;
	s->end_ts = t.end_ts;
	s->st.events += t.n;
	s->st.copied += t.end - pos;
	s->hold = t.cut;
	if (t.cut) {
		s->held = *pg;
		s->held_size = size;
		s->held_pos = t.end;
		s->held_ts = t.end_ts;
	}
	return 1;
}

/* A page the walker refused: skipped, its events lost (count unknown). */
static void ring_src_malformed(struct ring_src *s)
{
	s->p.r.errors++;
	s->st.skipped++;
	s->pending_lost = HVTRACE_LOST_UNKNOWN;
}

static int ring_src_get_reader(struct hvtrace_ring *r)
{
	struct ring_src *s = to_src(r);
	int i, ret = 0;

	if (s->hold) {
		/* The rest of a page cut short: nothing lost before it. */
		struct hvtrace_ring_page pg = s->held;

		s->hold = false;
		ret = ring_src_take(s, &pg, s->held_size, s->held_pos,
				    s->held_ts, 0);
		if (ret < 0)
			ring_src_malformed(s);
		if (ret > 0)
			goto out;
	}
	for (i = 0; i < RING_SRC_PAGES_PER_CALL; i++) {
		struct hvtrace_ring_page pg;
		uint64_t page_ts, lost;
		uint32_t size;

		memset(&pg, 0, sizeof(pg));
		ret = s->ops->next_page(s->ctx, r->cpu, &pg);
		if (ret < 0)
			return ret;
		if (!ret)
			break;
		s->st.pages++;
		if (!pg.data || pg.len < HVT_PAGE_HDR_SIZE ||
		    pg.len > r->subbuf_size ||
		    sb_header(pg.data, pg.len, &page_ts, &size, &lost)) {
			ring_src_malformed(s);
			continue;
		}
		lost = lost_add(lost_add(s->pending_lost, lost),
				pg.lost_events);
		ret = ring_src_take(s, &pg, size, 0, page_ts, lost);
		if (ret < 0) {
			ring_src_malformed(s);
			continue;
		}
		if (!ret) {
			/* No event to carry the losses: the next page does. */
			s->st.empty++;
			s->pending_lost = lost;
			continue;
		}
		s->pending_lost = 0;
		break;
	}
out:
	ring_src_counters(s);
	return 0;
}

static void ring_src_close(struct hvtrace_ring *r)
{
	struct ring_src *s = to_src(r);

	if (s->ops && s->ops->close)
		s->ops->close(s->ctx, r->cpu);
	free(s);
}

static uint64_t ring_src_to_host(struct hvtrace_ring *r, uint64_t ts)
{
	struct ring_src *s = to_src(r);
	uint64_t ns, err = 0;

	if (!s->ops->to_host)
		return ts;	/* not the host's clock */
	if (s->ops->to_host(s->ctx, r->cpu, ts, &ns, &err) < 0) {
		s->st.map_errors++;
		return ts;
	}
	s->mapped = true;
	if (err > s->st.err_ns)
		s->st.err_ns = err;
	return ns;
}

static uint64_t ring_src_now_ns(struct hvtrace_ring *r, uint64_t now)
{
	return to_src(r)->mapped ? now : 0;
}

/* Losses carried by pages with no event after them. */
static uint64_t ring_src_trailing_lost(struct hvtrace_ring *r)
{
	struct ring_src *s = to_src(r);
	uint64_t n = s->pending_lost;

	s->pending_lost = 0;
	if (n)
		ring_src_lost(s, n);
	return n;
}

static const struct ring_ops ring_src_ops = {
	.get_reader = ring_src_get_reader,
	.close = ring_src_close,
	.now_ns = ring_src_now_ns,
	.to_host = ring_src_to_host,
	.take_trailing_lost = ring_src_trailing_lost,
};

HVTRACE_API int
hvtrace_ring_open_source(const struct hvtrace_ring_source_ops *ops, void *ctx,
			 int cpu, uint32_t subbuf_size,
			 struct hvtrace_ring **out)
{
	struct hvtrace_ring *r;
	struct ring_src *s;
	int ret;

	if (!ops || !ops->next_page || !out)
		return hvt_err(-EINVAL, "hvtrace_ring_open_source: no source "
					"(ops->next_page is required)");
	if (cpu < 0 || subbuf_size < 4096 || subbuf_size > (1u << 20) ||
	    (subbuf_size & (subbuf_size - 1)))
		return hvt_err(-EINVAL, "hvtrace_ring_open_source: CPU %d, "
					"sub-buffer size %u: the size must be "
					"a power of two from 4 KiB to 1 MiB",
			       cpu, subbuf_size);
	r = ring_new(sizeof(*s), offsetof(struct ring_src, p.r), cpu,
		     &ring_src_ops);
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	s = to_src(r);
	ring_priv_setup(&s->p, subbuf_size, 0);
	ret = ring_reserve(r, 0);
	if (ret) {
		free(s);	/* not the source's: no close hook yet */
		return ret;
	}
	s->ops = ops;
	s->ctx = ctx;
	*out = r;
	return 0;
}

HVTRACE_API int
hvtrace_ring_source_stats(const struct hvtrace_ring *r,
			  struct hvtrace_ring_source_stats *st)
{
	if (!r || !st || r->ops != &ring_src_ops)
		return hvt_err(-EINVAL, "hvtrace_ring_source_stats: not a "
					"ring of hvtrace_ring_open_source()");
	*st = to_src(r)->st;
	return 0;
}
