/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-daemon's private header (never installed): what the feed
 * (dfeed.c) offers the rest of the library, the remote rings (dring.c).
 */
#ifndef HVT_PROTO_DFEED_H
#define HVT_PROTO_DFEED_H

#include <stdint.h>

#include <hvtrace-internal.h>
#include <hvtrace-daemon.h>

/*
 * Routing: pages of a routed (remote, cpu) go to a queue of their own, out
 * of hvt_dfeed_take(), never out of hvtrace_daemon_feed_next(), so a
 * reader of one CPU never takes (or has to keep) another CPU's pages.
 */
HVT_INTERNAL int hvt_dfeed_route(struct hvtrace_daemon_feed *f,
				 uint32_t remote, uint32_t cpu);
/* Stop routing (remote, cpu); its queued pages are freed. */
HVT_INTERNAL void hvt_dfeed_unroute(struct hvtrace_daemon_feed *f,
				    uint32_t remote, uint32_t cpu);
/*
 * The next page of a routed (remote, cpu), without waiting: what the
 * client or the socket holds now is received (and routed) first.
 * Return: 1 with *page (the caller frees it), 0, or a negative errno.
 */
HVT_INTERNAL int hvt_dfeed_take(struct hvtrace_daemon_feed *f, uint32_t remote,
				uint32_t cpu, struct hvtrace_daemon_page **page);
/* REMOTES on the feed's connection (pages meanwhile are kept): @remote's
 * record; -ENOENT when it has none. */
HVT_INTERNAL int hvt_dfeed_remote(struct hvtrace_daemon_feed *f,
				  uint32_t remote, struct hvt_remote_rec *rec);
/* UNSUBSCRIBE on the feed's connection. */
HVT_INTERNAL int hvt_dfeed_unsubscribe(struct hvtrace_daemon_feed *f,
				       uint32_t sub);
/* @ts of @remote on the host's clock with the model the feed received (a
 * TO_HOST request only where hvtraced sends none); as
 * hvtrace_daemon_feed_ts_to_host(). */
HVT_INTERNAL int hvt_dfeed_map(struct hvtrace_daemon_feed *f, uint32_t remote,
			       uint64_t ts, uint64_t *ns, uint64_t *err_ns);
/* CPU @cpu of @remote through the feed as a ring of sub-buffers of
 * @subbuf_size bytes, its times mapped by the feed's model (dring.c): any
 * CPU hvtraced serves, a guest kernel's beside the listed ones too, whose
 * records say CPU @ring_cpu (the guest kernel's own number). */
HVT_INTERNAL int hvt_dring_open(struct hvtrace_daemon_feed *f, uint32_t remote,
				uint32_t cpu, int ring_cpu,
				uint32_t subbuf_size,
				struct hvtrace_ring **out);
/* The loss @lost reported beside sub-buffer @page (@len bytes) that its
 * header does not mark: 0 when the header has RB_MISSED_EVENTS (the core
 * reads the loss there, so it must not count twice), else @lost. */
HVT_INTERNAL uint64_t hvt_page_unmarked_lost(const uint8_t *page, uint32_t len,
					     uint64_t lost);

#endif /* HVT_PROTO_DFEED_H */
