// SPDX-License-Identifier: MIT
/*
 * hvtraced: a tool's change of the guest kernel's events, through the
 * agent.
 *
 * The guest kernel's events live in the guest's tracefs, which only the
 * agent can write: ENABLE of a name that is not a user event of the
 * remote (tool_events.c decides) becomes a KEVENT request to the agent,
 * and the agent's RESULT goes back to the tool as the answer to its
 * ENABLE.  At most D_KEV_WAITS changes wait per remote (their table, in
 * the struct agent_remote, is allocated at the first); one the agent
 * does not answer in D_KEV_TIMEOUT_MS, or that a lost session cuts
 * short, is answered with an error.  The tool is named by its
 * connection id, so a tool that left meanwhile is simply not answered.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

static const char no_agent[] =
	"the guest kernel's events can only be changed through "
	"hvtrace-agent; remote '%s' has no agent connected (start "
	"hvtrace-agent in the guest, or give the events at boot: hvtrace "
	"guest start --kernel-events)";

static struct conn *kev_tool(uint32_t id)
{
	struct conn *c;

	for (c = D->conns; c; c = c->next)
		if (c->id == id && !c->dead && !c->closing)
			return c;
	return NULL;
}

/* Answer the tool that waits in @w, and free @w. */
static void kev_reply(struct kev_wait *w, int status, uint32_t on,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void kev_reply(struct kev_wait *w, int status, uint32_t on,
		      const char *fmt, ...)
{
	struct conn *tool = kev_tool(w->tool_id);
	char text[HVT_PROTO_TEXT_MAX + 1];
	struct hvt_msg req;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (tool) {
		memset(&req, 0, sizeof(req));
		req.req = w->tool_req;
		req.chan = w->tool_chan;
		conn_reply_result(tool, &req,
				  status ? HVT_MSG_ERROR : HVT_MSG_ENABLE,
				  status, on, 0, "%s", text);
	}
	memset(w, 0, sizeof(*w));
}

/* A KEVENT of @name, its answer's type aside; the codec holds the rule
 * for names (no path can be made of one). */
static void kev_msg(struct hvt_msg *k, const char *name, uint32_t on)
{
	memset(k, 0, sizeof(*k));
	k->type = HVT_MSG_KEVENT;
	k->u.arg.arg = on;
	k->u.arg.s.ptr = name;
	k->u.arg.s.len = (uint32_t)strlen(name);
}

/* The changes in flight of @r (D_KEV_WAITS), or NULL: none yet, or no
 * agent. */
static struct kev_wait *kev_waits(struct remote *r)
{
	struct agent_remote *ar = agent_remote(r);

	return ar ? ar->kev : NULL;
}

bool kevents_name_ok(const char *name)
{
	struct hvt_msg k;

	kev_msg(&k, name, 1);
	return hvt_msg_encoded_size(&k) >= 0;
}

void kevents_forward(struct conn *tool, struct remote *r,
		     const struct hvt_msg *m, const char *name, bool bare)
{
	struct agent_remote *ar = agent_remote(r);
	struct kev_wait *w = NULL;
	struct hvt_msg k;
	unsigned int i;

	if (!ar || !r->conn || r->state != HVT_REMOTE_CONNECTED) {
		if (bare)
			conn_reply_result(tool, m, HVT_MSG_ERROR, -ENOENT, 0, 0,
					  "'%s' is not a user event of remote "
					  "'%s', and %s",
					  name, r->name,
					  "its guest kernel's events can only "
					  "be changed through hvtrace-agent, "
					  "which is not connected");
		else
			conn_reply_result(tool, m, HVT_MSG_ERROR, -ENODEV, 0,
					  0, no_agent, r->name);
		return;
	}
	/* The table of changes in flight, at the first. */
	if (!ar->kev) {
		ar->kev = calloc(D_KEV_WAITS, sizeof(*ar->kev));
		if (!ar->kev) {
			conn_reply_result(tool, m, HVT_MSG_ERROR, -ENOMEM, 0,
					  0, "out of memory");
			return;
		}
	}
	for (i = 0; i < D_KEV_WAITS && !w; i++)
		if (!ar->kev[i].req)
			w = &ar->kev[i];
	if (!w) {
		conn_reply_result(tool, m, HVT_MSG_ERROR, -EBUSY, 0, 0,
				  "%u changes of remote '%s''s kernel events "
				  "wait for its agent already; retry",
				  D_KEV_WAITS, r->name);
		return;
	}
	kev_msg(&k, name, m->u.arg.arg);
	if (hvt_msg_encoded_size(&k) < 0) {
		conn_reply_result(tool, m, HVT_MSG_ERROR, -EINVAL, 0, 0,
				  "'%s' is not a guest kernel event: give "
				  "SYSTEM or SYSTEM:EVENT, of letters, digits "
				  "and '_'",
				  name);
		return;
	}
	k.req = remote_next_req(r);
	if (conn_send(r->conn, &k)) {
		conn_reply_result(tool, m, HVT_MSG_ERROR, -EAGAIN, 0, 0,
				  "the agent of remote '%s' does not read its "
				  "channel; retry",
				  r->name);
		return;
	}
	conn_flush(r->conn);
	w->req = k.req;
	w->tool_id = tool->id;
	w->tool_req = m->req;
	w->tool_chan = m->chan;
	w->bare = bare;
	w->deadline_ms = d_now_ms() + D_KEV_TIMEOUT_MS;
	snprintf(w->name, sizeof(w->name), "%s", name);
}

bool kevents_answer(struct remote *r, const struct hvt_msg *m)
{
	struct kev_wait *kev = kev_waits(r), *w = NULL;
	int st = m->u.result.status;
	unsigned int i;

	if (!kev || (m->type != HVT_MSG_KEVENT && m->type != HVT_MSG_ERROR))
		return false;
	for (i = 0; i < D_KEV_WAITS && !w; i++)
		if (kev[i].req && kev[i].req == m->req)
			w = &kev[i];
	if (!w)
		return false;
	if (st == -ENOENT && w->bare)
		kev_reply(w, st, 0,
			  "'%s' is neither a user event of remote '%s' nor "
			  "an event or event system of its guest kernel",
			  w->name, r->name);
	else if (st)
		kev_reply(w, st, 0, "remote '%s''s agent: %.*s", r->name,
			  (int)m->u.result.text.len, m->u.result.text.ptr);
	else
		kev_reply(w, 0, m->u.result.id, "guest kernel: %.*s",
			  (int)m->u.result.text.len, m->u.result.text.ptr);
	return true;
}

void kevents_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	struct kev_wait *kev = kev_waits(r);
	unsigned int i;

	for (i = 0; kev && i < D_KEV_WAITS; i++) {
		struct kev_wait *w = &kev[i];

		if (!w->req)
			continue;
		if (now >= w->deadline_ms)
			kev_reply(w, -ETIMEDOUT, 0,
				  "remote '%s''s agent did not answer in %u "
				  "ms",
				  r->name, D_KEV_TIMEOUT_MS);
		else
			d_due(next, w->deadline_ms);
	}
}

void kevents_cancel(struct remote *r, int status)
{
	struct kev_wait *kev = kev_waits(r);
	unsigned int i;

	for (i = 0; kev && i < D_KEV_WAITS; i++)
		if (kev[i].req)
			kev_reply(&kev[i], status, 0,
				  "remote '%s''s agent went away before it "
				  "answered",
				  r->name);
}
