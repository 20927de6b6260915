// SPDX-License-Identifier: MIT
/*
 * Writer core, direct path (single writer per CPU buffer), against its
 * peers measured in the same run (see bench.h for how):
 *
 *   core_direct_<N>B       hvt_rb_write() with a fresh CPU-counter
 *                          timestamp per event
 *   floor_<N>B             one counter read plus a memcpy() of the same
 *                          record (event header, common fields, payload)
 *                          into a ring: the least any writer must do
 *   trace_marker_raw_<N>B  write() of the same payload to
 *                          trace_marker_raw of a tracefs instance of our
 *                          own (the kernel ring buffer)
 *
 * for 8-, 32- and 128-byte payloads, single thread, pinned, hot cache.
 */
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "../stress/guest_harness.h"
#include "bench.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

#define TRACEFS	"/sys/kernel/tracing"
#define INST	TRACEFS "/instances/hvtrace-bench"

static uint8_t payload[256];

struct sz_arg {
	uint32_t len;
	struct hvt_rb_cpu *cb;
	int fd;
};

static int run_direct(void *p, long n)
{
	struct sz_arg *a = p;
	struct hvt_common_fields c = { 1, 0, 0, 1234 };
	struct hvt_iovec iov = { payload, a->len };
	long i;

	for (i = 0; i < n; i++)
		hvt_rb_write(a->cb, hvtg_counter_read(), &c, &iov, 1);
	return 0;
}

/* The direct write followed by the armed-wakeup check (nobody armed):
 * what a writer with a doorbell pays for it (shared/ring_wake.c). */
static int run_direct_wake(void *p, long n)
{
	struct sz_arg *a = p;
	struct hvt_common_fields c = { 1, 0, 0, 1234 };
	struct hvt_iovec iov = { payload, a->len };
	long i, rings = 0;

	for (i = 0; i < n; i++) {
		hvt_rb_write(a->cb, hvtg_counter_read(), &c, &iov, 1);
		rings += hvt_rb_wake_due(a->cb);
	}
	return rings ? -1 : 0;
}

static uint8_t floor_ring[1 << 20];

static int run_floor(void *p, long n)
{
	struct sz_arg *a = p;
	struct hvt_common_fields c = { 1, 0, 0, 1234 };
	uint32_t reclen = 4 + 8 + a->len;
	static uint32_t pos;
	static uint64_t last;
	uint8_t rec[4 + 8 + 256];
	long i;

	memcpy(rec + 4, &c, 8);
	memcpy(rec + 12, payload, a->len);
	for (i = 0; i < n; i++) {
		uint64_t ts = hvtg_counter_read();
		uint32_t hdr = (uint32_t)((ts - last) << 5) | (reclen / 4);

		last = ts;
		memcpy(rec, &hdr, 4);
		memcpy(floor_ring + pos, rec, reclen);
		pos += reclen;
		if (pos > sizeof(floor_ring) - sizeof(rec))
			pos = 0;
		/* Keep every store. */
		__asm__ __volatile__("" : : "r"(floor_ring) : "memory");
	}
	return 0;
}

static int run_marker(void *p, long n)
{
	struct sz_arg *a = p;
	uint8_t buf[4 + 256];
	long i;

	memset(buf, 0, 4);	/* the raw marker's id */
	memcpy(buf + 4, payload, a->len);
	for (i = 0; i < n; i++)
		if (write(a->fd, buf, 4 + a->len) != (ssize_t)(4 + a->len))
			return -1;
	return 0;
}

/* trace_marker_raw of a tracefs instance of our own, or -1 with a note. */
static int marker_open(void)
{
	struct stat st;
	int fd;

	if (stat(TRACEFS "/instances", &st) &&
	    mount("nodev", TRACEFS, "tracefs", 0, NULL)) {
		printf("note: tracefs is not mounted at %s and cannot be "
		       "mounted (%s): trace_marker_raw peer skipped\n",
		       TRACEFS, strerror(errno));
		return -1;
	}
	if (mkdir(INST, 0755) && errno != EEXIST) {
		printf("note: cannot create %s (%s): trace_marker_raw peer "
		       "skipped\n",
		       INST, strerror(errno));
		return -1;
	}
	fd = open(INST "/trace_marker_raw", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("note: %s/trace_marker_raw is not writable (%s): peer "
		       "skipped\n",
		       INST, strerror(errno));
		rmdir(INST);
	}
	return fd;
}

int main(void)
{
	static const uint32_t sizes[3] = { 8, 32, 128 };
	static char names[9][48];
	struct hvt_area_params p = { 0 };
	struct bench_peer peer[10];
	struct sz_arg arg[3];
	struct hvt_rb_cpu cb;
	void *area;
	int i, fd;

	if (th_pin(0))
		printf("note: cannot pin to CPU 0\n");
	for (i = 0; i < (int)sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	p.nr_cpus = 1;
	p.nr_subbufs = 64;
	p.subbuf_size = 4096;
	p.mode = HVT_MODE_OVERWRITE;
	p.writer_kind = HVT_WRITER_LOOPBACK;
	p.clock_id = HVT_CLOCK_COUNTER;
	p.clock_freq_hz = 1000000000;
	p.clock_mult = 1;
	p.area_size = hvt_area_size(1, 64, 4096);
	if (posix_memalign(&area, 4096, p.area_size))
		return 1;
	memset(area, 0, p.area_size);
	if (hvt_area_format(area, &p) ||
	    hvt_area_cpu(area, p.area_size, 0, &cb))
		return 1;
	fd = marker_open();

	memset(peer, 0, sizeof(peer));
	for (i = 0; i < 3; i++) {
		arg[i].len = sizes[i];
		arg[i].cb = &cb;
		arg[i].fd = fd;
		snprintf(names[3 * i], 48, "core_direct_%uB", sizes[i]);
		snprintf(names[3 * i + 1], 48, "floor_clock_memcpy_%uB",
			 sizes[i]);
		snprintf(names[3 * i + 2], 48, "trace_marker_raw_%uB",
			 sizes[i]);
		peer[3 * i] = BENCH_PEER(names[3 * i], "ns/event", run_direct,
					 &arg[i], 1000000);
		peer[3 * i + 1] = BENCH_PEER(names[3 * i + 1], "ns/event",
					     run_floor, &arg[i], 1000000);
		peer[3 * i + 2] = BENCH_PEER(names[3 * i + 2], "ns/event",
					     run_marker, &arg[i], 50000);
		peer[3 * i + 2].skip = fd < 0;
	}
	peer[9] = BENCH_PEER("core_direct_32B_wake_check", "ns/event",
			     run_direct_wake, &arg[1], 1000000);
	if (bench_run(peer, 10))
		return 1;
	if (fd >= 0) {
		close(fd);
		rmdir(INST);
	}
	bench_print(peer, 10);
	for (i = 0; i < 3; i++) {
		printf("ratio %3uB: core_direct / floor = %.2f", sizes[i],
		       peer[3 * i].best / peer[3 * i + 1].best);
		if (!peer[3 * i + 2].skip)
			printf(", trace_marker_raw / core_direct = %.1f",
			       peer[3 * i + 2].best / peer[3 * i].best);
		printf("\n");
	}
	printf("armed-wakeup check, nobody armed: core_direct_32B_wake_check "
	       "/ core_direct_32B = %.2f\n",
	       peer[9].best / peer[3].best);
	printf("target core_direct_32B <= 25 ns/event: %s\n",
	       peer[3].best <= 25.0 ? "met" : "not met");
	free(area);
	return 0;
}

#else
int main(void)
{
	printf("SKIP: the guest library (its clock helpers) is not "
	       "configured\n");
	return 77;
}
#endif
