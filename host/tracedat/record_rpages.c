// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the pages of remotes of hvtraced into the recording's
 * packers (the source set of record_remote.c).
 *
 * Pages come from one feed for every remote.  Each page's records are
 * batched with the losses before them (the ring's, and the pages the
 * daemon dropped for this subscriber; a page without records carries its
 * loss on to the CPU's next one), their timestamps converted to host
 * CLOCK_MONOTONIC with the model hvtraced sent ahead of the pages (CLOCK,
 * converted here without a round trip), their ids
 * remapped to file ids (formats fetched again, at most every
 * DR_FORMATS_NS, when an id has none) and packed.  Every DR_REFRESH_NS
 * the daemon's list says which remotes were detached, re-formatted or
 * stopped; those are drained and finished.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rremote.h"

#define RR_KRING_MAX	4096 /* records a guest kernel CPU, per pump */
#define RR_KRING_PASSES 64   /* pumps when stopping */

struct dr_src *hvt_rr_src_of(struct hvt_tdat_rset *r, uint32_t id)
{
	unsigned int i;

	for (i = 0; i < r->nr_src; i++)
		if (r->src[i]->rec.id == id)
			return r->src[i];
	return NULL;
}

int hvt_rr_batch_add(struct hvt_tdat_rset *r, struct dr_cpu *c, uint64_t ts,
		     const uint8_t *p, uint32_t len, uint64_t lost,
		     bool lost_unknown)
{
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
	e->c = c;
	e->ts = ts;
	e->lost = lost;
	e->lost_unknown = lost_unknown;
	e->len = len;
	e->off = (uint32_t)r->nr_bytes;
	memcpy(r->bytes + r->nr_bytes, p, len);
	r->nr_bytes += len;
	return 0;
}

static int dr_batch_event(void *arg, uint64_t ts, const uint8_t *p,
			  uint32_t len)
{
	struct hvt_tdat_rset *r = arg;
	int ret;

	ret = hvt_rr_batch_add(r, &r->cur_src->cpu[r->cur_cpu], ts, p, len,
			       r->cur_lost, r->cur_unknown);
	r->cur_lost = 0;
	r->cur_unknown = false;
	return ret;
}

/* Only a loopback writer's pids are pids of this host. */
static void dr_note_pid(struct dr_src *s, int pid)
{
	if (s->rec.writer_kind == HVT_WRITER_LOOPBACK)
		hvt_tdat_pids_note(&s->pids, s->r->w, s->r->rec->pid_named,
				   pid);
}

/* Convert the batch's timestamps, remap ids, pack. */
/* A remote's stamps converted: its clock model's error bound. */
static int dr_converted(void *arg, uint32_t remote, int ret, uint64_t err_ns)
{
	struct dr_src *s = hvt_rr_src_of(arg, remote);

	if (s)
		s->st.sync_err_ns = err_ns;
	if (s && s->kr)
		hvt_rk_set_sync_err(s->kr, err_ns);
	return ret;
}

static int dr_flush_batch(struct hvt_tdat_rset *r)
{
	uint32_t *rid;
	uint64_t *ts;
	size_t i;
	int ret = 0;

	if (!r->nr_batch)
		return 0;
	ts = malloc(r->nr_batch * sizeof(*ts));
	rid = malloc(r->nr_batch * sizeof(*rid));
	if (!ts || !rid) {
		free(ts);
		free(rid);
		return hvt_err(-ENOMEM, "out of memory");
	}
	/* Locally, with each remote's model (TO_HOST only without one). */
	for (i = 0; i < r->nr_batch; i++) {
		ts[i] = r->batch[i].ts;
		rid[i] = r->batch[i].c->src->rec.id;
	}
	ret = hvtrace_daemon_feed_ts_to_host_mixed(r->feed, r->nr_batch, rid,
						   ts, dr_converted, r);
	free(rid);
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
		if (c->k) { /* the guest kernel's ring */
			ret = hvt_rk_put(r, c, ts[i], rec, e->len);
			continue;
		}
		if (e->len < sizeof(struct hvt_common_fields)) {
			s->st.errors++;
			continue;
		}
		memcpy(&id, rec, 2);
		if (!((s->known[id / 8] >> (id % 8)) & 1) &&
		    hvt_host_now_ns() - s->formats_at >= DR_FORMATS_NS) {
			/* A new event (a user event registered while
			 * recording): its format, before the packer
			 * writes it under a file id. */
			struct hvtrace_daemon_events evs = {0};

			if (!hvt_rr_fetch_formats(r, s, &evs))
				hvt_rr_place_formats(r, s, &evs);
			hvtrace_daemon_events_free(&evs);
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
static int dr_page(struct hvt_tdat_rset *r,
		   const struct hvtrace_daemon_page *pg)
{
	struct dr_src *s = hvt_rr_src_of(r, pg->remote);
	uint64_t lost = 0, drops;
	int n;

	if (!s || s->finished || pg->cpu >= s->rec.nr_cpus)
		return 0;
	drops = hvtrace_daemon_page_drops(pg, &s->cpu[pg->cpu].sub_dropped);
	r->cur_src = s;
	r->cur_cpu = pg->cpu;
	n = hvtrace_daemon_page_walk(pg->data, pg->len, &lost, NULL, NULL);
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
	n = hvtrace_daemon_page_walk(pg->data, pg->len, &lost, dr_batch_event,
				     r);
	return n < 0 ? hvt_err(-ENOMEM, "out of memory") : 0;
}

/* Pages that are there now (or within @wait_ms), packed. */
static int dr_pump(struct hvt_tdat_rset *r, int wait_ms)
{
	struct hvtrace_daemon_page *pg;
	int ret, got = 0, kn;

	/* The guest kernels' rings first: when they gave records, no wait
	 * for the feed.  Only the feed's pages count: the guest kernel
	 * never stops writing, so it must not keep a drain going. */
	kn = hvt_rk_pump(r, RR_KRING_MAX);
	if (kn < 0)
		return kn;
	if (kn)
		wait_ms = 0;
	for (;;) {
		ret = hvtrace_daemon_feed_next(r->feed, got ? 0 : wait_ms, &pg);
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
	uint32_t n, k;
	int ret;

	ret = hvtrace_daemon_get_remotes(r->dc, &v, &n);
	if (ret)
		return ret;
	for (k = 0; k < r->nr_src; k++) {
		struct dr_src *s = r->src[k];

		if (s->finished || s->finishing)
			continue;
		switch (hvtrace_daemon_remote_now(v, n, &s->rec, NULL)) {
		case HVTRACE_DAEMON_REMOTE_GONE:
			fprintf(stderr,
				"hvtrace record: '%s' was detached "
				"from hvtraced; stopped recording it\n",
				s->name);
			s->finished = s->st.finished = true;
			break;
		case HVTRACE_DAEMON_REMOTE_NEW_RUN:
			fprintf(stderr,
				"hvtrace record: the writer of '%s' "
				"re-formatted its area; stopped "
				"recording it\n",
				s->name);
			s->finishing = true;
			break;
		case HVTRACE_DAEMON_REMOTE_STOPPED:
			s->finishing = true;
			break;
		case HVTRACE_DAEMON_REMOTE_LIVE:
			break;
		}
	}
	free(v);
	return 0;
}

int hvt_rr_poll(struct hvt_tdat_rset *r, int kn, unsigned int max_wait_ms)
{
	unsigned int i, done = 0;
	int ret;

	/* No wait when the kernel had events: more may be pending. */
	ret = dr_pump(r, kn ? 0 : (int)(max_wait_ms > 100 ? 100 : max_wait_ms));
	if (ret < 0)
		return ret;
	if (hvt_host_now_ns() >= r->next_refresh) {
		r->next_refresh = hvt_host_now_ns() + DR_REFRESH_NS;
		ret = dr_refresh(r);
		if (ret)
			return ret;
		/* Writers that stopped: everything they committed, then
		 * done. */
		for (i = 0; i < r->nr_src; i++) {
			struct dr_src *s = r->src[i];

			if (!s->finishing || s->finished)
				continue;
			ret = hvtrace_daemon_feed_drain(r->feed, s->rec.id);
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

/* What the remotes committed until now (before the kernel drains). */
void hvt_rr_stop(struct hvt_tdat_rset *r)
{
	unsigned int i;

	for (i = 0; r->rec->started && i < r->nr_src; i++) {
		struct dr_src *s = r->src[i];

		if (s->finished)
			continue;
		/* What was committed until now; a remote that went away
		 * meanwhile has nothing more to give. */
		if (!hvtrace_daemon_feed_drain(r->feed, s->rec.id))
			while (dr_pump(r, 0) > 0)
				;
	}
	if (r->rec->started)
		dr_pump(r, 0);
	/* The guest kernels' rings up to their newest records (bounded:
	 * the guests keep running). */
	for (i = 0; r->rec->started && i < RR_KRING_PASSES; i++)
		if (hvt_rk_pump(r, RR_KRING_MAX) <= 0 || dr_flush_batch(r))
			break;
}

/* After the kernel drained: enable states back, the last pages closed. */
int hvt_rr_drain(struct hvt_tdat_rset *r, int ret)
{
	unsigned int i;
	uint32_t c;

	hvt_rr_restore(r);
	ret = hvt_rk_drain(r, ret);
	for (i = 0; i < r->nr_src && !ret; i++) {
		struct dr_src *s = r->src[i];

		for (c = 0; c < s->rec.nr_cpus && !ret; c++) {
			struct dr_cpu *cp = &s->cpu[c];

			if (cp->pending_lost || cp->pending_unknown)
				s->st.trailing_lost += cp->pending_lost;
			ret = hvtrace_pack_flush(&cp->rc.pack);
		}
	}
	return ret;
}
