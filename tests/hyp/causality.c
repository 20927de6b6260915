// SPDX-License-Identifier: MIT
/*
 * hvt-hyp-test causality: does a hypervisor timestamp, converted to host
 * time with libhvtrace's clock model, fall where it must?
 *
 * The pages carry raw CNTVCT.  Host time comes from samples: the
 * writer's counter c was read somewhere inside a host CLOCK_MONOTONIC
 * bracket [t0, t1].  A time sync through the control page
 * (hvtrace_area_sync) gives one: its answer (the header's sync_clock,
 * read here under its seqcount) was read after the request was posted
 * and before the answer was seen.
 *
 * A round trip: stamp CLOCK_MONOTONIC (t0), post a sync request k (the
 * trigger); the hypervisor answers it and writes a selftest event with
 * id k; read CPU 0's pages until that event shows up and stamp again
 * (t1).  The event is a sample too.
 *
 * The model under test is the library's (host/lib/clock.c, the one the
 * tools use), on a second, read-only handle of the area that holds only
 * the samples given to it here (hvtrace_area_add_sync_sample).  After
 * CALIBRATE syncs that only feed it, every round converts its event's
 * timestamp with the model as it was *before* the round
 * (hvtrace_area_to_host_ns; the round's own two samples are added
 * afterwards).  The true host time of the event lies in [t0, t1]; the
 * model states an error bound E with each conversion, so the converted
 * time must lie in [t0 - E, t1 + E]: anything further out is a violation
 * of what the model claims, and fails the run.  Conversions outside
 * [t0, t1] but within E are counted and reported (a model with a
 * non-zero bound may place an event up to E past a tight bracket).
 *
 * At the end the model is turned into mult/shift/epoch (host_ns =
 * epoch_ns + ((cnt - epoch_cnt) * mult >> shift)), published in the
 * control page (the hypervisor validates it and must not count an
 * error), and checked to reproduce the model's conversions.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hyp_tool.h"

struct cz_round {
	uint64_t t0, t1, ts;
};

struct cz {
	uint64_t want_id;
	bool found;
	uint64_t found_ts, found_at;
	uint64_t selftests, out_of_order, last_id;
};

static int cz_event(void *ctx, const struct hyp_ev *ev, int cpu, uint64_t lost)
{
	struct cz *z = ctx;

	(void)cpu;
	(void)lost;
	if (!ev || ev->type != HVT_HYP_EVENT_selftest)
		return 0;
	/* Ids are the host's sync tokens: increasing from one host. */
	if (z->selftests++ && ev->u.selftest.id <= z->last_id)
		z->out_of_order++;
	z->last_id = ev->u.selftest.id;
	if (ev->u.selftest.id == z->want_id && !z->found) {
		z->found_at = rig_now_ns();	/* t1: the host sees it */
		z->found_ts = ev->ts;
		z->found = true;
	}
	return 0;
}

/*
 * One sync through @own (which keeps it in its own model, unused here):
 * the sample in *t0, *cnt, *t1 and the request's token in *id.
 */
static void cz_sync(struct hyp_rig *own, uint64_t n, uint64_t *t0,
		    uint64_t *cnt, uint64_t *t1, uint64_t *id)
{
	const struct hvt_area_header *h = (const void *)own->ro;
	uint64_t s1, s2;
	int ret;

	*t0 = rig_now_ns();
	ret = hvtrace_area_sync(own->a, 1000);
	*t1 = rig_now_ns();
	if (ret)
		die("time sync %llu failed: %s", (unsigned long long)n,
		    hvtrace_last_error());
	/* W6 pair: seq (acquire), clock, seq again. */
	s1 = __atomic_load_n(&h->sync_seq, __ATOMIC_ACQUIRE);
	*cnt = __atomic_load_n(&h->sync_clock, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&h->sync_seq, __ATOMIC_RELAXED);
	if (s1 != s2)
		die("time sync %llu: the answer changed while it was read",
		    (unsigned long long)n);
	*id = s1;
}

/* Wait for the selftest event of sync @id: its timestamp and t1. */
static void cz_wait_event(struct hyp_rig *own, struct cz *z, uint64_t n,
			  uint64_t id, struct cz_round *rd)
{
	uint64_t deadline = rig_now_ns() + 2000000000ULL;

	z->found = false;
	z->want_id = id;
	while (!z->found) {
		if (rig_poll(own, cz_event, z) < 0)
			die("round %llu: reading failed", (unsigned long long)n);
		if (!z->found && rig_now_ns() > deadline)
			die("round %llu: no selftest event with id %llu within 2 s (is the selftest event enabled?)",
			    (unsigned long long)n, (unsigned long long)id);
	}
	rd->t1 = z->found_at;
	rd->ts = z->found_ts;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The model's host time of @ts in the mult/shift/epoch form. */
static double cz_encoded(uint64_t ts, uint64_t epoch_cnt, uint64_t epoch_ns,
			 uint32_t mult, uint32_t shift)
{
	__int128 d = (__int128)ts - (__int128)epoch_cnt;

	return (double)((__int128)epoch_ns + ((d * mult) >> shift));
}

int cmd_causality(int argc, char **argv)
{
	uint64_t rounds = 1000, calib = 64, i, viol = 0, outside = 0, err = UINT64_MAX;
	uint64_t min_before = UINT64_MAX, min_after = UINT64_MAX;
	uint64_t *rtt, epoch_cnt, epoch_ns, first_ns, errs0, errs1;
	double wait_s = 30, max_enc = 0, rate;
	const char *events = "selftest";
	struct hyp_rig own, model;
	struct cz_round *rd;
	uint32_t mult, shift;
	struct cz z = { 0 };
	pid_t pid = 0;
	int failures = 0;
	const struct drv_opt opts[] = {
		{ "rounds", DRV_U64, &rounds },
		{ "calibrate", DRV_U64, &calib },
		{ "events", DRV_STR, &events },
		{ "pid", DRV_PID, &pid },
		{ "wait", DRV_SECONDS, &wait_s },
		{ NULL, 0, NULL },
	};
	const char *file = drv_parse(argc, argv, opts,
		"usage: hvt-hyp-test causality FILE [--rounds N] [--calibrate N] [--events LIST] [--pid PID] [--wait S]");

	if (!rounds || calib < 2)
		die("--rounds takes a count above 0, --calibrate one of 2 or more");
	if (rig_open(&own, file, true, wait_s))
		return 1;
	own.pid = pid;
	/* A second, read-only handle: a libhvtrace clock model that only
	 * ever holds the samples given to it below. */
	if (rig_open(&model, file, false, wait_s))
		return 1;
	if (rig_enable(&own, events))
		die("cannot enable events: %s", hvtrace_last_error());
	rd = calloc(rounds, sizeof(*rd));
	rtt = calloc(rounds, sizeof(*rtt));
	if (!rd || !rtt)
		die("out of memory");

	/* Calibration: samples only, no checks. */
	for (i = 0; i < calib; i++) {
		uint64_t t0, c, t1, id;

		cz_sync(&own, i, &t0, &c, &t1, &id);
		hvtrace_area_add_sync_sample(model.a, t0, c, t1);
		rig_poll(&own, cz_event, &z);
	}

	for (i = 0; i < rounds; i++) {
		struct cz_round *r = &rd[i];
		uint64_t c, t1s, id, conv;

		cz_sync(&own, calib + i, &r->t0, &c, &t1s, &id);
		cz_wait_event(&own, &z, i, id, r);
		rtt[i] = r->t1 - r->t0;
		/* The model as it was before this round. */
		conv = hvtrace_area_to_host_ns(model.a, r->ts, &err);
		if (conv < r->t0 || conv > r->t1) {
			uint64_t out = conv < r->t0 ? r->t0 - conv :
						      conv - r->t1;
			/* The truth lies in the bracket; the model claims
			 * to be within err of it. */
			bool beyond = err == UINT64_MAX || out > err;

			if (outside < 5 || (beyond && viol < 5))
				printf("%s in round %llu: host %llu .. %llu, event converts to %llu (%+lld ns outside; stated bound %llu ns)\n",
				       beyond ? "violation" : "outside its bracket",
				       (unsigned long long)i,
				       (unsigned long long)r->t0,
				       (unsigned long long)r->t1,
				       (unsigned long long)conv,
				       conv < r->t0 ? -(long long)out :
						      (long long)out,
				       (unsigned long long)err);
			outside++;
			viol += beyond;
		} else {
			if (conv - r->t0 < min_before)
				min_before = conv - r->t0;
			if (r->t1 - conv < min_after)
				min_after = r->t1 - conv;
		}
		/* This round's two samples: the sync answer and the event. */
		hvtrace_area_add_sync_sample(model.a, r->t0, c, t1s);
		hvtrace_area_add_sync_sample(model.a, r->t0, r->ts, r->t1);
	}

	/* The model as mult/shift/epoch (its rate from two conversions
	 * across the run), published for the hypervisor. */
	epoch_cnt = rd[rounds - 1].ts;
	epoch_ns = hvtrace_area_to_host_ns(model.a, epoch_cnt, NULL);
	first_ns = hvtrace_area_to_host_ns(model.a, rd[0].ts, NULL);
	rate = epoch_cnt > rd[0].ts ? ((double)epoch_ns - (double)first_ns) /
					      (double)(epoch_cnt - rd[0].ts) :
				      1e9 / (double)own.info.clock_freq_hz;
	for (shift = 32; shift > 0 && rate * ldexp(1.0, (int)shift) >= 4294967295.0;
	     shift--)
		;
	mult = (uint32_t)llround(rate * ldexp(1.0, (int)shift));
	for (i = 0; i < rounds; i++) {
		double diff = fabs(cz_encoded(rd[i].ts, epoch_cnt, epoch_ns,
					      mult, shift) -
				   (double)hvtrace_area_to_host_ns(model.a,
								   rd[i].ts,
								   NULL));

		if (diff > max_enc)
			max_enc = diff;
	}
	errs0 = rig_ctrl_errors(&own);
	if (hvtrace_area_set_clock(own.a, mult, shift, epoch_cnt, epoch_ns))
		die("cannot publish the clock: %s", hvtrace_last_error());
	rig_sleep_us(50000);
	errs1 = rig_ctrl_errors(&own);

	qsort(rtt, rounds, sizeof(*rtt), cmp_u64);
	printf("causality: %llu round trips after %llu calibration syncs: %llu conversions outside their host bracket, %llu of them beyond the error bound libhvtrace's clock model stated\n",
	       (unsigned long long)rounds, (unsigned long long)calib,
	       (unsigned long long)outside, (unsigned long long)viol);
	printf("round trip (trigger posted .. event seen): min %.1f us, median %.1f us, max %.1f us\n",
	       rtt[0] / 1e3, rtt[rounds / 2] / 1e3, rtt[rounds - 1] / 1e3);
	printf("tightest margins: %.2f us after the trigger, %.2f us before the host saw it\n",
	       min_before == UINT64_MAX ? -1.0 : min_before / 1e3,
	       min_after == UINT64_MAX ? -1.0 : min_after / 1e3);
	printf("model: %.6f ns per tick (nominal %.6f at %llu Hz); error bound %llu ns before the last round\n",
	       rate, 1e9 / (double)own.info.clock_freq_hz,
	       (unsigned long long)own.info.clock_freq_hz,
	       (unsigned long long)err);
	printf("published: mult %u shift %u epoch_cnt %llu epoch_ns %llu (reproduces the model within %.1f ns); hypervisor ctrl_errors %llu -> %llu\n",
	       mult, shift, (unsigned long long)epoch_cnt,
	       (unsigned long long)epoch_ns, max_enc,
	       (unsigned long long)errs0, (unsigned long long)errs1);
	if (viol) {
		printf("FAIL: libhvtrace's model (the one hvtrace and hvtraced use) placed events beyond its own error bound\n");
		failures++;
	}
	if (err == UINT64_MAX) {
		printf("FAIL: libhvtrace's model has no error bound after %llu samples\n",
		       (unsigned long long)(calib + 2 * rounds - 2));
		failures++;
	}
	if (max_enc > 2 * rate + 1) {
		printf("FAIL: the mult/shift form does not reproduce the model\n");
		failures++;
	}
	if (errs1 != errs0) {
		printf("FAIL: the hypervisor rejected valid clock parameters\n");
		failures++;
	}
	if (z.out_of_order) {
		printf("FAIL: %llu selftest ids out of order\n",
		       (unsigned long long)z.out_of_order);
		failures++;
	}
	printf("%s\n", failures ? "FAIL" : "PASS");
	free(rd);
	free(rtt);
	rig_close(&model);
	rig_close(&own);
	return failures ? 1 : 0;
}
