// SPDX-License-Identifier: MIT
/*
 * hvtraced: the texts a tool asks of a remote (TEXT, FORMATS, and the
 * REMOTES record).  The texts are the kernel's own shapes
 * (user_events_status, dynamic_events, saved_cmdlines, header_page,
 * header_event, format files) so a client can feed them to libtraceevent
 * unchanged; TEXT INFO is the remote's "key: value" summary.  Long texts
 * travel as several TEXT replies with HVT_PF_MORE on all but the last,
 * split at line ends.  The event lists (TEXT EVENTS, an area's STATUS,
 * the static formats) are tool_events.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void tool_fill_rec(const struct remote *r, struct hvt_remote_rec *rec)
{
	uint64_t err = UINT64_MAX;

	memset(rec, 0, sizeof(*rec));
	rec->id = r->id;
	rec->state = r->state;
	rec->transport = r->ops->transport;
	rec->tracing_on = r->tracing_on;
	rec->nr_events = hvtrace_ue_count(r->reg) +
			 tool_events_nr_static((struct remote *)r);
	rec->nr_clients = (uint32_t)r->held.nr_owners;
	rec->sync_samples = r->sync_samples;
	rec->proto_errors = r->proto_errors;
	if (remote_has_pages(r)) {
		rec->writer_kind = r->info.writer_kind;
		rec->nr_cpus = r->info.nr_cpus;
		rec->nr_subbufs = r->info.nr_subbufs;
		rec->subbuf_size = r->info.subbuf_size;
		rec->mode = r->info.mode;
		rec->clock_id = r->info.clock_id;
		rec->generation = r->info.generation;
		if (r->area && (r->sync_samples ||
				r->info.clock_id == HVT_CLOCK_HOST_NS))
			hvtrace_area_to_host_ns(r->area, 0, &err);
	}
	rec->clock_err_ns = err;
	snprintf(rec->name, sizeof(rec->name), "%s", r->name);
}

/* TEXT BACKLOG: "CPU SUBBUFS" for each CPU whose source can tell; NULL
 * when out of memory. */
static char *tool_backlog_text(struct remote *r)
{
	size_t cap = (size_t)r->nr_cpus * 24 + 1, len = 0;
	char *text = malloc(cap);
	struct page_source *ps;
	uint32_t i;
	int held;

	if (!text)
		return NULL;
	text[0] = '\0';
	for (ps = r->sources; ps; ps = ps->next)
		for (i = 0; ps->ops->held_subbufs && i < ps->nr_cpus; i++) {
			held = ps->ops->held_subbufs(ps, i);
			if (held >= 0 && len < cap)
				len += (size_t)snprintf(
					text + len, cap - len, "%u %d\n",
					ps->first_cpu + i, held);
		}
	return text;
}

/* TEXT CPUS: "CPU KIND SUBBUF_SIZE NR_SUBBUFS" for every CPU; NULL when
 * out of memory. */
static char *tool_cpus_text(struct remote *r)
{
	size_t cap = (size_t)r->nr_cpus * 48 + 1, len = 0;
	char *text = malloc(cap);
	struct page_source *ps;
	uint32_t i;

	if (!text)
		return NULL;
	text[0] = '\0';
	for (ps = r->sources; ps; ps = ps->next)
		for (i = 0; i < ps->nr_cpus && len < cap; i++)
			len += (size_t)snprintf(
				text + len, cap - len, "%u %s %u %u\n",
				ps->first_cpu + i, ps->ops->cpu_kind,
				ps->subbuf_size, ps->nr_subbufs);
	return text;
}

/* A rig guest kernel's file of this boot, as its agent sent it (kboot.c). */
static void tool_kboot_text(struct conn *c, struct remote *r,
			    const struct hvt_msg *m)
{
	const struct agent_remote *ar = agent_remote_c(r);
	unsigned int which =
		m->u.text_req.kind == HVT_TEXT_KBOOT_CLOCK	? KB_CLOCK
		: m->u.text_req.kind == HVT_TEXT_KBOOT_CMDLINES ? KB_CMDLINES
								: KB_MODSYMS;
	const char *text;
	size_t len;
	int ret;

	ret = ar ? kboot_text(ar->kb, which, r->info.generation, &text, &len)
		 : -ENOENT;
	if (!ret) {
		send_text(c, m, 0, text, len);
		return;
	}
	if (ret == -ENOENT && ar && ar->kboot_promised && r->conn) {
		conn_reply_error(c, m->req, m->chan, -EAGAIN,
				 "the guest's agent has not sent this boot's "
				 "kernel files yet");
		return;
	}
	conn_reply_error(c, m->req, m->chan, ret,
			 ret == -ENODATA ? "the guest's agent had no such file"
			 : ar ? "the guest's agent sends no kernel files of "
				"its boot (an older agent, or no tracefs)"
			      : "the remote has no agent");
}

void tool_text(struct conn *c, struct remote *r, const struct hvt_msg *m)
{
	char *text = NULL, small[8192];
	size_t len = 0;
	int status = 0, n;

	if (m->u.text_req.kind == HVT_TEXT_EVENTS ||
	    (m->u.text_req.kind == HVT_TEXT_STATUS &&
	     remote_static_events(r))) {
		tool_events_text(c, r, m);
		return;
	}
	switch (m->u.text_req.kind) {
	case HVT_TEXT_STATUS:
		text = hvtrace_ue_status_text(r->reg);
		break;
	case HVT_TEXT_DYNAMIC_EVENTS:
		text = hvtrace_ue_dyn_events_text(r->reg);
		break;
	case HVT_TEXT_CMDLINES:
		text = remote_cmdline_text(r);
		break;
	case HVT_TEXT_KALLSYMS: {
		const char *ks, *why = "";
		size_t kl;

		if (!r->ops->kallsyms) {
			conn_reply_error(c, m->req, m->chan, -ENOENT,
					 "the remote has no kernel symbols "
					 "(a guest kernel ring attached by "
					 "pid has)");
			return;
		}
		if (r->ops->kallsyms(r, &ks, &kl, &why)) {
			conn_reply_error(c, m->req, m->chan, -ENOENT, why);
			return;
		}
		send_text(c, m, 0, ks, kl);
		return;
	}
	case HVT_TEXT_KBOOT_CLOCK:
	case HVT_TEXT_KBOOT_CMDLINES:
	case HVT_TEXT_KBOOT_MODSYMS:
		tool_kboot_text(c, r, m);
		return;
	case HVT_TEXT_BACKLOG:
		text = tool_backlog_text(r);
		break;
	case HVT_TEXT_CPUS:
		text = tool_cpus_text(r);
		break;
	case HVT_TEXT_HEADER_PAGE:
	case HVT_TEXT_HEADER_EVENT:
		if (m->u.text_req.kind == HVT_TEXT_HEADER_PAGE &&
		    !remote_has_pages(r)) {
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

		tool_fill_rec(r, &rec);
		if (rec.clock_err_ns == UINT64_MAX)
			snprintf(err, sizeof(err), "unknown");
		else
			snprintf(err, sizeof(err), "%llu",
				 (unsigned long long)rec.clock_err_ns);
		n = snprintf(small, sizeof(small),
			     "name: %s\nid: %u\nstate: %s\ntransport: %s\n"
			     "control: %s\narea: %s\n",
			     r->name, r->id,
			     hvt_remote_state_word(r->state,
						   r->ops->transport),
			     r->ops->name, r->ops->control(r),
			     !remote_has_pages(r) ? "(not attached yet)" :
			     r->ops->area_path(r)[0] ?
					       r->ops->area_path(r) :
					       "(descriptor from the agent)");
		/* Its file is gone: "missing: SPEC" (hvtrace list). */
		if (r->state == HVT_REMOTE_MISSING && r->ops->area_path &&
		    n > 0 && n < (int)sizeof(small))
			n += snprintf(small + n, sizeof(small) - (size_t)n,
				      "missing: %s\n", r->ops->area_path(r));
		if (!remote_has_pages(r) && r->ops->problem &&
		    r->ops->problem(r) && n > 0 && n < (int)sizeof(small))
			n += snprintf(small + n, sizeof(small) - (size_t)n,
				      "problem: %s\n", r->ops->problem(r));
		if (remote_has_pages(r) && n > 0 && n < (int)sizeof(small))
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
					      "mono" :
				      rec.clock_id == HVT_CLOCK_HOST_NS ?
					      "host" :
					      "the guest's own trace clock "
					      "(not mapped to the host's)",
				      (unsigned long long)rec.generation);
		if (n > 0 && n < (int)sizeof(small))
			n += snprintf(small + n, sizeof(small) - (size_t)n,
				      "tracing: %s\nevents: %u\nclients: %u\n"
				      "sync_method: %s\n"
				      "sync_shm: %llu samples, %llu rejected, "
				      "%llu timeouts, best round trip %llu ns\n"
				      "sync_samples: %llu\nsync_failed: %llu\n"
				      "sync_window_ns: %llu\n"
				      "clock_error_ns: %s\n"
				      "protocol_errors: %llu\n"
				      "pages_read: %llu\n"
				      "registrations: %zu (at most %u on %u "
				      "clients)\n"
				      "registrations_refused: %llu\n"
				      "cmdlines: %u (at most %u)\n"
				      "cmdlines_replaced: %llu\n"
				      "cmdlines_bytes: %zu\n",
				      r->tracing_on ? "on" : "off",
				      rec.nr_events, rec.nr_clients,
				      sync_method_name(r),
				      (unsigned long long)r->shm.samples,
				      (unsigned long long)r->shm.rejected,
				      (unsigned long long)r->shm.timeouts,
				      (unsigned long long)r->shm.best_ns,
				      (unsigned long long)r->sync_samples,
				      (unsigned long long)r->sync_bad,
				      (unsigned long long)r->sync_window_ns,
				      err,
				      (unsigned long long)r->proto_errors,
				      (unsigned long long)r->pages_read,
				      r->held.nr_refs, D->max_registrations,
				      D->max_channels,
				      (unsigned long long)r->refused_regs,
				      r->cmdlines.nr, D_CMDLINE_SLOTS,
				      (unsigned long long)r->cmdlines.replaced,
				      remote_cmdline_bytes(r));
		if (n > 0 && n < (int)sizeof(small)) {
			size_t queued, held = tickets_held(r, &queued);

			n += snprintf(small + n, sizeof(small) - (size_t)n,
				      "positions_held: %zu\n"
				      "pages_queued: %zu\n",
				      held, queued);
		}
		if (n > 0 && n < (int)sizeof(small) && !remote_static_events(r))
			n += snprintf(small + n, sizeof(small) - (size_t)n,
				      "kernel_formats: %s\n",
				      r->kf_dir ? r->kf_dir :
				      remote_kf_active(r) ? "(being sent)" :
							    "(none)");
		if (n > 0 && n < (int)sizeof(small))
			n += snprintf(small + n, sizeof(small) - (size_t)n,
				      "wakeups: %s\nwake_armings: %llu\n"
				      "wake_barriers: %llu\nwake_sleeps: %llu\n"
				      "wake_doorbells: %llu\n"
				      "wake_bell_rings: %llu\n"
				      "wake_relayed: %llu\n"
				      "wake_stale: %llu\n",
				      !D->wakeups     ? "off (--no-wakeups)" :
				      !r->conn        ? "no agent (polled)" :
				      r->wake.refused ? "refused by the agent (polled)" :
				      r->wake.state == WAKE_ASLEEP ? "asleep" :
				      r->wake.state == WAKE_BARRIER ? "arming" :
								      "polling",
				      (unsigned long long)r->wake.armings,
				      (unsigned long long)r->wake.barriers,
				      (unsigned long long)r->wake.sleeps,
				      (unsigned long long)r->wake.doorbells,
				      (unsigned long long)r->wake.bell_rings,
				      (unsigned long long)r->wake.relayed,
				      (unsigned long long)r->wake.stale);
		/* Pages each reader thread read (fanout.c): thread 0 is
		 * the daemon's loop, which reads alone when the remote is
		 * not read in parallel. */
		{
			unsigned int t, last = 0;

			for (t = 1; t < D_READERS_MAX; t++)
				if (r->thread_pages[t])
					last = t;
			if (n > 0 && n < (int)sizeof(small))
				n += snprintf(small + n,
					      sizeof(small) - (size_t)n,
					      "reader_thread_pages:");
			for (t = 0;
			     t <= last && n > 0 && n < (int)sizeof(small); t++)
				n += snprintf(
					small + n, sizeof(small) - (size_t)n,
					" %llu",
					(unsigned long long)r->thread_pages[t]);
			if (n > 0 && n < (int)sizeof(small))
				n += snprintf(small + n,
					      sizeof(small) - (size_t)n, "\n");
		}
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

void tool_formats(struct conn *c, struct remote *r, const struct hvt_msg *m)
{
	const struct hvt_m_format *kv = NULL;
	struct fmt_list fl = { 0 };
	char hp[8192], he[8192];
	struct hvt_msg out;
	int nhp = -1, nhe;
	size_t i, nk = 0;
	int ret;

	if (r->ops->formats)
		nk = r->ops->formats(r, &kv);

	if (remote_has_pages(r))
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
			    ((fl.n || nk || tool_events_nr_static(r)) ?
				     HVT_PF_MORE : 0);
		out.u.format.name.ptr = "header_event";
		out.u.format.name.len = 12;
		out.u.format.text.ptr = he;
		out.u.format.text.len = (uint32_t)nhe;
		out.u.format.status = ret < 0 ? ret : 0;
		conn_send(c, &out);
	}
	tool_events_send_static(c, r, m, fl.n > 0 || nk > 0);
	for (i = 0; i < nk; i++) {
		out.flags = HVT_PF_REPLY |
			    (i + 1 < nk || fl.n ? HVT_PF_MORE : 0);
		out.u.format = kv[i];
		conn_send(c, &out);
	}
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


/*
 * KFORMATS_DIR: the folder with the remote's guest kernel formats, as its
 * agent sent them (or as the cache had them for that kernel build); the
 * reply is a TEXT of type KFORMATS_DIR, with -ENOENT and a reason when
 * there is none.
 */
void tool_kformats_dir(struct conn *c, struct remote *r,
		       const struct hvt_msg *m)
{
	const struct agent_remote *ar = agent_remote_c(r);
	char text[PATH_MAX + 256];
	struct hvt_msg a;

	memset(&a, 0, sizeof(a));
	a.type = HVT_MSG_KFORMATS_DIR;
	a.flags = HVT_PF_REPLY;
	a.req = m->req;
	a.chan = m->chan;
	if (r->kf_dir) {
		snprintf(text, sizeof(text), "%s", r->kf_dir);
	} else if (ar && ar->kboot_promised && r->conn && !ar->kf_settled) {
		/* An agent that offers them each session: worth a wait. */
		a.u.text.status = -EAGAIN;
		snprintf(text, sizeof(text),
			 "remote '%s': its agent's guest kernel formats are "
			 "on their way",
			 r->name);
	} else {
		a.u.text.status = -ENOENT;
		snprintf(text, sizeof(text),
			 "remote '%s' has no guest kernel formats from an "
			 "agent (%s)",
			 r->name,
			 remote_kf_active(r) ? "they are on their way" :
			 r->conn      ? "its agent sent none: has the guest "
					"tracefs?" :
					"no agent is connected");
	}
	a.u.text.text.ptr = text;
	a.u.text.text.len = (uint32_t)strlen(text);
	conn_send(c, &a);
}
