// SPDX-License-Identifier: MIT
/*
 * hvtraced: a remote's timers and its teardown.
 *
 * What hangs off a remote -- its transport (remote_ops), the time-sync
 * pings and trigger runs of its agent session, the tools' subscriptions
 * to its pages -- each keeps its own state; this file is the one place
 * that walks them all: remote_tick() runs their deadlines in one order
 * (the transport first, so that a connection it makes is pinged in the
 * same round), remote_destroy() takes them down in the reverse one, the
 * transport's struct (which embeds the remote) last.  It
 * sits above all of them in the call graph and below only the roles and
 * the loop (docs/proxy.md, "Inside hvtraced").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

void remote_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	if (r->ops->tick)
		r->ops->tick(r, now, next);
	ping_tick(r, now, next);
	trigger_tick(r, now, next);
	kevents_tick(r, now, next);
}

void remote_destroy(struct remote *r)
{
	struct remote **pp;

	trigger_cancel(r, -ECANCELED);
	kevents_cancel(r, -ECANCELED);
	subs_drop_remote(r);
	if (r->conn) {
		struct conn *c = r->conn;
		struct hvt_msg bye;

		memset(&bye, 0, sizeof(bye));
		bye.type = HVT_MSG_BYE;
		bye.u.bye.reason = HVT_BYE_SHUTDOWN;
		conn_send(c, &bye);
		conn_flush(c);
		c->remote = NULL;
		r->conn = NULL;
		conn_close(c);
	}
	remote_held_drop_all(r);
	hvtrace_ue_set_enable_hook(r->reg, NULL, NULL);
	hvtrace_ue_registry_destroy(r->reg);
	page_sources_close(r);
	hvtrace_area_close(r->area);
	for (pp = &D->remotes; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	held_free(&r->held);
	state_changed();
	free(r->chg);
	fanout_free(r);
	remote_release(r);
	/* Last: the transport's state, and the struct @r is part of. */
	r->ops->free(r);
}
