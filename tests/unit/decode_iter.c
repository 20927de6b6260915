// SPDX-License-Identifier: MIT
/*
 * The sub-buffer record iterator against libtraceevent's kbuffer:
 *
 *   - pages written by the writer core (small and type_len-0 records,
 *     time extends, tail padding, lost-event marks) give the same records,
 *     timestamps, payload addresses and lost counts with both;
 *   - hand-built pages exercise absolute time stamps, padding with a
 *     delta and a 4-byte null padding;
 *   - random garbage never makes the iterator loop or read outside the
 *     page (the ASan pass of make check watches the reads).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kbuffer.h>

#include <hvtrace.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

#define NR		16
#define SUBBUF		4096

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Walk @page with both and compare everything. */
static unsigned int compare_page(struct kbuffer *kb, uint8_t *page)
{
	struct hvtrace_subbuf_iter it;
	struct hvtrace_record rec;
	unsigned long long kts;
	unsigned int n = 0;
	int missed, ret;
	void *kd;

	t_eq(kbuffer_load_subbuffer(kb, page), 0);
	t_ok(hvtrace_subbuf_iter_init(&it, page, SUBBUF, 5));
	missed = kbuffer_missed_events(kb);
	for (kd = kbuffer_read_event(kb, &kts); kd;
	     kd = kbuffer_next_event(kb, &kts)) {
		ret = hvtrace_subbuf_next(&it, &rec);
		t_eq(ret, 1);
		t_equ(rec.ts, kts);
		t_equ(rec.host_ns, kts);
		t_assert(rec.data == kd);
		t_eq(rec.size, kbuffer_event_size(kb));
		t_eq(rec.cpu, 5);
		if (n == 0 && missed)
			t_equ(rec.lost_before, missed < 0 ? HVTRACE_LOST_UNKNOWN
							   : (uint64_t)missed);
		else
			t_equ(rec.lost_before, 0);
		n++;
	}
	t_eq(hvtrace_subbuf_next(&it, &rec), 0);
	t_eq(hvtrace_subbuf_next(&it, &rec), 0);
	return n;
}

static void test_writer_pages(void)
{
	struct hvt_area_params p = {
		.nr_cpus = 1, .nr_subbufs = NR, .subbuf_size = SUBBUF,
		.mode = HVT_MODE_CONSUME, .writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "iter",
	};
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
	struct hvt_control *ctrl;
	struct hvt_rb_cpu cb;
	uint8_t payload[600];
	uint64_t ts = 1, total = 0, written = 0;
	void *area;
	int round, i;

	t_assert(kb);
	p.area_size = hvt_area_size(1, NR, SUBBUF);
	t_assert(!posix_memalign(&area, 4096, p.area_size));
	memset(area, 0, p.area_size);
	t_ok(hvt_area_format(area, &p));
	t_ok(hvt_area_cpu(area, p.area_size, 0, &cb));
	ctrl = (struct hvt_control *)((uint8_t *)area + HVT_CONTROL_OFFSET);

	for (round = 0; round < 40; round++) {
		/* Fill the ring (consume mode: drops once full), walk every
		 * finished page, then free the ring. */
		for (i = 0; i < 3000; i++) {
			struct hvt_common_fields c = { .common_type = 7 };
			uint32_t len = (uint32_t)(rnd() % 8 ? rnd() % 40
							    : rnd() % 500);
			struct hvt_iovec iov = { payload, len };
			uint64_t r = rnd() % 100;

			ts += r < 90 ? r : r < 98 ? (1ULL << 27) + rnd() % 9999
						  : (1ULL << 40);
			for (uint32_t k = 0; k < len; k++)
				payload[k] = (uint8_t)(k + i);
			if (!hvt_rb_write(&cb, ts, &c, &iov, 1))
				written++;
		}
		{
			uint64_t w = cb.meta->write;
			uint32_t tail = HVT_WORD_SEQ(w), s;

			for (s = tail - (NR - 1); s != tail; s++) {
				if (cb.meta->desc[s & (NR - 1)].seq != s)
					continue;
				total += compare_page(
					kb, cb.pages + (size_t)(s & (NR - 1)) *
							       SUBBUF);
			}
			/* Everything is read: let the writer reuse it. */
			ctrl->consumer[0] = tail;
		}
	}
	t_assert(total > 10000);
	t_assert(written >= total);
	kbuffer_free(kb);
	free(area);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void test_crafted(void)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
	static uint8_t page[SUBBUF];
	struct hvtrace_subbuf_iter it;
	struct hvtrace_record rec;
	uint64_t v, commit;
	uint8_t *d = page + 16;
	uint32_t o = 0;

	memset(page, 0, sizeof(page));
	v = 0xf800000000001000ULL;	/* top bits set: kept by TIME_STAMP */
	memcpy(page, &v, 8);
	put32(d + o, 2 | (5u << 5));	/* data, 8 bytes, delta 5 */
	o += 4 + 8;
	put32(d + o, 31 | (7u << 5));	/* TIME_STAMP abs = (3 << 27) | 7 */
	put32(d + o + 4, 3);
	o += 8;
	put32(d + o, 1 | (2u << 5));	/* data, 4 bytes, delta 2 */
	o += 8;
	put32(d + o, 29 | (4u << 5));	/* padding with delta 4, 12 bytes */
	put32(d + o + 4, 12);
	o += 16;
	put32(d + o, 0 | (1u << 5));	/* type_len 0: 10 bytes -> 12 */
	put32(d + o + 4, 14);
	o += 8 + 12;
	put32(d + o, 30 | (3u << 5));	/* TIME_EXTEND 1 << 27 | 3 */
	put32(d + o + 4, 1);
	o += 8;
	put32(d + o, 3 | (9u << 5));	/* data, 12 bytes */
	o += 16;
	put32(d + o, 29);		/* null padding: the end */
	o += 4;
	commit = o | HVT_MISSED_EVENTS | HVT_MISSED_STORED;
	memcpy(page + 8, &commit, 8);
	v = 321;
	memcpy(d + o, &v, 8);
	t_eq(compare_page(kb, page), 4);

	t_ok(hvtrace_subbuf_iter_init(&it, page, SUBBUF, 0));
	t_eq(hvtrace_subbuf_next(&it, &rec), 1);
	t_equ(rec.ts, 0xf800000000001005ULL);
	t_equ(rec.lost_before, 321);
	t_eq(hvtrace_subbuf_next(&it, &rec), 1);
	t_equ(rec.ts, 0xf800000000000000ULL + (3ULL << 27) + 7 + 2);

	/* Lost events without room for the count: unknown. */
	commit = o | HVT_MISSED_EVENTS;
	memcpy(page + 8, &commit, 8);
	t_ok(hvtrace_subbuf_iter_init(&it, page, SUBBUF, 0));
	t_eq(hvtrace_subbuf_next(&it, &rec), 1);
	t_equ(rec.lost_before, HVTRACE_LOST_UNKNOWN);

	/* A commit size past the page is refused. */
	commit = SUBBUF;
	memcpy(page + 8, &commit, 8);
	t_eq(hvtrace_subbuf_iter_init(&it, page, SUBBUF, 0), -EBADMSG);
	kbuffer_free(kb);
}

static void test_garbage(void)
{
	struct hvtrace_subbuf_iter it;
	struct hvtrace_record rec;
	uint8_t *page;
	unsigned int round, n, bad = 0;

	for (round = 0; round < 20000; round++) {
		uint32_t size = 16 + (uint32_t)(rnd() % (SUBBUF - 15));
		uint64_t commit = rnd() % (size - 15);
		int ret;

		/* Exactly the bytes the iterator may touch. */
		page = malloc(size);
		t_assert(page);
		for (uint32_t i = 0; i < size; i++)
			page[i] = (uint8_t)rnd();
		if (rnd() & 1)
			commit |= HVT_MISSED_EVENTS | HVT_MISSED_STORED;
		memcpy(page + 8, &commit, 8);
		t_ok(hvtrace_subbuf_iter_init(&it, page, size, 0));
		for (n = 0; n <= size; n++) {
			ret = hvtrace_subbuf_next(&it, &rec);
			if (ret <= 0)
				break;
			t_assert((const uint8_t *)rec.data >= page + 16);
			t_assert((const uint8_t *)rec.data + rec.size <=
				 page + size);
		}
		t_assert(n <= size / 4);	/* each step eats >= 4 bytes */
		bad += ret < 0;
		free(page);
	}
	t_assert(bad > 0);	/* garbage is noticed, not just skipped */
}

int main(void)
{
	test_writer_pages();
	test_crafted();
	test_garbage();
	printf("ok: iterator matches kbuffer; crafted and garbage pages\n");
	return 0;
}
