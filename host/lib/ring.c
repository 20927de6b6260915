// SPDX-License-Identifier: MIT
/*
 * libhvtrace: one CPU buffer as the Linux ring-buffer mmap ABI, for a trace
 * area and for the host kernel, and the record cursor on top of it.
 *
 * Area view (one contiguous reservation):
 *
 *   +0                      meta page (private, ours): trace_buffer_meta
 *   +meta_page_size         id 0 .. nr-1: the writer's ring slots, the area
 *                           file mapped PROT_READ over the reservation
 *   + (nr) * subbuf_size    id nr:   reader page A (private)
 *   + (nr+1) * subbuf_size  id nr+1: reader page B (private)
 *
 * get-reader asks the area reader (hvtrace_cpu_read_page()) for the next
 * validated events.  If they continue the writer sub-buffer the current
 * reader page holds, and that page carries no lost-events mark, they are
 * appended to it: same reader.id, larger reader.read, exactly as the kernel
 * hands over events a writer added to its reader page.  Otherwise they go
 * to the other reader page, which becomes reader.id.  Two private pages
 * (rather than the kernel's one) keep the kernel's rule that a new reader
 * page always has a new id, without remapping writer slots.
 *
 * Guest kernel view: a CPU of a guest kernel's ring read from guest RAM
 * (kring.c).  No writer slot is mapped (the ring's slots move with the
 * guest's reader swaps); the view is the meta page and the two private
 * reader pages, ids 0 and 1, filled by hvtrace_kring_read_page() with the
 * same append-or-switch rule as the area view.  Timestamps stay in the
 * guest's trace clock (guest-relative: host_ns == ts, and
 * hvtrace_ring_now_ns() says 0, "not related to the host's clock").
 *
 * Kernel view: per_cpu/cpuN/trace_pipe_raw mapped as the kernel lays it out
 * (meta page, then the sub-buffers) and TRACE_MMAP_IOCTL_GET_READER.
 *
 * Kernel view without the mmap ABI (before Linux 6.10, a buffer with a
 * snapshot, or HVTRACE_KERNEL_RING=read): laid out as the area view's
 * private part, a meta page of ours and two reader pages (ids 0 and 1).
 * get-reader is one read() of trace_pipe_raw into the inactive page: the
 * kernel hands over a self-contained sub-buffer (its own time_stamp, the
 * RB_MISSED_EVENTS/STORED flags and count of the losses before it), which
 * becomes reader.id with reader.read = its data bytes.  The counters come
 * from per_cpu/cpuN/stats (entries = unread + overrun + read, as the
 * kernel's meta page counts them).  Above get-reader nothing differs.
 *
 * The cursor (hvtrace_ring_peek()/consume()) is the one consumer of both:
 *
 *   walk the reader page from our position up to reader.read
 *   used up?  get-reader;  new reader.id -> start at 0 on that page
 *                           same id, larger reader.read -> keep walking
 *                           neither -> nothing pending
 *
 * Every event is bounded by the handed-over size and the sub-buffer size
 * (subbuf.h); a malformed page is counted and skipped.
 *
 * A source view (ring_source.c) is laid out as the guest kernel view; its
 * pages come from a caller's "next page" hook and are validated here.
 *
 * Each view is a backend behind struct ring_ops (ring-local.h); the cursor
 * and the common calls know none of them.  This file holds the common
 * calls, the cursor, the private reader pages' get-reader and the area and
 * guest kernel views; ring_kernel.c holds the kernel view (mmap ABI and
 * read()), ring_source.c the source view.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring-local.h"
#include "subbuf.h"

/* --- private reader pages (area, guest kernel ring) ---------------------- */

/*
 * get-reader of a view with two private reader pages: the inactive page is
 * ours to fill (nobody walks it now).  Events that continue the writer
 * sub-buffer the current reader page holds, when that page carries no
 * lost-events mark, are appended to it; others make the filled page the
 * new reader page.
 */
int ring_priv_get_reader(struct ring_priv *p,
			 int (*fill)(struct ring_priv *p, uint8_t *page,
				     struct hvtrace_page_info *info))
{
	struct hvtrace_ring *r = &p->r;
	struct hvt_trace_buffer_meta *m = r->meta;
	uint32_t cur = m->reader.id;
	uint32_t other = cur == p->ring_nr ? p->ring_nr + 1 : p->ring_nr;
	uint8_t *cpage = r->data + (size_t)cur * r->subbuf_size;
	uint8_t *opage = r->data + (size_t)other * r->subbuf_size;
	uint32_t max = r->subbuf_size - HVT_PAGE_HDR_SIZE;
	struct hvtrace_page_info info;
	uint64_t commit;
	int ret;

	ret = fill(p, opage, &info);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		memcpy(&commit, cpage + HVT_PAGE_COMMIT_OFF, 8);
		if (p->page_valid && info.seq == p->page_seq &&
		    !info.lost_events && !(commit & HVT_COMMIT_FLAGS) &&
		    commit == m->reader.read && info.size <= max - commit) {
			/* More of the same writer sub-buffer: append.  The
			 * first new event's delta is relative to the last
			 * one already on the page, as in the writer's page. */
			memcpy(cpage + HVT_PAGE_HDR_SIZE + commit,
			       opage + HVT_PAGE_HDR_SIZE, info.size);
			commit += info.size;
			memcpy(cpage + HVT_PAGE_COMMIT_OFF, &commit, 8);
			m->reader.read = (uint32_t)commit;
		} else {
			m->reader.id = other;
			m->reader.read = info.size;
			m->reader.lost_events = info.lost_events;
		}
		p->page_valid = true;
		p->page_seq = info.seq;
	}
	return 0;
}

/*
 * A zeroed handle of @size bytes (the backend's struct) whose common part
 * lies @off bytes in, for CPU @cpu; NULL: no memory.
 */
struct hvtrace_ring *ring_new(size_t size, size_t off, int cpu,
			      const struct ring_ops *ops)
{
	char *b = calloc(1, size);
	struct hvtrace_ring *r;

	if (!b)
		return NULL;
	r = (struct hvtrace_ring *)(void *)(b + off);
	r->ops = ops;
	r->cpu = cpu;
	r->page_size = (size_t)sysconf(_SC_PAGESIZE);
	return r;
}

/*
 * The private part of an area, guest kernel, source or kernel read view:
 * one anonymous reservation of resv_len bytes, the meta page first, with
 * the meta filled in and reader page @reader_id current and empty.
 */
int ring_reserve(struct hvtrace_ring *r, uint32_t reader_id)
{
	void *p = mmap(NULL, r->resv_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return hvt_err(-errno, "cannot reserve %zu bytes for the mmap "
				       "view: %s",
			       r->resv_len, strerror(errno));
	r->resv = p;
	r->meta = p;
	r->data = (uint8_t *)p + r->meta_len;
	r->meta->meta_page_size = (uint32_t)r->meta_len;
	r->meta->meta_struct_len = sizeof(*r->meta);
	r->meta->subbuf_size = r->subbuf_size;
	r->meta->nr_subbufs = r->nr_subbufs;
	r->meta->reader.id = reader_id;
	r->meta->reader.read = 0;
	return 0;
}

/* Geometry of a private view: @ring_nr writer slots, then the two reader
 * pages (A current); the caller reserves it. */
void ring_priv_setup(struct ring_priv *p, uint32_t subbuf_size,
		     uint32_t ring_nr)
{
	struct hvtrace_ring *r = &p->r;

	r->subbuf_size = subbuf_size;
	p->ring_nr = ring_nr;
	r->nr_subbufs = ring_nr + 2;
	r->meta_len = r->page_size > 4096 ? r->page_size : 4096;
	r->data_len = (size_t)r->nr_subbufs * r->subbuf_size;
	r->resv_len = r->meta_len + r->data_len;
}

/* --- area view ------------------------------------------------------------ */

struct ring_area {
	struct ring_priv p;
	struct hvtrace_area *area;
};

static struct ring_area *to_area(const struct hvtrace_ring *r)
{
	return container_of(r, struct ring_area, p.r);
}

static void ring_area_counters(struct ring_area *ra)
{
	struct hvtrace_ring *r = &ra->p.r;
	struct hvtrace_cpu_stats st;

	if (hvtrace_cpu_get_stats(ra->area, r->cpu, &st))
		return;
	/*
	 * The kernel's meta counts every committed event in 'entries', the
	 * ones overwritten in 'overrun' and the ones handed over in 'read';
	 * entries - overrun - read is what is still unread.  Events hidden
	 * by malformed pages are as unreadable as overwritten ones.
	 */
	r->meta->entries = st.read + st.entries + st.overrun + st.skipped;
	r->meta->overrun = st.overrun + st.skipped;
	r->meta->read = st.read;
}

static int ring_area_fill(struct ring_priv *p, uint8_t *page,
			  struct hvtrace_page_info *info)
{
	return hvtrace_cpu_read_page(container_of(p, struct ring_area, p)->area,
				     p->r.cpu, page, p->r.subbuf_size, info);
}

static int ring_area_get_reader(struct hvtrace_ring *r)
{
	struct ring_area *ra = to_area(r);
	int ret = ring_priv_get_reader(&ra->p, ring_area_fill);

	if (!ret)
		ring_area_counters(ra);
	return ret;
}

static void ring_area_close(struct hvtrace_ring *r)
{
	free(to_area(r));
}

static uint64_t ring_area_now_ns(struct hvtrace_ring *r, uint64_t now)
{
	return to_area(r)->area->clock.synced ? now : 0;
}

static uint64_t ring_area_to_host(struct hvtrace_ring *r, uint64_t ts)
{
	return hvtrace_area_to_host_ns(to_area(r)->area, ts, NULL);
}

static uint64_t ring_area_trailing_lost(struct hvtrace_ring *r)
{
	return hvtrace_cpu_take_trailing_lost(to_area(r)->area, r->cpu);
}

static const struct ring_ops ring_area_ops = {
	.get_reader = ring_area_get_reader,
	.close = ring_area_close,
	.now_ns = ring_area_now_ns,
	.to_host = ring_area_to_host,
	.take_trailing_lost = ring_area_trailing_lost,
};

HVTRACE_API int hvtrace_ring_open_area(struct hvtrace_area *a, int cpu,
				       struct hvtrace_ring **out)
{
	struct ring_area *ra;
	struct hvtrace_ring *r;
	uint64_t file_off;
	size_t slots_len;
	void *p;
	int ret;

	if (!a || !out)
		return hvt_err(-EINVAL,
			       "hvtrace_ring_open_area: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in area '%s' (it has %u)",
			       cpu, a->hdr.name, a->hdr.nr_cpus);
	r = ring_new(sizeof(*ra), offsetof(struct ring_area, p.r), cpu,
		     &ring_area_ops);
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	ra = to_area(r);
	ra->area = a;
	ring_priv_setup(&ra->p, a->hdr.subbuf_size, a->hdr.nr_subbufs);
	slots_len = (size_t)ra->p.ring_nr * r->subbuf_size;
	file_off = a->offset + a->hdr.cpu_offset +
		   (uint64_t)cpu * a->hdr.cpu_stride + a->hdr.meta_size;
	if (file_off % r->page_size || r->subbuf_size % r->page_size) {
		ret = hvt_err(-EOPNOTSUPP,
			      "area '%s': its sub-buffers are not aligned to "
			      "this host's %zu-byte pages, so they cannot be "
			      "mapped as an mmap view",
			      a->hdr.name, r->page_size);
		goto fail;
	}

	/* Reserve the whole view, then lay the pieces over it. */
	ret = ring_reserve(r, ra->p.ring_nr);	/* empty reader page A */
	if (ret)
		goto fail;
	p = mmap(r->data, slots_len, PROT_READ, MAP_SHARED | MAP_FIXED, a->fd,
		 (off_t)file_off);
	if (p == MAP_FAILED) {
		ret = hvt_err(-errno, "cannot map the sub-buffers of CPU %d of "
				      "%s: %s",
			      cpu, a->path, strerror(errno));
		goto fail;
	}

	ring_area_counters(ra);
	*out = r;
	return 0;
fail:
	hvtrace_ring_close(r);
	return ret;
}

/* --- guest kernel view ---------------------------------------------------- */

struct ring_kring {
	struct ring_priv p;
	struct hvtrace_kring *kring;
};

static struct ring_kring *to_kring(const struct hvtrace_ring *r)
{
	return container_of(r, struct ring_kring, p.r);
}

static void ring_kring_counters(struct ring_kring *rk)
{
	struct hvtrace_ring *r = &rk->p.r;
	struct hvtrace_kring_stats ks;

	/* Only what this reader saw: the guest ring keeps no totals (lost
	 * pages hold an unknown number of events). */
	if (hvtrace_kring_get_stats(rk->kring, r->cpu, &ks))
		return;
	r->meta->entries = ks.read + ks.lost_events;
	r->meta->overrun = ks.lost_events;
	r->meta->read = ks.read;
}

static int ring_kring_fill(struct ring_priv *p, uint8_t *page,
			   struct hvtrace_page_info *info)
{
	return hvtrace_kring_read_page(
		container_of(p, struct ring_kring, p)->kring, p->r.cpu, page,
		p->r.subbuf_size, info);
}

static int ring_kring_get_reader(struct hvtrace_ring *r)
{
	struct ring_kring *rk = to_kring(r);
	int ret = ring_priv_get_reader(&rk->p, ring_kring_fill);

	if (!ret)
		ring_kring_counters(rk);
	return ret;
}

static void ring_kring_close(struct hvtrace_ring *r)
{
	free(to_kring(r));
}

/* Guest-relative: host_ns == ts and no host "now" (the defaults). */
static const struct ring_ops ring_kring_ops = {
	.get_reader = ring_kring_get_reader,
	.close = ring_kring_close,
};

HVTRACE_API int hvtrace_ring_open_kring(struct hvtrace_kring *k, int cpu,
					struct hvtrace_ring **out)
{
	struct hvtrace_kring_info ki;
	struct ring_kring *rk;
	struct hvtrace_ring *r;
	int ret;

	if (!k || !out)
		return hvt_err(-EINVAL,
			       "hvtrace_ring_open_kring: NULL argument");
	hvtrace_kring_get_info(k, &ki);
	if (cpu < 0 || (uint32_t)cpu >= ki.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in the guest kernel ring "
					"(it has %u)",
			       cpu, ki.nr_cpus);
	r = ring_new(sizeof(*rk), offsetof(struct ring_kring, p.r), cpu,
		     &ring_kring_ops);
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	rk = to_kring(r);
	rk->kring = k;
	ring_priv_setup(&rk->p, ki.subbuf_size, 0); /* no writer slot */
	ret = ring_reserve(r, 0);
	if (ret) {
		hvtrace_ring_close(r);
		return ret;
	}
	ring_kring_counters(rk);
	*out = r;
	return 0;
}

/* --- common --------------------------------------------------------------- */

HVTRACE_API void hvtrace_ring_close(struct hvtrace_ring *r)
{
	if (!r)
		return;
	if (r->resv)
		munmap(r->resv, r->resv_len);
	r->ops->close(r);
}

HVTRACE_API const struct hvt_trace_buffer_meta *
hvtrace_ring_meta(const struct hvtrace_ring *r)
{
	return r ? r->meta : NULL;
}

HVTRACE_API const void *hvtrace_ring_subbuf(const struct hvtrace_ring *r,
					    uint32_t id)
{
	if (!r || id >= r->nr_subbufs)
		return NULL;
	return ring_page(r, id);
}

HVTRACE_API int hvtrace_ring_get_reader(struct hvtrace_ring *r)
{
	if (!r)
		return hvt_err(-EINVAL, "hvtrace_ring_get_reader: no ring");
	return r->ops->get_reader(r);
}

HVTRACE_API const char *hvtrace_ring_fallback(const struct hvtrace_ring *r)
{
	return r && r->ops->fallback ? r->ops->fallback(r) : NULL;
}

HVTRACE_API int hvtrace_ring_cpu(const struct hvtrace_ring *r)
{
	return r ? r->cpu : -1;
}

HVTRACE_API bool hvtrace_ring_is_kernel(const struct hvtrace_ring *r)
{
	return r && r->ops->kernel;
}

HVTRACE_API bool hvtrace_ring_clock_is_ns(const struct hvtrace_ring *r)
{
	return r && (!r->ops->clock_is_ns || r->ops->clock_is_ns(r));
}

HVTRACE_API uint64_t hvtrace_ring_errors(const struct hvtrace_ring *r)
{
	return r ? r->errors : 0;
}

HVTRACE_API uint64_t hvtrace_ring_take_trailing_lost(struct hvtrace_ring *r)
{
	if (!r || !r->ops->take_trailing_lost)
		return 0;
	return r->ops->take_trailing_lost(r);
}

HVTRACE_API uint64_t hvtrace_ring_now_ns(struct hvtrace_ring *r)
{
	if (!r || !r->ops->now_ns)
		return 0;	/* e.g. guest-relative: not the host's clock */
	return r->ops->now_ns(r, hvt_host_now_ns());
}

static uint64_t ring_to_host(struct hvtrace_ring *r, uint64_t ts)
{
	return r->ops->to_host ? r->ops->to_host(r, ts) : ts;
}

/* --- the cursor ----------------------------------------------------------- */

static inline uint32_t ring_read_u32(const uint32_t *p)
{
	/* The kernel updates the meta page under its reader lock during our
	 * ioctl; a relaxed load is enough once the ioctl returned. */
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Data bytes of the reader page the consumer may walk. */
static uint32_t ring_limit(const struct hvtrace_ring *r)
{
	uint32_t read = ring_read_u32(&r->meta->reader.read);
	uint32_t max = r->subbuf_size - HVT_PAGE_HDR_SIZE;

	return read < max ? read : max;
}

/* Start walking reader page @id from its beginning. */
static void ring_load_page(struct hvtrace_ring *r, uint32_t id)
{
	const uint8_t *page = ring_page(r, id);
	uint32_t size;
	uint64_t ts, lost;

	r->cur.id = id;
	r->cur.pos = 0;
	r->cur.limit = ring_limit(r);
	if (sb_header(page, r->subbuf_size, &ts, &size, &lost)) {
		r->errors++;
		r->cur.pos = r->cur.limit;	/* nothing here is usable */
	}
	r->cur.ts = ts;
	/* Losses before a page that had no events stay owed to the next. */
	if (lost == HVTRACE_LOST_UNKNOWN || r->cur.lost == HVTRACE_LOST_UNKNOWN)
		r->cur.lost = lost ? HVTRACE_LOST_UNKNOWN : r->cur.lost;
	else
		r->cur.lost += lost;
}

/* Take over whatever reader page the view has now: what was handed over
 * before we came is not ours (the kernel counted it as read). */
static int ring_prime(struct hvtrace_ring *r)
{
	uint32_t id = ring_read_u32(&r->meta->reader.id);
	const uint8_t *payload;
	uint32_t len, i;
	int ret = 1;

	if (id >= r->nr_subbufs)
		return hvt_err(-EPROTO, "reader id %u out of range (%u "
					"sub-buffers)",
			       id, r->nr_subbufs);
	ring_load_page(r, id);
	r->cur.lost = 0;	/* belongs to what was consumed before us */
	/* Skip to reader.read, keeping the running timestamp. */
	for (i = 0; i < r->subbuf_size && ret > 0; i++)
		ret = sb_step(ring_page(r, id) + HVT_PAGE_HDR_SIZE,
			      r->cur.limit, &r->cur.pos, &r->cur.ts, &payload,
			      &len);
	if (ret < 0)
		r->errors++;
	r->cur.pos = r->cur.limit;
	r->cur.fetched_ns = hvt_host_now_ns();
	r->cur.primed = true;
	return 0;
}

HVTRACE_API int hvtrace_ring_peek(struct hvtrace_ring *r,
				  struct hvtrace_record *rec)
{
	struct ring_cursor *c;
	int tries, ret;

	if (!r || !rec)
		return hvt_err(-EINVAL, "hvtrace_ring_peek: NULL argument");
	c = &r->cur;
	if (c->have) {
		*rec = c->rec;
		return 1;
	}
	if (!c->primed) {
		ret = ring_prime(r);
		if (ret)
			return ret;
	}
	/* Each pass either returns or asks for new data once: the first
	 * get-reader hands over everything pending, so three are plenty. */
	for (tries = 0; tries < 3; tries++) {
		const uint8_t *data = ring_page(r, c->id) + HVT_PAGE_HDR_SIZE;
		const uint8_t *payload;
		uint32_t len, id, limit;

		c->next_pos = c->pos;
		c->next_ts = c->ts;
		ret = sb_step(data, c->limit, &c->next_pos, &c->next_ts,
			      &payload, &len);
		if (ret > 0) {
			c->rec.ts = c->next_ts;
			c->rec.host_ns = ring_to_host(r, c->next_ts);
			c->rec.data = payload;
			c->rec.size = len;
			c->rec.cpu = r->cpu;
			c->rec.lost_before = c->lost;
			c->rec.fetched_ns = c->fetched_ns;
			c->have = true;
			*rec = c->rec;
			return 1;
		}
		if (ret < 0) {
			/* Malformed: drop the rest of what was handed over. */
			r->errors++;
			c->ts = c->next_ts;
		}
		c->pos = c->limit;

		ret = hvtrace_ring_get_reader(r);
		if (ret)
			return ret;
		id = ring_read_u32(&r->meta->reader.id);
		if (id >= r->nr_subbufs) {
			r->errors++;
			return hvt_err(-EPROTO, "reader id %u out of range",
				       id);
		}
		if (id != c->id) {
			ring_load_page(r, id);
			c->fetched_ns = hvt_host_now_ns();
			continue;
		}
		limit = ring_limit(r);
		if (limit <= c->limit)
			return 0;
		c->limit = limit;
		c->fetched_ns = hvt_host_now_ns();
	}
	return 0;
}

HVTRACE_API void hvtrace_ring_consume(struct hvtrace_ring *r)
{
	if (!r || !r->cur.have)
		return;
	r->cur.pos = r->cur.next_pos;
	r->cur.ts = r->cur.next_ts;
	r->cur.lost = 0;
	r->cur.have = false;
}
