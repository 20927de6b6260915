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
 * outside the mapping.
 */
#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvtrace-local.h"
#include "subbuf.h"

static inline const struct hvt_subbuf_desc *rd_desc(const struct hvt_rd_cpu *c,
						    uint32_t seq)
{
	return &c->meta->desc[seq & (c->nr_subbufs - 1)];
}

static inline const uint8_t *rd_page(const struct hvt_rd_cpu *c, uint32_t seq)
{
	return c->pages + (uint64_t)(seq & (c->nr_subbufs - 1)) * c->subbuf_size;
}

/* Load the commit word; 0 with *w set, or -EBADMSG when it is impossible. */
static int rd_load_word(struct hvt_rd_cpu *c, uint64_t *w)
{
	/* W1 pair: everything the writer published up to this word. */
	uint64_t v = __atomic_load_n(&c->meta->write, __ATOMIC_ACQUIRE);

	if (HVT_WORD_OFFSET(v) > c->data_size) {
		if (v != c->last_bad_word) {
			c->errors++;
			c->last_bad_word = v;
		}
		return -EBADMSG;
	}
	*w = v;
	return 0;
}

/*
 * Read the descriptor of @seq consistently: its seq field before and after
 * the other fields (W2 pair).  Returns false if the slot holds another page.
 */
static bool rd_read_desc(const struct hvt_rd_cpu *c, uint32_t seq,
			 uint64_t *eb, uint64_t *lb)
{
	const struct hvt_subbuf_desc *d = rd_desc(c, seq);

	if (__atomic_load_n(&d->seq, __ATOMIC_ACQUIRE) != seq)
		return false;
	*eb = __atomic_load_n(&d->entries_before, __ATOMIC_RELAXED);
	*lb = __atomic_load_n(&d->lost_before, __ATOMIC_RELAXED);
	/* Order the field loads before re-checking seq (W2 pair). */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&d->seq, __ATOMIC_RELAXED) == seq;
}

/* Oldest page of the ring whose descriptor still names it. */
static uint32_t rd_oldest(const struct hvt_rd_cpu *c, uint32_t tail)
{
	uint32_t s = tail - (c->nr_subbufs - 1), i;
	uint64_t eb, lb;

	for (i = 0; i < c->nr_subbufs; i++, s++)
		if (rd_read_desc(c, s, &eb, &lb))
			return s;
	return tail;
}

/* The writer's unplaced counter; relaxed, it orders nothing. */
static uint64_t rd_unplaced_now(const struct hvt_rd_cpu *c)
{
	return __atomic_load_n(&c->meta->unplaced, __ATOMIC_RELAXED);
}

/*
 * Resume where the previous owner stopped (struct hvt_ctrl_pos), so that
 * a restarted owner returns no event twice.  The entry is a hint: it is
 * used only when its check matches and, while its page is still in the
 * ring, when the position falls on an event boundary of that page and
 * the counts agree with the page's descriptor.  In overwrite mode a page
 * overwritten since is not needed: reading goes on at the oldest page,
 * whose start reports the events in between as lost (bounded by the pages
 * in between, like any gap).  A guest can forge the entry; that can only
 * hide its own events, as not writing them would.  Returns true when @c
 * was set up from the entry.
 */
static bool rd_resume(struct hvtrace_area *a, struct hvt_rd_cpu *c,
		      uint64_t w)
{
	const struct hvt_ctrl_pos *p = &a->ctrl->read_pos[c->cpu];
	uint32_t seq, pos, size, n = 0, tail = HVT_WORD_SEQ(w), oldest;
	uint64_t acc, unpl, eb, lb, commit, ts;
	struct hvt_page_iter it;
	uint16_t check;
	int ret = 1;

	/* Pairs with the release store of 'check' in hvt_area_publish_pos(). */
	check = __atomic_load_n(&p->check, __ATOMIC_ACQUIRE);
	acc = __atomic_load_n(&p->accounted, __ATOMIC_RELAXED);
	unpl = __atomic_load_n(&p->unplaced, __ATOMIC_RELAXED);
	seq = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
	pos = __atomic_load_n(&p->pos, __ATOMIC_RELAXED);
	if (!check || check != hvt_ctrl_pos_check(acc, unpl, seq,
						  (uint16_t)pos) ||
	    (int32_t)(tail - seq) < 0 || unpl > rd_unplaced_now(c))
		return false;
	oldest = rd_oldest(c, tail);
	if ((uint32_t)(tail - seq) <= (uint32_t)(tail - oldest) &&
	    rd_read_desc(c, seq, &eb, &lb)) {
		const uint8_t *page = rd_page(c, seq);

		memcpy(c->copy, page, HVT_PAGE_HDR_SIZE);
		memcpy(&commit, c->copy + HVT_PAGE_COMMIT_OFF, 8);
		size = seq == tail ? HVT_WORD_OFFSET(w) :
				     (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
		if (size > c->data_size || pos > size)
			return false;
		memcpy(c->copy + HVT_PAGE_HDR_SIZE, page + HVT_PAGE_HDR_SIZE,
		       pos);
		/* W2 pair: the copy is of our page only if seq still names
		 * it afterwards. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&rd_desc(c, seq)->seq, __ATOMIC_RELAXED) !=
		    seq)
			return false;
		memcpy(&ts, c->copy, 8);
		hvt_page_iter_init(&it, c->copy + HVT_PAGE_HDR_SIZE, pos, ts);
		while (it.pos < pos && (ret = hvt_page_next(&it)) > 0)
			if (ret == HVT_ITEM_DATA)
				n++;
		if (it.pos != pos || ret < 0 || eb + lb + n != acc)
			return false;
		c->seq = seq;
		c->started = true;
		c->pos = pos;
		c->pos_ts = it.ts;
		c->base_e = c->tally_e = eb + n;
		c->base_l = c->tally_l = lb;
	} else if (c->mode == HVT_MODE_OVERWRITE &&
		   (int32_t)(oldest - seq) > 0) {
		c->seq = oldest;
		c->started = false;
		c->pos = 0;
		c->base_e = c->tally_e = acc;
		c->base_l = c->tally_l = 0;
	} else {
		return false;
	}
	c->last_start_seq = seq;
	c->tally_u = unpl;
	return true;
}

int hvt_rd_init(struct hvtrace_area *a, struct hvt_rd_cpu *c, uint32_t cpu)
{
	uint64_t w = 0, eb = 0, lb = 0;
	uint32_t start, cons;
	bool from_owner = false;

	memset(c, 0, sizeof(*c));
	c->meta = hvt_area_cpu_meta(a, cpu);
	c->pages = hvt_area_cpu_pages(a, cpu);
	c->cpu = cpu;
	c->nr_subbufs = a->hdr.nr_subbufs;
	c->subbuf_size = a->hdr.subbuf_size;
	c->data_size = a->hdr.subbuf_size - HVT_PAGE_HDR_SIZE;
	c->mode = a->hdr.mode;
	c->copy = malloc(c->subbuf_size + 16);
	if (!c->copy)
		return hvt_err(-ENOMEM, "out of memory");
	c->reset_req = c->reset_done =
		__atomic_load_n(&c->meta->reset_ack, __ATOMIC_RELAXED);

	if (rd_load_word(c, &w)) {
		/* Unreadable now; start at seq 0 and let reads resync. */
		c->resync = true;
		return 0;
	}
	if (a->ctrl && (a->flags & HVTRACE_OPEN_RESUME) && rd_resume(a, c, w)) {
		hvt_area_publish_consumer(a, cpu, c->seq);
		return 0;
	}
	start = rd_oldest(c, HVT_WORD_SEQ(w));
	if (a->ctrl) {
		/*
		 * Owner: continue from the consumer position a previous owner
		 * published, if it is plausible.  The value comes from shared
		 * memory, so it is only a hint.
		 */
		cons = __atomic_load_n(&a->ctrl->consumer[cpu],
				       __ATOMIC_RELAXED);
		if ((uint32_t)(HVT_WORD_SEQ(w) - cons) <
			    (uint32_t)(HVT_WORD_SEQ(w) - start) &&
		    rd_read_desc(c, cons, &eb, &lb)) {
			start = cons;
			from_owner = true;
		}
	}
	c->seq = start;
	c->last_start_seq = start;
	if (rd_read_desc(c, start, &eb, &lb)) {
		c->base_e = c->tally_e = eb;
		c->base_l = c->tally_l = lb;
		/*
		 * Overwrite mode, at the oldest page, and no earlier owner's
		 * position to go on from: what the writer wrote before that
		 * page was overwritten unread.  Count it from the writer's
		 * start, as ftrace's first read after an overrun does, so
		 * read + lost == written holds for this reader too.
		 */
		if (c->mode == HVT_MODE_OVERWRITE && !from_owner &&
		    eb + lb > 0) {
			c->base_e = c->tally_e = 0;
			c->base_l = c->tally_l = 0;
			c->gap_from_start = true;
		}
	} else {
		c->resync = true;
	}
	hvt_area_publish_consumer(a, cpu, start);
	return 0;
}

void hvt_rd_fini(struct hvt_rd_cpu *c)
{
	free(c->copy);
	c->copy = NULL;
}

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

static int rd_read(struct hvtrace_area *a, struct hvt_rd_cpu *c, uint8_t *out,
		   struct hvtrace_page_info *info)
{
	uint32_t iter;

	rd_check_reset(a, c);
	/* Each iteration consumes or skips a page, so the ring length
	 * bounds the work of one call. */
	for (iter = 0; iter < c->nr_subbufs + 4; iter++) {
		const uint8_t *page;
		struct hvt_take t;
		uint64_t w, eb = 0, lb = 0, commit, page_ts;
		uint32_t tail, size;
		int32_t d;
		bool is_tail, finish;
		int ret;

		if (rd_load_word(c, &w))
			return 0;
		tail = HVT_WORD_SEQ(w);
		d = (int32_t)(tail - c->seq);
		if (d == -1)
			/* We wait at the page after the tail: a reset closed
			 * the tail page and the writer has not started the
			 * next one yet (it may be waiting for our consumer
			 * update).  Nothing to read. */
			return 0;
		if (d < 0 || (uint32_t)d >= c->nr_subbufs) {
			/*
			 * Our page is gone.  In overwrite mode the writer
			 * lapped us; in consume mode it must not, so the
			 * word is corrupt or the writer restarted.  Either
			 * way, continue at the oldest page still there.
			 */
			/* Only an owner of a consume-mode ring can tell: the
			 * writer waits for it, so being lapped is corrupt. */
			if (d < 0 || (c->mode == HVT_MODE_CONSUME && a->ctrl))
				c->errors++;
			if (d < 0)
				c->resync = true;
			c->seq = rd_oldest(c, tail);
			c->pos = 0;
			c->started = false;
			hvt_area_publish_consumer(a, c->cpu, c->seq);
			continue;
		}
		is_tail = d == 0;
		if (c->bad_valid && c->bad_seq == c->seq) {
			if (is_tail)
				return 0;	/* wait for the writer to move */
			c->bad_valid = false;
			rd_next_page(a, c);
			continue;
		}

		page = rd_page(c, c->seq);
		/* W2 pair, first half: the slot must hold our page. */
		if (__atomic_load_n(&rd_desc(c, c->seq)->seq,
				    __ATOMIC_ACQUIRE) != c->seq) {
			if (is_tail) {
				uint64_t w2;

				/*
				 * Overwrite mode: the writer may have lapped
				 * the whole ring since we loaded the word.
				 * Only a page that is still the tail and does
				 * not name itself is malformed.
				 */
				if (!rd_load_word(c, &w2) &&
				    HVT_WORD_SEQ(w2) != c->seq)
					continue;
				/* The writer always names its tail page. */
				c->bad_valid = true;
				c->bad_seq = c->seq;
				c->errors++;
				return 0;
			}
			rd_next_page(a, c);	/* lapped: gap counted later */
			continue;
		}
		eb = __atomic_load_n(&rd_desc(c, c->seq)->entries_before,
				     __ATOMIC_RELAXED);
		lb = __atomic_load_n(&rd_desc(c, c->seq)->lost_before,
				     __ATOMIC_RELAXED);
		memcpy(c->copy, page, HVT_PAGE_HDR_SIZE);
		memcpy(&commit, c->copy + HVT_PAGE_COMMIT_OFF, 8);
		if (is_tail) {
			size = HVT_WORD_OFFSET(w);
			/* An empty tail page (a fresh ring) has no header
			 * time stamp yet: the first event writes it.  Do not
			 * start the page before that. */
			if (size == 0 && !c->started)
				return 0;
		} else {
			size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
			if (size > c->data_size ||
			    (commit & ~(HVT_COMMIT_SIZE_MASK | HVT_COMMIT_FLAGS)))
				size = UINT32_MAX;	/* checked below */
		}
		if (size != UINT32_MAX)
			memcpy(c->copy + HVT_PAGE_HDR_SIZE,
			       page + HVT_PAGE_HDR_SIZE, size);
		/* W2 pair, second half: order the copy before re-checking. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&rd_desc(c, c->seq)->seq,
				    __ATOMIC_RELAXED) != c->seq) {
			rd_next_page(a, c);	/* overwritten while copying */
			continue;
		}
		if (size == UINT32_MAX || size < c->pos) {
			/* A final page with an impossible size. */
			c->errors++;
			c->gap_malformed = true;
			if (!c->started)
				rd_start_page(c, eb, lb, 0);
			rd_next_page(a, c);
			continue;
		}
		memcpy(&page_ts, c->copy, 8);
		if (!c->started)
			rd_start_page(c, eb, lb, page_ts);
		else if (c->pos == 0)
			/* Nothing consumed yet (a seek to an empty tail): the
			 * first event has written the time_stamp since. */
			c->pos_ts = page_ts;

		/* Validate the new events on the private copy and pass them
		 * on (subbuf.c: the readers' one sub-buffer validation). */
		ret = hvt_subbuf_take(c->copy + HVT_PAGE_HDR_SIZE, size,
				      c->data_size, c->pos, c->pos_ts,
				      c->pending_lost, out, &t);
		if (ret < 0) {
			/* Malformed: skip the rest of this page.  Events it
			 * hid show up as a gap at the next page start. */
			c->errors++;
			c->gap_malformed = true;
			if (is_tail) {
				c->bad_valid = true;
				c->bad_seq = c->seq;
				return 0;
			}
			rd_next_page(a, c);
			continue;
		}
		if (ret == 0) {
			/* Nothing but padding (or nothing) is new. */
			c->pos = t.end;
			c->pos_ts = t.end_ts;
			if (is_tail)
				return 0;
			rd_next_page(a, c);
			continue;
		}
		if (t.no_room)
			c->errors++;
		finish = !is_tail && !t.cut;
		rd_emitted(c, &t, info, is_tail);
		c->read += t.n;
		c->tally_e += t.n;
		c->bytes += t.end - c->pos;
		c->pos = t.end;
		c->pos_ts = t.end_ts;
		c->last_ts = t.end_ts;
		hvt_area_publish_pos(a, c->cpu, c->seq, c->pos,
				     c->tally_e + c->tally_l, c->tally_u);
		if (finish)
			rd_next_page(a, c);
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
			   struct hvtrace_page_info *info)
{
	struct hvt_guard g;
	int ret;

	if (rd_present(a, cpu))
		return -EIO;
	if (hvt_guard_enter(&g, a->ro, a->size))
		return rd_fault(a, cpu);
	ret = rd_read(a, &a->cpus[cpu], page, info);
	hvt_guard_leave(&g);
	return ret;
}

HVTRACE_API int hvtrace_cpu_read_page(struct hvtrace_area *a, int cpu,
				      void *page, size_t size,
				      struct hvtrace_page_info *info)
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
	return rd_guarded_read(a, cpu, page, info);
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
		oldest = rd_oldest(c, tail);
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
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&rd_desc(c, tail)->seq, __ATOMIC_RELAXED) !=
			    tail ||
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
