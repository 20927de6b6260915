/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-daemon - a client of hvtraced, the host daemon, over its
 * socket: for the hvtrace CLI, the tests and other host tools.  Same
 * conventions as libhvtrace (<hvtrace.h>): negative errno returns,
 * hvtrace_last_error() says what to do.
 *
 * Messages are those of <hvtrace/proto.h>: the client fills a struct
 * hvt_msg, hvtrace_daemon_call() sends it and returns the reply with the
 * same request id; anything else that arrives meanwhile (PAGE messages of
 * a subscription, notices) goes to an optional callback.  Decoded views
 * stay valid until the next receive on the same connection.
 */
#ifndef HVTRACE_DAEMON_H
#define HVTRACE_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace.h>
#include <hvtrace/proto.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- connections and requests (dclient.c) -------------------------------- */

#define HVTRACE_DAEMON_DEFAULT_SOCKET "/run/hvtrace/hvtraced.sock"
#define HVTRACE_DAEMON_TIMEOUT_MS     10000

struct hvtrace_daemon;

typedef void (*hvtrace_daemon_cb)(void *arg, const struct hvt_msg *m);

/** hvtrace_daemon_default_socket - $HVTRACED_SOCKET, else the default path */
HVTRACE_API const char *hvtrace_daemon_default_socket(void);

/**
 * hvtrace_daemon_open - connect to hvtraced and say HELLO
 * @path: socket path, NULL for hvtrace_daemon_default_socket()
 *
 * Return: 0; -ENOENT/-ECONNREFUSED when no daemon listens (the message
 * says how to start one), -EACCES, -EPROTO.
 */
HVTRACE_API int hvtrace_daemon_open(const char *path,
				    struct hvtrace_daemon **out);

HVTRACE_API void hvtrace_daemon_close(struct hvtrace_daemon *c);
HVTRACE_API int hvtrace_daemon_fd(const struct hvtrace_daemon *c);

/** hvtrace_daemon_send - send @m; assigns m->req when it is 0 */
HVTRACE_API int hvtrace_daemon_send(struct hvtrace_daemon *c,
				    struct hvt_msg *m);

/**
 * hvtrace_daemon_recv - the next message
 * Return: 1 with a message, 0 on timeout, negative errno.
 */
HVTRACE_API int hvtrace_daemon_recv(struct hvtrace_daemon *c, struct hvt_msg *m,
				    int timeout_ms);

/**
 * hvtrace_daemon_call - send @req and wait for its reply
 * @other: gets every other message meanwhile (may be NULL)
 *
 * Return: 0 with @reply filled (type is the request's or HVT_MSG_ERROR),
 * -ETIMEDOUT, -ECONNRESET.
 */
HVTRACE_API int hvtrace_daemon_call(struct hvtrace_daemon *c,
				    struct hvt_msg *req, struct hvt_msg *reply,
				    int timeout_ms, hvtrace_daemon_cb other,
				    void *arg);

/**
 * hvtrace_daemon_find_remote - find a remote by name
 * @name: NULL picks the only remote (an error if there are several)
 *
 * Return: 0 with @rec filled, -ENOENT or -EINVAL with a message listing
 * the remotes that exist.
 */
HVTRACE_API int hvtrace_daemon_find_remote(struct hvtrace_daemon *c,
					   const char *name,
					   struct hvt_remote_rec *rec);

/**
 * hvtrace_daemon_get_text - fetch a TEXT (all its parts) of a remote
 * @kind: enum hvt_text_kind
 * @out:  malloc'd, NUL-terminated
 */
HVTRACE_API int hvtrace_daemon_get_text(struct hvtrace_daemon *c,
					uint32_t remote, uint32_t kind,
					char **out, size_t *len);

/**
 * hvtrace_daemon_call_result - a request answered by a RESULT (DEFINE, DELETE,
 * ENABLE, TRACING, ATTACH, DETACH, SUBSCRIBE, UNSUBSCRIBE...)
 * @req:  the request (m->req assigned here)
 * @res:  the result (may be NULL); its text is copied to @text
 *
 * Return: the result's status (0 or -errno), or a transport error; the
 * daemon's text, if any, is also set as hvtrace_last_error().
 */
HVTRACE_API int hvtrace_daemon_call_result(struct hvtrace_daemon *c,
					   struct hvt_msg *req,
					   struct hvt_m_result *res, char *text,
					   size_t textsize);

/**
 * hvtrace_daemon_pass_fds - descriptors to pass (SCM_RIGHTS) with the next
 * request sent; at most HVT_ATTACH_MAX_FDS, not closed, not kept after it.
 *
 * Return: 0; -EINVAL.
 */
HVTRACE_API int hvtrace_daemon_pass_fds(struct hvtrace_daemon *c,
					const int *fds, int nr);

/**
 * hvtrace_daemon_attach_vm_pid - attach the guest kernel ring in the memory
 * of VMM process @pid as remote @name (hvtrace daemon attach --vm-pid)
 * @formats: a folder laid out like tracefs (events/SYSTEM/EVENT/format),
 *           or NULL
 * @text:    the daemon's answer
 *
 * The caller finds the ring with its own rights (hvtrace_kring_open_pid():
 * the kernel's ptrace check decides), reads @formats itself (regular
 * files only, never waiting on a FIFO) into a sealed memfd, and passes
 * the pidfd, the memory's descriptors and the formats to hvtraced with
 * an ATTACH_AREA of flag HVT_ATTACH_VM_FDS.
 *
 * Return: 0, or -errno with hvtrace_last_error() saying why.
 */
HVTRACE_API int hvtrace_daemon_attach_vm_pid(struct hvtrace_daemon *c,
					     const char *name, int pid,
					     const char *formats, char *text,
					     size_t textsize);

/**
 * hvtrace_daemon_attach_ram - attach the guest kernel ring in guest RAM
 * file @path as remote @name (hvtrace daemon attach --ram)
 * @formats: a folder laid out like tracefs, or NULL
 * @text:    the daemon's answer
 *
 * The caller opens @path read-only with its own rights (a regular file;
 * hvtraced takes it only on tmpfs, hugetlbfs or a local disk) and reads
 * @formats as hvtrace_daemon_attach_vm_pid() does, and passes both with an
 * ATTACH_AREA of flag HVT_ATTACH_VM_FDS.  hvtraced finds the ring in the
 * file and reads it as it is, to its end: the remote is stopped from the
 * start (a running guest is attached by its VMM's pid).
 *
 * Return: 0, or -errno with hvtrace_last_error() saying why.
 */
HVTRACE_API int hvtrace_daemon_attach_ram(struct hvtrace_daemon *c,
					  const char *name, const char *path,
					  const char *formats, char *text,
					  size_t textsize);

/*
 * --- reading remotes: a page feed and event tables (dfeed.c, dsource.c) ----
 *
 * The one way a remote is read, used by the CLI's stream, stat and
 * record by remote name, by the recorder (libhvtrace-tracedat) and by
 * the tracefs-style view (libhvtrace-fuse).
 *
 * A feed is a tool connection that carries page subscriptions: PAGE
 * messages that arrive while the feed waits for the answer to one of its
 * own requests (DRAIN, TO_HOST, ...) are queued and come out of
 * hvtrace_daemon_feed_next() in the order they arrived.  The queue holds
 * at most 65536 pages (HVTRACE_DAEMON_FEED_PAGES: fewer); a page past
 * that, or one there is no memory for, is dropped and counted: the next
 * page of its subscription and CPU carries the count in dropped_pages and
 * dropped_events, added to the daemon's, and a drain that ends hands on
 * the rest as an empty page.  hvtraced itself reads a CPU only while a
 * subscription of it has room in its queue, so a reader that keeps
 * taking pages loses nothing that the area kept; a reader that starts a
 * drain (hvtrace_daemon_feed_drain_start()) and goes on taking pages
 * queues nothing.  Requests that
 * need no pages (REMOTES, TEXT, ENABLE, ...) are best sent on a separate
 * control connection (struct hvtrace_daemon), which then never sees a page.
 *
 * The event table of a remote comes from FORMATS (header_page,
 * header_event, every format) and TEXT EVENTS (enable bits and state):
 * static events are named "SYSTEM/NAME" in FORMATS, user events by their
 * bare name (system user_events).
 */

/* A page of a subscription, copied out of its frame (free() it). */
struct hvtrace_daemon_page {
	struct hvtrace_daemon_page *next;
	uint32_t remote; /* the remote's id */
	uint32_t sub;	 /* the subscription */
	uint32_t cpu;
	uint32_t flags; /* HVT_PAGEF_* */
	uint32_t seq;
	uint32_t entries;
	uint64_t lost_events;	/* lost in the ring before the page */
	/* Pages and events of this CPU dropped for this subscription, by
	 * hvtraced (it had no room for them) and by the feed (totals): an
	 * increase since the CPU's last page is a loss right before this
	 * page.  A dropped page's events include its lost_events. */
	uint64_t dropped_pages;
	uint64_t dropped_events;
	uint64_t first_ts;
	uint32_t len;
	uint8_t data[]; /* the ftrace sub-buffer */
};

struct hvtrace_daemon_feed;

/** hvtrace_daemon_feed_open - a tool connection for pages (@sock NULL: default)
 */
HVTRACE_API int hvtrace_daemon_feed_open(const char *sock,
					 struct hvtrace_daemon_feed **out);
HVTRACE_API void hvtrace_daemon_feed_close(struct hvtrace_daemon_feed *f);
/** hvtrace_daemon_feed_fd - the socket, for poll(); queued pages do not show
 * there */
HVTRACE_API int hvtrace_daemon_feed_fd(const struct hvtrace_daemon_feed *f);
/** hvtrace_daemon_feed_pending - pages queued in the feed (readable without
 * I/O) */
HVTRACE_API bool
hvtrace_daemon_feed_pending(const struct hvtrace_daemon_feed *f);

/**
 * hvtrace_daemon_feed_subscribe - pages of @remote's CPU @cpu (-1: all)
 * @queue_kib: the connection's page budget at the daemon (0: default)
 * @sub:       the subscription id
 */
HVTRACE_API int hvtrace_daemon_feed_subscribe(struct hvtrace_daemon_feed *f,
					      uint32_t remote, int cpu,
					      uint32_t queue_kib,
					      uint32_t *sub);

/**
 * hvtrace_daemon_feed_next - the next page, queued or received
 * @timeout_ms: 0: only what is there now; -1: wait
 * @page:       set to the page (the caller frees it) or NULL
 *
 * Return: 1 with a page, 0 without one, -ECONNRESET when hvtraced went
 * away.
 */
HVTRACE_API int hvtrace_daemon_feed_next(struct hvtrace_daemon_feed *f,
					 int timeout_ms,
					 struct hvtrace_daemon_page **page);

/**
 * hvtrace_daemon_feed_drain - have hvtraced read @remote's subscribed rings now
 *
 * When it returns 0, every page the writer committed before the call is
 * in the feed's queue (or was dropped for this subscriber, and counted).
 * The pages are queued in memory until the answer comes: a reader of a
 * large backlog is better served by hvtrace_daemon_feed_drain_start().
 * Return: 0, -ENOENT (no such remote), or a transport error.
 */
HVTRACE_API int hvtrace_daemon_feed_drain(struct hvtrace_daemon_feed *f,
					  uint32_t remote);

/**
 * hvtrace_daemon_feed_drain_start - the same DRAIN, without waiting
 *
 * hvtraced reads @remote's subscribed rings to their end (at most a lap of
 * each) at the pace the feed's pages are taken, and answers after the
 * last of them: once hvtrace_daemon_feed_drained() says 1, every page
 * committed before the call has come out of hvtrace_daemon_feed_next() or
 * is queued in the feed.  One drain at a time per feed.
 * Return: 0, -EBUSY (a drain is still out), or a transport error.
 */
HVTRACE_API int
hvtrace_daemon_feed_drain_start(struct hvtrace_daemon_feed *f, uint32_t remote);

/**
 * hvtrace_daemon_feed_drained - whether the drain started last has ended
 * Return: 1 (answered; its pages are queued or taken), 0 (still out, or
 * none started), or the negative errno hvtraced refused it with.
 */
HVTRACE_API int
hvtrace_daemon_feed_drained(const struct hvtrace_daemon_feed *f);

/**
 * hvtrace_daemon_feed_to_host - convert @n writer timestamps of @remote to host
 * CLOCK_MONOTONIC ns with the daemon's clock model (any @n: batched)
 * @err_ns: the model's error bound (may be NULL; UINT64_MAX: no model)
 */
HVTRACE_API int hvtrace_daemon_feed_to_host(struct hvtrace_daemon_feed *f,
					    uint32_t remote, const uint64_t *ts,
					    uint64_t *ns, size_t n,
					    uint64_t *err_ns);

/*
 * Local conversion.  hvtraced sends each subscription's remote's clock
 * model (CLOCK) before its first PAGE and again, ahead of the pages read
 * after it, whenever the model changes; the feed keeps the newest one per
 * remote as it receives them.  These functions map with it, without I/O,
 * through hvtrace_clock_map_to_host(): the same ns and bound that TO_HOST
 * answers for the same model.
 */

/**
 * hvtrace_daemon_feed_ts_to_host - writer timestamp @ts of @remote to host
 * CLOCK_MONOTONIC ns with the newest model the feed received
 * @ns:     set to the host time (@ts itself for a remote without a model)
 * @err_ns: if not NULL, the model's bound at @ts (UINT64_MAX: the times
 *          are not the host's: no model, or no sample fitted yet)
 *
 * Return: 0, or -ENODATA when no CLOCK of @remote arrived (not subscribed
 * yet, or an hvtraced that sends none: hvtrace_daemon_feed_to_host()
 * asks it).
 */
HVTRACE_API int hvtrace_daemon_feed_ts_to_host(struct hvtrace_daemon_feed *f,
					       uint32_t remote, uint64_t ts,
					       uint64_t *ns, uint64_t *err_ns);

/**
 * hvtrace_daemon_feed_ts_to_host_n - @n timestamps at once, as
 * hvtrace_daemon_feed_ts_to_host() (@ts and @ns may be the same array)
 * @err_ns: NULL, or @n bounds
 */
HVTRACE_API int hvtrace_daemon_feed_ts_to_host_n(
	struct hvtrace_daemon_feed *f, uint32_t remote, const uint64_t *ts,
	uint64_t *ns, uint64_t *err_ns, size_t n);

/**
 * hvtrace_daemon_feed_clock - the newest model of @remote the feed received
 * Return: 0, or -ENODATA (none yet).
 */
HVTRACE_API int hvtrace_daemon_feed_clock(const struct hvtrace_daemon_feed *f,
					  uint32_t remote,
					  struct hvtrace_clock_map *m);

/**
 * hvtrace_daemon_ring_open - CPU @cpu of @remote, read through hvtraced, as
 * a ring of the core (hvtrace_ring_open_source()): the record cursor,
 * hvtrace_merge, decoding and text of an area serve it unchanged
 * @f:      the feed (must outlive the ring)
 * @remote: the remote's id
 * @cpu:    its CPU
 * @out:    the new handle (hvtrace_ring_close() unsubscribes)
 *
 * Subscribes @f to @remote's CPU @cpu; pages of that (remote, CPU) go to
 * a queue of their own in the feed, which the ring's get-reader takes
 * from without waiting (never out of hvtrace_daemon_feed_next()), so a
 * ring takes only its own pages whatever order they arrive in.  Records
 * carry host_ns from the daemon's clock model, and as lost_before the
 * ring's own losses plus the events hvtraced dropped for this
 * subscription since its last page.  hvtrace_daemon_feed_drain() then
 * hvtrace_merge_next() with flush reads everything committed before the
 * drain.
 *
 * Return: 0; -ENOENT (no such remote), -EINVAL (no such CPU), -ENOMEM,
 * or a transport error.
 */
HVTRACE_API int hvtrace_daemon_ring_open(struct hvtrace_daemon_feed *f,
					 uint32_t remote, int cpu,
					 struct hvtrace_ring **out);

/* --- remotes and their events (any connection without subscriptions) -- */

/** hvtrace_daemon_get_remotes - every remote (malloc'd array, *n entries) */
HVTRACE_API int hvtrace_daemon_get_remotes(struct hvtrace_daemon *dc,
					   struct hvt_remote_rec **recs,
					   uint32_t *n);

struct hvtrace_daemon_event {
	char system[64];
	char name[256];
	uint32_t id;
	int bit; /* -1: no enable bit */
	bool enabled;
	char *format; /* the format file */
};

struct hvtrace_daemon_events {
	char *header_page;
	char *header_event;
	struct hvtrace_daemon_event *ev;
	unsigned int nr;
};

/**
 * hvtrace_daemon_events_get - formats and enable state of every event of
 * @remote (events with an enable bit; user events and the static ones)
 */
HVTRACE_API int hvtrace_daemon_events_get(struct hvtrace_daemon *dc,
					  uint32_t remote,
					  struct hvtrace_daemon_events *out);
/** hvtrace_daemon_events_state - refresh only the enable state (TEXT EVENTS) */
HVTRACE_API int hvtrace_daemon_events_state(struct hvtrace_daemon *dc,
					    uint32_t remote,
					    struct hvtrace_daemon_events *evs);
HVTRACE_API void hvtrace_daemon_events_free(struct hvtrace_daemon_events *evs);

struct hvtrace_decoder;

/**
 * hvtrace_daemon_decoder_new - a decoder for @rec's pages: its headers, the
 * built-in formats of its writer kind and every format in @evs
 */
HVTRACE_API int
hvtrace_daemon_decoder_new(const struct hvt_remote_rec *rec,
			   const struct hvtrace_daemon_events *evs,
			   struct hvtrace_decoder **out);

/** hvtrace_daemon_comms_load - feed the remote's saved_cmdlines to a decoder */
HVTRACE_API int hvtrace_daemon_comms_load(struct hvtrace_daemon *dc,
					  uint32_t remote,
					  struct hvtrace_decoder *d);

/**
 * hvtrace_daemon_ksyms_load - name a guest kernel remote's functions
 *
 * Installs the remote's kernel symbols (TEXT KALLSYMS: what hvtraced read
 * from a guest kernel's vmcoreinfo when it attached it by pid, or when it
 * read a rig guest's ring from its RAM) in @d, with the module symbols of
 * the table @d had (hvtrace_decoder_set_image_ksyms()), so that %ps
 * arguments and ftrace:print's ip print as function names.
 *
 * Return: 0; -ENOENT when the remote has none (hvtrace_last_error() says
 * why: addresses stay in hex); another -errno.
 */
HVTRACE_API int hvtrace_daemon_ksyms_load(struct hvtrace_daemon *dc,
					  uint32_t remote,
					  struct hvtrace_decoder *d);

/**
 * hvtrace_daemon_comm_read - a comm file (/proc/PID/comm,
 * /proc/PID/task/TID/comm) into @comm, @size bytes, without its newline
 *
 * Return: 0, or -errno (-ENODATA: the file is empty).
 */
HVTRACE_API int hvtrace_daemon_comm_read(const char *path, char *comm,
					 size_t size);

/**
 * hvtrace_daemon_comm_local - name @pid in @d from /proc/PID/comm, unless @d
 * knows it already: for a loopback writer's threads, which run on this host
 */
HVTRACE_API void hvtrace_daemon_comm_local(struct hvtrace_decoder *d, int pid);

/**
 * hvtrace_daemon_page_drops - events dropped for the subscription right
 * before @pg, at its CPU
 * @pg:   a page of the feed
 * @seen: the caller's count for @pg's subscription and CPU (start at 0):
 *        the dropped_events of that CPU's last page, updated
 * Return: the increase of @pg->dropped_events over *@seen.
 */
HVTRACE_API uint64_t
hvtrace_daemon_page_drops(const struct hvtrace_daemon_page *pg,
			  uint64_t *seen);

/**
 * hvtrace_daemon_page_walk - the data events of one ftrace sub-buffer
 * @data, @len: the page (header first), @len bytes
 * @lost:       set to the events lost before the page (from its
 *              RB_MISSED_* bits; UINT64_MAX: an unknown number), or 0
 * @cb:         called for each data event with its timestamp (writer
 *              clock) and payload; a non-zero return stops the walk
 *
 * Bounded by @len: a malformed page stops the walk.
 * Return: the number of events, or -EBADMSG (after the good ones).
 */
HVTRACE_API int hvtrace_daemon_page_walk(
	const uint8_t *data, uint32_t len, uint64_t *lost,
	int (*cb)(void *arg, uint64_t ts, const uint8_t *rec, uint32_t rec_len),
	void *arg);

/* --- what every reader of a remote needs (dsource.c) -------------------- */

/**
 * hvtrace_daemon_feed_to_host_mixed - @n timestamps of several remotes
 * (@remote[i] is stamp i's) to host CLOCK_MONOTONIC ns in place, one TO_HOST
 * per remote in the order they first appear
 * @done: called after each remote with the result of its conversion and
 *        the model's error bound; what it returns goes on (0) or is
 *        returned at once.  NULL: the first error is returned.
 * A remote whose conversion failed keeps its writer timestamps.
 */
HVTRACE_API int hvtrace_daemon_feed_to_host_mixed(
	struct hvtrace_daemon_feed *f, size_t n, const uint32_t *remote,
	uint64_t *ts,
	int (*done)(void *arg, uint32_t remote, int ret, uint64_t err_ns),
	void *arg);

/**
 * hvtrace_daemon_feed_ts_to_host_mixed - as hvtrace_daemon_feed_to_host_mixed(),
 * converting locally (hvtrace_daemon_feed_ts_to_host()) each remote whose
 * model the feed holds; only a remote without one goes to hvtraced
 * (TO_HOST, as hvtrace_daemon_feed_to_host_mixed() does).  @done is
 * called after each run of one remote's stamps, with the bound of its
 * last stamp.
 */
HVTRACE_API int hvtrace_daemon_feed_ts_to_host_mixed(
	struct hvtrace_daemon_feed *f, size_t n, const uint32_t *remote,
	uint64_t *ts,
	int (*done)(void *arg, uint32_t remote, int ret, uint64_t err_ns),
	void *arg);

enum hvtrace_daemon_remote_change {
	HVTRACE_DAEMON_REMOTE_LIVE,    /* as it was */
	HVTRACE_DAEMON_REMOTE_GONE,    /* detached from hvtraced */
	HVTRACE_DAEMON_REMOTE_NEW_RUN, /* its writer re-formatted the area */
	HVTRACE_DAEMON_REMOTE_STOPPED, /* an area whose writer stopped (or died)
					*/
};

/**
 * hvtrace_daemon_remote_now - remote @was in the daemon's list @v (@n entries,
 * from hvtrace_daemon_get_remotes()) and what became of it; @cur: its entry
 * there, or NULL
 */
HVTRACE_API enum hvtrace_daemon_remote_change
hvtrace_daemon_remote_now(const struct hvt_remote_rec *v, uint32_t n,
			  const struct hvt_remote_rec *was,
			  const struct hvt_remote_rec **cur);
/** hvtrace_daemon_remote_stopped - an area remote whose writer stopped or died,
 * a guest kernel ring attached by pid whose VMM exited, or a guest whose
 * QEMU exited (its control socket refuses connections)
 */
HVTRACE_API bool
hvtrace_daemon_remote_stopped(const struct hvt_remote_rec *rec);

/**
 * hvtrace_daemon_stats_get - STATS of @remote: one record per CPU into @st, at
 * most
 * @max, *@n of them (also those received before an error)
 * Return: 0, or -errno (the daemon's error text, an unexpected reply, a
 * transport error).
 */
HVTRACE_API int hvtrace_daemon_stats_get(struct hvtrace_daemon *dc,
					 uint32_t remote, uint32_t max,
					 struct hvt_m_stats *st, uint32_t *n);
/**
 * hvtrace_daemon_feed_stats_to_host - the oldest-event and now stamps of @n
 * STATS records into @ts[2k], @ts[2k+1] (2 * @n entries), on the host clock
 */
HVTRACE_API int hvtrace_daemon_feed_stats_to_host(struct hvtrace_daemon_feed *f,
						  uint32_t remote,
						  const struct hvt_m_stats *st,
						  uint32_t n, uint64_t *ts);

/**
 * hvtrace_daemon_cmdlines_each - @cb for every "PID COMM" line of the comms
 * @remote's agent reported (its saved_cmdlines)
 */
HVTRACE_API int
hvtrace_daemon_cmdlines_each(struct hvtrace_daemon *dc, uint32_t remote,
			     void (*cb)(void *arg, int pid, const char *comm),
			     void *arg);

/**
 * hvtrace_daemon_event_path - the name ENABLE takes for event @name of @system:
 * "SYSTEM/NAME", a user event's bare name
 */
HVTRACE_API void hvtrace_daemon_event_path(char *buf, size_t size,
					   const char *system,
					   const char *name);
/**
 * hvtrace_daemon_enable_event - turn event @path (hvtrace_daemon_event_path())
 * of @remote on or off; the daemon's text goes to @msg (@msgsize bytes, may be
 * 0)
 */
HVTRACE_API int hvtrace_daemon_enable_event(struct hvtrace_daemon *dc,
					    uint32_t remote, const char *path,
					    bool on, char *msg, size_t msgsize);

/**
 * hvtrace_daemon_name_is_remote - does @arg look like a remote name rather than
 * an area (PATH[@OFFSET[+SIZE]])?  A name is 1..31 of [A-Za-z0-9._-] and not an
 * existing regular file (write ./NAME for a file of such a name).
 */
HVTRACE_API bool hvtrace_daemon_name_is_remote(const char *arg);

/* --- The guest kernel's ring of a remote ----------------------------- */

/*
 * A rig guest started with --kernel-events leaves its kernel's ftrace pages
 * where hvtraced reads them (its ring in guest RAM, or in agent copy mode
 * the kernel section its agent copies them into); hvtraced serves them
 * beside the remote's own CPUs.  These functions read them from there: no
 * tool opens the guest's files.
 */
struct hvtrace_daemon_kring;

/**
 * hvtrace_daemon_kformats_dir - where hvtraced keeps the guest kernel's
 * formats that remote @remote's agent sent (a folder laid out like
 * tracefs, in the host's formats cache)
 *
 * Return: 0 with the folder in @buf, -ENOENT when the agent sent none
 * (hvtrace_last_error() says why), or a transport error.
 */
HVTRACE_API int hvtrace_daemon_kformats_dir(struct hvtrace_daemon *dc,
					    uint32_t remote, char *buf,
					    size_t size);
/**
 * hvtrace_daemon_kring_served - whether hvtraced reads the guest kernel's
 * pages of remote @remote itself and serves them beside the remote's own
 * CPUs (TEXT CPUS), so that every tool of the guest reads the same pages
 * and none opens its files
 *
 * Return: 2 (the pages its agent copies), 1 (its ring in guest RAM), 0
 * (none, or an hvtraced older than the text), or a negative errno.
 */
HVTRACE_API int hvtrace_daemon_kring_served(struct hvtrace_daemon *dc,
					    uint32_t remote);
/**
 * hvtrace_daemon_kring_open_served - the guest kernel's pages of remote
 * @remote as hvtraced serves them, and a decoder of @formats (a folder of
 * the guest's formats laid out like tracefs); each CPU is read with
 * hvtrace_daemon_kring_ring_open() and a feed
 *
 * Return: 0 with *@out set; 0 with *@out NULL when hvtraced serves none;
 * or a negative errno (hvtrace_last_error() says why).
 */
HVTRACE_API int
hvtrace_daemon_kring_open_served(struct hvtrace_daemon *dc, uint32_t remote,
				 const char *formats,
				 struct hvtrace_daemon_kring **out);
HVTRACE_API void hvtrace_daemon_kring_close(struct hvtrace_daemon_kring *r);
HVTRACE_API uint32_t
hvtrace_daemon_kring_cpus(const struct hvtrace_daemon_kring *r);
HVTRACE_API uint32_t
hvtrace_daemon_kring_subbuf_size(const struct hvtrace_daemon_kring *r);
HVTRACE_API struct hvtrace_decoder *
hvtrace_daemon_kring_decoder(const struct hvtrace_daemon_kring *r);
/** hvtrace_daemon_kring_copied - whether the pages are the agent's copy
 * (the trace area's kernel section) rather than the ring in guest RAM */
HVTRACE_API bool
hvtrace_daemon_kring_copied(const struct hvtrace_daemon_kring *r);
/**
 * hvtrace_daemon_kring_ring_open - guest CPU @cpu of @r as a ring of the
 * core (hvtrace_ring_open_source()), so that the cursor, hvtrace_merge and
 * the text of an area read it beside the remote's own CPUs
 * @r:      the guest kernel's pages (must outlive the new ring)
 * @cpu:    the guest CPU
 * @f:      the feed the pages come on (hvtraced's CPU of @remote after its
 *          own, as hvtrace_daemon_ring_open() reads those), whose clock
 *          model of @remote puts the guest's trace clock (its
 *          CLOCK_MONOTONIC: the caller checks the formats' trace_clock) on
 *          the host's; must outlive the new ring
 * @remote: the remote whose guest this is
 * @out:    the new handle (hvtrace_ring_close() frees it)
 *
 * Losses are the next record's lost_before: those the page marks (pages
 * the guest overwrote before hvtraced read them, HVTRACE_LOST_UNKNOWN: the
 * guest's ring keeps no count; in copy mode the events the agent and the
 * kernel counted as missed) and those hvtraced dropped for this reader.
 *
 * Return: 0, -EINVAL (a NULL argument, no such CPU), -ENOMEM, or an error
 * of the feed.
 */
HVTRACE_API int hvtrace_daemon_kring_ring_open(struct hvtrace_daemon_kring *r,
					       int cpu,
					       struct hvtrace_daemon_feed *f,
					       uint32_t remote,
					       struct hvtrace_ring **out);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_DAEMON_H */
