// SPDX-License-Identifier: MIT
/*
 * The executor as a plain function: its checks and copies, independent of
 * the kernel.  It is called with a stand-in struct rseq (not registered
 * with the kernel), so this test also runs where the kernel or an
 * emulator has no rseq (it is how the aarch64 executor is exercised under
 * qemu-aarch64, see tests/stress/Build.mk).  On 20,000 random plans over
 * a scratch buffer - up to HVT_RB_MAX_OPS ops, every length 0..100 at
 * every source and destination alignment, some into the 64-byte "ts
 * cache" region right after the commit word (which the aarch64 executor
 * stores with release semantics), nr_pre 0 or 1 - the executor must leave
 * exactly what in-order memcpy()s plus the final commit store leave, and
 * disarm rseq_cs.  Refusals: a CPU mismatch and either expected word
 * differing leave the buffer untouched; an op without a source stops
 * after the ops before it, without the commit; too many ops is refused
 * before the section is armed.  Then 12,000 real plans from the writer
 * core (all kinds, both ring modes) must write exactly what the core's
 * direct executor writes.
 */
#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

#if HVTG_HAVE_RSEQ_EXEC

#define BUF	8192

static uint8_t buf[BUF] __attribute__((aligned(64)));
static uint8_t ref[BUF] __attribute__((aligned(64)));
static uint8_t src[BUF];
static uint64_t rng = 0x6a09e667f3bcc909ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A random plan over buf: commit word at buf + 0, lost at buf + 24. */
static void make_plan(struct hvt_rb_plan *p, uint32_t cpu)
{
	uint32_t i;

	memset(p, 0, sizeof(*p));
	p->write_ptr = (uint64_t *)buf;
	p->lost_ptr = (uint64_t *)(buf + 24);
	p->expect_write = *(uint64_t *)buf;
	p->expect_lost = *(uint64_t *)(buf + 24);
	p->commit_ptr = rnd() % 8 ? (uint64_t *)buf : (uint64_t *)(buf + 24);
	p->commit_val = rnd();
	p->cpu = cpu;
	p->nr_ops = (uint32_t)(rnd() % (HVT_RB_MAX_OPS + 1));
	p->nr_pre = p->nr_ops && rnd() % 2 ? 1 : 0;
	for (i = 0; i < p->nr_ops; i++) {
		struct hvt_rb_op *op = &p->ops[i];
		uint64_t r = rnd();

		if (r % 5 == 0) {
			/* The ts cache: words after the commit word. */
			uint32_t w = 1 + (uint32_t)(rnd() % 6);

			op->dst = buf + 8 * w;
			op->len = (uint32_t)(8 * (1 + rnd() % 2));
			if (8 * w + op->len > 64)
				op->len = 8;
			if (r % 3 == 0) {
				/* ... sometimes unaligned there. */
				op->dst = buf + 8 + rnd() % 40;
				op->len = (uint32_t)(rnd() % 16);
			}
		} else {
			op->dst = buf + 64 + rnd() % (BUF - 64 - 100);
			op->len = (uint32_t)(rnd() % 101);
		}
		op->src = src + rnd() % (BUF - 100);
	}
}

/* What the plan must leave: in-order copies, then the commit. */
static void apply_ref(const struct hvt_rb_plan *p, uint32_t nops,
		      int commit)
{
	uint32_t i;

	for (i = 0; i < nops; i++)
		memcpy(ref + ((uint8_t *)p->ops[i].dst - buf), p->ops[i].src,
		       p->ops[i].len);
	if (commit)
		memcpy(ref + ((uint8_t *)p->commit_ptr - buf), &p->commit_val,
		       8);
}

static void same(const char *what, int i)
{
	uint32_t j;

	if (!memcmp(buf, ref, BUF))
		return;
	for (j = 0; j < BUF && buf[j] == ref[j]; j++)
		;
	t_fail("%s, plan %d: byte %u is %#x, expected %#x", what, i, j, buf[j],
	       ref[j]);
}

/*
 * Real plans from the writer core, executed here and by the core's direct
 * executor on a twin area: the CPU sections must stay identical.
 */
static void core_plans(uint32_t mode, int nevents)
{
	struct hvt_area_params ap = { 0 };
	struct hvt_rb_cpu ca, cb;
	struct hvtg_rseq_abi rs;
	uint8_t *a, *b;
	uint64_t ts = 1000;
	int i;

	ap.nr_cpus = 1;
	ap.nr_subbufs = 4;
	ap.subbuf_size = 4096;
	ap.mode = mode;
	ap.writer_kind = HVT_WRITER_GUEST;
	ap.clock_id = HVT_CLOCK_MONO_NS;
	ap.area_size = hvt_area_size(1, 4, 4096);
	a = aligned_alloc(4096, ap.area_size);
	b = aligned_alloc(4096, ap.area_size);
	t_assert(a && b);
	memset(a, 0, ap.area_size);
	memset(b, 0, ap.area_size);
	t_ok(hvt_area_format(a, &ap));
	t_ok(hvt_area_format(b, &ap));
	t_ok(hvt_area_cpu(a, ap.area_size, 0, &ca));
	t_ok(hvt_area_cpu(b, ap.area_size, 0, &cb));
	memset(&rs, 0, sizeof(rs));
	for (i = 0; i < nevents; i++) {
		struct hvt_common_fields c = { (uint16_t)i, 0, 0, 42 };
		struct hvt_iovec iov[HVT_RB_MAX_IOV];
		struct hvt_rb_plan pa, pb;
		uint32_t n = (uint32_t)(rnd() % (HVT_RB_MAX_IOV + 1)), k;

		for (k = 0; k < n; k++) {
			iov[k].base = src + rnd() % 4096;
			iov[k].len = (uint32_t)(rnd() % 42);
		}
		ts += rnd() % 64 == 0 ? (1ull << 28) : rnd() % 3000;
		t_ok(hvt_rb_plan_write(&ca, &pa, ts, &c, iov, n));
		t_ok(hvt_rb_plan_write(&cb, &pb, ts, &c, iov, n));
		rs.cpu_id = pa.cpu;
		t_eq(hvtg_rseq_exec_asm(&pa, &rs), HVTG_EXEC_COMMITTED);
		hvt_rb_plan_exec(&pb);
		if (memcmp(a + HVT_CPU_OFFSET, b + HVT_CPU_OFFSET,
			   ap.area_size - HVT_CPU_OFFSET))
			t_fail("mode %u event %d (plan kind %u): the executor "
			       "and the direct path wrote different bytes",
			       mode, i, pa.kind);
	}
	free(a);
	free(b);
}

int main(void)
{
	struct hvtg_rseq_abi rs;
	struct hvt_rb_plan p;
	int i, ret, kinds[4] = { 0 };

	for (i = 0; i < BUF; i++) {
		src[i] = (uint8_t)rnd();
		buf[i] = ref[i] = (uint8_t)rnd();
	}
	memset(&rs, 0, sizeof(rs));
	for (i = 0; i < 20000; i++) {
		uint32_t cpu = (uint32_t)(rnd() % 64), k;

		make_plan(&p, cpu);
		rs.cpu_id = cpu;
		rs.rseq_cs = 0x5a5a;
		switch (rnd() % 8) {
		case 0:		/* CPU mismatch */
			rs.cpu_id = cpu ^ 1;
			t_eq(hvtg_rseq_exec_asm(&p, &rs), HVTG_EXEC_CPU);
			same("cpu mismatch", i);
			t_equ(rs.rseq_cs, 0);
			kinds[1]++;
			break;
		case 1:		/* a word changed since planning */
			if (rnd() % 2)
				p.expect_write ^= 1ull << (rnd() % 64);
			else
				p.expect_lost ^= 1ull << (rnd() % 64);
			t_eq(hvtg_rseq_exec_asm(&p, &rs), HVTG_EXEC_STALE);
			same("stale", i);
			t_equ(rs.rseq_cs, 0);
			kinds[2]++;
			break;
		case 2:		/* an op without a source */
			if (!p.nr_ops)
				break;
			k = (uint32_t)(rnd() % p.nr_ops);
			p.ops[k].src = NULL;
			t_eq(hvtg_rseq_exec_asm(&p, &rs), HVTG_EXEC_REJECT);
			apply_ref(&p, k, 0);
			same("reject", i);
			t_equ(rs.rseq_cs, 0);
			kinds[3]++;
			break;
		default:
			ret = hvtg_rseq_exec_asm(&p, &rs);
			t_eq(ret, HVTG_EXEC_COMMITTED);
			apply_ref(&p, p.nr_ops, 1);
			same("commit", i);
			t_equ(rs.rseq_cs, 0);
			kinds[0]++;
			break;
		}
	}
	/* Too many ops: refused before the section is armed. */
	make_plan(&p, 3);
	rs.cpu_id = 3;
	rs.rseq_cs = 0x5a5a;
	p.nr_ops = HVT_RB_MAX_OPS + 1;
	t_eq(hvtg_rseq_exec_asm(&p, &rs), HVTG_EXEC_REJECT);
	same("too many ops", -1);
	t_equ(rs.rseq_cs, 0x5a5a);
	printf("%d committed, %d CPU mismatches, %d stale, %d rejected\n",
	       kinds[0], kinds[1], kinds[2], kinds[3]);
	core_plans(HVT_MODE_OVERWRITE, 10000);
	core_plans(HVT_MODE_CONSUME, 2000);
	printf("core plans: same bytes as the direct executor\n");
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("no restartable-sequence executor for this architecture");
}
#endif

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
