// SPDX-License-Identifier: MIT
/*
 * libhvtrace-daemon: the clock models hvtraced sends in a feed.
 *
 * hvtraced sends a subscription's remote's clock model as a CLOCK notice
 * before the subscription's first PAGE and again whenever the model
 * changes, ahead of the pages read after the change (docs/proxy.md).  The
 * feed keeps the newest one per remote here, and converts a writer
 * timestamp with it locally: hvtrace_clock_map_to_host(), the core's one
 * conversion, which the area readers use too, so the time and the bound
 * are those TO_HOST would answer for the same model.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dclock.h"

int hvt_dclock_apply(struct hvt_dclocks *t, const struct hvt_msg *m)
{
	const struct hvt_m_clock *c = &m->u.clock;
	struct hvtrace_clock_map map;
	unsigned int i;

	if (m->type != HVT_MSG_CLOCK || (m->flags & HVT_PF_REPLY))
		return -EINVAL;
	memset(&map, 0, sizeof(map));
	map.clock_id = c->clock_id;
	map.flags = (c->flags & HVT_CLOCKF_SYNCED) ? HVTRACE_CLOCK_SYNCED : 0;
	map.generation = c->generation;
	map.base_writer = c->base_writer;
	map.base_host = c->base_host;
	map.rate_int = c->rate_int;
	map.rate_frac = c->rate_frac;
	map.err_ns = c->err_ns;
	/* Bits of finite, non-negative doubles: the codec's rule. */
	memcpy(&map.rate_err, &c->rate_err, 8);
	memcpy(&map.drift_half, &c->drift_half, 8);
	for (i = 0; i < t->nr; i++)
		if (t->v[i].remote == m->chan) {
			t->v[i].map = map;
			return 0;
		}
	if (t->nr >= HVT_DCLOCK_MAX) {
		i = t->evict++ % t->nr;
		t->v[i].remote = m->chan;
		t->v[i].map = map;
		return 0;
	}
	if (t->nr == t->cap) {
		unsigned int cap = t->cap ? t->cap * 2 : 4;
		struct hvt_dclock *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->nr].remote = m->chan;
	t->v[t->nr].map = map;
	t->nr++;
	return 0;
}

const struct hvtrace_clock_map *hvt_dclock_find(const struct hvt_dclocks *t,
						uint32_t remote)
{
	unsigned int i;

	for (i = 0; i < t->nr; i++)
		if (t->v[i].remote == remote)
			return &t->v[i].map;
	return NULL;
}

void hvt_dclocks_free(struct hvt_dclocks *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}
