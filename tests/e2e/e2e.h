/* SPDX-License-Identifier: MIT */
/*
 * End-to-end tests of the guest path: real QEMU guests (TCG unless KVM
 * proved usable) booted by the rig's launcher from this build's image
 * (hvtrace-agent and the workloads), a private hvtraced (the proxy
 * harness's: tests/proxy/harness.h) that attaches them by name, and
 * libtraceevent decoding of what arrives.
 *
 * Guests run with a --foreground launcher in the test's process group, so
 * a runner that kills the group on a timeout takes QEMU with it (QEMU has
 * the launcher as parent-death signal).  Their runtime folders live in the
 * harness's temporary directory, their areas in /dev/shm under names
 * unique to the test's pid; everything is stopped and removed at exit,
 * and the consoles are printed when a test fails.
 */
#ifndef HVT_E2E_H
#define HVT_E2E_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

#define E_MAX_GUESTS  4
#define E_MAX_THREADS 64

struct e_guest {
	char name[32];
	char console[300];
	char area[300];
	pid_t launcher;	 /* the --foreground launcher */
	uint32_t remote; /* id at hvtraced */
	long con_off;	 /* console read position (e_console_line) */
	bool keep_area;
};

/* The daemon (started by e_init) and a tool connection to it. */
extern struct hvtrace_daemon *e_dc;
extern char e_launcher[600];

/*
 * Skip when QEMU is missing; start a private hvtraced with @daemon_args
 * (NULL for none; areas are looked up in /dev/shm).
 */
void e_init(const char *daemon_args);

/*
 * Boot a guest named after the test's pid and @suffix with the build's
 * image, running @run (NULL: idle), plus launcher arguments @extra
 * (NULL-terminated, may be NULL); wait until it is ready, attach it to
 * hvtraced and wait until its agent is connected.
 */
void e_guest_start(struct e_guest *g, const char *suffix, const char *run,
		   const char *const *extra);

/* Detach it from hvtraced and stop it (bounded); idempotent. */
void e_guest_stop(struct e_guest *g);

/* ATTACH a running guest (again) and wait for its agent's session. */
void e_guest_attach(struct e_guest *g);

/*
 * Stop hvtraced (SIGTERM) and read e_dc to its end meanwhile, every
 * message to @cb (a stop hands the tools what it queued for them: pages
 * whose read positions the next daemon resumes after); e_dc is NULL
 * after.
 */
void e_daemon_stop(void (*cb)(void *arg, const struct hvt_msg *m),
		   void *arg);
/*
 * Start a new hvtraced with the same socket and the options of e_init()
 * (or @args: then those instead); e_dc is connected to it.
 */
void e_daemon_start(const char *args);
/* Both: what the old one still sends goes to e_seq_dispatch(). */
void e_daemon_restart(const char *args);

/* The pid of the hvtraced e_dc talks to (its socket peer). */
pid_t e_daemon_pid(void);

/* Is its QEMU still running? */
bool e_guest_alive(const struct e_guest *g);

/*
 * The next console line (after the last one returned) that starts with
 * @prefix, without the prefix; fails the test after @timeout_ms or when a
 * line starting with @fail_prefix (may be NULL) shows up first.  With
 * @timeout_ms 0 it looks once and returns NULL when there is none yet.
 */
const char *e_console_line(struct e_guest *g, const char *prefix,
			   const char *fail_prefix, int timeout_ms);

/* Wait until the remote's registry has event @name (fails after @ms). */
void e_wait_event(struct e_guest *g, const char *name, int ms);

/* ENABLE/DISABLE an event (fails the test on an error). */
void e_enable(struct e_guest *g, const char *event, bool on);

/* SUBSCRIBE to every CPU of the guest; returns the subscription id. */
uint32_t e_subscribe(struct e_guest *g);

/*
 * DRAIN: ask hvtraced to read the guest's rings now; every page committed
 * before the call reaches @cb (PAGE messages of any subscription) before
 * this returns.
 */
void e_drain(struct e_guest *g, void (*cb)(void *arg, const struct hvt_msg *m),
	     void *arg);

/* STATS of every CPU: fills @st (indexed by CPU), returns the count. */
unsigned int e_stats(struct e_guest *g, struct hvt_m_stats *st,
		     unsigned int max);
#define E_ST_WRITTEN 0
#define E_ST_LOST    5
#define E_ST_READ    8
#define E_ST_ERRORS  10

/* The guest's remote record. */
void e_remote(struct e_guest *g, struct hvt_remote_rec *rec);

/* Writer timestamp @ts of guest @g on the host's clock, by hvtraced's
 * model (TO_HOST); its error bound in *@err unless @err is NULL. */
uint64_t e_to_host(struct e_guest *g, uint64_t ts, uint64_t *err);

/*
 * Records of guest/workloads/ue_seq ("hvt_seq u32 thread; u32 seq; u64
 * val; __rel_loc char[] tag"): each is checked field by field (val, tag)
 * and remembered, so that e_seq_check() can prove exact delivery.
 */
struct e_seq {
	int id; /* hvt_seq's event id */
	unsigned int threads;
	uint32_t max_seq;		 /* seqs per thread the arrays hold */
	char tag[64];			 /* expected tag (the guest's name) */
	uint8_t *seen[E_MAX_THREADS];	 /* per seq: times seen */
	uint64_t *ts[E_MAX_THREADS];	 /* ring time of each seq */
	uint8_t *cpu[E_MAX_THREADS];	 /* CPU it was read from */
	uint32_t last[E_MAX_THREADS][8]; /* per thread and CPU: last
					  * seq + 1 seen there */
	uint64_t n;			 /* hvt_seq records */
	uint64_t per_cpu[8];
	uint64_t other;	  /* records of other events */
	uint64_t lost;	  /* PAGE lost_events, summed */
	uint64_t dropped; /* pages hvtraced dropped for us: events */
	uint64_t pages;
	uint32_t sub; /* the subscription whose pages count */
	struct tep_handle *tep;
};

/*
 * Fetch the formats, then SUBSCRIBE to every CPU of @g.  From then on
 * only e_seq_collect(), e_drain(.., e_seq_dispatch, ..) and calls that
 * pass e_seq_dispatch may receive on e_dc: any other request would drop
 * the pages that arrive meanwhile.
 */
void e_seq_init(struct e_seq *s, struct e_guest *g, unsigned int threads,
		uint32_t max_seq);
void e_seq_free(struct e_seq *s);
/* A PAGE callback (for hvtrace_daemon_call/e_drain) feeding @arg (e_seq). */
void e_seq_msg(void *arg, const struct hvt_msg *m);
/*
 * Feeds a PAGE to every e_seq initialised (each takes its own sub's), and
 * every message to e_page_hook (when set), for other subscriptions.
 */
void e_seq_dispatch(void *unused, const struct hvt_msg *m);
extern void (*e_page_hook)(void *arg, const struct hvt_msg *m);
extern void *e_page_hook_arg;
/* Receive for up to @ms, feeding every e_seq; returns when @s has @until
 * records (0: no such condition). */
void e_seq_collect(struct e_seq *s, int ms, uint64_t until);
/*
 * Collect until the guest's console shows "ue_seq: done ..." (fails on
 * "ue_seq: error"), then DRAIN; returns the rest of the done line.
 */
const char *e_seq_until_done(struct e_seq *s, struct e_guest *g, int ms);
/* The "KEY=N" value in a ue_seq line (fails when missing). */
unsigned long long e_kv(const char *line, const char *key);
/*
 * Exactness: for each thread, seqs [0, @count) seen exactly once each, in
 * ring-time order; nothing else.  Fails the test with the first problem.
 */
void e_seq_check_exact(const struct e_seq *s, uint32_t count);

#endif /* HVT_E2E_H */
