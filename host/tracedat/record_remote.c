// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the source set of remotes of hvtraced a recording reads
 * (record.c does the rest: the file, the kernel, the steps, the
 * metadata).
 *
 * An area that this process can own is read by record_area.c.  A remote
 * that hvtraced owns -- a guest, a local agent, a hypervisor or loopback
 * area attached to the daemon -- is read through the daemon instead: one
 * subscription per remote on one page feed, formats from FORMATS
 * (fetched again when an event id without a format shows up, so user
 * events registered while recording are named), timestamps converted to
 * host CLOCK_MONOTONIC with the daemon's clock model (TO_HOST, one
 * request per burst of pages), and the same packer and id rules as the
 * areas (record.c): one buffer per remote, every remote event id below
 * 0x8000 and unique in the file, a reserved id for records of ids nobody
 * described; the comms a guest's agent reported in the file.
 *
 * The daemon's enable state is shared with its other tools: without
 * event patterns the recorder takes what is enabled; with them it
 * enables the matching events and puts every state it changed back when
 * it finishes.  Recording a remote ends when it is detached, when its
 * writer re-formats the area, or -- for an area remote -- once its
 * writer stopped (or died) and a drain found nothing more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdat.h"
#include "../proto/dfeed.h"

#define DR_REFRESH_NS 200000000ULL /* remote state polls */
#define DR_FORMATS_NS 500000000ULL /* unknown ids: formats again */

struct dr_cpu {
	struct hvt_tdat_rcpu rc;
	struct dr_src *src;
	uint64_t pending_lost; /* carried to the next event */
	bool pending_unknown;
};

struct dr_ev { /* one record waiting for host time */
	struct dr_cpu *c;
	uint64_t ts;
	uint64_t lost;
	bool lost_unknown;
	uint32_t len;
	uint32_t off; /* in the batch's byte buffer */
};

struct dr_changed {
	char name[330];
	bool was;
};

struct dr_src {
	struct hvt_tdat_rset *r;
	struct hvt_remote_rec rec;
	char name[64];
	int buffer;
	struct dr_cpu *cpu;
	/* remote id -> file id; the remote ids that have a format */
	uint16_t *idmap;
	uint8_t *known;
	struct hvt_tdat_catalog cat; /* formats with their file ids */
	uint64_t sub_dropped;
	uint64_t formats_at; /* last FORMATS fetch */
	bool finishing;	     /* writer stopped: drain, then done */
	bool finished;
	struct dr_changed *chg;
	unsigned int nr_chg;
	struct hvt_tdat_pids pids; /* host pids named (loopback) */
	struct hvtrace_tracedat_source_stats st;
};

/* The remotes of a recording (record.c sees it opaque). */
struct hvt_tdat_rset {
	struct hvtrace_tracedat_record *rec;
	struct hvtrace_tracedat_writer *w;
	struct hvt_dclient *dc;
	struct hvt_dfeed *feed;
	struct dr_src *src[HVT_TDAT_REC_MAX_SOURCES];
	unsigned int nr_src;
	uint64_t next_refresh;
	struct hvt_devents *evs; /* per remote, from place() to start() */
	/* the batch waiting for TO_HOST */
	struct dr_ev *batch;
	size_t nr_batch, cap_batch;
	uint8_t *bytes;
	size_t nr_bytes, cap_bytes;
	uint32_t cur_cpu;
	struct dr_src *cur_src;
	uint64_t cur_lost;
	bool cur_unknown;
};

static uint64_t dr_now(void)
{
	return hvt_host_now_ns();
}

static void dr_free_src(struct dr_src *s)
{
	uint32_t c;

	if (!s)
		return;
	for (c = 0; s->cpu && c < s->rec.nr_cpus; c++)
		hvt_tdat_rcpu_fini(&s->cpu[c].rc);
	free(s->cpu);
	free(s->idmap);
	free(s->known);
	free(s->chg);
	hvt_tdat_pids_fini(&s->pids);
	hvt_tdat_catalog_free(&s->cat);
	free(s);
}

static void dr_free_evs(struct hvt_tdat_rset *r)
{
	unsigned int i;

	for (i = 0; r->evs && i < r->nr_src; i++)
		hvt_devents_free(&r->evs[i]);
	free(r->evs);
	r->evs = NULL;
}

static void dr_free(struct hvt_tdat_rset *r)
{
	unsigned int i;

	dr_free_evs(r);
	for (i = 0; i < r->nr_src; i++)
		dr_free_src(r->src[i]);
	hvt_dfeed_close(r->feed);
	hvt_dclient_close(r->dc);
	free(r->batch);
	free(r->bytes);
	free(r);
}

static const struct hvt_tdat_rset_ops dr_ops;

/* The set, connected to hvtraced, at the first remote. */
static int dr_set_get(struct hvtrace_tracedat_record *rec,
		      struct hvt_tdat_rset **out)
{
	struct hvt_tdat_rset *r;
	int ret;

	if (rec->ops == &dr_ops) {
		*out = rec->set;
		return 0;
	}
	if (rec->ops)
		return hvt_err(-EINVAL, "record: areas and remotes of hvtraced "
					"go in separate recordings");
	r = calloc(1, sizeof(*r));
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	r->rec = rec;
	r->w = rec->w;
	ret = hvt_dclient_open(rec->sock, &r->dc);
	if (!ret)
		ret = hvt_dfeed_open(rec->sock, &r->feed);
	if (ret) {
		dr_free(r);
		return ret;
	}
	rec->set = r;
	rec->ops = &dr_ops;
	*out = r;
	return 0;
}

/* Give new formats of @s ids that mean one event in the whole file. */
static int dr_place_formats(struct hvt_tdat_rset *r, struct dr_src *s,
			    const struct hvt_devents *evs)
{
	unsigned int i;
	int ret;

	for (i = 0; i < evs->nr; i++) {
		const struct hvt_devent *e = &evs->ev[i];
		uint32_t want = e->id, id;
		char *t;

		if (want > 0xffff || (s->known[want / 8] >> (want % 8)) & 1)
			continue;
		/* The same format already placed (another remote of the same
		 * kind)? */
		id = hvt_tdat_ids_find(&r->rec->ids, e->system, e->format,
				       NULL);
		if (!id) {
			id = want;
			if (!id ||
			    hvt_tdat_ids_used(&r->rec->ids, r->rec->kern, id)) {
				ret = hvt_tdat_ids_alloc(&r->rec->ids,
							 r->rec->kern, &id);
				if (ret)
					return ret;
			}
			t = hvt_tdat_format_set_id(e->format, id);
			if (!t || hvt_tdat_catalog_add(&s->cat, e->system,
						       e->name, id, t, -1)) {
				free(t);
				return hvt_err(-ENOMEM, "out of memory");
			}
			free(t);
			r->rec->ids.text[id] = s->cat.fmt[s->cat.nr - 1].text;
			r->rec->ids.sys[id] = s->cat.fmt[s->cat.nr - 1].system;
		}
		s->idmap[want] = (uint16_t)id;
		s->known[want / 8] |= (uint8_t)(1u << (want % 8));
	}
	return 0;
}

static int dr_fetch_formats(struct hvt_tdat_rset *r, struct dr_src *s,
			    struct hvt_devents *evs)
{
	int ret;

	s->formats_at = dr_now();
	ret = hvt_devents_get(r->dc, s->rec.id, evs);
	if (ret)
		return ret;
	/* The built-in formats of the writer kind, too. */
	{
		struct hvt_tdat_catalog b = {0};
		unsigned int i;

		ret = hvt_tdat_catalog_for_writer(&b, s->rec.writer_kind);
		for (i = 0; !ret && i < b.nr; i++) {
			struct hvt_devent *v, *e;
			unsigned int k;
			bool have = false;

			for (k = 0; k < evs->nr; k++)
				if (evs->ev[k].id == b.fmt[i].id)
					have = true;
			if (have)
				continue;
			v = realloc(evs->ev, (evs->nr + 1) * sizeof(*v));
			if (!v) {
				ret = -ENOMEM;
				break;
			}
			evs->ev = v;
			e = &v[evs->nr];
			memset(e, 0, sizeof(*e));
			snprintf(e->system, sizeof(e->system), "%s",
				 b.fmt[i].system);
			snprintf(e->name, sizeof(e->name), "%s", b.fmt[i].name);
			e->id = b.fmt[i].id;
			e->bit = b.bit[i];
			e->format = strdup(b.fmt[i].text);
			if (!e->format) {
				ret = -ENOMEM;
				break;
			}
			evs->nr++;
		}
		hvt_tdat_catalog_free(&b);
		if (ret)
			return hvt_err(ret, "out of memory");
	}
	return 0;
}

int hvt_tdat_rremote_add(struct hvtrace_tracedat_record *rec,
			 const char *remote, const char *name)
{
	struct hvt_tdat_rset *r = NULL;
	struct dr_src *s;
	uint32_t c, i;
	int ret;

	if (rec->started)
		return hvt_err(-EBUSY, "record: remotes must be added before "
				       "recording starts");
	ret = dr_set_get(rec, &r);
	if (ret)
		return ret;
	if (r->nr_src >= HVT_TDAT_REC_MAX_SOURCES)
		return hvt_err(-ENOSPC, "record: more than %u remotes",
			       HVT_TDAT_REC_MAX_SOURCES);
	s = calloc(1, sizeof(*s));
	if (!s)
		return hvt_err(-ENOMEM, "out of memory");
	s->r = r;
	ret = hvt_dclient_remote(r->dc, remote, &s->rec);
	if (ret) {
		dr_free_src(s);
		return ret;
	}
	if (!s->rec.nr_cpus || !s->rec.subbuf_size) {
		dr_free_src(s);
		return hvt_err(-ENODEV,
			       "the area of '%s' is not attached yet "
			       "(see 'hvtrace daemon info --remote "
			       "%s')",
			       remote, remote);
	}
	snprintf(s->name, sizeof(s->name), "%s", name && *name ? name : remote);
	for (i = 0; i < r->nr_src; i++)
		if (!strcmp(r->src[i]->name, s->name) ||
		    r->src[i]->rec.id == s->rec.id) {
			dr_free_src(s);
			return hvt_err(-EEXIST, "'%s' is given twice", remote);
		}
	snprintf(s->st.name, sizeof(s->st.name), "%s", s->name);
	s->st.nr_cpus = s->rec.nr_cpus;
	s->cpu = calloc(s->rec.nr_cpus, sizeof(*s->cpu));
	s->idmap = calloc(65536, sizeof(*s->idmap));
	s->known = calloc(65536 / 8, 1);
	if (!s->cpu || !s->idmap || !s->known) {
		dr_free_src(s);
		return hvt_err(-ENOMEM, "out of memory");
	}
	for (c = 0; c < s->rec.nr_cpus; c++) {
		s->cpu[c].src = s;
		ret = hvt_tdat_rcpu_init(&s->cpu[c].rc, r->w, &s->buffer, c,
					 s->rec.subbuf_size, &s->st);
		if (ret) {
			dr_free_src(s);
			return hvt_err(ret, "bad sub-buffer size %u",
				       s->rec.subbuf_size);
		}
	}
	ret = hvtrace_tracedat_writer_add_buffer(
		r->w, s->name, "mono", s->rec.nr_cpus, s->rec.subbuf_size);
	if (ret < 0) {
		dr_free_src(s);
		return ret;
	}
	s->buffer = ret;
	r->src[r->nr_src++] = s;
	/* Source indexes: the kernel first. */
	return (int)(r->nr_src - 1 + !!rec->kern);
}

/* Enable the events the patterns select; remember what was changed. */
static int dr_enable(struct hvt_tdat_rset *r, struct dr_src *s,
		     const struct hvt_devents *evs)
{
	unsigned int i;

	for (i = 0; i < evs->nr; i++) {
		const struct hvt_devent *e = &evs->ev[i];
		char full[330], text[256];
		struct hvt_msg m;
		int ret;

		if (e->bit < 0 || e->enabled ||
		    !hvt_tdat_rec_selected(r->rec, e->system, e->name))
			continue;
		snprintf(full, sizeof(full), "%s%s%s",
			 strcmp(e->system, "user_events") ? e->system : "",
			 strcmp(e->system, "user_events") ? "/" : "", e->name);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_ENABLE;
		m.chan = s->rec.id;
		m.u.arg.arg = 1;
		m.u.arg.s.ptr = full;
		m.u.arg.s.len = (uint32_t)strlen(full);
		ret = hvt_dclient_result(r->dc, &m, NULL, text, sizeof(text));
		if (ret)
			return hvt_err(ret, "cannot enable %s on '%s': %s",
				       full, s->rec.name, text);
		{
			struct dr_changed *v =
				realloc(s->chg, (s->nr_chg + 1) * sizeof(*v));

			if (!v)
				return hvt_err(-ENOMEM, "out of memory");
			s->chg = v;
			snprintf(v[s->nr_chg].name, sizeof(v->name), "%s",
				 full);
			v[s->nr_chg].was = false;
			s->nr_chg++;
		}
	}
	return 0;
}

/* Formats fetched and placed under file ids; pattern hits counted. */
static int dr_place(struct hvt_tdat_rset *r, unsigned int *hits)
{
	unsigned int i, j;
	int ret = 0;

	r->evs = calloc(r->nr_src + 1, sizeof(*r->evs));
	if (!r->evs)
		return hvt_err(-ENOMEM, "out of memory");
	for (i = 0; !ret && i < r->nr_src; i++) {
		struct hvt_devents *evs = &r->evs[i];

		ret = dr_fetch_formats(r, r->src[i], evs);
		if (!ret)
			ret = dr_place_formats(r, r->src[i], evs);
		for (j = 0; !ret && j < evs->nr; j++)
			if (evs->ev[j].bit >= 0)
				hvt_tdat_rec_count(r->rec, evs->ev[j].system,
						   evs->ev[j].name, hits);
	}
	return ret;
}

static int dr_no_match(struct hvt_tdat_rset *r, const char *pat)
{
	if (r->rec->kern)
		return hvt_err(-ENOENT,
			       "no event matches '%s' (kernel events: see "
			       "available_events in tracefs; remotes: see "
			       "'hvtrace events status --remote NAME')",
			       pat);
	return hvt_err(-ENOENT,
		       "no event matches '%s' (see 'hvtrace events status "
		       "--remote NAME')",
		       pat);
}

/* Subscribed, then the kernel running (record.c), then the remotes'
 * events enabled: once a writer sees its events enabled, what it does
 * next (a trace_marker write) must land in a running buffer. */
static int dr_subscribe(struct hvt_tdat_rset *r)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; !ret && i < r->nr_src; i++)
		ret = hvt_dfeed_subscribe(r->feed, r->src[i]->rec.id, -1, 0,
					  NULL);
	return ret;
}

static int dr_start(struct hvt_tdat_rset *r)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; !ret && r->rec->events[0] && i < r->nr_src; i++)
		ret = dr_enable(r, r->src[i], &r->evs[i]);
	dr_free_evs(r);
	r->next_refresh = dr_now() + DR_REFRESH_NS;
	return ret;
}

static struct dr_src *dr_src_of(struct hvt_tdat_rset *r, uint32_t id)
{
	unsigned int i;

	for (i = 0; i < r->nr_src; i++)
		if (r->src[i]->rec.id == id)
			return r->src[i];
	return NULL;
}

static int dr_batch_event(void *arg, uint64_t ts, const uint8_t *p,
			  uint32_t len)
{
	struct hvt_tdat_rset *r = arg;
	struct dr_ev *e;

	if (r->nr_batch == r->cap_batch) {
		size_t cap = r->cap_batch ? r->cap_batch * 2 : 1024;
		struct dr_ev *v = realloc(r->batch, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->batch = v;
		r->cap_batch = cap;
	}
	if (r->nr_bytes + len > r->cap_bytes) {
		size_t cap = (r->nr_bytes + len) * 2;
		uint8_t *b = realloc(r->bytes, cap);

		if (!b)
			return -ENOMEM;
		r->bytes = b;
		r->cap_bytes = cap;
	}
	e = &r->batch[r->nr_batch++];
	e->c = &r->cur_src->cpu[r->cur_cpu];
	e->ts = ts;
	e->lost = r->cur_lost;
	e->lost_unknown = r->cur_unknown;
	r->cur_lost = 0;
	r->cur_unknown = false;
	e->len = len;
	e->off = (uint32_t)r->nr_bytes;
	memcpy(r->bytes + r->nr_bytes, p, len);
	r->nr_bytes += len;
	return 0;
}

/* Only a loopback writer's pids are pids of this host. */
static void dr_note_pid(struct dr_src *s, int pid)
{
	if (s->rec.writer_kind == HVT_WRITER_LOOPBACK)
		hvt_tdat_pids_note(&s->pids, s->r->w, s->r->rec->pid_named,
				   pid);
}

/* Convert the batch's timestamps, remap ids, pack. */
static int dr_flush_batch(struct hvt_tdat_rset *r)
{
	uint64_t *ts;
	size_t i;
	int ret = 0;

	if (!r->nr_batch)
		return 0;
	ts = malloc(r->nr_batch * sizeof(*ts));
	if (!ts)
		return hvt_err(-ENOMEM, "out of memory");
	/* One request per remote present in the batch. */
	for (i = 0; i < r->nr_batch; i++)
		ts[i] = r->batch[i].ts;
	{
		unsigned int k;

		for (k = 0; !ret && k < r->nr_src; k++) {
			struct dr_src *s = r->src[k];
			uint64_t *sub;
			size_t n = 0, j;

			for (i = 0; i < r->nr_batch; i++)
				n += r->batch[i].c->src == s;
			if (!n)
				continue;
			sub = malloc(n * sizeof(*sub));
			if (!sub) {
				ret = hvt_err(-ENOMEM, "out of memory");
				break;
			}
			for (i = 0, j = 0; i < r->nr_batch; i++)
				if (r->batch[i].c->src == s)
					sub[j++] = ts[i];
			ret = hvt_dfeed_to_host(r->feed, s->rec.id, sub, sub, n,
						&s->st.sync_err_ns);
			for (i = 0, j = 0; !ret && i < r->nr_batch; i++)
				if (r->batch[i].c->src == s)
					ts[i] = sub[j++];
			free(sub);
		}
	}
	for (i = 0; !ret && i < r->nr_batch; i++) {
		struct dr_ev *e = &r->batch[i];
		struct dr_cpu *c = e->c;
		struct dr_src *s = c->src;
		uint8_t *rec = r->bytes + e->off;
		uint16_t id, fid;
		int32_t pid;

		if (e->lost || e->lost_unknown) {
			ret = hvt_tdat_rcpu_put_lost(&c->rc, e->lost,
						     !e->lost_unknown);
			if (ret)
				break;
		}
		if (e->len < sizeof(struct hvt_common_fields)) {
			s->st.errors++;
			continue;
		}
		memcpy(&id, rec, 2);
		if (!((s->known[id / 8] >> (id % 8)) & 1) &&
		    dr_now() - s->formats_at >= DR_FORMATS_NS) {
			/* A new event (a user event registered while
			 * recording): its format, before the packer
			 * writes it under a file id. */
			struct hvt_devents evs = {0};

			if (!dr_fetch_formats(r, s, &evs))
				dr_place_formats(r, s, &evs);
			hvt_devents_free(&evs);
		}
		if ((s->known[id / 8] >> (id % 8)) & 1) {
			fid = s->idmap[id];
		} else {
			fid = (uint16_t)r->rec->ids.unknown_id;
			s->st.unknown++;
			r->rec->ids.unknown_total++;
		}
		memcpy(rec, &fid, 2);
		memcpy(&pid, rec + 4, 4);
		dr_note_pid(s, pid);
		ret = hvt_tdat_rcpu_put_event(&c->rc, ts[i], rec, e->len);
	}
	free(ts);
	r->nr_batch = 0;
	r->nr_bytes = 0;
	return ret;
}

/* One page of the feed into the batch. */
static int dr_page(struct hvt_tdat_rset *r, const struct hvt_dpage *pg)
{
	struct dr_src *s = dr_src_of(r, pg->remote);
	uint64_t lost = 0, drops;
	int n;

	if (!s || s->finished || pg->cpu >= s->rec.nr_cpus)
		return 0;
	drops = pg->dropped_events > s->sub_dropped
			? pg->dropped_events - s->sub_dropped
			: 0;
	if (pg->dropped_events > s->sub_dropped)
		s->sub_dropped = pg->dropped_events;
	r->cur_src = s;
	r->cur_cpu = pg->cpu;
	n = hvt_dpage_walk(pg->data, pg->len, &lost, NULL, NULL);
	if (n < 0) {
		s->st.errors++;
		return 0;
	}
	r->cur_unknown = lost == UINT64_MAX;
	r->cur_lost = (lost == UINT64_MAX ? 0 : lost) + drops;
	if (!n) {
		/* Nothing to carry the loss now: the CPU's next page. */
		struct dr_cpu *c = &s->cpu[pg->cpu];

		c->pending_lost += r->cur_lost;
		c->pending_unknown |= r->cur_unknown;
		return 0;
	}
	{
		struct dr_cpu *c = &s->cpu[pg->cpu];

		r->cur_lost += c->pending_lost;
		r->cur_unknown |= c->pending_unknown;
		c->pending_lost = 0;
		c->pending_unknown = false;
	}
	n = hvt_dpage_walk(pg->data, pg->len, &lost, dr_batch_event, r);
	return n < 0 ? hvt_err(-ENOMEM, "out of memory") : 0;
}

/* Pages that are there now (or within @wait_ms), packed. */
static int dr_pump(struct hvt_tdat_rset *r, int wait_ms)
{
	struct hvt_dpage *pg;
	int ret, got = 0;

	for (;;) {
		ret = hvt_dfeed_next(r->feed, got ? 0 : wait_ms, &pg);
		if (ret < 0)
			return ret;
		if (!ret)
			break;
		ret = dr_page(r, pg);
		free(pg);
		if (ret)
			return ret;
		got++;
		if (r->nr_batch >= 16384)
			break;
	}
	ret = dr_flush_batch(r);
	return ret ? ret : got;
}

static int dr_refresh(struct hvt_tdat_rset *r)
{
	struct hvt_remote_rec *v;
	uint32_t n, i, k;
	int ret;

	ret = hvt_dremotes(r->dc, &v, &n);
	if (ret)
		return ret;
	for (k = 0; k < r->nr_src; k++) {
		struct dr_src *s = r->src[k];

		if (s->finished || s->finishing)
			continue;
		for (i = 0; i < n; i++)
			if (v[i].id == s->rec.id)
				break;
		if (i == n) {
			fprintf(stderr,
				"hvtrace record: '%s' was detached "
				"from hvtraced; stopped recording it\n",
				s->name);
			s->finished = s->st.finished = true;
			continue;
		}
		if (v[i].generation != s->rec.generation) {
			fprintf(stderr,
				"hvtrace record: the writer of '%s' "
				"re-formatted its area; stopped "
				"recording it\n",
				s->name);
			s->finishing = true;
			continue;
		}
		if (v[i].transport == HVT_TRANSPORT_AREA &&
		    v[i].state == HVT_REMOTE_DISCONNECTED)
			s->finishing = true;
	}
	free(v);
	return 0;
}

static int dr_poll(struct hvt_tdat_rset *r, int kn, unsigned int max_wait_ms)
{
	unsigned int i, done = 0;
	int ret;

	/* No wait when the kernel had events: more may be pending. */
	ret = dr_pump(r, kn ? 0 : (int)(max_wait_ms > 100 ? 100 : max_wait_ms));
	if (ret < 0)
		return ret;
	if (dr_now() >= r->next_refresh) {
		r->next_refresh = dr_now() + DR_REFRESH_NS;
		ret = dr_refresh(r);
		if (ret)
			return ret;
		/* Writers that stopped: everything they committed, then
		 * done. */
		for (i = 0; i < r->nr_src; i++) {
			struct dr_src *s = r->src[i];

			if (!s->finishing || s->finished)
				continue;
			ret = hvt_dfeed_drain(r->feed, s->rec.id);
			if (!ret)
				while ((ret = dr_pump(r, 0)) > 0)
					;
			if (ret < 0 && ret != -ENOENT)
				return ret;
			s->finished = s->st.finished = true;
		}
	}
	for (i = 0; i < r->nr_src; i++)
		done += r->src[i]->finished;
	return r->nr_src && done == r->nr_src ? 0 : 1;
}

static unsigned int dr_nr_sources(const struct hvt_tdat_rset *r)
{
	return r->nr_src;
}

static const struct hvtrace_tracedat_source_stats *
dr_stats(const struct hvt_tdat_rset *r, unsigned int i)
{
	return &r->src[i]->st;
}

static void dr_restore(struct hvt_tdat_rset *r)
{
	unsigned int i, k;

	for (i = 0; i < r->nr_src; i++) {
		struct dr_src *s = r->src[i];

		for (k = 0; k < s->nr_chg; k++) {
			struct hvt_msg m;

			memset(&m, 0, sizeof(m));
			m.type = HVT_MSG_ENABLE;
			m.chan = s->rec.id;
			m.u.arg.arg = s->chg[k].was;
			m.u.arg.s.ptr = s->chg[k].name;
			m.u.arg.s.len = (uint32_t)strlen(s->chg[k].name);
			hvt_dclient_result(r->dc, &m, NULL, NULL, 0);
		}
		s->nr_chg = 0;
	}
}

/* What the remotes committed until now (before the kernel drains). */
static void dr_stop(struct hvt_tdat_rset *r)
{
	unsigned int i;

	for (i = 0; r->rec->started && i < r->nr_src; i++) {
		struct dr_src *s = r->src[i];

		if (s->finished)
			continue;
		/* What was committed until now; a remote that went away
		 * meanwhile has nothing more to give. */
		if (!hvt_dfeed_drain(r->feed, s->rec.id))
			while (dr_pump(r, 0) > 0)
				;
	}
	if (r->rec->started)
		dr_pump(r, 0);
}

/* After the kernel drained: enable states back, the last pages closed. */
static int dr_drain(struct hvt_tdat_rset *r, int ret)
{
	unsigned int i;
	uint32_t c;

	dr_restore(r);
	for (i = 0; i < r->nr_src && !ret; i++) {
		struct dr_src *s = r->src[i];

		for (c = 0; c < s->rec.nr_cpus && !ret; c++) {
			struct dr_cpu *cp = &s->cpu[c];

			if (cp->pending_lost || cp->pending_unknown)
				s->st.trailing_lost += cp->pending_lost;
			ret = hvt_tdat_pack_flush(&cp->rc.pack);
		}
	}
	return ret;
}

static int dr_cpustats(struct hvt_tdat_rset *r)
{
	struct hvt_m_stats *st = NULL;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < r->nr_src && !ret; i++) {
		struct dr_src *s = r->src[i];
		uint64_t ts[2 * HVT_ABI_MAX_CPUS];
		struct hvt_msg m, rep;
		uint32_t n = 0, k;
		int got;

		ret = hvt_tdat_rec_add_buffer_stat(r->w, s->name);
		free(st);
		st = calloc(s->rec.nr_cpus + 1, sizeof(*st));
		if (!st) {
			ret = hvt_err(-ENOMEM, "out of memory");
			break;
		}
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_STATS;
		m.chan = s->rec.id;
		got = hvt_dclient_call(r->dc, &m, &rep, HVT_DCLIENT_TIMEOUT_MS,
				       NULL, NULL);
		/* One record per CPU, MORE on all but the last. */
		while (!got && rep.type == HVT_MSG_STATS &&
		       n < s->rec.nr_cpus && n < HVT_ABI_MAX_CPUS) {
			st[n++] = rep.u.stats;
			if (!(rep.flags & HVT_PF_MORE))
				break;
			do {
				got = hvt_dclient_recv(r->dc, &rep,
						       HVT_DCLIENT_TIMEOUT_MS);
			} while (got == 1 && rep.req != m.req);
			got = got == 1 ? 0 : -ETIMEDOUT;
		}
		/* A remote that went away has no statistics: none saved. */
		for (k = 0; k < n; k++) {
			ts[2 * k] = st[k].v[12];
			ts[2 * k + 1] = st[k].v[13];
		}
		if (n &&
		    hvt_dfeed_to_host(r->feed, s->rec.id, ts, ts, 2 * n, NULL))
			memset(ts, 0, sizeof(ts));
		for (k = 0; !ret && k < n; k++) {
			const uint64_t *v = st[k].v;
			struct hvt_tdat_cpustat cs = {
				.cpu = st[k].cpu,
				.entries = v[1],
				.overrun = v[2] + v[4],
				.bytes = v[9],
				.oldest_ns = v[1] ? ts[2 * k] : 0,
				.now_ns = v[0] ? ts[2 * k + 1] : 0,
				.dropped = v[3],
				.read = v[8],
			};

			if (!st[k].status)
				ret = hvt_tdat_rec_add_cpustat(r->w, &cs);
		}
	}
	free(st);
	return ret;
}

/* saved_cmdlines of a remote's agent into the file. */
static void dr_cmdlines(struct hvt_tdat_rset *r, struct dr_src *s)
{
	char *text = NULL, *line, *save = NULL;

	if (hvt_dclient_text(r->dc, s->rec.id, HVT_TEXT_CMDLINES, &text, NULL))
		return;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char comm[32];
		int pid;

		if (sscanf(line, "%d %31[^\n]", &pid, comm) == 2 && pid > 0)
			hvtrace_tracedat_writer_add_cmdline(r->w, pid, comm);
	}
	free(text);
}

static void dr_geometry(struct hvt_tdat_rset *r, uint32_t *sb, uint32_t *cpus)
{
	unsigned int i;

	for (i = 0; i < r->nr_src; i++) {
		if (r->src[i]->rec.subbuf_size > *sb)
			*sb = r->src[i]->rec.subbuf_size;
		if (r->src[i]->rec.nr_cpus > *cpus)
			*cpus = r->src[i]->rec.nr_cpus;
	}
}

static int dr_formats(struct hvt_tdat_rset *r)
{
	unsigned int i, j;
	int ret = 0;

	for (j = 0; !ret && j < r->nr_src; j++) {
		struct dr_src *s = r->src[j];

		for (i = 0; !ret && i < s->cat.nr; i++)
			ret = hvtrace_tracedat_writer_add_format(
				r->w, s->cat.fmt[i].system, s->cat.fmt[i].text,
				strlen(s->cat.fmt[i].text));
		/* The comms a guest's agent reported. */
		if (!ret && s->rec.writer_kind != HVT_WRITER_LOOPBACK)
			dr_cmdlines(r, s);
	}
	return ret;
}

static const struct hvt_tdat_rset_ops dr_ops = {
	.place = dr_place,
	.no_match = dr_no_match,
	.pre_start = dr_subscribe,
	.start = dr_start,
	.poll = dr_poll,
	.stop = dr_stop,
	.drain = dr_drain,
	.restore = dr_restore,
	.geometry = dr_geometry,
	.formats = dr_formats,
	.cpustats = dr_cpustats,
	.nr_sources = dr_nr_sources,
	.stats = dr_stats,
	.free = dr_free,
};
