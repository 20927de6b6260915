/* SPDX-License-Identifier: MIT */
/*
 * hvtrace-agent internals.  The agent is one thread around poll(): it owns
 * the trace area, serves applications on a UNIX socket and speaks the
 * proxy protocol (shared/include/hvtrace/proto.h) to the host over a
 * virtio-serial port or, on one machine, over hvtraced's socket.
 */
#ifndef HVT_AGENT_H
#define HVT_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <sys/types.h>

#include <hvtrace/proto.h>

#include "hvt_util.h"
#include "hvtrace-guest.h"

#define AGENT_MAX_CLIENTS	256
#define AGENT_MAX_PENDING	1024
#define AGENT_MAX_REGS		4096	/* per client */
#define AGENT_CLIENT_QUEUE	(256u * 1024u)	/* bytes queued per client */
#define AGENT_LINK_QUEUE	(1024u * 1024u)	/* bytes queued to the host */
#define AGENT_FRAMES_PER_WAKE	128	/* per connection per poll round */
#define AGENT_CLIENT_MAX_ERRORS	16	/* protocol errors before a client
					 * is disconnected */
#define AGENT_TRIGGER_EVENT	"hvtrace_trigger u64 token"
#define AGENT_TRIGGER_NAME	"hvtrace_trigger"

/* --- output queues (util.c) --------------------------------------------- */

struct out_chunk {
	struct out_chunk *next;
	uint32_t len;
	uint32_t off;
	int fds[2];		/* sent with the chunk's first byte */
	int nr_fds;
	uint8_t data[];
};

struct outq {
	struct out_chunk *head, *tail;
	size_t bytes;
};

/* Append an encoded message; -EMSGSIZE/-ENOMEM. @fds are dup'ed. */
int outq_push(struct outq *q, const struct hvt_msg *m, const int *fds,
	      int nr_fds);
/* Write as much as the descriptor takes: 0, or -errno on a dead peer. */
int outq_flush(struct outq *q, int fd, bool is_socket);
void outq_clear(struct outq *q);

/* --- logging (common/log.c) and time (util.c) --------------------------- */

/* Log lines "hvtrace-agent: ..." through common/ (hvt_util_log()). */
#define agent_log hvt_util_log
#define agent_dbg hvt_util_dbg
uint64_t agent_now_ms(void);

/* The area's clock (clock.c). */
uint64_t agent_clock_read(uint32_t clock_id);

/* Time-sync answers through the control page after a PING (shmsync.c):
 * spins while the host posts requests; returns how many it answered. */
struct agent;
unsigned int shmsync_serve(struct agent *ag);

/* --- state ---------------------------------------------------------------- */

/* A definition a client registered, kept to replay after a reconnect. */
struct creg {
	char *def;
	uint32_t id;
	uint32_t bit;
	uint32_t refs;		/* times the client registered it */
};

struct client {
	struct client *next;
	int fd;
	uint32_t chan;		/* on the host link; never 0 */
	pid_t pid;
	uid_t uid;
	bool hello_done;
	bool closing;		/* flush, then close */
	uint64_t errors;
	struct creg *regs;
	size_t nr_regs, cap_regs;
	struct hvt_proto_dec dec;
	struct outq q;
	uint8_t rbuf[HVT_PROTO_AGENT_FRAME];
};

/* A request on its way to the host (or waiting for the host). */
struct pending {
	struct pending *next;
	uint32_t host_req;	/* 0 until sent */
	uint32_t chan;		/* 0: the agent itself */
	uint32_t client_req;	/* 0: no client waits (replay, agent) */
	uint16_t type;
	bool replay;
	uint64_t deadline_ms;
	char *def;		/* REGISTER: recorded on success */
	struct hvt_msg msg;	/* to send; views point at 'store' */
	uint8_t *store;
};

enum link_kind {
	LINK_CHARDEV = 1,	/* a virtio-serial port (character device) */
	LINK_SOCKET = 2,	/* hvtraced's UNIX socket on this machine */
};

struct link {
	enum link_kind kind;
	char path[256];
	int fd;			/* -1: closed */
	bool hup;		/* chardev: the host side is not connected */
	bool up;		/* session established */
	bool replayed;		/* this connection got our registrations */
	uint32_t host_pid;	/* the host session we replayed to */
	uint64_t host_session;
	uint32_t host_caps; /* the host's HELLO caps (HVT_CAP_DAEMON_*) */
	uint32_t next_req;
	uint64_t next_try_ms;	/* reconnect or probe */
	uint64_t hello_ms;	/* last HELLO we sent */
	uint32_t *gone;		/* clients that left while the link was down */
	size_t nr_gone, cap_gone;
	uint64_t errors, frames_in, frames_out, sessions;
	uint64_t rx_clock;	/* area clock when the last bytes arrived */
	struct hvt_proto_dec dec;
	struct outq q;
	uint8_t rbuf[HVT_PROTO_AGENT_FRAME];
};

struct agent {
	/* options */
	char name[HVT_PROTO_NAME_MAX + 1];
	const char *area_path;	/* --area (BAR) or --create (file) */
	bool create;
	uint64_t create_size;
	const char *sock_path;
	const char *group;
	unsigned int sock_mode;
	uint32_t host_wait_ms;
	struct hvtg_format fmt;
	const char *kcopy_dir;	/* --kernel-copy: a tracing instance */
	const char *tracefs;	/* the guest kernel's tracefs, or NULL */
	const char *kinstance;	/* its instance the host reads */

	/* the area */
	int area_fd;		/* read-write */
	int ctrl_fd;		/* read-only */
	uint64_t area_size;
	struct hvtg_area *w;	/* the agent's own writer handle */
	struct hvtg_area_info info;
	uint64_t generation;
	struct hvtg_event trig_ev;
	uint32_t trig_id, trig_bit;
	bool trig_bound;
	bool trig_pending;

	/* clients */
	int lfd;
	struct client *clients;
	unsigned int nr_clients;
	uint32_t next_chan;

	/* the doorbell (doorbell.c) */
	int bell_fd;
	bool bell_refuse;	/* a writer cannot take the host's barrier */
	uint64_t bell_rings;	/* DOORBELL notices sent */
	uint64_t bell_n_refused; /* "N" from others than the owner */

	/* time sync through the control page (shmsync.c) */
	uint64_t shm_answers;

	/* the host */
	struct pending *pend;
	unsigned int nr_pend;
	struct link link;

	struct kformats *kf;	/* kformats.c */

	volatile int stop;
};

/* doorbell.c */
int bell_listen(struct agent *ag);
void bell_poll_prep(struct agent *ag, struct pollfd *pfd);
void bell_poll_done(struct agent *ag, const struct pollfd *pfd);
void bell_barrier(struct agent *ag, const struct hvt_msg *m);
void bell_close(struct agent *ag);

/* main.c */
int agent_area_setup(struct agent *ag);

/* kcopy.c: the guest kernel's pages into the area's kernel section */
int kcopy_format(struct agent *ag, void *mem, uint64_t size);
int kcopy_start(struct agent *ag);
void kcopy_stop(struct agent *ag);

/* link.c */
void link_init(struct agent *ag, enum link_kind kind, const char *path);
void link_poll_prep(struct agent *ag, struct pollfd *pfd, uint64_t now,
		    uint64_t *next_ms);
void link_poll_done(struct agent *ag, const struct pollfd *pfd, uint64_t now);
void link_tick(struct agent *ag, uint64_t now);
int link_submit(struct agent *ag, struct pending *p);
void link_client_gone(struct agent *ag, uint32_t chan);
void link_send_cmdline(struct agent *ag, uint32_t pid, const char *comm);
void link_bye(struct agent *ag);
struct pending *pending_new(uint16_t type, uint32_t chan, uint32_t client_req,
			    const struct hvt_msg *m);
void pending_free(struct pending *p);

/* clients.c */
int clients_listen(struct agent *ag);
void clients_accept(struct agent *ag);
void client_poll_prep(struct client *c, struct pollfd *pfd);
void client_poll_done(struct agent *ag, struct client *c,
		      const struct pollfd *pfd);
void clients_reap(struct agent *ag);
struct client *client_by_chan(struct agent *ag, uint32_t chan);
void client_reply(struct agent *ag, uint32_t chan, const struct hvt_msg *m);
void client_record_reg(struct client *c, const char *def, uint32_t id,
		       uint32_t bit);
void client_forget_reg(struct client *c, uint32_t id);
void clients_notice(struct agent *ag, const struct hvt_msg *m);
int read_comm(pid_t pid, pid_t tid, char *buf, size_t size);

/* link.c, for link_frame.c */
void pending_unlink(struct agent *ag, struct pending *p);
void pending_fail(struct agent *ag, struct pending *p, int status,
		  const char *text);
int link_push(struct agent *ag, const struct hvt_msg *m);
struct pending *pending_by_req(struct agent *ag, uint32_t req);
void link_hello(struct agent *ag, const struct hvt_msg *answer_to);
void link_replay(struct agent *ag);
void link_fail_inflight(struct agent *ag, const char *why);
void link_down(struct agent *ag, const char *why, bool close_fd);

/* kformats.c: the guest kernel's formats, sent at each session */
void agent_path(char *dst, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The kernel instance's folder (the tracefs top level without one). */
void agent_kinstance_dir(const struct agent *ag, char *dst, size_t size);
void kformats_session_up(struct agent *ag);
void kformats_answer(struct agent *ag, const struct hvt_msg *m);
void kformats_tick(struct agent *ag);
bool kformats_busy(const struct agent *ag);
/* Will a session offer the kernel's formats (its tracefs has events)? */
bool kformats_offered(struct agent *ag);

/* kevents.c: the guest kernel instance's events, switched by the host */
void kevents_request(struct agent *ag, const struct hvt_msg *m);

/* link_frame.c, for link.c */
void link_frame(struct agent *ag, const struct hvt_frame *f);

#endif /* HVT_AGENT_H */
