// SPDX-License-Identifier: MIT
/*
 * hvt-hyp-test enable-test: enabling and disabling take effect while the
 * hypervisor runs.
 *
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
#include <errno.h>
#include <string.h>

#include "checks.h"

#define EN_WANT		500
#define EN_OFF_MS	300

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
		if (!ck_all_cpus(c, false))
			return 0;
		printf("phase 0: %d CPUs traced, disabling host_hcall\n",
		       c->r->info.nr_cpus);
		hvtrace_area_set_event(a, HVT_HYP_EVENT_host_hcall, false);
		break;
	case 1:
		if (!ck_all_cpus(c, true))
			return 0;
		printf("phase 1: enter/exit pairs only; enabling host_hcall\n");
		hvtrace_area_set_event(a, HVT_HYP_EVENT_host_hcall, true);
		break;
	case 2:
		if (!ck_all_cpus(c, false))
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
		if (!ck_all_cpus(c, false))
			return 0;
		printf("phase 4: complete calls again\n");
		break;
	default:
		return 0;
	}
	c->phase++;
	ck_mark(c);
	return 0;
}

static int en_stop(void *ctx)
{
	return ((struct ck *)ctx)->phase >= 5;
}

int cmd_enable_test(int argc, char **argv)
{
	double wait_s = 30;
	struct hyp_rig r;
	struct ck c;
	pid_t pid = 0;
	int cpu, ret;
	const struct drv_opt opts[] = {
		{ "pid", DRV_PID, &pid },
		{ "wait", DRV_SECONDS, &wait_s },
		{ NULL, 0, NULL },
	};
	const char *file = drv_parse(argc, argv, opts,
		"usage: hvt-hyp-test enable-test FILE [--pid QEMU_PID] [--wait S]");

	memset(&c, 0, sizeof(c));
	ck_attach(&c, &r, file, wait_s, pid, true,
		  "hyp_enter,hyp_exit,host_hcall");
	c.want = EN_WANT;
	ck_mark(&c);
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

