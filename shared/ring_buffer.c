// SPDX-License-Identifier: MIT
/*
 * hvtrace writer core - a lockless per-CPU ring of ftrace sub-buffers.
 *
 * Freestanding: no libc, no allocation, no system calls; only compiler
 * atomics.  The same object is linked into the EL2 hypervisor image, the
 * guest writer library, the loopback writer and the host's tests.
 *
 * About 900 lines, on purpose: the plan, the fused append and the
 * executors share always-inline helpers (rb_event_hdr(), rb_lay_event(),
 * rb_append_prepare()) that must stay in this one translation unit for the
 * direct write to compile to straight-line code (make bench, core_direct).
 * The area container around the rings is trace_area.c.
 *
 * Design
 * ======
 *
 * One CPU buffer is a ring of nr_subbufs sub-buffers ("pages") that are
 * byte-for-byte Linux ftrace sub-buffers, plus a small meta region:
 *
 *       meta (writer-owned)                      sub-buffers
 *   +----------------------------+     +------------------------------+
 *   | write = seq|entries|offset |---->| slot seq & (nr-1): tail page |
 *   | ts_key, ts  (last ts cache)|     |  u64 time_stamp              |
 *   | lost        (drops)        |     |  u64 commit   (final only)   |
 *   | desc[slot] {seq, entries_  |     |  events ...  | uncommitted   |
 *   |   before, lost_before,     |     +------------------------------+
 *   |   missed}                  |     | slot: older finished pages   |
 *   +----------------------------+     +------------------------------+
 *
 * The commit word
 * ---------------
 * Everything a write publishes becomes visible through ONE store: the
 * release store of meta->write (or of meta->lost for a dropped event).
 * Before that store, a write only touches memory no reader trusts yet:
 *
 *   - bytes after 'offset' in the tail page (the new event, tail padding,
 *     a missed-events count);
 *   - the header 'commit' field of the tail page (a reader bounds the tail
 *     page by the commit word, and trusts the header field only once the
 *     word has moved on to a later page);
 *   - the next slot, when starting a new page, after first bumping
 *     desc[slot].seq (see "Reading without the writer" below);
 *   - the ts_key/ts cache, which is self-validating.
 *
 * So a write that stops at any instruction before its commit store leaves
 * no trace a reader would believe.  That single property is what makes the
 * same code safe in three different writer contexts:
 *
 *   hypervisor (EL2)   one writer per CPU, interrupts masked: plans are
 *                      executed directly (hvt_rb_write()).
 *   loopback process   one pinned thread per CPU: executed directly.
 *   guest user space   any number of threads and processes per CPU, with
 *                      preemption, migration and SIGKILL: each plan is
 *                      executed inside a Linux restartable sequence that
 *                      re-checks the CPU and both expected words and
 *                      aborts if the thread was preempted, migrated or
 *                      signalled; the commit store is its last
 *                      instruction.  A killed or aborted writer therefore
 *                      never leaves a half-committed event, and there is no
 *                      lock to leave held.
 *
 * Plans
 * -----
 * hvt_rb_plan_write() reads the shared state, decides what the write does
 * and records it as a short list of copies plus the final store:
 *
 *   APPEND   [ts cache] [TIME_EXTEND] [event header] [common] [payload]
 *            write := seq | entries+1 | offset+size
 *   SWITCH   desc[next].seq  -- release fence --
 *            [finish tail page: padding, header commit, missed count]
 *            [next page time_stamp, commit 0] [ts cache] [event...]
 *            write := seq+1 | 1 | size
 *   SEAL     (consume mode, ring full) pad the tail page to its end so no
 *            later, smaller event can jump ahead of the gap:
 *            write := seq | entries | end
 *   DROP     (consume mode, full and sealed) lost := lost + 1
 *
 * A plan remembers the write and lost words it was built against; an
 * executor that can race (rseq) compares both before copying.
 *
 * The direct path (hvt_rb_write(), one writer per CPU) fuses the common
 * case: an APPEND without TIME_EXTEND to a page that already has an event
 * is made in place by rb_write_append(), with the same stores in the same
 * order as the plan (ts cache, event, commit) but without staging them;
 * everything else goes through a plan.  For executors that can race, the
 * same case has a compact plan (hvt_rb_plan_append(): the expected words,
 * the commit value, the timestamp and the event header, a dozen words
 * instead of a list of copies); both share rb_append_prepare().  The
 * fused path is what makes a direct write cost about a clock read plus a
 * copy (make bench, core_direct_* against floor_clock_memcpy_*).  Losses can
 * therefore only fall *between* pages, and the first page after a loss
 * carries RB_MISSED_EVENTS | RB_MISSED_STORED with the count stored after
 * its data, exactly where Linux puts it (8 bytes are kept free on such a
 * page so the count always fits).
 *
 * Timestamps
 * ----------
 * Event headers carry a 27-bit delta to the previous event on the page, so
 * a writer must know the last timestamp.  It lives in meta->ts, valid only
 * while meta->ts_key equals the commit word.  A plan stores
 * { ts_key = INVALID, ts = new } and then ts_key = new word, before its
 * commit store.  A later planner loads ts_key, ts, then ts_key again
 * (acquire fence between) and accepts ts only if both keys equal the word
 * it loaded.  An aborted write leaves ts_key != write, and the planner then
 * recovers the last timestamp by walking the tail page (slow, rare).
 * Deltas that do not fit 27 bits get a TIME_EXTEND; a timestamp older than
 * the last one (clock skew after a migration) is clamped to delta 0, so
 * every page stays monotonic.
 *
 * Reading without the writer
 * --------------------------
 * The host maps all of this read-only and never asks the writer for help:
 *
 *   - load meta->write with acquire (pairs with the commit store);
 *   - pages older than the tail are final: their header commit is valid;
 *     the tail page is valid up to the word's offset;
 *   - to copy a page it loads desc[slot].seq, copies, issues an acquire
 *     fence, and loads desc[slot].seq again.  A writer reusing a slot
 *     stores desc[slot].seq and issues a release fence *before* its first
 *     byte into that slot (the SWITCH pre-op), so an unchanged seq proves
 *     the copy is not torn by an overwrite;
 *   - exact loss counts come from desc: entries_before + lost_before of a
 *     page is the number of events the writer handled before it, so any
 *     gap between what the host read and that number was lost (dropped in
 *     consume mode, overwritten in overwrite mode).
 *
 * In consume mode the host publishes its progress in the control page
 * (consumer[cpu], release); the writer loads it with acquire before reusing
 * a slot and never reuses one whose page the host has not finished.
 *
 * Memory ordering summary (every pair):
 *   W1 commit store (release)       <-> host/planner load of write (acquire)
 *   W2 desc.seq; fence(release)     <-> host copy; fence(acquire); desc.seq
 *   W3 ts_key=INV; ts; ts_key=word  <-> planner ts_key; ts; fence; ts_key
 *      (ordered by program order inside an rseq on x86 TSO; the aarch64
 *      rseq executor stores each word with STLR; the direct executor is
 *      the only writer, so no other planner observes it)
 *   W4 load consumer (acquire)      <-> host store consumer (release)
 *   W5 header magic store (release) <-> host load of magic (acquire);
 *      re-format: magic=0; fence(release) <-> host copy; fence(acquire);
 *      magic and generation re-checked
 *   W6 sync_clock; sync_seq(release) <-> host sync_seq (acquire); clock
 *   W7 reset_seq; reset_ack(release) <-> host reset_ack (acquire); reset_seq
 *   and, on the host-to-writer side of the control page: reset_req and
 *   cmd_seq are stored with release after what they publish and loaded
 *   with acquire; the clock block is a seqcount (odd, fence, fields, even).
 */
#include <hvtrace/ring_buffer.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_slot.h>

#include "ring-local.h"

#define HVT_ALIGN4(x)		(((x) + 3u) & ~3u)
#define HVT_SMALL_DATA_MAX	(HVT_TYPE_DATA_MAX * 4u)	/* 112 */

/* rb_: internal helpers ------------------------------------------------ */

static inline uint8_t *rb_page(const struct hvt_rb_cpu *cb, uint32_t seq)
{
	return cb->pages +
	       hvt_slot_page_off(cb->nr_subbufs, cb->subbuf_size, seq);
}

static inline struct hvt_subbuf_desc *rb_desc(const struct hvt_rb_cpu *cb,
					      uint32_t seq)
{
	return &cb->meta->desc[hvt_slot(cb->nr_subbufs, seq)];
}

static inline void rb_op(struct hvt_rb_plan *p, void *dst, const void *src,
			 uint32_t len)
{
	struct hvt_rb_op *op = &p->ops[p->nr_ops++];

	op->dst = dst;
	op->src = src;
	op->len = len;
	op->pad = 0;
}

/*
 * Usable data bytes of a page whose descriptor says @missed events were
 * lost right before it: 8 are kept free for the stored count.  Callers load
 * desc->missed ONCE and pass it everywhere it matters, so a racing store
 * (a co-writer in the guest, or a corrupted descriptor) cannot make the
 * end and the count disagree.
 */
static inline uint32_t rb_page_end(const struct hvt_rb_cpu *cb,
				   uint64_t missed)
{
	return cb->data_size - (missed ? 8u : 0u);
}

static inline uint64_t rb_desc_missed(const struct hvt_subbuf_desc *d)
{
	return __atomic_load_n(&d->missed, __ATOMIC_RELAXED);
}

/*
 * Recover the timestamp of the last committed event on the tail page by
 * walking it.  Only needed after an aborted write left the ts cache
 * invalid.  The walk is bounded by the committed offset.
 */
static uint64_t rb_tail_ts_slow(const struct hvt_rb_cpu *cb, uint32_t seq,
				uint32_t offset)
{
	const uint8_t *page = rb_page(cb, seq);
	struct hvt_page_iter it;
	int ret;

	/* A corrupt word must not walk us past the page. */
	if (offset > cb->data_size)
		offset = cb->data_size;
	hvt_page_iter_init(&it, page + HVT_PAGE_HDR_SIZE, offset,
			   __atomic_load_n((const uint64_t *)page,
					   __ATOMIC_RELAXED));
	do {
		ret = hvt_page_next(&it);
	} while (ret > 0);
	return it.ts;
}

/*
 * The timestamp cache for commit word @w: 0 with *@out the last committed
 * timestamp, or 1 when the cache does not belong to @w (an aborted write
 * left it).  Pairs with W3 (see the top of this file).
 */
static __attribute__((always_inline)) inline int
rb_cached_ts(const struct hvt_rb_cpu *cb, uint64_t w, uint64_t *out)
{
	struct hvt_cpu_meta *m = cb->meta;
	uint64_t k1, k2, ts;

	k1 = __atomic_load_n(&m->ts_key, __ATOMIC_ACQUIRE);
	ts = __atomic_load_n(&m->ts, __ATOMIC_RELAXED);
	/* Order the ts load before the second key load (pairs with W3). */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	k2 = __atomic_load_n(&m->ts_key, __ATOMIC_RELAXED);
	*out = ts;
	return !(k1 == w && k2 == w);
}

/* The last committed timestamp for commit word @w, walking the tail page
 * when the cache does not hold it. */
static __attribute__((always_inline)) inline uint64_t rb_last_ts(const struct hvt_rb_cpu *cb, uint64_t w)
{
	uint64_t ts;

	if (!rb_cached_ts(cb, w, &ts))
		return ts;
	return rb_tail_ts_slow(cb, HVT_WORD_SEQ(w), HVT_WORD_OFFSET(w));
}

/*
 * Add the copies that finish the tail page @seq whose committed data ends at
 * @off: tail padding, the header commit with missed-event flags, and the
 * stored missed count.  @missed is the page's descriptor value, loaded once
 * by the caller.  Returns the final data size.
 */
static uint32_t rb_plan_finish(struct hvt_rb_cpu *cb, struct hvt_rb_plan *p,
			       uint32_t seq, uint32_t off, uint64_t missed)
{
	uint8_t *page = rb_page(cb, seq);
	uint32_t end = rb_page_end(cb, missed);
	uint32_t size;

	if (off > end)
		off = end;
	size = off;
	if (end - off >= HVT_EVT_MIN_SIZE) {
		/* Padding to the end, as the kernel's rb_reset_tail() does:
		 * type PADDING, non-zero delta, array[0] = bytes after the
		 * 4-byte header. */
		p->s.pad_evt[0] = HVT_TYPE_PADDING | (1u << HVT_TYPE_LEN_BITS);
		p->s.pad_evt[1] = end - off - HVT_EVT_HDR_SIZE;
		rb_op(p, page + HVT_PAGE_HDR_SIZE + off, p->s.pad_evt, 8);
		size = end;
	}
	p->s.old_commit = size;
	if (missed) {
		p->s.old_commit |= HVT_MISSED_EVENTS | HVT_MISSED_STORED;
		p->s.missed = missed;
		/* size <= end = data_size - 8: the count fits after it. */
		rb_op(p, page + HVT_PAGE_HDR_SIZE + size, &p->s.missed, 8);
	}
	rb_op(p, page + HVT_PAGE_COMMIT_OFF, &p->s.old_commit, 8);
	return size;
}

/*
 * The one encoding of an event header, for a record of @aligned bytes
 * @delta after the previous event: a TIME_EXTEND first when the delta does
 * not fit the header, then the type_len word, and array[0] for a record
 * over HVT_SMALL_DATA_MAX.  The plan (rb_plan_event()) and the fused
 * append (rb_append_prepare()) both take their header from here.  Fills
 * @hw (up to 4 words) and returns the header's bytes.
 */
static __attribute__((always_inline)) inline uint32_t
rb_event_hdr(uint32_t *hw, uint32_t aligned, uint64_t delta)
{
	uint32_t nw = 0;

	if (delta > HVT_TS_MASK) {
		/* TIME_EXTEND: delta = array[0] << 27 | time_delta. */
		if (delta >> (HVT_TS_BITS + 32))
			delta = (1ULL << (HVT_TS_BITS + 32)) - 1;
		hw[nw++] = HVT_TYPE_TIME_EXTEND | ((uint32_t)(delta & HVT_TS_MASK)
						   << HVT_TYPE_LEN_BITS);
		hw[nw++] = (uint32_t)(delta >> HVT_TS_BITS);
		delta = 0;
	}
	if (aligned <= HVT_SMALL_DATA_MAX) {
		hw[nw++] = (aligned / 4) |
			   ((uint32_t)delta << HVT_TYPE_LEN_BITS);
	} else {
		hw[nw++] = (uint32_t)delta << HVT_TYPE_LEN_BITS;
		hw[nw++] = aligned + 4;	/* array[0] = length + 4 */
	}
	return nw * 4;
}

/* A plan's op, or with no plan (the fused append) the copy itself. */
static __attribute__((always_inline)) inline void
rb_put(struct hvt_rb_plan *p, uint8_t *dst, const void *src, uint32_t len)
{
	if (p)
		rb_op(p, dst, src, len);
	else
		rb_copy(dst, src, len);
}

/*
 * The one layout of an event at @dst: header, common fields, payload, then
 * @pad zero bytes to the 4-byte boundary.  With a plan @p each piece is an
 * op, whose source must live as long as the plan (the header and common
 * fields are in its scratch then); with none (a constant NULL, folded
 * away) the bytes are stored now, in the same order.
 */
static __attribute__((always_inline)) inline void
rb_lay_event(struct hvt_rb_plan *p, uint8_t *dst, const void *hdr,
	     uint32_t hdr_len, const struct hvt_common_fields *common,
	     const struct hvt_iovec *iov, uint32_t niov, uint32_t pad)
{
	uint32_t i;

	/* Without a plan (the fused append) the header is one word or two:
	 * copies of constant size, so the fast path stores them directly. */
	if (p)
		rb_op(p, dst, hdr, hdr_len);
	else if (hdr_len == 4)
		rb_copy(dst, hdr, 4);
	else
		rb_copy(dst, hdr, 8);
	dst += hdr_len;
	rb_put(p, dst, common, sizeof(*common));
	dst += sizeof(*common);
	for (i = 0; i < niov; i++) {
		if (!iov[i].len)
			continue;
		rb_put(p, dst, iov[i].base, iov[i].len);
		dst += iov[i].len;
	}
	if (!pad)
		return;
	if (p) {
		p->s.zero = 0;
		rb_op(p, dst, &p->s.zero, pad);
	} else {
		for (i = 0; i < pad; i++)
			*dst++ = 0;
	}
}

/* Add the copies of the event itself at @dst. */
static __attribute__((always_inline)) inline void
rb_plan_event(struct hvt_rb_plan *p, uint8_t *dst, uint64_t delta,
	      const struct hvt_common_fields *common,
	      const struct hvt_iovec *iov, uint32_t niov, uint32_t rec_len)
{
	uint32_t aligned = HVT_ALIGN4(rec_len);
	uint32_t hdr_len = rb_event_hdr(p->s.evt, aligned, delta);

	p->s.common = *common;
	rb_lay_event(p, dst, p->s.evt, hdr_len, &p->s.common, iov, niov,
		     aligned - rec_len);
}

/* Bytes an event occupies on a page (without TIME_EXTEND). */
static inline uint32_t rb_event_size(uint32_t rec_len)
{
	uint32_t aligned = HVT_ALIGN4(rec_len);

	return aligned + (aligned <= HVT_SMALL_DATA_MAX ? 4u : 8u);
}

static __attribute__((always_inline)) inline void rb_plan_ts(struct hvt_rb_cpu *cb, struct hvt_rb_plan *p,
		       uint64_t ts, uint64_t new_word)
{
	p->s.ts_pair[0] = HVT_TS_KEY_INVALID;
	p->s.ts_pair[1] = ts;
	p->s.ts_key = new_word;
	/*
	 * W3: key invalid, then ts, then key = new word: three ops, so the
	 * order is explicit in the plan and does not depend on how an
	 * executor copies the bytes inside one op.
	 */
	rb_op(p, &cb->meta->ts_key, &p->s.ts_pair[0], 8);
	rb_op(p, &cb->meta->ts, &p->s.ts_pair[1], 8);
	rb_op(p, &cb->meta->ts_key, &p->s.ts_key, 8);
}

/* hvt_rb_: exported API ------------------------------------------------ */

static int rb_cpu_setup(struct hvt_rb_cpu *cb, struct hvt_cpu_meta *meta,
			uint8_t *pages, const struct hvt_control *ctrl,
			uint32_t cpu, uint32_t nr_subbufs, uint32_t subbuf_size,
			uint32_t mode)
{
	if (!cb || !meta || !pages || !ctrl)
		return -HVT_EINVAL;
	if (!rb_is_pow2(nr_subbufs) || nr_subbufs < HVT_ABI_MIN_SUBBUFS ||
	    nr_subbufs > HVT_ABI_MAX_SUBBUFS)
		return -HVT_EINVAL;
	if (!rb_is_pow2(subbuf_size) || subbuf_size < HVT_ABI_MIN_SUBBUF_SIZE ||
	    subbuf_size > HVT_ABI_MAX_SUBBUF_SIZE)
		return -HVT_EINVAL;
	if (mode != HVT_MODE_CONSUME && mode != HVT_MODE_OVERWRITE)
		return -HVT_EINVAL;
	if (cpu >= HVT_ABI_MAX_CPUS)
		return -HVT_EINVAL;

	cb->meta = meta;
	cb->pages = pages;
	cb->ctrl = ctrl;
	cb->wake = &ctrl->wake[cpu];
	cb->wake_seen = 0;
	cb->cpu = cpu;
	cb->nr_subbufs = nr_subbufs;
	cb->subbuf_size = subbuf_size;
	/* The word's offset field is 16 bits: 65536 - 16 fits. */
	cb->data_size = subbuf_size - HVT_PAGE_HDR_SIZE;
	cb->mode = mode;
	/* An event must fit an empty page that keeps 8 bytes for a missed
	 * count: header + array word + record <= data_size - 8. */
	cb->max_record = cb->data_size - 16;
	return 0;
}

int hvt_rb_cpu_attach(struct hvt_rb_cpu *cb, struct hvt_cpu_meta *meta,
		      uint8_t *pages, const struct hvt_control *ctrl,
		      uint32_t cpu, uint32_t nr_subbufs, uint32_t subbuf_size,
		      uint32_t mode)
{
	return rb_cpu_setup(cb, meta, pages, ctrl, cpu, nr_subbufs,
			    subbuf_size, mode);
}

int hvt_rb_cpu_init(struct hvt_rb_cpu *cb, struct hvt_cpu_meta *meta,
		    uint8_t *pages, const struct hvt_control *ctrl, uint32_t cpu,
		    uint32_t nr_subbufs, uint32_t subbuf_size, uint32_t mode)
{
	uint32_t seq0 = 0, i;
	int ret;

	ret = rb_cpu_setup(cb, meta, pages, ctrl, cpu, nr_subbufs, subbuf_size,
			   mode);
	if (ret)
		return ret;

	/*
	 * Start at the host's consumer position, whatever it is: then a
	 * stale control page from an earlier run cannot make a fresh ring
	 * look full.  A host that attaches later adopts the writer's seq.
	 */
	if (mode == HVT_MODE_CONSUME)
		seq0 = __atomic_load_n(&ctrl->consumer[cpu], __ATOMIC_ACQUIRE);

	rb_zero(meta, hvt_meta_size(nr_subbufs));
	for (i = 0; i < nr_subbufs; i++)
		meta->desc[i].seq = seq0 - nr_subbufs;	/* never expected */
	rb_desc(cb, seq0)->seq = seq0;
	rb_zero(rb_page(cb, seq0), HVT_PAGE_HDR_SIZE);
	meta->cpu = cpu;
	meta->ts_key = HVT_TS_KEY_INVALID;
	meta->reset_ack = __atomic_load_n(&ctrl->reset_req[cpu],
					  __ATOMIC_RELAXED);
	meta->reset_seq = seq0;
	/* Published by the area magic (W5) or by this release store. */
	__atomic_store_n(&meta->write, HVT_WORD(seq0, 0, 0), __ATOMIC_RELEASE);
	return 0;
}

int hvt_rb_plan_write(struct hvt_rb_cpu *cb, struct hvt_rb_plan *p,
		      uint64_t ts, const struct hvt_common_fields *common,
		      const struct hvt_iovec *iov, uint32_t niov)
{
	struct hvt_cpu_meta *m = cb->meta;
	struct hvt_subbuf_desc *d;
	uint32_t rec_len = sizeof(*common), size, seq, entries, off, end, i;
	uint64_t w, lost, last, delta, missed;
	uint8_t *page;

	if (niov > HVT_RB_MAX_IOV || (niov && !iov))
		return -HVT_EINVAL;
	for (i = 0; i < niov; i++) {
		if (iov[i].len > cb->max_record)
			return -HVT_E2BIG;
		rec_len += iov[i].len;
	}
	if (HVT_ALIGN4(rec_len) > cb->max_record)
		return -HVT_E2BIG;
	size = rb_event_size(rec_len);

	/* W1: see every byte the previous commit published. */
	w = __atomic_load_n(&m->write, __ATOMIC_ACQUIRE);
	lost = __atomic_load_n(&m->lost, __ATOMIC_RELAXED);

	p->write_ptr = &m->write;
	p->lost_ptr = &m->lost;
	p->expect_write = w;
	p->expect_lost = lost;
	p->cpu = cb->cpu;
	p->nr_pre = 0;
	p->nr_ops = 0;

	seq = HVT_WORD_SEQ(w);
	entries = HVT_WORD_ENTRIES(w);
	off = HVT_WORD_OFFSET(w);
	d = rb_desc(cb, seq);
	page = rb_page(cb, seq);
	missed = rb_desc_missed(d);
	end = rb_page_end(cb, missed);
	if (off > end)		/* only a corrupted word can say this */
		off = end;

	if (off == 0) {
		/* Empty tail page (a fresh ring): the event starts it. */
		p->kind = HVT_PLAN_APPEND;
		p->s.page_hdr[0] = ts;
		p->s.page_hdr[1] = 0;
		rb_op(p, page, p->s.page_hdr, 16);
		p->commit_ptr = &m->write;
		p->commit_val = HVT_WORD(seq, 1, size);
		rb_plan_ts(cb, p, ts, p->commit_val);
		rb_plan_event(p, page + HVT_PAGE_HDR_SIZE, 0, common, iov, niov,
			      rec_len);
		return 0;
	}

	last = rb_last_ts(cb, w);
	if (ts < last)
		ts = last;	/* clamp: pages stay monotonic */
	delta = ts - last;

	if ((uint64_t)off + size + (delta > HVT_TS_MASK ? 8u : 0u) <= end) {
		uint32_t ext = delta > HVT_TS_MASK ? 8u : 0u;

		p->kind = HVT_PLAN_APPEND;
		p->commit_ptr = &m->write;
		p->commit_val = HVT_WORD(seq, entries + 1, off + ext + size);
		rb_plan_ts(cb, p, ts, p->commit_val);
		rb_plan_event(p, page + HVT_PAGE_HDR_SIZE + off, delta, common,
			      iov, niov, rec_len);
		return 0;
	}

	/* The event does not fit: start the next page if the ring allows. */
	{
		uint32_t next = seq + 1;
		struct hvt_subbuf_desc *nd = rb_desc(cb, next);
		uint8_t *npage = rb_page(cb, next);

		if (cb->mode == HVT_MODE_CONSUME) {
			/* W4: the host finished every page below consumer. */
			uint32_t cons = __atomic_load_n(
				&cb->ctrl->consumer[cb->cpu], __ATOMIC_ACQUIRE);

			if ((uint32_t)(next - cons) >= cb->nr_subbufs) {
				if (end - off >= HVT_EVT_MIN_SIZE) {
					/* Close the page first, so losses
					 * fall between pages. */
					p->kind = HVT_PLAN_SEAL;
					rb_plan_finish(cb, p, seq, off, missed);
					p->commit_ptr = &m->write;
					p->commit_val =
						HVT_WORD(seq, entries, end);
					rb_plan_ts(cb, p, last, p->commit_val);
					return 0;
				}
				p->kind = HVT_PLAN_DROP;
				p->commit_ptr = &m->lost;
				p->commit_val = lost + 1;
				return 0;
			}
		}

		p->kind = HVT_PLAN_SWITCH;
		/* W2: claim the slot before touching any of its bytes. */
		p->s.desc_seq = next;
		rb_op(p, &nd->seq, &p->s.desc_seq, 4);
		p->nr_pre = 1;

		p->s.desc_rest.seq = next;
		p->s.desc_rest.flags = 0;
		p->s.desc_rest.entries_before =
			__atomic_load_n(&d->entries_before, __ATOMIC_RELAXED) +
			entries;
		p->s.desc_rest.lost_before = lost;
		p->s.desc_rest.missed =
			lost - __atomic_load_n(&d->lost_before,
					       __ATOMIC_RELAXED);
		rb_op(p, &nd->flags, &p->s.desc_rest.flags,
		      sizeof(*nd) - offsetof(struct hvt_subbuf_desc, flags));

		rb_plan_finish(cb, p, seq, off, missed);

		/* New page header: time_stamp, and commit 0 until it is
		 * finished (the word bounds the tail page meanwhile). */
		p->s.page_hdr[0] = ts;
		p->s.page_hdr[1] = 0;
		rb_op(p, npage, p->s.page_hdr, 16);

		p->commit_ptr = &m->write;
		p->commit_val = HVT_WORD(next, 1, size);
		rb_plan_ts(cb, p, ts, p->commit_val);
		rb_plan_event(p, npage + HVT_PAGE_HDR_SIZE, 0, common, iov,
			      niov, rec_len);
		return 0;
	}
}

void hvt_rb_plan_exec(const struct hvt_rb_plan *p)
{
	uint32_t i;

	for (i = 0; i < p->nr_pre; i++)
		rb_copy(p->ops[i].dst, p->ops[i].src, p->ops[i].len);
	if (p->nr_pre)
		/* W2: slot claim before its bytes change; pairs with the
		 * host's acquire fence after copying a page. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
	for (; i < p->nr_ops; i++)
		if (p->ops[i].src)
			rb_copy(p->ops[i].dst, p->ops[i].src, p->ops[i].len);
	/* W1: publish; pairs with the host's acquire load of the word. */
	__atomic_store_n(p->commit_ptr, p->commit_val, __ATOMIC_RELEASE);
}

/*
 * The decisions of the common write, an APPEND without TIME_EXTEND to a
 * tail page that already holds an event, shared by the direct path's fused
 * append (rb_write_append()) and the compact plan (hvt_rb_plan_append()):
 * the same commit value, timestamp and event header hvt_rb_plan_write()
 * computes for it.  Fills everything in @a but the expected lost count,
 * the common fields, the payload and the CPU.  Returns 0, or 1 when the
 * write is not that case (nothing is filled that matters then).  With
 * @walk 0 an invalid timestamp cache also returns 1 rather than walking
 * the tail page: the compact plan stays a leaf function, and the general
 * plan does the (rare) walk.
 */
static __attribute__((always_inline)) inline int
rb_append_prepare(struct hvt_rb_cpu *cb, struct hvt_rb_append *a, uint64_t ts,
		  uint32_t rec_len, int walk)
{
	struct hvt_cpu_meta *m = cb->meta;
	uint32_t aligned = HVT_ALIGN4(rec_len), size, seq, off, end, hw[4];
	uint64_t w, last, delta;

	if (aligned > cb->max_record)
		return 1;
	size = rb_event_size(rec_len);

	/* W1: see every byte the previous commit published. */
	w = __atomic_load_n(&m->write, __ATOMIC_ACQUIRE);
	seq = HVT_WORD_SEQ(w);
	off = HVT_WORD_OFFSET(w);
	end = rb_page_end(cb, rb_desc_missed(rb_desc(cb, seq)));
	if (off == 0 || off > end)
		return 1;
	if (walk) {
		last = rb_last_ts(cb, w);
	} else if (rb_cached_ts(cb, w, &last)) {
		return 1;
	}
	if (ts < last)
		ts = last;	/* clamp: pages stay monotonic */
	delta = ts - last;
	if (delta > HVT_TS_MASK || (uint64_t)off + size > end)
		return 1;

	a->meta = m;
	a->expect_write = w;
	/* HVT_WORD(seq, entries + 1, off + size): off + size <= end fits
	 * the offset field, and the entries field has room (no page holds
	 * 0xffff events; a word that says so takes the general plan). */
	if (HVT_WORD_ENTRIES(w) == 0xffff)
		return 1;
	a->commit_val = w + (1u << 16) + size;
	a->ts = ts;
	a->dst = rb_page(cb, seq) + HVT_PAGE_HDR_SIZE + off;
	/* The event header from the one encoding; delta fits, so there is
	 * no TIME_EXTEND and it is one or two words. */
	a->hdr_len = rb_event_hdr(hw, aligned, delta);
	a->hdr = hw[0] | (a->hdr_len == 8 ? (uint64_t)hw[1] << 32 : 0);
	a->pad = aligned - rec_len;
	return 0;
}

int hvt_rb_plan_append(struct hvt_rb_cpu *cb,
		       struct hvt_rb_append *__restrict a, uint64_t ts,
		       const struct hvt_common_fields *common, const void *src,
		       uint32_t len)
{
	if (len > cb->max_record || (len && !src))
		return 1;
	/* Stored first: fewer values to keep in registers below. */
	a->common = *common;
	a->src = src;
	a->len = len;
	a->cpu = cb->cpu;
	if (rb_append_prepare(cb, a, ts, (uint32_t)sizeof(*common) + len, 0))
		return 1;
	/* After the acquire load of write, as in hvt_rb_plan_write(). */
	a->expect_lost = __atomic_load_n(&a->meta->lost, __ATOMIC_RELAXED);
	return 0;
}

/*
 * The direct path's common case (see rb_append_prepare()): makes exactly
 * the stores that hvt_rb_plan_write() plans for it and hvt_rb_plan_exec()
 * would run, in the same order, without staging a plan.  Returns 0 when
 * the event was written, 1 when the case does not apply (the caller plans
 * the write; nothing was stored).  Only for a single writer per CPU: there
 * is no expected-word check.
 */
static inline int rb_write_append(struct hvt_rb_cpu *cb, uint64_t ts,
				  const struct hvt_common_fields *common,
				  const struct hvt_iovec *iov, uint32_t niov)
{
	struct hvt_cpu_meta *m = cb->meta;
	uint32_t rec_len = sizeof(*common), i;
	struct hvt_rb_append a;

	if (niov > HVT_RB_MAX_IOV || (niov && !iov))
		return 1;
	for (i = 0; i < niov; i++) {
		if (iov[i].len > cb->max_record)
			return 1;
		rec_len += iov[i].len;
	}
	if (rb_append_prepare(cb, &a, ts, rec_len, 1))
		return 1;

	/* W3: key invalid, ts, key = new word (rb_plan_ts()'s three ops);
	 * pairs with rb_last_ts() of the next write. */
	__atomic_store_n(&m->ts_key, HVT_TS_KEY_INVALID, __ATOMIC_RELAXED);
	__atomic_store_n(&m->ts, a.ts, __ATOMIC_RELAXED);
	__atomic_store_n(&m->ts_key, a.commit_val, __ATOMIC_RELAXED);

	/* The event, in the one layout (rb_lay_event(), no plan). */
	rb_lay_event(NULL, a.dst, &a.hdr, a.hdr_len, common, iov, niov, a.pad);
	/* W1: publish; pairs with the host's acquire load of the word. */
	__atomic_store_n(&m->write, a.commit_val, __ATOMIC_RELEASE);
	return 0;
}

int hvt_rb_write(struct hvt_rb_cpu *cb, uint64_t ts,
		 const struct hvt_common_fields *common,
		 const struct hvt_iovec *iov, uint32_t niov)
{
	struct hvt_rb_plan plan;
	int tries, ret;

	if (!rb_write_append(cb, ts, common, iov, niov))
		return 0;
	/* SEAL is followed by DROP; nothing else loops. */
	for (tries = 0; tries < 3; tries++) {
		ret = hvt_rb_plan_write(cb, &plan, ts, common, iov, niov);
		if (ret)
			return ret;
		hvt_rb_plan_exec(&plan);
		if (plan.kind == HVT_PLAN_DROP)
			return -HVT_ENOSPC;
		if (plan.kind != HVT_PLAN_SEAL)
			return 0;
	}
	return -HVT_ENOSPC;	/* not reached with a sane meta */
}

void *hvt_rb_reserve(struct hvt_rb_cpu *cb, struct hvt_rb_reservation *r,
		     uint64_t ts, const struct hvt_common_fields *common,
		     uint32_t len, int *err)
{
	struct hvt_iovec iov = { NULL, len };
	struct hvt_rb_plan *p = &r->plan;
	int tries, ret = -HVT_ENOSPC;
	uint32_t i;

	for (tries = 0; tries < 3; tries++) {
		ret = hvt_rb_plan_write(cb, p, ts, common, &iov, len ? 1 : 0);
		if (ret)
			break;
		if (p->kind == HVT_PLAN_SEAL) {
			hvt_rb_plan_exec(p);
			continue;
		}
		if (p->kind == HVT_PLAN_DROP) {
			hvt_rb_plan_exec(p);
			ret = -HVT_ENOSPC;
			break;
		}
		/* Claim the slot now: the caller writes into it next. */
		for (i = 0; i < p->nr_pre; i++)
			rb_copy(p->ops[i].dst, p->ops[i].src, p->ops[i].len);
		if (p->nr_pre)
			__atomic_thread_fence(__ATOMIC_RELEASE); /* W2 */
		p->nr_pre = 0;
		r->payload = NULL;
		for (i = 0; i < p->nr_ops; i++) {
			if (!p->ops[i].src) {
				r->payload = p->ops[i].dst;
				/* Nothing to copy at commit for this op. */
			}
		}
		if (!r->payload) {
			/* len == 0: point past the common fields. */
			static uint8_t empty[1];

			r->payload = empty;
		}
		r->len = len;
		return r->payload;
	}
	if (err)
		*err = ret;
	return NULL;
}

void hvt_rb_commit(struct hvt_rb_cpu *cb, struct hvt_rb_reservation *r)
{
	(void)cb;
	/* Pre-ops already ran in hvt_rb_reserve(); ops with no source are the
	 * caller's payload, already in place. */
	hvt_rb_plan_exec(&r->plan);
}

uint64_t hvt_rb_entries(const struct hvt_rb_cpu *cb)
{
	uint64_t w = __atomic_load_n(&cb->meta->write, __ATOMIC_ACQUIRE);

	return __atomic_load_n(&rb_desc(cb, HVT_WORD_SEQ(w))->entries_before,
			       __ATOMIC_RELAXED) +
	       HVT_WORD_ENTRIES(w);
}

void hvt_rb_count_unplaced(struct hvt_rb_cpu *cb)
{
	/*
	 * Relaxed: the counter orders nothing else; any writer of the area
	 * may add to it concurrently (hence the atomic add, the one
	 * read-modify-write of the core).  The host loads it relaxed and
	 * reports the increase with the buffer's next page.
	 */
	__atomic_fetch_add(&cb->meta->unplaced, 1, __ATOMIC_RELAXED);
}

/*
 * A whole page from another ftrace ring (a guest kernel's trace_pipe_raw,
 * copied by the agent into the kernel section): the same stores, in the
 * same order, as a SWITCH plan followed by nothing, so the host reads it
 * with the one page reader.  Single writer per CPU buffer.
 */
int hvt_rb_put_page(struct hvt_rb_cpu *cb, const uint8_t *page, uint32_t len,
		    uint64_t lost)
{
	struct hvt_cpu_meta *m = cb->meta;
	struct hvt_subbuf_desc *d, *nd;
	struct hvt_page_iter it;
	uint64_t commit, ts0, w, lost_total, eb, done;
	uint32_t size, n = 0, seq, ent, off, target;
	uint8_t *dst;
	int ret;

	if (!page || len < HVT_PAGE_HDR_SIZE)
		return -HVT_EINVAL;
	ts0 = hvt_rd64(page);
	commit = hvt_rd64(page + HVT_PAGE_COMMIT_OFF);
	if (commit & ~(uint64_t)(HVT_COMMIT_SIZE_MASK | HVT_COMMIT_FLAGS))
		return -HVT_EBADMSG;
	size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	if (size > len - HVT_PAGE_HDR_SIZE)
		return -HVT_EBADMSG;
	if (size > cb->data_size)
		return -HVT_E2BIG;
	/* Every event inside the commit, counted; the page walker is the
	 * host reader's, so what passes here passes there. */
	hvt_page_iter_init(&it, page + HVT_PAGE_HDR_SIZE, size, ts0);
	do {
		ret = hvt_page_next(&it);
		if (ret < 0)
			return -HVT_EBADMSG;
		if (ret == HVT_ITEM_DATA)
			n++;
	} while (ret != HVT_ITEM_END);
	size = it.pos;	/* a bare 4-byte padding header at the end: trim */
	if (!n)
		return -HVT_ENODATA;	/* nothing to carry the loss */
	if (n > 0xffff)
		return -HVT_E2BIG;

	/* The only writer: its own last commit needs no acquire. */
	w = __atomic_load_n(&m->write, __ATOMIC_RELAXED);
	seq = HVT_WORD_SEQ(w);
	ent = HVT_WORD_ENTRIES(w);
	off = HVT_WORD_OFFSET(w);
	d = rb_desc(cb, seq);
	lost_total = __atomic_load_n(&m->lost, __ATOMIC_RELAXED) + lost;
	if (off > cb->data_size)
		off = cb->data_size;	/* only a corrupted word says this */
	if (off == 0 && ent == 0) {
		/* A fresh ring's empty tail page (claimed by the format):
		 * the page becomes it. */
		target = seq;
		nd = d;
		eb = __atomic_load_n(&d->entries_before, __ATOMIC_RELAXED);
	} else {
		target = seq + 1;
		nd = rb_desc(cb, target);
		if (cb->mode == HVT_MODE_CONSUME) {
			/* W4: the host finished every page below consumer. */
			uint32_t cons = __atomic_load_n(
				&cb->ctrl->consumer[cb->cpu], __ATOMIC_ACQUIRE);

			if ((uint32_t)(target - cons) >= cb->nr_subbufs)
				return -HVT_ENOSPC;
		}
		eb = __atomic_load_n(&d->entries_before, __ATOMIC_RELAXED) +
		     ent;
		/* W2: claim the slot before touching any of its bytes;
		 * pairs with the host's acquire fence after a copy. */
		__atomic_store_n(&nd->seq, target, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		/* Finish the old tail page: its header commit becomes the
		 * truth once the word names the next page (W1 below). */
		done = off;
		if (rb_desc_missed(d)) {
			done |= HVT_MISSED_EVENTS;
			if (off + 8 <= cb->data_size) {
				uint64_t mc = rb_desc_missed(d);

				rb_copy(rb_page(cb, seq) + HVT_PAGE_HDR_SIZE +
						off,
					&mc, 8);
				done |= HVT_MISSED_STORED;
			}
		}
		rb_copy(rb_page(cb, seq) + HVT_PAGE_COMMIT_OFF, &done, 8);
	}
	nd->flags = 0;
	nd->entries_before = eb;
	nd->lost_before = lost_total;
	nd->missed = lost;
	dst = rb_page(cb, target);
	rb_copy(dst, &ts0, 8);
	done = 0;
	rb_copy(dst + HVT_PAGE_COMMIT_OFF, &done, 8);
	rb_copy(dst + HVT_PAGE_HDR_SIZE, page + HVT_PAGE_HDR_SIZE, size);
	__atomic_store_n(&m->lost, lost_total, __ATOMIC_RELAXED);
	/* W3: the timestamp cache of the new word (single writer: program
	 * order is enough, as for the direct executor). */
	w = HVT_WORD(target, n, size);
	__atomic_store_n(&m->ts_key, HVT_TS_KEY_INVALID, __ATOMIC_RELAXED);
	__atomic_store_n(&m->ts, it.ts, __ATOMIC_RELAXED);
	__atomic_store_n(&m->ts_key, w, __ATOMIC_RELAXED);
	/* W1: publish; pairs with the host's acquire load of the word. */
	__atomic_store_n(&m->write, w, __ATOMIC_RELEASE);
	return 0;
}

int hvt_rb_poll_reset(struct hvt_rb_cpu *cb)
{
	struct hvt_cpu_meta *m = cb->meta;
	uint32_t req = __atomic_load_n(&cb->ctrl->reset_req[cb->cpu],
				       __ATOMIC_ACQUIRE);
	struct hvt_rb_plan p;
	uint64_t w, missed;
	uint32_t seq, off, end;

	if (req == m->reset_ack)
		return 0;

	w = __atomic_load_n(&m->write, __ATOMIC_RELAXED);
	seq = HVT_WORD_SEQ(w);
	off = HVT_WORD_OFFSET(w);
	missed = rb_desc_missed(rb_desc(cb, seq));
	end = rb_page_end(cb, missed);
	if (off > end)
		off = end;
	if (off) {
		/* Close the tail page: the next event starts a new one. */
		p.write_ptr = &m->write;
		p.lost_ptr = &m->lost;
		p.nr_pre = 0;
		p.nr_ops = 0;
		p.kind = HVT_PLAN_SEAL;
		p.commit_ptr = &m->write;
		/*
		 * Commit exactly what the page holds (padding included): the
		 * 0 or 4 bytes left after it cannot take any event (the
		 * smallest is 12 bytes), so the next write switches pages,
		 * and no unwritten byte is ever published.
		 */
		p.commit_val = HVT_WORD(seq, HVT_WORD_ENTRIES(w),
					rb_plan_finish(cb, &p, seq, off,
						       missed));
		rb_plan_ts(cb, &p, rb_last_ts(cb, w), p.commit_val);
		hvt_rb_plan_exec(&p);
		m->reset_seq = seq + 1;
	} else {
		m->reset_seq = seq;
	}
	/* W7: publish reset_seq with the ack; pairs with the host's acquire
	 * load of reset_ack in rd_check_reset(). */
	__atomic_store_n(&m->reset_ack, req, __ATOMIC_RELEASE);
	return 1;
}
