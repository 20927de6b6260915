// SPDX-License-Identifier: MIT
/*
 * Recorder benchmark: hvtrace record of a pre-filled area (post-mortem)
 * into a trace.dat on tmpfs, with 1 and with 2 reader threads.
 *
 * The loopback writer fills an area of 8 CPU buffers of 4 MiB (selftest
 * events) in /dev/shm; then the same area is recorded read-only, rounds
 * of 1 and 2 threads taking turns, and the best round of each is kept:
 * from hvtrace_tracedat_record_create() to _finish(), so the page reads,
 * their validation, the packing, the writes into the file (into each
 * CPU's room: the writer has stopped) and the end all count.  Both files
 * must be the same byte for byte.
 *
 * Prints "BENCH <name> <value> <unit>" lines: MB/s of page data written
 * and events/s for each, and the 2-thread/1-thread ratio (the target is
 * >= 1.7x on two idle cores).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace-tracedat.h>
#include <hvtrace/ring_buffer.h>

#define NR_CPUS	   8u
#define NR_SUBBUFS 1024u   /* of 4 KiB: 4 MiB per CPU */
#define EVENTS	   200000u /* per CPU: the ring nearly full */
#define ROUNDS	   4

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static int fill(const char *path)
{
	struct hvtrace_loopback_params p = {
		.path = path,
		.nr_cpus = NR_CPUS,
		.nr_subbufs = NR_SUBBUFS,
		.subbuf_size = 4096,
		.mode = HVT_MODE_CONSUME,
		.clock_id = HVT_CLOCK_COUNTER,
		.events = EVENTS,
		.pre_enable = true,
	};
	struct hvtrace_loopback *lb;
	int ret;

	ret = hvtrace_loopback_create(&p, &lb);
	if (!ret)
		ret = hvtrace_loopback_run(lb);
	if (!ret)
		hvtrace_loopback_destroy(lb);
	return ret;
}

/* One recording: its time in *secs (of which *rd reading: up to
 * _stop(), the rest assembling the file; *cpu the CPU time of all
 * threads while reading), page bytes and events. */
static int record(const char *area, const char *out, unsigned int threads,
		  double *secs, double *rd, double *cpu, uint64_t *bytes,
		  uint64_t *events)
{
	struct hvtrace_tracedat_record_opts o = {
		.path = out,
		.flags = HVTRACE_TDAT_REC_NO_CONTROL,
	};
	struct hvtrace_tracedat_source_stats st;
	struct hvtrace_tracedat_record *r;
	double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	int ret;

	ret = hvtrace_tracedat_record_create(&o, &r);
	if (ret)
		return ret;
	ret = hvtrace_tracedat_record_add_area(r, area, NULL);
	if (ret >= 0)
		ret = hvtrace_tracedat_record_set_reader_threads(r, threads);
	if (!ret)
		ret = hvtrace_tracedat_record_start(r);
	if (!ret) {
		while ((ret = hvtrace_tracedat_record_poll(r, 0)) > 0)
			;
	}
	if (!ret)
		ret = hvtrace_tracedat_record_stop(r);
	if (!ret)
		ret = hvtrace_tracedat_record_source_stats(r, 0, &st);
	if (ret) {
		hvtrace_tracedat_record_abort(r);
		return ret;
	}
	*rd = now() - t0;
	*cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	ret = hvtrace_tracedat_record_finish(r);
	*secs = now() - t0;
	*bytes = st.bytes;
	*events = st.events;
	return ret;
}

static int same_file(const char *a, const char *b)
{
	static char ba[65536], bb[65536];
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	size_t na, nb;
	int same = fa && fb;

	while (same) {
		na = fread(ba, 1, sizeof(ba), fa);
		nb = fread(bb, 1, sizeof(bb), fb);
		if (na != nb || memcmp(ba, bb, na))
			same = 0;
		if (!na)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

int main(void)
{
	char area[64], out[2][80];
	double best[2] = {1e9, 1e9}, best_rd[2] = {1e9, 1e9}, secs, rd;
	double cpu_rd[2] = {0, 0}, cpu;
	uint64_t bytes = 0, events = 0, b, e;
	int ret = 0, round, i;

	snprintf(area, sizeof(area), "/dev/shm/hvt-recbench-%d", getpid());
	for (i = 0; i < 2; i++)
		snprintf(out[i], sizeof(out[i]),
			 "/dev/shm/hvt-recbench-%d-%dt.dat", getpid(), i + 1);
	ret = fill(area);
	if (ret) {
		fprintf(stderr, "record_bench: cannot fill %s: %s\n", area,
			hvtrace_last_error());
		unlink(area);
		return 1;
	}
	for (round = 0; round < ROUNDS && !ret; round++) {
		for (i = 0; i < 2 && !ret; i++) {
			/* A new file each time: no truncation timed. */
			unlink(out[i]);
			ret = record(area, out[i], (unsigned int)i + 1, &secs,
				     &rd, &cpu, &b, &e);
			if (ret)
				break;
			if (secs < best[i])
				best[i] = secs;
			if (rd < best_rd[i]) {
				best_rd[i] = rd;
				cpu_rd[i] = cpu;
			}
			bytes = b;
			events = e;
		}
	}
	if (ret) {
		fprintf(stderr, "record_bench: record failed (%d): %s\n", ret,
			hvtrace_last_error());
	} else if (!same_file(out[0], out[1])) {
		fprintf(stderr, "record_bench: the 1- and 2-thread files "
				"differ\n");
		ret = -EIO;
	} else {
		printf("recorded %llu events, %.1f MB of pages, from %u CPU "
		       "buffers; best of %d rounds\n",
		       (unsigned long long)events, (double)bytes / 1e6, NR_CPUS,
		       ROUNDS);
		for (i = 0; i < 2; i++) {
			printf("%d thread(s): best %.1f ms in all; best "
			       "reading and packing %.1f ms (%.1f MB/s, "
			       "%.1f ms CPU in all threads)\n",
			       i + 1, best[i] * 1e3, best_rd[i] * 1e3,
			       (double)bytes / 1e6 / best_rd[i],
			       cpu_rd[i] * 1e3);
			printf("BENCH record_prefilled_%dt %.1f MB/s\n", i + 1,
			       (double)bytes / 1e6 / best[i]);
			printf("BENCH record_prefilled_%dt_events %.0f "
			       "events/s\n",
			       i + 1, (double)events / best[i]);
		}
		printf("BENCH record_prefilled_2t_vs_1t %.2f x\n",
		       best[0] / best[1]);
	}
	unlink(area);
	unlink(out[0]);
	unlink(out[1]);
	return ret ? 1 : 0;
}
