/* SPDX-License-Identifier: MIT */
/*
 * hvtraced internals.  One thread, one epoll loop (main.c); every
 * connection is non-blocking and every queue is bounded.  See
 * docs/proxy.md for the architecture.
 */
#ifndef HVTRACED_DAEMON_H
#define HVTRACED_DAEMON_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <hvtrace.h>
#include <hvtrace/proto.h>

#include <hvtrace-userevents.h>

#define D_AGENT_QUEUE		(1024u * 1024u)	/* bytes to an agent */
#define D_TOOL_REPLY_SLACK	(16u * 1024u * 1024u)	/* replies beyond the
							 * page budget */
#define D_AGENT_MAX_ERRORS	64	/* before a socket agent is dropped */
#define D_TOOL_MAX_ERRORS	64
#define D_MAX_GARBAGE		(64u * 1024u)	/* bytes skipped before a
						 * socket peer is dropped */
#define D_HELLO_DEADLINE_MS	10000	/* for a new connection's HELLO */
#define D_PAGES_PER_TICK	64	/* per CPU per poll round */
#define D_CMDLINE_SLOTS		4096
#define D_MAX_CONNS		1024
#define D_CRED_GROUPS		64	/* groups of a peer looked at */
#define D_MAX_AREA_DIRS		8
#define D_TRIGGER_TIMEOUT_MS	2000
#define D_HELLO_RETRY_MS	2000
#define D_RECONNECT_MS		1000
#define D_SYNC_BURST		32
#define D_SYNC_BURST_GAP_MS	20	/* 32 rounds over 0.6 s: the fastest
					 * samples span the 100 ms the model
					 * needs to fit the rate */
#define D_SYNC_CHAIN		3	/* pings per round: one warm-up, then
					 * two sent back to back */
#define D_PING_TIMEOUT_MS	2000
#define D_TRIGGER_EVENT		"hvtrace_trigger"

/* --- output queues (conn.c) ----------------------------------------------- */

struct out_chunk {
	struct out_chunk *next;
	uint32_t len;
	uint32_t off;
	bool page;		/* counts against the page budget */
	uint8_t data[];
};

struct outq {
	struct out_chunk *head, *tail;
	size_t bytes;
	size_t page_bytes;
};

/* --- connections ---------------------------------------------------------- */

enum conn_role {
	CONN_LISTEN = 1,
	CONN_NEW,		/* accepted, no HELLO yet */
	CONN_AGENT,		/* a local agent on our socket */
	CONN_TOOL,		/* a client of the daemon */
	CONN_CHARDEV,		/* we connected to a guest's chardev socket */
	CONN_SIGNAL,		/* the signalfd */
};

struct remote;
struct sub;

/* A socket peer's credentials (access.c). */
struct d_cred {
	uid_t uid;
	gid_t gid;
	bool root;
	uint32_t nr_groups;
	gid_t groups[D_CRED_GROUPS];
};

struct conn {
	struct conn *next, *prev;
	int fd;
	enum conn_role role;
	uint32_t id;
	pid_t pid;
	uid_t uid;
	struct d_cred cred;	/* socket peers (access.c) */
	char *denied;		/* why access_peer_check() refused it */
	uint32_t ev;		/* epoll events registered */
	bool closing;		/* flush what is queued, then close */
	bool dead;		/* close at the end of this round */
	bool paused;		/* not reading: the peer does not drain */
	uint64_t errors;
	uint64_t frames_in;
	uint64_t rx_ns;		/* when the bytes being handled arrived */
	uint64_t created_ms;
	int fds[2];		/* descriptors received, not yet used */
	int nr_fds;
	struct remote *remote;	/* CONN_AGENT, CONN_CHARDEV */
	struct sub *subs;	/* CONN_TOOL */
	size_t page_budget;	/* CONN_TOOL: page bytes it may have queued */
	struct hvt_proto_dec dec;
	struct outq q;
	uint8_t *rbuf;
};

/* --- remotes -------------------------------------------------------------- */

/* Registrations held by an agent's clients (held.c). */
struct held_ref;
struct held_owner;
struct held_map {
	struct held_ref **rbuckets;
	size_t nr_rbuckets, nr_refs;	/* distinct (owner, event id) */
	struct held_owner **obuckets;
	size_t nr_obuckets, nr_owners;	/* distinct owners (channels) */
};

struct cmdline {
	uint32_t pid;
	char comm[16];
};

/* A raw time-sync round trip (sync.c). */
#define SYNC_WINDOW	64
struct sync_raw {
	uint64_t send;		/* host ns, the PING left */
	uint64_t writer;	/* the writer's reading (midpoint) */
	uint64_t recv;		/* host ns, the PONG arrived */
};

struct trig_run {
	struct conn *tool;
	uint32_t tool_req;
	uint32_t count, done;
	uint32_t req;		/* outstanding TRIGGER */
	uint64_t deadline_ms;
	struct hvt_trigger_rec *recs;
};

struct remote {
	struct remote *next;
	uint32_t id;
	char name[HVT_PROTO_NAME_MAX + 1];
	enum hvt_transport transport;
	enum hvt_remote_state state;
	struct conn *conn;		/* the agent session, or NULL */
	struct hvtrace_area *area;
	struct hvtrace_area_info info;
	struct hvtrace_ue_registry *reg;
	bool tracing_on;

	/* the agent instance we hold references for */
	bool have_instance;
	uint32_t agent_pid;
	uint64_t agent_gen;
	struct held_map held;
	uint64_t refused_regs;		/* REGISTERs over the caps */

	/* enable-bit changes reported by the registry hook */
	struct { uint32_t bit; bool on; } *chg;
	size_t nr_chg, cap_chg;

	/* time sync */
	uint32_t next_req;
	uint32_t ping_req;		/* outstanding PING, 0: none */
	uint64_t ping_seq;
	uint64_t ping_sent_ns;
	unsigned int ping_idx;		/* position in the round's chain */
	uint64_t next_ping_ms;
	unsigned int burst_left;
	uint64_t sync_samples;
	uint64_t sync_bad;
	uint64_t sync_dropped;		/* contradicted by newer samples */
	uint64_t sync_window_ns;	/* width of the last refined sample */
	struct sync_raw raw[SYNC_WINDOW];
	unsigned int raw_next, raw_nr;

	struct trig_run *trig;

	/* a guest's chardev (HVT_TRANSPORT_CHARDEV) */
	char ctl_path[PATH_MAX];
	char area_path[PATH_MAX];
	uint64_t next_try_ms;
	uint64_t area_try_ms;
	uint64_t hello_ms;
	uint64_t session;		/* our HELLOs' generation: one per
					 * connection, so that HELLOs a guest
					 * port delivers late are seen as
					 * repeats, not as a new host */

	uint64_t proto_errors;
	uint64_t pages_read;
	struct cmdline cmdlines[D_CMDLINE_SLOTS];
	uint8_t *page;			/* read buffer, subbuf_size */

	/* HVT_TRANSPORT_AREA: the area alone (area_remote.c) */
	struct area_remote *ar;
};

/* A page subscription of a tool. */
struct sub {
	struct sub *next;		/* in the tool's list */
	uint32_t id;
	struct conn *tool;
	struct remote *remote;
	int cpu;			/* -1: all */
	uint64_t pages;
	uint64_t dropped_pages;
	uint64_t dropped_events;
	uint64_t reported_pages;	/* dropped_pages the tool was told of */
};

/* --- the daemon ----------------------------------------------------------- */

struct daemon {
	int epfd;
	int sfd;
	struct conn *conns;
	unsigned int nr_conns;
	uint32_t next_conn_id;
	struct remote *remotes;
	uint32_t next_remote_id;
	uint32_t next_sub_id;
	unsigned int nr_subs;

	/* options */
	const char *sock_path;
	const char *group;
	unsigned int sock_mode;
	const char *run_dir;
	const char *shm_dir;
	const char *area_dirs[D_MAX_AREA_DIRS];	/* for non-root ATTACH_AREA */
	char area_dir_real[D_MAX_AREA_DIRS][PATH_MAX];
	unsigned int nr_area_dirs;
	size_t client_queue;
	uint32_t sync_interval_ms;
	uint32_t poll_min_us;
	uint32_t poll_max_us;
	unsigned int max_channels;	/* per remote: client channels
					 * holding registrations */
	unsigned int max_registrations;	/* per remote: distinct (channel,
					 * event) registrations */
	int verbose;

	/* page polling */
	uint32_t poll_us;		/* current interval */
	uint64_t next_poll_us;

	volatile int stop;
};

extern struct daemon *D;

/* main.c */
uint64_t d_now_ms(void);
uint64_t d_now_us(void);
uint64_t d_now_ns(void);
void d_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void d_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* access.c */
void access_init(void);
bool access_group_gid(gid_t *gid);
bool access_peer_check(struct d_cred *cr, pid_t pid, uid_t uid, char *why,
		       size_t size);
int access_area_open(const struct d_cred *cr, const char *spec, int *fd_out,
		     char *via, size_t via_size, char *msg, size_t msgsize);

/* conn.c */
/* Answer HELLO @m as @role with @status and @text. */
void conn_reply_hello(struct conn *c, const struct hvt_msg *m, uint32_t role,
		      int status, const char *text);
struct conn *conn_new(int fd, enum conn_role role);
void conn_update_events(struct conn *c);
int conn_send(struct conn *c, const struct hvt_msg *m);
int conn_send_page(struct conn *c, const struct hvt_msg *m);
void conn_flush(struct conn *c);
void conn_handle(struct conn *c, uint32_t events);
void conn_close(struct conn *c);
void conn_reply_result(struct conn *c, const struct hvt_msg *req,
		       uint16_t type, int status, uint32_t id, uint32_t bit,
		       const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
void conn_reply_error(struct conn *c, uint32_t req, uint32_t chan, int status,
		      const char *text);
int conn_take_fd(struct conn *c);
void conns_reap(void);
void conns_deadlines(uint64_t now_ms, uint64_t *next_ms);

/* remote.c */
int remote_new(const char *name, enum hvt_transport t, struct remote **out);
struct remote *remote_by_id(uint32_t id);
struct remote *remote_by_name(const char *name);
int remote_attach_chardev(const char *name, struct remote **out,
			  char *msg, size_t msgsize);
void remote_destroy(struct remote *r);
void remote_agent_hello(struct conn *c, const struct hvt_msg *m);
void remote_agent_frame(struct conn *c, const struct hvt_msg *m);
void remote_conn_lost(struct remote *r, struct conn *c);
void remote_tick(struct remote *r, uint64_t now_ms, uint64_t *next_ms);
void remote_apply_changes(struct remote *r);
int remote_set_tracing(struct remote *r, bool on);
int remote_trigger_start(struct remote *r, struct conn *tool, uint32_t req,
			 uint32_t count, char *msg, size_t msgsize);
void remote_tool_gone(struct conn *tool);
void remote_fill_rec(const struct remote *r, struct hvt_remote_rec *rec);
const char *remote_comm(const struct remote *r, uint32_t pid);
void remote_cmdline_set(struct remote *r, uint32_t pid, const char *comm,
			size_t len);

/* held.c */
typedef void (*held_fn)(void *arg, uint64_t owner, uint32_t id);
bool held_has(const struct held_map *m, uint64_t owner, uint32_t id);
/* Before a registration: -EMFILE for a new owner over @max_owners,
 * -ENOSPC when @max_refs are held; 0 when it may go ahead. */
int held_admit(const struct held_map *m, uint64_t owner,
	       unsigned int max_owners, unsigned int max_refs);
int held_add(struct held_map *m, uint64_t owner, uint32_t id);
void held_dec(struct held_map *m, uint64_t owner, uint32_t id);
/* Forget every ref of @owner (of everyone), calling @fn for each; returns
 * the references they held. */
unsigned int held_take_owner(struct held_map *m, uint64_t owner, held_fn fn,
			     void *arg);
unsigned int held_take_all(struct held_map *m, held_fn fn, void *arg);
void held_free(struct held_map *m);

/* state.c: what was attached, across a restart (RUN_DIR/hvtraced.state) */
void state_changed(void);
void state_save(void);		/* when changed, not while stopping */
void state_restore(void);

/* sync.c */
void sync_sample(struct remote *r, uint64_t send, uint64_t writer,
		 uint64_t recv);

/* tool.c */
void tool_frame(struct conn *c, const struct hvt_msg *m);

/* area_remote.c: remotes that are an area alone (hypervisor, loopback) */
int area_remote_attach(const char *name, const char *spec, uint32_t flags,
		       const struct d_cred *cred,
		       struct remote **out, char *msg, size_t msgsize);
void area_remote_tick(struct remote *r, uint64_t now_ms, uint64_t *next_ms);
void area_remote_free(struct remote *r);
const char *area_remote_spec(const struct remote *r);
/* Static events (built-in, hypervisor) of a remote, by writer kind. */
struct hvtrace_catalog;
const struct hvtrace_catalog *area_remote_catalog(struct remote *r);
bool area_remote_event_on(const struct remote *r, unsigned int i);
int area_remote_set_event(struct remote *r, unsigned int i, bool on);

/* tool_ext.c: tool requests beyond the user-event ones; returns true
 * when it answered @m */
bool tool_ext_request(struct conn *c, struct remote *r,
		      const struct hvt_msg *m);
void tool_ext_attach_area(struct conn *c, const struct hvt_msg *m);
/* Extra FORMAT replies (static events) for FORMATS; returns how many. */
unsigned int tool_ext_nr_formats(struct remote *r);
void tool_ext_send_formats(struct conn *c, struct remote *r,
			   const struct hvt_msg *m, bool more_after);

/* fanout.c */
struct sub *sub_new(struct conn *tool, struct remote *r, int cpu,
		   uint32_t queue_kib);
int sub_remove(struct conn *tool, uint32_t id);
void subs_drop_tool(struct conn *tool);
void subs_drop_remote(struct remote *r);
void fanout_poll(void);
bool fanout_active(void);
/* Read every page of @r that a subscription wants, now; returns pages. */
int fanout_drain_remote(struct remote *r);

#endif /* HVTRACED_DAEMON_H */
