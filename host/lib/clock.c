// SPDX-License-Identifier: MIT
/*
 * libhvtrace: mapping writer timestamps onto the host's CLOCK_MONOTONIC.
 *
 * A sample is (host_send, writer, host_recv): the host stamps its clock,
 * asks the writer for its clock, and stamps again when the answer arrives.
 * The writer's reading happened somewhere in [host_send, host_recv], so the
 * midpoint is the best estimate and half the round trip bounds the error.
 *
 * The model keeps the last HVT_CLOCK_SAMPLES samples.  Its offset comes
 * from the fastest sample (smallest round trip), whose error bound is the
 * tightest.  Its rate starts at the nominal period the writer declares
 * (1e9 / clock_freq_hz) and, once samples span at least 100 ms, is refitted
 * by least squares over the fastest quarter of the samples, which corrects
 * drift between the writer's counter and the host clock.  The reported
 * error bound is half the best round trip plus the largest residual of the
 * fit (|model - midpoint| over the samples used).
 */
#include <math.h>
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

void hvt_clock_add(struct hvt_clock_model *m, const struct hvt_clock_sample *s)
{
	const struct hvt_clock_sample *best = NULL, *used[HVT_CLOCK_SAMPLES];
	uint64_t rtts[HVT_CLOCK_SAMPLES], cut;
	unsigned int i, n = 0, nused = 0;
	double resid = 0;

	if (m->clock_id == HVT_CLOCK_HOST_NS)
		return;
	m->s[m->next] = *s;
	m->next = (m->next + 1) % HVT_CLOCK_SAMPLES;
	if (m->nr < HVT_CLOCK_SAMPLES)
		m->nr++;

	for (i = 0; i < m->nr; i++) {
		rtts[n++] = m->s[i].host_recv - m->s[i].host_send;
		if (!best || m->s[i].host_recv - m->s[i].host_send <
				     best->host_recv - best->host_send)
			best = &m->s[i];
	}
	/* The fastest quarter (at least 2): their midpoints are the most
	 * trustworthy points for the rate fit. */
	for (i = 1; i < n; i++) {
		uint64_t v = rtts[i];
		unsigned int j = i;

		while (j && rtts[j - 1] > v) {
			rtts[j] = rtts[j - 1];
			j--;
		}
		rtts[j] = v;
	}
	cut = rtts[(n / 4) > 1 ? n / 4 : (n > 1 ? 1 : 0)];
	for (i = 0; i < m->nr; i++)
		if (m->s[i].host_recv - m->s[i].host_send <= cut)
			used[nused++] = &m->s[i];

	m->rate = m->nominal_rate;
	if (nused >= 2) {
		double sx = 0, sy = 0, sxx = 0, sxy = 0, x0, span;
		uint64_t wmin = used[0]->writer, wmax = used[0]->writer;

		for (i = 0; i < nused; i++) {
			if (used[i]->writer < wmin)
				wmin = used[i]->writer;
			if (used[i]->writer > wmax)
				wmax = used[i]->writer;
		}
		span = (double)(wmax - wmin) * m->nominal_rate;
		if (span >= 100e6) {
			(void)x0;
			for (i = 0; i < nused; i++) {
				double x = (double)(used[i]->writer - wmin);
				double y = clock_mid(used[i]) - clock_mid(best);

				sx += x;
				sy += y;
				sxx += x * x;
				sxy += x * y;
			}
			{
				double den = nused * sxx - sx * sx;
				double r = den > 0 ? (nused * sxy - sx * sy) / den
						   : m->nominal_rate;

				/* Accept only a plausible rate (±1%). */
				if (fabs(r / m->nominal_rate - 1) < 0.01)
					m->rate = r;
			}
		}
	}
	m->base_writer = best->writer;
	m->base_host = (uint64_t)clock_mid(best);
	for (i = 0; i < nused; i++) {
		double pred = (double)m->base_host +
			      (double)(int64_t)(used[i]->writer -
						m->base_writer) * m->rate;
		double d = fabs(pred - clock_mid(used[i]));

		if (d > resid)
			resid = d;
	}
	m->err_ns = (best->host_recv - best->host_send + 1) / 2 +
		    (uint64_t)ceil(resid);
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
