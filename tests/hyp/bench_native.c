// SPDX-License-Identifier: MIT
/*
 * hvt-hyp-bench-native - the EL2 writer benchmark's native twin.
 *
 * Formats a one-CPU area in memory with the geometry the EL2 image uses
 * (16 MiB area, the configured sub-buffer size, overwrite mode), enables
 * every event, and times N host_hcall events through the same loop and
 * core as the EL2 image (bench_native_loop.c), then N disabled calls.
 * Prints a line in the EL2 image's format:
 *
 *   BENCH-NATIVE events=N write_ps=P disabled_ps=P failed=N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hvtrace/config.h>
#include <hvtrace/ring_buffer.h>
#include <hvtrace/hyp_events.h>
#include <hvtrace/hyp_layout.h>

extern struct hvt_rb_cpu *bench_native_cb;
uint64_t bench_native_run(uint64_t n);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct hvt_area_params p;
	struct hvt_control *ctrl;
	struct hvt_rb_cpu cb;
	uint64_t n = 2000000, t0, t1, t2, fails;
	void *area;
	int ret;

	if (argc > 1) {
		char *end;

		n = strtoull(argv[1], &end, 0);
		if (*end || !n) {
			fprintf(stderr, "usage: %s [EVENTS]\n", argv[0]);
			return 2;
		}
	}
	area = aligned_alloc(4096, HVT_HYP_AREA_SIZE);
	if (!area) {
		fprintf(stderr, "hvt-hyp-bench-native: out of memory\n");
		return 1;
	}
	memset(area, 0, HVT_HYP_AREA_SIZE);
	memset(&p, 0, sizeof(p));
	p.area_size = HVT_HYP_AREA_SIZE;
	p.nr_cpus = 1;
	p.subbuf_size = CONFIG_HVT_SUBBUF_SIZE;
	p.mode = HVT_MODE_OVERWRITE;
	p.writer_kind = HVT_WRITER_HYP;
	p.clock_id = HVT_CLOCK_COUNTER;
	p.clock_freq_hz = 1000000000ULL;
	p.clock_mult = 1;
	p.name = "bench-native";
	ret = hvt_area_format(area, &p);
	if (!ret)
		ret = hvt_area_cpu(area, HVT_HYP_AREA_SIZE, 0, &cb);
	if (ret) {
		fprintf(stderr, "hvt-hyp-bench-native: cannot format the area (%d)\n",
			ret);
		return 1;
	}
	ctrl = (struct hvt_control *)((char *)area + HVT_CONTROL_OFFSET);
	ctrl->enable[0] = HVT_HYP_ENABLE_MASK;
	bench_native_cb = &cb;

	bench_native_run(1000);	/* warm up */
	t0 = now_ns();
	fails = bench_native_run(n);
	t1 = now_ns();
	ctrl->enable[0] = 0;
	bench_native_run(n);
	t2 = now_ns();
	printf("BENCH-NATIVE events=%llu write_ps=%llu disabled_ps=%llu failed=%llu\n",
	       (unsigned long long)n,
	       (unsigned long long)((t1 - t0) * 1000 / n),
	       (unsigned long long)((t2 - t1) * 1000 / n),
	       (unsigned long long)fails);
	free(area);
	return fails ? 1 : 0;
}
