// SPDX-License-Identifier: MIT
/*
 * hvtraced: tool requests for remotes that are an area alone, and the
 * requests a tracefs-style view needs on top of the user-event ones.
 *
 *   ATTACH_AREA "NAME=SPEC"   attach an area remote (area_remote.c)
 *   DRAIN                     read the remote's subscribed rings now and
 *                             answer after the pages: a tool that gets
 *                             the RESULT has every page committed before
 *                             it asked
 *   TEXT EVENTS               every event that has an enable bit:
 *                             "SYSTEM NAME ID BIT ENABLED" lines
 *   ENABLE                    on an area remote: the static events, by
 *                             NAME, SYSTEM/NAME, SYSTEM:NAME, globs
 *                             or '*'
 *   TEXT STATUS               on an area remote: its events in the shape
 *                             of user_events_status
 *   DELETE "*"                delete every user event at once, refused
 *                             as a whole (EBUSY) if any is in use: what
 *                             truncating dynamic_events does
 *   DEFINE, DELETE            on an area remote: refused (no agent, so
 *                             no user events)
 *
 * Static events carry their system in FORMAT names ("hypervisor/
 * hyp_enter"); a bare name is a user event (system user_events).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

struct ext_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void eb_printf(struct ext_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void eb_printf(struct ext_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = (b->cap + (size_t)n + 1) * 2;
			char *np = realloc(b->p, cap);

			if (!np) {
				b->oom = true;
				return;
			}
			b->p = np;
			b->cap = cap;
		}
	}
}

static void send_text_reply(struct conn *c, const struct hvt_msg *req,
			    struct ext_buf *b)
{
	struct hvt_msg m;

	if (b->oom) {
		conn_reply_error(c, req->req, req->chan, -ENOMEM,
				 "out of memory");
		return;
	}
	/* Event lists are far below one frame. */
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_TEXT;
	m.flags = HVT_PF_REPLY;
	m.req = req->req;
	m.chan = req->chan;
	m.u.text.text.ptr = b->p ? b->p : "";
	m.u.text.text.len = (uint32_t)b->len;
	if (b->len > HVT_PROTO_MAX_FRAME - 1024) {
		conn_reply_error(c, req->req, req->chan, -E2BIG,
				 "the event list does not fit one reply");
		return;
	}
	conn_send(c, &m);
}

void tool_ext_attach_area(struct conn *c, const struct hvt_msg *m)
{
	char s[HVT_PROTO_DEF_MAX + 1], msg[1024];
	struct remote *r = NULL;
	size_t n =
		m->u.arg.s.len < sizeof(s) - 1 ? m->u.arg.s.len : sizeof(s) - 1;
	char *eq;
	int ret;

	memcpy(s, m->u.arg.s.ptr, n);
	s[n] = '\0';
	eq = strchr(s, '=');
	if (!eq || eq == s || !eq[1]) {
		conn_reply_result(c, m, HVT_MSG_ATTACH_AREA, -EINVAL, 0, 0,
				  "give NAME=PATH[@OFFSET[+SIZE]], not '%s'",
				  s);
		return;
	}
	*eq = '\0';
	ret = area_remote_attach(s, eq + 1, m->u.arg.arg, &c->cred, &r, msg,
				 sizeof(msg));
	if (ret)
		d_log("refused ATTACH_AREA %s from uid %u: %s", eq + 1,
		      (unsigned int)c->cred.uid, msg);
	if (!ret)
		d_log("%s", msg);
	conn_reply_result(c, m, HVT_MSG_ATTACH_AREA, ret, ret ? 0 : r->id, 0,
			  "%s", msg);
}

/* --- static events ------------------------------------------------------- */

/* Does @pat (NAME, SYSTEM/NAME, SYSTEM:NAME, with globs) match? */
static bool ext_match(const char *pat, const char *sys, const char *name)
{
	const char *sep = strpbrk(pat, "/:");

	if (!strcmp(pat, "*"))
		return true;
	if (!sep)
		return !fnmatch(pat, name, 0);
	if ((size_t)(sep - pat) != strlen(sys) ||
	    strncmp(pat, sys, (size_t)(sep - pat)))
		return false;
	return !fnmatch(sep + 1, name, 0);
}

static void ext_enable(struct conn *c, struct remote *r,
		       const struct hvt_msg *m)
{
	const struct hvtrace_catalog *cat = area_remote_catalog(r);
	char s[HVT_PROTO_DEF_MAX + 1];
	uint32_t hits = 0, id = 0, bit = 0;
	size_t n =
		m->u.arg.s.len < sizeof(s) - 1 ? m->u.arg.s.len : sizeof(s) - 1;
	unsigned int i;
	int ret;

	memcpy(s, m->u.arg.s.ptr, n);
	s[n] = '\0';
	if (!cat) {
		conn_reply_result(c, m, HVT_MSG_ENABLE, -ENODEV, 0, 0,
				  "the area of '%s' is not attached yet",
				  r->name);
		return;
	}
	for (i = 0; i < cat->nr; i++) {
		if (cat->bit[i] < 0 ||
		    !ext_match(s, cat->fmt[i].system, cat->fmt[i].name))
			continue;
		ret = area_remote_set_event(r, i, m->u.arg.arg);
		if (ret) {
			conn_reply_result(c, m, HVT_MSG_ENABLE, ret, 0, 0,
					  "cannot change '%s/%s': %s",
					  cat->fmt[i].system, cat->fmt[i].name,
					  strerror(-ret));
			return;
		}
		hits++;
		id = cat->fmt[i].id;
		bit = (uint32_t)cat->bit[i];
	}
	if (!hits) {
		conn_reply_result(c, m, HVT_MSG_ENABLE, -ENOENT, 0, 0,
				  "'%s' has no event '%s' (see 'hvtrace events "
				  "status --remote %s')",
				  r->name, s, r->name);
		return;
	}
	/* One event: its id and bit, as for user events; several: the
	 * count in id. */
	if (hits == 1 && !strpbrk(s, "*?["))
		conn_reply_result(c, m, HVT_MSG_ENABLE, 0, id, bit, NULL);
	else
		conn_reply_result(c, m, HVT_MSG_ENABLE, 0, hits, 0, NULL);
}

static int ext_list_user(const struct hvtrace_ue_event_info *info, void *arg)
{
	eb_printf(arg, "%s %s %u %u %u\n", HVT_UE_SYSTEM, info->name, info->id,
		  info->bit, info->enabled ? 1u : 0u);
	return 0;
}

static void ext_text(struct conn *c, struct remote *r, const struct hvt_msg *m)
{
	const struct hvtrace_catalog *cat = area_remote_catalog(r);
	struct ext_buf b = {0};
	unsigned int i, active = 0, busy = 0;

	for (i = 0; cat && i < cat->nr; i++) {
		bool on = area_remote_event_on(r, i);

		if (cat->bit[i] < 0)
			continue;
		if (m->u.text_req.kind == HVT_TEXT_EVENTS) {
			eb_printf(&b, "%s %s %u %d %u\n", cat->fmt[i].system,
				  cat->fmt[i].name, cat->fmt[i].id, cat->bit[i],
				  on ? 1u : 0u);
		} else {
			eb_printf(&b, "%s/%s%s\n", cat->fmt[i].system,
				  cat->fmt[i].name,
				  on ? " # Used by ftrace" : "");
			active++;
			busy += on;
		}
	}
	if (m->u.text_req.kind == HVT_TEXT_EVENTS)
		hvtrace_ue_foreach(r->reg, ext_list_user, &b);
	else
		eb_printf(&b, "\nActive: %u\nBusy: %u\n", active, busy);
	send_text_reply(c, m, &b);
	free(b.p);
}

unsigned int tool_ext_nr_formats(struct remote *r)
{
	const struct hvtrace_catalog *cat = area_remote_catalog(r);
	unsigned int i, n = 0;

	for (i = 0; cat && i < cat->nr; i++)
		n += cat->bit[i] >= 0;
	return n;
}

void tool_ext_send_formats(struct conn *c, struct remote *r,
			   const struct hvt_msg *m, bool more_after)
{
	const struct hvtrace_catalog *cat = area_remote_catalog(r);
	unsigned int i, left = tool_ext_nr_formats(r);
	char name[HVT_PROTO_EVNAME_MAX + 1];
	struct hvt_msg out;

	for (i = 0; cat && i < cat->nr; i++) {
		int n;

		if (cat->bit[i] < 0)
			continue;
		left--;
		n = snprintf(name, sizeof(name), "%s/%s", cat->fmt[i].system,
			     cat->fmt[i].name);
		if (n < 0 || (size_t)n >= sizeof(name))
			n = 0;
		memset(&out, 0, sizeof(out));
		out.type = HVT_MSG_FORMATS;
		out.flags =
			HVT_PF_REPLY | ((left || more_after) ? HVT_PF_MORE : 0);
		out.req = m->req;
		out.chan = m->chan;
		out.u.format.id = cat->fmt[i].id;
		out.u.format.name.ptr = name;
		out.u.format.name.len = (uint32_t)n;
		out.u.format.text.ptr = cat->fmt[i].text;
		out.u.format.text.len = (uint32_t)strlen(cat->fmt[i].text);
		conn_send(c, &out);
	}
}

bool tool_ext_request(struct conn *c, struct remote *r, const struct hvt_msg *m)
{
	struct hvtrace_ue_error err = {0};
	int ret;

	switch (m->type) {
	case HVT_MSG_DRAIN:
		ret = fanout_drain_remote(r);
		conn_reply_result(c, m, HVT_MSG_DRAIN, 0, (uint32_t)ret, 0,
				  NULL);
		conn_flush(c);
		return true;
	case HVT_MSG_TEXT:
		if (m->u.text_req.kind == HVT_TEXT_EVENTS ||
		    (r->ar && m->u.text_req.kind == HVT_TEXT_STATUS)) {
			ext_text(c, r, m);
			return true;
		}
		return false;
	case HVT_MSG_ENABLE:
		if (!r->ar)
			return false;
		ext_enable(c, r, m);
		return true;
	case HVT_MSG_DEFINE:
	case HVT_MSG_DELETE:
		if (r->ar) {
			conn_reply_result(c, m, m->type, -EOPNOTSUPP, 0, 0,
					  "'%s' is an area without an agent: "
					  "it has no user events",
					  r->name);
			return true;
		}
		if (m->type == HVT_MSG_DELETE && m->u.arg.s.len == 1 &&
		    m->u.arg.s.ptr[0] == '*') {
			ret = hvtrace_ue_dyn_clear(r->reg, &err);
			remote_apply_changes(r);
			conn_reply_result(c, m, HVT_MSG_DELETE,
					  ret < 0 ? ret : 0,
					  ret < 0 ? 0 : (uint32_t)ret, 0, "%s",
					  ret < 0 ? err.msg : "");
			return true;
		}
		return false;
	default:
		return false;
	}
}
