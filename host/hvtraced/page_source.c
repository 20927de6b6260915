// SPDX-License-Identifier: MIT
/*
 * hvtraced: page sources -- where a remote's pages come from.
 *
 * A remote has a list of page sources (struct page_source, daemon.h),
 * each behind its own ops: the writer's trace area (this file's area
 * source, which remote.c sets whenever the remote gets an area), a guest
 * kernel's ring (kring_remote.c), whatever a transport reads from.  Their
 * CPUs follow each other in the remote's CPU numbers, in list order, and
 * are at most D_MAX_CPUS in all (what a subscription may name); the area's
 * come first.  fanout.c reads pages, counters and a drain's end only
 * through the ops, into each source's own read buffer; nothing else asks
 * where pages come from.
 */
#include <errno.h>
#include <stdlib.h>

#include "daemon.h"

/* The remote's CPU numbers again, after a source came or went. */
static void ps_number(struct remote *r)
{
	struct page_source *ps;
	uint32_t n = 0;

	for (ps = r->sources; ps; ps = ps->next) {
		ps->first_cpu = n;
		n += ps->nr_cpus;
	}
	r->nr_cpus = n;
}

/*
 * Closing a source posts where each CPU's reader stands: whatever it read
 * was handed to its tools' queues, which take it or lose it (a detach, a
 * new area, a stop after conns_flush_all()).  Only a daemon that dies
 * without closing leaves the position at the tickets' last post.
 */
static void ps_free(struct page_source *ps)
{
	struct hvtrace_read_pos pos;
	uint32_t cpu;

	if (ps->held)
		for (cpu = 0; cpu < ps->nr_cpus; cpu++)
			if (!ps->ops->read_pos(ps, cpu, &pos))
				ps->ops->post_pos(ps, cpu, &pos);
	tickets_orphan(ps);
	page_buf_put(ps->pb);
	ps->pb = NULL;
	ps->ops->close(ps);
}

/* @ps checked against @r's CPUs (@others of them stay) and given its read
 * buffer (and its tickets' lists): 0, or -errno. */
static int ps_prepare(struct page_source *ps, uint32_t others)
{
	if (!ps->nr_cpus || !ps->subbuf_size ||
	    ps->nr_cpus > D_MAX_CPUS - others)
		return -E2BIG;
	ps->pb = page_buf_get(ps->subbuf_size);
	if (ps->ops->read_pos)
		ps->held = calloc(ps->nr_cpus, sizeof(*ps->held));
	return ps->pb && (ps->held || !ps->ops->read_pos) ? 0 : -ENOMEM;
}

int page_source_read_pos(struct page_source *ps, uint32_t cpu,
			 struct hvtrace_read_pos *pos)
{
	if (!ps->held || cpu >= ps->nr_cpus)
		return -ENOENT;
	return ps->ops->read_pos(ps, cpu, pos);
}

static void ps_link(struct remote *r, struct page_source *ps, bool first)
{
	struct page_source **pp = &r->sources;

	if (!first)
		while (*pp)
			pp = &(*pp)->next;
	ps->next = *pp;
	*pp = ps;
	ps_number(r);
}

int page_source_add(struct remote *r, struct page_source *ps, bool first)
{
	int ret = ps_prepare(ps, r->nr_cpus);

	if (ret) {
		ps_free(ps);
		return ret;
	}
	ps_link(r, ps, first);
	return 0;
}

void page_source_del(struct remote *r, struct page_source *ps)
{
	struct page_source **pp;

	for (pp = &r->sources; *pp; pp = &(*pp)->next)
		if (*pp == ps) {
			*pp = ps->next;
			ps_free(ps);
			break;
		}
	ps_number(r);
}

void page_sources_close(struct remote *r)
{
	struct page_source *ps;

	while ((ps = r->sources)) {
		r->sources = ps->next;
		ps_free(ps);
	}
	ps_number(r);
}

struct page_source *page_source_of(const struct remote *r, uint32_t cpu,
				   uint32_t *local)
{
	struct page_source *ps;

	for (ps = r->sources; ps; ps = ps->next)
		if (cpu - ps->first_cpu < ps->nr_cpus) {
			*local = cpu - ps->first_cpu;
			return ps;
		}
	return NULL;
}

int page_source_cpu_stats(const struct remote *r, uint32_t cpu,
			  struct hvtrace_cpu_stats *st)
{
	struct page_source *ps;
	uint32_t local;

	ps = page_source_of(r, cpu, &local);
	if (!ps)
		return -ENOENT;
	return ps->ops->cpu_stats(ps, local, st);
}

/* --- the area source: a writer's trace area ----------------------------- */

struct area_source {
	struct page_source ps;
	struct hvtrace_area *a;	/* the remote's (r->area): not closed here */
};

static struct hvtrace_area *as_area(struct page_source *ps)
{
	return container_of(ps, struct area_source, ps)->a;
}

static int as_read_page(struct page_source *ps, uint32_t cpu, uint8_t *page,
			uint32_t size, struct hvtrace_page_info *info)
{
	return hvtrace_cpu_read_page(as_area(ps), (int)cpu, page, size, info);
}

static int as_cpu_stats(struct page_source *ps, uint32_t cpu,
			struct hvtrace_cpu_stats *st)
{
	return hvtrace_cpu_get_stats(as_area(ps), (int)cpu, st);
}

static uint64_t as_take_trailing_lost(struct page_source *ps, uint32_t cpu)
{
	return hvtrace_cpu_take_trailing_lost(as_area(ps), (int)cpu);
}

static int as_held_subbufs(struct page_source *ps, uint32_t cpu)
{
	return hvtrace_cpu_held_subbufs(as_area(ps), (int)cpu);
}

static int as_read_pos(struct page_source *ps, uint32_t cpu,
		       struct hvtrace_read_pos *pos)
{
	return hvtrace_cpu_read_pos(as_area(ps), (int)cpu, pos);
}

static void as_post_pos(struct page_source *ps, uint32_t cpu,
			const struct hvtrace_read_pos *pos)
{
	hvtrace_cpu_post_pos(as_area(ps), (int)cpu, pos);
}

static void as_close(struct page_source *ps)
{
	free(container_of(ps, struct area_source, ps));
}

static const struct page_source_ops area_source_ops = {
	.name = "area",
	.cpu_kind = "user",
	.read_page = as_read_page,
	.cpu_stats = as_cpu_stats,
	.take_trailing_lost = as_take_trailing_lost,
	.held_subbufs = as_held_subbufs,
	.read_pos = as_read_pos,
	.post_pos = as_post_pos,
	.close = as_close,
	/* hvtrace_cpu_read_page() keeps its state per CPU */
	.parallel = true,
};

static struct page_source *as_find(const struct remote *r)
{
	struct page_source *ps;

	for (ps = r->sources; ps && ps->ops != &area_source_ops; ps = ps->next)
		;
	return ps;
}

void page_source_area_drop(struct remote *r)
{
	struct page_source *ps = as_find(r);

	if (ps)
		page_source_del(r, ps);
}

int page_source_area(struct remote *r, struct hvtrace_area *a,
		     const struct hvtrace_area_info *info)
{
	struct area_source *as = calloc(1, sizeof(*as));
	struct page_source *old = as_find(r);
	int ret;

	if (!as)
		return -ENOMEM;
	as->a = a;
	as->ps.ops = &area_source_ops;
	as->ps.nr_cpus = info->nr_cpus;
	as->ps.nr_subbufs = info->nr_subbufs;
	as->ps.subbuf_size = info->subbuf_size;
	/* The old one stays until the new one is ready. */
	ret = ps_prepare(&as->ps, r->nr_cpus - (old ? old->nr_cpus : 0));
	if (ret) {
		ps_free(&as->ps);
		return ret;
	}
	if (old)
		page_source_del(r, old);
	ps_link(r, &as->ps, true);
	return 0;
}

/* --- a guest kernel's section of the area: its pages copied by the agent */

static void ks_sec_close(struct page_source *ps)
{
	struct area_source *as = container_of(ps, struct area_source, ps);

	hvtrace_area_close(as->a);
	free(as);
}

/* An area of its own (not the remote's): no position for a successor, the
 * agent's copy goes on from the consumer position this owner posts. */
static const struct page_source_ops section_source_ops = {
	.name = "kernel section",
	.cpu_kind = "kernel-copy",
	.read_page = as_read_page,
	.cpu_stats = as_cpu_stats,
	.take_trailing_lost = as_take_trailing_lost,
	.held_subbufs = as_held_subbufs,
	.close = ks_sec_close,
	.parallel = true,
};

int page_source_kernel_section(struct remote *r, struct hvtrace_area *sec,
			       const struct hvtrace_area_info *info,
			       struct page_source **out)
{
	struct area_source *as = calloc(1, sizeof(*as));
	int ret;

	if (!as) {
		hvtrace_area_close(sec);
		return -ENOMEM;
	}
	as->a = sec;
	as->ps.ops = &section_source_ops;
	as->ps.nr_cpus = info->nr_cpus;
	as->ps.nr_subbufs = info->nr_subbufs;
	as->ps.subbuf_size = info->subbuf_size;
	as->ps.kernel = true;
	ret = page_source_add(r, &as->ps, false);
	if (!ret)
		*out = &as->ps;
	return ret;
}

uint32_t page_source_listed_cpus(const struct remote *r)
{
	return r->sources && !r->sources->kernel ? r->sources->nr_cpus
						 : r->nr_cpus;
}
