/* SPDX-License-Identifier: MIT */
/*
 * hvtrace proxy protocol: the message codec shared by the guest agent, its
 * clients, the host daemon (hvtraced) and the host tools.
 *
 * Messages travel over any byte stream: a UNIX socket on one machine, or a
 * virtio-serial port between a guest and its host (QEMU exposes the host
 * end as a chardev UNIX socket; the guest end is a character device).  The
 * codec does no I/O and no allocation: the caller gives it buffers, so it
 * can be fuzzed and linked anywhere.  docs/proxy.md has the byte layouts,
 * the state machines and the failure behaviour.
 *
 * Frame (all fields little-endian):
 *
 *   0  u32 magic      HVT_PROTO_MAGIC ("HVTP")
 *   4  u32 len        bytes of the whole frame, header included
 *   8  u16 type       enum hvt_msg_type
 *  10  u8  version    HVT_PROTO_VERSION
 *  11  u8  flags      HVT_PF_*
 *  12  u32 req        request id; a reply carries its request's id
 *  16  u32 chan       agent stream: the agent's client (0: the agent);
 *                     tool connection: the remote the request is about
 *  20  u32 reserved   0
 *  24  u32 psum       hvt_proto_sum() of the payload
 *  28  u32 hsum       hvt_proto_hsum() of bytes 0..27
 *  32  payload        len - 32 bytes, laid out per type (see below)
 *
 * Two checksums let a reader of a character device, which may start in the
 * middle of a frame, or see a frame cut short by a reconnect, find the next
 * real frame: a header is trusted only when its magic and hsum match, and
 * a frame only when its psum matches too.  They protect framing, not
 * against a hostile peer: every message is validated after that.
 */
#ifndef HVTRACE_PROTO_H
#define HVTRACE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define HVT_PROTO_MAGIC		0x50545648u	/* "HVTP" */
#define HVT_PROTO_VERSION	1u
#define HVT_PROTO_MIN_VERSION	1u
#define HVT_PROTO_HDR_SIZE	32u

/* Largest frame any endpoint accepts (a 64 KiB page plus its header). */
#define HVT_PROTO_MAX_FRAME	(256u * 1024u)
/* Largest frame on an agent stream or an agent's client socket. */
#define HVT_PROTO_AGENT_FRAME	(16u * 1024u)

/* Limits of variable fields. */
#define HVT_PROTO_NAME_MAX	31u	/* remote names: [A-Za-z0-9._-] */
#define HVT_PROTO_DEF_MAX	4096u	/* definitions, names, lines */
#define HVT_PROTO_TEXT_MAX	1024u	/* error and status messages */
#define HVT_PROTO_COMM_MAX	15u	/* TASK_COMM_LEN - 1 */
#define HVT_PROTO_EVNAME_MAX	256u	/* FORMAT record names */
#define HVT_PROTO_MAX_TS	4096u	/* TO_HOST timestamps per request */
#define HVT_PROTO_MAX_TRIGGERS	4096u	/* TRIGGER_RUN records */
#define HVT_PROTO_MAX_REMOTES	1024u
#define HVT_PROTO_MIN_PAGE	16u
#define HVT_PROTO_MAX_PAGE	65536u
#define HVT_PROTO_MAX_STATUS	4095	/* statuses are 0 or -1..-4095 */

/* Header flags. */
#define HVT_PF_REPLY		0x01u	/* answers request 'req' */
#define HVT_PF_MORE		0x02u	/* more replies to 'req' follow */
#define HVT_PF_ALL		(HVT_PF_REPLY | HVT_PF_MORE)

enum hvt_msg_type {
	/* session, any connection */
	HVT_MSG_HELLO = 1,
	HVT_MSG_BYE = 2,
	HVT_MSG_ERROR = 3,		/* reply only: request refused */
	/* user events: client -> agent -> host, tool -> daemon */
	HVT_MSG_REGISTER = 16,
	HVT_MSG_UNREGISTER = 17,
	HVT_MSG_DELETE = 18,
	HVT_MSG_CLIENT_GONE = 19,
	HVT_MSG_CMDLINE = 20,
	/* host -> agent */
	HVT_MSG_EVENT_STATE = 32,	/* notice */
	HVT_MSG_TRACING = 33,		/* notice to agents, request by tools */
	HVT_MSG_PING = 34,
	HVT_MSG_TRIGGER = 35,
	/* the guest kernel's own ftrace, through the agent */
	HVT_MSG_KFORMATS = 36,		/* agent -> host: begin/end of an
					 * upload of the kernel's formats */
	HVT_MSG_KFILE = 37,		/* agent -> host: a piece of one file
					 * of that upload (no reply) */
	HVT_MSG_KEVENT = 38,		/* host -> agent: ARG, enable (1) or
					 * disable (0) "system[:event]" in
					 * the kernel instance */
	/* armed wakeups (docs/design.md, "Waking the reader") */
	HVT_MSG_DOORBELL = 48,		/* agent -> host notice: a writer rang */
	HVT_MSG_BARRIER = 49,		/* host -> agent: a full barrier on
					 * every CPU of the guest's writers */
	/* tool -> daemon */
	HVT_MSG_REMOTES = 64,
	HVT_MSG_TEXT = 65,
	HVT_MSG_DEFINE = 66,
	HVT_MSG_ENABLE = 67,
	HVT_MSG_FORMATS = 68,
	HVT_MSG_STATS = 69,
	HVT_MSG_SUBSCRIBE = 70,
	HVT_MSG_UNSUBSCRIBE = 71,
	HVT_MSG_PAGE = 72,		/* daemon -> tool, per subscription */
	HVT_MSG_TO_HOST = 73,
	HVT_MSG_TRIGGER_RUN = 74,
	HVT_MSG_ATTACH = 75,
	HVT_MSG_DETACH = 76,
	/* tool -> daemon: remotes that are an area only (no agent) */
	HVT_MSG_ATTACH_AREA = 77,	/* ARG "NAME=PATH[@OFFSET[+SIZE]]";
					 * arg: HVT_ATTACH_* flags */
	HVT_MSG_DRAIN = 78,		/* read the remote's rings now: every
					 * page committed before the request
					 * precedes the RESULT reply */
	HVT_MSG_KFORMATS_DIR = 79,	/* EMPTY -> TEXT: the host folder with
					 * the remote's guest kernel formats */
	HVT_MSG_CLOCK = 80,		/* daemon -> tool notice, per
					 * subscription: the remote's clock
					 * model, ahead of the pages it maps */
};

/* KFORMATS ops. */
enum hvt_kformats_op {
	HVT_KF_BEGIN = 1,    /* nr_files: files that follow; reply id 1:
			      * the host has this build already */
	HVT_KF_END = 2,	     /* nr_files, total_bytes: what was sent */
	HVT_KF_BOOT = 3,     /* nr_files of this boot follow (only to a
			      * daemon of HVT_CAP_DAEMON_KBOOT):
			      * trace_clock, saved_cmdlines, kallsyms
			      * (the modules' lines); kept in memory
			      * for the session's area, not cached */
	HVT_KF_BOOT_END = 4, /* nr_files, total_bytes of the BOOT */
	HVT_KF_OP_MAX = 4,
};

/* KFILE flags. */
#define HVT_KFILE_LAST		0x1u	/* the file's last piece */
#define HVT_KFILE_ALL		HVT_KFILE_LAST

/* Limits of a kernel formats upload. */
#define HVT_PROTO_RELEASE_MAX	64u	/* uname -r */
#define HVT_PROTO_BUILD_ID_MAX	64u	/* build id bytes (hex: twice) */
#define HVT_PROTO_KPATH_MAX	255u	/* a file's path in the upload */

/* ATTACH_AREA flags (the ARG's arg). */
#define HVT_ATTACH_DISABLED	0x1u	/* start with every event disabled */
/*
 * A "vmpid:" attach whose descriptors come with the frame (SCM_RIGHTS),
 * opened by the client with its own rights: the VMM's pidfd, the memory
 * the client found the ring in, and the formats it read.  The spec then is
 * "vmpid:PID,map=BASE+SIZE@FOFF" (fds: pidfd, the shared RAM file) or
 * "vmpid:PID,mem=BASE+SIZE" (fds: pidfd, /proc/PID/mem, /proc/PID/pagemap),
 * then optionally ",formats=DIR" (one more fd: a sealed memfd holding an
 * HVT_KFSET; DIR is only named, never opened).  Areas refuse the flag.
 */
#define HVT_ATTACH_VM_FDS	0x2u
#define HVT_ATTACH_MAX_FDS	4u
#define HVT_ATTACH_ALL		(HVT_ATTACH_DISABLED | HVT_ATTACH_VM_FDS)

/*
 * A set of guest kernel formats in one buffer (HVT_ATTACH_VM_FDS): the 8
 * bytes HVT_KFSET_MAGIC, then records of u16 name length, u32 text length
 * (little-endian), the name "SYSTEM/EVENT" and the format file's text.
 */
#define HVT_KFSET_MAGIC		"hvtkfs1\n"
#define HVT_KFSET_MAGIC_LEN	8u
#define HVT_KFSET_REC_HDR	6u
#define HVT_KFSET_TEXT_MAX	(64u << 10)	/* one format file */
#define HVT_KFSET_MAX_FILES	16384u		/* records hvtraced takes */
#define HVT_KFSET_MAX_BYTES	(16u << 20)	/* texts, all together */

/* HELLO roles. */
enum hvt_role {
	HVT_ROLE_AGENT = 1,	/* a guest agent or local agent */
	HVT_ROLE_HOST = 2,	/* the host daemon, on an agent stream */
	HVT_ROLE_CLIENT = 3,	/* an application, on the agent's socket */
	HVT_ROLE_TOOL = 4,	/* the CLI and other daemon clients */
	HVT_ROLE_DAEMON = 5,	/* the daemon, answering a tool */
};

/* BYE reasons. */
enum hvt_bye_reason {
	HVT_BYE_NORMAL = 0,
	HVT_BYE_SHUTDOWN = 1,
	HVT_BYE_PROTOCOL = 2,	/* the peer broke the protocol */
	HVT_BYE_REPLACED = 3,	/* a newer session took over */
	HVT_BYE_MAX = 3,
};

/* REGISTER flags. */
#define HVT_REG_REPLAY		0x1u	/* re-sent after a reconnect; want_id
					 * and want_bit hold the old binding */
#define HVT_REG_ALL		HVT_REG_REPLAY

/* TRACING ops. */
enum hvt_tracing_op {
	HVT_TRACING_QUERY = 0,
	HVT_TRACING_OFF = 1,
	HVT_TRACING_ON = 2,
};

/* TEXT: which text (tool request). */
enum hvt_text_kind {
	HVT_TEXT_STATUS = 1,	      /* user_events_status */
	HVT_TEXT_DYNAMIC_EVENTS = 2,  /* dynamic_events */
	HVT_TEXT_CMDLINES = 3,	      /* saved_cmdlines: "PID COMM" */
	HVT_TEXT_HEADER_PAGE = 4,     /* events/header_page */
	HVT_TEXT_HEADER_EVENT = 5,    /* events/header_event */
	HVT_TEXT_INFO = 6,	      /* human-readable remote summary */
	HVT_TEXT_EVENTS = 7,	      /* every event of the remote, one
				       * "SYSTEM NAME ID BIT ENABLED" line
				       * each (BIT -1: no enable bit) */
	HVT_TEXT_KALLSYMS = 8,	      /* a guest kernel remote's symbols,
				       * /proc/kallsyms lines */
	HVT_TEXT_BACKLOG = 9,	      /* what each CPU still holds for its
				       * reader: one "CPU SUBBUFS" line per
				       * CPU whose page source can tell
				       * (an area's); a hint, as shared
				       * memory says it.  An older daemon
				       * refuses the kind (an error reply) */
	HVT_TEXT_CPUS = 10,	      /* what each CPU of the remote is: one
				       * "CPU KIND SUBBUF_SIZE NR_SUBBUFS"
				       * line per CPU, KIND "user" (the
				       * writer's area), "kernel" (a guest
				       * kernel's ring in its RAM) or
				       * "kernel-copy" (the kernel's pages
				       * its agent copies).  A guest kernel
				       * beside an area has CPUs past the
				       * REMOTES record's nr_cpus, which
				       * lists the writer's: subscribed by
				       * number, never by -1.  An older
				       * daemon refuses the kind */
	HVT_TEXT_KBOOT_CLOCK = 11,    /* a rig guest's kernel, this boot
				       * (its agent sent them: KFORMATS
				       * BOOT): the ring instance's
				       * trace_clock, */
	HVT_TEXT_KBOOT_CMDLINES = 12, /* its saved_cmdlines, */
	HVT_TEXT_KBOOT_MODSYMS = 13,  /* the /proc/kallsyms lines of its
				       * modules ("ADDR TYPE NAME\t[MOD]").
				       * -EAGAIN while the agent said it
				       * sends them and has not yet,
				       * -ENOENT when it will not (an older
				       * agent, no tracefs); an older
				       * daemon refuses the kinds */
	HVT_TEXT_MAX = 13,
};

/* HELLO caps of a tool: it takes REMOTES records of state
 * HVT_REMOTE_MISSING (a tool without it is sent HVT_REMOTE_WAITING, which
 * an older codec accepts). */
#define HVT_CAP_TOOL_MISSING	(1u << 0)
/* HELLO caps of a tool: it takes REMOTES records of state
 * HVT_REMOTE_POWERED_OFF (a tool without it is sent
 * HVT_REMOTE_DISCONNECTED, as before). */
#define HVT_CAP_TOOL_POWERED_OFF (1u << 1)
/* HELLO caps of a tool: it takes REMOTES records of the rig guest's
 * states HVT_REMOTE_PANICKED and HVT_REMOTE_CRASHED (a tool without it is
 * sent HVT_REMOTE_DISCONNECTED, as before) and HVT_REMOTE_BOOTING (sent
 * HVT_REMOTE_WAITING). */
#define HVT_CAP_TOOL_RIG_STATES	(1u << 2)
/* HELLO caps of the daemon to an agent: it takes KFORMATS BOOT. */
#define HVT_CAP_DAEMON_KBOOT (1u << 16)
/* HELLO caps of an agent: it sends this boot's kernel files (KFORMATS
 * BOOT) at the start of each session with a daemon that takes them. */
#define HVT_CAP_AGENT_KBOOT (1u << 17)

/* Remote states (REMOTES records). */
enum hvt_remote_state {
	HVT_REMOTE_WAITING = 1,		/* attached, no agent session yet */
	HVT_REMOTE_CONNECTED = 2,	/* agent session up */
	HVT_REMOTE_DISCONNECTED = 3,	/* agent gone; area still readable */
	HVT_REMOTE_MISSING = 4,		/* attached again from the state
					 * file, its area file is gone:
					 * nothing to read (TEXT INFO says
					 * which file) */
	HVT_REMOTE_POWERED_OFF = 5,	/* a rig guest whose QEMU ended
					 * after the guest powered itself
					 * off (the rig's record
					 * RUN_DIR/NAME.ended says so); its
					 * area stays readable */
	HVT_REMOTE_PANICKED = 6,	/* a rig guest whose kernel panicked
					 * (its record says "panicked");
					 * its area stays readable */
	HVT_REMOTE_CRASHED = 7,		/* a rig guest whose QEMU ended
					 * otherwise: killed, or an error
					 * (its record says "crashed") */
	HVT_REMOTE_BOOTING = 8,		/* a rig guest whose QEMU is reached
					 * and whose agent has not come up
					 * since (after an agent's goodbye:
					 * HVT_REMOTE_WAITING) */
	HVT_REMOTE_STATE_MAX = 8,
};

/* Remote transports. */
enum hvt_transport {
	HVT_TRANSPORT_SOCKET = 1,	/* a local agent on the daemon socket */
	HVT_TRANSPORT_CHARDEV = 2,	/* a guest's virtio-serial chardev */
	HVT_TRANSPORT_AREA = 3,		/* an area alone: the daemon owns its
					 * control page (hypervisor, loopback
					 * writer) */
	HVT_TRANSPORT_KRING = 4,	/* a guest kernel's ftrace ring in
					 * the memory of a VMM process */
	HVT_TRANSPORT_MAX = 4,
};

/*
 * The word of a remote state, the same in hvtrace list, hvtrace guest
 * status and the mount's remotes/NAME/state.  A rig guest's (transport
 * HVT_TRANSPORT_CHARDEV) are the launcher's words for the same moments
 * (hvtrace-guest(1), "States"): "booting" until its agent first comes up,
 * "ready" while it is up; after its QEMU ended, the word its record
 * gives.
 */
static inline const char *hvt_remote_state_word(uint32_t s, uint32_t transport)
{
	int rig = transport == HVT_TRANSPORT_CHARDEV;

	return s == HVT_REMOTE_WAITING	       ? "waiting"
	       : s == HVT_REMOTE_BOOTING       ? "booting"
	       : s == HVT_REMOTE_CONNECTED     ? (rig ? "ready" : "connected")
	       : s == HVT_REMOTE_DISCONNECTED  ? "disconnected"
	       : s == HVT_REMOTE_MISSING       ? "missing"
	       : s == HVT_REMOTE_POWERED_OFF   ? "powered-off"
	       : s == HVT_REMOTE_PANICKED      ? "panicked"
	       : s == HVT_REMOTE_CRASHED       ? "crashed"
					       : "?";
}

/* PAGE flags. */
#define HVT_PAGEF_TAIL		0x1u	/* the writer's current page */
#define HVT_PAGEF_ALL		HVT_PAGEF_TAIL

/* CLOCK flags. */
#define HVT_CLOCKF_SYNCED	0x1u	/* a time-sync sample was fitted */
#define HVT_CLOCKF_ALL		HVT_CLOCKF_SYNCED
/* CLOCK's rate_int bound (the model clamps its rate there), and the
 * largest finite IEEE 754 binary64 as bits: rate_err and drift_half are
 * doubles sent as their bits, and a non-negative finite double's bits,
 * read as a signed integer, lie in 0..HVT_CLOCK_DOUBLE_MAX. */
#define HVT_CLOCK_RATE_INT_MAX	(1ull << 62)
#define HVT_CLOCK_DOUBLE_MAX	0x7fefffffffffffffll

/* --- checksums --------------------------------------------------------- */

/**
 * hvt_proto_sum - payload checksum (position dependent, 32 bits)
 * @p:   bytes
 * @len: number of bytes
 */
uint32_t hvt_proto_sum(const void *p, uint32_t len);

/* The same sum in pieces: init with the whole length, add the pieces in
 * order (each but the last a multiple of 8 bytes), end. */
struct hvt_proto_sum_state {
	uint64_t a, s;
};
void hvt_proto_sum_init(struct hvt_proto_sum_state *st, uint32_t len);
void hvt_proto_sum_add(struct hvt_proto_sum_state *st, const void *p,
		       uint32_t len);
uint32_t hvt_proto_sum_end(const struct hvt_proto_sum_state *st);

/** hvt_proto_hsum - checksum of the first 28 bytes of a frame header */
uint32_t hvt_proto_hsum(const void *hdr);

/* --- decoded views ------------------------------------------------------ */

/* A string inside a frame: not NUL-terminated, never contains a NUL. */
struct hvt_str {
	const char *ptr;
	uint32_t len;
};

/* An array of little-endian records inside a frame (read with the
 * hvt_msg_*_at() accessors). */
struct hvt_arr {
	const uint8_t *ptr;
	uint32_t count;
};

struct hvt_m_hello {
	uint16_t min_version;
	uint16_t max_version;
	uint8_t role;		/* enum hvt_role */
	uint8_t nr_fds;		/* descriptors sent with the frame, 0..2 */
	uint32_t caps;		/* capability bits; unknown ones ignored */
	uint32_t pid;
	uint32_t nr_cpus;	/* area geometry (agent and client replies) */
	uint32_t clock_id;
	uint32_t writer_kind;
	uint64_t area_offset;
	uint64_t area_size;
	uint64_t generation;
	int32_t status;		/* replies: 0 or -errno */
	struct hvt_str name;	/* remote name ([A-Za-z0-9._-], may be empty) */
	struct hvt_str text;	/* replies: what went wrong */
};

struct hvt_m_bye {
	uint32_t reason;	/* enum hvt_bye_reason */
	int32_t status;
	struct hvt_str text;
};

/*
 * The common reply: ERROR, REGISTER, UNREGISTER, DELETE, CLIENT_GONE,
 * TRACING, DEFINE, ENABLE, SUBSCRIBE, UNSUBSCRIBE, ATTACH, DETACH.
 * REGISTER: id = event id, bit = enable bit.  TRACING: id = 0/1.
 * SUBSCRIBE: id = subscription id.  ATTACH: id = remote id.
 */
struct hvt_m_result {
	int32_t status;
	uint32_t id;
	uint32_t bit;
	uint32_t flags;
	struct hvt_str text;
};

struct hvt_m_register {
	uint32_t flags;		/* HVT_REG_* */
	uint32_t want_id;	/* HVT_REG_REPLAY only */
	uint32_t want_bit;
	struct hvt_str def;	/* "name field; field" */
};

struct hvt_m_unregister {
	uint32_t id;
};

/* DELETE, DEFINE, ENABLE, ATTACH, DETACH: an argument and a string. */
struct hvt_m_arg {
	uint32_t arg;		/* ENABLE: 1 on, 0 off; else 0 */
	struct hvt_str s;
};

struct hvt_m_client_gone {
	uint32_t pid;
};

struct hvt_m_cmdline {
	uint32_t pid;
	struct hvt_str comm;	/* 1..15 bytes, no control characters */
};

struct hvt_m_event_state {
	uint32_t id;
	uint32_t bit;
	uint8_t enabled;
};

struct hvt_m_tracing {
	uint32_t op;		/* enum hvt_tracing_op */
};

struct hvt_m_ping {
	uint64_t seq;
	uint64_t host_ns;
};

/*
 * Two readings of the area's clock, as NTP takes them: when the PING's
 * bytes arrived, and right before the PONG left.  The host pairs their
 * midpoint with the midpoint of its own send and receive times, so the
 * agent's processing time does not bias the estimate.  writer_tx >=
 * writer_rx.
 */
struct hvt_m_pong {
	uint64_t seq;
	uint64_t host_ns;	/* echoed */
	uint64_t writer_rx;	/* the area's clock when the PING arrived */
	uint64_t writer_tx;	/* ... right before the PONG left */
	uint32_t clock_id;
};

struct hvt_m_trigger {
	uint64_t token;
	uint64_t host_ns;
};

struct hvt_m_trigger_ack {
	uint64_t token;
	uint64_t writer_ts;	/* the clock value the event was written at */
	int32_t status;		/* the write: 0 or -errno */
	uint32_t cpu;
};

struct hvt_m_text_req {
	uint32_t kind;		/* enum hvt_text_kind */
};

struct hvt_m_text {
	int32_t status;
	struct hvt_str text;	/* may hold newlines and tabs */
};

/* One REMOTES record (fixed 112 bytes on the wire). */
struct hvt_remote_rec {
	uint32_t id;
	uint32_t state;		/* enum hvt_remote_state */
	uint32_t writer_kind;
	uint32_t nr_cpus;
	uint32_t nr_subbufs;
	uint32_t subbuf_size;
	uint32_t mode;
	uint32_t clock_id;
	uint32_t transport;	/* enum hvt_transport */
	uint32_t tracing_on;
	uint32_t nr_events;
	uint32_t nr_clients;
	uint64_t clock_err_ns;	/* UINT64_MAX: not synchronised yet */
	uint64_t sync_samples;
	uint64_t proto_errors;
	uint64_t generation;
	char name[32];		/* NUL-terminated */
};
#define HVT_REMOTE_REC_SIZE	112u

struct hvt_m_remotes {
	struct hvt_arr recs;	/* hvt_msg_remote_at() */
};

struct hvt_m_format {
	int32_t status;
	uint32_t id;		/* event id; 0 for the header files */
	struct hvt_str name;	/* "header_page", "header_event" or an
				 * event name */
	struct hvt_str text;	/* the format file's text */
};

/*
 * KFORMATS: the guest kernel an upload of formats is for, keyed by its
 * release and build id (lowercase hex, 2 digits per byte, may be empty
 * when the kernel has none).
 */
struct hvt_m_kformats {
	uint32_t op;		/* enum hvt_kformats_op */
	uint32_t nr_files;
	uint64_t total_bytes;	/* END: bytes of all files; BEGIN: 0 */
	struct hvt_str release;	/* 1..64, no control characters */
	struct hvt_str build_id; /* 0..128 of [0-9a-f], even */
};

/* KFILE: @len bytes of file @name at @offset (pieces in order). */
struct hvt_m_kfile {
	uint32_t flags;		/* HVT_KFILE_* */
	uint64_t offset;
	struct hvt_str name;	/* "events/sched/sched_switch/format" */
	const uint8_t *data;
	uint32_t len;
};

/* One STATS record: struct hvtrace_cpu_stats of a CPU, in wire order. */
#define HVT_STATS_FIELDS	15u
struct hvt_m_stats {
	int32_t status;
	uint32_t cpu;
	uint64_t v[HVT_STATS_FIELDS];	/* written, entries, overrun, dropped,
					 * skipped, lost, trailing, discarded,
					 * read, bytes, errors, writer_lost,
					 * oldest_ts, now_ts, unplaced */
};

struct hvt_m_subscribe {
	int32_t cpu;		/* -1: every CPU */
	uint32_t queue_kib;	/* page budget of this connection, KiB: 0 for
				 * the daemon's default; more is capped */
};

struct hvt_m_unsubscribe {
	uint32_t sub;
};

struct hvt_m_page {
	uint32_t cpu;
	uint32_t flags;		/* HVT_PAGEF_* */
	uint32_t seq;
	uint32_t entries;
	uint64_t lost_events;	/* lost in the ring right before this page */
	uint64_t dropped_pages;	/* pages this subscriber missed (slow) */
	uint64_t dropped_events;	/* events in those pages */
	uint64_t first_ts;
	const uint8_t *data;	/* the ftrace sub-buffer */
	uint32_t len;
};

struct hvt_m_to_host {
	struct hvt_arr ts;	/* u64 writer timestamps: hvt_msg_u64_at() */
};

struct hvt_m_to_host_reply {
	int32_t status;
	uint64_t err_ns;
	struct hvt_arr ns;	/* u64 host ns: hvt_msg_u64_at() */
};

/*
 * CLOCK: hvtraced's model of a remote's writer clock (host/lib/clock.c),
 * as much of it as maps a writer timestamp w to host CLOCK_MONOTONIC ns
 * and states its error bound (docs/design.md, section 5):
 *
 *   host(w) = base_host + (w - base_writer) * (rate_int + rate_frac/2^64)
 *   err(w)  = err_ns + rate_err * |w - base_writer| +
 *             drift_half * (w - base_writer)^2
 *
 * clock_id 0 says there is no model (every other field 0): the times stay
 * the writer's own.  Without HVT_CLOCKF_SYNCED no sample fitted yet: w *
 * rate is the writer's own timeline in ns, err_ns UINT64_MAX.
 * HVT_CLOCK_HOST_NS: the times are the host's already.
 */
struct hvt_m_clock {
	uint32_t clock_id;	/* HVT_CLOCK_*, 0: none */
	uint32_t flags;		/* HVT_CLOCKF_* */
	uint64_t generation;	/* counts the remote's models, from 1 */
	uint64_t base_writer;
	uint64_t base_host;
	uint64_t rate_int;	/* ns per tick: rate_int + rate_frac / 2^64 */
	uint64_t rate_frac;
	uint64_t err_ns;	/* bound at base_writer */
	uint64_t rate_err;	/* binary64 bits: bound of the rate's error */
	uint64_t drift_half;	/* binary64 bits: ns per tick^2 */
};

struct hvt_m_trigger_run {
	uint32_t count;
};

struct hvt_trigger_rec {
	uint64_t token;
	uint64_t host_before;	/* host CLOCK_MONOTONIC before TRIGGER left */
	uint64_t host_after;	/* ... when the acknowledgement arrived */
	uint64_t writer_ts;
	uint32_t cpu;
	int32_t status;
};
#define HVT_TRIGGER_REC_SIZE	40u

struct hvt_m_trigger_run_reply {
	int32_t status;
	struct hvt_arr recs;	/* hvt_msg_trigger_at() */
};

/* A decoded message: header fields and one payload view. */
struct hvt_msg {
	uint16_t type;		/* enum hvt_msg_type */
	uint8_t flags;		/* HVT_PF_* */
	uint32_t req;
	uint32_t chan;
	union {
		struct hvt_m_hello hello;
		struct hvt_m_bye bye;
		struct hvt_m_result result;
		struct hvt_m_register reg;
		struct hvt_m_unregister unreg;
		struct hvt_m_arg arg;
		struct hvt_m_client_gone gone;
		struct hvt_m_cmdline cmdline;
		struct hvt_m_event_state event_state;
		struct hvt_m_tracing tracing;
		struct hvt_m_ping ping;
		struct hvt_m_pong pong;
		struct hvt_m_trigger trigger;
		struct hvt_m_trigger_ack trigger_ack;
		struct hvt_m_text_req text_req;
		struct hvt_m_text text;
		struct hvt_m_remotes remotes;
		struct hvt_m_format format;
		struct hvt_m_kformats kformats;
		struct hvt_m_kfile kfile;
		struct hvt_m_stats stats;
		struct hvt_m_subscribe subscribe;
		struct hvt_m_unsubscribe unsubscribe;
		struct hvt_m_page page;
		struct hvt_m_to_host to_host;
		struct hvt_m_to_host_reply to_host_reply;
		struct hvt_m_trigger_run trigger_run;
		struct hvt_m_trigger_run_reply trigger_run_reply;
		struct hvt_m_clock clock;
	} u;
};

/*
 * Which payload layout a (type, flags) pair uses.  Encoders and decoders
 * both go through it, so the table in proto_layouts.c is the one
 * definition of the catalogue.
 */
enum hvt_layout {
	HVT_L_NONE = 0,		/* not a valid message */
	HVT_L_EMPTY,		/* no payload fields (8 reserved bytes) */
	HVT_L_HELLO,
	HVT_L_BYE,
	HVT_L_RESULT,
	HVT_L_REGISTER,
	HVT_L_UNREGISTER,
	HVT_L_ARG,
	HVT_L_CLIENT_GONE,
	HVT_L_CMDLINE,
	HVT_L_EVENT_STATE,
	HVT_L_TRACING,
	HVT_L_PING,
	HVT_L_PONG,
	HVT_L_TRIGGER,
	HVT_L_TRIGGER_ACK,
	HVT_L_TEXT_REQ,
	HVT_L_TEXT,
	HVT_L_REMOTES,
	HVT_L_FORMAT,
	HVT_L_STATS,
	HVT_L_SUBSCRIBE,
	HVT_L_UNSUBSCRIBE,
	HVT_L_PAGE,
	HVT_L_TO_HOST,
	HVT_L_TO_HOST_REPLY,
	HVT_L_TRIGGER_RUN,
	HVT_L_TRIGGER_RUN_REPLY,
	HVT_L_KFORMATS,
	HVT_L_KFILE,
	HVT_L_CLOCK,
	HVT_L_COUNT		/* not a layout: how many there are */
};

/**
 * hvt_msg_layout - the payload layout of a message type and direction
 * @type:  enum hvt_msg_type
 * @reply: non-zero for a reply (HVT_PF_REPLY)
 *
 * Return: an enum hvt_layout; HVT_L_NONE for an unknown type or a
 * direction the type does not have.
 */
enum hvt_layout hvt_msg_layout(uint16_t type, int reply);

/** hvt_msg_type_name - "REGISTER" etc., or "unknown" */
const char *hvt_msg_type_name(uint16_t type);

/* --- encoding ------------------------------------------------------------ */

/**
 * hvt_msg_encode - build one frame
 * @buf: output
 * @cap: bytes available at @buf
 * @m:   the message; its views point to the data to copy in
 *
 * Checks every field against the rules the decoder applies, so a frame
 * this function produced always decodes to the same message.
 *
 * Return: the frame length, -EMSGSIZE if it does not fit @cap or
 * HVT_PROTO_MAX_FRAME, -EINVAL for a field out of range (an unknown
 * type, a string too long or holding a NUL, a bad enum value).
 */
int hvt_msg_encode(void *buf, uint32_t cap, const struct hvt_msg *m);

/**
 * hvt_msg_encode_head - build one frame but for the bytes of its last
 * variable field (a PAGE's sub-buffer), which stay where they are, for a
 * writer that sends them from there (writev)
 * @buf:  output: the frame up to that field
 * @cap:  bytes available at @buf
 * @m:    the message, as for hvt_msg_encode()
 * @tail: set to the field's bytes (its view in @m)
 * @tail_len: set to their number
 *
 * The header's checksum covers the whole frame, tail included; the
 * bytes @buf and then @tail hold are exactly those hvt_msg_encode()
 * writes.
 *
 * Return: the length of the head (frame length - *@tail_len), the errors
 * of hvt_msg_encode(), or -EINVAL when the message's last field is not a
 * variable one, or the bytes before it are not a multiple of 8.
 */
int hvt_msg_encode_head(void *buf, uint32_t cap, const struct hvt_msg *m,
			const void **tail, uint32_t *tail_len);

/**
 * hvt_msg_encoded_size - bytes hvt_msg_encode() would write, or -EINVAL
 */
int hvt_msg_encoded_size(const struct hvt_msg *m);

/* Record writers for the array payloads (output arrays in wire format). */
void hvt_msg_put_remote(uint8_t *dst, const struct hvt_remote_rec *r);
void hvt_msg_put_trigger(uint8_t *dst, const struct hvt_trigger_rec *r);
void hvt_msg_put_u64(uint8_t *dst, uint64_t v);

/* --- decoding ------------------------------------------------------------ */

/* A whole, checksum-verified frame inside a decoder's buffer. */
struct hvt_frame {
	uint16_t type;
	uint8_t version;
	uint8_t flags;
	uint32_t req;
	uint32_t chan;
	const uint8_t *payload;
	uint32_t len;		/* payload bytes */
};

/**
 * hvt_msg_decode - validate a frame's payload and fill a message view
 * @f:   a frame from hvt_proto_dec_next()
 * @m:   filled; its views point into the frame
 * @why: if not NULL, set to a static description of the first problem
 *
 * Checks the payload length exactly, every string length and content,
 * every enum range, every count against the bytes present, and that
 * reserved fields are zero.
 *
 * Return: 0, -EOPNOTSUPP for an unknown type (or a reply/request
 * direction the type does not have), -EBADMSG for a malformed payload.
 */
int hvt_msg_decode(const struct hvt_frame *f, struct hvt_msg *m,
		   const char **why);

/* Accessors for array payloads; @i must be below the array's count. */
void hvt_msg_remote_at(const struct hvt_arr *a, uint32_t i,
		       struct hvt_remote_rec *out);
void hvt_msg_trigger_at(const struct hvt_arr *a, uint32_t i,
			struct hvt_trigger_rec *out);
uint64_t hvt_msg_u64_at(const struct hvt_arr *a, uint32_t i);

/** hvt_proto_name_ok - is @s a valid remote name (1..31 of [A-Za-z0-9._-],
 * not starting with '.')? */
int hvt_proto_name_ok(const char *s, uint32_t len);

/* --- stream reassembly ---------------------------------------------------- */

/*
 * Reassembles frames from arbitrary chunks of a byte stream.  The caller
 * owns the buffer (at least max_frame bytes).  Bytes that do not form a
 * valid frame are skipped, one error per skipped run, and the decoder
 * resynchronises on the next valid header; a frame whose header is valid
 * but which is longer than max_frame is skipped as a whole.
 */
struct hvt_proto_dec {
	uint8_t *buf;
	uint32_t cap;
	uint32_t max_frame;
	uint32_t head;		/* first unconsumed byte */
	uint32_t tail;		/* end of buffered bytes */
	uint32_t consume;	/* bytes of the frame returned last */
	uint32_t in_garbage;	/* inside a run of skipped bytes */
	uint64_t discard;	/* bytes of an oversized frame to skip */
	/* statistics */
	uint64_t frames;	/* good frames returned */
	uint64_t errors;	/* errors returned */
	uint64_t skipped;	/* bytes skipped */
};

/**
 * hvt_proto_dec_init - set up a decoder
 * @d:         decoder
 * @buf:       storage, @cap bytes
 * @cap:       at least @max_frame
 * @max_frame: largest frame accepted (HVT_PROTO_HDR_SIZE..
 *             HVT_PROTO_MAX_FRAME)
 *
 * Return: 0 or -EINVAL.
 */
int hvt_proto_dec_init(struct hvt_proto_dec *d, void *buf, uint32_t cap,
		       uint32_t max_frame);

/** hvt_proto_dec_reset - drop buffered bytes (a new connection) */
void hvt_proto_dec_reset(struct hvt_proto_dec *d);

/**
 * hvt_proto_dec_room - where to put more bytes, for read() into the buffer
 * @where: set to the first free byte
 *
 * Return: free bytes at *@where (0 only while a returned frame fills the
 * buffer: call hvt_proto_dec_next() first).
 */
uint32_t hvt_proto_dec_room(struct hvt_proto_dec *d, uint8_t **where);

/** hvt_proto_dec_added - account @n bytes written at the room's start */
void hvt_proto_dec_added(struct hvt_proto_dec *d, uint32_t n);

/**
 * hvt_proto_dec_feed - copy bytes in (as many as fit)
 *
 * Return: the number of bytes taken; feed the rest after draining frames.
 */
uint32_t hvt_proto_dec_feed(struct hvt_proto_dec *d, const void *data,
			    uint32_t len);

/**
 * hvt_proto_dec_next - the next complete frame
 * @d: decoder
 * @f: filled when a frame is returned; valid until the next call
 *
 * Return: 1 with a frame, 0 when more bytes are needed, or an error after
 * which the decoder has already skipped the offending bytes (call again):
 * -EBADMSG (bytes that are not a frame, a bad checksum, a non-zero
 * reserved field or unknown flag), -EMSGSIZE (a frame longer than
 * max_frame or shorter than its header), -EPROTONOSUPPORT (a frame of
 * another protocol version).
 */
int hvt_proto_dec_next(struct hvt_proto_dec *d, struct hvt_frame *f);

#endif /* HVTRACE_PROTO_H */
