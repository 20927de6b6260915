// SPDX-License-Identifier: MIT
/*
 * hvtraced: the agent role -- frames from an agent, local or in a guest.
 *
 * An agent's session starts with HELLO, in either direction: a local agent
 * connects to the daemon's socket and says HELLO first, naming its remote
 * and passing its area's descriptor (local_agent_hello() creates or
 * re-binds a socket remote); the daemon connects to a guest's chardev
 * itself (chardev.c) and says HELLO until the guest's agent answers.
 * Either way the agent says who it is (pid, area generation): another
 * instance than the one the daemon holds references for means the agent
 * restarted, and its old clients' references are dropped.  What differs
 * between the two is the transport's (r->ops: hello, bye, conn_lost).
 *
 * Once the session is up, agent_frame() takes the agent's requests on
 * behalf of its client channels (REGISTER, UNREGISTER, DELETE,
 * CLIENT_GONE, CMDLINE, BYE) and the answers to the daemon's own PINGs
 * (ping.c) and TRIGGERs (trigger.c).  What a guest can make the daemon
 * hold is capped per remote (held.c, --max-channels,
 * --max-registrations).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

void agent_send_hello(struct remote *r, const struct hvt_msg *answer,
		      int status, const char *text)
{
	struct agent_remote *ar = agent_remote(r);
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_HELLO;
	if (answer) {
		m.flags = HVT_PF_REPLY;
		m.req = answer->req;
		m.u.hello.min_version = HVT_PROTO_VERSION;
		m.u.hello.max_version = HVT_PROTO_VERSION;
	} else {
		m.req = remote_next_req(r);
		m.u.hello.min_version = HVT_PROTO_MIN_VERSION;
		m.u.hello.max_version = HVT_PROTO_VERSION;
		ar->agent.hello_ms = d_now_ms();
	}
	m.u.hello.role = HVT_ROLE_HOST;
	m.u.hello.caps = HVT_CAP_DAEMON_KBOOT;
	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.generation = ar->agent.session;
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
	if (!c->remote)		/* not bound yet */
		c->closing = true;
}

/*
 * The agent said who it is.  A different process or area generation than
 * the one we hold references for means the agent restarted: its old
 * clients are gone, so are their references.
 */
static bool agent_identity(struct remote *r, const struct hvt_msg *m)
{
	struct agent_remote *ar = agent_remote(r);
	bool restarted = ar->agent.have_instance &&
			 (m->u.hello.pid != ar->agent.pid ||
			  m->u.hello.generation != ar->agent.gen);

	if (restarted) {
		d_log("remote '%s': the agent restarted (pid %u, generation "
		      "%llu): dropping the registrations of its old clients",
		      r->name, m->u.hello.pid,
		      (unsigned long long)m->u.hello.generation);
		remote_held_drop_all(r);
	}
	ar->agent.have_instance = true;
	ar->agent.pid = m->u.hello.pid;
	ar->agent.gen = m->u.hello.generation;
	return restarted;
}

static void agent_session_up(struct remote *r)
{
	bool was = r->state == HVT_REMOTE_CONNECTED;

	r->state = HVT_REMOTE_CONNECTED;
	if (!was) {
		d_log("remote '%s': agent session up", r->name);
		ping_burst(r);
		wake_reset(r);
		remote_set_tracing(r, r->tracing_on);
	}
}

static void local_agent_hello(struct conn *c, const struct hvt_msg *m)
{
	char name[HVT_PROTO_NAME_MAX + 1], path[64], msg[512];
	struct remote *r;
	struct stat st;
	bool restarted, fresh = false;
	int fd, fl, ret;

	if (!m->u.hello.name.len) {
		refuse_hello(c, m, -EINVAL,
			     "a local agent must name its remote (--name)");
		return;
	}
	memcpy(name, m->u.hello.name.ptr, m->u.hello.name.len);
	name[m->u.hello.name.len] = '\0';
	r = remote_by_name(name);
	if (r && r->ops != &remote_socket_ops) {
		refuse_hello(c, m, -EEXIST,
			     "'%s' is attached as %s %s; choose another "
			     "--name",
			     name, r->ops->attached_as, r->ops->where(r));
		return;
	}
	if (r && r->conn && r->conn != c) {
		refuse_hello(c, m, -EADDRINUSE,
			     "a remote named '%s' is connected already (pid "
			     "%u); choose another --name",
			     name, agent_remote(r)->agent.pid);
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
	/*
	 * The daemon owns the area's control page, so it needs the area
	 * read-write -- and only the agent may grant that: the area is
	 * opened again through /proc/self/fd (below) by root, which would
	 * make a read-only descriptor read-write.  The agent's own access
	 * mode decides (an O_PATH descriptor reads as O_RDONLY here).
	 */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDWR || (fl & O_PATH)) {
		close(fd);
		refuse_hello(c, m, -EACCES,
			     "the area descriptor passed with HELLO is not "
			     "open read-write: hvtraced owns the area's "
			     "control page, so a local agent must pass its "
			     "area opened O_RDWR");
		return;
	}
	if (!r) {
		ret = remote_socket_new(name, &r);
		if (ret) {
			close(fd);
			refuse_hello(c, m, ret, "cannot create remote: %s",
				     strerror(-ret));
			return;
		}
		fresh = true;
	}
	restarted = agent_identity(r, m);
	if (!r->area || restarted || fresh ||
	    r->info.generation != m->u.hello.generation) {
		/* Re-opened read-write: the agent's descriptor is (above). */
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
	conn_bind(c, &agent_conn_ops);
	c->remote = r;
	r->conn = c;
	agent_remote(r)->agent.session = d_now_ns();
	d_log("remote '%s': local agent pid %u connected (connection %u)",
	      r->name, m->u.hello.pid, c->id);
	agent_send_hello(r, m, 0, NULL);
	agent_session_up(r);
}

static void agent_hello(struct conn *c, const struct hvt_msg *m)
{
	struct remote *r = c->remote;
	bool restarted;

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
	if (!r) {		/* not bound yet: a local agent */
		local_agent_hello(c, m);
		return;
	}
	if (m->flags & HVT_PF_REPLY && m->u.hello.status) {
		d_log("remote '%s': the agent refused the session: %.*s",
		      r->name, (int)m->u.hello.text.len, m->u.hello.text.ptr);
		return;
	}
	restarted = agent_identity(r, m);
	agent_remote(r)->kboot_promised = m->u.hello.caps & HVT_CAP_AGENT_KBOOT;
	r->ops->hello(r, c, m, restarted);
	if (!(m->flags & HVT_PF_REPLY))
		agent_send_hello(r, m, 0, NULL);
	agent_session_up(r);
}

/* The agent connection is gone. */
static void agent_closed(struct conn *c)
{
	struct remote *r = c->remote;

	c->remote = NULL;
	if (!r || r->conn != c)
		return;
	r->conn = NULL;
	ping_reset(r);
	wake_reset(r);
	trigger_cancel(r, -ECONNRESET);
	kevents_cancel(r, -ECONNRESET);
	if (agent_remote(r)->kf)
		kf_abort(agent_remote(r)->kf);
	if (agent_remote(r)->kb)
		kboot_abort(agent_remote(r)->kb);
	agent_remote(r)->kf_settled = false;
	r->ops->conn_lost(r);
}

static void agent_bad_frame(struct conn *c)
{
	if (c->remote)
		c->remote->proto_errors++;
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

/*
 * The guest kernel's formats (kformats.c keeps them): BEGIN answers
 * whether the cache has this build already, KFILE pieces are not
 * answered (a broken upload is refused at END, counted once), END says
 * where they went.
 */
/* Is a remote of that name attached?  Its formats folder stays. */
static bool kf_remote_attached(const char *name)
{
	return remote_by_name(name) != NULL;
}

/*
 * This boot's files (kboot.c): BOOT is answered (the agent then sends
 * them), KFILE pieces between BOOT and BOOT_END are the boot's, not
 * answered, BOOT_END says what was kept.
 */
static void agent_kboot(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	struct agent_remote *ar = agent_remote(r);
	char msg[HVT_PROTO_TEXT_MAX + 1] = "";
	int ret;

	if (!ar->kb) {
		ar->kb = calloc(1, sizeof(*ar->kb));
		if (!ar->kb) {
			if (m->type != HVT_MSG_KFILE)
				conn_reply_result(c, m, HVT_MSG_KFORMATS,
						  -ENOMEM, 0, 0,
						  "out of memory");
			return;
		}
		ar->kb->cur = -1;
	}
	if (m->type == HVT_MSG_KFILE) {
		bool was = !ar->kb->failed;

		if (kboot_file(ar->kb, &m->u.kfile) && was) {
			r->proto_errors++;
			d_log("remote '%s': the guest kernel's files of this "
			      "boot are refused: %s",
			      r->name, ar->kb->why);
		}
		return;
	}
	/* A refused upload: nothing comes, so no tool waits for it. */
	if (m->u.kformats.op == HVT_KF_BOOT) {
		ret = kboot_begin(ar->kb, &m->u.kformats);
		if (ret) {
			r->proto_errors++;
			ar->kboot_promised = false;
			snprintf(msg, sizeof(msg), "%s", ar->kb->why);
		}
		conn_reply_result(c, m, HVT_MSG_KFORMATS, ret, 0, 0, "%s", msg);
		return;
	}
	ret = kboot_end(ar->kb, &m->u.kformats, r->info.generation, msg,
			sizeof(msg));
	if (ret)
		ar->kboot_promised = false;
	d_log("remote '%s': the guest kernel's files of this boot %s: %s",
	      r->name, ret ? "not kept" : "received", msg);
	conn_reply_result(c, m, HVT_MSG_KFORMATS, ret, 0, 0, "%s", msg);
}

static void agent_kformats(struct conn *c, struct remote *r,
			   const struct hvt_msg *m)
{
	struct agent_remote *ar = agent_remote(r);
	char msg[HVT_PROTO_TEXT_MAX + 1] = "";
	char dir[PATH_MAX];
	struct kf_upload *kf;
	int ret;

	if ((m->type == HVT_MSG_KFILE && ar->kb && ar->kb->active) ||
	    (m->type == HVT_MSG_KFORMATS &&
	     (m->u.kformats.op == HVT_KF_BOOT ||
	      m->u.kformats.op == HVT_KF_BOOT_END))) {
		agent_kboot(c, r, m);
		return;
	}
	/* The upload's state, from the first message of one on. */
	if (!ar->kf) {
		ar->kf = malloc(sizeof(*ar->kf));
		if (!ar->kf) {
			if (m->type != HVT_MSG_KFILE)
				conn_reply_result(c, m, HVT_MSG_KFORMATS,
						  -ENOMEM, 0, 0,
						  "out of memory");
			return;
		}
		kf_init(ar->kf);
	}
	kf = ar->kf;
	if (m->type == HVT_MSG_KFILE) {
		bool was = kf->active;

		ret = kf_file(kf, &m->u.kfile);
		if (ret && was) {
			r->proto_errors++;
			d_log("remote '%s': the guest kernel's formats are "
			      "refused: %s",
			      r->name, kf->why);
		}
		return;
	}
	if (m->u.kformats.op == HVT_KF_BEGIN) {
		ret = kf_begin(kf, D->cache_dir, r->name, kf_remote_attached,
			       &m->u.kformats, dir, sizeof(dir), msg,
			       sizeof(msg));
		if (kf->evicted)
			d_log("formats cache: %u folder%s of remotes not "
			      "attached went to make room for '%s' (at most %u "
			      "remotes' folders are kept)",
			      kf->evicted, kf->evicted == 1 ? "" : "s", r->name,
			      KF_GUESTS_MAX);
		if (ret == 1) {
			remote_set_kf_dir(r, dir);
			d_log("remote '%s': guest kernel %s: formats in %s",
			      r->name, kf->key, dir);
		} else if (ret < 0) {
			/* The agent's fault, not the cache's: counted. */
			if (ret == -EINVAL || ret == -E2BIG)
				r->proto_errors++;
			d_log("remote '%s': the guest kernel's formats are "
			      "refused: %s",
			      r->name, msg);
		} else {
			kf->began_ms = d_now_ms();
		}
		ar->kf_settled = ret != 0;
		conn_reply_result(c, m, HVT_MSG_KFORMATS, ret < 0 ? ret : 0,
				  ret == 1, 0, "%s", msg);
		return;
	}
	ret = kf_end(kf, &m->u.kformats, dir, sizeof(dir), msg,
		     sizeof(msg));
	ar->kf_settled = true;
	if (!ret)
		remote_set_kf_dir(r, dir);
	d_log("remote '%s': guest kernel formats %s: %s (%llu ms after "
	      "BEGIN)",
	      r->name, ret ? "not kept" : "received", msg,
	      (unsigned long long)(d_now_ms() - kf->began_ms));
	conn_reply_result(c, m, HVT_MSG_KFORMATS, ret, 0, 0, "%s", msg);
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
		ret = remote_held_drop_owner(r, owner);
		d_dbg("remote '%s': client %u gone, %d references dropped",
		      r->name, m->chan, ret);
		conn_reply_result(c, m, HVT_MSG_CLIENT_GONE, ret < 0 ? ret : 0,
				  ret < 0 ? 0 : (uint32_t)ret, 0, NULL);
		break;
	case HVT_MSG_CMDLINE:
		remote_cmdline_set(r, m->u.cmdline.pid, m->u.cmdline.comm.ptr,
				   m->u.cmdline.comm.len);
		break;
	case HVT_MSG_KFORMATS:
	case HVT_MSG_KFILE:
		agent_kformats(c, r, m);
		break;
	case HVT_MSG_DOORBELL:
		r->wake.relayed++;
		wake_doorbell(r);
		break;
	case HVT_MSG_BYE:
		d_log("remote '%s': the agent said goodbye", r->name);
		r->ops->bye(r, c);
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


/* The agent role's frames: HELLO, its requests, answers to ours. */
static void agent_frame(struct conn *c, const struct hvt_msg *m)
{
	struct remote *r = c->remote;

	if (m->type == HVT_MSG_HELLO) {
		agent_hello(c, m);
		return;
	}
	if (!r)
		return;
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
	if (r->ping.req && m->req == r->ping.req &&
	    (m->type == HVT_MSG_PING || m->type == HVT_MSG_ERROR)) {
		ping_answer(r, m, c->rx_ns);
		return;
	}
	if (m->type == HVT_MSG_BARRIER ||
	    (r->wake.req && m->req == r->wake.req &&
	     m->type == HVT_MSG_ERROR)) {
		wake_answer(r, m);
		return;
	}
	if (r->trig && r->trig->req && m->req == r->trig->req &&
	    (m->type == HVT_MSG_TRIGGER || m->type == HVT_MSG_ERROR)) {
		trigger_answer(r, m, c->rx_ns);
		return;
	}
	if (kevents_answer(r, m))
		return;
	/* A late reply to a request given up on, or an answer to nothing:
	 * both harmless. */
	if (m->type != HVT_MSG_ERROR) {
		c->errors++;
		r->proto_errors++;
	}
}


/* A local agent on the daemon's socket, bound at its HELLO. */
const struct conn_ops agent_conn_ops = {
	.name = "agent",
	.hello_role = HVT_ROLE_AGENT,
	.reply_role = HVT_ROLE_HOST,
	.hello = agent_hello,
	.frame = agent_frame,
	.bad_frame = agent_bad_frame,
	.closed = agent_closed,
	.queue_max = D_AGENT_QUEUE,
	.max_errors = D_AGENT_MAX_ERRORS,
	.takes_fds = true,
	.pauses = true,
};

/* A guest's agent through its chardev (chardev.c connects it): never
 * dropped for bad bytes, the decoder resynchronises. */
const struct conn_ops agent_chardev_conn_ops = {
	.name = "chardev",
	.reply_role = HVT_ROLE_HOST,
	.frame = agent_frame,
	.bad_frame = agent_bad_frame,
	.closed = agent_closed,
	.rbuf_size = HVT_PROTO_AGENT_FRAME,
	.queue_max = D_AGENT_QUEUE,
	.pauses = true,
};
