/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-daemon, private: the clock models a feed received (dclock.c).
 */
#ifndef HVT_PROTO_DCLOCK_H
#define HVT_PROTO_DCLOCK_H

#include <stdint.h>

#include <hvtrace.h>
#include <hvtrace/proto.h>

/* At most this many remotes' models are kept: past it, a new remote's
 * takes the place of the one kept longest (whose next CLOCK, at its next
 * refit, brings it back; until then TO_HOST converts for it). */
#define HVT_DCLOCK_MAX HVT_PROTO_MAX_REMOTES

struct hvt_dclock {
	uint32_t remote;
	struct hvtrace_clock_map map;
};

struct hvt_dclocks {
	struct hvt_dclock *v;
	unsigned int nr, cap;
	unsigned int evict; /* the next place to reuse when full */
};

/* Keep CLOCK @m (decoded: the codec checked its fields) as its remote's
 * newest model.  0, -EINVAL (not a CLOCK), -ENOMEM. */
__attribute__((visibility("hidden"))) int
hvt_dclock_apply(struct hvt_dclocks *t, const struct hvt_msg *m);
/* The newest model of @remote, or NULL when none arrived. */
__attribute__((visibility("hidden"))) const struct hvtrace_clock_map *
hvt_dclock_find(const struct hvt_dclocks *t, uint32_t remote);
__attribute__((visibility("hidden"))) void
hvt_dclocks_free(struct hvt_dclocks *t);

#endif
