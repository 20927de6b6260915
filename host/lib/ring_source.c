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
 * A page the source lends (HVTRACE_PAGE_LENT: private memory nobody
 * writes until it is released, such as a frame the daemon client
 * received) is not copied when the copy would change nothing: a whole
 * sub-buffer (from data offset 0, no trailing padding header), whose
 * header already says all of its losses (none pending, none from the
 * transport) and has no stray commit bits.  It is validated where it
 * lies (hvt_subbuf_take() without output) and becomes the other reader
 * page in place (r->lent, ring_page()); it is released when the reader
 * switches away from it, or copied into its slot first when the next page
 * appends to it.  Every other lent page takes the copy path and is
 * released at once (or when its held rest is taken).
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
	/* the lent page shown in place as the reader page (r->lent) */
	struct hvtrace_ring_page lent_pg;
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

/* Done with page @pg of the source: a lent one goes back. */
static void ring_src_release(struct ring_src *s,
			     const struct hvtrace_ring_page *pg)
{
	if (pg->flags & HVTRACE_PAGE_LENT)
		s->ops->release(s->ctx, s->p.r.cpu, pg);
}

/* The reader page in place goes back (the reader switched away). */
static void ring_src_unlend(struct ring_src *s)
{
	if (!s->p.r.lent)
		return;
	s->p.r.lent = NULL;
	ring_src_release(s, &s->lent_pg);
}

/* Copy the reader page in place into its slot, to append to it there. */
static void ring_src_own_reader(struct ring_src *s)
{
	struct hvtrace_ring *r = &s->p.r;

	if (!r->lent)
		return;
	memcpy(r->data + (size_t)r->lent_id * r->subbuf_size, r->lent,
	       s->lent_pg.len);
	s->st.copied += s->lent_pg.len - HVT_PAGE_HDR_SIZE;
	ring_src_unlend(s);
}

/*
 * Whether lent page @pg, whose data [0, @size) holds the events and whose
 * header says all of its losses, may be read in place: nothing the copy
 * would rewrite (stray commit bits, a stored count past the page).
 */
static bool ring_src_as_is(const struct hvtrace_ring_page *pg, uint32_t size)
{
	uint64_t commit;

	memcpy(&commit, (const uint8_t *)pg->data + HVT_PAGE_COMMIT_OFF, 8);
	if (commit & ~(uint64_t)(HVT_COMMIT_SIZE_MASK | HVT_COMMIT_FLAGS))
		return false;
	if ((commit & HVT_MISSED_STORED) &&
	    (uint64_t)size + 8 > pg->len - HVT_PAGE_HDR_SIZE)
		return false;
	return true;
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
 * Lent page @pg, read as it is, becomes reader page @id in place if its
 * events validate and the copy would have taken all of them.  Return: 2
 * in place, 0 not (take the copy path), -EBADMSG.
 */
static int ring_src_lend(struct ring_src *s, const struct hvtrace_ring_page *pg,
			 uint32_t size, uint64_t page_ts, uint64_t lost,
			 uint32_t id, struct hvt_take *t)
{
	struct hvtrace_ring *r = &s->p.r;
	struct hvt_trace_buffer_meta *m = r->meta;
	int ret;

	ret = hvt_subbuf_take((const uint8_t *)pg->data + HVT_PAGE_HDR_SIZE,
			      size, r->subbuf_size - HVT_PAGE_HDR_SIZE, 0,
			      page_ts, lost, NULL, t, NULL);
	if (ret <= 0)
		return ret;
	if (t->end != size || t->cut || t->no_room)
		return 0;
	ring_src_unlend(s);
	r->lent = pg->data;
	r->lent_id = id;
	s->lent_pg = *pg;
	m->reader.id = id;
	m->reader.read = size;
	m->reader.lost_events = lost;
	ring_src_lost(s, lost);
	return 2;
}

/*
 * Validate the data [@pos, @size) of @pg (running time @pos_ts there) into
 * the view: appended to the current reader page when it continues it,
 * else into the other page, in place when @as_is says the page's header
 * already carries @lost and the source lent it.  Return: 2 in place, 1
 * built, 0 nothing but padding, -EBADMSG.
 */
static int ring_src_take(struct ring_src *s, const struct hvtrace_ring_page *pg,
			 uint32_t size, uint32_t pos, uint64_t pos_ts,
			 uint64_t lost, bool as_is)
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
	int ret = 0, in_place = 0;

	memcpy(&commit, ring_page(r, cur) + HVT_PAGE_COMMIT_OFF, 8);
	if (s->p.page_valid && pg->seq == s->p.page_seq && !lost &&
	    !(commit & HVT_COMMIT_FLAGS) && commit == m->reader.read &&
	    pos_ts == s->end_ts && size - pos <= max - commit) {
		uint8_t *out = cpage + commit;

		ring_src_own_reader(s);
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
	} else if (as_is && !pos && (pg->flags & HVTRACE_PAGE_LENT) &&
		   ring_src_as_is(pg, size) &&
		   (in_place = ring_src_lend(s, pg, size, pos_ts, lost, other,
					     &t)) != 0) {
		if (in_place < 0)
			return in_place;
	} else {
		uint8_t *opage = r->data + (size_t)other * r->subbuf_size;

		ret = hvt_subbuf_take(data, size, max, pos, pos_ts, lost,
				      opage, &t, NULL);
		if (ret <= 0)
			return ret;
		if (t.no_room)
			r->errors++;
		ring_src_unlend(s);
		m->reader.id = other;
		m->reader.read = t.end - pos;
		m->reader.lost_events = lost;
		ring_src_lost(s, lost);
	}
	s->p.page_valid = true;
	s->p.page_seq = pg->seq;
	s->end_ts = t.end_ts;
	s->st.events += t.n;
	s->hold = t.cut; /* never for a page in place */
	if (in_place)
		return 2;
	s->st.copied += t.end - pos;
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
				    s->held_ts, 0, false);
		if (ret < 0)
			ring_src_malformed(s);
		if (!s->hold)
			ring_src_release(s, &pg);
		if (ret > 0)
			goto out;
	}
	for (i = 0; i < RING_SRC_PAGES_PER_CALL; i++) {
		struct hvtrace_ring_page pg;
		uint64_t page_ts, lost;
		uint32_t size;
		bool as_is;

		memset(&pg, 0, sizeof(pg));
		ret = s->ops->next_page(s->ctx, r->cpu, &pg);
		if (ret < 0)
			return ret;
		if (!ret)
			break;
		if (!s->ops->release)
			pg.flags &= ~HVTRACE_PAGE_LENT; /* nothing to lend to */
		s->st.pages++;
		if (!pg.data || pg.len < HVT_PAGE_HDR_SIZE ||
		    pg.len > r->subbuf_size ||
		    sb_header(pg.data, pg.len, &page_ts, &size, &lost)) {
			ring_src_release(s, &pg);
			ring_src_malformed(s);
			continue;
		}
		as_is = !s->pending_lost && !pg.lost_events;
		lost = lost_add(lost_add(s->pending_lost, lost),
				pg.lost_events);
		ret = ring_src_take(s, &pg, size, 0, page_ts, lost, as_is);
		if (ret != 2 && !(ret == 1 && s->hold))
			ring_src_release(s, &pg); /* not kept: copied or bad */
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

	if (s->ops) {
		ring_src_unlend(s);
		if (s->hold)
			ring_src_release(s, &s->held);
		if (s->ops->close)
			s->ops->close(s->ctx, r->cpu);
	}
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
