// SPDX-License-Identifier: MIT
/*
 * The direct path's fused append (hvt_rb_write()) and the planned path
 * (hvt_rb_plan_write() + hvt_rb_plan_exec(), what every executor runs)
 * must leave byte-identical areas: the same event bytes, padding, commit
 * words, ts cache, descriptors and loss counts.  Two areas get the same
 * random sequence of writes -- sizes that use the small and the large
 * (type_len 0) header, unaligned lengths, empty and split payload
 * pieces, time gaps that need TIME_EXTEND, clock steps backwards, page
 * switches, and in consume mode a full ring with seals and drops -- one
 * through each path, and are compared after every write.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

#define NR_SUBBUFS 8
#define SUBBUF	   4096
#define WRITES	   20000

static uint64_t rng = 0x2545f4914f6cdd1dULL;

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

	p->area_size = hvt_area_size(1, NR_SUBBUFS, SUBBUF);
	if (posix_memalign(&a, 4096, p->area_size))
		t_fail("no memory");
	memset(a, 0, p->area_size);
	t_ok(hvt_area_format(a, p));
	return a;
}

/* Planned path: plan, execute, as hvt_rb_write() did before fusing. */
static int write_planned(struct hvt_rb_cpu *cb, uint64_t ts,
			 const struct hvt_common_fields *c,
			 const struct hvt_iovec *iov, uint32_t niov)
{
	struct hvt_rb_plan plan;
	int tries, ret;

	for (tries = 0; tries < 3; tries++) {
		ret = hvt_rb_plan_write(cb, &plan, ts, c, iov, niov);
		if (ret)
			return ret;
		hvt_rb_plan_exec(&plan);
		if (plan.kind == HVT_PLAN_DROP)
			return -HVT_ENOSPC;
		if (plan.kind != HVT_PLAN_SEAL)
			return 0;
	}
	return -HVT_ENOSPC;
}

static void run(uint32_t mode)
{
	struct hvt_area_params p = {
		.nr_cpus = 1, .nr_subbufs = NR_SUBBUFS, .subbuf_size = SUBBUF,
		.mode = mode, .writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "fused-test",
	};
	static uint8_t payload[512];
	struct hvt_rb_cpu fused, planned;
	struct hvt_control *ctrl;
	uint64_t ts = 1000;
	unsigned int i, fast = 0, ext = 0, big = 0, drops = 0;
	void *a, *b;

	a = area_new(&p);
	b = area_new(&p);
	t_ok(hvt_area_cpu(a, p.area_size, 0, &fused));
	t_ok(hvt_area_cpu(b, p.area_size, 0, &planned));
	t_memeq(a, b, p.area_size);
	ctrl = (struct hvt_control *)((uint8_t *)b + HVT_CONTROL_OFFSET);
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)rnd();

	for (i = 0; i < WRITES; i++) {
		struct hvt_common_fields c = { .common_type = 1 + i % 9,
					       .common_pid = (int32_t)i };
		struct hvt_iovec iov[3];
		uint32_t len = (uint32_t)(rnd() % 160), cut = len / 3, niov;
		uint64_t r = rnd() % 100, w0 = fused.meta->write;
		int ra, rb;

		if (r < 3) {
			ts += 1ULL << 28;	/* TIME_EXTEND */
			ext++;
		} else if (r < 6) {
			ts -= ts > 500 ? 500 : 0;	/* clock step back */
		} else {
			ts += rnd() % 2000;
		}
		if (len > 104)
			big++;		/* large header */
		iov[0].base = payload;
		iov[0].len = cut;
		iov[1].base = r & 1 ? NULL : payload + 300;
		iov[1].len = 0;		/* an empty piece */
		iov[2].base = payload + cut;
		iov[2].len = len - cut;
		niov = r % 4 ? 3 : 1;
		if (niov == 1)
			iov[0].len = len;
		ra = hvt_rb_write(&fused, ts, &c, iov, niov);
		rb = write_planned(&planned, ts, &c, iov, niov);
		if (ra != rb)
			t_fail("write %u: fused %d, planned %d", i, ra, rb);
		if (ra == -HVT_ENOSPC)
			drops++;
		if (HVT_WORD_SEQ(fused.meta->write) == HVT_WORD_SEQ(w0) &&
		    HVT_WORD_OFFSET(w0) && ra == 0)
			fast++;
		if (memcmp(a, b, p.area_size)) {
			size_t k;

			for (k = 0; k < p.area_size; k++)
				if (((uint8_t *)a)[k] != ((uint8_t *)b)[k])
					break;
			t_fail("write %u (len %u, niov %u): areas differ at "
			       "byte 0x%zx",
			       i, len, niov, k);
		}
		/* Consume mode: a reader that finishes pages now and then,
		 * so the ring is full part of the time. */
		if (mode == HVT_MODE_CONSUME && i % 700 == 699) {
			uint32_t seq = HVT_WORD_SEQ(planned.meta->write);
			struct hvt_control *ca = (struct hvt_control *)
				((uint8_t *)a + HVT_CONTROL_OFFSET);

			__atomic_store_n(&ctrl->consumer[0], seq,
					 __ATOMIC_RELEASE);
			__atomic_store_n(&ca->consumer[0], seq,
					 __ATOMIC_RELEASE);
		}
	}
	printf("%s: %u writes identical (%u appended in place, %u with "
	       "TIME_EXTEND, %u large, %u dropped)\n",
	       mode == HVT_MODE_CONSUME ? "consume" : "overwrite", WRITES,
	       fast, ext, big, drops);
	t_assert(fast > WRITES / 4);
	t_assert(ext > 100 && big > 1000);
	if (mode == HVT_MODE_CONSUME)
		t_assert(drops > 0);
	free(a);
	free(b);
}

int main(void)
{
	run(HVT_MODE_OVERWRITE);
	run(HVT_MODE_CONSUME);
	printf("PASS\n");
	return 0;
}
