// SPDX-License-Identifier: MIT
/*
 * hvtraced: requests from tools (the hvtrace CLI, a FUSE view, a trace.dat
 * recorder).  A request names its remote in the frame's 'chan' field (the
 * remote id from REMOTES); the texts are the kernel's own shapes
 * (user_events_status, dynamic_events, saved_cmdlines, header_page,
 * header_event, format files) so a client can feed them to libtraceevent
 * unchanged.  Long texts travel as several TEXT replies with HVT_PF_MORE
 * on all but the last, split at line ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"

#define TEXT_PART	(192u * 1024u)

static void send_text(struct conn *c, const struct hvt_msg *req, int status,
		      const char *text, size_t len)
{
	struct hvt_msg m;
	size_t off = 0;

	/* Bounded: every part consumes at least one byte (or is the last). */
	do {
		size_t n = len - off;

		if (n > TEXT_PART) {
			n = TEXT_PART;
			while (n > 1 && text[off + n - 1] != '\n')
				n--;
			if (n <= 1)
				n = TEXT_PART;
		}
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TEXT;
		m.flags = HVT_PF_REPLY | (off + n < len ? HVT_PF_MORE : 0);
		m.req = req->req;
		m.chan = req->chan;
		m.u.text.status = status;
		m.u.text.text.ptr = text + off;
		m.u.text.text.len = (uint32_t)n;
		if (conn_send(c, &m))
			return;
		off += n;
	} while (off < len);
}

static void tool_hello(struct conn *c, const struct hvt_msg *m)
{
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
		remote_fill_rec(r, &rec);
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

static void copy_str(char *dst, size_t size, const struct hvt_str *s)
{
	size_t n = s->len < size - 1 ? s->len : size - 1;

	memcpy(dst, s->ptr, n);
	dst[n] = '\0';
}

static void tool_define(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	char s[HVT_PROTO_DEF_MAX + 1], line[HVT_PROTO_DEF_MAX + 8], name[256];
	struct hvtrace_ue_error err = { 0 };
	struct hvtrace_ue_event_info info;
	const char *args;
	int ret;

	/* A bare definition is a "u:" line. */
	copy_str(s, sizeof(s), &m->u.arg.s);
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

static void tool_delete(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	char s[HVT_PROTO_DEF_MAX + 8], line[HVT_PROTO_DEF_MAX + 16];
	struct hvtrace_ue_error err = { 0 };
	const char *n;
	int ret;

	copy_str(s, sizeof(s), &m->u.arg.s);
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

static void tool_enable(struct conn *c, struct remote *r,
			const struct hvt_msg *m)
{
	struct hvtrace_ue_error err = { 0 };
	struct hvtrace_ue_event_info info;
	char s[HVT_PROTO_DEF_MAX + 1];
	struct names ns = { 0 };
	const char *n;
	size_t i;
	int ret = 0;

	copy_str(s, sizeof(s), &m->u.arg.s);
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

static void tool_text(struct conn *c, struct remote *r,
		      const struct hvt_msg *m)
{
	char *text = NULL, small[8192];
	size_t len = 0;
	int status = 0, n;

	switch (m->u.text_req.kind) {
	case HVT_TEXT_STATUS:
		text = hvtrace_ue_status_text(r->reg);
		break;
	case HVT_TEXT_DYNAMIC_EVENTS:
		text = hvtrace_ue_dyn_events_text(r->reg);
		break;
	case HVT_TEXT_CMDLINES: {
		size_t cap = 1, i;

		for (i = 0; i < D_CMDLINE_SLOTS; i++)
			if (r->cmdlines[i].pid)
				cap += 32;
		text = malloc(cap);
		if (!text)
			break;
		text[0] = '\0';
		for (i = 0; i < D_CMDLINE_SLOTS; i++)
			if (r->cmdlines[i].pid)
				len += (size_t)snprintf(text + len, cap - len,
							"%u %s\n",
							r->cmdlines[i].pid,
							r->cmdlines[i].comm);
		break;
	}
	case HVT_TEXT_HEADER_PAGE:
	case HVT_TEXT_HEADER_EVENT:
		if (m->u.text_req.kind == HVT_TEXT_HEADER_PAGE && !r->area) {
			conn_reply_error(c, m->req, m->chan, -ENODEV,
					 "the remote has no area attached yet");
			return;
		}
		n = m->u.text_req.kind == HVT_TEXT_HEADER_PAGE ?
			    hvtrace_header_page_text(r->info.subbuf_size, small,
						     sizeof(small)) :
			    hvtrace_header_event_text(small, sizeof(small));
		if (n < 0 || (size_t)n >= sizeof(small)) {
			conn_reply_error(c, m->req, m->chan,
					 n < 0 ? n : -EOVERFLOW,
					 "cannot produce the header text");
			return;
		}
		send_text(c, m, 0, small, (size_t)n);
		return;
	case HVT_TEXT_INFO: {
		struct hvt_remote_rec rec;
		char err[32];

		remote_fill_rec(r, &rec);
		if (rec.clock_err_ns == UINT64_MAX)
			snprintf(err, sizeof(err), "unknown");
		else
			snprintf(err, sizeof(err), "%llu",
				 (unsigned long long)rec.clock_err_ns);
		n = snprintf(small, sizeof(small),
			     "name: %s\nid: %u\nstate: %s\ntransport: %s\n"
			     "control: %s\narea: %s\n",
			     r->name, r->id,
			     r->state == HVT_REMOTE_CONNECTED ? "connected" :
			     r->state == HVT_REMOTE_WAITING ? "waiting" :
							      "disconnected",
			     r->transport == HVT_TRANSPORT_SOCKET ? "socket" :
			     r->transport == HVT_TRANSPORT_AREA	  ? "area" :
								    "chardev",
			     r->transport == HVT_TRANSPORT_CHARDEV ?
				     r->ctl_path :
			     r->transport == HVT_TRANSPORT_AREA ?
				     "(the area's control page)" :
				     "(local agent socket)",
			     !r->area ? "(not attached yet)" :
			     r->area_path[0] ? r->area_path :
					       "(descriptor from the agent)");
		if (r->area && n > 0 && n < (int)sizeof(small))
			n += snprintf(small + n, sizeof(small) - (size_t)n,
				      "cpus: %u\nsubbufs: %u\nsubbuf_size: %u\n"
				      "mode: %s\nclock: %s\ngeneration: %llu\n",
				      rec.nr_cpus, rec.nr_subbufs,
				      rec.subbuf_size,
				      rec.mode == HVT_MODE_OVERWRITE ?
					      "overwrite" : "consume",
				      rec.clock_id == HVT_CLOCK_COUNTER ?
					      "counter" :
				      rec.clock_id == HVT_CLOCK_MONO_NS ?
					      "mono" : "host",
				      (unsigned long long)rec.generation);
		if (n > 0 && n < (int)sizeof(small))
			n += snprintf(small + n, sizeof(small) - (size_t)n,
				      "tracing: %s\nevents: %u\nclients: %u\n"
				      "sync_samples: %llu\nsync_failed: %llu\n"
				      "sync_window_ns: %llu\n"
				      "clock_error_ns: %s\n"
				      "protocol_errors: %llu\n"
				      "pages_read: %llu\n"
				      "registrations: %zu (at most %u on %u "
				      "clients)\n"
				      "registrations_refused: %llu\n",
				      r->tracing_on ? "on" : "off",
				      rec.nr_events, rec.nr_clients,
				      (unsigned long long)r->sync_samples,
				      (unsigned long long)r->sync_bad,
				      (unsigned long long)r->sync_window_ns,
				      err,
				      (unsigned long long)r->proto_errors,
				      (unsigned long long)r->pages_read,
				      r->held.nr_refs, D->max_registrations,
				      D->max_channels,
				      (unsigned long long)r->refused_regs);
		if (n < 0 || n >= (int)sizeof(small))
			n = (int)sizeof(small) - 1;
		send_text(c, m, 0, small, (size_t)n);
		return;
	}
	}
	if (!text) {
		conn_reply_error(c, m->req, m->chan, -ENOMEM, "out of memory");
		return;
	}
	if (!len)
		len = strlen(text);
	send_text(c, m, status, text, len);
	free(text);
}

struct fmt_list {
	struct hvt_m_format *v;
	char **bufs;
	size_t n, cap;
};

static int collect_formats(const struct hvtrace_ue_event_info *info, void *arg)
{
	struct fmt_list *fl = arg;
	size_t nl, fmtl;
	char *b;

	if (!info->format)
		return 0;
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 32;
		struct hvt_m_format *v = realloc(fl->v, cap * sizeof(*v));
		char **bufs;

		if (!v)
			return -ENOMEM;
		fl->v = v;
		bufs = realloc(fl->bufs, cap * sizeof(*bufs));
		if (!bufs)
			return -ENOMEM;
		fl->bufs = bufs;
		fl->cap = cap;
	}
	nl = strlen(info->name);
	fmtl = strlen(info->format);
	if (nl > HVT_PROTO_EVNAME_MAX)
		nl = HVT_PROTO_EVNAME_MAX;
	b = malloc(nl + fmtl + 1);
	if (!b)
		return -ENOMEM;
	memcpy(b, info->name, nl);
	memcpy(b + nl, info->format, fmtl + 1);
	memset(&fl->v[fl->n], 0, sizeof(fl->v[0]));
	fl->v[fl->n].id = info->id;
	fl->v[fl->n].name.ptr = b;
	fl->v[fl->n].name.len = (uint32_t)nl;
	fl->v[fl->n].text.ptr = b + nl;
	fl->v[fl->n].text.len = (uint32_t)fmtl;
	fl->bufs[fl->n] = b;
	fl->n++;
	return 0;
}

static void tool_formats(struct conn *c, struct remote *r,
			 const struct hvt_msg *m)
{
	struct fmt_list fl = { 0 };
	char hp[8192], he[8192];
	struct hvt_msg out;
	int nhp = -1, nhe;
	size_t i;
	int ret;

	if (r->area)
		nhp = hvtrace_header_page_text(r->info.subbuf_size, hp,
					       sizeof(hp));
	nhe = hvtrace_header_event_text(he, sizeof(he));
	ret = hvtrace_ue_foreach(r->reg, collect_formats, &fl);
	memset(&out, 0, sizeof(out));
	out.type = HVT_MSG_FORMATS;
	out.req = m->req;
	out.chan = m->chan;
	if (nhp >= 0 && (size_t)nhp < sizeof(hp)) {
		out.flags = HVT_PF_REPLY | HVT_PF_MORE;
		out.u.format.name.ptr = "header_page";
		out.u.format.name.len = 11;
		out.u.format.text.ptr = hp;
		out.u.format.text.len = (uint32_t)nhp;
		conn_send(c, &out);
	}
	if (nhe >= 0 && (size_t)nhe < sizeof(he)) {
		out.flags = HVT_PF_REPLY |
			    ((fl.n || tool_ext_nr_formats(r)) ? HVT_PF_MORE :
								0);
		out.u.format.name.ptr = "header_event";
		out.u.format.name.len = 12;
		out.u.format.text.ptr = he;
		out.u.format.text.len = (uint32_t)nhe;
		out.u.format.status = ret < 0 ? ret : 0;
		conn_send(c, &out);
	}
	tool_ext_send_formats(c, r, m, fl.n > 0);
	for (i = 0; i < fl.n; i++) {
		fl.v[i].status = 0;
		out.flags = HVT_PF_REPLY | (i + 1 < fl.n ? HVT_PF_MORE : 0);
		out.u.format = fl.v[i];
		conn_send(c, &out);
		free(fl.bufs[i]);
	}
	free(fl.v);
	free(fl.bufs);
}

static void tool_stats(struct conn *c, struct remote *r,
		       const struct hvt_msg *m)
{
	struct hvtrace_cpu_stats st;
	struct hvt_msg out;
	uint32_t cpu;

	if (!r->area || !r->info.nr_cpus) {
		conn_reply_error(c, m->req, m->chan, -ENODEV,
				 "the remote has no area attached yet");
		return;
	}
	for (cpu = 0; cpu < r->info.nr_cpus; cpu++) {
		memset(&out, 0, sizeof(out));
		out.type = HVT_MSG_STATS;
		out.flags = HVT_PF_REPLY |
			    (cpu + 1 < r->info.nr_cpus ? HVT_PF_MORE : 0);
		out.req = m->req;
		out.chan = m->chan;
		out.u.stats.cpu = cpu;
		if (hvtrace_cpu_get_stats(r->area, (int)cpu, &st)) {
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

	if (!r->area) {
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

		hvt_msg_put_u64(buf + 8 * i,
				hvtrace_area_to_host_ns(r->area, ts, &err));
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

static void tool_remote_request(struct conn *c, const struct hvt_msg *m)
{
	struct remote *r = remote_by_id(m->chan);
	char msg[512];
	int ret;

	if (!r) {
		char text[128];

		snprintf(text, sizeof(text),
			 "no remote with id %u (list them with 'hvtrace daemon "
			 "status')",
			 m->chan);
		conn_reply_error(c, m->req, m->chan, -ENOENT, text);
		return;
	}
	if (tool_ext_request(c, r, m))
		return;
	switch (m->type) {
	case HVT_MSG_TEXT:
		tool_text(c, r, m);
		break;
	case HVT_MSG_DEFINE:
		tool_define(c, r, m);
		break;
	case HVT_MSG_DELETE:
		tool_delete(c, r, m);
		break;
	case HVT_MSG_ENABLE:
		tool_enable(c, r, m);
		break;
	case HVT_MSG_TRACING:
		if (m->u.tracing.op != HVT_TRACING_QUERY)
			remote_set_tracing(r,
					   m->u.tracing.op == HVT_TRACING_ON);
		conn_reply_result(c, m, HVT_MSG_TRACING, 0, r->tracing_on, 0,
				  NULL);
		break;
	case HVT_MSG_FORMATS:
		tool_formats(c, r, m);
		break;
	case HVT_MSG_STATS:
		tool_stats(c, r, m);
		break;
	case HVT_MSG_SUBSCRIBE: {
		struct sub *s;

		if (!r->area) {
			conn_reply_error(c, m->req, m->chan, -ENODEV,
					 "the remote has no area attached "
					 "yet");
			break;
		}
		if (m->u.subscribe.cpu >= (int32_t)r->info.nr_cpus) {
			conn_reply_error(c, m->req, m->chan, -EINVAL,
					 "no such CPU in this remote");
			break;
		}
		s = sub_new(c, r, m->u.subscribe.cpu,
			    m->u.subscribe.queue_kib);
		if (!s)
			conn_reply_error(c, m->req, m->chan, -ENOMEM,
					 "out of memory");
		else
			conn_reply_result(c, m, HVT_MSG_SUBSCRIBE, 0, s->id, 0,
					  NULL);
		break;
	}
	case HVT_MSG_TO_HOST:
		tool_to_host(c, r, m);
		break;
	case HVT_MSG_TRIGGER_RUN:
		ret = remote_trigger_start(r, c, m->req,
					   m->u.trigger_run.count, msg,
					   sizeof(msg));
		if (ret)
			conn_reply_error(c, m->req, m->chan, ret, msg);
		break;
	default:
		c->errors++;
		conn_reply_error(c, m->req, m->chan, -EOPNOTSUPP,
				 "hvtraced does not take this message from "
				 "a tool");
		break;
	}
}

void tool_frame(struct conn *c, const struct hvt_msg *m)
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
		ret = sub_remove(c, m->u.unsubscribe.sub);
		conn_reply_result(c, m, HVT_MSG_UNSUBSCRIBE, ret,
				  m->u.unsubscribe.sub, 0, "%s",
				  ret ? "no such subscription on this "
					"connection" :
					"");
		return;
	case HVT_MSG_ATTACH:
		copy_str(name, sizeof(name), &m->u.arg.s);
		ret = remote_attach_chardev(name, &r, msg, sizeof(msg));
		conn_reply_result(c, m, HVT_MSG_ATTACH, ret, ret ? 0 : r->id, 0,
				  "%s", msg);
		return;
	case HVT_MSG_ATTACH_AREA:
		tool_ext_attach_area(c, m);
		return;
	case HVT_MSG_DETACH:
		copy_str(name, sizeof(name), &m->u.arg.s);
		r = remote_by_name(name);
		if (!r) {
			conn_reply_result(c, m, HVT_MSG_DETACH, -ENOENT, 0, 0,
					  "no remote named '%s'", name);
			return;
		}
		d_log("remote '%s': detached by a tool", r->name);
		remote_destroy(r);
		conn_reply_result(c, m, HVT_MSG_DETACH, 0, 0, 0, NULL);
		return;
	default:
		tool_remote_request(c, m);
		return;
	}
}
