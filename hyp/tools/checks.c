// SPDX-License-Identifier: MIT
/*
 * hvt-hyp: the end-to-end checks (check, enable-test, garbage-test).
 *
 * Each reads the hypervisor's events through libhvtrace and feeds them to
 * the per-CPU checker (seqcheck.c), then compares what was read with what
 * the payload must have done and with the reader's and the writer's own
 * counters.  Every check prints what it expected and what it saw.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "seqcheck.h"

struct ck {
	struct hyp_rig *r;
	struct seqck seq[HVT_ABI_MAX_CPUS];
	uint64_t sync_every_ns, next_sync;
	uint64_t syncs, sync_fail;
	int failures;
	/* enable-test / garbage-test phase machine */
	int phase;
	uint64_t phase_start;
	uint64_t want;
	uint64_t errors_base;
};

static int ck_event(void *ctx, const struct hyp_ev *ev, int cpu, uint64_t lost)
{
	struct ck *c = ctx;

	if (cpu < 0 || cpu >= HVT_ABI_MAX_CPUS)
		return -EINVAL;
	if (!ev)
		seq_lost(&c->seq[cpu], lost);
	else
		seq_event(&c->seq[cpu], ev);
	return 0;
}

static void ck_sync(struct ck *c)
{
	uint64_t now = rig_now_ns();

	if (!c->r->owner || !c->sync_every_ns || now < c->next_sync)
		return;
	c->next_sync = now + c->sync_every_ns;
	if (rig_writer_state(c->r) == HVT_STATE_STOPPED ||
	    !rig_writer_alive(c->r))
		return;
	if (hvtrace_area_sync(c->r->a, 50))
		c->sync_fail++;
	else
		c->syncs++;
}

static int ck_tick(void *ctx)
{
	ck_sync(ctx);
	return 0;
}

#define expect(c, cond, ...)						\
	do {								\
		if (!(cond)) {						\
			printf("FAIL: " __VA_ARGS__);			\
			putchar('\n');					\
			(c)->failures++;				\
		}							\
	} while (0)

static void ck_report_cpu(struct ck *c, int cpu, struct hvtrace_cpu_stats *st)
{
	struct seqck *s = &c->seq[cpu];
	const struct hvt_cpu_meta *m = rig_meta(c->r, cpu);

	printf("cpu%d: hyp_enter %llu host_hcall %llu hyp_exit %llu selftest %llu; calls %llu (first %llu%s) pairs %llu transitions %d\n",
	       cpu, (unsigned long long)s->n[HVT_HYP_EVENT_hyp_enter],
	       (unsigned long long)s->n[HVT_HYP_EVENT_host_hcall],
	       (unsigned long long)s->n[HVT_HYP_EVENT_hyp_exit],
	       (unsigned long long)s->n[HVT_HYP_EVENT_selftest],
	       (unsigned long long)s->triples,
	       (unsigned long long)s->first_i, s->saw_done ? ", done" : "",
	       (unsigned long long)s->pairs_total, s->ntrans);
	printf("cpu%d: reader: read %llu lost %llu (overrun %llu dropped %llu skipped %llu) discarded %llu written %llu errors %llu; writer: ctrl_errors %llu\n",
	       cpu, (unsigned long long)st->read, (unsigned long long)st->lost,
	       (unsigned long long)st->overrun,
	       (unsigned long long)st->dropped,
	       (unsigned long long)st->skipped,
	       (unsigned long long)st->discarded,
	       (unsigned long long)st->written,
	       (unsigned long long)st->errors,
	       (unsigned long long)(m ? m->ctrl_errors : 0));
	if (s->errors)
		printf("FAIL: %llu event errors; the first: %s\n",
		       (unsigned long long)s->errors, s->first_error);
	c->failures += s->errors != 0;
}

static uint64_t ck_read_total(const struct seqck *s)
{
	uint64_t t = s->unknown;
	int i;

	for (i = 0; i < HVT_HYP_NR_EVENTS; i++)
		t += s->n[i];
	return t;
}

static const struct option check_opts[] = {
	{ "attach", no_argument, NULL, 'a' },
	{ "no-read", no_argument, NULL, 'n' },
	{ "pid", required_argument, NULL, 'p' },
	{ "until-written", required_argument, NULL, 'u' },
	{ "hcalls", required_argument, NULL, 'h' },
	{ "cpus", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "expect", required_argument, NULL, 'x' },
	{ "sync-ms", required_argument, NULL, 's' },
	{ "timeout", required_argument, NULL, 't' },
	{ "wait", required_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 },
};

int cmd_check(int argc, char **argv)
{
	uint64_t hcalls = 0, cpus = 0, until = 0, sync_ms = 0;
	const char *mode = NULL, *expect_state = "stopped";
	bool attach = false, no_read = false;
	double timeout_s = 60, wait_s = 30;
	struct ck c;
	struct hyp_rig r;
	pid_t pid = 0;
	int opt, cpu, ret;

	memset(&c, 0, sizeof(c));
	while ((opt = getopt_long(argc, argv, "anp:u:h:c:m:x:s:t:w:",
				  check_opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			attach = true;
			break;
		case 'n':
			no_read = true;
			break;
		case 'p':
			pid = opt_pid(optarg);
			break;
		case 'u':
			if (opt_u64(optarg, &until))
				die("--until-written takes a count");
			break;
		case 'h':
			if (opt_u64(optarg, &hcalls))
				die("--hcalls takes a count");
			break;
		case 'c':
			if (opt_u64(optarg, &cpus))
				die("--cpus takes a count");
			break;
		case 'm':
			mode = optarg;
			break;
		case 'x':
			expect_state = optarg;
			break;
		case 's':
			if (opt_u64(optarg, &sync_ms))
				die("--sync-ms takes milliseconds");
			break;
		case 't':
			timeout_s = opt_seconds("timeout", optarg);
			break;
		case 'w':
			wait_s = opt_seconds("wait", optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc)
		die("usage: hvt-hyp check FILE [--attach] [--no-read] [--pid PID] [--hcalls N] [--cpus N] [--mode consume|overwrite] [--expect stopped|killed] [--until-written N] [--sync-ms MS]");
	if (strcmp(expect_state, "stopped") && strcmp(expect_state, "killed"))
		die("--expect takes stopped or killed, not '%s'", expect_state);
	if (rig_open(&r, argv[optind], attach, wait_s))
		return 1;
	r.pid = pid;
	c.r = &r;
	c.sync_every_ns = sync_ms * 1000000ULL;
	for (cpu = 0; cpu < HVT_ABI_MAX_CPUS; cpu++)
		seq_init(&c.seq[cpu], cpu, true, true);
	if (attach && rig_enable(&r, "all"))
		die("cannot enable events: %s", hvtrace_last_error());

	if (until) {
		/* Let the writer get going, then hand back (no reading). */
		uint64_t deadline = rig_now_ns() + (uint64_t)(timeout_s * 1e9);

		for (;;) {
			uint64_t least = UINT64_MAX;

			for (cpu = 0; cpu < (int)r.info.nr_cpus; cpu++) {
				struct hvtrace_cpu_stats st;

				if (!hvtrace_cpu_get_stats(r.a, cpu, &st) &&
				    st.written < least)
					least = st.written;
			}
			if (least != UINT64_MAX && least >= until)
				break;
			if (rig_now_ns() > deadline || !rig_writer_alive(&r))
				die("the writer did not write %llu events per CPU in %.0f s",
				    (unsigned long long)until, timeout_s);
			rig_sleep_us(2000);
		}
		printf("every CPU has written at least %llu events\n",
		       (unsigned long long)until);
		rig_close(&r);
		return 0;
	}

	if (!attach && !pid) {
		/* Post-mortem (or a snapshot): read what is there. */
		ret = rig_drain(&r, ck_event, &c);
	} else if (no_read) {
		uint64_t deadline = rig_now_ns() + (uint64_t)(timeout_s * 1e9);

		while (rig_writer_alive(&r) &&
		       rig_writer_state(&r) != HVT_STATE_STOPPED) {
			if (rig_now_ns() > deadline)
				die("the writer still runs after %.0f s", timeout_s);
			ck_sync(&c);
			rig_sleep_us(2000);
		}
		ret = rig_drain(&r, ck_event, &c);
	} else {
		ret = rig_follow(&r, ck_event, &c, timeout_s, NULL, ck_tick);
	}
	if (ret < 0) {
		printf("FAIL: reading stopped: %s\n", strerror(-ret));
		c.failures++;
	}

	printf("area: %u CPUs, %u sub-buffers of %u bytes, %s mode, state %s; %llu time syncs (%llu unanswered)\n",
	       r.info.nr_cpus, r.info.nr_subbufs, r.info.subbuf_size,
	       r.info.mode == HVT_MODE_CONSUME ? "consume" : "overwrite",
	       rig_writer_state(&r) == HVT_STATE_STOPPED ? "STOPPED" :
							   "RUNNING",
	       (unsigned long long)c.syncs, (unsigned long long)c.sync_fail);
	if (cpus)
		expect(&c, r.info.nr_cpus == cpus, "%u CPU buffers, expected %llu",
		       r.info.nr_cpus, (unsigned long long)cpus);
	if (mode)
		expect(&c, r.info.mode == (strcmp(mode, "overwrite") ?
						   HVT_MODE_CONSUME :
						   HVT_MODE_OVERWRITE),
		       "the area is in mode %u, expected %s", r.info.mode, mode);
	if (!strcmp(expect_state, "stopped"))
		expect(&c, rig_writer_state(&r) == HVT_STATE_STOPPED,
		       "the writer did not stop cleanly (state %u)",
		       rig_writer_state(&r));
	else
		expect(&c, rig_writer_state(&r) != HVT_STATE_STOPPED,
		       "a killed writer's area says STOPPED");
	expect(&c, r.bad_records == 0, "%llu records did not decode",
	       (unsigned long long)r.bad_records);

	for (cpu = 0; cpu < (int)r.info.nr_cpus; cpu++) {
		struct seqck *s = &c.seq[cpu];
		struct hvtrace_cpu_stats st;
		uint64_t calls = hcalls + 1, total, read;
		uint64_t n_enter = s->n[HVT_HYP_EVENT_hyp_enter];
		uint64_t n_hcall = s->n[HVT_HYP_EVENT_host_hcall];
		uint64_t n_exit = s->n[HVT_HYP_EVENT_hyp_exit];

		if (hvtrace_cpu_get_stats(r.a, cpu, &st)) {
			printf("FAIL: cpu%d: no statistics: %s\n", cpu,
			       hvtrace_last_error());
			c.failures++;
			continue;
		}
		ck_report_cpu(&c, cpu, &st);
		read = ck_read_total(s);
		expect(&c, st.errors == 0, "cpu%d: the reader saw %llu malformed words/pages",
		       cpu, (unsigned long long)st.errors);
		expect(&c, read == st.read, "cpu%d: decoded %llu events, the reader returned %llu",
		       cpu, (unsigned long long)read,
		       (unsigned long long)st.read);
		expect(&c, s->ntrans == 0, "cpu%d: %d gaps in the call sequence (first after call %llu: %llu pairs, %llu silent calls)",
		       cpu, s->ntrans, (unsigned long long)s->trans[0].after,
		       (unsigned long long)s->trans[0].pairs,
		       (unsigned long long)s->trans[0].silent);
		expect(&c, read + st.lost == st.written,
		       "cpu%d: read %llu + lost %llu != written %llu", cpu,
		       (unsigned long long)read, (unsigned long long)st.lost,
		       (unsigned long long)st.written);

		if (!strcmp(expect_state, "killed")) {
			expect(&c, st.lost == 0, "cpu%d: %llu events lost",
			       cpu, (unsigned long long)st.lost);
			expect(&c, s->have_first && s->first_i == 0,
			       "cpu%d: the first call read is %llu, expected 0",
			       cpu, (unsigned long long)s->first_i);
			expect(&c, until || s->triples > 0,
			       "cpu%d: no complete call was read", cpu);
			continue;
		}
		if (!hcalls) {
			/* An open-ended run stopped by the host. */
			expect(&c, st.lost == 0, "cpu%d: %llu events lost",
			       cpu, (unsigned long long)st.lost);
			expect(&c, s->have_first && s->first_i == 0,
			       "cpu%d: the first call read is %llu, expected 0",
			       cpu, (unsigned long long)s->first_i);
			expect(&c, n_enter == n_exit,
			       "cpu%d: %llu hyp_enter but %llu hyp_exit", cpu,
			       (unsigned long long)n_enter,
			       (unsigned long long)n_exit);
			continue;
		}
		expect(&c, s->saw_done && s->done_calls == hcalls,
		       "cpu%d: HVT_HC_DONE %s (%llu calls), expected %llu calls",
		       cpu, s->saw_done ? "seen" : "not seen",
		       (unsigned long long)s->done_calls,
		       (unsigned long long)hcalls);
		if (r.info.mode == HVT_MODE_CONSUME) {
			expect(&c, st.lost == 0, "cpu%d: %llu events lost",
			       cpu, (unsigned long long)st.lost);
			expect(&c, s->have_first && s->first_i == 0,
			       "cpu%d: the first call read is %llu, expected 0",
			       cpu, (unsigned long long)s->first_i);
			expect(&c, n_enter == calls && n_hcall == calls &&
					   n_exit == calls,
			       "cpu%d: expected %llu of each of hyp_enter, host_hcall, hyp_exit",
			       cpu, (unsigned long long)calls);
			continue;
		}
		/* Overwrite: the newest events, the rest counted exactly. */
		total = 3 * calls + s->n[HVT_HYP_EVENT_selftest];
		expect(&c, st.written == total,
		       "cpu%d: the reader counts %llu events written, the payload made %llu",
		       cpu, (unsigned long long)st.written,
		       (unsigned long long)total);
		expect(&c, read + st.overrun == total,
		       "cpu%d: read %llu + overrun %llu != %llu written", cpu,
		       (unsigned long long)read,
		       (unsigned long long)st.overrun,
		       (unsigned long long)total);
		expect(&c, st.overrun > 0,
		       "cpu%d: nothing was overwritten: make the run longer or the ring smaller",
		       cpu);
		expect(&c, st.dropped == 0, "cpu%d: %llu dropped in overwrite mode",
		       cpu, (unsigned long long)st.dropped);
		expect(&c, s->last_type == HVT_HYP_EVENT_hyp_exit,
		       "cpu%d: the newest event is not the last hyp_exit", cpu);
		expect(&c, s->n[HVT_HYP_EVENT_selftest] == 0,
		       "cpu%d: selftest events in an overwrite check (run it without --sync-ms)",
		       cpu);
	}
	printf("%s\n", c.failures ? "FAIL" : "PASS");
	rig_close(&r);
	return c.failures ? 1 : 0;
}

/* --- enable/disable while running ------------------------------------- */

/*
 * Phases (each waits until every CPU shows the effect, or fails after a
 * timeout):
 *   0  all events on: at least WANT complete calls per CPU
 *   1  host_hcall off: at least WANT enter/exit pairs per CPU
 *   2  host_hcall on again: WANT complete calls per CPU
 *   3  tracing off for OFF_MS (nothing may be written), then on again:
 *      WANT complete calls per CPU
 * Afterwards every CPU's call sequence must show exactly one run of pairs
 * (whose length equals the calls it stands for) followed by exactly one
 * silent gap (calls that wrote nothing), in that order, and no other
 * irregularity.
 */
#define EN_WANT		500
#define EN_OFF_MS	300

static bool en_all_cpus(struct ck *c, bool pairs)
{
	int cpu;

	for (cpu = 0; cpu < (int)c->r->info.nr_cpus; cpu++) {
		struct seqck *s = &c->seq[cpu];

		if ((pairs ? s->pairs_since_mark : s->triples_since_mark) <
		    c->want)
			return false;
	}
	return true;
}

static void en_mark(struct ck *c)
{
	int cpu;

	for (cpu = 0; cpu < (int)c->r->info.nr_cpus; cpu++)
		seq_mark(&c->seq[cpu]);
	c->phase_start = rig_now_ns();
}

static int en_tick(void *ctx)
{
	struct ck *c = ctx;
	struct hvtrace_area *a = c->r->a;
	uint64_t now = rig_now_ns();

	if (now - c->phase_start > 30000000000ULL) {
		printf("FAIL: phase %d did not complete in 30 s\n", c->phase);
		return -ETIMEDOUT;
	}
	switch (c->phase) {
	case 0:
		if (!en_all_cpus(c, false))
			return 0;
		printf("phase 0: %d CPUs traced, disabling host_hcall\n",
		       c->r->info.nr_cpus);
		hvtrace_area_set_event(a, HVT_HYP_EVENT_host_hcall, false);
		break;
	case 1:
		if (!en_all_cpus(c, true))
			return 0;
		printf("phase 1: enter/exit pairs only; enabling host_hcall\n");
		hvtrace_area_set_event(a, HVT_HYP_EVENT_host_hcall, true);
		break;
	case 2:
		if (!en_all_cpus(c, false))
			return 0;
		printf("phase 2: complete calls again; tracing off for %d ms\n",
		       EN_OFF_MS);
		hvtrace_area_set_tracing(a, false);
		break;
	case 3:
		if (now - c->phase_start < EN_OFF_MS * 1000000ULL)
			return 0;
		printf("phase 3: tracing on\n");
		hvtrace_area_set_tracing(a, true);
		break;
	case 4:
		if (!en_all_cpus(c, false))
			return 0;
		printf("phase 4: complete calls again\n");
		break;
	default:
		return 0;
	}
	c->phase++;
	en_mark(c);
	return 0;
}

static int en_stop(void *ctx)
{
	return ((struct ck *)ctx)->phase >= 5;
}

static const struct option en_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "wait", required_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 },
};

int cmd_enable_test(int argc, char **argv)
{
	double wait_s = 30;
	struct hyp_rig r;
	struct ck c;
	pid_t pid = 0;
	int opt, cpu, ret;

	memset(&c, 0, sizeof(c));
	while ((opt = getopt_long(argc, argv, "p:w:", en_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			pid = opt_pid(optarg);
			break;
		case 'w':
			wait_s = opt_seconds("wait", optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc)
		die("usage: hvt-hyp enable-test FILE [--pid QEMU_PID]");
	if (rig_open(&r, argv[optind], true, wait_s))
		return 1;
	r.pid = pid;
	c.r = &r;
	c.want = EN_WANT;
	for (cpu = 0; cpu < HVT_ABI_MAX_CPUS; cpu++)
		seq_init(&c.seq[cpu], cpu, true, true);
	if (rig_enable(&r, "hyp_enter,hyp_exit,host_hcall"))
		die("cannot enable events: %s", hvtrace_last_error());
	en_mark(&c);
	ret = rig_follow(&r, ck_event, &c, 120, en_stop, en_tick);
	if (ret < 0) {
		printf("FAIL: reading stopped in phase %d: %s\n", c.phase,
		       strerror(-ret));
		c.failures++;
	}
	expect(&c, c.phase >= 5, "the test ended in phase %d (the writer stopped?)",
	       c.phase);
	for (cpu = 0; cpu < (int)r.info.nr_cpus; cpu++) {
		struct seqck *s = &c.seq[cpu];
		struct hvtrace_cpu_stats st;
		int i;

		if (hvtrace_cpu_get_stats(r.a, cpu, &st))
			continue;
		ck_report_cpu(&c, cpu, &st);
		for (i = 0; i < s->ntrans && i < SEQ_MAX_TRANS; i++)
			printf("cpu%d: after call %llu: %llu enter/exit pairs, %llu silent calls\n",
			       cpu, (unsigned long long)s->trans[i].after,
			       (unsigned long long)s->trans[i].pairs,
			       (unsigned long long)s->trans[i].silent);
		expect(&c, st.lost == 0, "cpu%d: %llu events lost", cpu,
		       (unsigned long long)st.lost);
		expect(&c, s->ntrans == 2, "cpu%d: %d irregularities in the call sequence, expected 2 (the pairs, then the silent gap)",
		       cpu, s->ntrans);
		if (s->ntrans != 2)
			continue;
		expect(&c, s->trans[0].pairs >= EN_WANT && !s->trans[0].silent,
		       "cpu%d: the host_hcall-off phase shows %llu pairs and %llu silent calls",
		       cpu, (unsigned long long)s->trans[0].pairs,
		       (unsigned long long)s->trans[0].silent);
		expect(&c, s->trans[1].silent > 0 && !s->trans[1].pairs,
		       "cpu%d: the tracing-off phase shows %llu pairs and %llu silent calls",
		       cpu, (unsigned long long)s->trans[1].pairs,
		       (unsigned long long)s->trans[1].silent);
		expect(&c, s->trans[0].after < s->trans[1].after,
		       "cpu%d: the phases are out of order", cpu);
	}
	printf("%s\n", c.failures ? "FAIL" : "PASS");
	rig_close(&r);
	return c.failures ? 1 : 0;
}

/* --- hostile control page --------------------------------------------- */

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

static const struct option gb_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "seconds", required_argument, NULL, 's' },
	{ "wait", required_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 },
};

static uint64_t gb_ctrl_errors(struct hyp_rig *r)
{
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < (int)r->info.nr_cpus; cpu++) {
		const struct hvt_cpu_meta *m = rig_meta(r, cpu);

		if (m)
			sum += __atomic_load_n(&m->ctrl_errors,
					       __ATOMIC_RELAXED);
	}
	return sum;
}

static int gb_stop(void *ctx)
{
	return en_all_cpus(ctx, false);
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
	int opt, cpu, ret, fd;
	const char *path;

	memset(&c, 0, sizeof(c));
	while ((opt = getopt_long(argc, argv, "p:s:w:", gb_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			pid = opt_pid(optarg);
			break;
		case 's':
			seconds = opt_seconds("seconds", optarg);
			break;
		case 'w':
			wait_s = opt_seconds("wait", optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc)
		die("usage: hvt-hyp garbage-test FILE [--pid QEMU_PID] [--seconds S]");
	path = argv[optind];

	/* 1: a normal run. */
	if (rig_open(&r, path, true, wait_s))
		return 1;
	r.pid = pid;
	c.r = &r;
	c.want = 2000;
	for (cpu = 0; cpu < HVT_ABI_MAX_CPUS; cpu++)
		seq_init(&c.seq[cpu], cpu, true, true);
	if (rig_enable(&r, "all"))
		die("cannot enable events: %s", hvtrace_last_error());
	ret = rig_follow(&r, ck_event, &c, 60, gb_stop, NULL);
	if (ret < 0 || !gb_stop(&c))
		die("the hypervisor did not trace %llu calls per CPU before the garbage phase",
		    (unsigned long long)c.want);
	for (cpu = 0; cpu < (int)r.info.nr_cpus; cpu++)
		if (c.seq[cpu].errors)
			die("before any garbage: %s", c.seq[cpu].first_error);
	errs_before = gb_ctrl_errors(&r);
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
	errs_after = gb_ctrl_errors(&r);
	printf("phase 2: %u rounds of garbage in %.1f s; ctrl_errors %llu -> %llu\n",
	       round, seconds, (unsigned long long)errs_before,
	       (unsigned long long)errs_after);
	expect(&c, errs_after > errs_before,
	       "the hypervisor counted no bad control values");

	/* 3: a host takes over again: clean page, fresh attach, resets. */
	memset((void *)raw, 0, HVT_CONTROL_SIZE);
	munmap((void *)raw, HVT_CONTROL_SIZE);
	rig_close(&r);
	if (rig_open(&r, path, true, wait_s))
		return 1;
	r.pid = pid;
	c.r = &r;
	for (cpu = 0; cpu < HVT_ABI_MAX_CPUS; cpu++)
		seq_init(&c.seq[cpu], cpu, true, false);
	if (rig_enable(&r, "all"))
		die("cannot enable events: %s", hvtrace_last_error());
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
	base = gb_ctrl_errors(&r);
	c.want = 3000;
	en_mark(&c);
	ret = rig_follow(&r, ck_event, &c, 60, gb_stop, NULL);
	expect(&c, ret >= 0 && gb_stop(&c),
	       "after the garbage, fewer than %llu calls per CPU were traced",
	       (unsigned long long)c.want);
	expect(&c, hvtrace_area_sync(r.a, 1000) == 0,
	       "the hypervisor does not answer time syncs after the garbage");
	printf("phase 3: valid control page again; ctrl_errors %llu -> %llu\n",
	       (unsigned long long)base,
	       (unsigned long long)gb_ctrl_errors(&r));
	expect(&c, gb_ctrl_errors(&r) == base,
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
