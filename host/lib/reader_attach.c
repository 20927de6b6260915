// SPDX-License-Identifier: MIT
/*
 * libhvtrace: attaching the per-CPU reader to a CPU buffer.
 *
 * Where reading starts (reader.c reads from there): a previous owner's
 * published position when the area was opened to resume (the control
 * page's read_pos, checked against the ring before it is trusted), else
 * the consumer position an earlier owner left, else the oldest page the
 * ring holds.  The counts of that page's descriptor set the tallies that
 * make read + lost == written exact from the first page on.  Everything
 * read here is shared memory and only a hint until the ring confirms it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvtrace-local.h"
#include "reader.h"

/*
 * Resume where the previous owner stopped (struct hvt_ctrl_pos), so that
 * a restarted owner returns no event twice.  The entry is a hint: it is
 * used only when its check matches and, while its page is still in the
 * ring, when the position falls on an event boundary of that page and
 * the counts agree with the page's descriptor.  A page overwritten since
 * (overwrite mode, or a consume-mode page the previous owner had released
 * after reading past the position it posted) is not needed: reading goes
 * on at the oldest page, whose start reports the events in between as
 * lost (bounded by the pages in between, like any gap).  A guest can forge the entry; that can only
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
		 * it afterwards.  If not, the writer reused it while we
		 * copied: it is gone, as below, and the oldest page is that
		 * of a word loaded now. */
		if (!hvt_slot_kept(rd_desc(c, seq), seq)) {
			uint64_t w2;

			if (rd_load_word(c, &w2))
				return false;
			oldest = rd_oldest(c, HVT_WORD_SEQ(w2));
			goto gone;
		}
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
	} else if ((int32_t)(oldest - seq) > 0) {
		/* The page is gone: lapped (overwrite mode), or released and
		 * reused (consume mode, where an owner that posts later --
		 * HVTRACE_OPEN_POST_LATER -- had read past its position).
		 * What it held after the position is counted lost when the
		 * oldest page starts (rd_start_page(): its entries_before
		 * against @acc). */
	gone:
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
