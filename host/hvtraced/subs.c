// SPDX-License-Identifier: MIT
/*
 * hvtraced: the subscriber role -- a tool's page subscriptions.
 *
 * A tool becomes a subscriber with SUBSCRIBE (a remote, one CPU or all):
 * from then on fanout.c hands it every page of that CPU that the daemon
 * reads, as PAGE messages whose 'req' is the subscription id.  The tool
 * role (tool.c) passes SUBSCRIBE, UNSUBSCRIBE and DRAIN here; this file
 * owns the subscription lists (in the tool's state, struct tool) and their
 * budget: --client-queue bytes of pages waiting in the tool's queue, or
 * less if a SUBSCRIBE asked for less (a live viewer that prefers
 * dropping to lagging), but always room for two of the largest pages.
 * DRAIN reads the remote's subscribed rings to their end, at the pace
 * the subscribers take pages (fanout.c), and answers after the pages: a
 * tool that gets the RESULT has every page committed before it asked.
 */
#include <errno.h>
#include <stdlib.h>

#include "daemon.h"

static struct sub *sub_new(struct tool *tool, struct remote *r, int cpu,
			   uint32_t queue_kib)
{
	struct sub *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (!tool->page_budget)
		tool->page_budget = D->client_queue;
	if (queue_kib && (size_t)queue_kib * 1024 < tool->page_budget)
		tool->page_budget = (size_t)queue_kib * 1024;
	/* At least one page of the largest size fits. */
	if (tool->page_budget < 2 * HVT_PROTO_MAX_PAGE)
		tool->page_budget = 2 * HVT_PROTO_MAX_PAGE;
	s->nr_cpus = r->nr_cpus; /* at most D_MAX_CPUS: page_source.c */
	s->cpus = calloc(s->nr_cpus ? s->nr_cpus : 1, sizeof(*s->cpus));
	if (!s->cpus) {
		free(s);
		return NULL;
	}
	s->id = ++D->next_sub_id;
	if (!s->id)
		s->id = ++D->next_sub_id;
	s->tool = tool;
	s->remote = r;
	s->cpu = cpu;
	s->next = tool->subs;
	tool->subs = s;
	D->nr_subs++;
	D->poll_us = D->poll_min_us;
	D->next_poll_us = d_now_us();
	return s;
}

static void sub_free(struct sub *s)
{
	free(s->cpus);
	free(s);
	D->nr_subs--;
}

static int sub_remove(struct tool *tool, uint32_t id)
{
	struct sub **pp, *s;

	for (pp = &tool->subs; (s = *pp); pp = &s->next)
		if (s->id == id) {
			*pp = s->next;
			sub_free(s);
			return 0;
		}
	return -ENOENT;
}

void subs_drop_tool(struct conn *c)
{
	struct sub *s, *n;

	for (s = c->tool->subs; s; s = n) {
		n = s->next;
		sub_free(s);
	}
	c->tool->subs = NULL;
	fanout_forget(c, NULL);
}

void subs_drop_remote(struct remote *r)
{
	struct conn *c;
	struct sub **pp, *s;

	for (c = D->conns; c; c = c->next) {
		if (!c->tool)
			continue;
		for (pp = &c->tool->subs; (s = *pp);) {
			if (s->remote == r) {
				*pp = s->next;
				sub_free(s);
			} else {
				pp = &s->next;
			}
		}
	}
	fanout_forget(NULL, r);
}

bool subs_read_cpus(const struct remote *r, uint32_t first, uint32_t n)
{
	const struct conn *c;
	const struct sub *s;

	for (c = D->conns; c; c = c->next)
		for (s = c->tool && !c->dead ? c->tool->subs : NULL; s;
		     s = s->next)
			if (s->remote == r && s->cpu >= 0 &&
			    (uint32_t)s->cpu - first < n)
				return true;
	return false;
}

/* SUBSCRIBE, DRAIN (on remote @r) and UNSUBSCRIBE (@r NULL) of tool @c. */
void subs_request(struct conn *c, struct remote *r, const struct hvt_msg *m)
{
	struct sub *s;
	int ret;

	switch (m->type) {
	case HVT_MSG_SUBSCRIBE:
		if (r->state == HVT_REMOTE_MISSING) {
			char text[1200];

			snprintf(text, sizeof(text),
				 "remote '%s' is missing, nothing to read: "
				 "%s",
				 r->name, r->ops->problem && r->ops->problem(r) ?
						  r->ops->problem(r) :
						  "its area file is gone");
			conn_reply_error(c, m->req, m->chan, -ENOENT, text);
			break;
		}
		if (!remote_has_pages(r)) {
			conn_reply_error(c, m->req, m->chan, -ENODEV,
					 "the remote has no area attached "
					 "yet");
			break;
		}
		/* -1 is every CPU; any other CPU must be one of the
		 * remote's (at most D_MAX_CPUS: fanout.c's sets). */
		if (m->u.subscribe.cpu < -1 ||
		    m->u.subscribe.cpu >= (int32_t)r->nr_cpus) {
			char text[128];

			snprintf(text, sizeof(text),
				 "no CPU %d in remote '%s': it has CPUs "
				 "0..%u (-1 for all)",
				 m->u.subscribe.cpu, r->name,
				 r->nr_cpus - 1);
			conn_reply_error(c, m->req, m->chan, -EINVAL, text);
			break;
		}
		s = sub_new(c->tool, r, m->u.subscribe.cpu,
			    m->u.subscribe.queue_kib);
		if (!s)
			conn_reply_error(c, m->req, m->chan, -ENOMEM,
					 "out of memory");
		else
			conn_reply_result(c, m, HVT_MSG_SUBSCRIBE, 0, s->id, 0,
					  NULL);
		/* The remote's clock model, before its first PAGE. */
		if (s)
			clocks_subscribed(c, s);
		break;
	case HVT_MSG_UNSUBSCRIBE:
		ret = sub_remove(c->tool, m->u.unsubscribe.sub);
		conn_reply_result(c, m, HVT_MSG_UNSUBSCRIBE, ret,
				  m->u.unsubscribe.sub, 0, "%s",
				  ret ? "no such subscription on this "
					"connection" :
					"");
		break;
	case HVT_MSG_DRAIN:
		fanout_drain_begin(c, r, m);
		break;
	default:
		break;
	}
}
