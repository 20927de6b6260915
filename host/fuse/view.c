// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the model behind hvtrace mount (see fuse-local.h, docs/fuse.md).
 *
 * Each remote has, per CPU, a queue of the records its source delivered:
 * that queue is what the view shows as the remote's ring buffer.  `trace`
 * renders it without consuming; `trace_pipe` and `trace_pipe_raw`
 * consume it.  The queue holds at most the writer's own ring size
 * (buffer_size_kb); beyond that the writer's mode decides, as a ring
 * would: overwrite mode drops the oldest records (overrun), consume mode
 * drops the new ones (dropped).  Either way the loss is carried to the
 * next record a reader gets, so text shows "CPU:N [LOST n EVENTS]" and
 * raw pages carry RB_MISSED_EVENTS|RB_MISSED_STORED and the count.
 *
 * Records keep the writer's timestamp and the host CLOCK_MONOTONIC time
 * the source converted it to when it arrived.  The view's trace_clock
 * picks which one text and raw pages show; raw pages are re-encoded by
 * the trace.dat packer (deltas recomputed, TIME_EXTEND where needed), so
 * any clock comes out as valid ftrace sub-buffers.
 *
 * This file holds the remotes, ingest, consuming, raw pages and
 * trace_clock; view_text.c renders the records as text.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs-local.h"
#include "kmap.h"
#include <hvtrace-daemon.h>

int fz_view_init(struct fz_view *v)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	memset(v, 0, sizeof(*v));
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->cond, NULL);
	v->host_cpus = n > 0 ? (unsigned int)n : 1;
	return 0;
}

void fz_view_fini(struct fz_view *v)
{
	pthread_mutex_lock(&v->lock);
	while (v->remotes)
		fz_remote_remove(v->remotes);
	pthread_mutex_unlock(&v->lock);
	pthread_cond_destroy(&v->cond);
	pthread_mutex_destroy(&v->lock);
}

/* --- remotes ------------------------------------------------------------- */

struct fz_remote *fz_remote_add(struct fz_view *v, const char *name,
				const struct fz_src_ops *ops, void *priv)
{
	struct fz_remote *r = calloc(1, sizeof(*r)), **pp;

	if (!r)
		return NULL;
	r->v = v;
	r->refs = 1;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->ops = ops;
	r->priv = priv;
	r->tracing_on = true;
	r->clock = FZ_CLOCK_MONO;
	for (pp = &v->remotes; *pp; pp = &(*pp)->next)
		;
	*pp = r;
	return r;
}

struct fz_remote *fz_remote_find(struct fz_view *v, const char *name)
{
	struct fz_remote *r;

	for (r = v->remotes; r; r = r->next)
		if (!strcmp(r->name, name))
			return r;
	return NULL;
}

void fz_remote_get(struct fz_remote *r)
{
	r->refs++;
}

void fz_chunk_free(struct fz_chunk *c)
{
	if (!c)
		return;
	free(c->ev);
	free(c->data);
	free(c);
}

static void fz_queues_free(struct fz_remote *r)
{
	unsigned int i;

	for (i = 0; r->cpu && i < 2 * r->ncpu; i++) {
		struct fz_chunk *c, *n;

		for (c = r->cpu[i].head; c; c = n) {
			n = c->next;
			fz_chunk_free(c);
		}
	}
	free(r->cpu);
	r->cpu = NULL;
	r->ncpu = 0;
}

void fz_events_free(struct fz_event *ev, unsigned int nev)
{
	unsigned int i;

	for (i = 0; i < nev; i++)
		free(ev[i].format);
	free(ev);
}

void fz_remote_put(struct fz_remote *r)
{
	if (--r->refs)
		return;
	fz_queues_free(r);
	fz_events_free(r->ev, r->nev);
	free(r->header_page);
	free(r->header_event);
	hvtrace_decoder_free(r->dec);
	fz_kmap_free(r->kmap);
	hvtrace_decoder_free(r->kdec);
	free(r->kprintk);
	free(r->kcmdlines);
	free(r->errlog);
	free(r);
}

void fz_remote_remove(struct fz_remote *r)
{
	struct fz_remote **pp;

	for (pp = &r->v->remotes; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			r->next = NULL;
			r->gone = true;
			if (r->v->wake)
				r->v->wake(r->v, r);
			pthread_cond_broadcast(&r->v->cond);
			fz_remote_put(r);
			return;
		}
}

int fz_remote_set_geometry(struct fz_remote *r, uint32_t nr_cpus,
			   uint32_t nr_subbufs, uint32_t subbuf_size,
			   uint32_t writer_kind, uint32_t mode,
			   uint32_t clock_id, uint64_t generation)
{
	unsigned int ncpu;
	struct fz_cpu *cpu;

	if (r->loaded && r->nr_cpus == nr_cpus && r->nr_subbufs == nr_subbufs &&
	    r->subbuf_size == subbuf_size && r->generation == generation)
		return 0;
	if (!nr_cpus || nr_cpus > HVT_ABI_MAX_CPUS ||
	    subbuf_size < HVT_ABI_MIN_SUBBUF_SIZE ||
	    subbuf_size > HVT_ABI_MAX_SUBBUF_SIZE)
		return -EINVAL;
	/* per_cpu shows at least the host's CPUs: tools that size their
	 * CPU loops by the host (libtracefs, trace-cmd) find every file;
	 * CPUs the remote does not have stay empty. */
	ncpu = nr_cpus > r->v->host_cpus ? nr_cpus : r->v->host_cpus;
	if (r->knr_cpus > ncpu)
		ncpu = r->knr_cpus;
	cpu = calloc(2 * (size_t)ncpu, sizeof(*cpu));
	if (!cpu)
		return -ENOMEM;
	fz_queues_free(r);
	r->cpu = cpu;
	r->ncpu = ncpu;
	r->nr_cpus = nr_cpus;
	r->nr_subbufs = nr_subbufs;
	r->subbuf_size = subbuf_size;
	r->writer_kind = writer_kind;
	r->mode = mode;
	r->clock_id = clock_id;
	r->generation = generation;
	r->limit = (uint64_t)nr_subbufs * subbuf_size;
	if (r->limit < 2ULL * subbuf_size)
		r->limit = 2ULL * subbuf_size;
	if (clock_id == HVT_CLOCK_HOST_NS)
		r->clock = FZ_CLOCK_MONO;
	r->loaded = true;
	r->data_gen++;
	if (r->v->wake)
		r->v->wake(r->v, r);
	return fz_remote_decoder(r);
}

int fz_remote_decoder(struct fz_remote *r)
{
	struct hvtrace_decoder *d;
	struct hvt_tep_text *t;
	unsigned int i, n;
	int ret, *rets;

	ret = hvtrace_decoder_new(r->subbuf_size ? r->subbuf_size : 4096, &d);
	if (ret)
		return ret;
	hvtrace_decoder_add_builtin(d, r->writer_kind);
	/* All in one sandbox child (hvt_decoder_add_formats()).  A format
	 * the built-ins hold already is the same event (-EEXIST); a bad one
	 * prints as unknown. */
	t = calloc(r->nuser ? r->nuser : 1, sizeof(*t));
	rets = calloc(r->nuser ? r->nuser : 1, sizeof(*rets));
	for (i = 0, n = 0; t && rets && i < r->nuser; i++)
		if (r->ev[i].format)
			t[n++] = (struct hvt_tep_text){
				.kind = HVT_TEP_FORMAT,
				.system = r->ev[i].system,
				.text = r->ev[i].format,
				.len = strlen(r->ev[i].format),
			};
	if (t && rets && n)
		hvt_decoder_add_formats(d, t, n, rets);
	free(t);
	free(rets);
	hvtrace_decoder_free(r->dec);
	r->dec = d;
	return 0;
}

static void q_empty(struct fz_cpu *q)
{
	struct fz_chunk *c, *n;

	for (c = q->head; c; c = n) {
		n = c->next;
		fz_chunk_free(c);
	}
	q->head = q->tail = NULL;
	q->queued = q->bytes = 0;
	q->pending_lost = 0;
	q->pending_unknown = false;
}

/*
 * The guest kernel's events after the source's in r->ev: served ids that
 * no event of the source has (kmap.c), their formats saying so.
 */
static int kernel_events(struct fz_remote *r)
{
	struct fz_kmap *m = r->kmap;
	struct fz_event *ev;
	uint32_t *ids;
	unsigned int i, n = r->nuser;

	for (i = r->nuser; i < r->nev; i++)
		free(r->ev[i].format);
	r->nev = r->nuser;
	if (!m || !m->nev)
		return 0;
	ids = calloc(r->nuser + 1, sizeof(*ids));
	ev = realloc(r->ev, (r->nuser + m->nev) * sizeof(*ev));
	if (!ids || !ev) {
		free(ids);
		if (ev)
			r->ev = ev;
		return -ENOMEM;
	}
	r->ev = ev;
	for (i = 0; i < r->nuser; i++)
		ids[i] = r->ev[i].id;
	fz_kmap_assign(m, ids, r->nuser);
	free(ids);
	for (i = 0; i < m->nev; i++) {
		const struct fz_kev *k = &m->ev[i];
		struct fz_event *e = &r->ev[n];

		if (!k->served)
			continue; /* no id left: its records count as lost */
		memset(e, 0, sizeof(*e));
		snprintf(e->system, sizeof(e->system), "%s", k->system);
		snprintf(e->name, sizeof(e->name), "%s", k->name);
		e->id = k->id;
		e->bit = -1;
		e->enabled = k->enabled == 1;
		e->unknown = k->enabled < 0;
		e->kernel = true;
		e->format = fz_kmap_format(k);
		if (!e->format)
			return -ENOMEM;
		n++;
		r->nev = n;
	}
	return 0;
}

int fz_remote_set_kernel(struct fz_remote *r, struct fz_kmap *map,
			 struct hvtrace_decoder *dec, uint32_t nr_cpus,
			 char *printk, char *cmdlines)
{
	unsigned int i;

	fz_kmap_free(r->kmap);
	hvtrace_decoder_free(r->kdec);
	free(r->kprintk);
	free(r->kcmdlines);
	r->kmap = map;
	r->kdec = dec;
	r->kprintk = printk;
	r->kcmdlines = cmdlines;
	if (nr_cpus > HVT_ABI_MAX_CPUS)
		nr_cpus = HVT_ABI_MAX_CPUS;
	if (r->loaded && nr_cpus > r->ncpu) {
		/* More queues: the geometry starts over. */
		r->knr_cpus = nr_cpus;
		r->loaded = false;
		fz_remote_set_geometry(r, r->nr_cpus, r->nr_subbufs,
				       r->subbuf_size, r->writer_kind, r->mode,
				       r->clock_id, r->generation);
	} else {
		/* What an earlier ring of the guest left goes. */
		for (i = 0; r->cpu && i < r->ncpu; i++)
			q_empty(fz_q(r, i, true));
		r->knr_cpus = nr_cpus;
	}
	return kernel_events(r);
}

int fz_remote_set_events(struct fz_remote *r, struct fz_event *ev,
			 unsigned int nev, char *header_page,
			 char *header_event)
{
	bool same = nev == r->nuser;
	unsigned int i;
	int ret;

	for (i = 0; same && i < nev; i++)
		same = ev[i].id == r->ev[i].id &&
		       !strcmp(ev[i].name, r->ev[i].name) &&
		       !strcmp(ev[i].system, r->ev[i].system);
	fz_events_free(r->ev, r->nev);
	r->ev = ev;
	r->nev = nev;
	r->nuser = nev;
	ret = kernel_events(r);
	if (ret)
		return ret;
	if (header_page) {
		free(r->header_page);
		r->header_page = header_page;
	}
	if (header_event) {
		free(r->header_event);
		r->header_event = header_event;
	}
	return same && r->dec ? 0 : fz_remote_decoder(r);
}

const struct fz_event *fz_event_find(const struct fz_remote *r,
				     const char *system, const char *name)
{
	unsigned int i;

	for (i = 0; i < r->nev; i++)
		if (!strcmp(r->ev[i].system, system) &&
		    !strcmp(r->ev[i].name, name))
			return &r->ev[i];
	return NULL;
}

bool fz_system_exists(const struct fz_remote *r, const char *system)
{
	unsigned int i;

	for (i = 0; i < r->nev; i++)
		if (!strcmp(r->ev[i].system, system))
			return true;
	return false;
}

/* --- ingest ------------------------------------------------------------- */

static void lost_add(uint64_t *to, uint64_t n)
{
	if (*to == FZ_LOST_UNKNOWN || n == FZ_LOST_UNKNOWN)
		*to = n ? FZ_LOST_UNKNOWN : *to;
	else
		*to += n;
}

/* Ring bytes of a record: its header, length word and payload. */
static uint32_t ev_bytes(uint32_t len)
{
	return (len <= HVT_TYPE_DATA_MAX * 4u ? 4u : 8u) + len;
}

struct chunk_build {
	struct fz_chunk *c;
	uint32_t cap_ev;
	size_t cap_data, data_len;
	uint64_t first_lost;
	const struct fz_kmap *kmap;
	uint64_t rejected; /* records left out since the last kept one */
};

bool fz_chunk_keeps(const struct fz_kmap *kmap, const void *p, uint32_t len)
{
	/* A guest kernel record the view cannot name (unknown type, no
	 * common header) or serve (larger than a page of the view's): a
	 * loss, told before the next record. */
	return fz_kmap_keep(kmap, p, len) >= 0 &&
	       ev_bytes(len) + HVT_PAGE_HDR_SIZE + 8 <= HVT_ABI_MIN_SUBBUF_SIZE;
}

static int chunk_add(void *arg, uint64_t ts, const uint8_t *p, uint32_t len)
{
	struct chunk_build *b = arg;
	struct fz_chunk *c = b->c;
	struct fz_ev *e;

	if (b->kmap && !fz_chunk_keeps(b->kmap, p, len)) {
		b->rejected++;
		return 0;
	}
	if (c->n == b->cap_ev) {
		uint32_t cap = b->cap_ev ? b->cap_ev * 2 : 64;
		struct fz_ev *v = realloc(c->ev, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->ev = v;
		b->cap_ev = cap;
	}
	if (b->data_len + len > b->cap_data) {
		size_t cap = (b->data_len + len) * 2;
		uint8_t *d = realloc(c->data, cap);

		if (!d)
			return -ENOMEM;
		c->data = d;
		b->cap_data = cap;
	}
	e = &c->ev[c->n++];
	e->ts = ts;
	e->host = ts;
	e->lost = c->n == 1 ? b->first_lost : 0;
	lost_add(&e->lost, b->rejected);
	b->rejected = 0;
	e->off = (uint32_t)b->data_len;
	e->len = len;
	memcpy(c->data + b->data_len, p, len);
	b->data_len += len;
	c->bytes += ev_bytes(len);
	return 0;
}

struct fz_chunk *fz_chunk_from_page(const uint8_t *page, uint32_t len,
				    uint64_t extra_lost,
				    const struct fz_kmap *kmap, int *err)
{
	struct chunk_build b = {.kmap = kmap};
	uint64_t lost = 0;
	int n;

	*err = 0;
	n = hvtrace_daemon_page_walk(page, len, &lost, NULL, NULL);
	b.c = calloc(1, sizeof(*b.c));
	if (!b.c) {
		*err = -ENOMEM;
		return NULL;
	}
	b.first_lost = lost == UINT64_MAX ? FZ_LOST_UNKNOWN : lost;
	lost_add(&b.first_lost, extra_lost);
	if (n < 0) {
		/* A malformed page: skipped, its events lost (how many is
		 * not known), said before the CPU's next record. */
		*err = -EBADMSG;
		n = 0;
		b.first_lost = FZ_LOST_UNKNOWN;
	}
	if (!n) {
		/* No record: only a loss, which fz_ingest() carries on to
		 * the CPU's next record. */
		if (b.first_lost) {
			b.c->ev = calloc(1, sizeof(*b.c->ev));
			if (!b.c->ev) {
				free(b.c);
				*err = -ENOMEM;
				return NULL;
			}
			b.c->ev[0].lost = b.first_lost;
		}
		return b.c;
	}
	n = hvtrace_daemon_page_walk(page, len, &lost, chunk_add, &b);
	if (n < 0) {
		fz_chunk_free(b.c);
		*err = -ENOMEM;
		return NULL;
	}
	if (!b.c->n) {
		/* Every record left out: the loss alone. */
		lost_add(&b.first_lost, b.rejected);
		b.c->ev = calloc(1, sizeof(*b.c->ev));
		if (!b.c->ev) {
			fz_chunk_free(b.c);
			*err = -ENOMEM;
			return NULL;
		}
		b.c->ev[0].lost = b.first_lost;
	} else if (b.rejected) {
		/* Left out after the last record: before the next page's. */
		b.c->tail_lost = b.rejected;
	}
	return b.c;
}

int fz_chunk_add(struct fz_chunk **cp, const struct hvtrace_record *rec,
		 uint32_t room)
{
	struct fz_chunk *c = *cp;
	uint32_t b = ev_bytes(rec->size);
	struct fz_ev *e;

	if (c && c->bytes + b > room)
		return -ENOSPC;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		*cp = c;
	}
	/* Room grows by doubling: a few allocations a chunk, none a record. */
	if (c->n == c->cap_ev) {
		uint32_t cap = c->cap_ev ? c->cap_ev * 2 : 64;
		struct fz_ev *v = realloc(c->ev, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->ev = v;
		c->cap_ev = cap;
	}
	if ((uint64_t)c->data_len + rec->size > c->cap_data) {
		uint64_t cap = c->cap_data ? 2ull * c->cap_data : 1024;
		uint8_t *d;

		while (cap < (uint64_t)c->data_len + rec->size)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -ENOMEM;
		d = realloc(c->data, cap);
		if (!d)
			return -ENOMEM;
		c->data = d;
		c->cap_data = (uint32_t)cap;
	}
	e = &c->ev[c->n++];
	e->ts = rec->ts;
	e->host = rec->host_ns;
	/* HVTRACE_LOST_UNKNOWN is FZ_LOST_UNKNOWN. */
	e->lost = rec->lost_before;
	e->off = c->data_len;
	e->len = rec->size;
	memcpy(c->data + c->data_len, rec->data, rec->size);
	c->data_len += rec->size;
	c->bytes += b;
	return 0;
}

/*
 * The loss a writer reported counts as overrun or as dropped by mode (the
 * guest kernel's ring: records it overwrote, or that the view could not
 * name, are overrun).
 */
static void account_writer_loss(struct fz_remote *r, struct fz_cpu *q,
				uint64_t lost)
{
	if (!lost || lost == FZ_LOST_UNKNOWN)
		return;
	if (r->mode == HVT_MODE_OVERWRITE || q >= r->cpu + r->ncpu)
		q->overrun += lost;
	else
		q->dropped += lost;
}

static void ingest_lost(struct fz_remote *r, struct fz_cpu *q, uint64_t lost)
{
	if (!lost)
		return;
	account_writer_loss(r, q, lost);
	if (lost == FZ_LOST_UNKNOWN)
		q->pending_unknown = true;
	else
		q->pending_lost += lost;
}

void fz_ingest_lost(struct fz_remote *r, uint32_t cpu, bool kernel,
		    uint64_t lost)
{
	if (r->cpu && cpu < (kernel ? r->knr_cpus : r->nr_cpus))
		ingest_lost(r, fz_q(r, cpu, kernel), lost);
}

/* Free chunks whose records were all consumed. */
static void q_trim(struct fz_cpu *q)
{
	while (q->head && q->head->pos >= q->head->n) {
		struct fz_chunk *c = q->head;

		q->head = c->next;
		if (!q->head)
			q->tail = NULL;
		fz_chunk_free(c);
	}
}

/* Drop the oldest chunk (overwrite); its records become a loss. */
static void drop_oldest(struct fz_cpu *q)
{
	struct fz_chunk *c = q->head;
	uint64_t lost = c->n - c->pos;
	uint32_t i;

	/* Records lost before the dropped ones, or between them (a chunk
	 * of a ring's records spans its pages), are lost before the next. */
	for (i = c->pos; i < c->n; i++)
		lost_add(&lost, c->ev[i].lost);
	q->overrun += c->n - c->pos;
	q->queued -= c->n - c->pos;
	q->bytes -= c->bytes;
	q->head = c->next;
	if (!q->head)
		q->tail = NULL;
	fz_chunk_free(c);
	q_trim(q);
	if (q->head) {
		lost_add(&q->head->ev[q->head->pos].lost, lost);
	} else if (lost == FZ_LOST_UNKNOWN) {
		q->pending_unknown = true;
	} else {
		q->pending_lost += lost;
	}
}

static void ingest(struct fz_remote *r, struct fz_cpu *q, struct fz_chunk *c);

void fz_ingest(struct fz_remote *r, uint32_t cpu, struct fz_chunk *c)
{
	if (!r->cpu || cpu >= r->nr_cpus) {
		fz_chunk_free(c);
		return;
	}
	ingest(r, fz_q(r, cpu, false), c);
}

void fz_ingest_kernel(struct fz_remote *r, uint32_t cpu, struct fz_chunk *c)
{
	if (!r->cpu || cpu >= r->knr_cpus) {
		fz_chunk_free(c);
		return;
	}
	ingest(r, fz_q(r, cpu, true), c);
}

static void ingest(struct fz_remote *r, struct fz_cpu *q, struct fz_chunk *c)
{
	uint64_t tail_lost = c->tail_lost;
	uint32_t i;

	if (!c->n) {
		/* A page without records: only its loss. */
		if (c->ev)
			ingest_lost(r, q, c->ev[0].lost);
		fz_chunk_free(c);
		return;
	}
	/* Records a guest kernel page held that the view could not name are
	 * losses inside the chunk. */
	for (i = 0; i < c->n; i++)
		account_writer_loss(r, q, c->ev[i].lost);
	if (q->pending_lost || q->pending_unknown) {
		lost_add(&c->ev[0].lost, q->pending_unknown ? FZ_LOST_UNKNOWN
							    : q->pending_lost);
		q->pending_lost = 0;
		q->pending_unknown = false;
	}
	/* Host times never go back on a CPU (a refitted clock model). */
	for (i = 0; i < c->n; i++) {
		if (q->have_host && c->ev[i].host < q->last_host)
			c->ev[i].host = q->last_host;
		q->last_host = c->ev[i].host;
		q->have_host = true;
	}
	q->received += c->n;
	/* A loopback writer's thread is named now, while it surely lives
	 * (one thread per CPU buffer: the chunk's first record says it), so
	 * every later rendering shows the same name. */
	if (r->dec && q < r->cpu + r->ncpu)
		fz_comm(r, c->data + c->ev[0].off, c->ev[0].len);
	if (q->bytes + c->bytes > r->limit) {
		if (r->mode == HVT_MODE_OVERWRITE) {
			q_trim(q);
			while (q->head && q->bytes + c->bytes > r->limit)
				drop_oldest(q);
			if (q->pending_lost || q->pending_unknown) {
				lost_add(&c->ev[0].lost,
					 q->pending_unknown ? FZ_LOST_UNKNOWN
							    : q->pending_lost);
				q->pending_lost = 0;
				q->pending_unknown = false;
			}
		} else {
			/* Full: the new records are dropped, and said so
			 * before the next one a reader gets. */
			uint64_t lost = c->n;

			for (i = 0; i < c->n; i++)
				lost_add(&lost, c->ev[i].lost);
			q->dropped += c->n;
			if (lost == FZ_LOST_UNKNOWN)
				q->pending_unknown = true;
			else
				q->pending_lost += lost;
			fz_chunk_free(c);
			ingest_lost(r, q, tail_lost);
			return;
		}
	}
	c->next = NULL;
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->queued += c->n;
	q->bytes += c->bytes;
	ingest_lost(r, q, tail_lost);
	r->data_gen++;
	if (r->v->wake)
		r->v->wake(r->v, r);
	pthread_cond_broadcast(&r->v->cond);
}

/* --- consuming ---------------------------------------------------------- */

/* The next unconsumed record of @q, or NULL. */
struct fz_ev *q_cur(struct fz_cpu *q, struct fz_chunk **cp)
{
	q_trim(q);
	if (!q->head)
		return NULL;
	*cp = q->head;
	return &q->head->ev[q->head->pos];
}

void q_advance(struct fz_cpu *q)
{
	struct fz_chunk *c = q->head;
	uint32_t b = ev_bytes(c->ev[c->pos].len);

	c->pos++;
	c->bytes -= b;
	q->bytes -= b;
	q->queued--;
	q->read++;
}

bool fz_has_data(const struct fz_remote *r, int cpu)
{
	unsigned int i;

	if (!r->cpu)
		return false;
	for (i = 0; i < 2 * r->ncpu; i++)
		if ((cpu < 0 || (unsigned int)cpu == i % r->ncpu) &&
		    fz_q_live(r, i) && r->cpu[i].queued)
			return true;
	return false;
}

void fz_reset(struct fz_remote *r, int cpu)
{
	unsigned int i;

	for (i = 0; r->cpu && i < 2 * r->ncpu; i++)
		if (cpu < 0 || (unsigned int)cpu == i % r->ncpu)
			q_empty(&r->cpu[i]);
	r->data_gen++;
}

uint64_t ev_clock(const struct fz_remote *r, const struct fz_ev *e)
{
	return r->clock == FZ_CLOCK_MONO ? e->host : e->ts;
}

struct raw_out {
	uint8_t *page;
	uint32_t size;
	bool emitted;
};

static int raw_emit(void *ctx, const uint8_t *page, uint32_t size)
{
	struct raw_out *o = ctx;

	if (o->emitted)
		return -EOVERFLOW; /* never: one page per call */
	memcpy(o->page, page, size);
	o->size = size;
	o->emitted = true;
	return 0;
}

/*
 * The queue of CPU @cpu whose next record is the older: the source's or
 * the guest kernel's (one CPU of a guest, one ring in tracefs).
 */
struct fz_cpu *fz_q_next(struct fz_remote *r, uint32_t cpu,
			 struct fz_chunk **cp, struct fz_ev **ep)
{
	struct fz_cpu *best = NULL;
	unsigned int k;

	*ep = NULL;
	for (k = 0; k < 2; k++) {
		uint32_t qi = k ? r->ncpu + cpu : cpu;
		struct fz_chunk *c;
		struct fz_ev *e;

		if (!fz_q_live(r, qi) || !(e = q_cur(&r->cpu[qi], &c)))
			continue;
		if (!best || ev_clock(r, e) < ev_clock(r, *ep)) {
			best = &r->cpu[qi];
			*cp = c;
			*ep = e;
		}
	}
	return best;
}

uint32_t fz_take_raw(struct fz_remote *r, uint32_t cpu, uint8_t *page)
{
	struct raw_out out = {.page = page};
	uint8_t rec[HVT_ABI_MIN_SUBBUF_SIZE];
	struct hvtrace_pack pk;
	struct fz_cpu *q;
	struct fz_chunk *c;
	struct fz_ev *e;
	uint32_t taken = 0;

	if (!r->cpu || cpu >= r->ncpu || !fz_q_next(r, cpu, &c, &e))
		return 0;
	if (hvtrace_pack_init(&pk, r->subbuf_size, raw_emit, &out))
		return 0;
	/*
	 * Feed records until the packer closes a page: that page holds the
	 * records fed before the one that did not fit, which stays queued.
	 * A loss starts a page, so one met after the first record ends it.
	 * The guest kernel's records go out under their served ids.
	 */
	while ((q = fz_q_next(r, cpu, &c, &e))) {
		const uint8_t *p = c->data + e->off;

		if (q >= r->cpu + r->ncpu) {
			/* Checked at ingest (at most a minimal page). */
			if (e->len > sizeof(rec) || !r->kmap)
				break;
			memcpy(rec, p, e->len);
			if (fz_kmap_rewrite(r->kmap, rec, e->len)) {
				/* No id now (none was left): a loss, told
				 * with the next record. */
				uint64_t lost = e->lost;

				lost_add(&lost, 1);
				q_advance(q);
				q->read--;
				q->overrun++;
				if (q_cur(q, &c))
					lost_add(&q_cur(q, &c)->lost, lost);
				else if (lost == FZ_LOST_UNKNOWN)
					q->pending_unknown = true;
				else
					q->pending_lost += lost;
				continue;
			}
			p = rec;
		}
		if (e->lost) {
			if (taken)
				break;
			hvtrace_pack_add_lost(
				&pk, e->lost == FZ_LOST_UNKNOWN ? 0 : e->lost,
				e->lost != FZ_LOST_UNKNOWN);
		}
		if (hvtrace_pack_add_event(&pk, ev_clock(r, e), p, e->len) ||
		    out.emitted)
			break;
		q_advance(q);
		taken++;
	}
	if (!out.emitted)
		hvtrace_pack_flush(&pk);
	hvtrace_pack_fini(&pk);
	if (!taken || !out.emitted)
		return 0;
	/* The kernel hands over whole sub-buffers: the rest is zero. */
	memset(page + out.size, 0, r->subbuf_size - out.size);
	r->data_gen++;
	return r->subbuf_size;
}

/* --- trace_clock ---------------------------------------------------------- */

static const char *native_clock(const struct fz_remote *r)
{
	return r->clock_id == HVT_CLOCK_COUNTER	  ? "counter"
	       : r->clock_id == HVT_CLOCK_MONO_NS ? "remote_mono"
						  : NULL;
}

int fz_clock_text(const struct fz_remote *r, char *buf, size_t size)
{
	const char *nat = native_clock(r);

	if (!nat)
		return snprintf(buf, size, "[mono]\n");
	return snprintf(buf, size, "%s%s%s %s%s%s\n",
			r->clock == FZ_CLOCK_MONO ? "[" : "", "mono",
			r->clock == FZ_CLOCK_MONO ? "]" : "",
			r->clock == FZ_CLOCK_NATIVE ? "[" : "", nat,
			r->clock == FZ_CLOCK_NATIVE ? "]" : "");
}

int fz_clock_parse(const struct fz_remote *r, const char *s)
{
	const char *nat = native_clock(r);
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strcspn(s, " \t\n");
	if (s[n + strspn(s + n, " \t\n")])
		return -EINVAL;
	if (n == 4 && !strncmp(s, "mono", 4))
		return FZ_CLOCK_MONO;
	if (nat && n == strlen(nat) && !strncmp(s, nat, n))
		return FZ_CLOCK_NATIVE;
	return -EINVAL;
}
