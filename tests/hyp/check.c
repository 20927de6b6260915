// SPDX-License-Identifier: MIT
/*
 * hvt-hyp-test check: verify a run.
 *
 * Reads the hypervisor's events through libhvtrace (while it runs, or
 * post-mortem) and feeds them to the per-CPU checker (seqcheck.c), then
 * compares what was read with what the payload must have done and with
 * the reader's and the writer's own counters.  Every check prints what
 * it expected and what it saw.  The helpers the other checks share are
 * here too (checks.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"

void ck_init(struct ck *c, struct hyp_rig *r, bool synced)
{
	int cpu;

	c->r = r;
	for (cpu = 0; cpu < HVT_ABI_MAX_CPUS; cpu++)
		seq_init(&c->seq[cpu], cpu, true, synced);
}

void ck_attach(struct ck *c, struct hyp_rig *r, const char *file,
	       double wait_s, pid_t pid, bool synced, const char *events)
{
	if (rig_open(r, file, true, wait_s))
		exit(1);	/* rig_open() said why */
	r->pid = pid;
	ck_init(c, r, synced);
	if (rig_enable(r, events))
		die("cannot enable events: %s", hvtrace_last_error());
}

int ck_event(void *ctx, const struct hyp_ev *ev, int cpu, uint64_t lost)
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

void ck_sync(struct ck *c)
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

void ck_report_cpu(struct ck *c, int cpu, struct hvtrace_cpu_stats *st)
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

bool ck_all_cpus(struct ck *c, bool pairs)
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

void ck_mark(struct ck *c)
{
	int cpu;

	for (cpu = 0; cpu < (int)c->r->info.nr_cpus; cpu++)
		seq_mark(&c->seq[cpu]);
	c->phase_start = rig_now_ns();
}

int cmd_check(int argc, char **argv)
{
	uint64_t hcalls = 0, cpus = 0, until = 0, sync_ms = 0;
	const char *mode = NULL, *expect_state = "stopped";
	bool attach = false, no_read = false;
	double timeout_s = 60, wait_s = 30;
	struct ck c;
	struct hyp_rig r;
	pid_t pid = 0;
	int cpu, ret;
	const struct drv_opt opts[] = {
		{ "attach", DRV_FLAG, &attach },
		{ "no-read", DRV_FLAG, &no_read },
		{ "pid", DRV_PID, &pid },
		{ "until-written", DRV_U64, &until },
		{ "hcalls", DRV_U64, &hcalls },
		{ "cpus", DRV_U64, &cpus },
		{ "mode", DRV_STR, &mode },
		{ "expect", DRV_STR, &expect_state },
		{ "sync-ms", DRV_U64, &sync_ms },
		{ "timeout", DRV_SECONDS, &timeout_s },
		{ "wait", DRV_SECONDS, &wait_s },
		{ NULL, 0, NULL },
	};
	const char *file = drv_parse(argc, argv, opts,
		"usage: hvt-hyp-test check FILE [--attach] [--no-read] [--pid PID] [--hcalls N] [--cpus N] [--mode consume|overwrite] [--expect stopped|killed] [--until-written N] [--sync-ms MS] [--timeout S] [--wait S]");

	memset(&c, 0, sizeof(c));
	if (strcmp(expect_state, "stopped") && strcmp(expect_state, "killed"))
		die("--expect takes stopped or killed, not '%s'", expect_state);
	if (rig_open(&r, file, attach, wait_s))
		return 1;
	r.pid = pid;
	ck_init(&c, &r, true);
	c.sync_every_ns = sync_ms * 1000000ULL;
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
