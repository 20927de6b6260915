// SPDX-License-Identifier: MIT
/*
 * libhvtrace: mapping writer timestamps onto the host's CLOCK_MONOTONIC.
 *
 * A sample is (host_send, writer, host_recv): the host stamps its clock,
 * asks the writer for its clock, and stamps again when the answer arrives.
 * The writer read its clock somewhere inside that bracket.
 *
 * The model, around the newest sample's writer time w_ref:
 *
 *	host(w) = base_host + rate * (w - w_ref)     +- err(w)
 *	err(w)  = err_ref + rate_err * |w - w_ref| + drift/2 * (w - w_ref)^2
 *
 * and err(w) is a bound, not an estimate: the true host time lies within
 * it as long as the writer clock's rate changes by at most
 * CONFIG_HVT_CLOCK_MAX_DRIFT_PPB_S per second (the "drift" term, in ns per
 * tick per tick) and its declared frequency is within 5% of the truth.
 *
 *   rate   Any two samples i, j confine the rate: the writer ticks between
 *	    them took at least host_send_j - host_recv_i and at most
 *	    host_recv_j - host_send_i host ns, give or take what the rate may
 *	    have drifted in between.  The intersection over every pair (and
 *	    the 5% window around the nominal rate) is [lo, hi].  The model
 *	    takes the nominal rate (the writer's declared frequency) clamped
 *	    into [lo, hi], and rate_err is the distance from it to the far
 *	    end: a bound still, and much closer to the truth than the middle
 *	    while few samples, close in time, leave [lo, hi] wide (a calibrated
 *	    counter is right to a few ppm, while the middle of a lopsided
 *	    5% window is off by percents: 1 ms over 100 ms).
 *
 *	      host
 *	       |            [j]       a sample: the host bracket
 *	       |        .-'  |        [send, recv] at the writer time
 *	       |    .-'      |        it answered; every line through
 *	       | [i]  <- the steepest and the flattest lines through
 *	       +------------------ writer ticks   both brackets bound the rate
 *
 *   offset With the rate fixed, each sample confines base_host to its
 *	    bracket moved to w_ref, widened by what the rate's uncertainty
 *	    and the drift allow over that distance.  The truth lies in every
 *	    such interval, hence in their intersection; base_host is its
 *	    middle and err_ref half its width.
 *
 * Samples that no such clock fits (no rate in every pair's range, or an
 * empty intersection: the rate stepped faster than the drift allows, or a
 * bogus sample) make the model forget the older half of its window and
 * fit again, down to the newest sample alone.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hvtrace/config.h>

#include "hvtrace-local.h"

uint64_t hvt_host_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void hvt_wait_a_little(unsigned int *spins)
{
	if ((*spins)++ < 200) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ volatile("yield");
#endif
		return;
	}
	{
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, NULL);
	}
}

/* The rate in fixed point (hvt_clock_affine_to_host()): its integer part
 * and its fraction scaled by 2^64.  The fraction of a double is exact. */
static void clock_set_rate(struct hvt_clock_model *m, double r)
{
	double ip;

	if (!(r > 0))
		r = 0;
	if (r >= 0x1p62)
		r = 0x1p62; /* no clock ticks once in 2^62 ns */
	ip = floor(r);
	m->rate = r;
	m->rate_int = (uint64_t)ip;
	m->rate_frac = (uint64_t)ldexp(r - ip, 64);
}

void hvt_clock_init(struct hvt_clock_model *m, uint32_t clock_id,
		    uint64_t freq_hz, uint32_t mult, uint32_t shift)
{
	memset(m, 0, sizeof(*m));
	m->clock_id = clock_id;
	m->freq_hz = freq_hz;
	if (clock_id == HVT_CLOCK_COUNTER && freq_hz)
		m->nominal_rate = 1e9 / (double)freq_hz;
	else if (clock_id == HVT_CLOCK_COUNTER && mult)
		m->nominal_rate = (double)mult / (double)(1ULL << shift);
	else
		m->nominal_rate = 1.0;	/* ns clocks */
	clock_set_rate(m, m->nominal_rate);
	/* Host-ns writers need no model; others are "unsynced" until a
	 * sample arrives: then the writer's own epoch is used as is. */
	m->synced = clock_id == HVT_CLOCK_HOST_NS;
	m->err_ns = m->synced ? 0 : UINT64_MAX;
}

/* Rate change allowed per tick per tick (ns/tick^2): a relative change
 * of CONFIG_HVT_CLOCK_MAX_DRIFT_PPB_S per second of host time. */
static double clock_drift(const struct hvt_clock_model *m)
{
	double r = m->nominal_rate;

	return r * r * (double)CONFIG_HVT_CLOCK_MAX_DRIFT_PPB_S * 1e-18;
}

/* The newest `use` samples, oldest first, as writer offsets from ref. */
static const struct hvt_clock_sample *clock_nth(const struct hvt_clock_model *m,
						unsigned int use,
						unsigned int k)
{
	unsigned int newest = (m->next + HVT_CLOCK_SAMPLES - 1) % HVT_CLOCK_SAMPLES;

	return &m->s[(newest + HVT_CLOCK_SAMPLES - (use - 1 - k)) %
		     HVT_CLOCK_SAMPLES];
}

/*
 * Fit the newest `use` samples around ref = the newest writer time.
 * Returns false if no clock within the model fits them all.
 */
static bool clock_fit(struct hvt_clock_model *m, unsigned int use)
{
	double K2 = clock_drift(m) / 2;
	double rlo = m->nominal_rate * 0.95, rhi = m->nominal_rate * 1.05;
	double lo_max = -INFINITY, hi_min = INFINITY, r, rerr;
	uint64_t ref = clock_nth(m, use, use - 1)->writer;
	unsigned int i, j;

	for (i = 0; i < use; i++) {
		const struct hvt_clock_sample *a = clock_nth(m, use, i);
		double da = (double)(int64_t)(a->writer - ref);

		for (j = i + 1; j < use; j++) {
			const struct hvt_clock_sample *b = clock_nth(m, use, j);
			double db = (double)(int64_t)(b->writer - ref);
			double dw = db - da, slack = K2 * (da * da + db * db);
			double span_min, span_max;

			if (dw == 0)
				continue;
			/* Host ns between the two readings of the clock. */
			span_min = (double)(int64_t)(b->host_send - a->host_recv) - slack;
			span_max = (double)(int64_t)(b->host_recv - a->host_send) + slack;
			if (dw < 0) {
				double t = -span_min;

				span_min = -span_max;
				span_max = t;
				dw = -dw;
			}
			if (span_min / dw > rlo)
				rlo = span_min / dw;
			if (span_max / dw < rhi)
				rhi = span_max / dw;
		}
	}
	if (rlo > rhi)
		return false;
	r = m->nominal_rate < rlo ? rlo
	    : m->nominal_rate > rhi ? rhi
				    : m->nominal_rate;
	rerr = r - rlo > rhi - r ? r - rlo : rhi - r;

	for (i = 0; i < use; i++) {
		const struct hvt_clock_sample *a = clock_nth(m, use, i);
		double d = (double)(int64_t)(a->writer - ref);
		double widen = rerr * fabs(d) + K2 * d * d;
		double lo = (double)a->host_send - d * r - widen;
		double hi = (double)a->host_recv - d * r + widen;

		if (lo > lo_max)
			lo_max = lo;
		if (hi < hi_min)
			hi_min = hi;
	}
	if (lo_max > hi_min)
		return false;
	clock_set_rate(m, r);
	m->rate_err = rerr;
	m->base_writer = ref;
	m->base_host = (uint64_t)((lo_max + hi_min) / 2);
	m->err_ns = (uint64_t)ceil((hi_min - lo_max) / 2) + 1;
	m->used = use;
	return true;
}

void hvt_clock_add(struct hvt_clock_model *m, const struct hvt_clock_sample *s)
{
	unsigned int use;

	if (m->clock_id == HVT_CLOCK_HOST_NS || s->host_recv < s->host_send)
		return;
	m->s[m->next] = *s;
	m->next = (m->next + 1) % HVT_CLOCK_SAMPLES;
	if (m->nr < HVT_CLOCK_SAMPLES)
		m->nr++;
	/* Start from the window that fitted last time plus this sample; a
	 * misfit halves it (the newest sample alone always fits). */
	use = m->used + 1 < m->nr ? m->used + 1 : m->nr;
	while (!clock_fit(m, use)) {
		m->refits++;
		use /= 2;
		if (!use)
			use = 1;
	}
	m->synced = true;
}

void hvt_clock_map_get(const struct hvt_clock_model *m,
		       struct hvtrace_clock_map *out)
{
	memset(out, 0, sizeof(*out));
	out->clock_id = m->clock_id;
	out->flags = m->synced ? HVTRACE_CLOCK_SYNCED : 0;
	out->base_writer = m->base_writer;
	out->base_host = m->base_host;
	out->rate_int = m->rate_int;
	out->rate_frac = m->rate_frac;
	out->err_ns = m->err_ns;
	out->rate_err = m->rate_err;
	out->drift_half = clock_drift(m) / 2;
}

/* The one conversion: an area's model (hvt_clock_to_host()) and a
 * remote's that hvtraced sent (libhvtrace-daemon) both come here. */
HVTRACE_API uint64_t hvtrace_clock_map_to_host(
	const struct hvtrace_clock_map *m, uint64_t ts, uint64_t *err_ns)
{
	struct hvt_clock_affine a;

	if (!m->clock_id) {
		/* No model: the writer's own times. */
		if (err_ns)
			*err_ns = UINT64_MAX;
		return ts;
	}
	if (err_ns) {
		*err_ns = m->err_ns;
		if (m->clock_id != HVT_CLOCK_HOST_NS &&
		    (m->flags & HVTRACE_CLOCK_SYNCED)) {
			double d = (double)(int64_t)(ts - m->base_writer);
			double e = (double)m->err_ns + m->rate_err * fabs(d) +
				   m->drift_half * d * d;

			*err_ns = e < 1.8e19 ? (uint64_t)ceil(e) : UINT64_MAX;
		}
	}
	a.identity = m->clock_id == HVT_CLOCK_HOST_NS;
	a.synced = m->flags & HVTRACE_CLOCK_SYNCED;
	a.rate_int = m->rate_int;
	a.rate_frac = m->rate_frac;
	a.base_writer = m->base_writer;
	a.base_host = m->base_host;
	return hvt_clock_affine_to_host(&a, ts);
}

uint64_t hvt_clock_to_host(const struct hvt_clock_model *m, uint64_t ts,
			   uint64_t *err_ns)
{
	struct hvtrace_clock_map map;

	hvt_clock_map_get(m, &map);
	return hvtrace_clock_map_to_host(&map, ts, err_ns);
}
