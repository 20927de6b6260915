// SPDX-License-Identifier: MIT
/*
 * hvtraced: the tool role -- requests from tools (the hvtrace CLI, a FUSE
 * view, a trace.dat recorder).
 *
 * tool_frame() is the one dispatch of a tool's frames: requests about the
 * daemon (HELLO, BYE, REMOTES, ATTACH, ATTACH_AREA, DETACH) and requests
 * about one remote, named in the frame's 'chan' field (the remote id
 * from REMOTES).  The remote's requests go on to the file that owns the
 * job: the texts (tool_text.c), the events (tool_events.c), page
 * subscriptions (subs.c: the subscriber role), trigger runs (trigger.c).
 * A tool that goes away takes its subscriptions with it, and a trigger
 * run it started finishes without it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"

static void tool_hello(struct conn *c, const struct hvt_msg *m)
{
	c->tool->caps = m->u.hello.caps;
	conn_reply_hello(c, m, HVT_ROLE_DAEMON,
			 m->u.hello.min_version > HVT_PROTO_VERSION ||
					 m->u.hello.max_version <
						 HVT_PROTO_MIN_VERSION ?
				 -EPROTONOSUPPORT :
				 0,
			 "hvtraced " HVT_VERSION);
}

static void tool_remotes(struct conn *c, const struct hvt_msg *m)
{
	struct hvt_remote_rec rec;
	struct remote *r;
	struct hvt_msg out;
	uint8_t *buf;
	uint32_t n = 0;

	for (r = D->remotes; r; r = r->next)
		n++;
	if (n > HVT_PROTO_MAX_REMOTES)
		n = HVT_PROTO_MAX_REMOTES;
	buf = malloc((size_t)n * HVT_REMOTE_REC_SIZE + 1);
	if (!buf) {
		conn_reply_error(c, m->req, m->chan, -ENOMEM, "out of memory");
		return;
	}
	n = 0;
	for (r = D->remotes; r && n < HVT_PROTO_MAX_REMOTES; r = r->next) {
		tool_fill_rec(r, &rec);
		/* A tool older than the state "missing": "waiting", which
		 * it takes (and shows) as before. */
		if (rec.state == HVT_REMOTE_MISSING &&
		    !(c->tool->caps & HVT_CAP_TOOL_MISSING))
			rec.state = HVT_REMOTE_WAITING;
		/* One older than "powered-off": "disconnected", as before. */
		if (rec.state == HVT_REMOTE_POWERED_OFF &&
		    !(c->tool->caps & HVT_CAP_TOOL_POWERED_OFF))
			rec.state = HVT_REMOTE_DISCONNECTED;
		/* One older than the rig guest's states: the words it
		 * knows for the same moments. */
		if ((rec.state == HVT_REMOTE_PANICKED ||
		     rec.state == HVT_REMOTE_CRASHED) &&
		    !(c->tool->caps & HVT_CAP_TOOL_RIG_STATES))
			rec.state = HVT_REMOTE_DISCONNECTED;
		if (rec.state == HVT_REMOTE_BOOTING &&
		    !(c->tool->caps & HVT_CAP_TOOL_RIG_STATES))
			rec.state = HVT_REMOTE_WAITING;
		hvt_msg_put_remote(buf + (size_t)n * HVT_REMOTE_REC_SIZE, &rec);
		n++;
	}
	memset(&out, 0, sizeof(out));
	out.type = HVT_MSG_REMOTES;
	out.flags = HVT_PF_REPLY;
	out.req = m->req;
	out.u.remotes.recs.ptr = buf;
	out.u.remotes.recs.count = n;
	conn_send(c, &out);
	free(buf);
}

/* Descriptors a tool passed beyond those an attach takes. */
static void tool_drop_fds(struct conn *c)
{
	int fd;

	while ((fd = conn_take_fd(c)) >= 0)
		close(fd);
}

static void tool_attach_area(struct conn *c, const struct hvt_msg *m)
{
	char s[HVT_PROTO_DEF_MAX + 1], msg[1024];
	int fds[HVT_ATTACH_MAX_FDS], nr_fds = 0, i;
	struct remote *r = NULL;
	char *eq;
	int ret;

	/* The descriptors that came with the frame (an attach by pid):
	 * the attach copies what it keeps, the rest is closed here. */
	while (nr_fds < (int)HVT_ATTACH_MAX_FDS &&
	       (fds[nr_fds] = conn_take_fd(c)) >= 0)
		nr_fds++;
	tool_drop_fds(c);
	d_copy_str(s, sizeof(s), &m->u.arg.s);
	eq = strchr(s, '=');
	if (!eq || eq == s || !eq[1]) {
		conn_reply_result(c, m, HVT_MSG_ATTACH_AREA, -EINVAL, 0, 0,
				  "give NAME=PATH[@OFFSET[+SIZE]] or "
				  "NAME=vmpid:PID[,formats=DIR] or "
				  "NAME=ram:PATH[,formats=DIR], not '%s'",
				  s);
		goto out;
	}
	*eq = '\0';
	/* A restored area whose file is missing does not hold its name:
	 * an attach that would succeed replaces it. */
	r = remote_by_name(s);
	if (r && area_remote_stale(r) && !kring_remote_spec(eq + 1) &&
	    !nr_fds) {
		ret = area_remote_check(s, eq + 1, m->u.arg.arg, &c->cred, msg,
					sizeof(msg));
		if (ret) {	/* the restored one stays */
			d_log("refused ATTACH_AREA %s from uid %u: %s", eq + 1,
			      (unsigned int)c->cred.uid, msg);
			conn_reply_result(c, m, HVT_MSG_ATTACH_AREA, ret, 0, 0,
					  "%s", msg);
			goto out;
		}
		d_log("remote '%s': attached again from hvtraced.state, but "
		      "its file is missing; replaced by a new attach from "
		      "uid %u",
		      r->name, (unsigned int)c->cred.uid);
		remote_destroy(r);
	}
	r = NULL;
	if (kring_remote_spec(eq + 1)) {
		ret = kring_remote_attach(s, eq + 1, m->u.arg.arg, fds, nr_fds,
					  &c->cred, &r, msg, sizeof(msg));
	} else if (nr_fds) {
		ret = -EINVAL;
		snprintf(msg, sizeof(msg),
			 "an area attach takes no descriptors");
	} else {
		ret = area_remote_attach(s, eq + 1, m->u.arg.arg, &c->cred, &r,
					 msg, sizeof(msg));
	}
	if (ret)
		d_log("refused ATTACH_AREA %s from uid %u: %s", eq + 1,
		      (unsigned int)c->cred.uid, msg);
	if (!ret)
		d_log("%s", msg);
	conn_reply_result(c, m, HVT_MSG_ATTACH_AREA, ret, ret ? 0 : r->id, 0,
			  "%s", msg);
out:
	for (i = 0; i < nr_fds; i++)
		close(fds[i]);
}

static void tool_stats(struct conn *c, struct remote *r,
		       const struct hvt_msg *m)
{
	uint32_t nr = page_source_listed_cpus(r);
	struct hvtrace_cpu_stats st;
	struct hvt_msg out;
	uint32_t cpu;

	if (!remote_has_pages(r)) {
		conn_reply_error(c, m->req, m->chan, -ENODEV,
				 "the remote has no area attached yet");
		return;
	}
	/* The CPUs REMOTES lists: a guest kernel's beside them say what
	 * they lost in their pages. */
	for (cpu = 0; cpu < nr; cpu++) {
		memset(&out, 0, sizeof(out));
		out.type = HVT_MSG_STATS;
		out.flags = HVT_PF_REPLY | (cpu + 1 < nr ? HVT_PF_MORE : 0);
		out.req = m->req;
		out.chan = m->chan;
		out.u.stats.cpu = cpu;
		if (page_source_cpu_stats(r, cpu, &st)) {
			out.u.stats.status = -EIO;
		} else {
			uint64_t *v = out.u.stats.v;

			v[0] = st.written;
			v[1] = st.entries;
			v[2] = st.overrun;
			v[3] = st.dropped;
			v[4] = st.skipped;
			v[5] = st.lost;
			v[6] = st.trailing;
			v[7] = st.discarded;
			v[8] = st.read;
			v[9] = st.bytes;
			v[10] = st.errors;
			v[11] = st.writer_lost;
			v[12] = st.oldest_ts;
			v[13] = st.now_ts;
			v[14] = st.unplaced;
		}
		conn_send(c, &out);
	}
}

static void tool_to_host(struct conn *c, struct remote *r,
			 const struct hvt_msg *m)
{
	uint32_t i, n = m->u.to_host.ts.count;
	uint64_t err = UINT64_MAX;
	struct hvt_msg out;
	uint8_t *buf;

	if (!remote_has_pages(r)) {
		conn_reply_error(c, m->req, m->chan, -ENODEV,
				 "the remote has no area attached yet");
		return;
	}
	buf = malloc((size_t)n * 8);
	if (!buf) {
		conn_reply_error(c, m->req, m->chan, -ENOMEM, "out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		uint64_t ts = hvt_msg_u64_at(&m->u.to_host.ts, i);

		/* Without an area there is no clock model (a guest kernel
		 * ring): the times stay the writer's own, and err_ns
		 * UINT64_MAX says they are not the host's. */
		hvt_msg_put_u64(buf + 8 * i,
				r->area ? hvtrace_area_to_host_ns(r->area, ts,
								  &err) :
					  ts);
	}
	memset(&out, 0, sizeof(out));
	out.type = HVT_MSG_TO_HOST;
	out.flags = HVT_PF_REPLY;
	out.req = m->req;
	out.chan = m->chan;
	out.u.to_host_reply.err_ns = err;
	out.u.to_host_reply.ns.ptr = buf;
	out.u.to_host_reply.ns.count = n;
	conn_send(c, &out);
	free(buf);
}

/* The remote a request names in 'chan', or NULL (answered). */
static struct remote *tool_remote(struct conn *c, const struct hvt_msg *m)
{
	struct remote *r = remote_by_id(m->chan);
	char text[128];

	if (r)
		return r;
	snprintf(text, sizeof(text),
		 "no remote with id %u (list them with 'hvtrace daemon "
		 "status')",
		 m->chan);
	conn_reply_error(c, m->req, m->chan, -ENOENT, text);
	return NULL;
}

static void tool_detach(struct conn *c, const struct hvt_msg *m)
{
	char name[HVT_PROTO_NAME_MAX + 1];
	struct remote *r;

	d_copy_str(name, sizeof(name), &m->u.arg.s);
	r = remote_by_name(name);
	if (!r) {
		conn_reply_result(c, m, HVT_MSG_DETACH, -ENOENT, 0, 0,
				  "no remote named '%s'", name);
		return;
	}
	d_log("remote '%s': detached by a tool", r->name);
	remote_destroy(r);
	conn_reply_result(c, m, HVT_MSG_DETACH, 0, 0, 0, NULL);
}

static void tool_trigger(struct conn *c, struct remote *r,
			 const struct hvt_msg *m)
{
	char msg[512];
	int ret;

	ret = trigger_start(r, c, m->req, m->u.trigger_run.count, msg,
			    sizeof(msg));
	if (ret)
		conn_reply_error(c, m->req, m->chan, ret, msg);
}

static void tool_tracing(struct conn *c, struct remote *r,
			 const struct hvt_msg *m)
{
	if (m->u.tracing.op != HVT_TRACING_QUERY)
		remote_set_tracing(r, m->u.tracing.op == HVT_TRACING_ON);
	conn_reply_result(c, m, HVT_MSG_TRACING, 0, r->tracing_on, 0, NULL);
}

/*
 * The tool role's one dispatch.  Requests about the daemon come first;
 * the others name a remote, looked up (or answered ENOENT) before the
 * request is handed to the file that owns its job.
 */
static void tool_frame(struct conn *c, const struct hvt_msg *m)
{
	char name[HVT_PROTO_NAME_MAX + 1], msg[1024];
	struct remote *r;
	int ret;

	if (m->flags & HVT_PF_REPLY) {
		c->errors++;	/* tools have nothing to answer */
		return;
	}
	switch (m->type) {
	case HVT_MSG_HELLO:
		tool_hello(c, m);
		return;
	case HVT_MSG_BYE:
		c->closing = true;
		conn_update_events(c);
		return;
	case HVT_MSG_REMOTES:
		tool_remotes(c, m);
		return;
	case HVT_MSG_UNSUBSCRIBE:
		subs_request(c, NULL, m);
		return;
	case HVT_MSG_ATTACH:
		d_copy_str(name, sizeof(name), &m->u.arg.s);
		/* Its area may also be the requester's own file. */
		ret = remote_attach_chardev(name,
					    c->cred.root ? (uid_t)-1 :
							   c->cred.uid,
					    &r, msg, sizeof(msg));
		conn_reply_result(c, m, HVT_MSG_ATTACH, ret, ret ? 0 : r->id, 0,
				  "%s", msg);
		return;
	case HVT_MSG_ATTACH_AREA:
		tool_attach_area(c, m);
		return;
	case HVT_MSG_DETACH:
		tool_detach(c, m);
		return;
	}
	r = tool_remote(c, m);
	if (!r)
		return;
	switch (m->type) {
	case HVT_MSG_TEXT:
		tool_text(c, r, m);
		break;
	case HVT_MSG_FORMATS:
		tool_formats(c, r, m);
		break;
	case HVT_MSG_DEFINE:
		tool_events_define(c, r, m);
		break;
	case HVT_MSG_DELETE:
		tool_events_delete(c, r, m);
		break;
	case HVT_MSG_ENABLE:
		tool_events_enable(c, r, m);
		break;
	case HVT_MSG_TRACING:
		tool_tracing(c, r, m);
		break;
	case HVT_MSG_STATS:
		tool_stats(c, r, m);
		break;
	case HVT_MSG_TO_HOST:
		tool_to_host(c, r, m);
		break;
	case HVT_MSG_SUBSCRIBE:
	case HVT_MSG_DRAIN:
		subs_request(c, r, m);
		break;
	case HVT_MSG_TRIGGER_RUN:
		tool_trigger(c, r, m);
		break;
	case HVT_MSG_KFORMATS_DIR:
		tool_kformats_dir(c, r, m);
		break;
	default:
		c->errors++;
		conn_reply_error(c, m->req, m->chan, -EOPNOTSUPP,
				 "hvtraced does not take this message from "
				 "a tool");
		break;
	}
}

/* A tool's first HELLO: the connection becomes a tool's, with a tool's
 * state (struct tool), or is refused. */
static void tool_accept(struct conn *c, const struct hvt_msg *m)
{
	struct tool *t = calloc(1, sizeof(*t));

	if (!t) {
		conn_reply_hello(c, m, HVT_ROLE_DAEMON, -ENOMEM,
				 "hvtraced is out of memory");
		c->closing = true;
		conn_update_events(c);
		return;
	}
	t->c = c;
	c->tool = t;
	conn_bind(c, &tool_conn_ops);
	tool_frame(c, m);
}

static void tool_closed(struct conn *c)
{
	subs_drop_tool(c);
	trigger_tool_gone(c);
	free(c->tool);
	c->tool = NULL;
}

const struct conn_ops tool_conn_ops = {
	.name = "tool",
	.hello_role = HVT_ROLE_TOOL,
	.reply_role = HVT_ROLE_DAEMON,
	.hello = tool_accept,
	.frame = tool_frame,
	.closed = tool_closed,
	.flushed = fanout_room,
	.reply_slack = D_TOOL_REPLY_SLACK,
	.max_errors = D_TOOL_MAX_ERRORS,
	.takes_fds = true,	/* those of an attach by pid */
};
