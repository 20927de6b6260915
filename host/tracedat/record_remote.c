// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the source set of remotes of hvtraced a recording reads
 * (record.c does the rest: the file, the kernel, the steps, the
 * metadata); record_rpages.c reads their pages.
 *
 * An area that this process can own is read by record_area.c.  A remote
 * that hvtraced owns -- a guest, a local agent, a hypervisor or loopback
 * area attached to the daemon -- is read through the daemon instead: a
 * ring per CPU (hvtrace_daemon_ring_open()) on one page feed, packed
 * as the areas' pages are (record_rpages.c), formats from FORMATS and the
 * built-in ones of its writer kind, timestamps converted to host
 * CLOCK_MONOTONIC with the daemon's clock model, and the same packer and
 * id rules as the areas (record.c): one buffer per remote, every remote
 * event id below 0x8000 and unique in the file, a reserved id for records
 * of ids nobody described; the comms a guest's agent reported and the
 * daemon's per-CPU statistics in the file.
 *
 * The daemon's enable state is shared with its other tools: without
 * event patterns the recorder takes what is enabled; with them it
 * enables the matching events and puts every state it changed back when
 * it finishes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rremote.h"

static void dr_free_src(struct dr_src *s)
{
	uint32_t c;

	if (!s)
		return;
	hvt_rr_close_rings(s);
	for (c = 0; s->cpu && c < s->rec.nr_cpus; c++) {
		hvt_tdat_rcpu_fini(&s->cpu[c].rc);
		free(s->cpu[c].hyp_page);
	}
	free(s->cpu);
	free(s->idmap);
	free(s->known);
	free(s->chg);
	hvt_tdat_pids_fini(&s->pids);
	hvtrace_catalog_free(&s->cat);
	hvt_rk_free(s->kr);
	free(s);
}

static void dr_free_evs(struct hvt_tdat_rset *r)
{
	unsigned int i;

	for (i = 0; r->evs && i < r->nr_src; i++)
		hvtrace_daemon_events_free(&r->evs[i]);
	free(r->evs);
	r->evs = NULL;
}

static void dr_free(struct hvt_tdat_rset *r)
{
	unsigned int i;

	dr_free_evs(r);
	for (i = 0; i < r->nr_src; i++)
		dr_free_src(r->src[i]);
	hvtrace_daemon_feed_close(r->feed);
	hvtrace_daemon_close(r->dc);
	free(r->batch);
	free(r->bytes);
	free(r);
}

static const struct hvt_tdat_rset_ops dr_ops;

bool hvt_tdat_rremote_is(const struct hvtrace_tracedat_record *rec)
{
	return rec->ops == &dr_ops;
}

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
	ret = hvtrace_daemon_open(rec->sock, &r->dc);
	if (!ret)
		ret = hvtrace_daemon_feed_open(rec->sock, &r->feed);
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
int hvt_rr_place_formats(struct hvt_tdat_rset *r, struct dr_src *s,
			 const struct hvtrace_daemon_events *evs)
{
	unsigned int i;
	int ret;

	for (i = 0; i < evs->nr; i++) {
		const struct hvtrace_daemon_event *e = &evs->ev[i];
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
			if (!t || hvtrace_catalog_add(&s->cat, e->system,
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

int hvt_rr_fetch_formats(struct hvt_tdat_rset *r, struct dr_src *s,
			 struct hvtrace_daemon_events *evs)
{
	int ret;

	s->formats_at = hvt_host_now_ns();
	ret = hvtrace_daemon_events_get(r->dc, s->rec.id, evs);
	if (ret)
		return ret;
	/* The built-in formats of the writer kind, too. */
	{
		struct hvtrace_catalog b = {0};
		unsigned int i;

		ret = hvtrace_catalog_add_writer(&b, s->rec.writer_kind);
		for (i = 0; !ret && i < b.nr; i++) {
			struct hvtrace_daemon_event *v, *e;
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
		hvtrace_catalog_free(&b);
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
	ret = hvtrace_daemon_find_remote(r->dc, remote, &s->rec);
	if (ret) {
		dr_free_src(s);
		return ret;
	}
	if (s->rec.transport == HVT_TRANSPORT_KRING) {
		/* Its times are the guest's own: no host time to give them. */
		dr_free_src(s);
		return hvt_err(-EINVAL,
			       "'%s' is a guest kernel ring attached by VMM "
			       "pid or RAM file: its times are the guest's "
			       "own, which a recording on the host's clock "
			       "cannot hold; record it alone with 'hvtrace "
			       "record -o FILE --vm-pid PID --formats DIR' "
			       "(a RAM file: '--guest-kernel RAMFILE')",
			       remote);
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
	s->cpu = hvt_calloc_lines(s->rec.nr_cpus, sizeof(*s->cpu));
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
	if (ret >= 0 && s->rec.writer_kind == HVT_WRITER_HYP &&
	    hvtrace_tracedat_writer_add_cmdline(r->w, HVT_HYP_PID,
						HVT_HYP_COMM))
		ret = hvt_err(-ENOMEM, "out of memory");
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
		     const struct hvtrace_daemon_events *evs)
{
	unsigned int i;

	for (i = 0; i < evs->nr; i++) {
		const struct hvtrace_daemon_event *e = &evs->ev[i];
		char full[330], text[256];
		int ret;

		if (e->bit < 0 || e->enabled ||
		    !hvt_tdat_rec_selected(r->rec, e->system, e->name))
			continue;
		hvtrace_daemon_event_path(full, sizeof(full), e->system,
					  e->name);
		ret = hvtrace_daemon_enable_event(r->dc, s->rec.id, full, true,
						  text, sizeof(text));
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
		struct hvtrace_daemon_events *evs = &r->evs[i];

		/* Ids without a format: the reserved id (counted). */
		for (j = 0; j < 65536; j++)
			r->src[i]->idmap[j] = (uint16_t)r->rec->ids.unknown_id;
		ret = hvt_rr_fetch_formats(r, r->src[i], evs);
		if (!ret)
			ret = hvt_rr_place_formats(r, r->src[i], evs);
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

/*
 * Rooms in the file for a remote whose writer has stopped, as for such an
 * area (record_area.c): what each CPU holds now, which hvtraced reads
 * from the area's descriptors (TEXT BACKLOG), so the writer can put the
 * pages straight into their place.  A hint, bounded by the ring: a CPU
 * that brings more is still recorded whole; an hvtraced that cannot tell
 * (an older one, a source that keeps no such count) gives no rooms.
 */
static void dr_rooms(struct hvt_tdat_rset *r, struct dr_src *s)
{
	char *text = NULL, *p, *end;
	unsigned long cpu, held;
	size_t len = 0;

	if (!hvtrace_daemon_remote_stopped(&s->rec) || !s->rec.subbuf_size ||
	    hvtrace_daemon_get_text(r->dc, s->rec.id, HVT_TEXT_BACKLOG, &text,
				    &len) ||
	    !text)
		goto out;
	for (p = text; p < text + len && *p; p = end + 1) {
		end = memchr(p, '\n', (size_t)(text + len - p));
		if (!end)
			break;
		*end = '\0';
		if (sscanf(p, "%lu %lu", &cpu, &held) != 2 ||
		    cpu >= s->rec.nr_cpus || !held ||
		    held > (unsigned long)s->rec.nr_subbufs + 2)
			continue;
		hvt_tdat_writer_set_room(
			r->w, s->buffer, (int)cpu,
			hvt_tdat_room_bytes(held, s->rec.subbuf_size));
	}
out:
	free(text);
}

/* Rooms, subscribed, then the kernel running (record.c), then the
 * remotes' events enabled: once a writer sees its events enabled, what it
 * does next (a trace_marker write) must land in a running buffer.  The
 * rooms come first: once subscribed, hvtraced reads the CPUs on. */
static int dr_subscribe(struct hvt_tdat_rset *r)
{
	unsigned int i;
	int ret;

	for (i = 0; i < r->nr_src; i++)
		dr_rooms(r, r->src[i]);
	ret = hvt_tdat_writer_lay_rooms(r->w);
	/* The guest kernels' rings from now: what they hold is skipped
	 * before the kernel starts, so that nothing written once the host
	 * kernel records can be skipped. */
	if (!ret)
		ret = hvt_rk_start(r);
	return ret ? ret : hvt_rr_open_rings(r);
}

static int dr_start(struct hvt_tdat_rset *r)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; !ret && r->rec->events[0] && i < r->nr_src; i++)
		ret = dr_enable(r, r->src[i], &r->evs[i]);
	dr_free_evs(r);
	/* The remotes' states at the first poll: one that stopped before
	 * the recording is drained at once. */
	r->next_refresh = hvt_host_now_ns();
	return ret;
}

static unsigned int dr_nr_sources(const struct hvt_tdat_rset *r)
{
	return r->nr_src + r->nr_ksrc;
}

/* The remotes, then their guest kernels' rings. */
static const struct hvtrace_tracedat_source_stats *
dr_stats(const struct hvt_tdat_rset *r, unsigned int i)
{
	if (i >= r->nr_src)
		return hvt_rk_stats(r, i - r->nr_src);
	return &r->src[i]->st;
}

void hvt_rr_restore(struct hvt_tdat_rset *r)
{
	unsigned int i, k;

	for (i = 0; i < r->nr_src; i++) {
		struct dr_src *s = r->src[i];

		for (k = 0; k < s->nr_chg; k++)
			hvtrace_daemon_enable_event(r->dc, s->rec.id,
						    s->chg[k].name,
						    s->chg[k].was, NULL, 0);
		s->nr_chg = 0;
	}
}

static int dr_cpustats(struct hvt_tdat_rset *r)
{
	struct hvt_m_stats *st = NULL;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < r->nr_src && !ret; i++) {
		struct dr_src *s = r->src[i];
		uint64_t ts[2 * HVT_ABI_MAX_CPUS];
		uint32_t n = 0, k;

		ret = hvt_tdat_rec_own_clock(r->w, s->buffer, s->name,
					     s->st.sync_err_ns, s->st.events);
		if (!ret)
			ret = hvt_tdat_rec_add_buffer_stat(
				r->w, s->name,
				s->st.sync_err_ns == UINT64_MAX ? "writer"
								: NULL,
				s->st.sync_err_ns);
		free(st);
		st = calloc(s->rec.nr_cpus + 1, sizeof(*st));
		if (!st) {
			ret = hvt_err(-ENOMEM, "out of memory");
			break;
		}
		/* What the daemon gave (a remote that went away has no
		 * statistics: none saved). */
		hvtrace_daemon_stats_get(r->dc, s->rec.id,
					 s->rec.nr_cpus < HVT_ABI_MAX_CPUS
						 ? s->rec.nr_cpus
						 : HVT_ABI_MAX_CPUS,
					 st, &n);
		if (hvtrace_daemon_feed_stats_to_host(r->feed, s->rec.id, st, n,
						      ts))
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
	return ret ? ret : hvt_rk_cpustats(r);
}

/* saved_cmdlines of a remote's agent into the file. */
static void dr_cmdline(void *arg, int pid, const char *comm)
{
	if (pid > 0)
		hvtrace_tracedat_writer_add_cmdline(arg, pid, comm);
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
	hvt_rk_geometry(r, sb, cpus);
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
			hvtrace_daemon_cmdlines_each(r->dc, s->rec.id,
						     dr_cmdline, r->w);
	}
	return ret ? ret : hvt_rk_formats(r);
}

static const struct hvt_tdat_rset_ops dr_ops = {
	.kind = "remotes",
	.place = dr_place,
	.no_match = dr_no_match,
	.pre_start = dr_subscribe,
	.start = dr_start,
	.poll = hvt_rr_poll,
	.stop = hvt_rr_stop,
	.drain = hvt_rr_drain,
	.restore = hvt_rr_restore,
	.geometry = dr_geometry,
	.formats = dr_formats,
	.cpustats = dr_cpustats,
	.nr_sources = dr_nr_sources,
	.stats = dr_stats,
	.free = dr_free,
};
