// SPDX-License-Identifier: MIT
/*
 * area_scribble - a misbehaving guest program: it maps the whole trace
 * area read-write and keeps overwriting it with random bytes (header,
 * control page, CPU metadata, descriptors, sub-buffers alike), as a buggy
 * or hostile guest could.  The host must treat all of it as hostile input:
 * count errors, skip what does not validate, and keep serving everyone
 * else.
 *
 *   area_scribble [--area PATH] [--offset OFF --size BYTES] [--seconds S]
 *                 [--seed N] [--chunk BYTES] [--full-every N]
 *
 * --offset and --size scribble over a window of PATH instead of all of it,
 * for files without a size: "--area /dev/mem --offset 0x10000000 --size
 * 2M" overwrites a guest kernel's own persistent trace ring when the boot
 * options put it in a memmap= reserved range (which /dev/mem may map).
 *
 * Each round fills a random range (up to --chunk bytes, default 64 KiB)
 * at a random offset; every Nth round (--full-every, default 64; 0:
 * never) fills the whole area.  Ends after S seconds (default 10) and
 * prints "area_scribble: N rounds, B bytes".
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fill [off, off + len) with random bytes, 8 at a time where aligned. */
static void scribble(volatile uint8_t *mem, size_t off, size_t len)
{
	size_t i = 0;

	for (; i < len && (off + i) % 8; i++)
		mem[off + i] = (uint8_t)rng();
	for (; i + 8 <= len; i += 8)
		*(volatile uint64_t *)(mem + off + i) = rng();
	for (; i < len; i++)
		mem[off + i] = (uint8_t)rng();
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"area", required_argument, NULL, 'a'},
		{"seconds", required_argument, NULL, 's'},
		{"seed", required_argument, NULL, 'S'},
		{"chunk", required_argument, NULL, 'c'},
		{"full-every", required_argument, NULL, 'f'},
		{"offset", required_argument, NULL, 'o'},
		{"size", required_argument, NULL, 'z'},
		{NULL, 0, NULL, 0},
	};
	const char *path = "/dev/hvtrace-area";
	double seconds = 10, end;
	size_t chunk = 65536, size, win_size = 0;
	off_t win_off = 0;
	char *unit;
	unsigned long long rounds = 0, bytes = 0, full_every = 64;
	struct stat st;
	uint8_t *mem;
	int opt, fd;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			path = optarg;
			break;
		case 's':
			seconds = atof(optarg);
			break;
		case 'S':
			rng_state = strtoull(optarg, NULL, 0) | 1;
			break;
		case 'c':
			chunk = strtoul(optarg, NULL, 0);
			break;
		case 'f':
			full_every = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			win_off = (off_t)strtoull(optarg, NULL, 0);
			break;
		case 'z':
			win_size = strtoul(optarg, &unit, 0);
			if (*unit == 'K')
				win_size <<= 10;
			else if (*unit == 'M')
				win_size <<= 20;
			break;
		default:
			fprintf(stderr, "usage: area_scribble [--area PATH] "
					"[--offset OFF --size BYTES] "
					"[--seconds S] [--seed N] "
					"[--chunk BYTES] [--full-every N]\n");
			return 2;
		}
	}
	if ((win_off | (off_t)win_size) & 4095) {
		fprintf(stderr, "area_scribble: --offset and --size must be "
				"multiples of 4096\n");
		return 2;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) ||
	    (!win_size && st.st_size < 4096)) {
		fprintf(stderr, "area_scribble: cannot open %s: %s\n", path,
			fd < 0 ? strerror(errno) : "too small");
		return 1;
	}
	size = win_size ? win_size : (size_t)st.st_size & ~(size_t)4095;
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, win_off);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "area_scribble: cannot map %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	if (!chunk || chunk > size)
		chunk = size;
	printf("area_scribble: scribbling over %zu bytes of %s for %.1f s\n",
	       size, path, seconds);
	fflush(stdout);
	end = now_s() + seconds;
	while (now_s() < end) {
		size_t off, len;

		if (full_every && rounds % full_every == 0) {
			off = 0;
			len = size;
		} else {
			len = 1 + (size_t)(rng() % chunk);
			off = (size_t)(rng() % (size - len + 1));
		}
		scribble(mem, off, len);
		rounds++;
		bytes += len;
		usleep(500);
	}
	printf("area_scribble: %llu rounds, %llu bytes\n", rounds, bytes);
	return 0;
}
