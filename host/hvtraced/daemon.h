/* SPDX-License-Identifier: MIT */
/*
 * hvtraced internals.  One thread, one epoll loop (main.c); every
 * connection is non-blocking and every queue is bounded.  See
 * docs/proxy.md for the architecture, and its "Inside hvtraced" for the
 * files' layers: a file calls only files below it (tests/hvtraced/
 * callgraph checks that no call goes back up).
 */
#ifndef HVTRACED_DAEMON_H
#define HVTRACED_DAEMON_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <hvtrace.h>
#include <hvtrace/abi.h>
#include <hvtrace/proto.h>

#include <hvtrace-userevents.h>

#define D_AGENT_QUEUE		(1024u * 1024u)	/* bytes to an agent */
/* On a stop, how long tools get to take what is queued for them. */
#define D_STOP_FLUSH_MS		2000
#define D_TOOL_REPLY_SLACK	(16u * 1024u * 1024u)	/* replies beyond the
							 * page budget */
#define D_AGENT_MAX_ERRORS	64	/* before a socket agent is dropped */
#define D_TOOL_MAX_ERRORS	64
#define D_MAX_GARBAGE		(64u * 1024u)	/* bytes skipped before a
						 * socket peer is dropped */
#define D_HELLO_DEADLINE_MS	10000	/* for a new connection's HELLO */
#define D_PAGES_PER_TICK	64	/* per CPU per poll round */
#define D_STAGE_PAGES		16	/* per CPU per parallel pass */
#define D_STAGE_BYTES		(256u * 1024u)	/* per CPU staged, at most */
/* CPUs of a remote a subscription may name: every CPU an area can have. */
#define D_MAX_CPUS		HVT_ABI_MAX_CPUS
#define D_READERS_MAX		64	/* --reader-threads at most */
#define D_READERS_AUTO		8	/* automatic: threads at most */
#define D_READERS_AUTO_CPUS	8	/* automatic: an area read in
					 * parallel has this many CPUs
					 * subscribed */
#define D_CMDLINE_SLOTS		4096	/* comms a remote keeps, at most */
#define D_CMDLINE_MIN		16	/* the table's first size */
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
#define D_KEV_WAITS		8	/* KEVENTs in flight per remote */
#define D_KEV_TIMEOUT_MS	5000

/* An agent's upload of its guest kernel's formats (kformats.c). */
#define KF_MAX_FILES		HVT_KFSET_MAX_FILES /* also a format set's */
#define KF_MAX_BYTES		HVT_KFSET_MAX_BYTES /* a real 6.12 kernel: 2 MiB */
#define KF_FILE_MAX		(8u << 20)
#define KF_GUEST_KERNELS	4	/* folders a remote keeps (LRU) */
#define KF_GUESTS_DIR		"guests" /* kformats/guests/REMOTE/KEY */
#define KF_GUESTS_MAX		32	 /* remotes' folders kept (LRU) */
#define KF_GUESTS_EVICT		2	 /* ... of which one BEGIN removes */
struct kf_upload {
	bool active;
	int failed;		/* -errno of a broken upload, for END */
	char why[256];
	char key[HVT_PROTO_RELEASE_MAX + 2 * HVT_PROTO_BUILD_ID_MAX + 8];
	char stage[PATH_MAX];	/* the staging folder */
	char dir[PATH_MAX];	/* where it goes at END */
	int dfd;		/* the staging folder */
	int fd;			/* the file being written */
	char cur[HVT_PROTO_KPATH_MAX + 1];
	uint64_t cur_off;
	uint32_t files, max_files;
	uint64_t bytes;
	uint64_t began_ms;	/* agent.c: when BEGIN came */
	unsigned int evicted;	/* other remotes' folders BEGIN removed */
};

/* A rig guest kernel's files of one boot from its agent (kboot.c). */
enum { KB_CLOCK, KB_CMDLINES, KB_MODSYMS, KB_NR };

struct kboot_file {
	char *text; /* NUL-terminated; NULL while empty */
	size_t len;
	bool have; /* the whole file arrived */
};

struct kboot {
	bool active; /* between BOOT and BOOT_END */
	int failed;  /* -errno of a broken upload, for BOOT_END */
	char why[256];
	int cur; /* the file being received, or -1 */
	uint32_t files;
	uint64_t bytes;
	struct kboot_file in[KB_NR];   /* arriving */
	struct kboot_file done[KB_NR]; /* the last whole upload */
	bool kept;		       /* done[] holds one */
	uint64_t generation;	       /* of the area it came with */
};

/* A tool's change of a guest kernel event, waiting for the agent
 * (kevents.c). */
struct kev_wait {
	uint32_t req;		/* our KEVENT; 0: free */
	uint32_t tool_id;	/* the tool's connection, by id */
	uint32_t tool_req;
	uint32_t tool_chan;
	bool bare;		/* a name that could have been a user event */
	uint64_t deadline_ms;
	char name[HVT_PROTO_EVNAME_MAX + 1];
};

/* --- output queues (conn.c) ----------------------------------------------- */

/*
 * A page as a source read it, shared by every queue it went to: the
 * frames are sent from here (conn.c), so a page is copied once, by the
 * reader, on its way to any number of tools.  The last reference hands
 * it back to a pool for the next read (conn.c).  Main thread only:
 * reader threads fill buffers the main thread gave them.
 */
struct page_buf {
	struct page_buf *next; /* in the pool */
	uint32_t refs;
	uint32_t size; /* bytes data[] holds */
	uint8_t data[];
};

/* A buffer of @size bytes with one reference, or NULL (no memory). */
struct page_buf *page_buf_get(uint32_t size);
void page_buf_put(struct page_buf *pb);
/* @pb when no queue holds it (and it is big enough), else a new one in
 * its place (@pb's reference put); NULL: no memory (@pb put). */
struct page_buf *page_buf_own(struct page_buf *pb, uint32_t size);
void page_bufs_free(void);

struct out_chunk {
	struct out_chunk *next;
	uint32_t len; /* the frame: data[], then tail */
	uint32_t off;
	uint32_t head;		/* bytes of the frame in data[] */
	bool page;		/* counts against the page budget */
	struct ps_ticket *ticket;	/* a page's, released when sent */
	struct page_buf *pb;		/* the tail's, released when sent */
	const uint8_t *tail;		/* the frame's last len - head bytes */
	uint8_t data[];
};

struct outq {
	struct out_chunk *head, *tail;
	size_t bytes;
	size_t page_bytes;
};

/* --- connections ---------------------------------------------------------- */

struct conn;
struct remote;
struct sub;
struct hvtrace_catalog;

/*
 * What a connection is to the connection layer (conn.c): the role handler
 * its frames go to, and the limits it is held to.  conn.c knows no role:
 * agent.c and tool.c each define theirs and register them by the role a
 * HELLO asks for (conn_role_register()).
 */
struct conn_ops {
	const char *name;	/* "agent", "tool": HELLO refusals */
	uint32_t hello_role;	/* HVT_ROLE_* a HELLO asks for */
	uint32_t reply_role;	/* HVT_ROLE_* the daemon answers as */
	/* The first HELLO of an unbound connection that asks for this role:
	 * bind it (conn_bind()) or refuse it. */
	void (*hello)(struct conn *c, const struct hvt_msg *m);
	/* A decoded frame of a bound connection. */
	void (*frame)(struct conn *c, const struct hvt_msg *m);
	/* A frame that did not decode (counted on the connection). */
	void (*bad_frame)(struct conn *c);
	/* The connection closes (once; its descriptor goes later). */
	void (*closed)(struct conn *c);
	/* Its socket took queued bytes (conn_flush()). */
	void (*flushed)(struct conn *c);
	/* Not a peer: the listening socket or the signalfd. */
	void (*event)(struct conn *c, uint32_t events);
	uint32_t rbuf_size;	/* receive buffer */
	size_t queue_max;	/* conn_send() refuses beyond; 0: no limit */
	size_t reply_slack;	/* non-page bytes that disconnect; 0: none */
	unsigned int max_errors;	/* bad frames that disconnect; 0:
					 * never (the decoder resynchronises) */
	bool takes_fds;		/* descriptors passed with frames */
	bool pauses;		/* stops being read while its queue is full */
};

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
	const struct conn_ops *ops;
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
	int fds[HVT_ATTACH_MAX_FDS]; /* descriptors received, not yet used */
	int nr_fds;
	/* role state, never touched by conn.c */
	struct remote *remote;	/* agent, doorbell: the remote it feeds */
	struct tool *tool;	/* a tool's state (tool.c), or NULL */
	struct hvt_proto_dec dec;
	struct outq q;
	uint8_t *rbuf;
};

/*
 * A tool's state (tool.c binds it at the tool's HELLO, subs.c and
 * fanout.c use it): what only a tool connection has.  Its connection
 * points at it (conn->tool) and it at its connection; every other
 * connection (an agent's, a doorbell's) has none.
 */
struct tool {
	struct conn *c;
	struct sub *subs;	/* its page subscriptions (subs.c) */
	size_t page_budget;	/* page bytes it may have queued */
	size_t page_reserve;	/* budget a parallel pass promised */
	bool held;		/* a CPU waits for room in its queue */
	uint32_t caps;		/* its HELLO's HVT_CAP_TOOL_* */
};

/* --- remotes -------------------------------------------------------------- */

/*
 * Where a remote's pages come from (page_source.c): a writer's trace
 * area, a guest kernel's ring.  A remote has a list of them; their CPUs
 * follow each other in the remote's CPU numbers (the first source's CPU 0
 * is the remote's CPU 0, the next one's CPU 0 follows the first's last),
 * so that a remote may read, say, its writer's area and the guest
 * kernel's own ring at once.  fanout.c reads pages only through these
 * ops; a transport adds its sources (page_source_add()) and removes them.
 */
struct page_source;
struct page_source_ops {
	const char *name;	/* "area", "kernel ring" */
	/* What its CPUs are (TEXT CPUS): "user" (a writer's area),
	 * "kernel" (a guest kernel's ring in its RAM), "kernel-copy" (the
	 * kernel's pages its agent copies into the area's section) */
	const char *cpu_kind;
	/* The next validated page of the source's CPU @cpu into @page (of
	 * @size bytes), as hvtrace_cpu_read_page() returns it: 1 a page, 0
	 * none now, -errno. */
	int (*read_page)(struct page_source *ps, uint32_t cpu, uint8_t *page,
			 uint32_t size, struct hvtrace_page_info *info);
	/* The CPU's counters (STATS): pages pending, the writer's drops. */
	int (*cpu_stats)(struct page_source *ps, uint32_t cpu,
			 struct hvtrace_cpu_stats *st);
	/* At the end of a DRAIN: events the writer dropped after its last
	 * page, taken (no page will carry them).  NULL: its pages carry
	 * their own losses. */
	uint64_t (*take_trailing_lost)(struct page_source *ps, uint32_t cpu);
	/* Where the reader of @cpu stands after its last read_page, to be
	 * posted for a restarted daemon once the tools have the page
	 * (struct ps_ticket); post_pos posts one.  NULL: nothing to post
	 * (the source keeps no position for a successor). */
	int (*read_pos)(struct page_source *ps, uint32_t cpu,
			struct hvtrace_read_pos *pos);
	void (*post_pos)(struct page_source *ps, uint32_t cpu,
			 const struct hvtrace_read_pos *pos);
	/* The sub-buffers @cpu holds from its reader's position to the
	 * writer's (TEXT BACKLOG), or -errno.  NULL: it cannot tell. */
	int (*held_subbufs)(struct page_source *ps, uint32_t cpu);
	/* Removed from its remote: free it (what it reads is not its). */
	void (*close)(struct page_source *ps);
	/* read_page of different CPUs may run at once, on the reader
	 * threads (fanout.c) */
	bool parallel;
};

struct page_source {
	struct page_source *next;	/* the remote's, in CPU order */
	const struct page_source_ops *ops;
	uint32_t nr_cpus, nr_subbufs, subbuf_size;
	uint32_t first_cpu;	/* the remote's number of its CPU 0 */
	bool kernel;		/* its CPUs are a guest kernel's */
	struct page_buf *pb;	/* read buffer, subbuf_size (fanout.c) */
	struct ps_held *held;	/* per CPU, with read_pos: the tickets */
};

/*
 * A page read from a source whose position a restarted daemon resumes
 * after (ops->read_pos): the reader's position after it, held by every
 * tool queue the page went to (out_chunk.ticket).  The position is posted
 * when no queue holds this page or an earlier one of its CPU -- the page
 * has reached every socket it went to, whose bytes outlive the daemon --
 * so a daemon killed with pages queued resumes at the first of them, not
 * after them.
 */
struct ps_ticket {
	struct ps_ticket *next, *prev;	/* the CPU's, oldest first */
	struct page_source *ps;		/* NULL once the source is gone */
	uint32_t cpu;			/* the source's */
	uint32_t refs;
	struct hvtrace_read_pos pos;
};

struct ps_held {
	struct ps_ticket *head, *tail;
};

/* --- remotes -------------------------------------------------------------- */

/* Registrations held by an agent's clients (held.c). */
struct held_link;
struct held_map {
	struct held_link **rbuckets;
	size_t nr_rbuckets, nr_refs;	/* distinct (owner, event id) */
	struct held_link **obuckets;
	size_t nr_obuckets, nr_owners;	/* distinct owners (channels) */
};

/*
 * The comms of a remote's processes (remote.c): pid -> comm, one entry per
 * slot pid % D_CMDLINE_SLOTS (a pid takes its slot from the pid before it,
 * counted in @replaced), so at most D_CMDLINE_SLOTS entries whatever an
 * agent sends.  The table grows with use: open addressing over the slot
 * numbers while small, the plain array of D_CMDLINE_SLOTS once it would
 * be as large; an idle remote has none.
 */
struct cmdline {
	uint32_t pid;		/* 0: free */
	char comm[16];
};

struct cmdline_table {
	struct cmdline *v;	/* @cap entries, or NULL */
	uint32_t cap;		/* a power of two, <= D_CMDLINE_SLOTS */
	uint32_t nr;
	uint64_t replaced;	/* entries a later pid of their slot took */
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

/*
 * How a remote is reached: one per transport, whose own struct embeds the
 * struct remote (container_of(), as struct agent_remote does).  Only the
 * implementations know a transport; the rest of the daemon goes through
 * these.
 */
struct remote_ops {
	enum hvt_transport transport;	/* what REMOTES reports */
	const char *name;		/* "socket", "chardev", "area" */
	const char *attached_as;	/* "a guest on", "the area" */
	const char *(*control)(const struct remote *r); /* TEXT INFO */
	const char *(*area_path)(const struct remote *r); /* "": a passed
							    * descriptor */
	const char *(*where)(const struct remote *r);	/* after attached_as */
	/* Its line in the state file (state.c); NULL: not kept. */
	void (*save)(const struct remote *r, FILE *f);
	/* Why it has no pages yet (TEXT INFO), or NULL. */
	const char *(*problem)(const struct remote *r);
	void (*tick)(struct remote *r, uint64_t now_ms, uint64_t *next_ms);
	/* The last of remote_destroy(): the transport's state and the
	 * struct that embeds @r. */
	void (*free)(struct remote *r);

	/* Transports with an agent session (agent.c). */
	void (*hello)(struct remote *r, struct conn *c,
		      const struct hvt_msg *m, bool restarted);
	void (*bye)(struct remote *r, struct conn *c);
	void (*conn_lost)(struct remote *r);

	/* A remote without an agent: the static events of its writer kind
	 * (by catalog index) instead of user events.  NULL: user events. */
	const struct hvtrace_catalog *(*catalog)(struct remote *r);
	bool (*event_on)(const struct remote *r, unsigned int i);
	int (*set_event)(struct remote *r, unsigned int i, bool on);

	/* The event formats its pages need beyond the static and user
	 * events (FORMATS replies, name "SYSTEM/EVENT"); returns how many. */
	size_t (*formats)(const struct remote *r,
			  const struct hvt_m_format **v);
	/* Its writer's symbols as /proc/kallsyms text (TEXT KALLSYMS):
	 * 0 with @text set (the remote's), else -errno with @why set. */
	int (*kallsyms)(const struct remote *r, const char **text, size_t *len,
			const char **why);
};

/* The agent session of a socket or chardev remote (agent.c). */
struct agent_link {
	bool have_instance;	/* the agent instance we hold references
				 * for: */
	uint32_t pid;
	uint64_t gen;
	uint64_t hello_ms;	/* our last HELLO */
	uint64_t session;	/* our HELLOs' generation: one per
				 * connection, so that HELLOs a guest port
				 * delivers late are seen as repeats, not as
				 * a new host */
};

/* Time-sync pings of an agent session (ping.c). */
struct ping_state {
	uint32_t req;		/* outstanding PING, 0: none */
	uint64_t seq;
	uint64_t sent_ns;
	unsigned int idx;	/* position in the round's chain */
	uint64_t next_ms;
	unsigned int burst_left;
};

/*
 * Time sync through the area's control page (sync.c): the round's last
 * PING wakes the agent, which then answers requests on the control page
 * until they stop (guest/agent/shmsync.c).
 */
enum sync_method {
	SYNC_CHANNEL,		/* PING/PONG on the control channel */
	SYNC_SHM,		/* exchanges through the control page */
};

struct sync_shm {
	enum sync_method method;	/* the one the model comes from */
	bool posted;		/* a request waits for the next PONG */
	bool off;		/* the agent does not answer: pings only */
	unsigned int misses;	/* rounds in a row without an answer */
	unsigned int rejects;	/* answers in a row that the model refuted */
	uint64_t rounds_off;	/* ping rounds since it was switched off */
	uint64_t token;		/* xorshift state for the request tokens */
	uint64_t samples;	/* exchanges fed to the model */
	uint64_t rejected;	/* answers that were garbage */
	uint64_t timeouts;
	uint64_t best_ns;	/* narrowest round trip of the last round */
	uint64_t last_ns;	/* when the last exchange was fed */
	uint64_t last_writer;	/* its writer clock */
};

struct remote {
	struct remote *next;
	uint32_t id;
	char name[HVT_PROTO_NAME_MAX + 1];
	const struct remote_ops *ops;
	enum hvt_remote_state state;
	struct conn *conn;		/* the agent session, or NULL */
	struct hvtrace_area *area;	/* the writer's control, or NULL */
	struct hvtrace_area_info info;
	/* where its pages come from (page_source.c), in CPU order; NULL:
	 * none (yet) */
	struct page_source *sources;
	uint32_t nr_cpus;		/* the sources' CPUs, in all */
	struct hvtrace_ue_registry *reg;
	bool tracing_on;
	uint32_t next_req;		/* the daemon's own requests */

	struct held_map held;
	uint64_t refused_regs;		/* REGISTERs over the caps */

	/* enable-bit changes reported by the registry hook */
	struct { uint32_t bit; bool on; } *chg;
	size_t nr_chg, cap_chg;

	/* time sync: pings of an agent session (ping.c), samples (sync.c,
	 * or the area's control page: area_remote.c) */
	struct ping_state ping;
	struct sync_shm shm;
	uint64_t sync_samples;
	uint64_t sync_bad;
	uint64_t sync_dropped;		/* contradicted by newer samples */
	uint64_t sync_window_ns;	/* width of the last refined sample */
	struct sync_raw raw[SYNC_WINDOW];
	unsigned int raw_next, raw_nr;
	/* the model its subscribers were sent last (clocks.c) */
	struct hvtrace_clock_map clock;
	uint64_t clock_gen;		/* 0: none computed yet */

	struct trig_run *trig;		/* trigger.c */

	/* the folder of the guest kernel's formats (an agent's upload, a
	 * kring's DIR), or NULL (remote_set_kf_dir()) */
	char *kf_dir;
	/* armed wakeups (wake.c); fanout.c fills want, found and more */
	struct {
		enum { WAKE_POLL, WAKE_BARRIER, WAKE_ASLEEP } state;
		bool refused;		/* the agent refused a BARRIER */
		bool found, more;	/* the last poll read pages; hit its cap */
		uint64_t data_us;	/* when a poll last read pages */
		/* CPUs 0..63 subscribed at the last poll (what is armed;
		 * remotes of more CPUs never sleep); ~0 when only higher
		 * CPUs are: 0 means nobody reads the remote */
		uint64_t want;
		uint64_t cpus;		/* CPUs armed */
		uint32_t req;		/* the BARRIER out */
		uint64_t armings, barriers, doorbells, sleeps;
		uint64_t bell_rings;	/* rings on the ivshmem eventfd */
		uint64_t relayed;	/* DOORBELLs relayed by the agent */
		uint64_t stale;		/* doorbells while polled: ignored */
		/* The ivshmem doorbell's eventfd (bell.c), or NULL; watched
		 * (not paused) from an arming to its first doorbell. */
		struct conn *bell;
		/* bell.sock's connection until its eventfd comes (bell.c) */
		struct conn *bell_wait;
	} wake;

	uint64_t proto_errors;
	uint64_t pages_read;
	struct cmdline_table cmdlines;	/* remote.c */
	/* parallel reading (fanout.c): the pages a pass read, per CPU */
	struct fo_stage *stage;
	uint64_t thread_pages[D_READERS_MAX];	/* read by reader thread i */
};

#ifndef container_of
#define container_of(ptr, type, member)                                        \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

/*
 * A remote with an agent session: the socket transport's (remote_socket.c)
 * and, inside struct chardev_remote, the chardev transport's.  What only
 * an agent has is here, sized by use: an upload of formats and the
 * kernel event changes in flight take memory once one comes.
 */
struct agent_remote {
	struct remote r;
	struct agent_link agent;	/* agent.c */
	struct kf_upload *kf;		/* kformats.c; NULL until the first */
	struct kboot *kb;		/* kboot.c; NULL until the first */
	bool kboot_promised;		/* the agent's HELLO said it sends
					 * them (HVT_CAP_AGENT_KBOOT) */
	bool kf_settled;		/* this connection's formats exchange
					 * ended (kept, had, or refused) */
	struct kev_wait *kev;		/* D_KEV_WAITS (kevents.c), NULL until
					 * the first */
};

/* @r as an agent's remote, or NULL when its transport has no agent. */
static inline struct agent_remote *agent_remote(struct remote *r)
{
	return r && r->ops->hello ? container_of(r, struct agent_remote, r) :
				    NULL;
}

static inline const struct agent_remote *
agent_remote_c(const struct remote *r)
{
	return r && r->ops->hello ?
		       container_of(r, const struct agent_remote, r) :
		       NULL;
}

/* A page subscription of a tool. */
/* A set of CPUs, every CPU an area may have (fanout.c): never a shift
 * of a 64-bit mask by a CPU number. */
struct d_cpus {
	uint64_t w[D_MAX_CPUS / 64];
};

static inline bool d_cpus_has(const struct d_cpus *s, uint32_t cpu)
{
	return cpu < D_MAX_CPUS && (s->w[cpu / 64] >> (cpu % 64)) & 1;
}

static inline void d_cpus_add(struct d_cpus *s, uint32_t cpu)
{
	if (cpu < D_MAX_CPUS)
		s->w[cpu / 64] |= 1ull << (cpu % 64);
}

static inline bool d_cpus_empty(const struct d_cpus *s)
{
	unsigned int i;

	for (i = 0; i < D_MAX_CPUS / 64; i++)
		if (s->w[i])
			return false;
	return true;
}

struct sub {
	struct sub *next;		/* in the tool's list */
	uint32_t id;
	struct tool *tool;
	struct remote *remote;
	int cpu;			/* -1: all */
	uint64_t pages;
	/* What was dropped for this subscription, per CPU of the remote
	 * (nr_cpus entries): every PAGE of a CPU carries that CPU's
	 * totals, so the tool sees each loss at the CPU it happened. */
	struct sub_cpu {
		uint64_t dropped_pages;
		uint64_t dropped_events;
		uint64_t reported_pages; /* dropped_pages the tool was told of */
	} *cpus;
	uint32_t nr_cpus;
	uint64_t clock_gen;		/* the remote's CLOCK it was sent */
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
	const char *cache_dir;		/* $HVT_CACHE: kformats/ below it */
	int verbose;
	bool state_dirty;		/* remotes came or went (state.c) */

	/* page polling */
	uint32_t poll_us;		/* current interval */
	uint64_t next_poll_us;
	bool wakeups;			/* arm wakeups of agents' remotes */
	uint32_t wake_mark;		/* bytes a doorbell waits for */
	uint32_t wake_backstop_ms;	/* poll interval when all sleep */
	/* reader threads (fanout.c): --reader-threads, 0 automatic */
	unsigned int reader_threads;
	struct hvt_util_workers *readers;	/* started at first use */

	volatile int stop;
};

extern struct daemon *D;

/*
 * The files, from the bottom of the call graph up: a file calls only
 * files listed before it (docs/proxy.md has the map that
 * tests/hvtraced/callgraph.py checks against the objects).
 */

/* daemon.c */
uint64_t d_now_ms(void);
uint64_t d_now_us(void);
uint64_t d_now_ns(void);
void d_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void d_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lower *@next to the deadline @t. */
static inline void d_due(uint64_t *next, uint64_t t)
{
	if (*next > t)
		*next = t;
}

/*
 * The first multiple of @period after @now: periodic checks of many
 * remotes on this grid (writer state polls) wake the loop once a period
 * for all of them, not once for each.
 */
static inline uint64_t d_grid(uint64_t now, uint64_t period)
{
	return (now / period + 1) * period;
}

/* A protocol string into @dst, cut to @size - 1 bytes. */
static inline void d_copy_str(char *dst, size_t size, const struct hvt_str *s)
{
	size_t n = s->len < size - 1 ? s->len : size - 1;

	memcpy(dst, s->ptr, n);
	dst[n] = '\0';
}

/* What is attached changed: state.c rewrites its file. */
static inline void state_changed(void)
{
	D->state_dirty = true;
}

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

/* kformats.c: an agent's upload of its kernel's formats (no daemon state) */
void kf_init(struct kf_upload *u);
void kf_abort(struct kf_upload *u);
bool kf_release_ok(const char *s, size_t len);
int kf_path_ok(const char *p);
int kf_key(char *out, size_t size, const struct hvt_m_kformats *m);
/* At start: the cache's modes to root and group hvtrace only. */
int kf_cache_fix(const char *cache, char *msg, size_t msgsize);
/* 0: send the files; 1: @dir has this kernel's formats already.
 * @in_use (or NULL): is a remote of that name attached (its folder is
 * never evicted to make room for a new remote's)? */
int kf_begin(struct kf_upload *u, const char *cache, const char *owner,
	     bool (*in_use)(const char *remote), const struct hvt_m_kformats *m,
	     char *dir, size_t dir_size, char *msg, size_t msgsize);
int kf_file(struct kf_upload *u, const struct hvt_m_kfile *m);
int kf_end(struct kf_upload *u, const struct hvt_m_kformats *m, char *dir,
	   size_t dir_size, char *msg, size_t msgsize);

/* kboot.c: an agent's files of this boot (no daemon state) */
void kboot_free(struct kboot *kb);
void kboot_abort(struct kboot *kb);
int kboot_begin(struct kboot *kb, const struct hvt_m_kformats *m);
int kboot_file(struct kboot *kb, const struct hvt_m_kfile *m);
/* 0 with @msg saying what was kept (for the area of @generation). */
int kboot_end(struct kboot *kb, const struct hvt_m_kformats *m,
	      uint64_t generation, char *msg, size_t msgsize);
/* File @which (KB_*) of the area of @generation: 0; -ENOENT (none kept
 * for it), -ENODATA (the agent had no such file). */
int kboot_text(const struct kboot *kb, unsigned int which, uint64_t generation,
	       const char **text, size_t *len);

/* access.c */
void access_init(void);
bool access_group_gid(gid_t *gid);
bool access_peer_check(struct d_cred *cr, pid_t pid, uid_t uid, char *why,
		       size_t size);
int access_area_open(const struct d_cred *cr, const char *spec, int *fd_out,
		     char *via, size_t via_size, char *msg, size_t msgsize);
/* A requester's identity read back after a restart, cut down to what the
 * user is now; 0, or -errno with @why when it may no longer attach. */
int access_cred_restore(struct d_cred *cr, char *why, size_t size);

/* conn.c: the connection layer */
void conn_role_register(const struct conn_ops *ops);
struct conn *conn_new(int fd, const struct conn_ops *ops); /* NULL: unbound */
struct conn *conn_listen(int fd);
struct conn *conn_signal(int fd);
void conn_bind(struct conn *c, const struct conn_ops *ops);
/* Answer HELLO @m as @role with @status and @text. */
void conn_reply_hello(struct conn *c, const struct hvt_msg *m, uint32_t role,
		      int status, const char *text);
void conn_update_events(struct conn *c);
int conn_send(struct conn *c, const struct hvt_msg *m);
int conn_send_page(struct conn *c, const struct hvt_msg *m,
		   struct ps_ticket *ticket, struct page_buf *pb);
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
void conns_flush_all(int ms);
void conns_deadlines(uint64_t now_ms, uint64_t *next_ms);

/* ticket.c: when a page's read position may be posted */
/* A ticket for the page just read from @ps's CPU @cpu (one reference,
 * the caller's), or NULL: the source keeps no position, or no memory (then
 * the position is posted at once, as if the page were handed on). */
struct ps_ticket *ticket_new(struct page_source *ps, uint32_t cpu,
			     const struct hvtrace_read_pos *pos);
void ticket_get(struct ps_ticket *t);
/* Drop a reference; the last one posts the CPU's position as far as no
 * ticket before holds it. */
void ticket_put(struct ps_ticket *t);
/* @ps goes: tickets a queue still holds outlive it, the rest are freed. */
void tickets_orphan(struct page_source *ps);
/* Tickets waiting in @r's sources' lists, and in *@queued the pages of
 * those sources tool queues hold (daemon info: positions_held). */
size_t tickets_held(const struct remote *r, size_t *queued);

/* sync.c */
void sync_sample(struct remote *r, uint64_t send, uint64_t writer,
		 uint64_t recv);
/* Post a request on @r's control page before the PING that wakes the
 * agent; true when posted (shared-memory sync is worth trying). */
bool sync_shm_post(struct remote *r);
/* After the PONG of that PING (sent at @ref_send, answered at @ref_recv,
 * its agent's second clock reading @ref_writer): the exchanges, fed to
 * the model. */
void sync_shm_round(struct remote *r, uint64_t ref_writer,
		    uint64_t ref_send, uint64_t ref_recv);
/* Whether a ping's sample is to be fed too: not while shared memory
 * answers (SHM_ALONE_NS since its last sample). */
bool sync_shm_alone(const struct remote *r);
/* What the model comes from, for status text: "shm" or "channel". */
const char *sync_method_name(const struct remote *r);

/* page_source.c: where a remote's pages come from */
/* Add @ps (ops and geometry set) to @r's sources, taking it over (closed
 * on failure): first (its CPUs the remote's first) or last.  -E2BIG when
 * the remote would have more than D_MAX_CPUS CPUs, -ENOMEM. */
int page_source_add(struct remote *r, struct page_source *ps, bool first);
/* Remove @ps from @r's sources and close it. */
void page_source_del(struct remote *r, struct page_source *ps);
/* Every source of @r, closed (remote_destroy()). */
void page_sources_close(struct remote *r);
/* The source of @r's CPU @cpu, and its own number of that CPU in *@local;
 * NULL: no such CPU. */
struct page_source *page_source_of(const struct remote *r, uint32_t cpu,
				   uint32_t *local);
/* The position of the page just read from @ps's CPU @cpu into @pos: 0, or
 * -errno (none: the source keeps no position). */
int page_source_read_pos(struct page_source *ps, uint32_t cpu,
			 struct hvtrace_read_pos *pos);
/* The counters of @r's CPU @cpu (STATS). */
int page_source_cpu_stats(const struct remote *r, uint32_t cpu,
			  struct hvtrace_cpu_stats *st);
/* Area @a (of @info's geometry, the remote's r->area: not taken over) as
 * @r's first source, in place of the one before, which stays on failure
 * (-ENOMEM, -E2BIG). */
int page_source_area(struct remote *r, struct hvtrace_area *a,
		     const struct hvtrace_area_info *info);
/* @r's area source removed, before its area closes. */
void page_source_area_drop(struct remote *r);
/* The guest kernel's section @sec of @r's area (of @info's geometry,
 * taken over: closed on failure) as @r's last source, in *@out. */
int page_source_kernel_section(struct remote *r, struct hvtrace_area *sec,
			       const struct hvtrace_area_info *info,
			       struct page_source **out);
/* The CPUs REMOTES lists and "every CPU" (-1) subscribes: the writer's
 * (its area's, or a kring remote's kernel CPUs).  A guest kernel beside
 * an area comes after them, named by TEXT CPUS and subscribed by number,
 * so that a tool that does not know it sees the remote as before. */
uint32_t page_source_listed_cpus(const struct remote *r);

/* clocks.c: a remote's clock model to its subscribers (CLOCK) */
void clocks_update(struct remote *r);
void clocks_subscribed(struct conn *c, struct sub *s);

/* fanout.c: one round; true when a CPU stopped at the round's page cap
 * with room left in a subscription (a backlog: poll again at once) */
bool fanout_poll(void);
bool fanout_active(void);
void fanout_free(struct remote *r);
void fanout_stop(void);
/* DRAIN @m of tool @c: read @r's subscribed CPUs to their end, at the
 * pace the subscribers take pages, then answer after the pages. */
void fanout_drain_begin(struct conn *c, struct remote *r,
			const struct hvt_msg *m);
/* Forget the DRAINs of tool @c, or of remote @r (either may be NULL). */
void fanout_forget(struct conn *c, struct remote *r);
/* Tool @c's queue went to its socket: read the CPUs held for it. */
void fanout_room(struct conn *c);

/* subs.c: the subscriber role */
void subs_request(struct conn *c, struct remote *r, const struct hvt_msg *m);
void subs_drop_tool(struct conn *tool);
void subs_drop_remote(struct remote *r);
/* Whether a tool subscribed one of @r's CPUs @first..@first+@n-1 by
 * number. */
bool subs_read_cpus(const struct remote *r, uint32_t first, uint32_t n);

/* remote.c: what every remote has */
/* Set up @r, embedded in its transport's zeroed struct, and add it to the
 * daemon's remotes; on failure the caller frees its struct. */
int remote_add(struct remote *r, const char *name,
	       const struct remote_ops *ops);
struct remote *remote_by_id(uint32_t id);
struct remote *remote_by_name(const char *name);
int remote_set_area(struct remote *r, struct hvtrace_area *a);
/* Close @r's area, and its page source, if it has one. */
void remote_close_area(struct remote *r);
int remote_open_area(struct remote *r, const char *path, char *msg,
		     size_t msgsize);
void remote_apply_changes(struct remote *r);
int remote_set_tracing(struct remote *r, bool on);
int remote_held_drop_owner(struct remote *r, uint64_t owner);
void remote_held_drop_all(struct remote *r);
uint32_t remote_next_req(struct remote *r);
void remote_cmdline_set(struct remote *r, uint32_t pid, const char *comm,
			size_t len);
/* "PID COMM" lines in slot order (malloc'd; NULL: out of memory). */
char *remote_cmdline_text(const struct remote *r);
/* Bytes the table holds now. */
size_t remote_cmdline_bytes(const struct remote *r);
/* A copy of @dir as the remote's formats folder (NULL: none). */
int remote_set_kf_dir(struct remote *r, const char *dir);
/* The upload of formats of an agent's remote: whether one is under way. */
bool remote_kf_active(const struct remote *r);
/* What every remote has, freed (remote_destroy(), before ops->free). */
void remote_release(struct remote *r);

/* Whether @r has pages to read: a page source. */
static inline bool remote_has_pages(const struct remote *r)
{
	return r->sources != NULL;
}

/* Whether @r has static events (an area) rather than user events. */
static inline bool remote_static_events(const struct remote *r)
{
	return r->ops->catalog != NULL;
}

/* ping.c: time-sync pings of an agent session */
void ping_burst(struct remote *r);
void ping_reset(struct remote *r);
void ping_answer(struct remote *r, const struct hvt_msg *m, uint64_t recv_ns);
void ping_tick(struct remote *r, uint64_t now_ms, uint64_t *next_ms);

/* wake.c: armed wakeups of agents' remotes */
void wake_reset(struct remote *r);
/* After a poll round: the microseconds to the next (@poll_us, or less
 * while a remote that can sleep has data, or the backstop when all do). */
#define D_WAKE_SETTLE_US 1000u
/* ... and arm only once no page came for this long (see wake.c). */
#define D_WAKE_QUIET_US 10000u
uint64_t wake_after_poll(uint64_t poll_us);
void wake_answer(struct remote *r, const struct hvt_msg *m);
void wake_doorbell(struct remote *r);

/* bell.c: a rig guest's ivshmem doorbell; NULL: none (the agent relays) */
void bell_connect(struct remote *r, const char *path);
/* Close @r's doorbell eventfd and a wait for it. */
void bell_close(struct remote *r);

/* trigger.c */
int trigger_start(struct remote *r, struct conn *tool, uint32_t req,
		  uint32_t count, char *msg, size_t msgsize);
void trigger_answer(struct remote *r, const struct hvt_msg *m,
		    uint64_t recv_ns);
void trigger_cancel(struct remote *r, int status);
void trigger_tick(struct remote *r, uint64_t now_ms, uint64_t *next_ms);
void trigger_tool_gone(struct conn *tool);

/* kevents.c: tools' changes of the guest kernel's events, via the agent */
bool kevents_name_ok(const char *name);	/* SYSTEM or SYSTEM:EVENT */
void kevents_forward(struct conn *tool, struct remote *r,
		     const struct hvt_msg *m, const char *name, bool bare);
bool kevents_answer(struct remote *r, const struct hvt_msg *m);
void kevents_tick(struct remote *r, uint64_t now_ms, uint64_t *next_ms);
void kevents_cancel(struct remote *r, int status);

/* remote_life.c */
void remote_tick(struct remote *r, uint64_t now_ms, uint64_t *next_ms);
void remote_destroy(struct remote *r);

/* remote_socket.c: the socket transport */
extern const struct remote_ops remote_socket_ops;
/* A socket agent's remote, named @name (agent.c, at its first HELLO). */
int remote_socket_new(const char *name, struct remote **out);
/* What struct agent_remote holds beyond @r, freed (the transports'
 * free). */
void agent_remote_release(struct agent_remote *ar);

/* agent.c: the agent role */
extern const struct conn_ops agent_conn_ops;
extern const struct conn_ops agent_chardev_conn_ops;
/* Say HELLO to @r's agent: an answer to @answer, or a new one. */
void agent_send_hello(struct remote *r, const struct hvt_msg *answer,
		      int status, const char *text);

/* chardev.c: the chardev transport */
int remote_attach_chardev(const char *name, uid_t owner, struct remote **out,
			  char *msg, size_t msgsize);

/* area_remote.c: the area transport (hypervisor, loopback) */
int area_remote_attach(const char *name, const char *spec, uint32_t flags,
		       const struct d_cred *cred,
		       struct remote **out, char *msg, size_t msgsize);
/* An entry of the state file, attached again as @cred (state.c). */
int area_remote_restore(const char *name, const char *spec,
			const struct d_cred *cred, struct remote **out,
			char *msg, size_t msgsize);
/* Whether a new attach of its name may replace @r: an entry attached
 * again from the state file whose file is missing (tool.c). */
bool area_remote_stale(const struct remote *r);
/* What a new attach would refuse, checked alone: 0, or -errno with @msg. */
int area_remote_check(const char *name, const char *spec, uint32_t flags,
		      const struct d_cred *cred, char *msg, size_t msgsize);

/* kring_remote.c: the kring transport (a guest kernel ring by VMM pid) */
bool kring_remote_spec(const char *spec);	/* "vmpid:..." */
int kring_remote_attach(const char *name, const char *spec, uint32_t flags,
			int *fds, int nr_fds, const struct d_cred *cred,
			struct remote **out, char *msg, size_t msgsize);
/* The ring @k (of @ki's geometry, taken over: closed on failure) as @r's
 * last source, in *@out. */
int kring_source_add(struct remote *r, struct hvtrace_kring *k,
		     const struct hvtrace_kring_info *ki,
		     struct page_source **out);
/* The symbols of @k's kernel as kallsyms text in *@text (malloc'd), or
 * -errno with why in @why. */
int kring_ksyms_load(struct hvtrace_kring *k, const char *name, char **text,
		     size_t *len, char *why, size_t why_size);

/* kside.c: a rig guest's kernel ring, read beside its agent's area */
struct kside;
/* Open what the guest kernel of @r (whose area file is @area_path, owned
 * by @owner) leaves to read: the kernel section of its area (agent copy
 * mode), else its ring in the RAM file @ram_path; its CPUs after the
 * area's.  0 also when there is none (*@out NULL). */
int kside_open(struct remote *r, const char *area_path, const char *ram_path,
	       uid_t owner, struct kside **out);
/* Its source removed from @r (NULL: gone with the remote's) and *@ks
 * freed. */
void kside_close(struct remote *r, struct kside **ks);
int kside_kallsyms(const struct kside *ks, const char **text, size_t *len,
		   const char **why);
/* The guest's QEMU ended: its ring goes once its RAM file is gone and no
 * tool reads it (the file's memory is not kept for nobody).  True when
 * it went. */
bool kside_release_unread(struct remote *r, struct kside **ks);

/* kring_formats.c: a kring remote's formats (an HVT_KFSET, common/kfset.c) */
int kring_formats_parse(const uint8_t *b, size_t len,
			struct hvt_m_format **out, size_t *nr, char *msg,
			size_t msgsize);
void kring_formats_free(struct hvt_m_format *v, size_t n);

/* tool_events.c, tool_text.c, tool.c: the tool role */
void tool_events_define(struct conn *c, struct remote *r,
			const struct hvt_msg *m);
void tool_events_delete(struct conn *c, struct remote *r,
			const struct hvt_msg *m);
void tool_events_enable(struct conn *c, struct remote *r,
			const struct hvt_msg *m);
void tool_events_text(struct conn *c, struct remote *r,
		      const struct hvt_msg *m);
/* The static events' FORMAT replies; returns how many (nr_static). */
unsigned int tool_events_nr_static(struct remote *r);
void tool_events_send_static(struct conn *c, struct remote *r,
			     const struct hvt_msg *m, bool more_after);
void tool_fill_rec(const struct remote *r, struct hvt_remote_rec *rec);
void tool_text(struct conn *c, struct remote *r, const struct hvt_msg *m);
void tool_formats(struct conn *c, struct remote *r, const struct hvt_msg *m);
void tool_kformats_dir(struct conn *c, struct remote *r,
		       const struct hvt_msg *m);
extern const struct conn_ops tool_conn_ops;

/* state.c: what was attached, across a restart (RUN_DIR/hvtraced.state) */
void state_save(void);		/* when changed, not while stopping */
void state_restore(void);

#endif /* HVTRACED_DAEMON_H */
