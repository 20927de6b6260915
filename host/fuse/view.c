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
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuse-local.h"
#include "../proto/dfeed.h"

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

	for (i = 0; r->cpu && i < r->ncpu; i++) {
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
	cpu = calloc(ncpu, sizeof(*cpu));
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
	unsigned int i;
	int ret;

	ret = hvtrace_decoder_new(r->subbuf_size ? r->subbuf_size : 4096, &d);
	if (ret)
		return ret;
	hvtrace_decoder_add_builtin(d, r->writer_kind);
	for (i = 0; i < r->nev; i++)
		if (r->ev[i].format)
			/* A format the built-ins hold already is the same
			 * event (-EEXIST); a bad one prints as unknown. */
			hvtrace_decoder_add_format(d, r->ev[i].system,
						   r->ev[i].format,
						   strlen(r->ev[i].format));
	hvtrace_decoder_free(r->dec);
	r->dec = d;
	return 0;
}

int fz_remote_set_events(struct fz_remote *r, struct fz_event *ev,
			 unsigned int nev, char *header_page,
			 char *header_event)
{
	bool same = nev == r->nev;
	unsigned int i;

	for (i = 0; same && i < nev; i++)
		same = ev[i].id == r->ev[i].id &&
		       !strcmp(ev[i].name, r->ev[i].name) &&
		       !strcmp(ev[i].system, r->ev[i].system);
	fz_events_free(r->ev, r->nev);
	r->ev = ev;
	r->nev = nev;
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

static void fz_comm(struct fz_remote *r, const uint8_t *rec, uint32_t len);

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
};

static int chunk_add(void *arg, uint64_t ts, const uint8_t *p, uint32_t len)
{
	struct chunk_build *b = arg;
	struct fz_chunk *c = b->c;
	struct fz_ev *e;

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
	e->off = (uint32_t)b->data_len;
	e->len = len;
	memcpy(c->data + b->data_len, p, len);
	b->data_len += len;
	c->bytes += ev_bytes(len);
	return 0;
}

struct fz_chunk *fz_chunk_from_page(const uint8_t *page, uint32_t len,
				    uint64_t extra_lost, int *err)
{
	struct chunk_build b = {0};
	uint64_t lost = 0;
	int n;

	*err = 0;
	n = hvt_dpage_walk(page, len, &lost, NULL, NULL);
	if (n < 0) {
		*err = -EBADMSG;
		return NULL;
	}
	b.c = calloc(1, sizeof(*b.c));
	if (!b.c) {
		*err = -ENOMEM;
		return NULL;
	}
	b.first_lost = lost == UINT64_MAX ? FZ_LOST_UNKNOWN : lost;
	lost_add(&b.first_lost, extra_lost);
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
	n = hvt_dpage_walk(page, len, &lost, chunk_add, &b);
	if (n < 0) {
		fz_chunk_free(b.c);
		*err = -ENOMEM;
		return NULL;
	}
	return b.c;
}

/* The loss a writer reported counts as overrun or as dropped by mode. */
static void account_writer_loss(struct fz_remote *r, struct fz_cpu *q,
				uint64_t lost)
{
	if (!lost || lost == FZ_LOST_UNKNOWN)
		return;
	if (r->mode == HVT_MODE_OVERWRITE)
		q->overrun += lost;
	else
		q->dropped += lost;
}

void fz_ingest_lost(struct fz_remote *r, uint32_t cpu, uint64_t lost)
{
	struct fz_cpu *q;

	if (!r->cpu || cpu >= r->nr_cpus || !lost)
		return;
	q = &r->cpu[cpu];
	account_writer_loss(r, q, lost);
	if (lost == FZ_LOST_UNKNOWN)
		q->pending_unknown = true;
	else
		q->pending_lost += lost;
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

	/* Records lost before the dropped ones are lost before the next. */
	if (c->pos < c->n)
		lost_add(&lost, c->ev[c->pos].lost);
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

void fz_ingest(struct fz_remote *r, uint32_t cpu, struct fz_chunk *c)
{
	struct fz_cpu *q;
	uint32_t i;

	if (!r->cpu || cpu >= r->nr_cpus) {
		fz_chunk_free(c);
		return;
	}
	q = &r->cpu[cpu];
	if (!c->n) {
		/* A page without records: only its loss. */
		if (c->ev)
			fz_ingest_lost(r, cpu, c->ev[0].lost);
		fz_chunk_free(c);
		return;
	}
	account_writer_loss(r, q, c->ev[0].lost);
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
	if (r->dec)
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

			lost_add(&lost, c->ev[0].lost);
			q->dropped += c->n;
			if (lost == FZ_LOST_UNKNOWN)
				q->pending_unknown = true;
			else
				q->pending_lost += lost;
			fz_chunk_free(c);
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
	r->data_gen++;
	if (r->v->wake)
		r->v->wake(r->v, r);
	pthread_cond_broadcast(&r->v->cond);
}

/* --- consuming ---------------------------------------------------------- */

/* The next unconsumed record of @q, or NULL. */
static struct fz_ev *q_cur(struct fz_cpu *q, struct fz_chunk **cp)
{
	q_trim(q);
	if (!q->head)
		return NULL;
	*cp = q->head;
	return &q->head->ev[q->head->pos];
}

static void q_advance(struct fz_cpu *q)
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
	for (i = 0; i < r->nr_cpus; i++)
		if ((cpu < 0 || (unsigned int)cpu == i) && r->cpu[i].queued)
			return true;
	return false;
}

void fz_reset(struct fz_remote *r, int cpu)
{
	unsigned int i;

	for (i = 0; r->cpu && i < r->ncpu; i++) {
		struct fz_cpu *q = &r->cpu[i];
		struct fz_chunk *c, *n;

		if (cpu >= 0 && (unsigned int)cpu != i)
			continue;
		for (c = q->head; c; c = n) {
			n = c->next;
			fz_chunk_free(c);
		}
		q->head = q->tail = NULL;
		q->queued = q->bytes = 0;
		q->pending_lost = 0;
		q->pending_unknown = false;
	}
	r->data_gen++;
}

static uint64_t ev_clock(const struct fz_remote *r, const struct fz_ev *e)
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

uint32_t fz_take_raw(struct fz_remote *r, uint32_t cpu, uint8_t *page)
{
	struct raw_out out = {.page = page};
	struct hvtrace_pack pk;
	struct fz_cpu *q;
	struct fz_chunk *c;
	struct fz_ev *e;
	uint32_t taken = 0;

	if (!r->cpu || cpu >= r->nr_cpus)
		return 0;
	q = &r->cpu[cpu];
	if (!q_cur(q, &c))
		return 0;
	if (hvtrace_pack_init(&pk, r->subbuf_size, raw_emit, &out))
		return 0;
	/*
	 * Feed records until the packer closes a page: that page holds the
	 * records fed before the one that did not fit, which stays queued.
	 * A loss starts a page, so one met after the first record ends it.
	 */
	while ((e = q_cur(q, &c))) {
		if (e->lost) {
			if (taken)
				break;
			hvtrace_pack_add_lost(
				&pk, e->lost == FZ_LOST_UNKNOWN ? 0 : e->lost,
				e->lost != FZ_LOST_UNKNOWN);
		}
		if (hvtrace_pack_add_event(&pk, ev_clock(r, e), c->data + e->off,
					e->len) ||
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

/* --- text ----------------------------------------------------------------- */

struct text_buf {
	char *p;
	size_t len, cap;
};

static int tb_reserve(struct text_buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return 0;
	{
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	return 0;
}

static void tb_printf(struct text_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tb_printf(struct text_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || tb_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* A loopback writer runs here: name its threads from /proc. */
static void fz_comm(struct fz_remote *r, const uint8_t *rec, uint32_t len)
{
	int32_t pid;

	if (len < 8 || r->writer_kind != HVT_WRITER_LOOPBACK)
		return;
	memcpy(&pid, rec + 4, 4);
	hvt_dcomm_local(r->dec, pid);
}

/* One record (and the loss before it) as trace_pipe lines. */
static int fz_line(struct fz_remote *r, uint32_t cpu, const struct fz_chunk *c,
		   const struct fz_ev *e, struct text_buf *b)
{
	struct hvtrace_record rec;
	unsigned int flags = 0;
	int n;

	if (e->lost) {
		if (tb_reserve(b, 64))
			return -ENOMEM;
		n = hvtrace_format_lost((int)cpu,
					e->lost == FZ_LOST_UNKNOWN
						? HVTRACE_LOST_UNKNOWN
						: e->lost,
					b->p + b->len, 64);
		if (n > 0 && n < 64)
			b->len += (size_t)n;
	}
	if (!r->dec && fz_remote_decoder(r))
		return -ENOMEM;
	fz_comm(r, c->data + e->off, e->len);
	memset(&rec, 0, sizeof(rec));
	rec.ts = e->ts;
	rec.host_ns = e->host;
	rec.data = c->data + e->off;
	rec.size = e->len;
	rec.cpu = (int)cpu;
	if (r->clock == FZ_CLOCK_NATIVE && r->clock_id == HVT_CLOCK_COUNTER)
		flags |= HVTRACE_TEXT_RAW_TS;
	for (;;) {
		size_t room;

		if (tb_reserve(b, 256))
			return -ENOMEM;
		room = b->cap - b->len;
		n = hvtrace_decoder_format(r->dec, &rec, ev_clock(r, e), flags,
					   b->p + b->len, room);
		if (n < 0)
			return n;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return 0;
		}
		if (tb_reserve(b, (size_t)n + 1))
			return -ENOMEM;
	}
}

/* The CPU whose next record is the oldest (consuming cursor). */
static int pick_cpu(struct fz_remote *r, int cpu)
{
	struct fz_chunk *c;
	uint64_t best_ts = 0;
	int best = -1;
	unsigned int i;

	for (i = 0; i < r->nr_cpus; i++) {
		struct fz_ev *e;

		if (cpu >= 0 && (unsigned int)cpu != i)
			continue;
		e = q_cur(&r->cpu[i], &c);
		if (e && (best < 0 || ev_clock(r, e) < best_ts)) {
			best = (int)i;
			best_ts = ev_clock(r, e);
		}
	}
	return best;
}

size_t fz_take_text(struct fz_remote *r, int cpu, char *buf, size_t size,
		    char **rest, size_t *rest_len)
{
	struct text_buf line = {0};
	size_t n = 0;

	*rest = NULL;
	*rest_len = 0;
	if (!r->cpu)
		return 0;
	while (n < size) {
		struct fz_chunk *c = NULL;
		struct fz_ev *e;
		int i = pick_cpu(r, cpu);

		if (i < 0)
			break;
		e = q_cur(&r->cpu[i], &c);
		if (!e)
			break;
		line.len = 0;
		if (fz_line(r, (uint32_t)i, c, e, &line))
			break;
		if (n + line.len > size) {
			if (n)
				break; /* the next read gets it */
			/* A read smaller than one line: the rest waits for
			 * the next read. */
			memcpy(buf, line.p, size);
			*rest = malloc(line.len - size);
			if (*rest) {
				memcpy(*rest, line.p + size, line.len - size);
				*rest_len = line.len - size;
			}
			n = size;
			q_advance(&r->cpu[i]);
			break;
		}
		memcpy(buf + n, line.p, line.len);
		n += line.len;
		q_advance(&r->cpu[i]);
	}
	free(line.p);
	if (n)
		r->data_gen++;
	return n;
}

char *fz_trace_text(struct fz_remote *r, int cpu, size_t *len)
{
	struct text_buf b = {0};
	struct cur {
		struct fz_chunk *c;
		uint32_t i;
	} *cur = NULL;
	uint64_t entries = 0, written = 0;
	unsigned int i;

	if (r->cpu)
		cur = calloc(r->nr_cpus + 1, sizeof(*cur));
	for (i = 0; r->cpu && i < r->nr_cpus; i++) {
		if (cpu >= 0 && (unsigned int)cpu != i)
			continue;
		entries += r->cpu[i].queued;
		written += r->cpu[i].queued + r->cpu[i].overrun;
		if (cur) {
			cur[i].c = r->cpu[i].head;
			cur[i].i = cur[i].c ? cur[i].c->pos : 0;
		}
	}
	tb_printf(&b,
		  "# tracer: nop\n"
		  "#\n"
		  "# entries-in-buffer/entries-written: %llu/%llu   #P:%u\n"
		  "#\n"
		  "#                                _-----=> "
		  "irqs-off/BH-disabled\n"
		  "#                               / _----=> need-resched\n"
		  "#                              | / _---=> hardirq/softirq\n"
		  "#                              || / _--=> preempt-depth\n"
		  "#                              ||| / _-=> migrate-disable\n"
		  "#                              |||| /     delay\n"
		  "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
		  "#              | |         |   |||||     |         |\n",
		  (unsigned long long)entries, (unsigned long long)written,
		  r->nr_cpus);
	/* Merge by time without consuming: a cursor per CPU. */
	while (cur) {
		int best = -1;
		uint64_t best_ts = 0;

		for (i = 0; i < r->nr_cpus; i++) {
			struct cur *k = &cur[i];

			if (cpu >= 0 && (unsigned int)cpu != i)
				continue;
			while (k->c && k->i >= k->c->n) {
				k->c = k->c->next;
				k->i = k->c ? k->c->pos : 0;
			}
			if (k->c && (best < 0 ||
				     ev_clock(r, &k->c->ev[k->i]) < best_ts)) {
				best = (int)i;
				best_ts = ev_clock(r, &k->c->ev[k->i]);
			}
		}
		if (best < 0)
			break;
		if (fz_line(r, (uint32_t)best, cur[best].c,
			    &cur[best].c->ev[cur[best].i], &b))
			break;
		cur[best].i++;
	}
	free(cur);
	if (!b.p)
		tb_printf(&b, "%s", "");
	*len = b.len;
	return b.p;
}

static void ts_line(struct text_buf *b, const struct fz_remote *r,
		    const char *label, uint64_t t)
{
	if (r->clock == FZ_CLOCK_NATIVE && r->clock_id == HVT_CLOCK_COUNTER)
		tb_printf(b, "%s %llu\n", label, (unsigned long long)t);
	else
		tb_printf(b, "%s %5llu.%06llu\n", label,
			  (unsigned long long)(t / 1000000000ULL),
			  (unsigned long long)(t % 1000000000ULL / 1000));
}

char *fz_stats_text(struct fz_remote *r, uint32_t cpu, size_t *len)
{
	struct text_buf b = {0};
	struct fz_cpu none = {0}, *q = &none;
	struct fz_chunk *c;
	struct fz_ev *e;
	uint64_t oldest = 0, now;

	if (r->cpu && cpu < r->nr_cpus)
		q = &r->cpu[cpu];
	e = q == &none ? NULL : q_cur(q, &c);
	if (e)
		oldest = ev_clock(r, e);
	now = r->clock == FZ_CLOCK_MONO ? hvt_host_now_ns()
	      : q->tail && q->tail->n	? q->tail->ev[q->tail->n - 1].ts
					: 0;
	tb_printf(&b,
		  "entries: %llu\noverrun: %llu\ncommit overrun: 0\n"
		  "bytes: %llu\n",
		  (unsigned long long)q->queued, (unsigned long long)q->overrun,
		  (unsigned long long)q->bytes);
	ts_line(&b, r, "oldest event ts:", oldest);
	ts_line(&b, r, "now ts:", now);
	tb_printf(&b, "dropped events: %llu\nread events: %llu\n",
		  (unsigned long long)q->dropped, (unsigned long long)q->read);
	*len = b.len;
	return b.p;
}

void fz_errlog_add(struct fz_remote *r, const char *loc, const char *msg,
		   const char *cmd, unsigned int pos)
{
	struct text_buf b = {.p = r->errlog,
			     .len = r->errlog_len,
			     .cap = r->errlog ? r->errlog_len + 1 : 0};
	uint64_t t = hvt_host_now_ns();
	size_t cl = strcspn(cmd, "\n");

	if (pos > cl)
		pos = (unsigned int)cl;
	/* The kernel keeps the last 16: drop the oldest entry. */
	if (r->errlog_n >= FZ_ERRLOG_MAX && b.p) {
		char *next = strstr(b.p + 1, "\n[");

		if (next) {
			next++;
			b.len -= (size_t)(next - b.p);
			memmove(b.p, next, b.len + 1);
			r->errlog_n--;
		}
	}
	tb_printf(&b, "[%5llu.%06llu] %s: error: %s\n  Command: %.*s\n%*s^\n",
		  (unsigned long long)(t / 1000000000ULL),
		  (unsigned long long)(t % 1000000000ULL / 1000), loc, msg,
		  (int)cl, cmd, (int)pos + 11, "");
	r->errlog = b.p;
	r->errlog_len = b.len;
	r->errlog_n++;
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
