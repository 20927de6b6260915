// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the consuming per-CPU reader.
 *
 * Reads a writer's ring without its cooperation: while it runs, after it
 * stopped, and after it died.  The protocol (see shared/ring_buffer.c):
 *
 *   1. load meta->write with acquire            (pairs with W1, the commit)
 *   2. pick the page to read; older than the tail means final, whose
 *      header commit is valid; the tail page is valid up to the word's
 *      offset
 *   3. s1 = desc[slot].seq (acquire); copy the page; acquire fence;
 *      s2 = desc[slot].seq                        (pairs with W2)
 *      s1 == s2 == expected seq proves no overwrite touched the copy
 *   4. parse only the private copy, validating every event
 *   5. in consume mode, publish progress in the control page (W4)
 *
 *        tally (events accounted: read + lost + discarded)
 *          |
 *   ...----+----------------- page seq ------------------+---- tail ...
 *          ^ events_before(seq) = entries_before + lost_before
 *
 * Exact loss counting: when a page starts, entries_before + lost_before
 * from its descriptor says how many events the writer handled before it.
 * Whatever this reader did not read or account for in between was lost:
 * entries that were overwritten (or hidden in a page skipped as malformed)
 * and events the writer dropped.  The page we return next carries that
 * count in RB_MISSED_EVENTS/RB_MISSED_STORED, as Linux's reader pages do.
 *
 * Events the writer could not place in any buffer (meta->unplaced, see
 * hvt_rb_count_unplaced()) have no position in the ring: the increase of
 * that counter is reported as lost with the buffer's next page, like a
 * drop, and counted in 'dropped' and 'unplaced'.  The reader counts it
 * from 0 (the writer's start), so a post-mortem read reports them all.
 *
 * An owner that opened the area with HVTRACE_OPEN_RESUME (hvtraced) also
 * posts where it is (page, offset, events accounted) in the control page
 * after every page it returns; a successor opened the same way -- the
 * daemon restarted -- resumes there (rd_resume()), so no event is
 * returned twice and the gap to what is still in the ring is counted
 * exactly, in both ring modes.
 *
 * Every loop here is bounded by the ring length; a hostile writer can make
 * a CPU unreadable (and raise its error count), never make us hang or read
 * outside the mapping.  Attaching (where reading starts, resuming a
 * previous owner's position) is reader_attach.c's.
 */
#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>
#include <hvtrace/ring_slot.h>

#include "hvtrace-local.h"
#include "reader.h"
#include "subbuf.h"

/* Move on to the next page. */
static void rd_next_page(struct hvtrace_area *a, struct hvt_rd_cpu *c)
{
	c->seq++;
	c->pos = 0;
	c->started = false;
	hvt_area_publish_consumer(a, c->cpu, c->seq);
}

/*
 * Unplaced events not reported yet: they go out as lost with the next
 * page.  A counter that went backwards (a restarted writer or a corrupt
 * meta) is an error; counting starts afresh from its value.
 */
static uint64_t rd_take_unplaced(struct hvt_rd_cpu *c)
{
	uint64_t u = rd_unplaced_now(c), d;

	if (u < c->tally_u) {
		c->errors++;
		c->tally_u = u;
		return 0;
	}
	d = u - c->tally_u;
	c->tally_u = u;
	c->unplaced += d;
	c->dropped += d;
	return d;
}

/*
 * Account a page start: everything the writer handled before it that we
 * have not accounted for was lost.  The page is c->seq.
 */
static void rd_start_page(struct hvt_rd_cpu *c, uint64_t eb, uint64_t lb,
			  uint64_t page_ts)
{
	/* Entries that can hide between the last page we started and this
	 * one: no more than fit in the pages in between (an event takes at
	 * least 8 bytes).  A descriptor claiming more lies. */
	uint64_t max_ge = (uint64_t)(uint32_t)(c->seq - c->last_start_seq) *
			  (c->data_size / 8);

	/* Before the first page there is no ring to bound the gap by: it is
	 * the writer's own count of its past events (hvt_rd_init()). */
	if (c->gap_from_start) {
		max_ge = UINT64_MAX;
		c->gap_from_start = false;
	}

	if (c->resync) {
		if (c->discard_resync) {
			if (eb > c->tally_e)
				c->discarded += eb - c->tally_e;
			if (lb > c->tally_l)
				c->discarded += lb - c->tally_l;
		}
		c->resync = false;
		c->discard_resync = false;
		c->tally_e = eb;
		c->tally_l = lb;
	} else {
		if (eb >= c->tally_e && lb >= c->tally_l &&
		    eb - c->tally_e <= max_ge) {
			uint64_t ge = eb - c->tally_e, gl = lb - c->tally_l;

			/* Entries we never saw: hidden in a page this reader
			 * skipped as malformed, or else overwritten before we
			 * got to them (overwrite mode, or a consume-mode area
			 * whose owner is another reader). */
			if (c->gap_malformed)
				c->skipped += ge;
			else
				c->overrun += ge;
			c->dropped += gl;
			c->pending_lost += ge + gl;
		} else {
			/* Counters went backwards or jumped further than the
			 * ring could hold: a corrupt descriptor or a
			 * restarted writer.  Start counting afresh. */
			c->errors++;
		}
		c->tally_e = eb;
		c->tally_l = lb;
	}
	c->pending_lost += rd_take_unplaced(c);
	c->gap_malformed = false;
	c->last_start_seq = c->seq;
	c->started = true;
	c->pos = 0;
	c->pos_ts = page_ts;
}

/* Describe the page hvt_subbuf_take() built and forget the lost count. */
static void rd_emitted(struct hvt_rd_cpu *c, const struct hvt_take *t,
		       struct hvtrace_page_info *info, bool tail)
{
	if (info) {
		info->lost_events = c->pending_lost;
		info->first_ts = c->pos_ts;
		info->entries = t->n;
		info->size = t->end - c->pos;
		info->seq = c->seq;
		info->flags = tail ? HVTRACE_PAGE_TAIL : 0;
	}
	c->pending_lost = 0;
}

/*
 * Serve a reset the writer acknowledged: skip to the first page after it
 * and count what was skipped as discarded, not lost.
 */
static void rd_check_reset(struct hvtrace_area *a, struct hvt_rd_cpu *c)
{
	uint32_t ack, to;

	if (c->reset_done == c->reset_req)
		return;
	/* Pairs with the release store of reset_ack in hvt_rb_poll_reset(). */
	ack = __atomic_load_n(&c->meta->reset_ack, __ATOMIC_ACQUIRE);
	if (ack != c->reset_req)
		return;
	to = __atomic_load_n(&c->meta->reset_seq, __ATOMIC_RELAXED);
	c->reset_done = ack;
	if ((int32_t)(to - c->seq) <= 0)
		return;
	c->seq = to;
	c->pos = 0;
	c->started = false;
	c->resync = true;
	c->discard_resync = true;
	c->pending_lost = 0;
	hvt_area_publish_consumer(a, c->cpu, c->seq);
}

/*
 * One read is four steps on the page at c->seq, each of which may end the
 * call or move on to another page:
 *
 *   rd_locate()    where the page stands against the commit word (lapped,
 *                  waiting after a reset, a tail found malformed before);
 *   rd_copy()      the W2-checked private copy of the page and the counts
 *                  of its descriptor;
 *   rd_validate()  the copy's size, the page start's accounting, and the
 *                  validation of the new events (hvt_subbuf_take());
 *   rd_trim()      what was passed on moves the position and the tallies.
 *
 * A step's verdict: go on to the next step, look again (the loop), move to
 * the next page and look again, or stop with nothing to return.
 */
enum rd_step { RD_GO, RD_AGAIN, RD_NEXT, RD_STOP };

/* The private copy of a page and what its descriptor said. */
struct rd_copy {
	uint64_t w;		/* commit word the copy belongs to */
	uint64_t eb, lb;	/* descriptor counts */
	uint32_t size;		/* data bytes committed; UINT32_MAX: bad */
	bool is_tail;
};

static enum rd_step rd_locate(struct hvtrace_area *a, struct hvt_rd_cpu *c,
			      struct rd_copy *k)
{
	uint32_t tail;
	int32_t d;

	if (rd_load_word(c, &k->w))
		return RD_STOP;
	tail = HVT_WORD_SEQ(k->w);
	d = (int32_t)(tail - c->seq);
	if (d == -1)
		/* We wait at the page after the tail: a reset closed the
		 * tail page and the writer has not started the next one yet
		 * (it may be waiting for our consumer update).  Nothing to
		 * read. */
		return RD_STOP;
	if (d < 0 || (uint32_t)d >= c->nr_subbufs) {
		/*
		 * Our page is gone.  In overwrite mode the writer lapped us;
		 * in consume mode it must not, so the word is corrupt or the
		 * writer restarted.  Either way, continue at the oldest page
		 * still there.  Only an owner of a consume-mode ring can
		 * tell: the writer waits for it, so being lapped is corrupt.
		 */
		if (d < 0 || (c->mode == HVT_MODE_CONSUME && a->ctrl))
			c->errors++;
		if (d < 0)
			c->resync = true;
		c->seq = rd_oldest(c, tail);
		c->pos = 0;
		c->started = false;
		hvt_area_publish_consumer(a, c->cpu, c->seq);
		return RD_AGAIN;
	}
	k->is_tail = d == 0;
	if (c->bad_valid && c->bad_seq == c->seq) {
		if (k->is_tail)
			return RD_STOP;	/* wait for the writer to move */
		c->bad_valid = false;
		return RD_NEXT;
	}
	return RD_GO;
}

/* Copy the page into c->copy under the W2 pair (ring_slot.h). */
static enum rd_step rd_copy(struct hvt_rd_cpu *c, struct rd_copy *k)
{
	const struct hvt_subbuf_desc *desc = rd_desc(c, c->seq);
	const uint8_t *page = rd_page(c, c->seq);
	uint64_t commit, w2;

	if (!hvt_slot_claimed(desc, c->seq)) {
		if (!k->is_tail)
			return RD_NEXT;	/* lapped: gap counted later */
		/*
		 * Overwrite mode: the writer may have lapped the whole ring
		 * since we loaded the word.  Only a page that is still the
		 * tail and does not name itself is malformed.
		 */
		if (!rd_load_word(c, &w2) && HVT_WORD_SEQ(w2) != c->seq)
			return RD_AGAIN;
		/* The writer always names its tail page. */
		c->bad_valid = true;
		c->bad_seq = c->seq;
		c->errors++;
		return RD_STOP;
	}
	k->eb = __atomic_load_n(&desc->entries_before, __ATOMIC_RELAXED);
	k->lb = __atomic_load_n(&desc->lost_before, __ATOMIC_RELAXED);
	memcpy(c->copy, page, HVT_PAGE_HDR_SIZE);
	memcpy(&commit, c->copy + HVT_PAGE_COMMIT_OFF, 8);
	if (k->is_tail) {
		k->size = HVT_WORD_OFFSET(k->w);
		/* An empty tail page (a fresh ring) has no header time stamp
		 * yet: the first event writes it.  Do not start the page
		 * before that. */
		if (k->size == 0 && !c->started)
			return RD_STOP;
	} else {
		k->size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
		if (k->size > c->data_size ||
		    (commit & ~(HVT_COMMIT_SIZE_MASK | HVT_COMMIT_FLAGS)))
			k->size = UINT32_MAX;	/* rd_validate() */
	}
	if (k->size != UINT32_MAX)
		memcpy(c->copy + HVT_PAGE_HDR_SIZE, page + HVT_PAGE_HDR_SIZE,
		       k->size);
	if (!hvt_slot_kept(desc, c->seq))
		return RD_NEXT;	/* overwritten while copying */
	return RD_GO;
}

/* A malformed page: skip the rest; what it hid is a gap at the next start. */
static enum rd_step rd_malformed(struct hvt_rd_cpu *c, bool is_tail)
{
	c->errors++;
	c->gap_malformed = true;
	if (is_tail) {
		c->bad_valid = true;
		c->bad_seq = c->seq;
		return RD_STOP;
	}
	return RD_NEXT;
}

/* Validate the copy and pass its new events on into @out (@t). */
static enum rd_step rd_validate(struct hvt_rd_cpu *c, const struct rd_copy *k,
				uint8_t *out, struct hvt_take *t,
				struct hvt_item_index *ix)
{
	uint64_t page_ts;
	int ret;

	if (k->size == UINT32_MAX || k->size < c->pos) {
		/* A final page with an impossible size. */
		c->errors++;
		c->gap_malformed = true;
		if (!c->started)
			rd_start_page(c, k->eb, k->lb, 0);
		return RD_NEXT;
	}
	memcpy(&page_ts, c->copy, 8);
	if (!c->started)
		rd_start_page(c, k->eb, k->lb, page_ts);
	else if (c->pos == 0)
		/* Nothing consumed yet (a seek to an empty tail): the first
		 * event has written the time_stamp since. */
		c->pos_ts = page_ts;

	/* The readers' one sub-buffer validation (subbuf.c). */
	ret = hvt_subbuf_take(c->copy + HVT_PAGE_HDR_SIZE, k->size,
			      c->data_size, c->pos, c->pos_ts, c->pending_lost,
			      out, t, ix);
	if (ret < 0)
		return rd_malformed(c, k->is_tail);
	if (ret == 0) {
		/* Nothing but padding (or nothing) is new. */
		c->pos = t->end;
		c->pos_ts = t->end_ts;
		return k->is_tail ? RD_STOP : RD_NEXT;
	}
	return RD_GO;
}

/* Move past what @t passed on; the page is done unless more may follow. */
static void rd_trim(struct hvtrace_area *a, struct hvt_rd_cpu *c,
		    const struct hvt_take *t, struct hvtrace_page_info *info,
		    bool is_tail)
{
	if (t->no_room)
		c->errors++;
	rd_emitted(c, t, info, is_tail);
	c->read += t->n;
	c->tally_e += t->n;
	c->bytes += t->end - c->pos;
	c->pos = t->end;
	c->pos_ts = t->end_ts;
	c->last_ts = t->end_ts;
	hvt_area_publish_pos(a, c->cpu, c->seq, c->pos, c->tally_e + c->tally_l,
			     c->tally_u);
	if (!is_tail && !t->cut)
		rd_next_page(a, c);
}

static int rd_read(struct hvtrace_area *a, struct hvt_rd_cpu *c, uint8_t *out,
		   struct hvtrace_page_info *info, struct hvt_item_index *ix)
{
	uint32_t iter;

	rd_check_reset(a, c);
	/* Each iteration consumes or skips a page, so the ring length
	 * bounds the work of one call. */
	for (iter = 0; iter < c->nr_subbufs + 4; iter++) {
		struct rd_copy k = { 0 };
		struct hvt_take t;
		enum rd_step st;

		st = rd_locate(a, c, &k);
		if (st == RD_GO)
			st = rd_copy(c, &k);
		if (st == RD_GO)
			st = rd_validate(c, &k, out, &t, ix);
		if (st == RD_STOP)
			return 0;
		if (st == RD_NEXT)
			rd_next_page(a, c);
		if (st != RD_GO)
			continue;
		rd_trim(a, c, &t, info, k.is_tail);
		return 1;
	}
	return 0;
}

/*
 * The writer may truncate the file under our mapping; touching a page past
 * its end raises SIGBUS.  Without the SIGBUS guard, check that @cpu's
 * section is still in the file before each read; with it, the guard alone
 * turns a truncation into -EIO (rd_fault()), and the fstat() per page,
 * which cost as much as the page's copy, is not made.
 */
static int rd_present(struct hvtrace_area *a, int cpu)
{
	uint64_t end = a->offset + a->hdr.cpu_offset +
		       (uint64_t)(cpu + 1) * a->hdr.cpu_stride;
	struct stat st;

	if (hvt_guard_armed() && !a->cpus[cpu].gone)
		return 0;
	if (fstat(a->fd, &st) == 0 && (uint64_t)st.st_size >= end)
		return 0;
	if (!a->cpus[cpu].gone) {
		a->cpus[cpu].gone = true;
		a->cpus[cpu].errors++;
	}
	return hvt_err(-EIO, "%s: CPU %d is no longer in the file (it was "
			     "truncated under the reader); reopen the area",
		       a->path, cpu);
}

/* A SIGBUS hit the mapping during a guarded call (see guard.c). */
static int rd_fault(struct hvtrace_area *a, int cpu)
{
	struct hvt_rd_cpu *c = &a->cpus[cpu];

	if (!c->gone) {
		c->gone = true;
		c->errors++;
	}
	return hvt_err(-EIO, "%s: CPU %d: the file shrank under the reader "
			     "(SIGBUS while copying); reopen the area",
		       a->path, cpu);
}

static int rd_guarded_read(struct hvtrace_area *a, int cpu, uint8_t *page,
			   struct hvtrace_page_info *info,
			   struct hvt_item_index *ix)
{
	struct hvt_guard g;
	int ret;

	if (rd_present(a, cpu))
		return -EIO;
	if (hvt_guard_enter(&g, a->ro, a->size))
		return rd_fault(a, cpu);
	ret = rd_read(a, &a->cpus[cpu], page, info, ix);
	hvt_guard_leave(&g);
	return ret;
}

int hvt_cpu_read_page_indexed(struct hvtrace_area *a, int cpu, void *page,
			      size_t size, struct hvtrace_page_info *info,
			      struct hvt_item_index *ix)
{
	if (!a || !page)
		return hvt_err(-EINVAL, "hvtrace_cpu_read_page: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in area '%s' (it has %u)",
			       cpu, a->hdr.name, a->hdr.nr_cpus);
	if (size < a->hdr.subbuf_size)
		return hvt_err(-ENOSPC,
			       "page buffer of %zu bytes is smaller than the "
			       "sub-buffer size %u",
			       size, a->hdr.subbuf_size);
	return rd_guarded_read(a, cpu, page, info, ix);
}

HVTRACE_API int hvtrace_cpu_read_page(struct hvtrace_area *a, int cpu,
				      void *page, size_t size,
				      struct hvtrace_page_info *info)
{
	return hvt_cpu_read_page_indexed(a, cpu, page, size, info, NULL);
}

/*
 * rd_oldest() for the counters, which ring buffer readers ask for with
 * every page: it walks the ring from its far end, most of it for a ring
 * filled from its start.  The oldest page only moves forward (pages are
 * reused oldest first), so the walk starts at the last answer when that
 * page or a newer one is the oldest now (the page before it is gone), and
 * from the far end otherwise (a restarted writer, a hostile meta): each
 * descriptor is then passed over about once.
 */
static uint32_t rd_stats_oldest(struct hvt_rd_cpu *c, uint32_t tail)
{
	uint32_t far = tail - (c->nr_subbufs - 1), s = c->oldest_hint;
	uint64_t eb, lb;

	if ((int32_t)(s - far) < 0 || (int32_t)(s - tail) > 0 ||
	    (s != far && rd_read_desc(c, s - 1, &eb, &lb)))
		s = far;
	for (; (int32_t)(s - tail) < 0; s++)
		if (rd_read_desc(c, s, &eb, &lb))
			break;
	c->oldest_hint = s;
	return s;
}

static int rd_stats(struct hvtrace_area *a, int cpu,
		    struct hvtrace_cpu_stats *st)
{
	struct hvt_rd_cpu *c;
	uint64_t w, eb, lb, committed, wlost, oeb, olb, unpl;
	uint32_t tail, oldest;
	int tries;

	if (!a || !st)
		return hvt_err(-EINVAL, "hvtrace_cpu_get_stats: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in area '%s'", cpu,
			       a->hdr.name);
	c = &a->cpus[cpu];
	memset(st, 0, sizeof(*st));
	if (rd_present(a, cpu)) {
		st->errors = c->errors;
		return 0;
	}
	st->read = c->read;
	st->bytes = c->bytes;
	st->discarded = c->discarded;
	st->overrun = c->overrun;
	st->dropped = c->dropped;
	st->skipped = c->skipped;
	st->unplaced = c->unplaced;
	st->now_ts = c->last_ts;

	/* A consistent (word, tail descriptor) pair: retry if the writer
	 * switched pages in between.  Bounded: a hostile writer just leaves
	 * the totals at zero. */
	for (tries = 0; tries < 16; tries++) {
		if (rd_load_word(c, &w))
			break;
		tail = HVT_WORD_SEQ(w);
		if (!rd_read_desc(c, tail, &eb, &lb))
			continue;
		committed = eb + HVT_WORD_ENTRIES(w);
		wlost = __atomic_load_n(&c->meta->lost, __ATOMIC_RELAXED);
		unpl = rd_unplaced_now(c);
		st->writer_lost = wlost;
		if (wlost < lb || committed < c->tally_e ||
		    wlost < c->tally_l || unpl < c->tally_u) {
			/* Counters behind what we already accounted: a
			 * corrupt meta or a restarted writer. */
			c->errors++;
			break;
		}
		/* Unplaced events count from the writer's start (0), as
		 * the reader reports them. */
		st->written = committed - c->base_e + wlost - c->base_l +
			      (unpl - c->tally_u) + c->unplaced;
		st->trailing = wlost - c->tally_l + (unpl - c->tally_u);
		st->entries = committed - c->tally_e;
		/*
		 * Overwrite mode: pages older than the oldest one still in the
		 * ring are gone even if we have not reached them yet.  Count
		 * them as overrun now (the gap is reported when we get there).
		 */
		oldest = rd_stats_oldest(c, tail);
		if ((int32_t)(oldest - c->seq) > 0 &&
		    rd_read_desc(c, oldest, &oeb, &olb) && oeb > c->tally_e &&
		    oeb <= committed) {
			st->overrun += oeb - c->tally_e;
			st->entries -= oeb - c->tally_e;
		}
		/* Newest committed event: the writer's timestamp cache when
		 * it is valid for this word (W3), else the tail page's start. */
		{
			uint64_t k1, t, k2;

			k1 = __atomic_load_n(&c->meta->ts_key,
					     __ATOMIC_ACQUIRE);
			t = __atomic_load_n(&c->meta->ts, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			k2 = __atomic_load_n(&c->meta->ts_key,
					     __ATOMIC_RELAXED);
			if (k1 == w && k2 == w)
				st->now_ts = t;
			else
				memcpy(&st->now_ts, rd_page(c, tail), 8);
		}
		memcpy(&st->oldest_ts, rd_page(c, oldest), 8);
		break;
	}
	st->lost = st->overrun + st->dropped + st->skipped;
	st->errors = c->errors;
	return 0;
}

static uint64_t rd_take_trailing(struct hvtrace_area *a, int cpu)
{
	struct hvt_rd_cpu *c;
	uint64_t wlost;

	if (!a || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return 0;
	c = &a->cpus[cpu];
	if (rd_present(a, cpu))
		return 0;
	wlost = __atomic_load_n(&c->meta->lost, __ATOMIC_RELAXED);
	if (wlost <= c->tally_l)
		return rd_take_unplaced(c);
	wlost -= c->tally_l;
	c->tally_l += wlost;
	c->dropped += wlost;
	return wlost + rd_take_unplaced(c);
}

static int rd_seek(struct hvtrace_area *a, int cpu, bool oldest)
{
	struct hvt_rd_cpu *c;
	uint64_t w, w2, eb, lb, ts;
	uint32_t tail, off, n, tries;
	struct hvt_page_iter it;
	int ret;

	if (!a || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d", cpu);
	c = &a->cpus[cpu];
	if (rd_present(a, cpu))
		return -EIO;
	/*
	 * "Oldest" is the oldest *unread* data, which is where the reader
	 * already is: it never moves back over events it returned (that
	 * would return them twice and break the accounting).  Pages that
	 * were overwritten meanwhile are skipped and counted by the next
	 * read, as always.
	 */
	if (oldest)
		return 0;

	/* Newest: discard everything committed so far.  Bounded retries if
	 * the writer keeps switching pages under us. */
	for (tries = 0; tries < 8; tries++) {
		if (rd_load_word(c, &w))
			return hvt_err(-EBADMSG, "CPU %d: corrupt commit word",
				       cpu);
		tail = HVT_WORD_SEQ(w);
		off = HVT_WORD_OFFSET(w);
		if (!rd_read_desc(c, tail, &eb, &lb))
			continue;
		memcpy(c->copy, rd_page(c, tail), HVT_PAGE_HDR_SIZE + off);
		/* W2 pair: the copy is intact only if the slot still holds
		 * the tail page afterwards. */
		if (!hvt_slot_kept(rd_desc(c, tail), tail) ||
		    rd_load_word(c, &w2) || HVT_WORD_SEQ(w2) != tail)
			continue;
		memcpy(&ts, c->copy, 8);
		if (tail != c->seq || !c->started) {
			/* Jump: what lies between is discarded, not lost. */
			c->seq = tail;
			c->resync = true;
			c->discard_resync = true;
			c->pending_lost = 0;
			rd_start_page(c, eb, lb, ts);
		}
		/* Skip the events already on the tail page after pos. */
		n = 0;
		hvt_page_iter_init(&it, c->copy + HVT_PAGE_HDR_SIZE, off,
				   c->pos ? c->pos_ts : ts);
		it.pos = c->pos;
		while ((ret = hvt_page_next(&it)) > 0)
			if (ret == HVT_ITEM_DATA)
				n++;
		if (ret < 0) {
			c->errors++;
			c->bad_valid = true;
			c->bad_seq = tail;
		} else {
			c->pos = it.pos;
			c->pos_ts = it.ts;
			c->tally_e += n;
			c->discarded += n;
		}
		hvt_area_publish_consumer(a, cpu, c->seq);
		return 0;
	}
	return hvt_err(-EAGAIN, "CPU %d: the writer kept switching pages; "
				"retry the seek",
		       cpu);
}

/* Public entry points that touch the mapping run under the SIGBUS guard. */

HVTRACE_API int hvtrace_cpu_get_stats(struct hvtrace_area *a, int cpu,
				      struct hvtrace_cpu_stats *st)
{
	struct hvt_guard g;
	int ret;

	if (!a || !st || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return rd_stats(a, cpu, st);	/* reports the bad argument */
	if (hvt_guard_enter(&g, a->ro, a->size)) {
		memset(st, 0, sizeof(*st));
		rd_fault(a, cpu);
		st->errors = a->cpus[cpu].errors;
		return 0;
	}
	ret = rd_stats(a, cpu, st);
	hvt_guard_leave(&g);
	return ret;
}

HVTRACE_API uint64_t hvtrace_cpu_take_trailing_lost(struct hvtrace_area *a,
						    int cpu)
{
	struct hvt_guard g;
	uint64_t ret;

	if (!a || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return 0;
	if (hvt_guard_enter(&g, a->ro, a->size)) {
		rd_fault(a, cpu);
		return 0;
	}
	ret = rd_take_trailing(a, cpu);
	hvt_guard_leave(&g);
	return ret;
}

HVTRACE_API int hvtrace_cpu_seek(struct hvtrace_area *a, int cpu, bool oldest)
{
	struct hvt_guard g;
	int ret;

	if (!a || cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return rd_seek(a, cpu, oldest);
	if (hvt_guard_enter(&g, a->ro, a->size))
		return rd_fault(a, cpu);
	ret = rd_seek(a, cpu, oldest);
	hvt_guard_leave(&g);
	return ret;
}
