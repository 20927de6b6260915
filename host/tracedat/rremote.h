/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace trace.dat component: the source set of remotes of hvtraced,
 * shared by its two files -- record_remote.c (adding remotes, formats
 * and file ids, enabling, metadata) and record_rpages.c (the remotes'
 * rings into the packers, remote state, draining).
 */
#ifndef HVT_TDAT_RREMOTE_H
#define HVT_TDAT_RREMOTE_H

#include "tracedat-local.h"
#include <hvtrace-daemon.h>

#define DR_REFRESH_NS 200000000ULL /* remote state polls */
#define DR_FORMATS_NS 500000000ULL /* unknown ids: formats again */

struct dr_kring;

struct dr_cpu {
	struct hvt_tdat_rcpu rc;
	struct dr_src *src;
	struct dr_kring *k; /* a CPU of @src's guest kernel ring, or NULL */
	uint64_t pending_lost; /* carried to the next event (@k) */
	bool pending_unknown;
	/* A remote's CPU: its ring (hvtrace_daemon_ring_open()) and where
	 * the packer is on the ring's reader page. */
	struct hvtrace_ring *ring;
	bool have_page;
	uint32_t page_id;
	uint32_t pos; /* data bytes of it packed */
	uint64_t ts;  /* the running time there */
	uint8_t *hyp_page; /* a hypervisor's: the page, its pids named */
};

struct dr_ev { /* a guest kernel ring's record waiting for host time */
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
	uint64_t formats_at; /* last FORMATS fetch */
	bool finishing;	     /* writer stopped: drain, then done */
	bool finished;	     /* its rings closed */
	struct dr_changed *chg;
	unsigned int nr_chg;
	struct hvt_tdat_pids pids; /* host pids named (loopback) */
	struct hvtrace_tracedat_source_stats st;
	struct dr_kring *kr; /* its guest kernel's ring, or NULL */
};

/* The remotes of a recording (record.c sees it opaque). */
struct hvt_tdat_rset {
	struct hvtrace_tracedat_record *rec;
	struct hvtrace_tracedat_writer *w;
	struct hvtrace_daemon *dc;
	struct hvtrace_daemon_feed *feed;
	struct dr_src *src[HVT_TDAT_REC_MAX_SOURCES];
	unsigned int nr_src;
	/* the remotes whose guest kernel ring is recorded, in that order */
	struct dr_src *ksrc[HVT_TDAT_REC_MAX_SOURCES];
	unsigned int nr_ksrc;
	uint64_t next_refresh;
	struct hvtrace_daemon_events
		*evs; /* per remote, from place() to start() */
	/* the guest kernels' records waiting for their host times */
	struct dr_ev *batch;
	size_t nr_batch, cap_batch;
	uint8_t *bytes;
	size_t nr_bytes, cap_bytes;
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

/* record_rkring.c: the guest kernel rings of remotes. */
/* Append one record of CPU @c to the batch waiting for its host times. */
HVT_INTERNAL int hvt_rr_batch_add(struct hvt_tdat_rset *r, struct dr_cpu *c,
				  uint64_t ts, const uint8_t *p, uint32_t len,
				  uint64_t lost, bool lost_unknown);
/* Records the rings committed since the last call into the batch (at
 * most @max a CPU); how many, or -errno. */
HVT_INTERNAL int hvt_rk_pump(struct hvt_tdat_rset *r, unsigned int max);
/* A record of a ring's CPU, its stamp converted: its file id, pack it. */
HVT_INTERNAL int hvt_rk_put(struct hvt_tdat_rset *r, struct dr_cpu *c,
			    uint64_t ts, uint8_t *rec, uint32_t len);
/* The readers, past what the guest committed before. */
HVT_INTERNAL int hvt_rk_start(struct hvt_tdat_rset *r);
/* Errors counted, the last pages closed. */
HVT_INTERNAL int hvt_rk_drain(struct hvt_tdat_rset *r, int ret);
/* The clock model's error bound of the ring's remote. */
HVT_INTERNAL void hvt_rk_set_sync_err(struct dr_kring *k, uint64_t err_ns);
HVT_INTERNAL void hvt_rk_geometry(struct hvt_tdat_rset *r, uint32_t *sb,
				  uint32_t *cpus);
/* Formats (under their file ids) and the guest's comms. */
HVT_INTERNAL int hvt_rk_formats(struct hvt_tdat_rset *r);
HVT_INTERNAL int hvt_rk_cpustats(struct hvt_tdat_rset *r);
HVT_INTERNAL const struct hvtrace_tracedat_source_stats *
hvt_rk_stats(const struct hvt_tdat_rset *r, unsigned int i);
HVT_INTERNAL void hvt_rk_free(struct dr_kring *k);

/* record_rpages.c: the set's ops that read pages. */
HVT_INTERNAL struct dr_src *hvt_rr_src_of(struct hvt_tdat_rset *r, uint32_t id);
/* A ring per CPU of each remote (subscribed), before the kernel starts. */
HVT_INTERNAL int hvt_rr_open_rings(struct hvt_tdat_rset *r);
/* The rings of @s closed (unsubscribed), their trailing losses counted. */
HVT_INTERNAL void hvt_rr_close_rings(struct dr_src *s);
HVT_INTERNAL int hvt_rr_poll(struct hvt_tdat_rset *r, int kn,
			     unsigned int max_wait_ms);
HVT_INTERNAL void hvt_rr_stop(struct hvt_tdat_rset *r);
HVT_INTERNAL int hvt_rr_drain(struct hvt_tdat_rset *r, int ret);

#endif
