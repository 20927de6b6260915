/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-fuse: the tracefs-style view of remotes (hvtrace mount); the
 * library's private header (<hvtrace-fuse.h> is its API); docs/fuse.md describes the
 * file tree and the semantics of each file.
 *
 *   view.c        the model: remotes, their events, per-CPU queues of
 *                 records (the "ring buffer" the view shows), consuming
 *                 and non-consuming reads, raw pages, text, error_log
 *   src_daemon.c  remotes of hvtraced: their CPUs as rings of the core on
 *                 one feed (hvtrace_daemon_ring_open()), a control
 *                 connection for everything else
 *   src_ring.c    a remote's rings, merged by time, into the view's queues
 *   src_area.c    areas opened directly (hvtrace mount --area NAME=SPEC)
 *   kmap.c        the guest kernel's events of a remote: their ids in the
 *                 view, and the check of each of its records
 *   fs.c          the libfuse3 low-level file system on top of the view
 *   mount.c       hvtrace_fuse_run(): mounting, threads, signals, teardown
 *
 * Locking: one view lock protects every remote, queue and open file
 * state.  Sources ingest under it; file operations read and consume
 * under it.  Nothing waits for the daemon while holding it: calls into a
 * source (enable, drain, definitions) are made without it, and a source
 * takes it only to apply what it got.  libfuse's own request lock is only
 * ever taken inside the view lock (replying, checking an interrupt), never
 * the other way round.
 */
#ifndef HVT_FUSE_LOCAL_H
#define HVT_FUSE_LOCAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace.h>
#include <hvtrace-fuse.h>

#include <hvtrace-internal.h>

#define FZ_CLOCK_NATIVE 0 /* the writer's own clock */
#define FZ_CLOCK_MONO	1 /* host CLOCK_MONOTONIC (the clock model) */

#define FZ_ERRLOG_MAX	16 /* entries kept, as the kernel keeps */
#define FZ_LOST_UNKNOWN UINT64_MAX

/* One event of a remote (one with an enable bit). */
struct fz_event {
	char system[64];
	char name[256];
	uint32_t id;
	int bit;
	bool enabled;
	bool unknown; /* the enable state is not known */
	bool kernel;  /* the guest kernel's (kmap.c), not the source's */
	char *format;
};

/* A queued record. */
struct fz_ev {
	uint64_t ts;	   /* writer clock */
	uint64_t host;	   /* host CLOCK_MONOTONIC, as converted at
			    * ingest */
	uint64_t lost;	   /* events lost right before it; 0, a count
			    * or FZ_LOST_UNKNOWN */
	uint32_t off, len; /* payload in the chunk's data */
};

/* The records of one page as it arrived (a page's worth of a ring's). */
struct fz_chunk {
	struct fz_chunk *next;
	uint32_t n;	    /* records */
	uint32_t pos;	    /* first unconsumed */
	uint64_t bytes;	    /* ring bytes of the unconsumed records */
	uint64_t tail_lost; /* records left out after the last one */
	struct fz_ev *ev;
	uint8_t *data;
	uint32_t cap_ev, cap_data, data_len; /* while fz_chunk_add() fills it */
};

struct fz_cpu {
	struct fz_chunk *head, *tail;
	uint64_t queued;       /* records waiting */
	uint64_t bytes;	       /* their ring bytes */
	uint64_t received;     /* records ingested */
	uint64_t overrun;      /* lost to overwriting (ring or view) */
	uint64_t dropped;      /* dropped, ring or view full */
	uint64_t read;	       /* consumed by readers */
	uint64_t pending_lost; /* lost, no record yet to carry it */
	bool pending_unknown;
	uint64_t last_host; /* host times stay monotonic per CPU */
	bool have_host;
};

struct fz_remote;
struct fz_view;
struct fz_kmap;

/* What a remote's source can do (called without the view lock). */
struct fz_src_ops {
	/* @e NULL: every event of @system (NULL: all). */
	int (*enable)(struct fz_remote *r, const struct fz_event *e,
		      const char *system, bool on, char *msg, size_t msgsize);
	int (*tracing)(struct fz_remote *r, bool on, char *msg, size_t msgsize);
	/* Every record committed until now is in the queues on return. */
	int (*drain)(struct fz_remote *r);
	/* One dynamic_events line; NULL: delete every event (O_TRUNC). */
	int (*dyn)(struct fz_remote *r, const char *line, char *msg,
		   size_t msgsize);
	/* HVT_TEXT_* text of the remote (malloc'd), or -ENOTSUP. */
	int (*text)(struct fz_remote *r, uint32_t kind, char **out);
	/* Fetch the events and their state again. */
	int (*refresh)(struct fz_remote *r);
};

struct fz_remote {
	struct fz_remote *next;
	struct fz_view *v;
	unsigned int refs; /* the list, open files, sources */
	char name[32];
	uint32_t id; /* hvtraced's id (daemon remotes) */
	const struct fz_src_ops *ops;
	void *priv; /* the source's */

	bool gone;    /* detached, or the source is gone */
	bool stopped; /* the writer stopped or died */
	uint32_t state; /* HVT_REMOTE_* as hvtraced has it; 0: no daemon's
			 * (a local area: connected, or disconnected once
			 * stopped) */
	bool loaded;  /* geometry known */
	uint32_t nr_cpus, subbuf_size, nr_subbufs;
	uint32_t writer_kind, mode, clock_id, transport;
	uint64_t generation;
	bool user_events; /* has a registry (an agent) */
	bool tracing_on;
	int clock; /* FZ_CLOCK_* */

	struct fz_event *ev;
	unsigned int nev;
	char *header_page, *header_event;
	struct hvtrace_decoder *dec;
	uint32_t writer_pid; /* loopback writers: comms from /proc */

	/*
	 * The guest kernel's ring beside the remote's own (a guest remote
	 * of hvtraced whose clock is mono): its events follow the source's
	 * in ev[] (nuser of them are the source's), its records are in
	 * queues of their own, decoded with kdec.
	 */
	unsigned int nuser;
	struct fz_kmap *kmap;
	struct hvtrace_decoder *kdec;
	uint32_t knr_cpus;
	char *kprintk, *kcmdlines;

	unsigned int ncpu; /* per_cpu dirs: max(nr_cpus, knr_cpus, host) */
	/* 2 * ncpu queues: cpu[i] the source's records of CPU i,
	 * cpu[ncpu + i] the guest kernel's (fz_q()) */
	struct fz_cpu *cpu;
	uint64_t limit; /* ring bytes kept per CPU */

	char *errlog;
	size_t errlog_len;
	unsigned int errlog_n;

	uint64_t data_gen;		/* bumped by every ingest */
	uint64_t drain_req, drain_done; /* daemon source: drain requests */
};

struct fz_view {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* data, drains, shutdown */
	struct fz_remote *remotes;
	bool shutdown;
	unsigned int host_cpus;
	/* Called with the lock held whenever a remote's data or state
	 * changed (the file system wakes its readers). */
	void (*wake)(struct fz_view *v, struct fz_remote *r);
	void *fs;
};

/* --- view.c ----------------------------------------------------------- */

HVT_INTERNAL int fz_view_init(struct fz_view *v);
HVT_INTERNAL void fz_view_fini(struct fz_view *v);

/* A new remote (lock held); the list holds one reference. */
HVT_INTERNAL struct fz_remote *fz_remote_add(struct fz_view *v,
					     const char *name,
					     const struct fz_src_ops *ops,
					     void *priv);
HVT_INTERNAL struct fz_remote *fz_remote_find(struct fz_view *v,
					      const char *name);
HVT_INTERNAL void fz_remote_get(struct fz_remote *r);
/* Drop a reference (lock held); frees the remote at zero. */
HVT_INTERNAL void fz_remote_put(struct fz_remote *r);
/* Take it off the list: it is gone; readers see the end (lock held). */
HVT_INTERNAL void fz_remote_remove(struct fz_remote *r);

/*
 * Set the geometry (lock held).  A change of geometry or generation
 * starts over: the queues are emptied.
 */
HVT_INTERNAL int fz_remote_set_geometry(struct fz_remote *r, uint32_t nr_cpus,
					uint32_t nr_subbufs,
					uint32_t subbuf_size,
					uint32_t writer_kind, uint32_t mode,
					uint32_t clock_id, uint64_t generation);
/* Replace the event table (lock held; takes ownership of @ev). */
HVT_INTERNAL int fz_remote_set_events(struct fz_remote *r, struct fz_event *ev,
				      unsigned int nev, char *header_page,
				      char *header_event);
HVT_INTERNAL void fz_events_free(struct fz_event *ev, unsigned int nev);
HVT_INTERNAL const struct fz_event *
fz_event_find(const struct fz_remote *r, const char *system, const char *name);
HVT_INTERNAL bool fz_system_exists(const struct fz_remote *r,
				   const char *system);

/*
 * The records of a page (no lock needed); NULL with *err when out of
 * memory.  A malformed page gives no record and a loss of an unknown
 * number (*err -EBADMSG).  With @kmap (a guest kernel page), only the
 * records fz_kmap_keep() keeps; the others count as lost before the next
 * one.
 */
HVT_INTERNAL struct fz_chunk *
fz_chunk_from_page(const uint8_t *page, uint32_t len, uint64_t extra_lost,
		   const struct fz_kmap *kmap, int *err);
HVT_INTERNAL void fz_chunk_free(struct fz_chunk *c);
/*
 * Append record @rec of a core ring (its lost_before, ts and host_ns kept)
 * to the chunk at *@cp, a new one when *@cp is NULL (no lock needed).  A
 * chunk holds at most @room ring bytes (a sub-buffer's data): -ENOSPC
 * when @rec does not fit (it is not added); -ENOMEM.
 */
HVT_INTERNAL int fz_chunk_add(struct fz_chunk **cp,
			      const struct hvtrace_record *rec, uint32_t room);
/* Queue a chunk for @cpu (lock held; takes ownership). */
HVT_INTERNAL void fz_ingest(struct fz_remote *r, uint32_t cpu,
			    struct fz_chunk *c);
/* The same for a chunk of the guest kernel's CPU @cpu. */
HVT_INTERNAL void fz_ingest_kernel(struct fz_remote *r, uint32_t cpu,
				   struct fz_chunk *c);
/*
 * The guest kernel's ring joins the remote (lock held; takes ownership
 * of everything): @map its events (ids assigned here), @dec their
 * decoder, @nr_cpus its CPUs, @printk and @cmdlines its printk_formats and
 * saved_cmdlines (may be NULL).
 */
HVT_INTERNAL int fz_remote_set_kernel(struct fz_remote *r, struct fz_kmap *map,
				      struct hvtrace_decoder *dec,
				      uint32_t nr_cpus, char *printk,
				      char *cmdlines);
/* Queue @cpu of the source (@kernel false) or of the guest kernel. */
static inline struct fz_cpu *fz_q(struct fz_remote *r, uint32_t cpu,
				  bool kernel)
{
	return &r->cpu[kernel ? r->ncpu + cpu : cpu];
}
/* Whether queue @qi (0 .. 2 * ncpu) holds records of a CPU there is. */
static inline bool fz_q_live(const struct fz_remote *r, uint32_t qi)
{
	return qi < r->ncpu ? qi < r->nr_cpus : qi - r->ncpu < r->knr_cpus;
}
/* Records lost with no page to carry them (lock held), of the guest
 * kernel's CPU @cpu with @kernel. */
HVT_INTERNAL void fz_ingest_lost(struct fz_remote *r, uint32_t cpu, bool kernel,
				 uint64_t lost);
/* Whether the view keeps guest kernel record @p (fz_kmap_keep(), and small
 * enough for a page of the view's); one it does not is a loss. */
HVT_INTERNAL bool fz_chunk_keeps(const struct fz_kmap *kmap, const void *p,
				 uint32_t len);

HVT_INTERNAL bool fz_has_data(const struct fz_remote *r, int cpu);
/* Empty the queues of @cpu (-1: all) (lock held). */
HVT_INTERNAL void fz_reset(struct fz_remote *r, int cpu);
/*
 * Consume one sub-buffer of @cpu into @page (subbuf_size bytes, the
 * kernel's page format, in the view's clock); returns the page size, or
 * 0 when nothing is queued (lock held).
 */
HVT_INTERNAL uint32_t fz_take_raw(struct fz_remote *r, uint32_t cpu,
				  uint8_t *page);
/*
 * Consume records of @cpu (-1: all, merged by time) as trace_pipe lines
 * into @buf; stops before a line that does not fit, except that the
 * first line is always produced (cut to @size; the rest goes to @rest,
 * malloc'd).  Returns the bytes written (lock held).
 */
HVT_INTERNAL size_t fz_take_text(struct fz_remote *r, int cpu, char *buf,
				 size_t size, char **rest, size_t *rest_len);
/* The text of the `trace` file (non-consuming; malloc'd; lock held). */
HVT_INTERNAL char *fz_trace_text(struct fz_remote *r, int cpu, size_t *len);
/* per_cpu/cpuN/stats (malloc'd; lock held). */
HVT_INTERNAL char *fz_stats_text(struct fz_remote *r, uint32_t cpu,
				 size_t *len);
/* Append an entry to the remote's error_log, in tracefs's format. */
HVT_INTERNAL void fz_errlog_add(struct fz_remote *r, const char *loc,
				const char *msg, const char *cmd,
				unsigned int pos);
/* Rebuild the decoder from the event table (lock held). */
HVT_INTERNAL int fz_remote_decoder(struct fz_remote *r);

/* Clock names: trace_clock's text, and parsing a write to it. */
HVT_INTERNAL int fz_clock_text(const struct fz_remote *r, char *buf,
			       size_t size);
HVT_INTERNAL int fz_clock_parse(const struct fz_remote *r, const char *s);

/* --- sources ------------------------------------------------------------ */

struct fz_daemon;
/* @o: the socket, and the guest kernel rings' callbacks. */
HVT_INTERNAL int fz_daemon_start(struct fz_view *v,
				 const struct hvtrace_fuse_options *o,
				 struct fz_daemon **out);
HVT_INTERNAL void fz_daemon_stop(struct fz_daemon *d);

/*
 * The CPUs of a remote as rings of the core (src_ring.c), one per CPU,
 * ring i reading CPU i, merged by time (hvtrace_merge, @window_ns) into
 * the remote's queues.  fz_rings_new() takes the rings (closed by
 * fz_rings_free()).  fz_rings_pump() moves up to @max records ready now
 * (@flush: every record the rings have, then their trailing losses) into
 * @r's queues, taking the view lock itself; returns the records moved or
 * a negative errno of a ring.  fz_rings_pending(): whether a record waits
 * for the reorder window (pump again within it).  With @kmap the rings are
 * the guest kernel's CPUs (hvtrace_daemon_kring_ring_open()): their
 * records go to the remote's kernel queues, those fz_chunk_keeps() refuses
 * counted as lost before the next.
 */
struct fz_rings;
HVT_INTERNAL int fz_rings_new(struct hvtrace_ring **rings, unsigned int nr,
			      uint32_t subbuf_size, uint64_t window_ns,
			      const struct fz_kmap *kmap,
			      struct fz_rings **out);
HVT_INTERNAL void fz_rings_free(struct fz_rings *R);
HVT_INTERNAL int fz_rings_pump(struct fz_rings *R, struct fz_remote *r,
			       bool flush, unsigned int max);
HVT_INTERNAL bool fz_rings_pending(struct fz_rings *R);

struct fz_areas;
HVT_INTERNAL int fz_areas_start(struct fz_view *v, char *const *specs,
				unsigned int n, struct fz_areas **out);
HVT_INTERNAL void fz_areas_stop(struct fz_areas *a);

/* --- the file system (fs.c) and the mount (mount.c) --------------------- */

struct fuse_lowlevel_ops;
HVT_INTERNAL const struct fuse_lowlevel_ops *fz_fs_ops(void);
HVT_INTERNAL int fz_fs_init(struct fz_view *v);
HVT_INTERNAL void fz_fs_fini(struct fz_view *v);
/* Answer every parked read with the end of file (lock held). */
HVT_INTERNAL void fz_fs_release_waiters(struct fz_view *v);

#endif /* HVT_FUSE_LOCAL_H */
