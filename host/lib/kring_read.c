// SPDX-License-Identifier: MIT
/*
 * libhvtrace: reading a guest kernel's ftrace ring in place, page by page.
 *
 * One job: the per-CPU read loop of the steps described at the top of
 * kring.c (snapshot, cursor, lapped?, copy, recheck, validate) over a
 * ring that kring.c has found and bounded, and the statistics it keeps.
 * Every value comes from guest memory and is bounded before use; the
 * host never writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kring-local.h"
#include "subbuf.h"

/* --- reading -------------------------------------------------------------- */

/* Translate a guest VA of a sub-buffer to its ring id; false if it is not
 * one of this CPU's sub-buffers. */
static bool kr_va_id(const struct hvtrace_kring *k, const struct kr_cpu *c,
		     uint64_t first, uint64_t va, uint32_t *id)
{
	uint64_t d = va - first;

	if (va < first || d % k->info.subbuf_size ||
	    d / k->info.subbuf_size >= k->info.nr_subbufs)
		return false;
	*id = c->id_of[d / k->info.subbuf_size];
	return true;
}

/* Take and check a snapshot of @c's meta: 0, or -EBADMSG. */
static int kr_snap(struct hvtrace_kring *k, struct kr_cpu *c,
		   struct kr_snap *s)
{
	uint32_t nr = k->info.nr_subbufs, i;
	uint64_t first, head, commit;

	first = kr_rd64(k, c->fields + KR_F_FIRST);
	head = kr_rd64(k, c->fields + KR_F_HEAD);
	/* The guest stores commit_buffer after the page commit it covers. */
	commit = kr_rd64_acq(k, c->fields + KR_F_COMMIT);
	if (kr_rd32(k, c->fields + KR_F_SUBBUF) != k->info.subbuf_size ||
	    kr_rd32(k, c->fields + KR_F_NR) != nr)
		return -EBADMSG;
	kr_get(k, c->bufs, c->buffers, 4ull * nr);
	memset(c->id_of, 0xff, 4ull * nr);
	for (i = 0; i < nr; i++) {
		int32_t b = c->buffers[i];

		/* buffers[] must be a permutation of the slots. */
		if (b < 0 || (uint32_t)b >= nr || c->id_of[b] != UINT32_MAX)
			return -EBADMSG;
		c->id_of[b] = i;
	}
	if (!kr_va_id(k, c, first, head, &s->head_id) || s->head_id == 0 ||
	    !kr_va_id(k, c, first, commit, &s->commit_id))
		return -EBADMSG;
	if (c->started && first != c->first) {
		/* The guest set its ring up again (a reboot): start over. */
		c->started = false;
		c->bad = false;
	}
	c->first = first;
	return 0;
}

static void kr_next_page(struct hvtrace_kring *k, struct kr_cpu *c)
{
	c->id = c->id % k->ring + 1;
	c->page_started = false;
	c->pos = 0;
}

/* @n pages (or their unread rests) were overwritten before we read them. */
static void kr_lost_pages(struct kr_cpu *c, uint32_t n)
{
	c->st.lost_pages += n;
	c->pending_lost = HVTRACE_LOST_UNKNOWN;
}

/*
 * A malformed page: counted and skipped, its events reported lost.  The
 * page the guest is filling is waited on until it moves past it.
 * Returns true when the read must stop there.
 */
static bool kr_skip_bad(struct hvtrace_kring *k, struct kr_cpu *c,
			bool is_commit)
{
	c->st.errors++;
	c->st.skipped_pages++;
	c->pending_lost = HVTRACE_LOST_UNKNOWN;
	if (is_commit) {
		c->bad = true;
		c->bad_id = c->id;
		return true;
	}
	kr_next_page(k, c);
	return false;
}

/*
 * The reuse rule, checked after a page was copied (acquire fence first):
 * the copy is intact if the page still has the time_stamp read before the
 * copy, still sits at ring position @id, and the head has not moved past
 * @id.  The guest moves the head off a page before its writer touches it
 * (rb_handle_head_page() before the tail moves), so a copy that saw any
 * byte of a new lap sees the head moved past it.
 */
static bool kr_copy_ok(struct hvtrace_kring *k, struct kr_cpu *c,
		       const struct kr_snap *s, uint32_t slot, uint64_t page,
		       uint64_t ts)
{
	uint32_t head2;

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (kr_rd64(k, page) != ts ||
	    (uint32_t)kr_rd32(k, c->bufs + 4ull * c->id) != slot)
		return false;
	if (!kr_va_id(k, c, c->first, kr_rd64(k, c->fields + KR_F_HEAD),
		      &head2) ||
	    head2 == 0)
		return false;
	return kr_dist(k->ring, s->head_id, head2) <=
	       kr_dist(k->ring, s->head_id, c->id);
}

static int kr_read(struct hvtrace_kring *k, struct kr_cpu *c, uint8_t *out,
		   struct hvtrace_page_info *info)
{
	uint32_t iter, passes = 2 * k->info.nr_subbufs + 4;
	struct kr_snap s = {c->snap_head, c->snap_commit};
	bool have = c->snap_ok, fresh = false;
	int ret = 0;

	/*
	 * One snapshot serves every page the cursor walks: it only moves
	 * forward from the head towards the snapshot's commit, and each copy
	 * is rechecked against the live head and buffers[id] (kr_copy_ok()).
	 * A failed recheck or a reused page takes a new one.  The last
	 * call's snapshot serves the next call too: taking one copies the
	 * whole buffers[] (4 bytes a sub-buffer), which per page read made a
	 * drain of a large ring quadratic.  Reaching that snapshot's commit
	 * page only says the guest's writer was there then: a new snapshot
	 * is taken before the call says there is nothing more.  Bounded per
	 * call: KR_SNAPS_MAX snapshots, KR_WALK_MAX passes; the next call
	 * goes on from the cursor.
	 */
	if (passes > KR_WALK_MAX)
		passes = KR_WALK_MAX;
	c->call_snaps = 0;
	c->call_pages = 0;
	for (iter = 0; iter < passes; iter++) {
		struct hvt_take t;
		uint64_t page, commit, ts;
		uint32_t slot, size;
		bool is_commit, valid;

		if (!have) {
			if (c->call_snaps == KR_SNAPS_MAX)
				goto out;
			c->call_snaps++;
			if (kr_snap(k, c, &s)) {
				if (!k->io_err) /* else not the guest's fault */
					c->st.errors++;
				c->snap_ok = false;
				return 0;
			}
			have = fresh = true;
		}
		if (s.commit_id == 0) {
			/* The guest's own reader holds the writer's page:
			 * nothing here is ours to read (docs/guest-kernel.md). */
			if (!fresh)
				goto stale;
			goto out;
		}
		if (!c->started) {
			c->started = true;
			c->id = s.head_id;
			c->page_started = false;
			c->pos = 0;
		} else if (kr_dist(k->ring, s.head_id, c->id) >
				   kr_dist(k->ring, s.head_id, s.commit_id) ||
			   (c->page_started &&
			    (uint32_t)c->buffers[c->id] != c->slot)) {
			/* Lapped: our page and those up to the head are
			 * gone. */
			kr_lost_pages(c, kr_dist(k->ring, c->id, s.head_id) ?
						      kr_dist(k->ring, c->id,
							      s.head_id) :
						      1);
			c->id = s.head_id;
			c->page_started = false;
			c->pos = 0;
			c->bad = false;
		}
		is_commit = c->id == s.commit_id;
		if (c->bad && c->bad_id == c->id) {
			if (is_commit && !fresh)
				goto stale;
			if (is_commit)
				goto out; /* wait for the writer to move */
			c->bad = false;
			kr_next_page(k, c);
			continue;
		}
		slot = (uint32_t)c->buffers[c->id];
		page = c->pages + (uint64_t)slot * k->info.subbuf_size;
		c->call_pages++;
		/* The page commit: acquire, so the bytes it covers are there
		 * (the guest stores the events before the commit). */
		commit = kr_rd64_acq(k, page + HVT_PAGE_COMMIT_OFF);
		ts = kr_rd64(k, page);
		size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
		valid = size <= k->data_size &&
			!(commit & ~(HVT_COMMIT_SIZE_MASK | HVT_COMMIT_FLAGS));
		if (c->page_started && ts != c->page_ts)
			valid = true;	/* reused: handled after the check */
		else if (valid && size > c->pos)
			kr_get(k, page + HVT_PAGE_HDR_SIZE + c->pos,
			       c->copy + HVT_PAGE_HDR_SIZE + c->pos,
			       size - c->pos);
		if (!kr_copy_ok(k, c, &s, slot, page, ts)) {
			c->st.retries++;
			have = false;	/* the next snapshot tells what moved */
			continue;
		}
		if (c->page_started && ts != c->page_ts) {
			/* Reused since we started it (we were lapped between
			 * two calls and the head came round again): what
			 * follows our page starts at the head. */
			kr_lost_pages(c, 1);
			c->started = false;
			c->bad = false;
			have = false;
			continue;
		}
		if (!valid || (c->page_started && size < c->pos)) {
			if (kr_skip_bad(k, c, is_commit))
				goto out;
			continue;
		}
		if (!c->page_started) {
			if (size == 0) {
				/* Nothing on it (yet). */
				if (is_commit && !fresh)
					goto stale;
				if (is_commit)
					goto out;
				kr_next_page(k, c);
				continue;
			}
			c->page_started = true;
			c->page_ts = ts;
			c->slot = slot;
			c->pos = 0;
			c->pos_ts = ts;
		}
		ret = hvt_subbuf_take(c->copy + HVT_PAGE_HDR_SIZE, size,
				      k->data_size, c->pos, c->pos_ts,
				      c->pending_lost, out, &t, NULL);
		if (ret < 0) {
			ret = 0;
			if (kr_skip_bad(k, c, is_commit))
				goto out;
			continue;
		}
		if (ret == 0) {
			c->pos = t.end;
			c->pos_ts = t.end_ts;
			if (is_commit && !fresh)
				goto stale;
			if (is_commit)
				goto out;
			kr_next_page(k, c);
			continue;
		}
		if (t.no_room)
			c->st.errors++;
		if (info) {
			info->lost_events = c->pending_lost;
			info->first_ts = c->pos_ts;
			info->entries = t.n;
			info->size = t.end - c->pos;
			info->seq = c->id;
			info->flags = is_commit ? HVTRACE_PAGE_TAIL : 0;
		}
		if (c->pending_lost != HVTRACE_LOST_UNKNOWN)
			c->st.lost_events += c->pending_lost;
		c->pending_lost = 0;
		c->st.read += t.n;
		c->st.bytes += t.end - c->pos;
		c->st.now_ts = t.end_ts;
		c->pos = t.end;
		c->pos_ts = t.end_ts;
		if (!is_commit && !t.cut)
			kr_next_page(k, c);
		ret = 1;
		goto out;
	stale:
		/* At the commit of an earlier call's snapshot: look again. */
		have = false;
	}
out:
	c->snap_ok = have;
	c->snap_head = s.head_id;
	c->snap_commit = s.commit_id;
	return ret;
}

HVTRACE_API int hvtrace_kring_read_page(struct hvtrace_kring *k, int cpu,
					void *page, size_t size,
					struct hvtrace_page_info *info)
{
	struct hvt_guard g;
	struct stat st;
	int ret;

	if (!k || !page)
		return hvt_err(-EINVAL,
			       "hvtrace_kring_read_page: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= k->info.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in the guest kernel ring of "
					"%s (it has %u)",
			       cpu, k->path, k->info.nr_cpus);
	if (size < k->info.subbuf_size)
		return hvt_err(-ENOSPC, "page buffer of %zu bytes is smaller "
					"than the sub-buffer size %u",
			       size, k->info.subbuf_size);
	if (!k->map) {
		/* A VMM's anonymous memory: gone with its process. */
		k->io_err = 0;
		ret = kr_read(k, &k->cpus[cpu], page, info);
		if (k->io_err)
			return hvt_err(k->io_err == ESRCH ? -ESRCH : -EIO,
				       "%s: cannot read it any more (%s): the "
				       "VMM process has exited or unmapped "
				       "this memory, and the ring went with "
				       "it; events not read by then are "
				       "lost (a memfd or file memory backend "
				       "keeps them readable)",
				       k->path, k->io_err == ESRCH ?
							"end of its memory" :
							strerror(k->io_err));
		return ret;
	}
	if (fstat(k->fd, &st) || (uint64_t)st.st_size < k->foff + k->size) {
		k->cpus[cpu].st.errors++;
		return hvt_err(-EIO, "%s shrank under the reader; reopen it",
			       k->path);
	}
	if (hvt_guard_enter(&g, k->map, k->size)) {
		k->cpus[cpu].st.errors++;
		return hvt_err(-EIO, "%s: the %s shrank under the reader "
				     "(SIGBUS while copying); reopen it",
			       k->path, k->unit);
	}
	ret = kr_read(k, &k->cpus[cpu], page, info);
	hvt_guard_leave(&g);
	return ret;
}

HVTRACE_API int hvtrace_kring_get_stats(const struct hvtrace_kring *k,
					int cpu,
					struct hvtrace_kring_stats *st)
{
	if (!k || !st)
		return hvt_err(-EINVAL,
			       "hvtrace_kring_get_stats: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= k->info.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in the guest kernel ring of "
					"%s (it has %u)",
			       cpu, k->path, k->info.nr_cpus);
	*st = k->cpus[cpu].st;
	return 0;
}
