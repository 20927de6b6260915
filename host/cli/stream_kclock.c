// SPDX-License-Identifier: MIT
/*
 * hvtrace stream NAME --guest-kernel: the guest kernel's times on the
 * host's clock.
 *
 * The ring's timestamps are the guest instance's trace clock.  The rig
 * sets it to "mono" (the guest's CLOCK_MONOTONIC), which is also the clock
 * of the agent's area, and hvtraced keeps a model of that clock against
 * the host's CLOCK_MONOTONIC (time-sync pings over the guest's control
 * channel).  When hvtraced has the guest NAME, its area's clock is mono
 * and the formats folder says the ring's is too, the stream converts
 * every guest kernel timestamp with that model: two conversions through
 * the daemon (TO_HOST) anchor a line, refreshed every 250 ms, that the
 * timestamps in between are put on.  Otherwise the times stay the guest's,
 * and stderr says why: never a wrong absolute time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace-daemon.h>

#include "cli.h"
#include "stream.h"

#define KC_REFRESH_NS 250000000ULL
#define KC_SPAN_NS    1000000000ULL /* the second anchor, after the first */

/* The clock a guest's formats folder's trace_clock marks; is it mono? */
bool hvt_cli_ring_clock_mono(const char *dir, char *clock, size_t len)
{
	char path[PATH_MAX], buf[512], *b, *e;
	size_t n;
	FILE *f;

	snprintf(clock, len, "local (the instance's default)");
	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/trace_clock", dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	b = strchr(buf, '[');
	e = b ? strchr(b, ']') : NULL;
	if (!b || !e)
		return false;
	snprintf(clock, len, "%.*s", (int)(e - b - 1), b + 1);
	return !strcmp(clock, "mono");
}

void st_kclock_open(struct st_state *s)
{
	struct hvt_remote_rec rec;
	char clock[64];

	if (!s->kclock_name)
		return;
	if (!hvt_cli_ring_clock_mono(s->formats, clock, sizeof(clock))) {
		fprintf(stderr,
			"hvtrace stream: guest kernel times are the guest's "
			"own (its ring's clock is %s, which the host cannot "
			"map)\n",
			clock);
		return;
	}
	if (hvtrace_daemon_open(s->sock, &s->kclock_dc) ||
	    hvtrace_daemon_find_remote(s->kclock_dc, s->kclock_name, &rec)) {
		fprintf(stderr,
			"hvtrace stream: guest kernel times are the guest's "
			"own (no hvtraced has '%s' to map them: %s)\n",
			s->kclock_name, hvtrace_last_error());
		st_kclock_close(s);
		return;
	}
	if (rec.clock_id != HVT_CLOCK_MONO_NS) {
		fprintf(stderr,
			"hvtrace stream: guest kernel times are the guest's "
			"own (the agent of '%s' stamps another clock than "
			"the ring's mono)\n",
			s->kclock_name);
		st_kclock_close(s);
		return;
	}
	if (hvtrace_daemon_feed_open(s->sock, &s->kclock_feed)) {
		fprintf(stderr,
			"hvtrace stream: guest kernel times are the guest's "
			"own (%s)\n",
			hvtrace_last_error());
		st_kclock_close(s);
		return;
	}
	s->kclock_remote = rec.id;
	s->kclock_on = true;
}

/* Anchor the line at @ts and one second later. */
static int kc_anchor(struct st_state *s, uint64_t ts)
{
	uint64_t g[2] = {ts, ts + KC_SPAN_NS}, h[2], err = UINT64_MAX;
	int ret;

	ret = hvtrace_daemon_feed_to_host(s->kclock_feed, s->kclock_remote, g,
					  h, 2, &err);
	if (ret || err == UINT64_MAX)
		return ret ? ret : -EAGAIN;
	s->kclock_g0 = g[0];
	s->kclock_h0 = h[0];
	s->kclock_h1 = h[1];
	s->kclock_at = hvt_cli_now_ns();
	s->kclock_bound = err;
	if (!s->kclock_said || err > s->kclock_err) {
		if (!s->kclock_said)
			fprintf(stderr,
				"hvtrace stream: guest kernel times on the "
				"host's CLOCK_MONOTONIC through hvtraced's "
				"clock model of '%s' (error bound +-%.1f us)\n",
				s->kclock_name, (double)err / 1e3);
		s->kclock_said = true;
		s->kclock_err = err;
	}
	return 0;
}

uint64_t st_kclock_map(struct st_state *s, uint64_t ts, uint64_t *err_ns)
{
	double rate;

	*err_ns = UINT64_MAX;
	if (!s->kclock_on)
		return ts;
	if (!s->kclock_at || hvt_cli_now_ns() - s->kclock_at >= KC_REFRESH_NS) {
		int ret = kc_anchor(s, ts);

		if (ret && !s->kclock_at) {
			fprintf(stderr,
				"hvtrace stream: guest kernel times are the "
				"guest's own (hvtraced cannot map '%s' yet: "
				"%s)\n",
				s->kclock_name,
				ret == -EAGAIN ? "not synchronised"
					       : hvtrace_last_error());
			st_kclock_close(s);
			return ts;
		}
	}
	*err_ns = s->kclock_bound;
	rate = (double)(int64_t)(s->kclock_h1 - s->kclock_h0) /
	       (double)KC_SPAN_NS;
	return s->kclock_h0 +
	       (uint64_t)(int64_t)((double)(int64_t)(ts - s->kclock_g0) * rate);
}

void st_kclock_close(struct st_state *s)
{
	s->kclock_on = false;
	hvtrace_daemon_feed_close(s->kclock_feed);
	s->kclock_feed = NULL;
	hvtrace_daemon_close(s->kclock_dc);
	s->kclock_dc = NULL;
}
