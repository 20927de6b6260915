/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: what the host libraries above the core (libhvtrace-daemon,
 * -tracedat, -fuse) call in it that is not API.  Not installed, in no
 * public header: the functions are the HVTRACE_PRIVATE node of
 * host/libhvtrace.map, which ties a library to the core of its own build.
 * The upper libraries are compiled with -I host/lib/internal, never
 * -I host/lib: the core's private headers (hvtrace-local.h and the other
 * headers of host/lib) stay the core's, and tests/foundation/layering
 * fails on an include of one from above.
 *
 * Keep it small: a facility a program would want too becomes API in
 * host/include instead, with a kernel-doc comment, a map entry and a page.
 */
#ifndef HVT_HVTRACE_INTERNAL_H
#define HVT_HVTRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>

/* A library's own symbol, hidden from its shared object. */
#define HVT_INTERNAL __attribute__((visibility("hidden")))
/* A core symbol of the HVTRACE_PRIVATE node (exported, not API). */
#define HVT_LIBPRIVATE __attribute__((visibility("default")))

/*
 * Set the calling thread's hvtrace_last_error() text; returns @err (a
 * -errno), so that a library's error path reads
 * "return hvt_err(-EINVAL, "...: what to do");".
 */
HVT_LIBPRIVATE int hvt_err(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A hypervisor's events belong to no task.  Their pid 0 would read as the
 * idle task (trace_pipe's and libtraceevent's "<idle>"), so they are named
 * HVT_HYP_COMM: in text, pid 0 of a hypervisor writer's records; in a
 * trace.dat file, where libtraceevent names pid 0 "<idle>" whatever
 * saved_cmdlines says, they carry HVT_HYP_PID instead (PID_MAX_LIMIT: no
 * task's pid), which the file's saved_cmdlines names HVT_HYP_COMM.
 */
#define HVT_HYP_COMM "<hyp>"
#define HVT_HYP_PID  4194304

/* The host's CLOCK_MONOTONIC in ns: the time base of the clock model. */
HVT_LIBPRIVATE uint64_t hvt_host_now_ns(void);

/* --- the clock model's conversion, a page at a time --------------------- */

/*
 * An area's clock model as it stands now (an affine map), for a caller
 * that converts many timestamps at once without the error bound: the
 * recorder takes one per page.  hvtrace_area_to_host_ns() converts
 * through it too, so both give the same value for the same model.
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

/* The conversion of area @a's clock model now, into @out. */
HVT_LIBPRIVATE void hvt_area_clock_affine(const struct hvtrace_area *a,
					  struct hvt_clock_affine *out);

/*
 * One time-sync exchange through area @a's control page (opened with
 * HVTRACE_OPEN_CONTROL): store @token as the request, spin until the
 * writer echoes it, at most @timeout_ns.  On success (0) the writer's
 * clock reading lies in host time [*send, *recv]; the model is left
 * alone (the caller refines the sample and feeds it with
 * hvtrace_area_add_sync_sample()).  -ETIMEDOUT without an answer,
 * -EAGAIN when the answer changed while read, -EPERM without control,
 * -EIO when the file shrank.
 */
HVT_LIBPRIVATE int hvt_area_sync_exchange(struct hvtrace_area *a,
					  uint64_t token, uint64_t timeout_ns,
					  uint64_t *send, uint64_t *writer,
					  uint64_t *recv);

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

/* --- the packer, a page at a time --------------------------------------- */

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
 * hvtrace_cpu_read_page() that also writes down in @ix where each record
 * of the page returned starts (@ix->nr 0 where it could not).
 */
HVT_LIBPRIVATE int hvt_cpu_read_page_indexed(struct hvtrace_area *a, int cpu,
					     void *page, size_t size,
					     struct hvtrace_page_info *info,
					     struct hvt_item_index *ix);

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

struct hvtrace_pack;
HVT_LIBPRIVATE int hvt_pack_add_page(struct hvtrace_pack *p,
				     const struct hvt_pack_page_in *in,
				     struct hvt_pack_page_out *out);

/* --- per-CPU state in cache lines of its own (no symbol) ---------------- */

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

/* --- texts for libtraceevent, tried in a forked child first -------------- */

/*
 * libtraceevent's parsers trust their input; these texts are hostile (a
 * guest's formats, a trace.dat from anywhere).  tep_sandbox.c parses a
 * batch of them in order in one forked child and marks the ones that
 * are not text (ASCII, tabs, newlines) or that kill or hang the child;
 * only the others reach a reader's own handle.
 */
struct tep_handle;

enum hvt_tep_text_kind {
	HVT_TEP_HEADER_PAGE,
	HVT_TEP_FORMAT,
	HVT_TEP_KALLSYMS,
	HVT_TEP_PRINTK,
	HVT_TEP_CMDLINES,
};

struct hvt_tep_text {
	enum hvt_tep_text_kind kind;
	const char *system; /* a format's system */
	const char *text;
	size_t len;
	bool bad; /* in: leave it out; out: it must not be parsed */
};

/* The offset of @t's first byte that is not text, or -1. */
HVT_LIBPRIVATE long hvt_tep_text_bad_byte(const struct hvt_tep_text *t);
/* @t parsed into @tep (the parse the sandbox tries). */
HVT_LIBPRIVATE void hvt_tep_apply(struct tep_handle *tep,
				  const struct hvt_tep_text *t, int long_size);
/*
 * A kernel's /proc/kallsyms text (hostile: hvtrace_ksyms_parse()) as
 * @tep's function resolver, the one decoders install
 * (hvtrace_decoder_set_ksyms()): @tep's text of a record then names
 * symbols with a tail that hvt_ksyms_expand() turns into the kernel's
 * forms.  The table goes to *@owner (any table there is freed; the caller
 * frees the last one after tep_free()).  0, or the parse's -errno (then
 * @tep names nothing).
 */
struct hvtrace_ksyms;
HVT_LIBPRIVATE int hvt_tep_set_ksyms(struct tep_handle *tep, const char *text,
				     size_t len, struct hvtrace_ksyms **owner);
/*
 * @in (@n bytes: libtraceevent's text of a record, printed with that
 * resolver) into @out with each symbol as the kernel prints it:
 * "name [mod]" for %ps, "name+0xoff/0xsize [mod]" for %pS.
 */
struct trace_seq;
HVT_LIBPRIVATE void hvt_ksyms_expand(struct trace_seq *out, const char *in,
				     size_t n);
/* The byte that begins and ends a symbol's tail in such a text. */
#define HVT_KS_TAIL '\x1f'
/* @t[0..n) checked: the bad ones marked; how many are bad, or -errno
 * when no child could run (nothing checked). */
HVT_LIBPRIVATE long hvt_tep_sandbox(struct hvt_tep_text *t, unsigned int n,
				    int long_size);

/*
 * The formats @t[0..n) into decoder @d as hvtrace_decoder_add_format()
 * adds one, in one sandbox child for all: @ret[i] is what adding @t[i]
 * returned (0, or its -errno with hvtrace_last_error() said for the last
 * failure).  Returns how many were added.
 */
struct hvtrace_decoder;
HVT_LIBPRIVATE unsigned int hvt_decoder_add_formats(struct hvtrace_decoder *d,
						    struct hvt_tep_text *t,
						    unsigned int n, int *ret);

#endif /* HVT_HVTRACE_INTERNAL_H */
