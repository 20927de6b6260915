// SPDX-License-Identifier: MIT
/*
 * libhvtrace: mapping writer timestamps onto the host's CLOCK_MONOTONIC.
 *
 * A sample is (host_send, writer, host_recv): the host stamps its clock,
 * asks the writer for its clock, and stamps again when the answer arrives.
 * The writer read its clock somewhere inside that bracket.
 *
 * Rate: the nominal period the writer declares (1e9 / clock_freq_hz),
 * refitted by least squares over the bracket midpoints of the fastest
 * quarter of the samples once they span at least 500 ms (a slow round trip
 * says little about where inside it the clock was read); this corrects
 * drift between the writer's counter and the host clock.
 *
 * Offset: with the rate fixed, each sample confines the offset to an
 * interval [host_send - d, host_recv - d] (d = the sample's writer time,
 * scaled).  The truth lies in every interval, hence in their intersection;
 * the model takes its middle and reports half its width as the error bound.
 * If the intervals do not intersect (the rate is off, or a sample is
 * bogus), it falls back to the tightest sample and widens the bound by the
 * disagreement.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

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
	m->rate = m->nominal_rate;
	/* Host-ns writers need no model; others are "unsynced" until a
	 * sample arrives: then the writer's own epoch is used as is. */
	m->synced = clock_id == HVT_CLOCK_HOST_NS;
	m->err_ns = m->synced ? 0 : UINT64_MAX;
}

static double clock_mid(const struct hvt_clock_sample *s)
{
	return (double)s->host_send + (double)(s->host_recv - s->host_send) / 2;
}

static int clock_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Least-squares rate over the fastest quarter, or the nominal rate. */
static double clock_fit_rate(const struct hvt_clock_model *m)
{
	uint64_t rtts[HVT_CLOCK_SAMPLES], cut, wmin = UINT64_MAX, wmax = 0;
	double sx = 0, sy = 0, sxx = 0, sxy = 0, den, r, y0 = 0;
	unsigned int i, used = 0;
	bool have_y0 = false;

	for (i = 0; i < m->nr; i++)
		rtts[i] = m->s[i].host_recv - m->s[i].host_send;
	qsort(rtts, m->nr, sizeof(rtts[0]), clock_cmp_u64);
	cut = rtts[m->nr / 4];
	for (i = 0; i < m->nr; i++) {
		if (m->s[i].host_recv - m->s[i].host_send > cut)
			continue;
		used++;
		if (m->s[i].writer < wmin)
			wmin = m->s[i].writer;
		if (m->s[i].writer > wmax)
			wmax = m->s[i].writer;
	}
	/* A rate fitted over a short span is noisier than a good nominal
	 * one: wait for half a second of samples. */
	if (used < 8 || (double)(wmax - wmin) * m->nominal_rate < 500e6)
		return m->nominal_rate;
	for (i = 0; i < m->nr; i++) {
		double x, y;

		if (m->s[i].host_recv - m->s[i].host_send > cut)
			continue;
		if (!have_y0) {
			y0 = clock_mid(&m->s[i]);
			have_y0 = true;
		}
		/* Offsets from the first point keep the doubles exact. */
		x = (double)(m->s[i].writer - wmin);
		y = clock_mid(&m->s[i]) - y0;
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	den = used * sxx - sx * sx;
	r = den > 0 ? (used * sxy - sx * sy) / den : m->nominal_rate;
	/* Accept only a plausible rate: within 5% of the nominal one (a
	 * guest's own frequency measurement can be off by a few percent on a
	 * busy host; the fit corrects it). */
	return fabs(r / m->nominal_rate - 1) < 0.05 ? r : m->nominal_rate;
}

void hvt_clock_add(struct hvt_clock_model *m, const struct hvt_clock_sample *s)
{
	double lo_max = -INFINITY, hi_min = INFINITY, best_rtt = INFINITY;
	double best_mid = 0;
	uint64_t ref;
	unsigned int i;

	if (m->clock_id == HVT_CLOCK_HOST_NS || s->host_recv < s->host_send)
		return;
	m->s[m->next] = *s;
	m->next = (m->next + 1) % HVT_CLOCK_SAMPLES;
	if (m->nr < HVT_CLOCK_SAMPLES)
		m->nr++;

	m->rate = clock_fit_rate(m);
	/* Express every bracket as an interval for the host time at the
	 * newest sample's writer time. */
	ref = s->writer;
	for (i = 0; i < m->nr; i++) {
		double d = (double)(int64_t)(m->s[i].writer - ref) * m->rate;
		double lo = (double)m->s[i].host_send - d;
		double hi = (double)m->s[i].host_recv - d;
		double rtt = (double)(m->s[i].host_recv - m->s[i].host_send);

		if (lo > lo_max)
			lo_max = lo;
		if (hi < hi_min)
			hi_min = hi;
		if (rtt < best_rtt) {
			best_rtt = rtt;
			best_mid = (lo + hi) / 2;
		}
	}
	m->base_writer = ref;
	if (lo_max <= hi_min) {
		m->base_host = (uint64_t)((lo_max + hi_min) / 2);
		m->err_ns = (uint64_t)ceil((hi_min - lo_max) / 2);
	} else {
		m->base_host = (uint64_t)best_mid;
		m->err_ns = (uint64_t)ceil(best_rtt / 2 + (lo_max - hi_min));
	}
	m->synced = true;
}

uint64_t hvt_clock_to_host(const struct hvt_clock_model *m, uint64_t ts,
			   uint64_t *err_ns)
{
	double v;

	if (err_ns)
		*err_ns = m->err_ns;
	if (m->clock_id == HVT_CLOCK_HOST_NS)
		return ts;
	if (!m->synced)
		/* No sample yet: the writer's own timeline, in ns. */
		return (uint64_t)((double)ts * m->rate);
	/* Subtract in integers first: counters exceed double precision. */
	v = (double)m->base_host +
	    (double)(int64_t)(ts - m->base_writer) * m->rate;
	return v < 0 ? 0 : (uint64_t)v;
}
