/* SPDX-License-Identifier: MIT */
/*
 * The plumbing probe of the QEMU guest rig: what hvt-probe (guest) writes
 * into the trace area and says on the control port, and what
 * hvt-probe-host (host) checks.
 *
 * Area layout (offsets from the start of the ivshmem BAR / the host's
 * /dev/shm file):
 *
 *   0x0000  struct hvt_probe_hdr (written by the guest, except host_nonce)
 *   0x1000  pattern, HVT_PROBE_PATTERN_LEN bytes: hvt_probe_byte(seed, i)
 *   end - 0x1000  one more pattern page (proves the whole BAR is mapped):
 *           byte i of it is hvt_probe_byte(~seed, i)
 *
 * Control port protocol: text lines ending in '\n', at most
 * HVT_PROBE_LINE_MAX bytes each.
 *
 *   guest: HELLO hvt-probe <version> area=<bytes> seed=<u64> count=<u64>
 *   host:  NONCE <hex u64>       after storing it at hdr.host_nonce
 *   guest: NONCE-OK <hex u64>    what it read back through its mapping
 *          (or NONCE-BAD <hex u64>)
 *   host:  ECHO <text>           any number of times
 *   guest: ECHO <text>           the same text
 *   host:  BYE
 *   guest: BYE                   and exits 0
 *
 * Below the layout: the few helpers both programs use (time, numbers,
 * mapping the area, splitting lines), kept here because each program is
 * built from its one source file.
 */
#ifndef HVT_PROBE_H
#define HVT_PROBE_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HVT_PROBE_MAGIC		"HVTPROBE"
#define HVT_PROBE_VERSION	1u
#define HVT_PROBE_PATTERN_OFF	4096u
#define HVT_PROBE_PATTERN_LEN	65536u
#define HVT_PROBE_PAGE		4096u
/* The smallest area the probe can use: header, pattern, last page. */
#define HVT_PROBE_MIN_AREA \
	(HVT_PROBE_PATTERN_OFF + HVT_PROBE_PATTERN_LEN + HVT_PROBE_PAGE)
#define HVT_PROBE_LINE_MAX	4096u

/* hdr.state */
#define HVT_PROBE_STATE_WRITING	1u
#define HVT_PROBE_STATE_DONE	2u

struct hvt_probe_hdr {
	char magic[8];		/* HVT_PROBE_MAGIC, no terminator */
	uint32_t version;	/* HVT_PROBE_VERSION */
	uint32_t state;		/* HVT_PROBE_STATE_* */
	uint64_t area_size;	/* BAR size as the guest sees it */
	uint64_t seed;		/* pattern seed */
	uint64_t counter;	/* incremented once per step, ends at count */
	uint64_t count;		/* steps the guest was asked for */
	uint64_t host_nonce;	/* written by the host, read back by the guest */
	uint64_t reserved;
};

_Static_assert(sizeof(struct hvt_probe_hdr) == 64, "probe header is 64 bytes");

/* Byte i of a pattern: cheap, position- and seed-dependent. */
static inline uint8_t hvt_probe_byte(uint64_t seed, uint64_t i)
{
	uint64_t x = (seed ^ (i * 0x9e3779b97f4a7c15ULL)) + i;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 32;
	return (uint8_t)x;
}

static inline int64_t hvt_probe_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A whole unsigned number (decimal, 0x hex or 0 octal); 0 or -EINVAL. */
static inline int hvt_probe_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* Where hvt_probe_area_map() failed, for the caller's message. */
enum hvt_probe_map_step {
	HVT_PROBE_MAP_OPEN,
	HVT_PROBE_MAP_STAT,
	HVT_PROBE_MAP_SMALL,	/* *size holds the file's size */
	HVT_PROBE_MAP_MMAP,
};

/*
 * Map the area file @path shared and read-write: 0, or -errno with the
 * failed step in *step (-ENOSPC for a file below HVT_PROBE_MIN_AREA).
 */
static inline int hvt_probe_area_map(const char *path, uint8_t **area,
				     uint64_t *size,
				     enum hvt_probe_map_step *step)
{
	struct stat st;
	void *base;
	int fd, err;

	*step = HVT_PROBE_MAP_OPEN;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*step = HVT_PROBE_MAP_STAT;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	*size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	*step = HVT_PROBE_MAP_SMALL;
	if (*size < HVT_PROBE_MIN_AREA) {
		err = -ENOSPC;
		goto out;
	}
	*step = HVT_PROBE_MAP_MMAP;
	base = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = base == MAP_FAILED ? -errno : 0;
	if (!err)
		*area = base;
out:
	close(fd);
	return err;
}

/*
 * Take the first complete line (without its '\n') out of @buf, which holds
 * *@len bytes received so far: 1 when one was taken, 0 when none is
 * complete yet, -EMSGSIZE when it does not fit @size bytes or @buf (of
 * @buf_size bytes) is full without an end of line.
 */
static inline int hvt_probe_line_take(char *buf, size_t *len, size_t buf_size,
				      char *line, size_t size)
{
	char *nl = memchr(buf, '\n', *len);
	size_t n;

	if (!nl)
		return *len == buf_size ? -EMSGSIZE : 0;
	n = (size_t)(nl - buf);
	if (n >= size)
		return -EMSGSIZE;
	memcpy(line, buf, n);
	line[n] = '\0';
	memmove(buf, nl + 1, *len - n - 1);
	*len -= n + 1;
	return 1;
}

#endif /* HVT_PROBE_H */
