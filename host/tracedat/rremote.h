/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace trace.dat component: the source set of remotes of hvtraced,
 * shared by its two files -- record_remote.c (adding remotes, formats
 * and file ids, enabling, metadata) and record_rpages.c (the page feed
 * into the packers: batches, host times, remote state, draining).
 */
#ifndef HVT_TDAT_RREMOTE_H
#define HVT_TDAT_RREMOTE_H

#include "tracedat-local.h"
#include <hvtrace-daemon.h>

#define DR_REFRESH_NS 200000000ULL /* remote state polls */
#define DR_FORMATS_NS 500000000ULL /* unknown ids: formats again */

struct dr_cpu {
	struct hvt_tdat_rcpu rc;
	struct dr_src *src;
	uint64_t pending_lost; /* carried to the next event */
	bool pending_unknown;
};

struct dr_ev { /* one record waiting for host time */
	struct dr_cpu *c;
	uint64_t ts;
	uint64_t lost;
	bool lost_unknown;
	uint32_t len;
	uint32_t off; /* in the batch's byte buffer */
};

struct dr_changed {
	char name[330];
	bool was;
};

struct dr_src {
	struct hvt_tdat_rset *r;
	struct hvt_remote_rec rec;
	char name[64];
	int buffer;
	struct dr_cpu *cpu;
	/* remote id -> file id; the remote ids that have a format */
	uint16_t *idmap;
	uint8_t *known;
	struct hvtrace_catalog cat; /* formats with their file ids */
	uint64_t sub_dropped;
	uint64_t formats_at; /* last FORMATS fetch */
	bool finishing;	     /* writer stopped: drain, then done */
	bool finished;
	struct dr_changed *chg;
	unsigned int nr_chg;
	struct hvt_tdat_pids pids; /* host pids named (loopback) */
	struct hvtrace_tracedat_source_stats st;
};

/* The remotes of a recording (record.c sees it opaque). */
struct hvt_tdat_rset {
	struct hvtrace_tracedat_record *rec;
	struct hvtrace_tracedat_writer *w;
	struct hvtrace_daemon *dc;
	struct hvtrace_daemon_feed *feed;
	struct dr_src *src[HVT_TDAT_REC_MAX_SOURCES];
	unsigned int nr_src;
	uint64_t next_refresh;
	struct hvtrace_daemon_events
		*evs; /* per remote, from place() to start() */
	/* the batch waiting for TO_HOST */
	struct dr_ev *batch;
	size_t nr_batch, cap_batch;
	uint8_t *bytes;
	size_t nr_bytes, cap_bytes;
	uint32_t cur_cpu;
	struct dr_src *cur_src;
	uint64_t cur_lost;
	bool cur_unknown;
};

/* record_remote.c */
/* FORMATS of @s (with its writer kind's built-ins) into @evs, and the
 * new ones placed under file ids. */
HVT_INTERNAL int hvt_rr_fetch_formats(struct hvt_tdat_rset *r, struct dr_src *s,
				      struct hvtrace_daemon_events *evs);
HVT_INTERNAL int hvt_rr_place_formats(struct hvt_tdat_rset *r, struct dr_src *s,
				      const struct hvtrace_daemon_events *evs);
/* Put back the enable states the recording changed. */
HVT_INTERNAL void hvt_rr_restore(struct hvt_tdat_rset *r);

/* record_rpages.c: the set's ops that read pages. */
HVT_INTERNAL struct dr_src *hvt_rr_src_of(struct hvt_tdat_rset *r, uint32_t id);
HVT_INTERNAL int hvt_rr_poll(struct hvt_tdat_rset *r, int kn,
			     unsigned int max_wait_ms);
HVT_INTERNAL void hvt_rr_stop(struct hvt_tdat_rset *r);
HVT_INTERNAL int hvt_rr_drain(struct hvt_tdat_rset *r, int ret);

#endif
