// SPDX-License-Identifier: MIT
/*
 * The loopback writer library, in process, read through the mmap view:
 *
 *   - it refuses a file another live writer holds;
 *   - with --wait-enable semantics it writes nothing until the host
 *     enables its event, and the first event it then writes converts
 *     (through time-sync samples it answered) to a host time inside the
 *     bracket [enable, seen], within the model's error bound;
 *   - ids are consecutive per CPU from 0;
 *   - HVT_CMD_STOP from the host ends the run, and the area is then
 *     marked STOPPED.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>

#include "hvt_test.h"

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static char cur_path[64];

/* A failing check exits: do not leave the area behind. */
static void remove_area(void)
{
	if (cur_path[0])
		unlink(cur_path);
}

static void *run(void *arg)
{
	static int ret;

	ret = hvtrace_loopback_run(arg);
	return &ret;
}

static void one_clock(uint32_t clock_id)
{
	struct hvtrace_loopback_params p = {
		.nr_cpus = 2, .nr_subbufs = 64, .subbuf_size = 4096,
		.mode = HVT_MODE_CONSUME, .clock_id = clock_id,
		.rate = 2000, .pre_enable = false,
	};
	struct hvtrace_loopback *lb, *lb2;
	struct hvtrace_loopback_cpu_stats st;
	struct hvtrace_area_info info;
	struct hvtrace_ring *r[2];
	struct hvtrace_record rec;
	struct hvtrace_area *a;
	uint64_t t_enable, t_seen, host, err, next[2] = { 0, 0 };
	char path[64];
	pthread_t th;
	uint32_t state;
	int i, ret, *rc, got = 0, synced = 0;

	snprintf(path, sizeof(path), "/dev/shm/hvt-ring-lb-%d", getpid());
	snprintf(cur_path, sizeof(cur_path), "%s", path);
	unlink(path);
	p.path = path;
	t_ok(hvtrace_loopback_create(&p, &lb));
	t_eq(hvtrace_loopback_create(&p, &lb2), -EBUSY);
	t_assert(strstr(hvtrace_last_error(), "in use by a live writer"));
	t_eq(pthread_create(&th, NULL, run, lb), 0);

	t_ok(hvtrace_area_open(path, 0, 0, HVTRACE_OPEN_CONTROL, &a));
	t_ok(hvtrace_area_get_info(a, &info));
	t_equ(info.clock_id, clock_id);
	t_equ(info.writer_kind, HVT_WRITER_LOOPBACK);
	for (i = 0; i < 2; i++)
		t_ok(hvtrace_ring_open_area(a, i, &r[i]));
	/* The writer answers while it waits for its event. */
	for (i = 0; i < 8; i++)
		if (!hvtrace_area_sync(a, 200))
			synced++;
	t_assert(synced >= 4);
	usleep(20000);
	t_eq(hvtrace_ring_peek(r[0], &rec), 0);	/* nothing written yet */
	t_eq(hvtrace_ring_peek(r[1], &rec), 0);

	t_ok(hvtrace_area_set_tracing(a, true));
	t_enable = mono();
	t_ok(hvtrace_area_set_event(a, HVTRACE_EVENT_SELFTEST_BIT, true));
	for (i = 0; i < 20000 && got == 0; i++) {
		got = hvtrace_ring_peek(r[0], &rec);
		t_assert(got >= 0);
		if (!got)
			usleep(100);
	}
	t_seen = mono();
	t_eq(got, 1);
	host = hvtrace_area_to_host_ns(a, rec.ts, &err);
	t_equ(host, rec.host_ns);
	if (host + err < t_enable || host > t_seen + err)
		t_fail("first event at %llu, outside [%llu, %llu] +- %llu",
		       (unsigned long long)host, (unsigned long long)t_enable,
		       (unsigned long long)t_seen, (unsigned long long)err);

	/* A few hundred more on each CPU, in order. */
	while (next[0] < 200 || next[1] < 200) {
		for (i = 0; i < 2; i++) {
			while ((ret = hvtrace_ring_peek(r[i], &rec)) == 1) {
				uint64_t id;

				memcpy(&id, (const uint8_t *)rec.data + 8, 8);
				t_equ(id, next[i]);
				t_equ(rec.lost_before, 0);
				next[i]++;
				hvtrace_ring_consume(r[i]);
			}
			t_eq(ret, 0);
		}
		usleep(1000);
	}

	/* The host says stop: the run ends and the area says so. */
	t_ok(hvtrace_area_send_command(a, HVT_CMD_STOP));
	t_eq(pthread_join(th, (void **)&rc), 0);
	t_eq(*rc, 0);
	hvtrace_area_writer_state(a, &state, NULL);
	t_equ(state, HVT_STATE_STOPPED);
	t_ok(hvtrace_loopback_get_stats(lb, 0, &st));
	t_assert(st.syncs >= (uint64_t)synced);
	t_equ(st.dropped, 0);
	t_assert(st.written >= next[0]);
	t_assert(st.host_cpu == 0);

	for (i = 0; i < 2; i++)
		hvtrace_ring_close(r[i]);
	hvtrace_area_close(a);
	hvtrace_loopback_destroy(lb);
	/* Lock released: the file can be taken again. */
	t_ok(hvtrace_loopback_create(&p, &lb2));
	hvtrace_loopback_destroy(lb2);
	unlink(path);
}

int main(void)
{
	atexit(remove_area);
	one_clock(HVT_CLOCK_COUNTER);
	one_clock(HVT_CLOCK_MONO_NS);
	printf("ok: loopback writer: lock, enable, clock bracket, ids, stop\n");
	return 0;
}
