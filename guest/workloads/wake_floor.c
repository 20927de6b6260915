// SPDX-License-Identifier: MIT
/*
 * wake_floor - how long this guest takes to wake one of its processes: the
 * floor under any doorbell that a guest process (the agent) must relay.
 *
 *   wake_floor COUNT [INTERVAL_MS]
 *
 * A sender process sends its CLOCK_MONOTONIC time in a datagram every
 * INTERVAL_MS (default 20, the pace of the e2e latency bench) to a
 * receiver asleep in poll(), as a writer rings the agent's doorbell
 * socket; the receiver takes the time it woke.  Neither is pinned, as
 * writers and the agent are not.  Prints
 *
 *   wake_floor: wakes=COUNT p50_us=X p99_us=Y max_us=Z
 *
 * or "wake_floor: error: ..." and exits 1.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void sender(int fd, unsigned long count, unsigned long interval_ms)
{
	struct timespec ts = {.tv_sec = (time_t)(interval_ms / 1000),
			      .tv_nsec = (long)(interval_ms % 1000) * 1000000};
	unsigned long i;
	uint64_t t;

	for (i = 0; i < count; i++) {
		nanosleep(&ts, NULL);
		t = now_ns();
		if (send(fd, &t, sizeof(t), 0) != sizeof(t))
			_exit(1);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	unsigned long count, interval_ms = 20, i;
	uint64_t *lat, t;
	int sv[2], status;
	char *end;
	pid_t pid;

	if (argc < 2 || argc > 3 ||
	    (count = strtoul(argv[1], &end, 10), *end || !count) ||
	    (argc == 3 && (interval_ms = strtoul(argv[2], &end, 10),
			   *end || !interval_ms))) {
		fprintf(stderr, "usage: wake_floor COUNT [INTERVAL_MS]\n");
		return 2;
	}
	lat = calloc(count, sizeof(*lat));
	if (!lat || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
		printf("wake_floor: error: %s\n", strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		printf("wake_floor: error: fork: %s\n", strerror(errno));
		return 1;
	}
	if (!pid) {
		close(sv[0]);
		sender(sv[1], count, interval_ms);
	}
	close(sv[1]);
	for (i = 0; i < count; i++) {
		struct pollfd pfd = {.fd = sv[0], .events = POLLIN};

		if (poll(&pfd, 1, -1) != 1 ||
		    recv(sv[0], &t, sizeof(t), 0) != sizeof(t)) {
			printf("wake_floor: error: the sender stopped after "
			       "%lu "
			       "wakes\n",
			       i);
			return 1;
		}
		lat[i] = now_ns() - t;
	}
	waitpid(pid, &status, 0);
	qsort(lat, count, sizeof(*lat), cmp_u64);
	printf("wake_floor: wakes=%lu p50_us=%.0f p99_us=%.0f max_us=%.0f\n",
	       count, lat[count / 2] / 1e3, lat[count * 99 / 100] / 1e3,
	       lat[count - 1] / 1e3);
	free(lat);
	return 0;
}
