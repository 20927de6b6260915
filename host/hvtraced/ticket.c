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
			t->next = t->prev = NULL;
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
	/* A tail behind the head that no queue holds any more (its page
	 * sent, or dropped for every tool) becomes this page's ticket: its
	 * position is then posted with this one's. */
	t = h->tail;
	if (t && t != h->head && !t->refs) {
		t->refs = 1;
		t->pos = *pos;
		return t;
	}
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
	t->prev = h->tail;
	if (h->tail)
		h->tail->next = t;
	else
		h->head = t;
	h->tail = t;
	return t;
}

static void ticket_unlink(struct ps_held *h, struct ps_ticket *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		h->head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		h->tail = t->prev;
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
	h = &ps->held[cpu];
	if (t != h->head) {
		/* Behind a held page: a later ticket posts past it (or, at
		 * the tail, it is posted with the head, or taken over by the
		 * next page: ticket_new()).  So a list holds the tickets
		 * queues hold, and one more. */
		if (t->next) {
			ticket_unlink(h, t);
			free(t);
		}
		return;
	}
	/* Post the newest position that no queue holds back: the tickets
	 * at the head that nobody holds any more. */
	while (h->head && !h->head->refs) {
		free(last);
		last = h->head;
		ticket_unlink(h, last);
	}
	if (last) {
		ps->ops->post_pos(ps, cpu, &last->pos);
		free(last);
	}
}

size_t tickets_held(const struct remote *r, size_t *queued)
{
	const struct page_source *ps;
	const struct out_chunk *ch;
	const struct ps_ticket *t;
	const struct conn *c;
	size_t n = 0;
	uint32_t cpu;

	*queued = 0;
	for (ps = r->sources; ps; ps = ps->next) {
		for (cpu = 0; ps->held && cpu < ps->nr_cpus; cpu++)
			for (t = ps->held[cpu].head; t; t = t->next)
				n++;
		for (c = D->conns; c; c = c->next)
			for (ch = c->q.head; ch; ch = ch->next)
				*queued += ch->ticket && ch->ticket->ps == ps;
	}
	return n;
}
