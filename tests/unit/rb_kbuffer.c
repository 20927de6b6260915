// SPDX-License-Identifier: MIT
/*
 * Cross-check: sub-buffers written by the writer core parse unchanged with
 * libtraceevent's kbuffer and give back exactly the events written: ids,
 * timestamps (TIME_EXTEND included), payload bytes, small and large
 * (type_len 0) encodings, tail padding, and RB_MISSED_EVENTS/STORED with
 * the exact count on the first page after a loss.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kbuffer.h>

#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

#define NR_CPUS		2
#define NR_SUBBUFS	32
#define SUBBUF		4096

struct expect {
	uint64_t ts;
	uint16_t id;
	uint32_t len;		/* payload bytes */
	uint8_t payload[256];
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void *area_new(struct hvt_area_params *p)
{
	void *a;

	p->area_size = hvt_area_size(NR_CPUS, NR_SUBBUFS, SUBBUF);
	if (posix_memalign(&a, 4096, p->area_size))
		t_fail("no memory");
	memset(a, 0, p->area_size);
	t_ok(hvt_area_format(a, p));
	return a;
}

/* Copy page @seq of @cb; the tail page is bounded by the commit word. */
static void page_copy(struct hvt_rb_cpu *cb, uint32_t seq, uint8_t *out)
{
	uint64_t w = cb->meta->write;
	uint8_t *page = cb->pages + (seq & (cb->nr_subbufs - 1)) * cb->subbuf_size;

	memcpy(out, page, cb->subbuf_size);
	if (seq == HVT_WORD_SEQ(w)) {
		uint64_t commit = HVT_WORD_OFFSET(w);

		memcpy(out + 8, &commit, 8);
	}
}

/* Read every event from seq @from to the tail with kbuffer. */
static int read_all(struct hvt_rb_cpu *cb, uint32_t from, struct expect *ex,
		    int nex, int *missed_seen, long long *missed_count)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	uint32_t tail = HVT_WORD_SEQ(cb->meta->write), seq;
	uint8_t page[SUBBUF];
	int n = 0;

	t_assert(kb);
	for (seq = from; seq != tail + 1; seq++) {
		unsigned long long ts;
		void *data;

		page_copy(cb, seq, page);
		t_eq(kbuffer_load_subbuffer(kb, page), 0);
		if (kbuffer_missed_events(kb)) {
			(*missed_seen)++;
			*missed_count = kbuffer_missed_events(kb);
		}
		for (data = kbuffer_read_event(kb, &ts); data;
		     data = kbuffer_next_event(kb, &ts)) {
			const struct hvt_common_fields *c = data;
			int size = kbuffer_event_size(kb);

			if (n >= nex)
				t_fail("more events than written (seq %u)", seq);
			t_equ(ts, ex[n].ts);
			t_equ(c->common_type, ex[n].id);
			t_eq(c->common_pid, 1000 + n);
			t_eq(size, (8 + ex[n].len + 3) & ~3u);
			t_memeq((uint8_t *)data + 8, ex[n].payload, ex[n].len);
			n++;
		}
	}
	kbuffer_free(kb);
	return n;
}

int main(void)
{
	struct hvt_area_params p = {
		.nr_cpus = NR_CPUS, .nr_subbufs = NR_SUBBUFS,
		.subbuf_size = SUBBUF, .mode = HVT_MODE_CONSUME,
		.writer_kind = HVT_WRITER_LOOPBACK, .clock_id = HVT_CLOCK_MONO_NS,
		.name = "kbuffer-test",
	};
	static struct expect ex[4096];
	struct hvt_control *ctrl;
	struct hvt_rb_cpu cb;
	uint64_t ts = 1000000;
	int i, n, nex = 0, missed_seen = 0, extends = 0, bigs = 0;
	long long missed_count = 0;
	uint32_t start_seq;
	void *area = area_new(&p);

	ctrl = (struct hvt_control *)((uint8_t *)area + HVT_CONTROL_OFFSET);
	t_ok(hvt_area_cpu(area, p.area_size, 1, &cb));
	start_seq = HVT_WORD_SEQ(cb.meta->write);

	/* Phase 1: fill most of the ring (no loss), mixed sizes and gaps. */
	for (i = 0; i < 4096; i++) {
		struct hvt_common_fields c = { .common_type = 10 + (i % 7),
					       .common_pid = 1000 + nex };
		struct hvt_iovec iov[2];
		uint32_t len = rnd() % 200, cut = len / 3;
		uint64_t gap = rnd() % 5000;

		if (i % 97 == 5) {
			gap = (1ULL << 27) + rnd() % (1ULL << 40); /* TIME_EXTEND */
			extends++;
		}
		if (len + 8 > 112)
			bigs++;
		ts += gap;
		ex[nex].ts = ts;
		ex[nex].id = c.common_type;
		ex[nex].len = len;
		for (uint32_t j = 0; j < len; j++)
			ex[nex].payload[j] = (uint8_t)rnd();
		iov[0].base = ex[nex].payload;
		iov[0].len = cut;
		iov[1].base = ex[nex].payload + cut;
		iov[1].len = len - cut;
		/* Stop before the ring would fill: 7 of 8 pages. */
		if (HVT_WORD_SEQ(cb.meta->write) - start_seq >= NR_SUBBUFS - 2 &&
		    HVT_WORD_OFFSET(cb.meta->write) > 3000)
			break;
		t_eq(hvt_rb_write(&cb, ts, &c, iov, 2), 0);
		nex++;
	}
	t_assert(extends > 3 && bigs > 50 && nex > 100);
	t_equ(hvt_rb_entries(&cb), nex);
	t_equ(cb.meta->lost, 0);

	n = read_all(&cb, start_seq, ex, nex, &missed_seen, &missed_count);
	t_eq(n, nex);
	t_eq(missed_seen, 0);

	/* Finished pages end exactly at the data end (tail padding). */
	for (uint32_t s = start_seq; s != HVT_WORD_SEQ(cb.meta->write); s++) {
		uint8_t *pg = cb.pages + (s & (NR_SUBBUFS - 1)) * SUBBUF;
		uint64_t commit;

		memcpy(&commit, pg + 8, 8);
		commit &= HVT_COMMIT_SIZE_MASK;
		t_assert(commit == SUBBUF - 16 || SUBBUF - 16 - commit == 4);
	}

	/* Phase 2: nobody consumes, so the ring fills and events drop. */
	{
		struct hvt_common_fields c = { .common_type = 99 };
		uint8_t pl[40] = { 1, 2, 3 };
		struct hvt_iovec iov = { pl, sizeof(pl) };
		int dropped = 0, ret;
		uint32_t tail_before;

		ctrl->consumer[1] = start_seq;
		for (i = 0; i < 2000; i++) {
			ret = hvt_rb_write(&cb, ts += 10, &c, &iov, 1);
			if (ret == -HVT_ENOSPC)
				dropped++;
			else
				t_eq(ret, 0);
		}
		t_assert(dropped > 100);
		t_equ(cb.meta->lost, dropped);

		/* Host consumes everything: the next page carries the count. */
		tail_before = HVT_WORD_SEQ(cb.meta->write);
		ctrl->consumer[1] = tail_before + 1;
		c.common_type = 77;
		c.common_pid = 1000;
		ex[0].ts = ts += 10;
		ex[0].id = 77;
		ex[0].len = sizeof(pl);
		memcpy(ex[0].payload, pl, sizeof(pl));
		t_eq(hvt_rb_write(&cb, ts, &c, &iov, 1), 0);
		t_equ(HVT_WORD_SEQ(cb.meta->write), tail_before + 1);
		t_equ(cb.meta->desc[(tail_before + 1) & (NR_SUBBUFS - 1)].missed, dropped);

		/* Finish that page so its header commit carries the flags. */
		for (i = 0; HVT_WORD_SEQ(cb.meta->write) == tail_before + 1; i++) {
			c.common_pid = 1001 + i;
			ex[i + 1] = ex[0];
			ex[i + 1].ts = ts += 10;
			t_eq(hvt_rb_write(&cb, ts, &c, &iov, 1), 0);
		}
		missed_seen = 0;
		n = read_all(&cb, tail_before + 1, ex, i + 1, &missed_seen,
			     &missed_count);
		t_eq(n, i + 1);
		t_eq(missed_seen, 1);
		t_eq(missed_count, dropped);
	}
	free(area);
	printf("ok: %d events round-tripped through kbuffer (%d TIME_EXTEND, "
	       "%d large), missed count %lld\n", nex, extends, bigs,
	       missed_count);
	return 0;
}
