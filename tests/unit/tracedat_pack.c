// SPDX-License-Identifier: MIT
/*
 * The page packer, decoded with libtraceevent's kbuffer: every record
 * comes back with its bytes and its timestamp across every encoding the
 * packer uses --
 *   - records of 4..112 bytes (type_len = words) and over 112 bytes
 *     (type_len 0 with a length word), up to the largest that fits a page;
 *   - deltas that fit 27 bits, that need a TIME_EXTEND, and jumps beyond
 *     59 bits (a new page carries the absolute time);
 *   - a timestamp that goes backwards (held at the previous one);
 *   - losses: a known count (RB_MISSED_EVENTS | RB_MISSED_STORED with the
 *     count after the data) and an unknown one (RB_MISSED_EVENTS only),
 *     on the first record of the next page, never on an earlier one;
 * and pages never overflow (commit + count <= page - 16).
 */
#include <stdlib.h>

#include <kbuffer.h>

#include "../../host/tracedat/tracedat-local.h"
#include "hvt_test.h"

#define PAGE   4096u
#define MAXREC 4096u

struct rec {
	uint64_t ts;
	uint32_t len;
	int64_t missed;
	uint8_t data[MAXREC];
};

static struct rec want[8192];
static unsigned int nwant;
static struct rec got[8192];
static unsigned int ngot;
static unsigned int pages;
static struct kbuffer *kb;

static int on_page(void *ctx, const uint8_t *page, uint32_t size)
{
	uint8_t copy[PAGE + 8];
	unsigned long long ts;
	uint64_t commit;
	void *d;
	bool first = true;

	(void)ctx;
	t_assert(size <= PAGE);
	memcpy(&commit, page + 8, 8);
	t_assert((commit & HVT_COMMIT_SIZE_MASK) + 16 +
			 ((commit & HVT_MISSED_STORED) ? 8 : 0) <=
		 PAGE);
	memset(copy, 0, sizeof(copy));
	memcpy(copy, page, size);
	pages++;
	t_ok(kbuffer_load_subbuffer(kb, copy));
	for (d = kbuffer_read_event(kb, &ts); d;
	     d = kbuffer_next_event(kb, &ts)) {
		struct rec *r = &got[ngot++];

		t_assert(ngot <= 8192);
		r->ts = ts;
		r->len = (uint32_t)kbuffer_event_size(kb);
		r->missed = first ? kbuffer_missed_events(kb) : 0;
		t_assert(r->len <= MAXREC);
		memcpy(r->data, d, r->len);
		first = false;
	}
	return 0;
}

static void put(struct hvtrace_pack *p, uint64_t ts, uint32_t len,
		uint64_t expect_ts)
{
	struct rec *r = &want[nwant++];
	uint32_t i;

	r->ts = expect_ts;
	r->len = len;
	for (i = 0; i < len; i++)
		r->data[i] = (uint8_t)(nwant * 7 + i * 13);
	t_ok(hvtrace_pack_add_event(p, ts, r->data, len));
}

static int64_t pending;

static void put_m(struct hvtrace_pack *p, uint64_t ts, uint32_t len)
{
	put(p, ts, len, ts);
	want[nwant - 1].missed = pending;
	pending = 0;
}

int main(void)
{
	struct hvtrace_pack p;
	uint64_t ts = 5000;
	uint32_t len, i;

	kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	t_assert(kb);
	t_ok(hvtrace_pack_init(&p, PAGE, on_page, NULL));

	/* Every small size, then large ones, a delta of 1 ns each. */
	for (len = 4; len <= 256; len += 4)
		put_m(&p, ts++, len);
	/* Deltas around the 27-bit limit. */
	put_m(&p, ts += HVT_TS_MASK, 16);
	put_m(&p, ts += HVT_TS_MASK + 1, 16);
	put_m(&p, ts += 1ULL << 40, 16);
	put_m(&p, ts += (1ULL << 59) + 3, 16); /* needs a new page */
	/* Backwards: held at the previous timestamp. */
	put(&p, ts - 1000, 24, ts);
	want[nwant - 1].missed = 0;
	/* A known loss, then an unknown one. */
	t_ok(hvtrace_pack_add_lost(&p, 12345, true));
	pending = 12345;
	put_m(&p, ts += 10, 40);
	put_m(&p, ts += 10, 40);
	t_ok(hvtrace_pack_add_lost(&p, 0, false));
	pending = -1;
	put_m(&p, ts += 10, 40);
	/* Two losses in a row add up. */
	t_ok(hvtrace_pack_add_lost(&p, 3, true));
	t_ok(hvtrace_pack_add_lost(&p, 4, true));
	pending = 7;
	put_m(&p, ts += 10, 8);
	/* The largest record that fits, alone on its page (a lost count
	 * pending needs 8 more bytes: it still goes, count unknown). */
	put_m(&p, ts += 10, PAGE - 16 - 8);
	t_ok(hvtrace_pack_add_lost(&p, 9, true));
	pending = -1;
	put_m(&p, ts += 10, PAGE - 16 - 8);
	/* Too large for any page. */
	{
		static uint8_t big[PAGE];

		t_eq(hvtrace_pack_add_event(&p, ts, big, PAGE - 16), -E2BIG);
	}
	/* Fill several pages with mixed sizes. */
	for (i = 0; i < 3000; i++)
		put_m(&p, ts += i % 7, 4 + (i % 60) * 4);
	t_ok(hvtrace_pack_flush(&p));
	t_ok(hvtrace_pack_flush(&p)); /* nothing open: no empty page */
	hvtrace_pack_fini(&p);

	t_eq(ngot, nwant);
	for (i = 0; i < nwant; i++) {
		if (got[i].ts != want[i].ts || got[i].len != want[i].len ||
		    got[i].missed != want[i].missed)
			t_fail("record %u: got ts %llu len %u missed %lld, "
			       "expected ts %llu len %u missed %lld",
			       i, (unsigned long long)got[i].ts, got[i].len,
			       (long long)got[i].missed,
			       (unsigned long long)want[i].ts, want[i].len,
			       (long long)want[i].missed);
		t_memeq(got[i].data, want[i].data, want[i].len);
	}
	printf("%u records in %u pages decode as written\n", ngot, pages);
	kbuffer_free(kb);
	return 0;
}
