/* SPDX-License-Identifier: MIT */
/*
 * Harness for the proxy tests: a private hvtraced and agents on one
 * machine (UNIX sockets, /dev/shm areas, no QEMU), the built workloads,
 * and a libtraceevent decoder fed with the daemon's format texts.
 *
 * Everything lives in a fresh temporary directory; every process started
 * here is killed at exit, and the logs of the daemon and agents are
 * printed when a test fails.  HVT_TEST_KEEP=1 keeps the directory.
 */
#ifndef HVT_PROXY_HARNESS_H
#define HVT_PROXY_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <hvtrace/proto.h>

#include <hvtrace-daemon.h>
#include "hvt_test.h"

struct h_agent {
	char name[32];
	char sock[256];
	char area[256];
	char log[256];
	pid_t pid;
	uint32_t remote;	/* id at hvtraced */
};

struct h_proc {
	pid_t pid;
	int out;		/* its stdout, for h_proc_line() */
	char buf[4096];
	size_t have;
};

extern char h_dir[64];
extern char h_objtree[512];
extern char h_dsock[300];
extern pid_t h_dpid;		/* the hvtraced h_start() started */

/* Create the directory, start hvtraced; returns a connected tool. */
struct hvtrace_daemon *h_start(const char *extra_daemon_args);
/* Once h_dpid was told to stop: reap it, then start a new hvtraced in the
 * same folder (its state file brings back what was attached). */
struct hvtrace_daemon *h_restart(const char *extra_daemon_args);

/* Start an agent with a /dev/shm area; waits until its session is up and
 * its trigger event is registered.  @extra: more agent arguments or NULL. */
void h_agent_start(struct h_agent *a, const char *name, const char *extra);
void h_agent_stop(struct h_agent *a);

/* Run bin/NAME or guest/workloads/NAME with arguments (NULL-terminated),
 * stdout captured.  @path_rel is relative to the object tree. */
void h_proc_start(struct h_proc *p, const char *path_rel, ...);
/* The next stdout line (without newline) within @timeout_ms, or fail. */
const char *h_proc_line(struct h_proc *p, int timeout_ms);
/* Wait for exit; returns the exit status (or 128 + signal). */
int h_proc_wait(struct h_proc *p, int timeout_ms);

/* SUBSCRIBE to every CPU of @remote (@queue_kib: 0 for the daemon's
 * default budget); returns the subscription id. */
uint32_t h_subscribe(struct hvtrace_daemon *dc, uint32_t remote,
		     uint32_t queue_kib);

/* Send @len bytes with descriptor @fd attached (SCM_RIGHTS), as an agent
 * sends its HELLO with the area; returns what sendmsg() returns. */
/* DRAIN @remote: every PAGE before the answer goes to @cb (bounded:
 * 30 s). */
void h_drain(struct hvtrace_daemon *dc, uint32_t remote,
	     void (*cb)(void *arg, const struct hvt_msg *m), void *arg);
ssize_t h_send_with_fd(int sock, const void *buf, size_t len, int fd);

/* A connection of the test's own to hvtraced's socket (fails the test when
 * it cannot), for speaking the protocol by hand. */
int h_connect(void);

/* A HELLO (request 1, version 1) of @role from this process, named @name
 * (none when NULL). */
void h_hello_msg(struct hvt_msg *m, uint8_t role, const char *name);

/* An agent by hand: a fresh 1 MiB area @area (unlinked once open) passed
 * with the HELLO of agent @name on a new connection, which is returned;
 * it does not wait for the answer. */
int h_raw_agent(const char *name, const char *area);

/* Wait until remote @name's session is connected (fails the test after
 * @timeout_ms). */
void h_wait_connected(struct hvtrace_daemon *dc, const char *name,
		      int timeout_ms);

/* Whether a line of file @path holds @needle (false without the file). */
bool h_file_has(const char *path, const char *needle);

/* The remote record of @name (fails the test if it is missing). */
void h_remote(struct hvtrace_daemon *dc, const char *name,
	      struct hvt_remote_rec *rec);

/* A RESULT request; returns the status, text in @text. */
int h_result(struct hvtrace_daemon *dc, uint16_t type, uint32_t remote,
	     uint32_t arg, const char *s, char *text, size_t size);

/* TEXT of a remote (malloc'd). */
char *h_text(struct hvtrace_daemon *dc, uint32_t remote, uint32_t kind);
/* The "KEY: N" line of a remote's info text (fails when missing). */
uint64_t h_info_u64(struct hvtrace_daemon *dc, uint32_t remote,
		    const char *key);

/* libtraceevent decoding of pages from a remote. */
struct tep_handle;
struct tep_handle *h_tep(struct hvtrace_daemon *dc, uint32_t remote);

/*
 * Decode one PAGE with libtraceevent's kbuffer; @cb gets every record
 * (tep_record.ts is the ring timestamp).  Returns the number of records.
 */
struct tep_event;
struct tep_record;
typedef void (*h_rec_cb)(void *arg, struct tep_handle *tep,
			 struct tep_event *ev, struct tep_record *rec);
int h_decode_page(struct tep_handle *tep, const struct hvt_m_page *pg,
		  h_rec_cb cb, void *arg);

/*
 * The e2e workload's records ("hvt_e2e u32 seq; u64 val; __rel_loc char[]
 * msg" from guest/workloads/ue_writer): h_e2e_record() checks every field
 * of each with libtraceevent (and its printed form) and counts it.
 */
struct h_e2e {
	int id;			/* the event's id */
	int pid;		/* expected common_pid (0: any) */
	unsigned int total;	/* seq 0..total-1 expected */
	unsigned int n;		/* records seen */
	unsigned int other;	/* records of other events */
	unsigned int *count;	/* per seq */
};
void h_e2e_record(void *arg, struct tep_handle *tep, struct tep_event *ev,
		  struct tep_record *rec);

/* Wait until @name has @n time-sync samples (fails after @timeout_ms). */
void h_wait_sync(struct hvtrace_daemon *dc, const char *name, uint64_t n,
		 int timeout_ms);

/*
 * The causality check: @rounds TRIGGERs through hvtraced; each event the
 * agent wrote in between must convert (TO_HOST, one event a request) to a
 * host time between the daemon's stamps before and after, give or take
 * the error bound the model states with that conversion.  Fails the test
 * on any protocol problem; conversions beyond their bound are counted in
 * @res as violations, those outside the bracket but within it as outside.
 */
#define H_MAX_ROUNDS	4096
struct h_causality_result {
	unsigned int rounds;
	unsigned int violations;	/* beyond the stated bound */
	unsigned int outside;	/* outside [before, after], within it */
	uint64_t err_ns;	/* the largest bound stated */
	uint64_t samples;	/* time-sync samples the model had */
	int64_t min_before;	/* smallest converted - before */
	int64_t min_after;	/* smallest after - converted */
	uint64_t mean_rtt, max_rtt;
};
void h_causality(struct hvtrace_daemon *dc, const char *name, uint32_t remote,
		 unsigned int rounds, struct h_causality_result *res);

/* Mark the test passed (logs are then not printed at exit). */
/*
 * A stopped loopback writer's area: @cpus CPUs of @pages sub-buffers,
 * consume mode, @events events per CPU, written in full, then attached
 * to the test's hvtraced as @name; its record into @rec.
 */
void h_filled_remote(struct hvtrace_daemon *dc, const char *name,
		     unsigned int cpus, unsigned int events,
		     unsigned int pages, struct hvt_remote_rec *rec);

/* A feed whose queue holds @pages (HVTRACE_DAEMON_FEED_PAGES). */
struct hvtrace_daemon_feed *h_small_feed(const char *pages);

void h_pass(void);

uint64_t h_now_ns(void);

#endif /* HVT_PROXY_HARNESS_H */
