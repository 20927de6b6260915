// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the CPU buffers of remotes of hvtraced into the recording's
 * packers (the source set of record_remote.c).
 *
 * Each CPU of a remote is a ring of the core (hvtrace_daemon_ring_open():
 * one subscription per CPU on the set's one feed, its pages routed to the
 * ring, validated and copied once to the ring's reader page, losses --
 * the ring's and what the daemon dropped -- before the page they precede).
 * What get-reader hands over is packed with the page packer of the areas
 * (hvt_tdat_rcpu_put_page()): a new reader page from its start, after the
 * losses before it; a page that grew from where the packer stopped, at
 * the running time there.  Times are converted to host CLOCK_MONOTONIC
 * with the clock model hvtraced sent in the page stream (CLOCK), taken
 * once a page, with no round trip (a daemon that sends none is asked,
 * TO_HOST, once a page); ids are remapped to file ids (formats fetched
 * again, at most every DR_FORMATS_NS, before a page with an id that has
 * none).  Every DR_REFRESH_NS (and at once when recording starts) the
 * daemon's list says which remotes were detached, re-formatted or
 * stopped; those are drained -- DRAIN, their rings read while its pages
 * come, then up to the answer -- and finished.
 *
 * The guest kernel rings beside remotes (record_rkring.c) keep their
 * batch of records converted together.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>

#include "rremote.h"

#define RR_KRING_MAX	 4096 /* records a guest kernel CPU, per pump */
#define RR_KRING_PASSES	 64   /* pumps when stopping */
#define RR_PAGES_PER_CPU 256u /* reader pages a CPU, per pass (fairness) */
#define RR_WAIT_MS	 100  /* longest wait for pages in one poll */
#define RR_DRAIN_PASSES	 4096 /* reads of a drained remote after the answer */

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

/* A remote's stamps converted: its clock model's error bound. */
static void dr_sync_err(struct dr_src *s, uint64_t err_ns)
{
	s->st.sync_err_ns = err_ns;
	if (s->kr)
		hvt_rk_set_sync_err(s->kr, err_ns);
}

static int dr_converted(void *arg, uint32_t remote, int ret, uint64_t err_ns)
{
	struct dr_src *s = hvt_rr_src_of(arg, remote);

	if (s)
		dr_sync_err(s, err_ns);
	return ret;
}

/* The guest kernels' batch: host times, then packed (record_rkring.c). */
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

		if (e->lost || e->lost_unknown) {
			ret = hvt_tdat_rcpu_put_lost(&e->c->rc, e->lost,
						     !e->lost_unknown);
			if (ret)
				break;
		}
		ret = hvt_rk_put(r, e->c, ts[i], r->bytes + e->off, e->len);
	}
	free(ts);
	r->nr_batch = 0;
	r->nr_bytes = 0;
	return ret;
}

/* Only a loopback writer's pids are pids of this host. */
static void dr_note_pid(void *ctx, const uint8_t *rec, uint32_t len)
{
	struct dr_src *s = ctx;
	int32_t pid;

	if (len < 8)
		return;
	memcpy(&pid, rec + 4, 4);
	hvt_tdat_pids_note(&s->pids, s->r->w, s->r->rec->pid_named, pid);
}

/*
 * An event id of @s without a format in records [@data, +@size): the
 * formats again (a user event registered while recording), before the
 * packer writes those records under the reserved id -- at most every
 * DR_FORMATS_NS.
 */
static void dr_formats_again(struct hvt_tdat_rset *r, struct dr_src *s,
			     const uint8_t *data, uint32_t size, uint64_t ts)
{
	struct hvtrace_daemon_events evs = {0};
	struct hvt_page_iter it;
	int item;

	if (hvt_host_now_ns() - s->formats_at < DR_FORMATS_NS)
		return;
	hvt_page_iter_init(&it, data, size, ts);
	while ((item = hvt_page_next(&it)) > 0) {
		uint16_t id;

		if (item != HVT_ITEM_DATA || it.len < 2)
			continue;
		memcpy(&id, it.payload, 2);
		if ((s->known[id / 8] >> (id % 8)) & 1)
			continue;
		if (!hvt_rr_fetch_formats(r, s, &evs))
			hvt_rr_place_formats(r, s, &evs);
		hvtrace_daemon_events_free(&evs);
		return;
	}
}

/*
 * Records of a daemon that sends no clock model: their times converted
 * by hvtraced (TO_HOST, one call for the page), then packed one by one.
 */
static int dr_put_asked(struct hvt_tdat_rset *r, struct dr_cpu *c,
			const struct hvt_tdat_page *pg, uint64_t *end_ts)
{
	struct dr_src *s = c->src;
	struct hvt_page_iter it;
	uint64_t *ts, err = 0;
	uint32_t n = 0, i;
	int item, ret;

	ts = malloc((pg->size / 8 + 1) * sizeof(*ts));
	if (!ts)
		return hvt_err(-ENOMEM, "out of memory");
	hvt_page_iter_init(&it, pg->data, pg->size, pg->ts);
	while ((item = hvt_page_next(&it)) > 0)
		if (item == HVT_ITEM_DATA)
			ts[n++] = it.ts;
	*end_ts = it.ts;
	ret = n ? hvtrace_daemon_feed_to_host(r->feed, s->rec.id, ts, ts, n,
					      &err)
		: 0;
	if (n && !ret)
		dr_sync_err(s, err);
	hvt_page_iter_init(&it, pg->data, pg->size, pg->ts);
	for (i = 0; !ret && (item = hvt_page_next(&it)) > 0;) {
		uint16_t id;

		if (item != HVT_ITEM_DATA)
			continue;
		if (it.len < sizeof(struct hvt_common_fields)) {
			s->st.errors++;
			i++;
			continue;
		}
		memcpy(&id, it.payload, 2);
		if (pg->idmap[id] == pg->unknown_id)
			s->st.unknown++;
		if (pg->note)
			pg->note(pg->note_ctx, it.payload, it.len);
		ret = hvt_tdat_rcpu_put_event_id(&c->rc, ts[i++], it.payload,
						 it.len, pg->idmap[id]);
	}
	free(ts);
	return ret;
}

/* Data [@c->pos, @read) of reader page @page into the packer. */
static int dr_pack(struct hvt_tdat_rset *r, struct dr_cpu *c,
		   const uint8_t *page, uint32_t read)
{
	struct dr_src *s = c->src;
	struct hvtrace_clock_map map;
	struct hvt_clock_affine clk;
	uint64_t unknown = s->st.unknown, end_ts, err;
	struct hvt_tdat_page pg = {
		.data = page + HVT_PAGE_HDR_SIZE + c->pos,
		.size = read - c->pos,
		.ts = c->ts,
		.clk = &clk,
		.idmap = s->idmap,
		.unknown_id = (uint16_t)r->rec->ids.unknown_id,
		.note = s->rec.writer_kind == HVT_WRITER_LOOPBACK ? dr_note_pid
								  : NULL,
		.note_ctx = s,
	};
	int ret;

	if (s->rec.writer_kind == HVT_WRITER_HYP) {
		/* Its pids named in a copy (the ring is the daemon's). */
		if (!c->hyp_page)
			c->hyp_page = malloc(s->rec.subbuf_size);
		if (!c->hyp_page)
			return hvt_err(-ENOMEM, "out of memory");
		memcpy(c->hyp_page, pg.data, pg.size);
		hvt_tdat_hyp_pids(c->hyp_page, pg.size, pg.ts);
		pg.data = c->hyp_page;
	}
	dr_formats_again(r, s, pg.data, pg.size, pg.ts);
	if (hvtrace_daemon_feed_clock(r->feed, s->rec.id, &map)) {
		ret = dr_put_asked(r, c, &pg, &end_ts);
	} else {
		clk.identity = !map.clock_id || map.clock_id == HVT_CLOCK_HOST_NS;
		clk.synced = map.flags & HVTRACE_CLOCK_SYNCED;
		clk.rate_int = map.rate_int;
		clk.rate_frac = map.rate_frac;
		clk.base_writer = map.base_writer;
		clk.base_host = map.base_host;
		hvtrace_clock_map_to_host(&map, pg.ts, &err);
		dr_sync_err(s, err);
		ret = hvt_tdat_rcpu_put_page(&c->rc, &pg, &end_ts);
	}
	r->rec->ids.unknown_total += s->st.unknown - unknown;
	c->pos = read;
	c->ts = end_ts;
	return ret;
}

/*
 * What the ring of CPU @c has now (at most @max reader pages), packed.
 * Return: the reader pages that brought records, or -errno.
 */
static int dr_read_cpu(struct hvt_tdat_rset *r, struct dr_cpu *c,
		       unsigned int max)
{
	uint32_t sb = c->src->rec.subbuf_size;
	unsigned int k;
	int ret, n = 0;

	for (k = 0; k < max; k++) {
		const struct hvt_trace_buffer_meta *m;
		const uint8_t *page;
		uint32_t id, read;

		ret = hvtrace_ring_get_reader(c->ring);
		if (ret)
			return ret;
		m = hvtrace_ring_meta(c->ring);
		id = m->reader.id;
		read = m->reader.read;
		page = hvtrace_ring_subbuf(c->ring, id);
		if (!page)
			return hvt_err(-EPROTO, "reader id %u out of range",
				       id);
		if (read > sb - HVT_PAGE_HDR_SIZE)
			read = sb - HVT_PAGE_HDR_SIZE;
		if (!c->have_page || id != c->page_id) {
			/* A new reader page: its losses, then its records. */
			uint64_t lost = m->reader.lost_events;

			c->have_page = true;
			c->page_id = id;
			c->pos = 0;
			memcpy(&c->ts, page, 8);
			if (lost) {
				ret = hvt_tdat_rcpu_put_lost(
					&c->rc, lost,
					lost != HVTRACE_LOST_UNKNOWN);
				if (ret)
					return ret;
			}
		}
		if (read <= c->pos)
			break; /* nothing new */
		ret = dr_pack(r, c, page, read);
		if (ret)
			return ret;
		n++;
	}
	return n;
}

/* Every ring of remote @s, RR_PAGES_PER_CPU pages each at most: the
 * records packed, or a negative errno. */
static int dr_read_src(struct hvt_tdat_rset *r, struct dr_src *s)
{
	uint32_t c;
	int ret, n = 0;

	for (c = 0; c < s->rec.nr_cpus; c++) {
		if (!s->cpu[c].ring)
			continue;
		ret = dr_read_cpu(r, &s->cpu[c], RR_PAGES_PER_CPU);
		if (ret < 0)
			return ret;
		n += ret;
	}
	return n;
}

/* Every open ring read once; the reader pages packed, or -errno. */
static int dr_read_all(struct hvt_tdat_rset *r)
{
	struct hvtrace_daemon_page *pg;
	unsigned int i;
	int ret, n = 0;

	for (i = 0; i < r->nr_src; i++) {
		if (r->src[i]->finished)
			continue;
		ret = dr_read_src(r, r->src[i]);
		if (ret < 0)
			return ret;
		n += ret;
	}
	/* Pages of no ring (none is expected): not kept. */
	while (hvtrace_daemon_feed_pending(r->feed) &&
	       hvtrace_daemon_feed_next(r->feed, 0, &pg) > 0)
		free(pg);
	return n;
}

/* Wait up to @ms for bytes from hvtraced; 1 when some came. */
static int dr_wait(struct hvt_tdat_rset *r, int ms)
{
	struct pollfd pfd = {.fd = hvtrace_daemon_feed_fd(r->feed),
			     .events = POLLIN};
	int ret = poll(&pfd, 1, ms);

	if (ret < 0 && errno != EINTR)
		return hvt_err(-errno, "poll: %s", strerror(errno));
	return ret > 0;
}

int hvt_rr_open_rings(struct hvt_tdat_rset *r)
{
	unsigned int i;
	uint32_t c;
	int ret;

	for (i = 0; i < r->nr_src; i++) {
		struct dr_src *s = r->src[i];

		for (c = 0; c < s->rec.nr_cpus; c++) {
			ret = hvtrace_daemon_ring_open(r->feed, s->rec.id,
						       (int)c,
						       &s->cpu[c].ring);
			if (ret)
				return hvt_err(ret, "cannot read CPU %u of "
						    "'%s' through hvtraced: "
						    "%s",
					       c, s->name,
					       hvtrace_last_error());
		}
	}
	return 0;
}

void hvt_rr_close_rings(struct dr_src *s)
{
	uint32_t c;

	for (c = 0; s->cpu && c < s->rec.nr_cpus; c++) {
		struct dr_cpu *cp = &s->cpu[c];

		if (!cp->ring)
			continue;
		/* Losses no page carried: after the CPU's last record. */
		s->st.trailing_lost += hvtrace_ring_take_trailing_lost(cp->ring);
		s->st.errors += hvtrace_ring_errors(cp->ring);
		hvtrace_ring_close(cp->ring);
		cp->ring = NULL;
	}
}

static void dr_finish(struct dr_src *s)
{
	hvt_rr_close_rings(s);
	s->finished = s->st.finished = true;
}

/*
 * Everything @s committed until now: DRAIN, the rings read while its
 * pages come (every remote's: the feed is one), then what came before
 * the answer.  -ENOENT: the remote went away meanwhile.
 */
static int dr_drain_src(struct hvt_tdat_rset *r, struct dr_src *s)
{
	uint64_t idle_since = hvt_host_now_ns();
	unsigned int pass;
	int ret, n;

	ret = hvtrace_daemon_feed_drain_start(r->feed, s->rec.id);
	while (!ret) {
		n = dr_read_all(r);
		if (n < 0)
			return n;
		/* Answered (other remotes may go on sending)? */
		ret = hvtrace_daemon_feed_drained(r->feed);
		if (ret)
			break;
		if (n) {
			idle_since = hvt_host_now_ns();
			continue;
		}
		/* Nothing queued, nothing whole received: wait for bytes. */
		ret = dr_wait(r, RR_WAIT_MS);
		if (ret < 0)
			return ret;
		ret = 0;
		if (hvt_host_now_ns() - idle_since >=
		    (uint64_t)HVTRACE_DAEMON_TIMEOUT_MS * 1000000ULL)
			return hvt_err(-ETIMEDOUT,
				       "hvtraced did not answer a DRAIN "
				       "within %d ms",
				       HVTRACE_DAEMON_TIMEOUT_MS);
	}
	if (ret < 0)
		return ret;
	/* Answered: the drained pages are all queued at the rings (bounded:
	 * a writer still running keeps sending). */
	for (pass = 0; pass < RR_DRAIN_PASSES; pass++) {
		n = dr_read_src(r, s);
		if (n < 0)
			return n;
		if (!n)
			break;
	}
	return 0;
}

/* The guest kernels' rings, then every ring once; or wait @wait_ms. */
static int dr_pump(struct hvt_tdat_rset *r, int wait_ms)
{
	int ret, kn, n;

	/* The guest kernels' rings first: when they gave records, no wait
	 * for the remotes.  Only the remotes' pages count: the guest
	 * kernel never stops writing, so it must not keep a drain going. */
	kn = hvt_rk_pump(r, RR_KRING_MAX);
	if (kn < 0)
		return kn;
	ret = dr_flush_batch(r);
	if (ret)
		return ret;
	n = dr_read_all(r);
	if (n || kn || !wait_ms)
		return n;
	ret = dr_wait(r, wait_ms);
	if (ret <= 0)
		return ret;
	return dr_read_all(r);
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
			dr_finish(s);
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
	ret = dr_pump(r, kn ? 0
			    : (int)(max_wait_ms > RR_WAIT_MS ? RR_WAIT_MS
							     : max_wait_ms));
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
			ret = dr_drain_src(r, s);
			if (ret < 0 && ret != -ENOENT)
				return ret;
			dr_finish(s);
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

		/* What was committed until now; a remote that went away
		 * meanwhile has nothing more to give. */
		if (!s->finished)
			dr_drain_src(r, s);
	}
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

		hvt_rr_close_rings(s);
		for (c = 0; c < s->rec.nr_cpus && !ret; c++)
			ret = hvtrace_pack_flush(&s->cpu[c].rc.pack);
	}
	return ret;
}
