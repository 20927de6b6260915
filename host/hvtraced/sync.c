// SPDX-License-Identifier: MIT
/*
 * hvtraced: turning PING/PONG round trips into tight clock samples.
 *
 * A round trip says only that the writer's reading w happened somewhere
 * in host time [s, r].  libhvtrace's clock model takes its offset from
 * the midpoint of its fastest such sample, so that sample's one-way
 * asymmetry (a few microseconds between processes) becomes the model's
 * error.  But every sample constrains the same line: with
 *
 *	host(w) = a + b * (w - w_ref)
 *
 * sample i demands s_i <= a + b * (w_i - w_ref) <= r_i, a strip in the
 * (a, b) plane.  Intersecting the strips of the last SYNC_WINDOW samples
 * (plus a box of rates around the nominal one, as wide as the +-5% that
 * the model itself accepts: a box that missed the true rate could leave a
 * window that misses the truth) leaves the set
 * of lines that agree with all of them; taking w_ref = the newest reading,
 * its host time must lie within [min a, max a] over that set -- usually
 * far narrower than any single round trip, because different samples are
 * fast on different legs.  That window is what the daemon feeds the model
 * (hvtrace_area_add_sync_sample()): still a true bound on when the
 * reading happened, so the model's midpoint and its error bound stay
 * honest, and causality checks hold.
 *
 * When the strips do not intersect (a clock step, a rate outside the
 * box, a lying agent), the oldest samples are dropped until they do; a
 * single sample is always feasible, and then the window is its own.
 */
#include <math.h>
#include <string.h>

#include "daemon.h"

#define SYNC_PPM_BOX	50000.0	/* rates considered: nominal +- 5%, the
				 * range the library's model accepts */

struct pt {
	double a, b;
};

/* Keep the part of polygon @in (n vertices) where a + b*x - c >= 0
 * (sign +1) or <= 0 (sign -1).  Returns the new vertex count. */
static int clip(const struct pt *in, int n, struct pt *out, double x,
		double c, double sign)
{
	int i, m = 0;

	for (i = 0; i < n; i++) {
		const struct pt *p = &in[i], *q = &in[(i + 1) % n];
		double fp = sign * (p->a + p->b * x - c);
		double fq = sign * (q->a + q->b * x - c);

		if (fp >= 0)
			out[m++] = *p;
		if ((fp >= 0) != (fq >= 0)) {
			double t = fp / (fp - fq);

			out[m].a = p->a + t * (q->a - p->a);
			out[m].b = p->b + t * (q->b - p->b);
			m++;
		}
	}
	return m;
}

/* The a-range of the intersection of samples [first, nr) around the
 * newest; 0 when feasible. */
static int sync_window(const struct remote *r, unsigned int first,
		       double nominal, double *lo, double *hi)
{
	static struct pt poly[2][4 + 2 * SYNC_WINDOW + 8];
	const struct sync_raw *ref =
		&r->raw[(r->raw_next + SYNC_WINDOW - 1) % SYNC_WINDOW];
	unsigned int k;
	int n = 4, cur = 0, i;
	double bl = nominal * (1 - SYNC_PPM_BOX * 1e-6);
	double bh = nominal * (1 + SYNC_PPM_BOX * 1e-6);
	double s0 = 0, r0 = (double)(ref->recv - ref->send);

	/* The newest sample's own strip at x = 0, times the rate box. */
	poly[0][0] = (struct pt){ s0, bl };
	poly[0][1] = (struct pt){ r0, bl };
	poly[0][2] = (struct pt){ r0, bh };
	poly[0][3] = (struct pt){ s0, bh };
	for (k = first; k + 1 < r->raw_nr && n > 0; k++) {
		const struct sync_raw *s =
			&r->raw[(r->raw_next + SYNC_WINDOW - r->raw_nr + k) %
				SYNC_WINDOW];
		double x = (double)(int64_t)(s->writer - ref->writer);
		double cs = (double)(int64_t)(s->send - ref->send);
		double cr = (double)(int64_t)(s->recv - ref->send);

		n = clip(poly[cur], n, poly[!cur], x, cs, 1);
		cur = !cur;
		if (n <= 0)
			break;
		n = clip(poly[cur], n, poly[!cur], x, cr, -1);
		cur = !cur;
	}
	if (n <= 0)
		return -1;
	*lo = INFINITY;
	*hi = -INFINITY;
	for (i = 0; i < n; i++) {
		if (poly[cur][i].a < *lo)
			*lo = poly[cur][i].a;
		if (poly[cur][i].a > *hi)
			*hi = poly[cur][i].a;
	}
	/* Round outwards: the window must contain, never cut, the truth. */
	*lo = floor(*lo) - 1;
	*hi = ceil(*hi) + 1;
	if (*lo < s0)
		*lo = s0;
	if (*hi > r0)
		*hi = r0;
	return *lo <= *hi ? 0 : -1;
}

void sync_sample(struct remote *r, uint64_t send, uint64_t writer,
		 uint64_t recv)
{
	double nominal = 1.0, lo = 0, hi = 0;
	unsigned int first;

	if (r->info.clock_id == HVT_CLOCK_COUNTER) {
		if (r->info.clock_freq_hz)
			nominal = 1e9 / (double)r->info.clock_freq_hz;
		else if (r->info.clock_mult && r->info.clock_shift < 64)
			nominal = (double)r->info.clock_mult /
				  ldexp(1.0, (int)r->info.clock_shift);
	}
	/* A writer clock that went backwards starts the window afresh. */
	if (r->raw_nr) {
		const struct sync_raw *last =
			&r->raw[(r->raw_next + SYNC_WINDOW - 1) % SYNC_WINDOW];

		if (writer < last->writer || send < last->send)
			r->raw_nr = 0;
	}
	r->raw[r->raw_next].send = send;
	r->raw[r->raw_next].writer = writer;
	r->raw[r->raw_next].recv = recv;
	r->raw_next = (r->raw_next + 1) % SYNC_WINDOW;
	if (r->raw_nr < SYNC_WINDOW)
		r->raw_nr++;
	/* Bounded: each failure drops one more of the oldest samples. */
	for (first = 0; first < r->raw_nr; first++)
		if (!sync_window(r, first, nominal, &lo, &hi))
			break;
	if (first == r->raw_nr) {
		lo = 0;
		hi = (double)(recv - send);
	}
	if (first) {
		/* Forget the samples that contradict the newer ones. */
		r->raw_nr -= first;
		r->sync_dropped += first;
	}
	hvtrace_area_add_sync_sample(r->area, send + (uint64_t)lo, writer,
				     send + (uint64_t)hi);
	r->sync_window_ns = (uint64_t)(hi - lo);
}
