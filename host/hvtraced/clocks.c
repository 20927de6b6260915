// SPDX-License-Identifier: MIT
/*
 * hvtraced: a remote's clock model to its subscribers (CLOCK).
 *
 * Tools convert a remote's writer timestamps to host CLOCK_MONOTONIC
 * themselves, with the model hvtraced keeps for it (sync.c, the area's
 * control page), so a page never waits for a TO_HOST round trip.  Each
 * subscription gets the model as a CLOCK notice (docs/proxy.md) in the
 * stream of its pages:
 *
 *   - right after the RESULT of its SUBSCRIBE, before its first PAGE;
 *   - whenever the model changed (a sample refitted it, the area was
 *     opened again): the sync sites call clocks_update() as they apply a
 *     sample, and fanout.c calls it before it reads a remote's rings, so
 *     a CLOCK is queued ahead of every page read after the change.
 *
 * The connection's queue is one FIFO (conn.c), and CLOCK goes through it
 * like a page (conn_send_page()): no reply limit can refuse it while the
 * pages behind it go out.  A remote without a model (a guest kernel ring
 * attached by VMM pid) sends one CLOCK with clock id 0: its times are the
 * writer's own.  The generation counts the models hvtraced had for the
 * remote (from 1); a subscription gets each one at most once.
 */
#include <errno.h>
#include <string.h>

#include "daemon.h"

/* The model @r has now (none without an area). */
static void clocks_now(const struct remote *r, struct hvtrace_clock_map *m)
{
	memset(m, 0, sizeof(*m));
	if (r->area)
		hvtrace_area_clock_map(r->area, m);
}

static int clocks_send(struct conn *c, struct sub *s)
{
	const struct hvtrace_clock_map *k = &s->remote->clock;
	struct hvt_msg m;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_CLOCK;
	m.req = s->id;
	m.chan = s->remote->id;
	m.u.clock.generation = s->remote->clock_gen;
	if (k->clock_id) {
		m.u.clock.clock_id = k->clock_id;
		m.u.clock.flags =
			(k->flags & HVTRACE_CLOCK_SYNCED) ? HVT_CLOCKF_SYNCED : 0;
		m.u.clock.base_writer = k->base_writer;
		m.u.clock.base_host = k->base_host;
		m.u.clock.rate_int = k->rate_int;
		m.u.clock.rate_frac = k->rate_frac;
		m.u.clock.err_ns = k->err_ns;
		memcpy(&m.u.clock.rate_err, &k->rate_err, 8);
		memcpy(&m.u.clock.drift_half, &k->drift_half, 8);
	}
	ret = conn_send_page(c, &m, NULL, NULL);
	if (ret == -EINVAL)
		d_log("remote '%s': its clock model does not fit a CLOCK "
		      "message; tools convert its times through TO_HOST",
		      s->remote->name);
	if (!ret || ret == -EINVAL)
		s->clock_gen = s->remote->clock_gen;
	return ret;
}

/* Whether @r's model moved since the last CLOCK: then a new generation. */
static void clocks_refresh(struct remote *r)
{
	struct hvtrace_clock_map m;

	clocks_now(r, &m);
	if (r->clock_gen && !memcmp(&m, &r->clock, sizeof(m)))
		return;
	r->clock = m;
	r->clock_gen++;
}

void clocks_update(struct remote *r)
{
	struct conn *c;
	struct sub *s;

	clocks_refresh(r);
	for (c = D->conns; c; c = c->next) {
		if (!c->tool || c->dead)
			continue;
		for (s = c->tool->subs; s && !c->dead; s = s->next)
			if (s->remote == r && s->clock_gen != r->clock_gen)
				clocks_send(c, s);
	}
}

void clocks_subscribed(struct conn *c, struct sub *s)
{
	clocks_refresh(s->remote);
	clocks_send(c, s);
}
