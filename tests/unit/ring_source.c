// SPDX-License-Identifier: MIT
/*
 * A ring whose pages a caller supplies (hvtrace_ring_open_source()), fed
 * by a scripted source, read through the record cursor:
 *
 *   - every event of the source's pages comes out once, in order, with
 *     its writer timestamp and host_ns from the source's time mapping;
 *   - a page that continues the reader page's writer sub-buffer (same
 *     seq, its time_stamp where that page's events end, nothing lost) is
 *     appended to it: same reader.id, reader.read grows; one with a
 *     time_stamp elsewhere gets a new reader page and keeps its times;
 *   - losses are reported on the next record: a page header's stored
 *     count, the source's own count for a page, a page with no event
 *     passing its losses on; losses after the last event are claimed by
 *     hvtrace_ring_take_trailing_lost();
 *   - malformed pages (a commit size past the page, an event past the
 *     commit, a page longer than the sub-buffer) are counted and skipped,
 *     and the next record reports the loss as of unknown count;
 *   - a page whose lost count does not fit is cut; its rest comes next;
 *   - each event is copied once (stats: copied == the events' bytes);
 *   - run again with every page lent (HVTRACE_PAGE_LENT): the same
 *     records; whole pages whose headers say their losses are read in
 *     place (copied counts only the others, and a lent reader page the
 *     next page appends to); every page is released exactly once, and a
 *     released page is poisoned, so a read after its release shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>
#include <hvtrace/page.h>

#include "hvt_test.h"

#define SUBBUF		4096
#define MAP_OFF		1000000ULL	/* host_ns = ts + MAP_OFF */
#define MAP_ERR		42ULL

struct spage {
	uint8_t buf[2 * SUBBUF];
	uint32_t len;
	uint32_t seq;
	uint64_t lost;
	unsigned int released;
};

struct script {
	struct spage p[32];
	unsigned int nr;	/* pages scripted */
	unsigned int avail;	/* pages released to the ring */
	unsigned int next;
	unsigned int maps;
	bool lend; /* pages are HVTRACE_PAGE_LENT */
	bool closed;
};

static int s_next(void *ctx, int cpu, struct hvtrace_ring_page *pg)
{
	struct script *s = ctx;
	struct spage *p;

	t_eq(cpu, 3);
	if (s->next >= s->avail)
		return 0;
	p = &s->p[s->next++];
	pg->data = p->buf;
	pg->len = p->len;
	pg->seq = p->seq;
	pg->lost_events = p->lost;
	if (s->lend) {
		pg->flags = HVTRACE_PAGE_LENT;
		pg->owner = p;
	}
	return 1;
}

static void s_release(void *ctx, int cpu, const struct hvtrace_ring_page *pg)
{
	struct script *s = ctx;
	struct spage *p = pg->owner;

	t_eq(cpu, 3);
	t_assert(s->lend && !s->closed);
	t_assert(p >= s->p && p < s->p + s->next && pg->data == p->buf);
	t_equ(p->released, 0);
	p->released++;
	memset(p->buf, 0xa5, sizeof(p->buf)); /* a later read shows */
}

static int s_to_host(void *ctx, int cpu, uint64_t ts, uint64_t *ns,
		     uint64_t *err_ns)
{
	struct script *s = ctx;

	(void)cpu;
	s->maps++;
	*ns = ts + MAP_OFF;
	if (err_ns)
		*err_ns = MAP_ERR;
	return 0;
}

static void s_close(void *ctx, int cpu)
{
	(void)cpu;
	((struct script *)ctx)->closed = true;
}

static const struct hvtrace_ring_source_ops ops = {
	.next_page = s_next,
	.to_host = s_to_host,
	.close = s_close,
	.release = s_release,
};

/*
 * Script a page: time_stamp @ts, events @ids each 10 ns after the one
 * before (8-byte payload: the id), header loss @hdr_lost (0: none,
 * HVTRACE_LOST_UNKNOWN: flag only, else stored), source loss @lost.
 */
static struct spage *add_page(struct script *s, uint32_t seq, uint64_t ts,
			      const uint64_t *ids, unsigned int n,
			      uint64_t hdr_lost, uint64_t lost)
{
	struct spage *p = &s->p[s->nr++];
	uint64_t commit;
	uint32_t off = HVT_PAGE_HDR_SIZE, i, hdr;

	memset(p, 0, sizeof(*p));
	memcpy(p->buf, &ts, 8);
	for (i = 0; i < n; i++) {
		hdr = (10u << 5) | 2;	/* type_len 2: 8 bytes of payload */
		memcpy(p->buf + off, &hdr, 4);
		memcpy(p->buf + off + 4, &ids[i], 8);
		off += 12;
	}
	commit = off - HVT_PAGE_HDR_SIZE;
	if (hdr_lost) {
		commit |= HVT_MISSED_EVENTS;
		if (hdr_lost != HVTRACE_LOST_UNKNOWN) {
			memcpy(p->buf + off, &hdr_lost, 8);
			commit |= HVT_MISSED_STORED;
			off += 8;
		}
	}
	memcpy(p->buf + HVT_PAGE_COMMIT_OFF, &commit, 8);
	p->len = off;
	p->seq = seq;
	p->lost = lost;
	return p;
}

/* The next record must be event @id at @ts with @lost before it. */
static void expect(struct hvtrace_ring *r, uint64_t id, uint64_t ts,
		   uint64_t lost)
{
	struct hvtrace_record rec;
	uint64_t got;

	if (hvtrace_ring_peek(r, &rec) != 1)
		t_fail("no record, expected event %llu",
		       (unsigned long long)id);
	t_equ(rec.size, 8);
	memcpy(&got, rec.data, 8);
	t_equ(got, id);
	t_equ(rec.ts, ts);
	t_equ(rec.host_ns, ts + MAP_OFF);
	t_equ(rec.lost_before, lost);
	t_eq(rec.cpu, 3);
	hvtrace_ring_consume(r);
}

static void expect_none(struct hvtrace_ring *r)
{
	struct hvtrace_record rec;

	t_eq(hvtrace_ring_peek(r, &rec), 0);
}

/* The script, its pages lent or not; returns the bytes copied. */
static uint64_t run(bool lend)
{
	static struct script s;
	struct hvtrace_ring_source_stats st;
	const struct hvt_trace_buffer_meta *m;
	struct hvtrace_ring *r;
	uint64_t ids[400], bytes = 0, lent_bytes = 0;
	uint32_t id0, read0;
	unsigned int i;
	struct spage *bad;

	memset(&s, 0, sizeof(s));
	s.lend = lend;
	for (i = 0; i < 400; i++)
		ids[i] = i + 1;
	t_eq(hvtrace_ring_open_source(NULL, &s, 3, SUBBUF, &r), -EINVAL);
	t_eq(hvtrace_ring_open_source(&ops, &s, 3, 5000, &r), -EINVAL);
	t_ok(hvtrace_ring_open_source(&ops, &s, 3, SUBBUF, &r));
	m = hvtrace_ring_meta(r);
	t_equ(m->subbuf_size, SUBBUF);
	t_equ(m->nr_subbufs, 2);
	t_equ(hvtrace_ring_now_ns(r), 0);	/* nothing mapped yet */
	expect_none(r);

	/* Events 1-3 of writer sub-buffer 0. */
	add_page(&s, 0, 1000, ids, 3, 0, 0);
	bytes += 36;
	s.avail = s.nr;
	expect(r, 1, 1010, 0);
	id0 = m->reader.id;
	read0 = m->reader.read;
	t_equ(read0, 36);
	expect(r, 2, 1020, 0);
	expect(r, 3, 1030, 0);
	expect_none(r);
	t_assert(hvtrace_ring_now_ns(r) != 0);

	/* The tail grew: events 4-5, appended to the same reader page. */
	add_page(&s, 0, 1030, ids + 3, 2, 0, 0);
	bytes += 24;
	lent_bytes += 36 + 24; /* the lent reader page is copied first */
	s.avail = s.nr;
	expect(r, 4, 1040, 0);
	t_equ(m->reader.id, id0);
	t_equ(m->reader.read, read0 + 24);
	expect(r, 5, 1050, 0);
	expect_none(r);

	/* Same seq, but its time_stamp is not where the page ends: a new
	 * reader page, its own times kept. */
	add_page(&s, 0, 5000, ids + 5, 1, 0, 0);
	bytes += 12;
	s.avail = s.nr;
	expect(r, 6, 5010, 0);
	t_assert(m->reader.id != id0);

	/* A page header's stored count; the source's own count. */
	add_page(&s, 1, 6000, ids + 6, 1, 7, 0);
	add_page(&s, 2, 7000, ids + 7, 1, 0, 3);
	bytes += 24;
	lent_bytes += 12; /* the source's count: rewritten */
	s.avail = s.nr;
	expect(r, 7, 6010, 7);
	t_equ(m->reader.lost_events, 7);
	expect(r, 8, 7010, 3);

	/* A page with no event passes its losses (2 + 4 stored) on; the next
	 * page adds its header's 5. */
	add_page(&s, 3, 8000, NULL, 0, 4, 2);
	add_page(&s, 4, 8100, ids + 8, 2, 5, 0);
	bytes += 24;
	lent_bytes += 24; /* carries the losses of the page before */
	s.avail = s.nr;
	expect(r, 9, 8110, 11);
	expect(r, 10, 8120, 0);

	/* Malformed: a commit size past the page; an event past the commit;
	 * a page longer than a sub-buffer.  Each skipped; then a loss of
	 * unknown count before the next event. */
	bad = add_page(&s, 5, 9000, ids, 1, 0, 0);
	bad->len = 20;
	bad = add_page(&s, 6, 9000, ids, 1, 0, 0);
	{
		uint64_t commit = 8;	/* the 12-byte event crosses it */

		memcpy(bad->buf + HVT_PAGE_COMMIT_OFF, &commit, 8);
	}
	bad = add_page(&s, 7, 9000, ids, 1, 0, 0);
	bad->len = SUBBUF + 16;
	add_page(&s, 8, 9500, ids + 10, 1, 0, 0);
	bytes += 12;
	lent_bytes += 12; /* an unknown loss before it */
	s.avail = s.nr;
	expect(r, 11, 9510, HVTRACE_LOST_UNKNOWN);
	t_equ(hvtrace_ring_errors(r), 3);

	/* A full page (340 events) after an event of the same seq: it does
	 * not fit the reader page, so it switches, all of it kept. */
	add_page(&s, 9, 10000, ids + 11, 1, 0, 0);
	add_page(&s, 9, 10010, ids + 12, 340, 0, 0);
	bytes += 12 + 340 * 12;
	s.avail = s.nr;
	expect(r, 12, 10010, 0);
	id0 = m->reader.id;
	for (i = 1; i < 341; i++)
		expect(r, 12 + i, 10010 + 10 * i, 0);
	t_assert(m->reader.id != id0);

	/* A full page after a loss the source counts: the count does not
	 * fit after its data, so the page is cut and its last event follows
	 * (the source's page is held until then). */
	add_page(&s, 11, 30000, ids, 340, 0, 2);
	bytes += 340 * 12;
	lent_bytes += 340 * 12;
	s.avail = s.nr;
	expect(r, 1, 30010, 2);
	t_equ(m->reader.read, 339 * 12);
	for (i = 1; i < 340; i++)
		expect(r, 1 + i, 30010 + 10 * i, 0);
	expect_none(r);

	/* Losses after the last event: claimed at the end of the stream. */
	add_page(&s, 10, 20000, NULL, 0, 0, 9);
	s.avail = s.nr;
	expect_none(r);
	t_equ(hvtrace_ring_take_trailing_lost(r), 9);
	t_equ(hvtrace_ring_take_trailing_lost(r), 0);

	t_ok(hvtrace_ring_source_stats(r, &st));
	t_equ(st.pages, s.nr);
	t_equ(st.skipped, 3);
	t_equ(st.empty, 2);
	t_equ(st.appended, 1);
	t_equ(st.events, 352 + 340);
	t_equ(st.copied, lend ? lent_bytes : bytes);
	t_equ(st.lost_events, 7 + 3 + 11 + 2 + 9);
	t_equ(st.lost_unknown, 1);
	t_equ(st.err_ns, MAP_ERR);
	t_equ(st.map_errors, 0);
	t_assert(s.maps >= 352 + 340);
	t_equ(m->read, 352 + 340);
	t_equ(m->entries - m->overrun - m->read, 0);
	t_eq(hvtrace_ring_source_stats(NULL, &st), -EINVAL);

	hvtrace_ring_close(r);
	t_assert(s.closed);
	for (i = 0; i < s.nr; i++)
		t_equ(s.p[i].released, lend ? 1 : 0);
	printf("ring_source: %s: %u pages, %llu events, %llu bytes copied\n",
	       lend ? "lent pages" : "pages", s.nr,
	       (unsigned long long)st.events, (unsigned long long)st.copied);
	return st.copied;
}

int main(void)
{
	uint64_t copied = run(false), in_place = run(true);

	t_assert(in_place < copied);
	return 0;
}
