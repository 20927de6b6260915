// SPDX-License-Identifier: MIT
/*
 * ue_demo - a small request-serving program traced with user events.
 *
 *   ue_demo [--workers N] [--seconds S] [--rate R] [--wait-enable MS]
 *           [--socket PATH]
 *
 * Registers two user events through the agent (the host assigns their ids
 * and enable bits):
 *
 *   hvtrace_demo_request u32 worker; u64 req; u32 status; u32 latency_us;
 *                        __rel_loc char[] path
 *   hvtrace_demo_msg     __rel_loc char[] text
 *
 * then runs N worker threads (default 4) for S seconds (default 8), each
 * "serving" about R requests a second (default 5): it picks a path, takes
 * a random time to answer, and records the request.  Writes are skipped
 * (one load and a mask) while the host has an event disabled; with
 * --wait-enable the workers (named demo-wN, which the host learns as soon
 * as they start) wait up to MS for the host to enable
 * hvtrace_demo_request first.  Enable them on the host with
 *
 *   hvtrace events enable --remote NAME hvtrace_demo_request hvtrace_demo_msg
 *
 * and watch them with "hvtrace stream --remote NAME".  At the end it
 * prints "ue_demo: N requests, W events written, S skipped (disabled),
 * D dropped (ring full)".
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvtrace-client.h"

#define REQ_DEF                                                                \
	"hvtrace_demo_request u32 worker; u64 req; u32 status; "               \
	"u32 latency_us; __rel_loc char[] path"
#define MSG_DEF	    "hvtrace_demo_msg __rel_loc char[] text"
#define MAX_WORKERS 32

static struct hvtg_event ev_req = HVTG_EVENT_INIT;
static struct hvtg_event ev_msg = HVTG_EVENT_INIT;
static struct hvtc *conn;
static unsigned int nworkers = 4;
static double seconds = 8, rate = 5;
static long wait_ms;
static pthread_barrier_t named;
static _Atomic unsigned long long n_requests, n_written, n_skipped, n_dropped;

static const char *const paths[] = {
	"/",
	"/index.html",
	"/api/v1/users/17",
	"/api/v1/users/42/orders",
	"/static/app.js",
	"/static/style.css",
	"/api/v1/search?q=ftrace",
	"/healthz",
	"/api/v1/cart",
	"/favicon.ico",
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void count_write(int ret)
{
	if (!ret)
		atomic_fetch_add(&n_written, 1);
	else if (ret == -ENODATA)
		atomic_fetch_add(&n_skipped, 1);
	else if (ret == -ENOSPC)
		atomic_fetch_add(&n_dropped, 1);
}

/* hvtrace_demo_msg: a __rel_loc string is its only field. */
static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void msg(const char *fmt, ...)
{
	uint8_t buf[4 + 128];
	uint32_t loc;
	va_list ap;
	int n;

	if (!hvtg_enabled(&ev_msg)) {
		atomic_fetch_add(&n_skipped, 1);
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf((char *)buf + 4, 128, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > 127)
		n = 127;
	loc = (uint32_t)(n + 1) << 16; /* length, offset 0 after the loc */
	memcpy(buf, &loc, 4);
	count_write(hvtg_write(&ev_msg, buf, 4 + (size_t)n + 1));
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void *worker(void *arg)
{
	unsigned int w = (unsigned int)(uintptr_t)arg;
	uint64_t end, next, req = 0, mean_gap = (uint64_t)(1e9 / rate);
	uint32_t seed = 0x9e3779b9u * (w + 1);
	char name[16];

	snprintf(name, sizeof(name), "demo-w%u", w);
	pthread_setname_np(pthread_self(), name);
	hvtc_name_thread(conn);
	pthread_barrier_wait(&named);
	if (wait_ms > 0) {
		uint64_t deadline = now_ns() + (uint64_t)wait_ms * 1000000;

		while (!hvtg_enabled(&ev_req) && now_ns() < deadline)
			usleep(5000);
	}
	end = now_ns() + (uint64_t)(seconds * 1e9);
	next = now_ns();
	msg("worker %u serving", w);
	while (now_ns() < end) {
		const char *path =
			paths[rnd(&seed) % (sizeof(paths) / sizeof(paths[0]))];
		uint32_t r = rnd(&seed) % 100, latency_us, status, loc;
		uint8_t rec[24 + 64];
		size_t plen = strlen(path) + 1;
		struct timespec ts;

		status = r < 85 ? 200 : r < 95 ? 404 : 500;
		latency_us = 100 + rnd(&seed) % 20000;
		/* Serving it takes the latency... */
		ts.tv_sec = 0;
		ts.tv_nsec = (long)latency_us * 1000;
		nanosleep(&ts, NULL);
		/* ...then the record, if the host wants it. */
		if (hvtg_enabled(&ev_req)) {
			memcpy(rec, &w, 4);
			memcpy(rec + 4, &req, 8);
			memcpy(rec + 12, &status, 4);
			memcpy(rec + 16, &latency_us, 4);
			loc = (uint32_t)plen << 16;
			memcpy(rec + 20, &loc, 4);
			memcpy(rec + 24, path, plen);
			count_write(hvtg_write(&ev_req, rec, 24 + plen));
		} else {
			atomic_fetch_add(&n_skipped, 1);
		}
		req++;
		atomic_fetch_add(&n_requests, 1);
		/* The next request arrives 0.5..1.5 mean gaps later. */
		next += mean_gap / 2 + rnd(&seed) % (mean_gap + 1);
		if (next > now_ns()) {
			ts.tv_sec = (time_t)(next / 1000000000ull);
			ts.tv_nsec = (long)(next % 1000000000ull);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
					NULL);
		}
	}
	msg("worker %u done: %llu requests", w, (unsigned long long)req);
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"workers", required_argument, NULL, 'w'},
		{"seconds", required_argument, NULL, 's'},
		{"rate", required_argument, NULL, 'r'},
		{"wait-enable", required_argument, NULL, 'e'},
		{"socket", required_argument, NULL, 'S'},
		{NULL, 0, NULL, 0},
	};
	pthread_t th[MAX_WORKERS];
	const char *sock = NULL;
	uint64_t deadline;
	unsigned int i;
	int opt, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'w':
			nworkers = (unsigned int)atoi(optarg);
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'e':
			wait_ms = atol(optarg);
			break;
		case 'S':
			sock = optarg;
			break;
		default:
			fprintf(stderr, "usage: ue_demo [--workers N] "
					"[--seconds S] [--rate R] "
					"[--wait-enable MS] [--socket PATH]\n");
			return 2;
		}
	}
	if (!nworkers || nworkers > MAX_WORKERS || seconds <= 0 || rate <= 0) {
		fprintf(stderr,
			"ue_demo: need 1..%d workers, seconds > 0 and "
			"rate > 0\n",
			MAX_WORKERS);
		return 2;
	}
	deadline = now_ns() + 30000000000ull;
	while ((ret = hvtc_open(sock, &conn)) &&
	       (ret == -ENOENT || ret == -ECONNREFUSED) && now_ns() < deadline)
		usleep(50000);
	if (ret) {
		fprintf(stderr, "ue_demo: %s\n", hvtc_last_error());
		return 1;
	}
	if (hvtc_register(conn, REQ_DEF, &ev_req) ||
	    hvtc_register(conn, MSG_DEF, &ev_msg)) {
		fprintf(stderr, "ue_demo: %s\n", hvtc_last_error());
		return 1;
	}
	printf("ue_demo: registered hvtrace_demo_request (id %d) and "
	       "hvtrace_demo_msg (id %d)\n",
	       hvtc_event_id(conn, &ev_req), hvtc_event_id(conn, &ev_msg));
	printf("ue_demo: %u workers, %.1f s, about %.0f requests/s each%s\n",
	       nworkers, seconds, rate,
	       wait_ms > 0 ? ", once the host enables hvtrace_demo_request"
			   : "");
	pthread_barrier_init(&named, NULL, nworkers + 1);
	for (i = 0; i < nworkers; i++)
		if (pthread_create(&th[i], NULL, worker,
				   (void *)(uintptr_t)i)) {
			fprintf(stderr, "ue_demo: cannot start worker %u\n", i);
			return 1;
		}
	pthread_barrier_wait(&named);
	printf("ue_demo: workers named\n");
	for (i = 0; i < nworkers; i++)
		pthread_join(th[i], NULL);
	printf("ue_demo: %llu requests, %llu events written, %llu skipped "
	       "(disabled), %llu dropped (ring full)\n",
	       (unsigned long long)n_requests, (unsigned long long)n_written,
	       (unsigned long long)n_skipped, (unsigned long long)n_dropped);
	hvtc_close(conn);
	return 0;
}
