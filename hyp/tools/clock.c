/*
 * hvt-hyp causality: does a hypervisor timestamp, converted to host time,
 * fall where it must?
 *
 * The pages carry raw CNTVCT.  Host time comes from samples: the writer's
 * counter c was read somewhere inside a host CLOCK_MONOTONIC bracket
 * [t0, t1].  Time syncs through the control page (hvtrace_area_sync)
 * give such samples, and so does every round trip below.
 *
 * A round trip: stamp CLOCK_MONOTONIC (t0), post a sync request k (the
 * trigger); the hypervisor answers it and writes a selftest event with
 * id k; read CPU 0's pages until that event shows up and stamp again
 * (t1).  The event's timestamp, converted with the model as it was
 * *before* this round (the round's own samples are added afterwards),
 * must lie in [t0, t1].  Any other outcome is a causality violation.
 *
 * The model (cz_fit): ns per tick from CNTFRQ, refitted by least squares
 * once the samples span 100 ms; the offset is the middle of the
 * intersection of every recent sample's bracket.  The truth lies in every
 * bracket, hence in their intersection, so the model's offset is off by
 * at most half its width, and a converted event can only leave its own
 * window if its delays are below half the smallest seen so far.  The same
 * samples also go to libhvtrace's model (hvtrace_area_add_sync_sample),
 * which the tools use: a violation of either model fails the run.
 *
 * At the end the model is turned into mult/shift/epoch (host_ns =
 * epoch_ns + ((cnt - epoch_cnt) * mult >> shift)), published in the
 * control page (the hypervisor validates it and must not count an
 * error), and checked to reproduce the model's conversions.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hyp_tool.h"

/* The writer's counter c was read somewhere in host time [t0, t1]. */
struct cz_sample {
	uint64_t t0, c, t1;
};

#define CZ_WINDOW	256

struct cz_fit {
	struct cz_sample s[CZ_WINDOW];
	unsigned int nr, next;
	double nominal;		/* ns per tick from the frequency */
	double rate;		/* ns per tick in use */
	uint64_t cref;		/* counter origin of off */
	double off;		/* host ns at cref */
	double err;		/* half the bracket intersection */
	bool valid, consistent;
};

static int cmp_u64(const void *a, const void *b);

static void fit_update(struct cz_fit *f)
{
	double L = -INFINITY, U = INFINITY, best_rtt = INFINITY, best_mid = 0;
	uint64_t rtts[CZ_WINDOW], cut, cmin = UINT64_MAX, cmax = 0;
	unsigned int i, used = 0;

	/*
	 * The rate: least squares over the bracket midpoints of the fastest
	 * quarter of the samples (a slow round trip says little about where
	 * in it the counter was read), once those span 100 ms.
	 */
	for (i = 0; i < f->nr; i++)
		rtts[i] = f->s[i].t1 - f->s[i].t0;
	qsort(rtts, f->nr, sizeof(rtts[0]), cmp_u64);
	cut = rtts[f->nr / 4];
	for (i = 0; i < f->nr; i++) {
		if (f->s[i].t1 - f->s[i].t0 > cut)
			continue;
		used++;
		if (f->s[i].c < cmin)
			cmin = f->s[i].c;
		if (f->s[i].c > cmax)
			cmax = f->s[i].c;
	}
	f->rate = f->nominal;
	if (used >= 8 && (double)(cmax - cmin) * f->nominal >= 100e6) {
		double sx = 0, sy = 0, sxx = 0, sxy = 0, n = used, den, r;
		uint64_t t_ref = 0;

		for (i = 0; i < f->nr; i++) {
			double x, y;

			if (f->s[i].t1 - f->s[i].t0 > cut)
				continue;
			if (!t_ref)
				t_ref = f->s[i].t0;
			x = (double)(f->s[i].c - cmin);
			y = ((double)f->s[i].t0 - (double)t_ref) +
			    (double)(f->s[i].t1 - f->s[i].t0) / 2;
			sx += x;
			sy += y;
			sxx += x * x;
			sxy += x * y;
		}
		den = n * sxx - sx * sx;
		r = den > 0 ? (n * sxy - sx * sy) / den : f->nominal;
		if (fabs(r / f->nominal - 1) < 1e-3)
			f->rate = r;
	}
	f->cref = f->s[(f->next + CZ_WINDOW - 1) % CZ_WINDOW].c;
	for (i = 0; i < f->nr; i++) {
		double d = ((double)f->s[i].c - (double)f->cref) * f->rate;
		double lo = (double)f->s[i].t0 - d, hi = (double)f->s[i].t1 - d;

		if (lo > L)
			L = lo;
		if (hi < U)
			U = hi;
		if ((double)(f->s[i].t1 - f->s[i].t0) < best_rtt) {
			best_rtt = (double)(f->s[i].t1 - f->s[i].t0);
			best_mid = (lo + hi) / 2;
		}
	}
	f->consistent = L <= U;
	if (f->consistent) {
		f->off = (L + U) / 2;
		f->err = (U - L) / 2;
	} else {
		/* Brackets that do not overlap: the rate is off.  Fall back
		 * to the tightest sample and say how far apart they are. */
		f->off = best_mid;
		f->err = best_rtt / 2 + (L - U);
	}
	f->valid = true;
}

static void fit_add(struct cz_fit *f, uint64_t t0, uint64_t c, uint64_t t1)
{
	f->s[f->next].t0 = t0;
	f->s[f->next].c = c;
	f->s[f->next].t1 = t1;
	f->next = (f->next + 1) % CZ_WINDOW;
	if (f->nr < CZ_WINDOW)
		f->nr++;
	fit_update(f);
}

static double fit_to_host(const struct cz_fit *f, uint64_t c)
{
	return f->off + ((double)c - (double)f->cref) * f->rate;
}

struct cz_round {
	uint64_t t0, t1, ts;
};

struct cz {
	struct hyp_rig *r;
	uint64_t want_id;
	bool found;
	uint64_t found_ts, found_at;
	uint64_t selftests, out_of_order, last_id;
};

static int cz_event(void *ctx, const struct hyp_ev *ev, int cpu, uint64_t lost)
{
	struct cz *z = ctx;

	if (!ev || ev->type != HVT_HYP_EVENT_selftest)
		return 0;
	z->selftests++;
	if (z->last_id && ev->u.selftest.id <= z->last_id)
		z->out_of_order++;
	z->last_id = ev->u.selftest.id;

	if (ev->u.selftest.id == z->want_id && !z->found) {
		z->found_at = rig_now_ns();	/* t1: the host sees it */
		z->found_ts = ev->ts;
		z->found = true;
	}
	return 0;
}

/* One sync through @owner; the sample goes to *s (not to any model). */
static int cz_sync(struct hyp_rig *owner, uint64_t *t0, uint64_t *cnt,
		   uint64_t *t1, uint64_t *id)
{
	const struct hvt_area_header *h = rig_header(owner);
	uint64_t s1, s2;
	int ret;

	*t0 = rig_now_ns();
	ret = hvtrace_area_sync(owner->a, 1000);
	*t1 = rig_now_ns();
	if (ret)
		return ret;
	/* W6 pair: seq (acquire), clock, seq again. */
	s1 = __atomic_load_n(&h->sync_seq, __ATOMIC_ACQUIRE);
	*cnt = __atomic_load_n(&h->sync_clock, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&h->sync_seq, __ATOMIC_RELAXED);
	if (s1 != s2)
		return -EAGAIN;
	*id = s1;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static const struct option cz_opts[] = {
	{ "rounds", required_argument, NULL, 'n' },
	{ "calibrate", required_argument, NULL, 'c' },
	{ "events", required_argument, NULL, 'e' },
	{ "pid", required_argument, NULL, 'p' },
	{ "wait", required_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 },
};

static void cz_violation(const char *who, uint64_t round, uint64_t t0,
			 uint64_t t1, uint64_t conv)
{
	printf("%sviolation in round %llu: host %llu .. %llu, event converts to %llu (%+lld ns outside)\n",
	       who, (unsigned long long)round, (unsigned long long)t0,
	       (unsigned long long)t1, (unsigned long long)conv,
	       conv < t0 ? -(long long)(t0 - conv) : (long long)(conv - t1));
}

int cmd_causality(int argc, char **argv)
{
	uint64_t rounds = 1000, calib = 64, v, i, viol = 0, viol_lib = 0;
	uint64_t min_before = UINT64_MAX, min_after = UINT64_MAX, lib_err = 0;
	uint64_t *rtt, epoch_cnt, epoch_ns, errs0, errs1;
	double wait_s = 30, max_enc = 0, max_err = 0;
	const char *events = "selftest";
	struct hyp_rig own, model;
	struct cz_round *rd;
	struct cz_fit *fit;
	uint32_t mult, shift;
	struct cz z;
	pid_t pid = 0;
	int opt, ret, failures = 0;

	while ((opt = getopt_long(argc, argv, "n:c:e:p:w:", cz_opts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'n':
			if (opt_u64(optarg, &rounds) || !rounds)
				die("--rounds takes a count");
			break;
		case 'c':
			if (opt_u64(optarg, &calib) || calib < 2)
				die("--calibrate takes a count >= 2");
			break;
		case 'e':
			events = optarg;
			break;
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
		die("usage: hvt-hyp causality FILE [--rounds N] [--calibrate N] [--events LIST]");
	if (rig_open(&own, argv[optind], true, wait_s))
		return 1;
	own.pid = pid;
	/* A second, read-only handle: a libhvtrace clock model that only
	 * ever holds the samples given to it below. */
	if (rig_open(&model, argv[optind], false, wait_s))
		return 1;
	if (rig_enable(&own, events))
		die("cannot enable events: %s", hvtrace_last_error());
	rd = calloc(rounds, sizeof(*rd));
	rtt = calloc(rounds, sizeof(*rtt));
	fit = calloc(1, sizeof(*fit));
	if (!rd || !rtt || !fit)
		die("out of memory");
	fit->nominal = 1e9 / (double)own.info.clock_freq_hz;
	memset(&z, 0, sizeof(z));
	z.r = &own;

	/* Calibration: samples only, no checks. */
	for (i = 0; i < calib; i++) {
		uint64_t t0, c, t1, id;

		ret = cz_sync(&own, &t0, &c, &t1, &id);
		if (ret)
			die("time sync %llu failed: %s",
			    (unsigned long long)i, hvtrace_last_error());
		fit_add(fit, t0, c, t1);
		hvtrace_area_add_sync_sample(model.a, t0, c, t1);
		rig_poll(&own, cz_event, &z);
	}

	for (i = 0; i < rounds; i++) {
		uint64_t t0, c, t1s, id, deadline, conv, lib, e;

		z.found = false;
		ret = cz_sync(&own, &t0, &c, &t1s, &id);
		if (ret)
			die("round %llu: time sync failed: %s",
			    (unsigned long long)i, hvtrace_last_error());
		z.want_id = id;
		deadline = rig_now_ns() + 2000000000ULL;
		while (!z.found) {
			ret = rig_poll(&own, cz_event, &z);
			if (ret < 0)
				die("round %llu: reading failed", (unsigned long long)i);
			if (!z.found && rig_now_ns() > deadline)
				die("round %llu: no selftest event with id %llu within 2 s (is the selftest event enabled?)",
				    (unsigned long long)i,
				    (unsigned long long)id);
		}
		rd[i].t0 = t0;
		rd[i].t1 = z.found_at;
		rd[i].ts = z.found_ts;
		rtt[i] = z.found_at - t0;
		/* Both models as they were before this round. */
		conv = (uint64_t)llround(fit_to_host(fit, z.found_ts));
		if (fit->err > max_err)
			max_err = fit->err;
		if (conv < t0 || conv > z.found_at) {
			if (viol < 5)
				cz_violation("", i, t0, z.found_at, conv);
			viol++;
		} else {
			if (conv - t0 < min_before)
				min_before = conv - t0;
			if (z.found_at - conv < min_after)
				min_after = z.found_at - conv;
		}
		lib = hvtrace_area_to_host_ns(model.a, z.found_ts, &e);
		lib_err = e;
		if (lib < t0 || lib > z.found_at) {
			if (viol_lib < 5)
				cz_violation("libhvtrace ", i, t0, z.found_at,
					     lib);
			viol_lib++;
		}
		/* This round's two samples: the sync answer and the event. */
		fit_add(fit, t0, c, t1s);
		fit_add(fit, t0, z.found_ts, z.found_at);
		hvtrace_area_add_sync_sample(model.a, t0, c, t1s);
		hvtrace_area_add_sync_sample(model.a, t0, z.found_ts,
					     z.found_at);
	}

	/* The model as mult/shift/epoch, published for the hypervisor. */
	epoch_cnt = rd[rounds - 1].ts;
	epoch_ns = (uint64_t)llround(fit_to_host(fit, epoch_cnt));
	for (shift = 32;
	     shift > 0 && fit->rate * ldexp(1.0, (int)shift) >= 4294967295.0;
	     shift--)
		;
	mult = (uint32_t)llround(fit->rate * ldexp(1.0, (int)shift));
	for (i = 0; i < rounds; i++) {
		__int128 d = (__int128)rd[i].ts - (__int128)epoch_cnt;
		__int128 ns = (__int128)epoch_ns + ((d * mult) >> shift);
		double diff = fabs((double)ns - fit_to_host(fit, rd[i].ts));

		if (diff > max_enc)
			max_enc = diff;
	}
	errs0 = 0;
	for (v = 0; v < own.info.nr_cpus; v++)
		errs0 += rig_meta(&own, (int)v)->ctrl_errors;
	if (hvtrace_area_set_clock(own.a, mult, shift, epoch_cnt, epoch_ns))
		die("cannot publish the clock: %s", hvtrace_last_error());
	rig_sleep_us(50000);
	errs1 = 0;
	for (v = 0; v < own.info.nr_cpus; v++)
		errs1 += rig_meta(&own, (int)v)->ctrl_errors;

	qsort(rtt, rounds, sizeof(*rtt), cmp_u64);
	printf("causality: %llu round trips after %llu calibration syncs: %llu violations\n",
	       (unsigned long long)rounds, (unsigned long long)calib,
	       (unsigned long long)viol);
	printf("round trip (trigger posted .. event seen): min %.1f us, median %.1f us, max %.1f us\n",
	       rtt[0] / 1e3, rtt[rounds / 2] / 1e3, rtt[rounds - 1] / 1e3);
	printf("tightest margins: %.2f us after the trigger, %.2f us before the host saw it\n",
	       min_before == UINT64_MAX ? -1.0 : min_before / 1e3,
	       min_after == UINT64_MAX ? -1.0 : min_after / 1e3);
	printf("model: %.6f ns per tick (nominal %.6f at %llu Hz); error bound %.0f ns now, %.0f ns at worst; brackets %s\n",
	       fit->rate, fit->nominal,
	       (unsigned long long)own.info.clock_freq_hz, fit->err, max_err,
	       fit->consistent ? "consistent" : "INCONSISTENT");
	printf("libhvtrace's model on the same samples: %llu violations, error bound %llu ns\n",
	       (unsigned long long)viol_lib, (unsigned long long)lib_err);
	printf("published: mult %u shift %u epoch_cnt %llu epoch_ns %llu (reproduces the model within %.1f ns); hypervisor ctrl_errors %llu -> %llu\n",
	       mult, shift, (unsigned long long)epoch_cnt,
	       (unsigned long long)epoch_ns, max_enc,
	       (unsigned long long)errs0, (unsigned long long)errs1);
	if (viol) {
		printf("FAIL: causality violations\n");
		failures++;
	}
	if (viol_lib) {
		printf("FAIL: causality violations of libhvtrace's model (the one hvtrace and hvtraced use)\n");
		failures++;
	}
	if (!fit->consistent) {
		printf("FAIL: the samples' brackets do not overlap: the counter does not run at a steady rate\n");
		failures++;
	}
	if (max_enc > 2 * fit->rate + 1) {
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
	free(fit);
	free(rd);
	free(rtt);
	rig_close(&model);
	rig_close(&own);
	return failures ? 1 : 0;
}
