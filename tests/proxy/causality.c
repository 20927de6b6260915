// SPDX-License-Identifier: MIT
/*
 * Time sync over the proxy stream, checked by causality.
 *
 * hvtraced stamps CLOCK_MONOTONIC, sends TRIGGER; the agent writes an
 * "hvtrace_trigger u64 token" event into the ring and acknowledges; the
 * daemon stamps the acknowledgement.  The event was written between the
 * two stamps; the clock model that PING/PONG samples over the same stream
 * feed converts its timestamp to host time and states an error bound E
 * with that conversion, so the converted time must fall within
 * [before - E, after + E].  Further out, the model broke its own word: a
 * violation.  2000 round trips with an agent on the CPU counter and 2000
 * with one on CLOCK_MONOTONIC; zero violations allowed.  Conversions
 * outside [before, after] but within E are what the model allows (its
 * offset is the middle of what the samples leave open): they are counted
 * and printed, not failed.  The events are found in the page stream
 * (decoded with libtraceevent), the conversion is the daemon's (TO_HOST,
 * one event a request, so that each gets its own bound), as a recorder
 * would do it.
 *
 * The daemon pings every 20 ms here (the default is once a second), so
 * that the model holds a full window of samples within a second.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define ROUNDS	2000

static void run_clock(struct hvtrace_daemon *dc, const char *name,
		      const char *clock)
{
	struct h_causality_result res;
	struct h_agent a;
	char extra[64];

	snprintf(extra, sizeof(extra), "--clock %s", clock);
	h_agent_start(&a, name, extra);
	/* The model keeps 64 samples: wait for a full window. */
	h_wait_sync(dc, name, 96, 10000);
	h_causality(dc, name, a.remote, ROUNDS, &res);
	printf("%s (clock %s): %u round trips, %u outside their bracket, %u "
	       "of them beyond the stated bound; largest error bound "
	       "%llu ns from %llu sync samples; slack before/after >= "
	       "%lld/%lld ns; round trip mean %llu ns, max %llu ns\n",
	       name, clock, res.rounds, res.outside, res.violations,
	       (unsigned long long)res.err_ns,
	       (unsigned long long)res.samples, (long long)res.min_before,
	       (long long)res.min_after, (unsigned long long)res.mean_rtt,
	       (unsigned long long)res.max_rtt);
	if (res.violations)
		t_fail("%u of %u converted events fell outside their "
		       "[before, after] window by more than the error bound "
		       "the clock model stated with their conversion",
		       res.violations, res.rounds);
	if (res.err_ns == UINT64_MAX)
		t_fail("the clock model has no error bound after the run");
	h_agent_stop(&a);
}

int main(void)
{
	struct hvtrace_daemon *dc = h_start("--sync-interval 20");

	run_clock(dc, "caus_counter", "counter");
	run_clock(dc, "caus_mono", "mono");
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
