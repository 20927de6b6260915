// SPDX-License-Identifier: MIT
/*
 * LTTng-UST side of the peer benchmark (run by lttng.sh), with
 * libhvtrace-guest measured beside it in the same process and run
 * (see bench.h for how):
 *
 *   lttng_bench disabled   no session: a tracepoint that is off, and
 *                          hvtg_enabled() on a disabled event
 *   lttng_bench enabled    a session with the event enabled on an
 *                          overwrite channel: an event with four 64-bit
 *                          fields, hvtg_write() of the same 32 bytes
 *                          into an overwrite-mode area, and the writer
 *                          core's direct path (hvt_rb_write()) with the
 *                          same 32 bytes and clock on another CPU buffer
 *                          of that area
 *
 * Single thread, pinned.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"

#include "../stress/guest_harness.h"
#include "bench.h"
#include "hvtg_internal.h"

static struct hvtg_event ev = HVTG_EVENT_INIT;

static int run_lttng(void *p, long n)
{
	long i;

	for (i = 0; i < n; i++)
		lttng_ust_tracepoint(hvt_bench, ev32, (uint64_t)i, 2, 3, 4);
	return 0;
}

static volatile long sink;
static struct hvt_rb_cpu direct_cb;

static int run_direct(void *p, long n)
{
	uint64_t v[4] = { 1, 2, 3, 4 };
	struct hvt_common_fields c = { 1, 0, 0, 1234 };
	struct hvt_iovec iov = { v, sizeof(v) };
	long i;

	for (i = 0; i < n; i++) {
		v[0] = (uint64_t)i;
		hvt_rb_write(&direct_cb, hvtg_counter_read(), &c, &iov, 1);
	}
	return 0;
}

static int run_guest(void *p, long n)
{
	uint64_t v[4] = { 1, 2, 3, 4 };
	long i, hits = 0;

	/* The payload is filled inside the branch, as the tracepoint's
	 * arguments are evaluated only when it is enabled. */
	for (i = 0; i < n; i++) {
		if (hvtg_enabled(&ev)) {
			v[0] = (uint64_t)i;
			if (hvtg_write(&ev, v, sizeof(v)))
				return -1;
			hits++;
		}
	}
	sink = hits;
	return 0;
}

int main(int argc, char **argv)
{
	int enabled = argc > 1 && !strcmp(argv[1], "enabled");
	struct bench_peer peer[3];
	int np = 2;
	struct th_area ta;
	int i;

	th_pin(0);
	th_area_new(&ta, 2, 64, 4096, HVT_MODE_OVERWRITE, HVT_CLOCK_COUNTER);
	t_ok(hvtg_event_bind(ta.w, &ev, 1, 1));
	memset(peer, 0, sizeof(peer));
	if (enabled) {
		th_enable(&ta, 1, 1);
		/* The session daemon enables the probe asynchronously. */
		for (i = 0; i < 500; i++) {
			if (lttng_ust_tracepoint_enabled(hvt_bench, ev32))
				break;
			usleep(10000);
		}
		if (i == 500) {
			printf("SKIP: the LTTng session never enabled "
			       "hvt_bench:ev32\n");
			return 77;
		}
		peer[0] = BENCH_PEER("lttng_ust_32B", "ns/event", run_lttng,
				     NULL, 1000000);
		peer[1] = BENCH_PEER("guest_write_32B_beside_lttng", "ns/event",
				     run_guest, NULL, 1000000);
		/* The pinned thread writes CPU 0's buffer; the direct writer
		 * owns CPU 1's, so the two never share one. */
		t_ok(hvt_area_cpu(ta.mem, ta.size, 1, &direct_cb));
		peer[2] = BENCH_PEER("core_direct_32B_beside_lttng", "ns/event",
				     run_direct, NULL, 1000000);
		np = 3;
	} else {
		peer[0] = BENCH_PEER("lttng_ust_disabled", "ns", run_lttng,
				     NULL, 50000000);
		peer[1] = BENCH_PEER("guest_disabled_beside_lttng", "ns",
				     run_guest, NULL, 50000000);
	}
	if (bench_run(peer, np))
		return 1;
	bench_print(peer, np);
	printf("ratio: %s / %s = %.2f\n", peer[0].name, peer[1].name,
	       peer[0].best / peer[1].best);
	if (np == 3)
		printf("ratio: %s / %s = %.2f (target <= 1.4)\n",
		       peer[1].name, peer[2].name,
		       peer[1].best / peer[2].best);
	th_area_free(&ta);
	return 0;
}
