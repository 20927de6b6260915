// SPDX-License-Identifier: MIT
/*
 * hvtraced: the chardev transport -- a guest attached by name.
 *
 * The daemon connects to QEMU's chardev socket RUN_DIR/NAME/control.sock
 * (the host end of the guest's virtio-serial port) and opens the area
 * SHM_DIR/hvtrace-NAME.  The guest's agent may not run yet, or restart,
 * or the port may deliver bytes of an earlier session late, so the
 * daemon keeps trying: it reconnects every D_RECONNECT_MS when the socket
 * goes away (every CHARDEV_QUICK_MS for the first 3 s after a session
 * was lost, when QEMU's end and the rig's record are news), retries the area
 * every D_RECONNECT_MS until it opens, and says HELLO again every
 * D_HELLO_RETRY_MS until the agent answers.  With each connection it takes the
 * guest's doorbell eventfd from RUN_DIR/NAME/bell.sock where the rig serves one
 * (bell.c).  A HELLO of an agent instance the daemon has not seen, or of
 * another area generation, re-opens the area.  Guests attached this way are
 * kept in the state file (state.c) as "guest NAME".
 *
 * SHM_DIR is a folder anyone may write (/dev/shm): the area is taken only
 * when it is a regular file of root, the daemon's user or the remote's
 * owner (the tool that attached it), not writable by every user
 * (hvt_util_open_owned()); another user's file of that name is refused
 * with a log line naming its owner.  It is opened read-write: the daemon
 * owns the area and writes its control page (enable bits, consumer
 * positions); the writer's header and rings stay mapped read-only
 * (hvtrace_area_open()).  Once the guest's agent is up, its kernel's
 * pages are read beside the area (kside.c): the area's kernel section,
 * or the kernel's ring in the guest's RAM file SHM_DIR/hvtrace-NAME.ram,
 * mapped read-only under the same owner rule.
 *
 * A guest whose socket refuses connections after a session (its QEMU
 * exited) is DISCONNECTED: its area stays readable, and readers that
 * follow it read it to the end and stop (hvtrace_daemon_remote_stopped()).
 * The daemon keeps trying, so a guest started again under the name is
 * taken up as before.  When the rig says how QEMU ended, the remote says
 * the same: the rig leaves the record RUN_DIR/NAME.ended behind, whose
 * first line is "state=powered-off" (the guest powered itself off, as
 * --run does), "state=panicked" or "state=crashed" (chardev_ended()):
 * POWERED_OFF, PANICKED or CRASHED, until the record goes (stop,
 * cleanup, a new guest of the name).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <hvt_util.h>

#include "daemon.h"

/* After a lost session, reconnect (and look for the rig's record) every
 * CHARDEV_QUICK_MS for CHARDEV_QUICK_TRIES tries (3 s), then every
 * D_RECONNECT_MS. */
#define CHARDEV_QUICK_MS	100
#define CHARDEV_QUICK_TRIES	30

/* A guest's remote: an agent's (the struct agent_remote it embeds) that
 * the daemon connects to. */
struct chardev_remote {
	struct agent_remote ag;
	char *ctl_path;		/* RUN_DIR/NAME/control.sock */
	char *area_path;	/* SHM_DIR/hvtrace-NAME */
	char *ram_path;		/* SHM_DIR/hvtrace-NAME.ram: guest RAM */
	struct kside *ks;	/* its kernel's pages beside the area */
	char *bell_path;	/* RUN_DIR/NAME/bell.sock */
	char *ended_path;	/* RUN_DIR/NAME.ended: the rig's record */
	uint64_t next_try_ms;	/* reconnect */
	uint64_t area_try_ms;	/* area retry */
	uid_t owner;		/* trusted owner of the area, or -1 */
	bool said_refused;	/* logged that the area's owner is wrong */
	bool had_session;	/* connected once: a refusal means QEMU left */
	unsigned int quick_tries; /* after a lost session: tries left at
				   * CHARDEV_QUICK_MS, so that the rig's
				   * record is seen while it is news */
};

static const struct remote_ops chardev_ops;

static struct chardev_remote *chardev_remote(struct remote *r)
{
	return container_of(r, struct chardev_remote, ag.r);
}

static const struct chardev_remote *chardev_remote_c(const struct remote *r)
{
	return container_of(r, const struct chardev_remote, ag.r);
}

/*
 * Open the area, if root, the daemon's user or the remote's owner owns
 * it (not a file another user planted under the guest's name).
 */
static int chardev_open_area(struct remote *r, char *msg, size_t msgsize)
{
	struct chardev_remote *cr = chardev_remote(r);
	char via[64];
	int fd, ret;

	fd = hvt_util_open_owned(cr->area_path, 1, cr->owner, msg, msgsize);
	if (fd == -EPERM || fd == -ELOOP) {
		if (!cr->said_refused)
			d_log("remote '%s': %s", r->name, msg);
		cr->said_refused = true;
	}
	if (fd < 0)
		return fd;
	cr->said_refused = false;
	snprintf(via, sizeof(via), "/proc/self/fd/%d", fd);
	ret = remote_open_area(r, via, msg, msgsize);
	close(fd);
	return ret;
}

/*
 * How did the guest's QEMU end, by the rig's record?  RUN_DIR/NAME.ended
 * is the rig's (qemu-scripts/hvtrace-guest) and read like any file found
 * by name in a folder others may write: a regular file of a trusted owner
 * (hvt_util_open_owned()), and only its first line counts, which must be
 * exactly one of the lines below.  Returns the remote state, or 0 when
 * there is no such record.
 */
static uint32_t chardev_ended(struct chardev_remote *cr)
{
	static const struct {
		const char *line;
		uint32_t state;
	} ends[] = {
		{ "state=powered-off\n", HVT_REMOTE_POWERED_OFF },
		{ "state=panicked\n", HVT_REMOTE_PANICKED },
		{ "state=crashed\n", HVT_REMOTE_CRASHED },
	};
	char buf[32], msg[256];
	size_t have = 0, i;
	ssize_t n;
	int fd;

	fd = hvt_util_open_owned(cr->ended_path, 0, cr->owner, msg,
				 sizeof(msg));
	if (fd < 0)
		return 0;
	while (have < sizeof(buf)) {
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	for (i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		size_t len = strlen(ends[i].line);

		if (have >= len && !memcmp(buf, ends[i].line, len))
			return ends[i].state;
	}
	return 0;
}

static bool chardev_state_ended(uint32_t s)
{
	return s == HVT_REMOTE_POWERED_OFF || s == HVT_REMOTE_PANICKED ||
	       s == HVT_REMOTE_CRASHED;
}

static void chardev_connect(struct remote *r)
{
	struct chardev_remote *cr = chardev_remote(r);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct conn *c;
	uint32_t ended;
	int fd;

	if (cr->quick_tries) {
		cr->quick_tries--;
		cr->next_try_ms = d_now_ms() + CHARDEV_QUICK_MS;
	} else {
		cr->next_try_ms = d_now_ms() + D_RECONNECT_MS;
	}
	if (strlen(cr->ctl_path) >= sizeof(sa.sun_path))
		return;
	strcpy(sa.sun_path, cr->ctl_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = errno;

		d_dbg("remote '%s': %s: %s", r->name, cr->ctl_path,
		      strerror(err));
		close(fd);
		if (err != ECONNREFUSED && err != ENOENT)
			return;
		/* QEMU ended unasked: the rig says how. */
		ended = chardev_ended(cr);
		if (ended && ended != r->state) {
			r->state = ended;
			d_log("remote '%s': the guest's QEMU ended: %s (%s); "
			      "its area stays readable",
			      r->name,
			      hvt_remote_state_word(ended, HVT_TRANSPORT_CHARDEV),
			      cr->ended_path);
			cr->quick_tries = 0;
			return;
		}
		if (!ended && chardev_state_ended(r->state))
			/* Its record is gone (stopped, cleaned up). */
			r->state = HVT_REMOTE_DISCONNECTED;
		/* Nobody listens where QEMU did: the guest is gone. */
		if (cr->had_session && r->state != HVT_REMOTE_DISCONNECTED &&
		    !chardev_state_ended(r->state)) {
			r->state = HVT_REMOTE_DISCONNECTED;
			d_log("remote '%s': %s: %s: the guest's QEMU is gone; "
			      "its area stays readable",
			      r->name, cr->ctl_path, strerror(err));
		}
		return;
	}
	c = conn_new(fd, &agent_chardev_conn_ops);
	if (!c) {
		close(fd);
		return;
	}
	c->remote = r;
	r->conn = c;
	r->state = HVT_REMOTE_BOOTING;
	cr->had_session = true;
	cr->ag.agent.session = d_now_ns();
	d_log("remote '%s': connected to %s", r->name, cr->ctl_path);
	/* The guest's doorbell device, if it has one: asked for again with
	 * every connection (a guest started again has a new one). */
	bell_connect(r, cr->bell_path);
	agent_send_hello(r, NULL, 0, NULL);
}

/* A path of the guest's, as snprintf() would print it (cut at PATH_MAX). */
static char *chardev_path(const char *fmt, const char *dir, const char *name)
	__attribute__((format(printf, 1, 0)));

static char *chardev_path(const char *fmt, const char *dir, const char *name)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), fmt, dir, name);
	return strdup(buf);
}

int remote_attach_chardev(const char *name, uid_t owner, struct remote **out,
			  char *msg, size_t msgsize)
{
	struct chardev_remote *cr;
	struct remote *r;
	char tmp[512];
	int ret;

	if (!hvt_proto_name_ok(name, (uint32_t)strlen(name))) {
		snprintf(msg, msgsize, "'%s' is not a guest name: use 1..31 "
				       "of [A-Za-z0-9._-]",
			 name);
		return -EINVAL;
	}
	if (remote_by_name(name)) {
		snprintf(msg, msgsize, "'%s' is attached already", name);
		return -EEXIST;
	}
	cr = calloc(1, sizeof(*cr));
	if (!cr) {
		snprintf(msg, msgsize, "out of memory");
		return -ENOMEM;
	}
	cr->owner = owner;
	cr->ctl_path = chardev_path("%s/%s/control.sock", D->run_dir, name);
	cr->area_path = chardev_path("%s/hvtrace-%s", D->shm_dir, name);
	cr->ram_path = chardev_path("%s/hvtrace-%s.ram", D->shm_dir, name);
	cr->bell_path = chardev_path("%s/%s/bell.sock", D->run_dir, name);
	cr->ended_path = chardev_path("%s/%s.ended", D->run_dir, name);
	ret = cr->ctl_path && cr->area_path && cr->ram_path && cr->bell_path &&
			      cr->ended_path
		      ? remote_add(&cr->ag.r, name, &chardev_ops)
		      : -ENOMEM;
	if (ret) {
		free(cr->ctl_path);
		free(cr->area_path);
		free(cr->ram_path);
		free(cr->bell_path);
		free(cr->ended_path);
		free(cr);
		snprintf(msg, msgsize, "cannot create remote: %s",
			 strerror(-ret));
		return ret;
	}
	r = &cr->ag.r;
	ret = chardev_open_area(r, tmp, sizeof(tmp));
	if (ret)
		d_dbg("remote '%s': %s (retrying)", name, tmp);
	chardev_connect(r);
	*out = r;
	snprintf(msg, msgsize, "attached '%s' (control %s, area %s)%s%s", name,
		 cr->ctl_path, cr->area_path,
		 ret == -EPERM || ret == -ELOOP ? "; its area is refused: " : "",
		 ret == -EPERM || ret == -ELOOP ? tmp : "");
	return 0;
}


static void chardev_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	struct chardev_remote *cr = chardev_remote(r);
	char msg[512];

	/* QEMU ended (a reconnect is tried at least every
	 * D_RECONNECT_MS): its ring's memory is not kept for nobody. */
	if (!r->conn && cr->ks)
		kside_release_unread(r, &cr->ks);
	if (!r->conn && now >= cr->next_try_ms)
		chardev_connect(r);
	if (!r->area && now >= cr->area_try_ms) {
		cr->area_try_ms = now + D_RECONNECT_MS;
		if (!chardev_open_area(r, msg, sizeof(msg)))
			d_log("remote '%s': area attached", r->name);
	}
	if (!r->area)
		d_due(next, cr->area_try_ms);
	if (r->conn && r->state != HVT_REMOTE_CONNECTED &&
	    now >= cr->ag.agent.hello_ms + D_HELLO_RETRY_MS)
		agent_send_hello(r, NULL, 0, NULL);
	if (!r->conn)
		d_due(next, cr->next_try_ms);
	else if (r->state != HVT_REMOTE_CONNECTED || !r->area)
		d_due(next, cr->ag.agent.hello_ms + D_HELLO_RETRY_MS);
}

/*
 * The guest's agent is up, so its kernel is: its ring (or the section its
 * agent copies into) is read beside the area from now on, again for each
 * new area.
 */
static void chardev_hello(struct remote *r, struct conn *c,
			  const struct hvt_msg *m, bool restarted)
{
	struct chardev_remote *cr = chardev_remote(r);
	struct hvtrace_area *was = r->area;
	char msg[512];

	(void)c;
	if (restarted) {
		kside_close(r, &cr->ks);
		remote_close_area(r);
	}
	if (!r->area || r->info.generation != m->u.hello.generation) {
		if (chardev_open_area(r, msg, sizeof(msg)))
			d_log("remote '%s': %s (retrying)", r->name, msg);
	}
	if (r->area && (r->area != was || !cr->ks))
		kside_open(r, cr->area_path, cr->ram_path, cr->owner, &cr->ks);
}

static int chardev_kallsyms(const struct remote *r, const char **text,
			    size_t *len, const char **why)
{
	return kside_kallsyms(chardev_remote_c(r)->ks, text, len, why);
}

static void chardev_bye(struct remote *r, struct conn *c)
{
	(void)c;
	r->state = HVT_REMOTE_WAITING;
}

static void chardev_conn_lost(struct remote *r)
{
	struct chardev_remote *cr = chardev_remote(r);

	r->state = HVT_REMOTE_WAITING;
	/* QEMU ends: its supervisor writes the record within moments. */
	cr->quick_tries = CHARDEV_QUICK_TRIES;
	cr->next_try_ms = d_now_ms() + CHARDEV_QUICK_MS;
	d_log("remote '%s': lost %s; reconnecting", r->name, cr->ctl_path);
}

static const char *chardev_control(const struct remote *r)
{
	const struct chardev_remote *cr = chardev_remote_c(r);

	return cr->ctl_path;
}

static const char *chardev_area_path(const struct remote *r)
{
	const struct chardev_remote *cr = chardev_remote_c(r);

	return cr->area_path;
}

static void chardev_save(const struct remote *r, FILE *f)
{
	const struct chardev_remote *cr = chardev_remote_c(r);

	/* Its owner, if a user's tool attached it: trusted for its area
	 * again after a restart. */
	if (cr->owner != (uid_t)-1)
		fprintf(f, "guest\t%s\t%u\n", r->name,
			(unsigned int)cr->owner);
	else
		fprintf(f, "guest\t%s\n", r->name);
}

static void chardev_free(struct remote *r)
{
	struct chardev_remote *cr = chardev_remote(r);

	bell_close(r);
	kside_close(NULL, &cr->ks); /* its source went with the others */
	agent_remote_release(&cr->ag);
	free(cr->ctl_path);
	free(cr->area_path);
	free(cr->ram_path);
	free(cr->bell_path);
	free(cr->ended_path);
	free(cr);
}

static const struct remote_ops chardev_ops = {
	.transport = HVT_TRANSPORT_CHARDEV,
	.name = "chardev",
	.attached_as = "a guest on",
	.control = chardev_control,
	.area_path = chardev_area_path,
	.where = chardev_control,
	.save = chardev_save,
	.tick = chardev_tick,
	.free = chardev_free,
	.hello = chardev_hello,
	.bye = chardev_bye,
	.conn_lost = chardev_conn_lost,
	.kallsyms = chardev_kallsyms,
};
