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
 */
#ifndef HVT_PROBE_H
#define HVT_PROBE_H

#include <stdint.h>

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

#endif /* HVT_PROBE_H */
