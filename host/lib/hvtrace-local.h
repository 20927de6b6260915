/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace internals shared by the files of host/lib and the other host
 * components compiled into the library.
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

#define HVT_INTERNAL __attribute__((visibility("hidden")))
/*
 * Not API, but called by the other host libraries (libhvtrace-tracedat,
 * -daemon, -fuse): exported in the HVTRACE_PRIVATE node of
 * host/libhvtrace.map, which no public header declares.
 */
#define HVT_LIBPRIVATE __attribute__((visibility("default")))

/* Set the calling thread's hvtrace_last_error() text; returns @err. */
HVT_LIBPRIVATE int hvt_err(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

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

/*
 * The model's conversion as it stands now (an affine map), for a caller
 * that converts many timestamps at once without the error bound: the
 * recorder takes one per page.  hvt_clock_to_host() converts through it
 * too, so both give the same value for the same model.
 *
 * The rate is applied in fixed point, as an integer part and a fraction
 * in 64 bits: two multiplies and an add per timestamp, the fraction's
 * product taken from the high half (no shift by a variable count).  The
 * recorder converts every event, and the floating-point chain (convert,
 * multiply, add, range check, convert back) cost about as much as the
 * rest of packing a record.  The fraction holds every bit of the
 * model's double rate, so a timestamp is off by under a nanosecond
 * (rounded down) from the exact product.
 */
struct hvt_clock_affine {
	bool identity; /* HVT_CLOCK_HOST_NS: no conversion */
	bool synced;
	uint64_t rate_int;
	uint64_t rate_frac;
	uint64_t base_writer;
	uint64_t base_host;
};

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

static inline uint64_t hvt_clock_affine_to_host(const struct hvt_clock_affine *a,
						uint64_t ts)
{
	uint64_t u, hi;
	int64_t d, off;

	if (a->identity)
		return ts;
	if (!a->synced) {
		/* No sample yet: the writer's own timeline, in ns. */
		hi = (uint64_t)(((unsigned __int128)ts * a->rate_frac) >> 64);
		if (__builtin_mul_overflow(ts, a->rate_int, &u) ||
		    __builtin_add_overflow(u, hi, &u))
			return UINT64_MAX;
		return u;
	}
	/* Ticks from the base are signed: events before the newest sample
	 * come out below base_host (the fraction's product rounds down). */
	d = (int64_t)(ts - a->base_writer);
	if (__builtin_mul_overflow(d, (int64_t)a->rate_int, &off) ||
	    __builtin_add_overflow(
		    off,
		    (int64_t)(((__int128)d * (__int128)a->rate_frac) >> 64),
		    &off))
		return d < 0 ? 0 : UINT64_MAX;
	if (off < 0)
		return 0 - (uint64_t)off > a->base_host
			       ? 0
			       : a->base_host - (0 - (uint64_t)off);
	if (__builtin_add_overflow(a->base_host, (uint64_t)off, &u))
		return UINT64_MAX;
	return u;
}

HVT_LIBPRIVATE uint64_t hvt_host_now_ns(void);

/*
 * Where each record of a validated page starts, from the first data byte:
 * the reader's validation walk writes it down (hvt_subbuf_take()) for a
 * caller that walks the page again, the recorder's packer.  A walk finds
 * each record from the one before it (a load, then the length, then the
 * next load): about 7 cycles a record however little is done with it.
 * With the starts known, the packer's records do not wait on each other.
 */
struct hvt_item_index {
	uint32_t *off; /* record starts, ascending; off[nr]: the end */
	uint32_t cap;  /* entries @off holds */
	uint32_t nr;   /* records; 0: none written down (walk instead) */
};

/* Entries an index needs for any page of @data_size bytes: a record (an
 * event, padding or a time record) takes 8 bytes at least; one more
 * holds the end. */
static inline uint32_t hvt_item_index_cap(uint32_t data_size)
{
	return data_size / 8 + 2;
}

/*
 * The packer (pack.c), a page at a time.  A caller with a page of records
 * validated by its reader gives it here with the conversion its event path
 * applies to each record (the clock, the id map).  The records the open
 * page takes go on it through add_event(); the rest of the page is copied
 * once to a fresh page and rewritten in place (ids, and deltas from the
 * converted absolute times), where add_event() record by record would lay
 * them out the same way.  The walk stops before a record it cannot vouch
 * for: a padding or time record, one add_event() would encode otherwise,
 * one shorter than @min_len, a converted delta over 27 bits, a record the
 * fresh page cannot hold.  @out says what was done and where the caller's
 * event path goes on (an iterator at @out->pos with running time
 * @out->ts).  Returns 0, or a flush's error (@out still says what was
 * packed before it).
 */
struct hvt_pack_page_in {
	const uint8_t *data;	/* the records, after the page header */
	uint32_t size;		/* their bytes (commit, flags masked) */
	uint64_t ts;		/* the page header's time stamp */
	/* Or NULL: where each record of @data starts, as the reader's
	 * validation found them; a record where the index and the data
	 * disagree is walked as without one. */
	const struct hvt_item_index *ix;
	const struct hvt_clock_affine *clk; /* writer time -> file time */
	const uint16_t *idmap;	/* common_type -> file id (65536 entries) */
	uint16_t unknown_id;	/* the id counted in @out->unknown */
	uint32_t min_len;	/* shorter records: the event path's error */
	bool have_prev;		/* times are held at @prev or later */
	uint64_t prev;
	/*
	 * Or NULL.  Called for each record packed whose u32 at @note_off
	 * differs from the one before it on this page (the page's first
	 * included), and for a record too short to hold it: a caller that
	 * notes a field (the pid) is not called for every event.
	 */
	void (*note)(void *ctx, const uint8_t *rec, uint32_t len);
	void *note_ctx;
	uint32_t note_off;
};

struct hvt_pack_page_out {
	uint32_t events;	/* records packed */
	uint32_t unknown;	/* records mapped to @unknown_id */
	uint32_t clamped;	/* times held at the one before */
	uint64_t last_ts;	/* of the last record packed */
	uint32_t pos;		/* the first record left to the caller */
	uint64_t ts;		/* the running time before it */
};

/*
 * hvtrace_cpu_read_page() that also writes down in @ix where each record
 * of the page returned starts (@ix->nr 0 where it could not).
 */
HVT_LIBPRIVATE int hvt_cpu_read_page_indexed(struct hvtrace_area *a, int cpu,
					     void *page, size_t size,
					     struct hvtrace_page_info *info,
					     struct hvt_item_index *ix);

struct hvtrace_pack;
HVT_LIBPRIVATE int hvt_pack_add_page(struct hvtrace_pack *p,
				     const struct hvt_pack_page_in *in,
				     struct hvt_pack_page_out *out);

/*
 * Back off while polling shared memory: spin briefly (a writer on another
 * CPU usually answers within microseconds), then sleep so a poll never
 * starves a guest's vCPU threads on a small host.
 */
HVT_INTERNAL void hvt_wait_a_little(unsigned int *spins);

/*
 * Per-CPU state that different threads write (a reader thread per CPU
 * buffer) sits in whole cache lines of its own: the struct is declared
 * HVT_CACHELINE_ALIGNED, so its size is a multiple of the line, and the
 * array is allocated on a line by hvt_calloc_lines().  Otherwise two
 * threads write one line at every page: the trace.dat writer's 48-byte
 * per-CPU state put CPUs 0 and 1, read by threads 0 and 1, in one line,
 * and the other structs' boundaries fell where the heap put them.
 */
#define HVT_CACHELINE 64
#define HVT_CACHELINE_ALIGNED __attribute__((aligned(HVT_CACHELINE)))

static inline void *hvt_calloc_lines(size_t n, size_t size)
{
	size_t bytes;
	void *p;

	if (!n)
		n = 1;
	if (__builtin_mul_overflow(n, size, &bytes))
		return NULL;
	bytes = (bytes + HVT_CACHELINE - 1) & ~(size_t)(HVT_CACHELINE - 1);
	p = aligned_alloc(HVT_CACHELINE, bytes);
	if (p)
		memset(p, 0, bytes);
	return p;
}

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
