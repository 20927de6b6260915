// SPDX-License-Identifier: MIT
/*
 * hvtraced: remotes -- one per writer the daemon owns.
 *
 * A remote is a trace area (attached with HVTRACE_OPEN_CONTROL: this daemon
 * is its single owner and consumer), a user_events registry, and the
 * agent session that feeds the registry.  Two kinds:
 *
 *   socket   a local agent connected to the daemon's socket; its HELLO
 *            names the remote and carries the area descriptor.
 *   chardev  a guest attached by name: the daemon connects to QEMU's
 *            chardev socket RUN_DIR/NAME/control.sock (the host end of the
 *            guest's virtio-serial port) and opens SHM_DIR/hvtrace-NAME.
 *            It reconnects when the socket goes away and re-says HELLO
 *            until the guest's agent answers.
 *
 * Registry owners are the agent's client channels (owner = chan + 1; the
 * agent itself is chan 0).  The daemon remembers which owner holds which
 * event ("held"), so that a replayed registration of a reference it still
 * holds is a no-op, and so that it can drop every reference of an agent
 * that restarted (a new pid or area generation in its HELLO) or of a
 * local agent whose process is gone.  The guest picks the channel
 * numbers, so what it can make the daemon hold is capped per remote
 * (channels and registrations, see held.c) and every lookup is O(1) or
 * O(log n).
 *
 * Nothing an agent sends is trusted: names, definitions and counts are
 * validated by the codec and the registry; the area is validated by
 * libhvtrace; enable bits are written from the registry's state, never
 * read back from the shared page.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"

static uint64_t trig_token_seq;

struct remote *remote_by_id(uint32_t id)
{
	struct remote *r;

	for (r = D->remotes; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

struct remote *remote_by_name(const char *name)
{
	struct remote *r;

	for (r = D->remotes; r; r = r->next)
		if (!strcmp(r->name, name))
			return r;
	return NULL;
}

/* --- enable bits ---------------------------------------------------------- */

/* Called by the registry with its lock held: only record the change. */
static void remote_enable_hook(void *arg, uint32_t bit, bool on)
{
	struct remote *r = arg;

	if (r->nr_chg == r->cap_chg) {
		size_t cap = r->cap_chg ? r->cap_chg * 2 : 16;
		void *n = realloc(r->chg, cap * sizeof(*r->chg));

		if (!n)
			return;	/* the snapshot below still catches it */
		r->chg = n;
		r->cap_chg = cap;
	}
	r->chg[r->nr_chg].bit = bit;
	r->chg[r->nr_chg].on = on;
	r->nr_chg++;
}

struct find_bit {
	uint32_t bit;
	uint32_t id;
};

static int find_bit_cb(const struct hvtrace_ue_event_info *info, void *arg)
{
	struct find_bit *fb = arg;

	if (info->bit != fb->bit)
		return 0;
	fb->id = info->id;
	return 1;
}

/* Write the registry's whole bitmap into the control page. */
static void remote_write_bitmap(struct remote *r)
{
	uint64_t words[HVT_ABI_MAX_EVENTS / 64];
	unsigned int bit;
	int n;

	if (!r->area)
		return;
	memset(words, 0, sizeof(words));
	n = hvtrace_ue_enable_snapshot(r->reg, words, HVT_ABI_MAX_EVENTS / 64,
				   NULL);
	for (bit = 0; bit < HVT_ABI_MAX_EVENTS; bit++)
		if ((int)(bit / 64) < n)
			hvtrace_area_set_event(r->area, bit,
					       (words[bit / 64] >> (bit % 64)) &
						       1);
	hvtrace_area_set_tracing(r->area, r->tracing_on);
}

void remote_apply_changes(struct remote *r)
{
	size_t i;

	for (i = 0; i < r->nr_chg; i++) {
		struct find_bit fb = { r->chg[i].bit, 0 };
		struct hvt_msg m;

		if (r->area)
			hvtrace_area_set_event(r->area, r->chg[i].bit,
					       r->chg[i].on);
		if (!r->conn || r->state != HVT_REMOTE_CONNECTED)
			continue;
		hvtrace_ue_foreach(r->reg, find_bit_cb, &fb);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_EVENT_STATE;
		m.u.event_state.id = fb.id;
		m.u.event_state.bit = r->chg[i].bit;
		m.u.event_state.enabled = r->chg[i].on;
		conn_send(r->conn, &m);
	}
	r->nr_chg = 0;
}

int remote_set_tracing(struct remote *r, bool on)
{
	struct hvt_msg m;

	r->tracing_on = on;
	if (r->area)
		hvtrace_area_set_tracing(r->area, on);
	if (r->conn && r->state == HVT_REMOTE_CONNECTED) {
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TRACING;
		m.u.tracing.op = on ? HVT_TRACING_ON : HVT_TRACING_OFF;
		conn_send(r->conn, &m);
	}
	return 0;
}

/* --- references held by the agent's clients ------------------------------- */

/* Give the registry back every reference @owner holds on event @id. */
static void held_unregister(void *arg, uint64_t owner, uint32_t id)
{
	struct remote *r = arg;

	hvtrace_ue_unregister_owner_id(r->reg, owner, id);
}

static int held_drop_owner(struct remote *r, uint64_t owner)
{
	unsigned int n = held_take_owner(&r->held, owner, held_unregister, r);

	remote_apply_changes(r);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

static void held_drop_all(struct remote *r)
{
	held_take_all(&r->held, held_unregister, r);
	remote_apply_changes(r);
}

/* --- comms ---------------------------------------------------------------- */

void remote_cmdline_set(struct remote *r, uint32_t pid, const char *comm,
			size_t len)
{
	struct cmdline *c = &r->cmdlines[pid % D_CMDLINE_SLOTS];

	if (!pid)
		return;
	if (len > sizeof(c->comm) - 1)
		len = sizeof(c->comm) - 1;
	c->pid = pid;
	memcpy(c->comm, comm, len);
	c->comm[len] = '\0';
}

const char *remote_comm(const struct remote *r, uint32_t pid)
{
	const struct cmdline *c = &r->cmdlines[pid % D_CMDLINE_SLOTS];

	return pid && c->pid == pid ? c->comm : NULL;
}

/* --- life cycle ----------------------------------------------------------- */

int remote_new(const char *name, enum hvt_transport t, struct remote **out)
{
	struct remote *r, **pp;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ret = hvtrace_ue_registry_create(NULL, &r->reg);
	if (ret) {
		free(r);
		return ret;
	}
	hvtrace_ue_set_enable_hook(r->reg, remote_enable_hook, r);
	r->id = ++D->next_remote_id;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->transport = t;
	r->state = HVT_REMOTE_WAITING;
	r->tracing_on = true;
	r->next_req = 1;
	for (pp = &D->remotes; *pp; pp = &(*pp)->next)
		;
	*pp = r;
	*out = r;
	state_changed();
	return 0;
}

static void trig_finish(struct remote *r, int status);

void remote_destroy(struct remote *r)
{
	struct remote **pp;

	if (r->trig)
		trig_finish(r, -ECANCELED);
	subs_drop_remote(r);
	area_remote_free(r);
	if (r->conn) {
		struct conn *c = r->conn;
		struct hvt_msg bye;

		memset(&bye, 0, sizeof(bye));
		bye.type = HVT_MSG_BYE;
		bye.u.bye.reason = HVT_BYE_SHUTDOWN;
		conn_send(c, &bye);
		conn_flush(c);
		c->remote = NULL;
		r->conn = NULL;
		conn_close(c);
	}
	held_drop_all(r);
	hvtrace_ue_set_enable_hook(r->reg, NULL, NULL);
	hvtrace_ue_registry_destroy(r->reg);
	hvtrace_area_close(r->area);
	for (pp = &D->remotes; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	held_free(&r->held);
	state_changed();
	free(r->chg);
	free(r->page);
	free(r);
}

/* Attach the area at @path (a path, or /proc/self/fd/N). */
static int remote_open_area(struct remote *r, const char *path, char *msg,
			    size_t msgsize)
{
	struct hvtrace_area *a;
	struct hvtrace_area_info info;
	uint8_t *page;
	int ret;

	ret = hvtrace_area_open(path, 0, 0,
				HVTRACE_OPEN_CONTROL | HVTRACE_OPEN_RESUME, &a);
	if (ret) {
		snprintf(msg, msgsize, "%s", hvtrace_last_error());
		return ret;
	}
	hvtrace_area_get_info(a, &info);
	page = realloc(r->page, info.subbuf_size);
	if (!page) {
		hvtrace_area_close(a);
		snprintf(msg, msgsize, "out of memory");
		return -ENOMEM;
	}
	r->page = page;
	/* Subscribers keep their subscriptions; the new area's readers
	 * start at its oldest data. */
	hvtrace_area_close(r->area);
	r->area = a;
	r->info = info;
	r->sync_samples = 0;
	r->raw_nr = 0;
	remote_write_bitmap(r);
	d_log("remote '%s': area %s: %u CPUs x %u sub-buffers of %u bytes, "
	      "generation %llu",
	      r->name, path, info.nr_cpus, info.nr_subbufs, info.subbuf_size,
	      (unsigned long long)info.generation);
	return 0;
}

static void remote_sync_burst(struct remote *r)
{
	r->burst_left = D_SYNC_BURST;
	r->next_ping_ms = d_now_ms();
}

static void remote_send_hello(struct remote *r, const struct hvt_msg *answer,
			      int status, const char *text)
{
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_HELLO;
	if (answer) {
		m.flags = HVT_PF_REPLY;
		m.req = answer->req;
		m.u.hello.min_version = HVT_PROTO_VERSION;
		m.u.hello.max_version = HVT_PROTO_VERSION;
	} else {
		m.req = r->next_req++;
		if (!m.req)
			m.req = r->next_req++;
		m.u.hello.min_version = HVT_PROTO_MIN_VERSION;
		m.u.hello.max_version = HVT_PROTO_VERSION;
		r->hello_ms = d_now_ms();
	}
	m.u.hello.role = HVT_ROLE_HOST;
	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.generation = r->session;
	m.u.hello.status = status;
	m.u.hello.name.ptr = r->name;
	m.u.hello.name.len = (uint32_t)strlen(r->name);
	if (text) {
		m.u.hello.text.ptr = text;
		m.u.hello.text.len = (uint32_t)strnlen(text,
						       HVT_PROTO_TEXT_MAX);
	}
	conn_send(r->conn, &m);
	conn_flush(r->conn);
}

static void refuse_hello(struct conn *c, const struct hvt_msg *m, int status,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void refuse_hello(struct conn *c, const struct hvt_msg *m, int status,
			 const char *fmt, ...)
{
	char text[HVT_PROTO_TEXT_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	d_log("refusing an agent: %s", text);
	conn_reply_hello(c, m, HVT_ROLE_HOST, status, text);
	if (c->role == CONN_NEW)
		c->closing = true;
}

/*
 * The agent said who it is.  A different process or area generation than
 * the one we hold references for means the agent restarted: its old
 * clients are gone, so are their references.
 */
static bool remote_identity(struct remote *r, const struct hvt_msg *m)
{
	bool restarted = r->have_instance &&
			 (m->u.hello.pid != r->agent_pid ||
			  m->u.hello.generation != r->agent_gen);

	if (restarted) {
		d_log("remote '%s': the agent restarted (pid %u, generation "
		      "%llu): dropping the registrations of its old clients",
		      r->name, m->u.hello.pid,
		      (unsigned long long)m->u.hello.generation);
		held_drop_all(r);
	}
	r->have_instance = true;
	r->agent_pid = m->u.hello.pid;
	r->agent_gen = m->u.hello.generation;
	return restarted;
}

static void remote_session_up(struct remote *r)
{
	bool was = r->state == HVT_REMOTE_CONNECTED;

	r->state = HVT_REMOTE_CONNECTED;
	if (!was) {
		d_log("remote '%s': agent session up", r->name);
		remote_sync_burst(r);
		remote_set_tracing(r, r->tracing_on);
	}
}

static void local_agent_hello(struct conn *c, const struct hvt_msg *m)
{
	char name[HVT_PROTO_NAME_MAX + 1], path[64], msg[512];
	struct remote *r;
	struct stat st;
	bool restarted, fresh = false;
	int fd, ret;

	if (!m->u.hello.name.len) {
		refuse_hello(c, m, -EINVAL,
			     "a local agent must name its remote (--name)");
		return;
	}
	memcpy(name, m->u.hello.name.ptr, m->u.hello.name.len);
	name[m->u.hello.name.len] = '\0';
	r = remote_by_name(name);
	if (r && r->transport != HVT_TRANSPORT_SOCKET) {
		refuse_hello(c, m, -EEXIST,
			     "'%s' is attached as %s %s; choose another "
			     "--name",
			     name,
			     r->transport == HVT_TRANSPORT_AREA ? "the area" :
								  "a guest on",
			     r->transport == HVT_TRANSPORT_AREA ?
				     area_remote_spec(r) :
				     r->ctl_path);
		return;
	}
	if (r && r->conn && r->conn != c) {
		refuse_hello(c, m, -EADDRINUSE,
			     "a remote named '%s' is connected already (pid "
			     "%u); choose another --name",
			     name, r->agent_pid);
		return;
	}
	if (m->u.hello.nr_fds != 1 || (fd = conn_take_fd(c)) < 0) {
		refuse_hello(c, m, -EINVAL,
			     "a local agent must pass its area descriptor "
			     "with HELLO");
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)HVT_CPU_OFFSET) {
		close(fd);
		refuse_hello(c, m, -EINVAL,
			     "the descriptor passed with HELLO is not a "
			     "trace area file");
		return;
	}
	if (!r) {
		ret = remote_new(name, HVT_TRANSPORT_SOCKET, &r);
		if (ret) {
			close(fd);
			refuse_hello(c, m, ret, "cannot create remote: %s",
				     strerror(-ret));
			return;
		}
		fresh = true;
	}
	restarted = remote_identity(r, m);
	if (!r->area || restarted || fresh ||
	    r->info.generation != m->u.hello.generation) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ret = remote_open_area(r, path, msg, sizeof(msg));
		if (ret) {
			close(fd);
			refuse_hello(c, m, ret, "cannot attach the area: %s",
				     msg);
			if (fresh)
				remote_destroy(r);
			return;
		}
	}
	close(fd);
	c->role = CONN_AGENT;
	c->remote = r;
	r->conn = c;
	r->session = d_now_ns();
	d_log("remote '%s': local agent pid %u connected (connection %u)",
	      r->name, m->u.hello.pid, c->id);
	remote_send_hello(r, m, 0, NULL);
	remote_session_up(r);
}

void remote_agent_hello(struct conn *c, const struct hvt_msg *m)
{
	struct remote *r = c->remote;
	char msg[512];

	if (!(m->flags & HVT_PF_REPLY) &&
	    (m->u.hello.min_version > HVT_PROTO_VERSION ||
	     m->u.hello.max_version < HVT_PROTO_MIN_VERSION)) {
		refuse_hello(c, m, -EPROTONOSUPPORT,
			     "hvtraced speaks protocol version %u; the agent "
			     "offers %u..%u",
			     HVT_PROTO_VERSION, m->u.hello.min_version,
			     m->u.hello.max_version);
		return;
	}
	if (m->u.hello.role != HVT_ROLE_AGENT) {
		c->errors++;
		return;
	}
	if (c->role == CONN_NEW) {
		local_agent_hello(c, m);
		return;
	}
	if (!r)
		return;
	if (m->flags & HVT_PF_REPLY && m->u.hello.status) {
		d_log("remote '%s': the agent refused the session: %.*s",
		      r->name, (int)m->u.hello.text.len, m->u.hello.text.ptr);
		return;
	}
	if (remote_identity(r, m) && c->role == CONN_CHARDEV) {
		hvtrace_area_close(r->area);
		r->area = NULL;
	}
	if (c->role == CONN_CHARDEV &&
	    (!r->area || r->info.generation != m->u.hello.generation)) {
		if (remote_open_area(r, r->area_path, msg, sizeof(msg)))
			d_log("remote '%s': %s (retrying)", r->name, msg);
	}
	if (c->role == CONN_AGENT && m->u.hello.nr_fds) {
		int fd = conn_take_fd(c);

		if (fd >= 0)
			close(fd);	/* the area is attached already */
	}
	if (!(m->flags & HVT_PF_REPLY))
		remote_send_hello(r, m, 0, NULL);
	remote_session_up(r);
}

/* The agent connection is gone. */
void remote_conn_lost(struct remote *r, struct conn *c)
{
	if (r->conn != c)
		return;
	r->conn = NULL;
	r->ping_req = 0;
	r->ping_idx = 0;
	if (r->trig)
		trig_finish(r, -ECONNRESET);
	if (r->transport == HVT_TRANSPORT_CHARDEV) {
		r->state = HVT_REMOTE_WAITING;
		r->next_try_ms = d_now_ms() + D_RECONNECT_MS;
		d_log("remote '%s': lost %s; reconnecting", r->name,
		      r->ctl_path);
		return;
	}
	r->state = HVT_REMOTE_DISCONNECTED;
	d_log("remote '%s': local agent disconnected", r->name);
	/* An agent that is gone took its clients' connections with it. */
	if (r->agent_pid && kill((pid_t)r->agent_pid, 0) && errno == ESRCH) {
		held_drop_all(r);
		r->have_instance = false;
	}
}

/* --- guests attached by name ---------------------------------------------- */

static void chardev_connect(struct remote *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct conn *c;
	int fd;

	r->next_try_ms = d_now_ms() + D_RECONNECT_MS;
	if (strlen(r->ctl_path) >= sizeof(sa.sun_path))
		return;
	strcpy(sa.sun_path, r->ctl_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		d_dbg("remote '%s': %s: %s", r->name, r->ctl_path,
		      strerror(errno));
		close(fd);
		return;
	}
	c = conn_new(fd, CONN_CHARDEV);
	if (!c) {
		close(fd);
		return;
	}
	c->remote = r;
	r->conn = c;
	r->session = d_now_ns();
	d_log("remote '%s': connected to %s", r->name, r->ctl_path);
	remote_send_hello(r, NULL, 0, NULL);
}

int remote_attach_chardev(const char *name, struct remote **out, char *msg,
			  size_t msgsize)
{
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
	ret = remote_new(name, HVT_TRANSPORT_CHARDEV, &r);
	if (ret) {
		snprintf(msg, msgsize, "cannot create remote: %s",
			 strerror(-ret));
		return ret;
	}
	snprintf(r->ctl_path, sizeof(r->ctl_path), "%s/%s/control.sock",
		 D->run_dir, name);
	snprintf(r->area_path, sizeof(r->area_path), "%s/hvtrace-%s",
		 D->shm_dir, name);
	if (remote_open_area(r, r->area_path, tmp, sizeof(tmp)))
		d_dbg("remote '%s': %s (retrying)", name, tmp);
	chardev_connect(r);
	*out = r;
	snprintf(msg, msgsize, "attached '%s' (control %s, area %s)", name,
		 r->ctl_path, r->area_path);
	return 0;
}

/* --- the agent's requests ------------------------------------------------- */

static bool replay_is_held(struct remote *r, uint64_t owner,
			   const struct hvt_msg *m, struct hvtrace_ue_reg *out)
{
	struct hvtrace_ue_event_info info;
	char name[256], def[HVT_PROTO_DEF_MAX + 1];
	const char *args = NULL;

	if (!(m->u.reg.flags & HVT_REG_REPLAY) ||
	    !held_has(&r->held, owner, m->u.reg.want_id) ||
	    hvtrace_ue_lookup_id(r->reg, m->u.reg.want_id, &info))
		return false;
	memcpy(def, m->u.reg.def.ptr, m->u.reg.def.len);
	def[m->u.reg.def.len] = '\0';
	if (hvtrace_ue_split_name(def, name, sizeof(name), &args, NULL) ||
	    strcmp(name, info.name) || !hvtrace_ue_match_args(info.def, args))
		return false;
	out->id = info.id;
	out->bit = info.bit;
	return true;
}

static void agent_register(struct conn *c, struct remote *r,
			   const struct hvt_msg *m)
{
	uint64_t owner = (uint64_t)m->chan + 1;
	char def[HVT_PROTO_DEF_MAX + 1];
	struct hvtrace_ue_error err = { 0 };
	struct hvtrace_ue_reg out = { 0 };
	int ret;

	if (replay_is_held(r, owner, m, &out)) {
		conn_reply_result(c, m, HVT_MSG_REGISTER, 0, out.id, out.bit,
				  NULL);
		return;
	}
	/*
	 * Caps before the registry takes anything: the guest picks its
	 * channel numbers and definitions, so what it can make us hold is
	 * bounded per remote (hvtraced --max-channels, --max-registrations).
	 */
	ret = held_admit(&r->held, owner, D->max_channels,
			 D->max_registrations);
	if (ret) {
		if (!r->refused_regs++)
			d_log("remote '%s': refusing registrations over the "
			      "cap of %u client channels and %u "
			      "registrations (hvtraced --max-channels, "
			      "--max-registrations); counted in 'hvtrace "
			      "daemon info'",
			      r->name, D->max_channels, D->max_registrations);
		conn_reply_result(c, m, HVT_MSG_REGISTER, ret, 0, 0,
				  ret == -EMFILE ?
				  "remote '%s' has %u client channels holding "
				  "registrations, the most hvtraced allows "
				  "(--max-channels); close some clients" :
				  "remote '%s' holds %u registrations, the "
				  "most hvtraced allows (--max-registrations); "
				  "unregister some events",
				  r->name, ret == -EMFILE ? D->max_channels :
				  D->max_registrations);
		return;
	}
	memcpy(def, m->u.reg.def.ptr, m->u.reg.def.len);
	def[m->u.reg.def.len] = '\0';
	/*
	 * A replay names the binding the client's handle already holds (from
	 * an earlier daemon or session): ask the registry for exactly that,
	 * so running writers keep working after a daemon restart.
	 */
	if (m->u.reg.flags & HVT_REG_REPLAY)
		ret = hvtrace_ue_register_at(r->reg, owner, def, m->u.reg.want_id,
					 m->u.reg.want_bit, &out, &err);
	else
		ret = hvtrace_ue_register(r->reg, owner, def, &out, &err);
	remote_apply_changes(r);
	if (ret) {
		conn_reply_result(c, m, HVT_MSG_REGISTER, ret, 0, 0, "%s",
				  err.msg[0] ? err.msg : strerror(-ret));
		return;
	}
	if ((m->u.reg.flags & HVT_REG_REPLAY) &&
	    (out.id != m->u.reg.want_id || out.bit != m->u.reg.want_bit))
		d_log("remote '%s': replayed '%s' of client %u wanted id %u bit "
		      "%u but got id %u bit %u (taken by another event)",
		      r->name, def, m->chan, m->u.reg.want_id,
		      m->u.reg.want_bit, out.id, out.bit);
	ret = held_add(&r->held, owner, out.id);
	if (ret) {
		/* Not remembered: give the reference back. */
		hvtrace_ue_unregister(r->reg, owner, out.id, NULL);
		remote_apply_changes(r);
		conn_reply_result(c, m, HVT_MSG_REGISTER, ret, 0, 0,
				  "hvtraced cannot track the registration: "
				  "%s", strerror(-ret));
		return;
	}
	d_dbg("remote '%s': client %u registered '%s' as id %u bit %u",
	      r->name, m->chan, def, out.id, out.bit);
	conn_reply_result(c, m, HVT_MSG_REGISTER, 0, out.id, out.bit, NULL);
}

static void agent_request(struct conn *c, struct remote *r,
			  const struct hvt_msg *m)
{
	uint64_t owner = (uint64_t)m->chan + 1;
	struct hvtrace_ue_error err = { 0 };
	char name[HVT_PROTO_DEF_MAX + 1];
	const char *n;
	int ret;

	switch (m->type) {
	case HVT_MSG_REGISTER:
		agent_register(c, r, m);
		break;
	case HVT_MSG_UNREGISTER:
		ret = hvtrace_ue_unregister(r->reg, owner, m->u.unreg.id, &err);
		remote_apply_changes(r);
		if (!ret)
			held_dec(&r->held, owner, m->u.unreg.id);
		conn_reply_result(c, m, HVT_MSG_UNREGISTER, ret, m->u.unreg.id,
				  0, "%s", ret ? err.msg : "");
		break;
	case HVT_MSG_DELETE:
		memcpy(name, m->u.arg.s.ptr, m->u.arg.s.len);
		name[m->u.arg.s.len] = '\0';
		n = strncmp(name, HVT_UE_PREFIX, 2) ? name : name + 2;
		ret = hvtrace_ue_delete(r->reg, n, &err);
		remote_apply_changes(r);
		conn_reply_result(c, m, HVT_MSG_DELETE, ret, 0, 0, "%s",
				  ret ? err.msg : "");
		break;
	case HVT_MSG_CLIENT_GONE:
		ret = held_drop_owner(r, owner);
		d_dbg("remote '%s': client %u gone, %d references dropped",
		      r->name, m->chan, ret);
		conn_reply_result(c, m, HVT_MSG_CLIENT_GONE, ret < 0 ? ret : 0,
				  ret < 0 ? 0 : (uint32_t)ret, 0, NULL);
		break;
	case HVT_MSG_CMDLINE:
		remote_cmdline_set(r, m->u.cmdline.pid, m->u.cmdline.comm.ptr,
				   m->u.cmdline.comm.len);
		break;
	case HVT_MSG_BYE:
		d_log("remote '%s': the agent said goodbye", r->name);
		if (c->role == CONN_AGENT) {
			c->closing = true;
			conn_update_events(c);
		} else {
			r->state = HVT_REMOTE_WAITING;
		}
		break;
	default:
		c->errors++;
		r->proto_errors++;
		conn_reply_error(c, m->req, m->chan, -EOPNOTSUPP,
				 "hvtraced does not take this message from "
				 "an agent");
		break;
	}
}

/* --- time sync and causality triggers ------------------------------------- */

static void remote_ping(struct remote *r)
{
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_PING;
	m.req = r->next_req++;
	if (!m.req)
		m.req = r->next_req++;
	m.u.ping.seq = ++r->ping_seq;
	m.u.ping.host_ns = d_now_ns();
	if (conn_send(r->conn, &m))
		return;
	r->ping_req = m.req;
	/* The sample's send time: right before the bytes leave. */
	r->ping_sent_ns = d_now_ns();
	conn_flush(r->conn);
}

/*
 * Writer ticks to nanoseconds with the area's nominal rate: only used for
 * the agent's own processing time (microseconds), where ppm do not
 * matter.
 */
static uint64_t ticks_to_ns(const struct remote *r, uint64_t ticks)
{
	if (r->info.clock_id != HVT_CLOCK_COUNTER)
		return ticks;
	if (r->info.clock_freq_hz)
		return (uint64_t)((unsigned __int128)ticks * 1000000000u /
				  r->info.clock_freq_hz);
	if (r->info.clock_shift < 64)
		return (uint64_t)(((unsigned __int128)ticks *
				   r->info.clock_mult) >>
				  r->info.clock_shift);
	return ticks;
}

static void remote_pong(struct remote *r, const struct hvt_msg *m,
			uint64_t recv_ns)
{
	uint64_t now = d_now_ms(), busy, send, recv;

	r->ping_req = 0;
	if (m->type == HVT_MSG_ERROR || m->u.pong.seq != r->ping_seq ||
	    !r->area || m->u.pong.clock_id != r->info.clock_id ||
	    recv_ns < r->ping_sent_ns) {
		r->sync_bad++;
		goto next;
	}
	/*
	 * NTP's four stamps: the writer read its clock at rx and at tx, both
	 * inside [send, recv] of host time.  Their midpoint pairs with the
	 * midpoint of [send + busy/2, recv - busy/2], where busy is the
	 * agent's time between the two readings: a sample whose window no
	 * longer includes the agent's own processing.
	 */
	busy = ticks_to_ns(r, m->u.pong.writer_tx - m->u.pong.writer_rx);
	if (busy > recv_ns - r->ping_sent_ns) {
		r->sync_bad++;	/* slower than the round trip: bogus */
		goto next;
	}
	/*
	 * The first ping of a round wakes an agent that slept: that leg is
	 * slow (tens of microseconds on a VM whose vCPU halted) while the
	 * answer comes back fast, and the sample's midpoint is skewed by
	 * half the difference.  Pings sent right after an answer find the
	 * agent awake, with legs of the same length: only those are used.
	 */
	if (r->ping_idx == 0)
		goto next;
	send = r->ping_sent_ns + busy / 2;
	recv = recv_ns - busy / 2;
	sync_sample(r, send,
		    m->u.pong.writer_rx +
			    (m->u.pong.writer_tx - m->u.pong.writer_rx) / 2,
		    recv);
	r->sync_samples++;
next:
	if (++r->ping_idx < D_SYNC_CHAIN) {
		r->next_ping_ms = now;	/* the chain goes on at once */
		return;
	}
	r->ping_idx = 0;
	if (r->burst_left) {
		r->burst_left--;
		r->next_ping_ms = now + D_SYNC_BURST_GAP_MS;
	} else {
		r->next_ping_ms = D->sync_interval_ms ?
					  now + D->sync_interval_ms :
					  UINT64_MAX;
	}
	if (r->trig && r->next_ping_ms > now + 50)
		r->next_ping_ms = now + 50;	/* keep the model fresh */
}

/* Continue a ping chain right away, without a trip through the loop. */
static void remote_ping_chain(struct remote *r)
{
	if (r->ping_idx && !r->ping_req && r->conn &&
	    r->state == HVT_REMOTE_CONNECTED && r->area)
		remote_ping(r);
}

static void trig_finish(struct remote *r, int status)
{
	struct trig_run *t = r->trig;
	struct hvtrace_ue_error err;
	struct hvt_msg m;
	uint8_t *buf = NULL;
	uint32_t i;

	r->trig = NULL;
	hvtrace_ue_set_enabled(r->reg, D_TRIGGER_EVENT, HVT_UE_USED_OTHER, false,
			   &err);
	remote_apply_changes(r);
	if (t->tool) {
		buf = malloc((size_t)t->done * HVT_TRIGGER_REC_SIZE + 1);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TRIGGER_RUN;
		m.flags = HVT_PF_REPLY;
		m.req = t->tool_req;
		m.chan = r->id;
		m.u.trigger_run_reply.status = buf ? status : -ENOMEM;
		if (buf) {
			for (i = 0; i < t->done; i++) {
				size_t off = (size_t)i * HVT_TRIGGER_REC_SIZE;

				hvt_msg_put_trigger(buf + off, &t->recs[i]);
			}
			m.u.trigger_run_reply.recs.ptr = buf;
			m.u.trigger_run_reply.recs.count = t->done;
		}
		conn_send(t->tool, &m);
	}
	free(buf);
	free(t->recs);
	free(t);
}

static void trig_send(struct remote *r)
{
	struct trig_run *t = r->trig;
	struct hvt_trigger_rec *rec = &t->recs[t->done];
	struct hvt_msg m;

	memset(rec, 0, sizeof(*rec));
	/* Unique across remotes and runs: the remote id, then a count. */
	rec->token = ((uint64_t)r->id << 48) |
		     (++trig_token_seq & 0xffffffffffffull);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_TRIGGER;
	m.req = r->next_req++;
	if (!m.req)
		m.req = r->next_req++;
	m.u.trigger.token = rec->token;
	m.u.trigger.host_ns = d_now_ns();
	t->req = m.req;
	t->deadline_ms = d_now_ms() + D_TRIGGER_TIMEOUT_MS;
	if (conn_send(r->conn, &m)) {
		trig_finish(r, -ENOBUFS);
		return;
	}
	/* Before the bytes leave, so before the agent can act on them. */
	rec->host_before = d_now_ns();
	conn_flush(r->conn);
}

static void trig_ack(struct remote *r, const struct hvt_msg *m,
		     uint64_t recv_ns)
{
	struct trig_run *t = r->trig;
	struct hvt_trigger_rec *rec = &t->recs[t->done];

	/* When the acknowledgement arrived: after the event was written. */
	rec->host_after = recv_ns;
	t->req = 0;
	if (m->type == HVT_MSG_ERROR) {
		rec->status = m->u.result.status;
	} else if (m->u.trigger_ack.token != rec->token) {
		rec->status = -EPROTO;
	} else {
		rec->writer_ts = m->u.trigger_ack.writer_ts;
		rec->cpu = m->u.trigger_ack.cpu;
		rec->status = m->u.trigger_ack.status;
	}
	t->done++;
	if (t->done == t->count) {
		trig_finish(r, 0);
		return;
	}
	trig_send(r);
}

int remote_trigger_start(struct remote *r, struct conn *tool, uint32_t req,
			 uint32_t count, char *msg, size_t msgsize)
{
	struct hvtrace_ue_error err = { 0 };
	struct trig_run *t;
	int ret;

	if (r->trig) {
		snprintf(msg, msgsize, "a trigger run is in progress on '%s'",
			 r->name);
		return -EBUSY;
	}
	if (!r->conn || r->state != HVT_REMOTE_CONNECTED || !r->area) {
		snprintf(msg, msgsize, "the agent of '%s' is not connected",
			 r->name);
		return -ENOTCONN;
	}
	if (!r->tracing_on) {
		snprintf(msg, msgsize, "tracing is off on '%s'", r->name);
		return -ENODATA;
	}
	ret = hvtrace_ue_set_enabled(r->reg, D_TRIGGER_EVENT, HVT_UE_USED_OTHER,
				 true, &err);
	remote_apply_changes(r);
	if (ret) {
		snprintf(msg, msgsize, "the agent has not registered its "
				       "'%s' event: %s",
			 D_TRIGGER_EVENT, err.msg);
		return ret;
	}
	t = calloc(1, sizeof(*t));
	if (t)
		t->recs = calloc(count, sizeof(*t->recs));
	if (!t || !t->recs) {
		free(t);
		snprintf(msg, msgsize, "out of memory");
		return -ENOMEM;
	}
	t->tool = tool;
	t->tool_req = req;
	t->count = count;
	r->trig = t;
	trig_send(r);
	return 0;
}

void remote_tool_gone(struct conn *tool)
{
	struct remote *r;

	for (r = D->remotes; r; r = r->next)
		if (r->trig && r->trig->tool == tool)
			r->trig->tool = NULL;
}

/* --- dispatch and timers -------------------------------------------------- */

void remote_agent_frame(struct conn *c, const struct hvt_msg *m)
{
	struct remote *r = c->remote;

	if (!(m->flags & HVT_PF_REPLY)) {
		if (r->state != HVT_REMOTE_CONNECTED &&
		    m->type != HVT_MSG_BYE) {
			c->errors++;
			r->proto_errors++;
			conn_reply_error(c, m->req, m->chan, -EPROTO,
					 "send HELLO first");
			return;
		}
		agent_request(c, r, m);
		return;
	}
	if (r->ping_req && m->req == r->ping_req &&
	    (m->type == HVT_MSG_PING || m->type == HVT_MSG_ERROR)) {
		remote_pong(r, m, c->rx_ns);
		remote_ping_chain(r);
		return;
	}
	if (r->trig && r->trig->req && m->req == r->trig->req &&
	    (m->type == HVT_MSG_TRIGGER || m->type == HVT_MSG_ERROR)) {
		trig_ack(r, m, c->rx_ns);
		return;
	}
	/* A late reply to a request given up on, or an answer to nothing:
	 * both harmless. */
	if (m->type != HVT_MSG_ERROR) {
		c->errors++;
		r->proto_errors++;
	}
}

void remote_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	char msg[512];

#define DUE(t)                                                                 \
	do {                                                                   \
		if (*next > (t))                                               \
			*next = (t);                                           \
	} while (0)

	if (r->transport == HVT_TRANSPORT_AREA)
		area_remote_tick(r, now, next);
	if (r->transport == HVT_TRANSPORT_CHARDEV) {
		if (!r->conn && now >= r->next_try_ms)
			chardev_connect(r);
		if (!r->area && now >= r->area_try_ms) {
			r->area_try_ms = now + D_RECONNECT_MS;
			if (!remote_open_area(r, r->area_path, msg,
					      sizeof(msg)))
				d_log("remote '%s': area attached", r->name);
		}
		if (!r->area)
			DUE(r->area_try_ms);
		if (r->conn && r->state != HVT_REMOTE_CONNECTED &&
		    now >= r->hello_ms + D_HELLO_RETRY_MS)
			remote_send_hello(r, NULL, 0, NULL);
		if (!r->conn)
			DUE(r->next_try_ms);
		else if (r->state != HVT_REMOTE_CONNECTED || !r->area)
			DUE(r->hello_ms + D_HELLO_RETRY_MS);
	}
	if (r->conn && r->state == HVT_REMOTE_CONNECTED && r->area) {
		if (r->ping_req &&
		    now >= r->ping_sent_ns / 1000000 + D_PING_TIMEOUT_MS) {
			r->ping_req = 0;
			r->ping_idx = 0;
			r->sync_bad++;
		}
		if (!r->ping_req && now >= r->next_ping_ms)
			remote_ping(r);
		if (r->ping_req)
			DUE(r->ping_sent_ns / 1000000 + D_PING_TIMEOUT_MS);
		else
			DUE(r->next_ping_ms);
	}
	if (r->trig && r->trig->req) {
		if (now >= r->trig->deadline_ms) {
			r->trig->recs[r->trig->done].status = -ETIMEDOUT;
			r->trig->recs[r->trig->done].host_after = d_now_ns();
			r->trig->done++;
			trig_finish(r, -ETIMEDOUT);
		} else {
			DUE(r->trig->deadline_ms);
		}
	}
#undef DUE
}

void remote_fill_rec(const struct remote *r, struct hvt_remote_rec *rec)
{
	uint64_t err = UINT64_MAX;

	memset(rec, 0, sizeof(*rec));
	rec->id = r->id;
	rec->state = r->state;
	rec->transport = r->transport;
	rec->tracing_on = r->tracing_on;
	rec->nr_events = hvtrace_ue_count(r->reg) + tool_ext_nr_formats(
							  (struct remote *)r);
	rec->nr_clients = (uint32_t)r->held.nr_owners;
	rec->sync_samples = r->sync_samples;
	rec->proto_errors = r->proto_errors;
	if (r->area) {
		rec->writer_kind = r->info.writer_kind;
		rec->nr_cpus = r->info.nr_cpus;
		rec->nr_subbufs = r->info.nr_subbufs;
		rec->subbuf_size = r->info.subbuf_size;
		rec->mode = r->info.mode;
		rec->clock_id = r->info.clock_id;
		rec->generation = r->info.generation;
		if (r->sync_samples || r->info.clock_id == HVT_CLOCK_HOST_NS)
			hvtrace_area_to_host_ns(r->area, 0, &err);
	}
	rec->clock_err_ns = err;
	snprintf(rec->name, sizeof(rec->name), "%s", r->name);
}
