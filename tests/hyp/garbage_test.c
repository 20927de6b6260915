// SPDX-License-Identifier: MIT
/*
 * hvt-hyp-test garbage-test: a hostile control page.
 *
 * Phase 1 traces normally; phase 2 writes random and extreme values into
 * the control page (through its own read-write mapping, as a hostile host
 * or a second process would) while reading on, tolerantly; phase 3
 * re-attaches cleanly, resets every CPU and requires exact tracing again,
 * with no new ctrl_errors and no reader errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "checks.h"

static uint64_t gb_rng = 0x9e3779b97f4a7c15ULL;

static uint64_t gb_rand(void)
{
	gb_rng ^= gb_rng << 13;
	gb_rng ^= gb_rng >> 7;
	gb_rng ^= gb_rng << 17;
	return gb_rng;
}

/*
 * One round of garbage into the control page @p (mapped by this tool
 * separately, as a hostile host or a second process would).
 */
static void gb_scribble(volatile struct hvt_control *p, unsigned int round,
			const struct hyp_rig *r)
{
	volatile uint64_t *w = (volatile uint64_t *)p;
	unsigned int i, cpu = round % r->info.nr_cpus;
	const struct hvt_cpu_meta *m = rig_meta((struct hyp_rig *)r, (int)cpu);
	uint32_t seq = m ? HVT_WORD_SEQ(m->write) : 0;
	uint32_t ack = m ? m->reset_ack : 0;

	switch (round % 12) {
	case 0:		/* random bytes everywhere */
		for (i = 0; i < HVT_CONTROL_SIZE / 8; i++)
			w[i] = gb_rand();
		break;
	case 1:
		for (i = 0; i < HVT_CONTROL_SIZE / 8; i++)
			w[i] = ~0ULL;
		break;
	case 2:
		for (i = 0; i < HVT_CONTROL_SIZE / 8; i++)
			w[i] = 0;
		break;
	case 3:		/* good magic, bad ABI, stray enable bits */
		p->magic = HVT_CONTROL_MAGIC;
		p->abi_version = 99;
		p->tracing_on = 7;
		p->enable[0] = ~0ULL;
		p->enable[100] = 1;
		break;
	case 4:		/* consumer ahead, far behind, sign bit */
		p->consumer[cpu] = seq + 5;
		p->consumer[(cpu + 1) % r->info.nr_cpus] = seq - 100000;
		p->consumer[HVT_ABI_MAX_CPUS - 1] = 0x80000000u;
		break;
	case 5:		/* reset requests behind, far ahead */
		p->reset_req[cpu] = ack - 1;
		p->reset_req[(cpu + 1) % r->info.nr_cpus] = ack + 0x7fffffffu;
		break;
	case 6:
		p->reset_req[cpu] = ack + 65537;
		p->enable[0] = gb_rand();
		break;
	case 7:		/* a clock seqcount that never settles */
		p->clock.seq = 1;
		p->clock.shift = 200;
		p->clock.mult = 0;
		break;
	case 8:		/* even seq, impossible values */
		p->clock.seq = (uint32_t)(round * 2);
		p->clock.shift = 63;
		p->clock.mult = ~0u;
		p->clock.epoch_cnt = ~0ULL;
		p->clock.epoch_ns = ~0ULL;
		break;
	case 9:
		p->clock.seq = (uint32_t)(round * 2 + 2);
		p->clock.shift = 64;
		p->clock.mult = 1;
		p->sync_req = gb_rand();
		break;
	case 10:	/* random words in random places */
		for (i = 0; i < 64; i++)
			w[gb_rand() % (HVT_CONTROL_SIZE / 8)] = gb_rand();
		break;
	default:	/* a valid reset request among the garbage */
		p->reset_req[cpu] = ack + 1;
		p->consumer[cpu] = seq;
		p->enable[0] = HVT_HYP_ENABLE_MASK;
		break;
	}
}

static int gb_stop(void *ctx)
{
	return ck_all_cpus(ctx, false);
}

int cmd_garbage_test(int argc, char **argv)
{
	double seconds = 3, wait_s = 30;
	volatile struct hvt_control *raw;
	uint64_t end, errs_before, errs_after, base;
	unsigned int round = 0;
	struct hyp_rig r;
	struct ck c;
	pid_t pid = 0;
	int cpu, ret, fd;
	const struct drv_opt opts[] = {
		{ "pid", DRV_PID, &pid },
		{ "seconds", DRV_SECONDS, &seconds },
		{ "wait", DRV_SECONDS, &wait_s },
		{ NULL, 0, NULL },
	};
	const char *path = drv_parse(argc, argv, opts,
		"usage: hvt-hyp-test garbage-test FILE [--pid QEMU_PID] [--seconds S] [--wait S]");

	memset(&c, 0, sizeof(c));
	/* 1: a normal run. */
	ck_attach(&c, &r, path, wait_s, pid, true, "all");
	c.want = 2000;
	ret = rig_follow(&r, ck_event, &c, 60, gb_stop, NULL);
	if (ret < 0 || !gb_stop(&c))
		die("the hypervisor did not trace %llu calls per CPU before the garbage phase",
		    (unsigned long long)c.want);
	for (cpu = 0; cpu < (int)r.info.nr_cpus; cpu++)
		if (c.seq[cpu].errors)
			die("before any garbage: %s", c.seq[cpu].first_error);
	errs_before = rig_ctrl_errors(&r);
	printf("phase 1: %llu+ calls per CPU traced cleanly, ctrl_errors %llu\n",
	       (unsigned long long)c.want, (unsigned long long)errs_before);

	/* 2: garbage, while this reader keeps reading (tolerantly). */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("cannot open %s read-write: %s", path, strerror(errno));
	raw = mmap(NULL, HVT_CONTROL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, HVT_HYP_AREA_OFFSET + HVT_CONTROL_OFFSET);
	close(fd);
	if (raw == MAP_FAILED)
		die("cannot map the control page: %s", strerror(errno));
	for (cpu = 0; cpu < HVT_ABI_MAX_CPUS; cpu++)
		c.seq[cpu].strict = false;
	end = rig_now_ns() + (uint64_t)(seconds * 1e9);
	while (rig_now_ns() < end) {
		gb_scribble(raw, round++, &r);
		rig_sleep_us(1000);
		ret = rig_poll(&r, ck_event, &c);
		if (ret < 0)
			die("reading during the garbage phase failed: %s",
			    strerror(-ret));
		if (!rig_writer_alive(&r))
			die("QEMU exited during the garbage phase (see the console log)");
	}
	for (cpu = 0; cpu < (int)r.info.nr_cpus; cpu++)
		if (c.seq[cpu].errors)
			die("bad event content during the garbage phase: %s",
			    c.seq[cpu].first_error);
	errs_after = rig_ctrl_errors(&r);
	printf("phase 2: %u rounds of garbage in %.1f s; ctrl_errors %llu -> %llu\n",
	       round, seconds, (unsigned long long)errs_before,
	       (unsigned long long)errs_after);
	expect(&c, errs_after > errs_before,
	       "the hypervisor counted no bad control values");

	/* 3: a host takes over again: clean page, fresh attach, resets. */
	memset((void *)raw, 0, HVT_CONTROL_SIZE);
	munmap((void *)raw, HVT_CONTROL_SIZE);
	rig_close(&r);
	ck_attach(&c, &r, path, wait_s, pid, false, "all");
	if (hvtrace_area_set_clock(r.a, r.info.clock_mult, r.info.clock_shift,
				   0, 0))
		die("cannot publish clock parameters: %s", hvtrace_last_error());
	/*
	 * Skip everything written before the page was valid again.  First
	 * seek to the newest data: the fresh reader starts at the oldest
	 * page, and in consume mode publishing that position can leave the
	 * ring full, with the writer dropping.  Then a reset per CPU: it is
	 * served at the CPU's next hypervisor entry, in the same pass that
	 * refreshes its enable bits, so every event after the reset point
	 * was written under the restored page.  Wait for the acknowledgement
	 * and for the writer to start the page after the reset point before
	 * reading (libhvtrace's reader mistakes a reset point one page past
	 * the writer for a corrupt word; see docs/hyp.md).
	 */
	for (cpu = 0; cpu < (int)r.info.nr_cpus; cpu++) {
		const struct hvt_cpu_meta *m = rig_meta(&r, cpu);
		uint32_t want = m->reset_ack + 1;
		uint64_t deadline = rig_now_ns() + 10000000000ULL;

		if (hvtrace_cpu_seek(r.a, cpu, false))
			die("seek of cpu%d: %s", cpu, hvtrace_last_error());
		if (hvtrace_area_reset_cpu(r.a, cpu))
			die("reset of cpu%d: %s", cpu, hvtrace_last_error());
		for (;;) {
			/* Acquire: pairs with the writer's release of the
			 * ack, which publishes reset_seq with it. */
			uint32_t ack = __atomic_load_n(&m->reset_ack,
						       __ATOMIC_ACQUIRE);
			/* Acquire: pairs with the commit store (W1). */
			uint64_t w = __atomic_load_n(&m->write,
						     __ATOMIC_ACQUIRE);
			uint32_t to = __atomic_load_n(&m->reset_seq,
						      __ATOMIC_RELAXED);

			if (ack == want && (int32_t)(HVT_WORD_SEQ(w) - to) >= 0)
				break;
			if (rig_now_ns() > deadline)
				die("cpu%d did not serve a valid reset request within 10 s",
				    cpu);
		}
	}
	rig_sleep_us(100000);
	base = rig_ctrl_errors(&r);
	c.want = 3000;
	ck_mark(&c);
	ret = rig_follow(&r, ck_event, &c, 60, gb_stop, NULL);
	expect(&c, ret >= 0 && gb_stop(&c),
	       "after the garbage, fewer than %llu calls per CPU were traced",
	       (unsigned long long)c.want);
	expect(&c, hvtrace_area_sync(r.a, 1000) == 0,
	       "the hypervisor does not answer time syncs after the garbage");
	printf("phase 3: valid control page again; ctrl_errors %llu -> %llu\n",
	       (unsigned long long)base,
	       (unsigned long long)rig_ctrl_errors(&r));
	expect(&c, rig_ctrl_errors(&r) == base,
	       "the hypervisor counted errors for a valid control page");
	for (cpu = 0; cpu < (int)r.info.nr_cpus; cpu++) {
		struct hvtrace_cpu_stats st;

		if (hvtrace_cpu_get_stats(r.a, cpu, &st))
			continue;
		ck_report_cpu(&c, cpu, &st);
		expect(&c, st.errors == 0, "cpu%d: the reader saw %llu malformed pages after the garbage",
		       cpu, (unsigned long long)st.errors);
		expect(&c, c.seq[cpu].ntrans == 0,
		       "cpu%d: gaps in the call sequence after the garbage",
		       cpu);
		expect(&c, c.seq[cpu].lost == 0,
		       "cpu%d: %llu events lost after the garbage", cpu,
		       (unsigned long long)c.seq[cpu].lost);
	}
	printf("%s\n", c.failures ? "FAIL" : "PASS");
	rig_close(&r);
	return c.failures ? 1 : 0;
}
