/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace internals shared by the files of host/lib and the other host
 * components compiled into the library (host/userevents, host/hypevents).
 * The core's own: the libraries above it see host/lib/internal only
 * (<hvtrace-internal.h>), never this header or host/lib's others.
 */
#ifndef HVT_HVTRACE_LOCAL_H
#define HVT_HVTRACE_LOCAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <hvtrace.h>
#include <hvtrace/abi.h>

/* What the libraries above the core call in it (HVT_INTERNAL,
 * HVT_LIBPRIVATE, hvt_err(), the clock conversion, the packer's page
 * entry): declared there, for them and for the core alike. */
#include <hvtrace-internal.h>

/* --- SIGBUS guard (guard.c) -------------------------------------------- */

#include <setjmp.h>

struct hvt_guard {
	sigjmp_buf env;
	const void *lo, *hi;
	struct hvt_guard *prev;
};

extern __thread struct hvt_guard *hvt_cur_guard HVT_INTERNAL;

/* Install the process-wide SIGBUS handler (once). */
HVT_INTERNAL void hvt_guard_init(void);
/* Whether the handler was installed (not turned off by the environment). */
HVT_INTERNAL bool hvt_guard_armed(void);

/*
 * hvt_guard_enter(g, lo, len) evaluates to 0 when entered, and to non-zero
 * again if a SIGBUS hit [lo, lo + len) before hvt_guard_leave(g): the
 * caller then returns an error.  A macro, because sigsetjmp() must run in
 * the frame that stays alive.
 */
#define hvt_guard_enter(g, base, len)                                         \
	((g)->lo = (base), (g)->hi = (const char *)(base) + (len),            \
	 (g)->prev = hvt_cur_guard, hvt_cur_guard = (g),                      \
	 sigsetjmp((g)->env, 0))

static inline void hvt_guard_leave(struct hvt_guard *g)
{
	hvt_cur_guard = g->prev;
}

/* --- clock model (clock.c) --------------------------------------------- */

#define HVT_CLOCK_SAMPLES 256

struct hvt_clock_sample {
	uint64_t host_send;
	uint64_t writer;
	uint64_t host_recv;
};

/*
 * Maps writer timestamps to host CLOCK_MONOTONIC ns:
 *   host = base_host + (writer - base_writer) * rate
 * within err_ns + rate_err * |writer - base_writer| + a drift term
 * (see clock.c: rate and offset from the intersection of what every
 * sample's bracket allows).
 */
struct hvt_clock_model {
	uint32_t clock_id;
	uint64_t freq_hz;
	double rate;			/* ns per writer tick */
	uint64_t rate_int;		/* the rate as conversions use it: */
	uint64_t rate_frac;		/* rate_int + rate_frac / 2^64 */
	double nominal_rate;
	uint64_t base_writer;
	uint64_t base_host;
	uint64_t err_ns;		/* error bound at base_writer */
	double rate_err;		/* bound of the rate's error */
	unsigned int used;		/* newest samples the fit uses */
	uint64_t refits;		/* windows cut: samples that misfit */
	bool synced;
	unsigned int nr;		/* samples kept (ring) */
	unsigned int next;
	struct hvt_clock_sample s[HVT_CLOCK_SAMPLES];
};

HVT_INTERNAL void hvt_clock_init(struct hvt_clock_model *m, uint32_t clock_id,
				 uint64_t freq_hz, uint32_t mult,
				 uint32_t shift);
HVT_INTERNAL void hvt_clock_add(struct hvt_clock_model *m,
				const struct hvt_clock_sample *s);
/* The model as hvtrace_clock_map_to_host() applies it. */
HVT_INTERNAL void hvt_clock_map_get(const struct hvt_clock_model *m,
				    struct hvtrace_clock_map *out);
HVT_INTERNAL uint64_t hvt_clock_to_host(const struct hvt_clock_model *m,
					uint64_t ts, uint64_t *err_ns);

/* The model's conversion now (struct hvt_clock_affine). */
static inline void hvt_clock_affine_get(const struct hvt_clock_model *m,
					struct hvt_clock_affine *a)
{
	a->identity = m->clock_id == HVT_CLOCK_HOST_NS;
	a->synced = m->synced;
	a->rate_int = m->rate_int;
	a->rate_frac = m->rate_frac;
	a->base_writer = m->base_writer;
	a->base_host = m->base_host;
}

/*
 * Back off while polling shared memory: spin briefly (a writer on another
 * CPU usually answers within microseconds), then sleep so a poll never
 * starves a guest's vCPU threads on a small host.
 */
HVT_INTERNAL void hvt_wait_a_little(unsigned int *spins);

/* --- per-CPU reader (reader.c) ----------------------------------------- */

struct HVT_CACHELINE_ALIGNED hvt_rd_cpu {
	const struct hvt_cpu_meta *meta;	/* read-only mapping */
	const uint8_t *pages;
	uint32_t cpu;
	uint32_t nr_subbufs;
	uint32_t subbuf_size;
	uint32_t data_size;
	uint32_t mode;

	uint32_t seq;		/* sub-buffer being read */
	uint32_t last_start_seq;	/* last page whose start was accounted */
	uint32_t oldest_hint;	/* oldest page the counters last found */
	uint32_t pos;		/* data bytes of it already returned */
	uint64_t pos_ts;	/* running timestamp at pos */
	bool started;		/* tally set from seq's descriptor */
	bool resync;		/* next page start sets the tally, no loss */
	bool discard_resync;	/* ... and counts the jump as discarded */
	bool gone;		/* section cut off the file */
	bool gap_malformed;	/* skipped a malformed page since last start */
	bool gap_from_start;	/* first page: all before it is a gap */
	uint32_t bad_seq;	/* tail page found malformed */
	bool bad_valid;
	uint64_t last_bad_word;

	/* accounting: events before the current page */
	uint64_t base_e, base_l;	/* at attach */
	uint64_t tally_e, tally_l;	/* accounted entries / drops */
	uint64_t tally_u;		/* accounted meta->unplaced */
	uint64_t read, overrun, dropped, skipped, discarded;
	uint64_t unplaced;	/* reported (also counted in dropped) */
	uint64_t bytes, errors;
	uint64_t pending_lost;	/* to report with the next page */
	uint64_t last_ts;

	uint32_t wake_gen;	/* last wakeup generation armed (wake.c) */
	uint32_t wake_at;	/* and its commit position */

	uint32_t reset_req;	/* last reset generation posted */
	uint32_t reset_done;	/* last reset generation served */

	uint8_t *copy;		/* private page copy */

	/* HVTRACE_OPEN_POST_LATER: the position the last read reached,
	 * kept for the owner to post (hvtrace_cpu_post_pos()). */
	struct hvtrace_read_pos held_pos;
	bool has_pos;
};

struct hvtrace_area;

HVT_INTERNAL int hvt_rd_init(struct hvtrace_area *a, struct hvt_rd_cpu *c,
			     uint32_t cpu);
HVT_INTERNAL void hvt_rd_fini(struct hvt_rd_cpu *c);

/* --- areas (area.c) ----------------------------------------------------- */

struct hvtrace_area {
	int fd;
	unsigned int flags;
	char path[256];
	uint64_t offset;		/* area start in the file */
	uint64_t size;			/* bytes mapped */
	const uint8_t *ro;		/* whole area, PROT_READ */
	struct hvt_control *ctrl;	/* control page, RW (owner) or NULL */
	struct hvt_area_header hdr;	/* validated snapshot */

	/* The owner's own record of what it asked for: never read back
	 * from the shared page, which a guest can scribble on. */
	bool tracing_on;
	uint64_t enable[HVT_ABI_MAX_EVENTS / 64];
	uint64_t sync_req;
	uint32_t cmd_seq;
	uint32_t clock_seq;

	struct hvt_clock_model clock;
	struct hvt_rd_cpu *cpus;

	/* Ownership (owner.c): the descriptor holding the owner lock (-1:
	 * not an owner), and this process's list of owning handles. */
	int lock_fd;
	dev_t owner_dev;
	ino_t owner_ino;
	struct hvtrace_area *owner_next;
};

HVT_INTERNAL const struct hvt_cpu_meta *
hvt_area_cpu_meta(const struct hvtrace_area *a, uint32_t cpu);
HVT_INTERNAL const uint8_t *hvt_area_cpu_pages(const struct hvtrace_area *a,
					       uint32_t cpu);
/* Take the area's owner lock, or fail with -EBUSY naming the holder
 * (owner.c); drop it on close. */
HVT_INTERNAL int hvt_area_owner_take(struct hvtrace_area *a);
HVT_INTERNAL void hvt_area_owner_drop(struct hvtrace_area *a);
/* Post consumer progress for @cpu (owner only; release). */
/*
 * Post the owner's read position for @cpu (struct hvt_ctrl_pos): page
 * @seq, @pos data bytes of it returned, @accounted events read or lost up
 * to there, @unplaced unplaced events reported.  Owner only.
 */
HVT_INTERNAL void hvt_area_publish_pos(struct hvtrace_area *a, uint32_t cpu,
				       uint32_t seq, uint32_t pos,
				       uint64_t accounted, uint64_t unplaced);
HVT_INTERNAL void hvt_area_publish_consumer(struct hvtrace_area *a,
					    uint32_t cpu, uint32_t seq);

#endif /* HVT_HVTRACE_LOCAL_H */
