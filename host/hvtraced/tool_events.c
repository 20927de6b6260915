// SPDX-License-Identifier: MIT
/*
 * hvtraced: a tool's requests on a remote's events.
 *
 * A remote with an agent has user events (its registry); a remote that is
 * an area alone has the static events of its writer kind (remote_ops
 * catalog, event_on, set_event: area_remote.c) and no user events.
 *
 *   DEFINE                    a user event ("u:" dynamic_events line);
 *                             refused on an area
 *   DELETE NAME, "*"          a user event, or all of them at once,
 *                             refused as a whole (EBUSY) if any is in
 *                             use; refused on an area
 *   ENABLE                    user events by name or '*'; on an area
 *                             its static events, by NAME, SYSTEM/NAME,
 *                             SYSTEM:NAME, globs or '*'; with an agent,
 *                             SYSTEM:EVENT or SYSTEM of the guest
 *                             kernel, and any name that is no user
 *                             event (kevents.c asks the agent)
 *   TEXT EVENTS               every event that has an enable bit:
 *                             "SYSTEM NAME ID BIT ENABLED" lines
 *   TEXT STATUS               on an area: its events in the shape of
 *                             user_events_status
 *   FORMATS                   the static events' formats, for tool_text.c
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

static const struct hvtrace_catalog *static_catalog(struct remote *r)
{
	return r->ops->catalog ? r->ops->catalog(r) : NULL;
}

static void refuse_user_events(struct conn *c, struct remote *r,
			       const struct hvt_msg *m)
{
	conn_reply_result(c, m, m->type, -EOPNOTSUPP, 0, 0,
			  "'%s' is an area without an agent: it has no user "
			  "events",
			  r->name);
}

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

/* "u:NAME", "user_events:NAME", "user_events/NAME" -> NAME */
static const char *event_name(const char *s)
{
	if (!strncmp(s, HVT_UE_PREFIX, 2))
		return s + 2;
	if (!strncmp(s, HVT_UE_SYSTEM ":", sizeof(HVT_UE_SYSTEM)))
		return s + sizeof(HVT_UE_SYSTEM);
	if (!strncmp(s, HVT_UE_SYSTEM "/", sizeof(HVT_UE_SYSTEM)))
		return s + sizeof(HVT_UE_SYSTEM);
	return s;
}

static void user_define(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	char s[HVT_PROTO_DEF_MAX + 1], line[HVT_PROTO_DEF_MAX + 8], name[256];
	struct hvtrace_ue_error err = { 0 };
	struct hvtrace_ue_event_info info;
	const char *args;
	int ret;

	/* A bare definition is a "u:" line. */
	d_copy_str(s, sizeof(s), &m->u.arg.s);
	if (!strncmp(s, "u:", 2) || s[0] == '!' || s[0] == '-')
		snprintf(line, sizeof(line), "%s", s);
	else
		snprintf(line, sizeof(line), "u:%s", s);
	ret = hvtrace_ue_dyn_apply(r->reg, line, &err);
	remote_apply_changes(r);
	if (ret) {
		conn_reply_result(c, m, HVT_MSG_DEFINE, ret, 0, 0, "%s",
				  err.msg[0] ? err.msg : strerror(-ret));
		return;
	}
	if (line[0] == 'u' &&
	    !hvtrace_ue_split_name(line + 2, name, sizeof(name), &args, NULL) &&
	    !hvtrace_ue_lookup(r->reg, name, &info)) {
		conn_reply_result(c, m, HVT_MSG_DEFINE, 0, info.id, info.bit,
				  "%s", name);
		return;
	}
	conn_reply_result(c, m, HVT_MSG_DEFINE, 0, 0, 0, NULL);
}

static void user_delete(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	char s[HVT_PROTO_DEF_MAX + 8], line[HVT_PROTO_DEF_MAX + 16];
	struct hvtrace_ue_error err = { 0 };
	const char *n;
	int ret;

	d_copy_str(s, sizeof(s), &m->u.arg.s);
	if (s[0] == '!' || s[0] == '-') {
		ret = hvtrace_ue_dyn_apply(r->reg, s, &err);
	} else {
		n = event_name(s);
		if (strchr(n, ' ') || strchr(n, '\t')) {
			/* "NAME fields": the dynamic_events delete form,
			 * which checks the fields. */
			snprintf(line, sizeof(line), "!u:%s", n);
			ret = hvtrace_ue_dyn_apply(r->reg, line, &err);
		} else {
			ret = hvtrace_ue_delete(r->reg, n, &err);
		}
	}
	remote_apply_changes(r);
	conn_reply_result(c, m, HVT_MSG_DELETE, ret, 0, 0, "%s",
			  ret ? (err.msg[0] ? err.msg : strerror(-ret)) : "");
}

struct names {
	char **v;
	size_t n, cap;
};

static int collect_names(const struct hvtrace_ue_event_info *info, void *arg)
{
	struct names *ns = arg;

	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 32;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n] = strdup(info->name);
	if (!ns->v[ns->n])
		return -ENOMEM;
	ns->n++;
	return 0;
}

static void names_free(struct names *ns)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

static void user_enable(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	struct hvtrace_ue_error err = { 0 };
	struct hvtrace_ue_event_info info;
	char s[HVT_PROTO_DEF_MAX + 1];
	struct names ns = { 0 };
	const char *n;
	size_t i;
	int ret = 0;

	d_copy_str(s, sizeof(s), &m->u.arg.s);
	n = event_name(s);
	if (!strcmp(n, "*")) {
		ret = hvtrace_ue_foreach(r->reg, collect_names, &ns);
		for (i = 0; !ret && i < ns.n; i++)
			ret = hvtrace_ue_set_enabled(r->reg, ns.v[i],
						 HVT_UE_USED_FTRACE,
						 m->u.arg.arg, &err);
		remote_apply_changes(r);
		conn_reply_result(c, m, HVT_MSG_ENABLE, ret, (uint32_t)ns.n, 0,
				  "%s", ret ? err.msg : "");
		names_free(&ns);
		return;
	}
	/*
	 * SYSTEM:EVENT of another system than user_events, or a name the
	 * registry does not know: the guest kernel's, through the agent
	 * (kevents.c).
	 */
	if (n == s && strchr(s, ':')) {
		kevents_forward(c, r, m, s, false);
		return;
	}
	if (n == s && hvtrace_ue_lookup(r->reg, n, &info) &&
	    kevents_name_ok(n)) {
		kevents_forward(c, r, m, n, true);
		return;
	}
	ret = hvtrace_ue_set_enabled(r->reg, n, HVT_UE_USED_FTRACE, m->u.arg.arg,
				 &err);
	remote_apply_changes(r);
	if (ret) {
		conn_reply_result(c, m, HVT_MSG_ENABLE, ret, 0, 0, "%s",
				  err.msg[0] ? err.msg : strerror(-ret));
		return;
	}
	if (!hvtrace_ue_lookup(r->reg, n, &info))
		conn_reply_result(c, m, HVT_MSG_ENABLE, 0, info.id, info.bit,
				  NULL);
	else	/* disabling deleted it (nobody held it) */
		conn_reply_result(c, m, HVT_MSG_ENABLE, 0, 0, 0,
				  "'%s' was deleted: nobody uses it any more",
				  n);
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

static void static_enable(struct conn *c, struct remote *r,
		       const struct hvt_msg *m)
{
	const struct hvtrace_catalog *cat = static_catalog(r);
	char s[HVT_PROTO_DEF_MAX + 1];
	uint32_t hits = 0, id = 0, bit = 0;
	unsigned int i;
	int ret;

	d_copy_str(s, sizeof(s), &m->u.arg.s);
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
		ret = r->ops->set_event(r, i, m->u.arg.arg);
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

void tool_events_text(struct conn *c, struct remote *r, const struct hvt_msg *m)
{
	const struct hvtrace_catalog *cat = static_catalog(r);
	struct ext_buf b = {0};
	unsigned int i, active = 0, busy = 0;

	for (i = 0; cat && i < cat->nr; i++) {
		bool on = r->ops->event_on(r, i);

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

unsigned int tool_events_nr_static(struct remote *r)
{
	const struct hvtrace_catalog *cat = static_catalog(r);
	unsigned int i, n = 0;

	for (i = 0; cat && i < cat->nr; i++)
		n += cat->bit[i] >= 0;
	return n;
}

void tool_events_send_static(struct conn *c, struct remote *r,
			     const struct hvt_msg *m, bool more_after)
{
	const struct hvtrace_catalog *cat = static_catalog(r);
	unsigned int i, left = tool_events_nr_static(r);
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


/* DEFINE: a user event; an area has none. */
void tool_events_define(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	if (remote_static_events(r))
		refuse_user_events(c, r, m);
	else
		user_define(c, r, m);
}

/* DELETE: a user event, or "*" for all of them at once (refused as a
 * whole, EBUSY, if any is in use: what truncating dynamic_events does). */
void tool_events_delete(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	struct hvtrace_ue_error err = { 0 };
	int ret;

	if (remote_static_events(r)) {
		refuse_user_events(c, r, m);
		return;
	}
	if (m->u.arg.s.len == 1 && m->u.arg.s.ptr[0] == '*') {
		ret = hvtrace_ue_dyn_clear(r->reg, &err);
		remote_apply_changes(r);
		conn_reply_result(c, m, HVT_MSG_DELETE, ret < 0 ? ret : 0,
				  ret < 0 ? 0 : (uint32_t)ret, 0, "%s",
				  ret < 0 ? err.msg : "");
		return;
	}
	user_delete(c, r, m);
}

/* ENABLE: the static events of an area, or user events. */
void tool_events_enable(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	if (remote_static_events(r))
		static_enable(c, r, m);
	else
		user_enable(c, r, m);
}
