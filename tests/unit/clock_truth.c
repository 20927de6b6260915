// SPDX-License-Identifier: MIT
/*
 * The time-sync error bound against a known truth.
 *
 * A simulated writer clock is skewed (runs fast or slow by a known rate
 * error), offset, and drifting (its rate error changes linearly with time,
 * as a guest clock under NTP slewing or a warming crystal does).  Time-sync
 * samples are taken as the host takes them: stamp host_send, the writer
 * reads its clock at an unknown moment inside the round trip, stamp
 * host_recv; round trips jitter, and some are very slow.  Between two
 * samples, events are "written" at known host times; each event's writer
 * timestamp is mapped with the model (hvt_clock_to_host), and the true host
 * time must lie within the error bound the model states for it, including
 * the events written long after the newest sample (extrapolation).
 *
 * Every parameter comes from a seeded generator (HVT_TEST_SEED repeats a
 * run), and each scenario checks a few hundred thousand events.  The test
 * also requires the bound to stay useful: below the sync interval.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "hvt_test.h"
#include "hvtrace-local.h"

struct truth_clock {
	double t0;		/* host ns where the writer clock's rate error
				 * is skew_ppm */
	double w0;		/* writer ticks at t0 */
	double tick_ns;		/* nominal ns per tick */
	double skew_ppm;	/* rate error at t0 */
	double drift_ppm_s;	/* change of the rate error per second */
};

/* Writer ticks at host time t: the integral of the drifting rate. */
static uint64_t truth_writer(const struct truth_clock *c, double t)
{
	double dt = t - c->t0;
	double s = c->skew_ppm * 1e-6;
	double d = c->drift_ppm_s * 1e-6 / 1e9; /* per ns */
	double ns = dt + s * dt + d * dt * dt / 2;

	return (uint64_t)llround(c->w0 + ns / c->tick_ns);
}

static uint64_t rng_state;

static double rng_unit(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

struct scenario {
	const char *name;
	double tick_ns;
	double skew_ppm;
	double drift_ppm_s;
	double interval_ns;	/* between syncs */
	double rtt_min_ns, rtt_mean_ns;
	double slow_frac;	/* share of round trips of about 1 ms */
	double seconds;
};

static int run_scenario(const struct scenario *sc)
{
	struct hvt_clock_model m;
	struct truth_clock c;
	double t, worst_ratio = 0, max_err = 0;
	uint64_t events = 0, violations = 0;
	unsigned int syncs = 0;

	c.t0 = 5e9 + rng_unit() * 1e12;
	c.w0 = rng_unit() * 1e15;
	c.tick_ns = sc->tick_ns;
	c.skew_ppm = sc->skew_ppm;
	c.drift_ppm_s = sc->drift_ppm_s;
	hvt_clock_init(&m, HVT_CLOCK_COUNTER, (uint64_t)llround(1e9 / sc->tick_ns),
		       0, 0);

	for (t = c.t0; t < c.t0 + sc->seconds * 1e9; t += sc->interval_ns) {
		struct hvt_clock_sample s;
		double rtt = sc->rtt_min_ns - sc->rtt_mean_ns * log(1 - rng_unit());
		double at, next = t + sc->interval_ns, ev;
		int i;

		if (rng_unit() < sc->slow_frac)
			rtt += 1e6 * rng_unit();
		at = t + rtt * rng_unit();
		s.host_send = (uint64_t)t;
		s.host_recv = (uint64_t)ceil(t + rtt);
		s.writer = truth_writer(&c, at);
		hvt_clock_add(&m, &s);
		syncs++;

		/* Events until the next sync, at known host times. */
		for (i = 0; i < 64; i++) {
			uint64_t err, mapped;
			double off, lim;

			ev = t + rtt + (next - t - rtt) * rng_unit();
			mapped = hvt_clock_to_host(&m, truth_writer(&c, ev), &err);
			/* The writer's tick is the resolution of the truth. */
			off = fabs((double)mapped - ev);
			lim = (double)err + c.tick_ns + 1;
			events++;
			if (off > lim) {
				if (violations++ < 5)
					fprintf(stderr,
						"  %s: sync %u, event %.0f ns after it: "
						"mapped %" PRIu64 ", truth %.0f, off by %.0f ns, "
						"bound %" PRIu64 " ns\n",
						sc->name, syncs, ev - t, mapped, ev,
						off, err);
			}
			if (err > 0 && off / (double)err > worst_ratio)
				worst_ratio = off / (double)err;
			if (syncs > 10 && (double)err > max_err)
				max_err = (double)err;
		}
	}
	printf("%-28s %6u syncs, %8" PRIu64 " events, %" PRIu64
	       " outside the bound; largest bound after 10 syncs %.1f us, "
	       "worst error/bound %.2f\n",
	       sc->name, syncs, events, violations, max_err / 1e3, worst_ratio);
	if (violations)
		return 1;
	if (max_err >= sc->interval_ns) {
		fprintf(stderr, "  %s: the bound (%.0f ns) grew past the sync "
				"interval (%.0f ns): useless\n",
			sc->name, max_err, sc->interval_ns);
		return 1;
	}
	return 0;
}

int main(void)
{
	static const struct scenario sc[] = {
		/* name, tick, skew, drift, interval, rtt min, mean, slow, s */
		{ "exact rate", 1.0, 0, 0, 10e6, 2e3, 10e3, 0.01, 30 },
		{ "skew +300 ppm", 1.0, 300, 0, 10e6, 2e3, 10e3, 0.01, 30 },
		{ "skew -2000 ppm, 3 GHz", 1 / 3.0, -2000, 0, 10e6, 2e3, 10e3,
		  0.01, 30 },
		{ "drift 1 ppm/s", 1.0, 100, 1, 10e6, 2e3, 10e3, 0.01, 60 },
		{ "drift -5 ppm/s, slow syncs", 1 / 2.5, 50, -5, 100e6, 20e3,
		  40e3, 0.05, 60 },
		{ "vm round trips", 1.0, 40, 0.2, 10e6, 40e3, 60e3, 0.02, 60 },
	};
	unsigned int i;
	int fails = 0;

	rng_state = getenv("HVT_TEST_SEED") ?
			    strtoull(getenv("HVT_TEST_SEED"), NULL, 0) :
			    0x9e3779b97f4a7c15ULL;
	rng_state |= 1;
	printf("seed 0x%" PRIx64 " (HVT_TEST_SEED repeats a run)\n", rng_state);
	for (i = 0; i < sizeof(sc) / sizeof(sc[0]); i++)
		fails += run_scenario(&sc[i]);
	if (fails) {
		printf("FAIL: %d of %zu scenarios mapped times outside the stated "
		       "bound (or the bound was useless)\n",
		       fails, sizeof(sc) / sizeof(sc[0]));
		return 1;
	}
	printf("PASS: every mapped time within its stated bound\n");
	return 0;
}
