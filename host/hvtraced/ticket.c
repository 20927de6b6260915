// SPDX-License-Identifier: MIT
/*
 * hvtraced: page tickets -- when a page's read position may be posted.
 *
 * hvtraced opens its areas with HVTRACE_OPEN_POST_LATER: a read posts no
 * position for a restarted daemon; the position after each page read
 * goes into a ticket (struct ps_ticket, daemon.h), held by every tool
 * queue the page went to (out_chunk.ticket, conn.c) until that queue has
 * written the page to its socket, or dropped it (the tool went away).
 * Tickets of a CPU form a list, oldest first; the last reference to go
 * posts the newest position no ticket before it holds back, so the
 * posted position never passes a page some socket has not taken.  Bytes
 * a socket has taken outlive the daemon: after a crash the tools read
 * them, and the successor resumes right after.  The page source's close
 * posts its newest position (page_source.c); tickets still in queues
 * then outlive it, orphaned.
 */
#include <stdlib.h>

#include "daemon.h"

/* The source goes: its tickets still held by a tool's queue stay with
 * that queue (freed by the last put), the others go now. */
void tickets_orphan(struct page_source *ps)
{
	struct ps_ticket *t, *n;
	uint32_t cpu;

	if (!ps->held)
		return;
	for (cpu = 0; cpu < ps->nr_cpus; cpu++) {
		for (t = ps->held[cpu].head; t; t = n) {
			n = t->next;
			t->next = NULL;
			t->ps = NULL;
			if (!t->refs)
				free(t);
		}
	}
	free(ps->held);
	ps->held = NULL;
}

struct ps_ticket *ticket_new(struct page_source *ps, uint32_t cpu,
			     const struct hvtrace_read_pos *pos)
{
	struct ps_held *h;
	struct ps_ticket *t;

	if (!ps->held || cpu >= ps->nr_cpus)
		return NULL;
	h = &ps->held[cpu];
	t = malloc(sizeof(*t));
	if (!t) {
		/* Post it now: the page may be lost to a crash uncounted,
		 * but never delivered twice. */
		if (!h->head)
			ps->ops->post_pos(ps, cpu, pos);
		return NULL;
	}
	t->next = NULL;
	t->ps = ps;
	t->cpu = cpu;
	t->refs = 1;
	t->pos = *pos;
	if (h->tail)
		h->tail->next = t;
	else
		h->head = t;
	h->tail = t;
	return t;
}

void ticket_get(struct ps_ticket *t)
{
	t->refs++;
}

void ticket_put(struct ps_ticket *t)
{
	struct ps_ticket *last = NULL;
	struct page_source *ps = t->ps;
	struct ps_held *h;
	uint32_t cpu = t->cpu;

	if (--t->refs)
		return;
	if (!ps) {
		free(t);	/* its source went (tickets_orphan()) */
		return;
	}
	/* Post the newest position that no queue holds back: the tickets
	 * at the head that nobody holds any more. */
	h = &ps->held[cpu];
	while (h->head && !h->head->refs) {
		free(last);
		last = h->head;
		h->head = last->next;
	}
	if (!h->head)
		h->tail = NULL;
	if (last) {
		ps->ops->post_pos(ps, cpu, &last->pos);
		free(last);
	}
}
