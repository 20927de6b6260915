// SPDX-License-Identifier: MIT
/*
 * libhvtrace: a remote's CPUs as rings of the core, into the view.
 *
 * A source hands over one ring per CPU (a remote of hvtraced:
 * hvtrace_daemon_ring_open(); its guest kernel's,
 * hvtrace_daemon_kring_ring_open()); the rings validate their pages, convert
 * times and carry losses (rec->lost_before), the core's merge orders the
 * CPUs by host time with a reorder window, and this file only moves each
 * record it returns into the CPU's chunk (the view's one copy) and queues
 * the chunks.  The chunks of every CPU are queued together, under one
 * take of the view lock, so that a reader of all CPUs never gets a record
 * while an older one of another CPU is still held here: what the merge
 * returned in time order reaches the queues in time order.
 */
#include <errno.h>
#include <stdlib.h>

#include "fuse-local.h"

_Static_assert(FZ_LOST_UNKNOWN == HVTRACE_LOST_UNKNOWN,
	       "a ring's unknown loss is the view's");

struct fz_rings {
	struct hvtrace_ring **ring;
	unsigned int nr;
	uint32_t room; /* ring bytes per chunk: a sub-buffer's data */
	struct hvtrace_merge *m;
	struct fz_chunk **open; /* per CPU: records taken, not queued yet */
	/* per CPU: records taken that found no memory or that the view
	 * cannot name, lost before the CPU's next record */
	uint64_t *lost;
	const struct fz_kmap *kmap; /* the guest kernel's, or NULL */
};

int fz_rings_new(struct hvtrace_ring **rings, unsigned int nr,
		 uint32_t subbuf_size, uint64_t window_ns,
		 const struct fz_kmap *kmap, struct fz_rings **out)
{
	struct fz_rings *R = calloc(1, sizeof(*R));
	unsigned int i;
	int ret;

	*out = NULL;
	if (!R)
		goto nomem;
	R->ring = calloc(nr + 1, sizeof(*R->ring));
	R->open = calloc(nr + 1, sizeof(*R->open));
	R->lost = calloc(nr + 1, sizeof(*R->lost));
	if (!R->ring || !R->open || !R->lost)
		goto nomem;
	ret = hvtrace_merge_new(rings, nr, window_ns, &R->m);
	if (ret) {
		fz_rings_free(R);
		for (i = 0; i < nr; i++)
			hvtrace_ring_close(rings[i]);
		return ret;
	}
	for (i = 0; i < nr; i++)
		R->ring[i] = rings[i];
	R->nr = nr;
	R->kmap = kmap;
	R->room = subbuf_size > HVT_PAGE_HDR_SIZE
			  ? subbuf_size - HVT_PAGE_HDR_SIZE
			  : subbuf_size;
	*out = R;
	return 0;
nomem:
	fz_rings_free(R);
	for (i = 0; i < nr; i++)
		hvtrace_ring_close(rings[i]);
	return hvt_err(-ENOMEM, "out of memory");
}

void fz_rings_free(struct fz_rings *R)
{
	unsigned int i;

	if (!R)
		return;
	hvtrace_merge_free(R->m);
	for (i = 0; i < R->nr; i++) {
		fz_chunk_free(R->open[i]);
		hvtrace_ring_close(R->ring[i]);
	}
	free(R->ring);
	free(R->open);
	free(R->lost);
	free(R);
}

static void lost_add(uint64_t *to, uint64_t n)
{
	if (*to == FZ_LOST_UNKNOWN || n == FZ_LOST_UNKNOWN || *to + n < *to)
		*to = n || *to ? FZ_LOST_UNKNOWN : 0;
	else
		*to += n;
}

/*
 * Queue what every CPU took, at once (takes the view lock): its records,
 * then the losses no record carried yet (they came after those records).
 */
static void rings_queue(struct fz_rings *R, struct fz_remote *r)
{
	unsigned int i;

	pthread_mutex_lock(&r->v->lock);
	for (i = 0; i < R->nr; i++) {
		if (R->open[i] && r->gone)
			fz_chunk_free(R->open[i]);
		else if (R->open[i] && R->kmap)
			fz_ingest_kernel(r, i, R->open[i]);
		else if (R->open[i])
			fz_ingest(r, i, R->open[i]);
		R->open[i] = NULL;
		if (R->lost[i] && !r->gone)
			fz_ingest_lost(r, i, R->kmap != NULL, R->lost[i]);
		R->lost[i] = 0;
	}
	pthread_mutex_unlock(&r->v->lock);
}

int fz_rings_pump(struct fz_rings *R, struct fz_remote *r, bool flush,
		  unsigned int max)
{
	struct hvtrace_record rec;
	unsigned int n = 0, i;
	int ret = 0;

	while (n < max) {
		ret = hvtrace_merge_next(R->m, &rec, flush);
		if (ret <= 0)
			break;
		ret = 0;
		if (rec.cpu < 0 || (unsigned int)rec.cpu >= R->nr)
			continue; /* never: ring i reads CPU i */
		i = (unsigned int)rec.cpu;
		n++;
		if (R->kmap && !fz_chunk_keeps(R->kmap, rec.data, rec.size)) {
			lost_add(&R->lost[i], rec.lost_before);
			lost_add(&R->lost[i], 1);
			continue;
		}
		/* What this CPU lost since its last record, before this one. */
		lost_add(&rec.lost_before, R->lost[i]);
		R->lost[i] = 0;
		ret = fz_chunk_add(&R->open[i], &rec, R->room);
		if (ret == -ENOSPC) {
			/* A page's worth: every CPU's records go now. */
			rings_queue(R, r);
			ret = fz_chunk_add(&R->open[i], &rec, R->room);
		}
		if (ret) {
			/* No memory: the record is lost, and said so. */
			lost_add(&R->lost[i], rec.lost_before);
			lost_add(&R->lost[i], 1);
			ret = 0;
		}
	}
	if (ret >= 0 && flush && n < max) {
		/* Everything is out of the merge: losses no record
		 * followed (empty pages that carried drops) are the
		 * queue's, told before its next record. */
		for (i = 0; i < R->nr; i++) {
			lost_add(&R->lost[i],
				 hvtrace_ring_take_trailing_lost(R->ring[i]));
		}
	}
	rings_queue(R, r);
	return ret < 0 ? ret : (int)n;
}

bool fz_rings_pending(struct fz_rings *R)
{
	struct hvtrace_record rec;
	unsigned int i;

	/* The merge holds each ring's next record as the ring's cursor
	 * does: a peek returns it again without taking anything. */
	for (i = 0; R && i < R->nr; i++)
		if (hvtrace_ring_peek(R->ring[i], &rec) == 1)
			return true;
	return false;
}
