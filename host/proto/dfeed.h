/* SPDX-License-Identifier: MIT */
/*
 * Reading remotes through hvtraced: a page feed and event tables.
 * Internal to libhvtrace (hidden visibility), used by the CLI's stream,
 * stat and record by remote name, and by the tracefs-style view: the
 * one way a remote is read (dfeed.c, dsource.c).
 *
 * A feed is a tool connection that carries page subscriptions: PAGE
 * messages that arrive while the feed waits for the answer to one of its
 * own requests (DRAIN, TO_HOST, ...) are queued, never dropped, and come
 * out of hvt_dfeed_next() in the order they arrived.  Requests that need
 * no pages (REMOTES, TEXT, ENABLE, ...) are best sent on a separate
 * control connection (struct hvtrace_daemon), which then never sees a page.
 *
 * The event table of a remote comes from FORMATS (header_page,
 * header_event, every format) and TEXT EVENTS (enable bits and state):
 * static events are named "SYSTEM/NAME" in FORMATS, user events by their
 * bare name (system user_events).
 */
#ifndef HVT_DFEED_H
#define HVT_DFEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace/proto.h>

#include <hvtrace-daemon.h>

/* A page of a subscription, copied out of its frame (free() it). */
struct hvt_dpage {
	struct hvt_dpage *next;
	uint32_t remote; /* the remote's id */
	uint32_t sub;	 /* the subscription */
	uint32_t cpu;
	uint32_t flags; /* HVT_PAGEF_* */
	uint32_t seq;
	uint32_t entries;
	uint64_t lost_events;	/* lost in the ring before the page */
	uint64_t dropped_pages; /* this subscriber's, totals */
	uint64_t dropped_events;
	uint64_t first_ts;
	uint32_t len;
	uint8_t data[]; /* the ftrace sub-buffer */
};

struct hvt_dfeed;

/** hvt_dfeed_open - a tool connection for pages (@sock NULL: default) */
int hvt_dfeed_open(const char *sock, struct hvt_dfeed **out);
void hvt_dfeed_close(struct hvt_dfeed *f);
/** hvt_dfeed_fd - the socket, for poll(); queued pages do not show there */
int hvt_dfeed_fd(const struct hvt_dfeed *f);
/** hvt_dfeed_pending - pages queued in the feed (readable without I/O) */
bool hvt_dfeed_pending(const struct hvt_dfeed *f);

/**
 * hvt_dfeed_subscribe - pages of @remote's CPU @cpu (-1: all)
 * @queue_kib: the connection's page budget at the daemon (0: default)
 * @sub:       the subscription id
 */
int hvt_dfeed_subscribe(struct hvt_dfeed *f, uint32_t remote, int cpu,
			uint32_t queue_kib, uint32_t *sub);

/**
 * hvt_dfeed_next - the next page, queued or received
 * @timeout_ms: 0: only what is there now; -1: wait
 * @page:       set to the page (the caller frees it) or NULL
 *
 * Return: 1 with a page, 0 without one, -ECONNRESET when hvtraced went
 * away.
 */
int hvt_dfeed_next(struct hvt_dfeed *f, int timeout_ms,
		   struct hvt_dpage **page);

/**
 * hvt_dfeed_drain - have hvtraced read @remote's subscribed rings now
 *
 * When it returns 0, every page the writer committed before the call is
 * in the feed's queue (or was dropped for this subscriber, and counted).
 * Return: 0, -ENOENT (no such remote), or a transport error.
 */
int hvt_dfeed_drain(struct hvt_dfeed *f, uint32_t remote);

/**
 * hvt_dfeed_to_host - convert @n writer timestamps of @remote to host
 * CLOCK_MONOTONIC ns with the daemon's clock model (any @n: batched)
 * @err_ns: the model's error bound (may be NULL; UINT64_MAX: no model)
 */
int hvt_dfeed_to_host(struct hvt_dfeed *f, uint32_t remote, const uint64_t *ts,
		      uint64_t *ns, size_t n, uint64_t *err_ns);

/* --- remotes and their events (any connection without subscriptions) -- */

/** hvt_dremotes - every remote (malloc'd array, *n entries) */
int hvt_dremotes(struct hvtrace_daemon *dc, struct hvt_remote_rec **recs,
		 uint32_t *n);

struct hvt_devent {
	char system[64];
	char name[256];
	uint32_t id;
	int bit; /* -1: no enable bit */
	bool enabled;
	char *format; /* the format file */
};

struct hvt_devents {
	char *header_page;
	char *header_event;
	struct hvt_devent *ev;
	unsigned int nr;
};

/**
 * hvt_devents_get - formats and enable state of every event of @remote
 * (events with an enable bit; user events and the static ones)
 */
int hvt_devents_get(struct hvtrace_daemon *dc, uint32_t remote,
		    struct hvt_devents *out);
/** hvt_devents_state - refresh only the enable state (TEXT EVENTS) */
int hvt_devents_state(struct hvtrace_daemon *dc, uint32_t remote,
		      struct hvt_devents *evs);
void hvt_devents_free(struct hvt_devents *evs);

struct hvtrace_decoder;

/**
 * hvt_ddecoder_new - a decoder for @rec's pages: its headers, the
 * built-in formats of its writer kind and every format in @evs
 */
int hvt_ddecoder_new(const struct hvt_remote_rec *rec,
		     const struct hvt_devents *evs,
		     struct hvtrace_decoder **out);

/** hvt_dcomms_load - feed the remote's saved_cmdlines to a decoder */
int hvt_dcomms_load(struct hvtrace_daemon *dc, uint32_t remote,
		    struct hvtrace_decoder *d);

/**
 * hvt_dcomm_read - a comm file (/proc/PID/comm, /proc/PID/task/TID/comm)
 * into @comm, @size bytes, without its newline
 *
 * Return: 0, or -errno (-ENODATA: the file is empty).
 */
int hvt_dcomm_read(const char *path, char *comm, size_t size);

/**
 * hvt_dcomm_local - name @pid in @d from /proc/PID/comm, unless @d knows
 * it already: for a loopback writer's threads, which run on this host
 */
void hvt_dcomm_local(struct hvtrace_decoder *d, int pid);

/**
 * hvt_dpage_walk - the data events of one ftrace sub-buffer
 * @data, @len: the page (header first), @len bytes
 * @lost:       set to the events lost before the page (from its
 *              RB_MISSED_* bits; UINT64_MAX: an unknown number), or 0
 * @cb:         called for each data event with its timestamp (writer
 *              clock) and payload; a non-zero return stops the walk
 *
 * Bounded by @len: a malformed page stops the walk.
 * Return: the number of events, or -EBADMSG (after the good ones).
 */
int hvt_dpage_walk(const uint8_t *data, uint32_t len, uint64_t *lost,
		   int (*cb)(void *arg, uint64_t ts, const uint8_t *rec,
			     uint32_t rec_len),
		   void *arg);

/* --- what every reader of a remote needs (dsource.c) -------------------- */

/**
 * hvt_dfeed_to_host_mixed - @n timestamps of several remotes (@remote[i]
 * is stamp i's) to host CLOCK_MONOTONIC ns in place, one TO_HOST per
 * remote in the order they first appear
 * @done: called after each remote with the result of its conversion and
 *        the model's error bound; what it returns goes on (0) or is
 *        returned at once.  NULL: the first error is returned.
 * A remote whose conversion failed keeps its writer timestamps.
 */
int hvt_dfeed_to_host_mixed(struct hvt_dfeed *f, size_t n,
			    const uint32_t *remote, uint64_t *ts,
			    int (*done)(void *arg, uint32_t remote, int ret,
					uint64_t err_ns),
			    void *arg);

enum hvt_dremote_change {
	HVT_DREMOTE_LIVE,    /* as it was */
	HVT_DREMOTE_GONE,    /* detached from hvtraced */
	HVT_DREMOTE_NEW_RUN, /* its writer re-formatted the area */
	HVT_DREMOTE_STOPPED, /* an area whose writer stopped (or died) */
};

/**
 * hvt_dremote_now - remote @was in the daemon's list @v (@n entries, from
 * hvt_dremotes()) and what became of it; @cur: its entry there, or NULL
 */
enum hvt_dremote_change hvt_dremote_now(const struct hvt_remote_rec *v,
					uint32_t n,
					const struct hvt_remote_rec *was,
					const struct hvt_remote_rec **cur);
/** hvt_dremote_stopped - an area remote whose writer stopped or died */
bool hvt_dremote_stopped(const struct hvt_remote_rec *rec);

/**
 * hvt_dstats_get - STATS of @remote: one record per CPU into @st, at most
 * @max, *@n of them (also those received before an error)
 * Return: 0, or -errno (the daemon's error text, an unexpected reply, a
 * transport error).
 */
int hvt_dstats_get(struct hvtrace_daemon *dc, uint32_t remote, uint32_t max,
		   struct hvt_m_stats *st, uint32_t *n);
/**
 * hvt_dstats_to_host - the oldest-event and now stamps of @n STATS
 * records into @ts[2k], @ts[2k+1] (2 * @n entries), on the host clock
 */
int hvt_dstats_to_host(struct hvt_dfeed *f, uint32_t remote,
		       const struct hvt_m_stats *st, uint32_t n, uint64_t *ts);

/**
 * hvt_dcmdlines_each - @cb for every "PID COMM" line of the comms
 * @remote's agent reported (its saved_cmdlines)
 */
int hvt_dcmdlines_each(struct hvtrace_daemon *dc, uint32_t remote,
		       void (*cb)(void *arg, int pid, const char *comm),
		       void *arg);

/**
 * hvt_devent_path - the name ENABLE takes for event @name of @system:
 * "SYSTEM/NAME", a user event's bare name
 */
void hvt_devent_path(char *buf, size_t size, const char *system,
		     const char *name);
/**
 * hvt_denable - turn event @path (hvt_devent_path()) of @remote on or
 * off; the daemon's text goes to @msg (@msgsize bytes, may be 0)
 */
int hvt_denable(struct hvtrace_daemon *dc, uint32_t remote, const char *path,
		bool on, char *msg, size_t msgsize);

/**
 * hvt_dname_is_remote - does @arg look like a remote name rather than an
 * area (PATH[@OFFSET[+SIZE]])?  A name is 1..31 of [A-Za-z0-9._-] and not
 * an existing regular file (write ./NAME for a file of such a name).
 */
bool hvt_dname_is_remote(const char *arg);

#endif /* HVT_DFEED_H */
