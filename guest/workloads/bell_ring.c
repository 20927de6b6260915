// SPDX-License-Identifier: MIT
/*
 * bell_ring - a guest that rings the host's ivshmem doorbell without end,
 * as a broken or hostile writer could (docs/design.md, "Waking the
 * reader"): the host must stay cheap and keep reading.
 *
 *   bell_ring SECONDS [DEVICE]
 *
 * Maps DEVICE (default /dev/hvtrace-bell, the register BAR of the rig's
 * ivshmem-doorbell device) and stores the doorbell value to its register
 * as fast as it can for SECONDS.  Prints
 *
 *   bell_ring: rings=N seconds=S
 *
 * or "bell_ring: error: ..." and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/abi.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *dev = argc > 2 ? argv[2] : "/dev/hvtrace-bell";
	double secs = argc > 1 ? atof(argv[1]) : 0;
	volatile uint32_t *regs;
	uint64_t end, rings = 0;
	int fd;

	if (secs <= 0) {
		fprintf(stderr, "usage: bell_ring SECONDS [DEVICE]\n");
		return 2;
	}
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("bell_ring: error: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	regs = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (regs == MAP_FAILED) {
		printf("bell_ring: error: mmap %s: %s\n", dev, strerror(errno));
		return 1;
	}
	end = now_ns() + (uint64_t)(secs * 1e9);
	while (now_ns() < end) {
		regs[HVT_BELL_REG / 4] = HVT_BELL_VALUE;
		rings++;
	}
	printf("bell_ring: rings=%llu seconds=%.1f\n",
	       (unsigned long long)rings, secs);
	fflush(stdout);
	return 0;
}
