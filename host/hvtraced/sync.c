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
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <hvtrace-internal.h>

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

/* Host ns per writer tick, as the area declares it. */
static double sync_nominal(const struct remote *r)
{
	if (r->info.clock_id == HVT_CLOCK_COUNTER) {
		if (r->info.clock_freq_hz)
			return 1e9 / (double)r->info.clock_freq_hz;
		if (r->info.clock_mult && r->info.clock_shift < 64)
			return (double)r->info.clock_mult /
			       ldexp(1.0, (int)r->info.clock_shift);
	}
	return 1.0;
}

void sync_sample(struct remote *r, uint64_t send, uint64_t writer,
		 uint64_t recv)
{
	double nominal = sync_nominal(r), lo = 0, hi = 0;
	unsigned int first;

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

/*
 * Time sync through the control page.
 *
 * A round: sync_shm_post() stores a request token in the control page
 * right before the round's last PING; the agent answers the PING, sees a
 * request pending and spins on the control page (guest/agent/shmsync.c).
 * On the PONG, sync_shm_round() runs SHM_EXCHANGES exchanges
 * (hvt_area_sync_exchange(): the host stamps, stores a fresh token, spins
 * until the agent echoes it with its clock, stamps again) and feeds the
 * SHM_KEEP narrowest to sync_sample() in time order.  The first exchange
 * waits out the agent's way from its PONG into the spin and is not used.
 *
 * The round runs in the daemon's loop, which it holds: a few tens of
 * microseconds when the agent's vCPU runs, at most SHM_WAKE_NS +
 * SHM_LATE * SHM_TIMEOUT_NS (26 ms) on a host too loaded to run it.
 *
 * The answer is hostile: tokens are random, so only an agent that saw the
 * request can echo it; an answer must come after the PONG's clock reading
 * and no more ticks later than the host time since that PING allows, be
 * newer than the last sample, and, once the model is synced, lie within
 * its bound of the host's bracket.
 * A refuted answer costs a rejected sample; only SHM_STEP refuted in a row
 * (a writer clock that really stepped, which the model then finds
 * contradicting its older samples) get through.  An agent that does not answer (an older one) leaves
 * the remote on its pings: tried again every SHM_RETRY ping rounds.
 */
#define SHM_EXCHANGES	32
#define SHM_KEEP	4
#define SHM_WAKE_NS	20000000ull	/* the agent waits 25 ms for it */
#define SHM_TIMEOUT_NS	2000000ull	/* the agent waits 5 ms */
#define SHM_LATE	3		/* timeouts that end a round */
#define SHM_MISSES	8		/* rounds unanswered: pings only */
#define SHM_RETRY	8
#define SHM_STEP	16	/* refuted in a row: a step of the clock */
#define SHM_SLACK_NS	1000		/* rounding of the model's bound */
#define SHM_ALONE_NS	5000000000ull	/* pings join after 5 s without */

static uint64_t shm_token(struct remote *r)
{
	uint64_t x = r->shm.token;

	if (!x) {
		if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != sizeof(x))
			x = d_now_ns() ^ (uint64_t)(uintptr_t)r;
		x |= 1;
	}
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	r->shm.token = x;
	return x;
}

/*
 * While the exchanges answer, they feed the model alone: under a loaded
 * TCG host the pings' brackets, though hundreds of microseconds wide,
 * were seen to contradict the exchanges' (e2e/clock_truth: steps and
 * events outside their bound when both were fed), where either kind
 * alone kept every event inside its bound.  After SHM_ALONE_NS without
 * an exchange the pings feed it again.
 */
bool sync_shm_alone(const struct remote *r)
{
	return r->shm.samples && d_now_ns() - r->shm.last_ns < SHM_ALONE_NS;
}

const char *sync_method_name(const struct remote *r)
{
	if (r->ops->transport == HVT_TRANSPORT_AREA)
		return "control page";	/* area_remote.c: no agent */
	if (sync_shm_alone(r))
		return "shm (the area's control page, after a ping)";
	return "channel (pings over the control channel)";
}

/*
 * Off unless $HVTRACED_SYNC_SHM is 1: under TCG the guest's clock was
 * seen to change its rate by ~1000 ppm after boot, and the model fed by
 * microsecond-wide exchanges then stated bounds that events broke (by
 * 50-670 us, e2e/clock_truth with HVT_TRUTH_SHM=1), where the pings'
 * model held (docs/design.md section 5).
 */
static bool shm_enabled(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("HVTRACED_SYNC_SHM");

		on = e && !strcmp(e, "1");
	}
	return on;
}

bool sync_shm_post(struct remote *r)
{
	uint64_t s, w, v;

	r->shm.posted = false;
	if (!r->area || !shm_enabled())
		return false;
	if (r->shm.off) {
		if (++r->shm.rounds_off < SHM_RETRY)
			return false;
		r->shm.rounds_off = 0;
	}
	/* A timeout of 0 only posts the request. */
	if (hvt_area_sync_exchange(r->area, shm_token(r), 0, &s, &w, &v) ==
	    -EPERM)
		return false;
	r->shm.posted = true;
	return true;
}

/*
 * Whether an answer agrees with what the PONG that started the round and
 * the model already know: the agent read @writer after its PONG's second
 * reading (@ref_writer, taken after the PING left at @ref_send), so no
 * earlier, and no more ticks later than the host ns up to @recv allow at
 * the declared rate (+5%, the model's own window).
 */
static bool shm_plausible(struct remote *r, uint64_t ref_writer,
			  uint64_t ref_send, uint64_t ref_recv, uint64_t send,
			  uint64_t writer, uint64_t recv)
{
	struct hvtrace_clock_map m;
	uint64_t host, err = UINT64_MAX;

	double ticks, lo, hi;

	/* ref_writer was read in [ref_send, ref_recv], writer in
	 * [send, recv]: the ticks between them took at least send -
	 * ref_recv and at most recv - ref_send host ns. */
	if (writer < ref_writer || recv < ref_send)
		return false;
	ticks = (double)(writer - ref_writer) * sync_nominal(r);
	lo = ((double)send - (double)ref_recv) * (1 - SYNC_PPM_BOX * 1e-6);
	hi = (double)(recv - ref_send) * (1 + SYNC_PPM_BOX * 1e-6);
	if (ticks < lo - SHM_SLACK_NS || ticks > hi + SHM_SLACK_NS)
		return false;

	if (r->shm.samples && writer <= r->shm.last_writer)
		return false;
	hvtrace_area_clock_map(r->area, &m);
	if (!(m.flags & HVTRACE_CLOCK_SYNCED))
		return true;
	host = hvtrace_area_to_host_ns(r->area, writer, &err);
	if (err == UINT64_MAX || err > UINT64_MAX / 4)
		return true;
	return host + err + SHM_SLACK_NS >= send &&
	       host <= recv + err + SHM_SLACK_NS;
}

void sync_shm_round(struct remote *r, uint64_t ref_writer, uint64_t ref_send,
		    uint64_t ref_recv)
{
	struct sync_raw got[SHM_EXCHANGES], keep[SHM_KEEP];
	unsigned int n = 0, k = 0, late = 0, i, j;
	uint64_t s, w, v;
	int ret;

	if (!r->shm.posted || !r->area)
		return;
	r->shm.posted = false;
	/* The agent answers the posted request as it enters its spin. */
	ret = hvt_area_sync_exchange(r->area, shm_token(r), SHM_WAKE_NS, &s,
				     &w, &v);
	if (ret) {
		r->shm.timeouts++;
		r->shm.method = SYNC_CHANNEL;
		/* An agent that answered once can: a loaded host missed. */
		if (++r->shm.misses >= SHM_MISSES && !r->shm.samples &&
		    !r->shm.off) {
			r->shm.off = true;
			r->shm.method = SYNC_CHANNEL;
			d_log("remote '%s': its agent does not answer time sync "
			      "through shared memory; its clock model comes "
			      "from pings over the control channel",
			      r->name);
		}
		return;
	}
	for (i = 0; i < SHM_EXCHANGES; i++) {
		ret = hvt_area_sync_exchange(r->area, shm_token(r),
					     SHM_TIMEOUT_NS, &s, &w, &v);
		if (ret == -ETIMEDOUT) {
			r->shm.timeouts++;
			if (++late >= SHM_LATE)
				break;
			continue;
		}
		if (ret)
			continue;
		got[n].send = s;
		got[n].writer = w;
		got[n].recv = v;
		n++;
	}
	if (!n) {
		r->shm.method = SYNC_CHANNEL;
		return;
	}
	/* The SHM_KEEP narrowest, in the order they were taken. */
	for (k = 0; k < SHM_KEEP && k < n; k++) {
		unsigned int b = k;

		for (j = k + 1; j < n; j++)
			if (got[j].recv - got[j].send <
			    got[b].recv - got[b].send)
				b = j;
		if (b != k) {
			struct sync_raw t = got[k];

			got[k] = got[b];
			got[b] = t;
		}
	}
	r->shm.best_ns = got[0].recv - got[0].send;
	memcpy(keep, got, k * sizeof(keep[0]));
	for (i = 1; i < k; i++)
		for (j = i; j > 0 && keep[j].send < keep[j - 1].send; j--) {
			struct sync_raw t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < k; i++) {
		if (!shm_plausible(r, ref_writer, ref_send, ref_recv,
				   keep[i].send, keep[i].writer, keep[i].recv) &&
		    ++r->shm.rejects < SHM_STEP) {
			r->shm.rejected++;
			continue;
		}
		if (r->shm.rejects >= SHM_STEP)
			d_log("remote '%s': %u time-sync answers in a row "
			      "contradicted the clock model; taking them as "
			      "a step of the guest's clock",
			      r->name, r->shm.rejects);
		r->shm.rejects = 0;
		/*
		 * Straight to the model, not through sync_sample(): its
		 * strips assume one straight line over 64 samples, which
		 * brackets a microsecond wide over seconds would hold the
		 * guest's clock to (against the host's NTP-slewed one) far
		 * beyond the drift that the model allows for.
		 */
		hvtrace_area_add_sync_sample(r->area, keep[i].send,
					     keep[i].writer, keep[i].recv);
		r->shm.last_writer = keep[i].writer;
		r->sync_window_ns = keep[i].recv - keep[i].send;
		r->sync_samples++;
		r->shm.samples++;
		r->shm.last_ns = d_now_ns();
	}
	r->shm.misses = 0;
	r->shm.off = false;
	r->shm.method = SYNC_SHM;
	clocks_update(r); /* the refitted model to the subscribers */
}
