// SPDX-License-Identifier: MIT
/*
 * clock_truth - the guest half of the clock truth test (tests/e2e/
 * clock_truth.c): an event written the moment the host signals it through
 * shared memory, so that the host can bracket the event's time with its
 * own clock.
 *
 *   clock_truth [--area PATH] [--rounds N] [--wait-enable MS] [--garbage]
 *
 * Registers "hvt_truth u32 round" with the agent, waits for the host to
 * enable it, then maps the area's control page (PATH, default
 * /dev/hvtrace-area) read-only and spins on its cmd_seq: each time the
 * host bumps it (with HVT_CMD_NONE, which every writer ignores), writes
 * one hvt_truth record carrying the new cmd_seq, at once.  Ends after N
 * rounds (default 2000) or 60 s without a signal.
 *
 * --garbage plays a hostile guest besides: a thread maps the area's
 * header read-write and keeps answering the host's time-sync requests
 * with garbage clock values (wild ones and ones a few milliseconds off),
 * racing the agent's true answers; the host must reject them and keep
 * its model true.
 *
 * Lines on stdout: "clock_truth: enabled", "clock_truth: done rounds=N",
 * "clock_truth: error ..." (exit 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/abi.h>
#include <hvtrace/ring_buffer.h>

#include "hvtrace-client.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *garbage_area;

static void *garbage(void *arg)
{
	uint64_t x = 0x9e3779b97f4a7c15ull, req, clock;
	struct timespec ts;

	(void)arg;
	for (;;) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		clock = (uint64_t)ts.tv_sec * 1000000000ull +
			(uint64_t)ts.tv_nsec;
		/* A wild value, or the truth moved by up to +-8 ms. */
		clock = x & 1 ? x : clock + (x >> 40) - (1ull << 23);
		req = __atomic_load_n(
			&((const struct hvt_control *)((uint8_t *)garbage_area +
						       HVT_CONTROL_OFFSET))
				 ->sync_req,
			__ATOMIC_ACQUIRE);
		/* Over the agent's answer too: same seq, another clock. */
		hvt_area_sync_answer(garbage_area, req, clock);
		usleep(200);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "area", required_argument, NULL, 'a' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "wait-enable", required_argument, NULL, 'w' },
		{ "garbage", no_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	static struct hvtg_event ev = HVTG_EVENT_INIT;
	const char *area = "/dev/hvtrace-area";
	long rounds = 2000, wait_ms = 600000, done = 0, n;
	const struct hvt_control *ctrl;
	uint32_t seen, now;
	uint64_t deadline, spins = 0;
	struct hvtc *c;
	void *p;
	int opt, fd, ret, bad = 0;
	pthread_t th;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			area = optarg;
			break;
		case 'r':
			rounds = atol(optarg);
			break;
		case 'w':
			wait_ms = atol(optarg);
			break;
		case 'g':
			bad = 1;
			break;
		default:
			fprintf(stderr, "usage: clock_truth [--area PATH] "
					"[--rounds N] [--wait-enable MS]\n");
			return 2;
		}
	}
	ret = hvtc_open(NULL, &c);
	if (!ret)
		ret = hvtc_register(c, "hvt_truth u32 round", &ev);
	if (ret) {
		printf("clock_truth: error %s\n", hvtc_last_error());
		return 1;
	}
	fd = open(area, O_RDONLY | O_CLOEXEC);
	p = fd < 0 ? MAP_FAILED :
		     mmap(NULL, HVT_CONTROL_SIZE, PROT_READ, MAP_SHARED, fd,
			  (off_t)HVT_CONTROL_OFFSET);
	if (p == MAP_FAILED) {
		printf("clock_truth: error cannot map the control page of %s: "
		       "%s\n", area, strerror(errno));
		return 1;
	}
	ctrl = p;
	deadline = now_ms() + (uint64_t)wait_ms;
	while (!hvtg_enabled(&ev) && now_ms() < deadline)
		usleep(1000);
	if (!hvtg_enabled(&ev)) {
		printf("clock_truth: error hvt_truth was not enabled\n");
		return 1;
	}
	/*
	 * Spin on the last CPU, so that the agent, woken on another one,
	 * answers the host's time sync without waiting for a time slice.
	 */
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n > 1) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((int)n - 1, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	if (bad) {
		int wfd = open(area, O_RDWR | O_CLOEXEC);

		garbage_area = wfd < 0 ? MAP_FAILED :
			       mmap(NULL, HVT_CONTROL_OFFSET + 4096,
				    PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
		if (garbage_area == MAP_FAILED ||
		    pthread_create(&th, NULL, garbage, NULL)) {
			printf("clock_truth: error cannot start the garbage "
			       "answers: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("clock_truth: enabled\n");
	seen = __atomic_load_n(&ctrl->cmd_seq, __ATOMIC_ACQUIRE);
	deadline = now_ms() + 60000;
	while (done < rounds) {
		now = __atomic_load_n(&ctrl->cmd_seq, __ATOMIC_ACQUIRE);
		if (now == seen) {
			/* Spin: the host's bracket is what this costs. */
			if (!(++spins & 4095) && now_ms() > deadline)
				break;
			continue;
		}
		seen = now;
		if (hvtg_write(&ev, &now, sizeof(now)) == 0)
			done++;
		deadline = now_ms() + 60000;
	}
	printf("clock_truth: done rounds=%ld\n", done);
	hvtc_close(c);
	return done == rounds ? 0 : 1;
}
