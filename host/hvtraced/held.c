// SPDX-License-Identifier: MIT
/*
 * hvtraced: the registrations an agent's clients hold, per remote.
 *
 * A guest chooses its channel numbers (owner = chan + 1) and event
 * definitions, so everything here is bounded and every lookup is O(1):
 *
 *   refs    (owner, event id) -> count, a chained hash table
 *   owners  owner -> its refs (a doubly linked list), a chained hash table
 *
 * Both tables double when they hold as many entries as buckets, so chains
 * stay short whatever the keys (the hash mixes all key bits).  Dropping an
 * owner walks only its own refs.  The caps -- distinct owners (channels)
 * and distinct refs per remote -- are checked by held_admit() before the
 * registry takes a reference, so a refused REGISTER leaves no trace.
 */
#include <errno.h>
#include <stdlib.h>

#include "daemon.h"

/* A hash chain link, first in each entry; keeps the entry's hash. */
struct held_link {
	struct held_link *next;
	uint64_t hash;
};

struct held_ref {
	struct held_link h;		/* hash chain: first */
	struct held_ref *onext, *oprev;	/* the owner's refs */
	struct held_owner *o;
	uint32_t id;
	uint32_t count;
};

struct held_owner {
	struct held_link h;		/* first */
	uint64_t owner;
	struct held_ref *refs;
	uint32_t nr_refs;
};

#define HELD_MIN_BUCKETS	64u

static void owner_unlink(struct held_map *m, struct held_owner *o);

/* 64-bit finaliser (splitmix64): every key bit affects every hash bit. */
static uint64_t held_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint64_t ref_hash(uint64_t owner, uint32_t id)
{
	return held_mix(owner * 0x9e3779b97f4a7c15ULL ^ id);
}

/* The chain of @hash in @t (a table of @nr buckets, a power of two). */
static struct held_link **held_chain(struct held_link **t, size_t nr,
				     uint64_t hash)
{
	return &t[hash & (nr - 1)];
}

/* Double a table once it holds as many entries as buckets (or create
 * it); keeps the old one when memory is short (chains just grow). */
static int held_grow(struct held_link ***tp, size_t *nrp, size_t used)
{
	size_t n = *nrp ? *nrp * 2 : HELD_MIN_BUCKETS, i, oldn = *nrp;
	struct held_link **b, **old = *tp, *e, *next;

	if (oldn && used < oldn)
		return 0;
	b = calloc(n, sizeof(*b));
	if (!b)
		return oldn ? 0 : -ENOMEM;
	for (i = 0; i < oldn; i++)
		for (e = old[i]; e; e = next) {
			struct held_link **c = held_chain(b, n, e->hash);

			next = e->next;
			e->next = *c;
			*c = e;
		}
	*tp = b;
	*nrp = n;
	free(old);
	return 0;
}

static void held_link_in(struct held_link **t, size_t nr, struct held_link *e,
			 uint64_t hash)
{
	struct held_link **c = held_chain(t, nr, hash);

	e->hash = hash;
	e->next = *c;
	*c = e;
}

static void held_link_out(struct held_link **t, size_t nr, struct held_link *e)
{
	struct held_link **pp = held_chain(t, nr, e->hash);

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
}

static struct held_owner *owner_find(const struct held_map *m, uint64_t owner)
{
	uint64_t hash = held_mix(owner);
	struct held_link *l;

	if (!m->nr_obuckets)
		return NULL;
	for (l = *held_chain(m->obuckets, m->nr_obuckets, hash); l; l = l->next)
		if (((struct held_owner *)l)->owner == owner)
			return (struct held_owner *)l;
	return NULL;
}

static struct held_ref *ref_find(const struct held_map *m, uint64_t owner,
				 uint32_t id)
{
	uint64_t hash = ref_hash(owner, id);
	struct held_link *l;

	if (!m->nr_rbuckets)
		return NULL;
	for (l = *held_chain(m->rbuckets, m->nr_rbuckets, hash); l; l = l->next) {
		struct held_ref *e = (struct held_ref *)l;

		if (e->id == id && e->o->owner == owner)
			return e;
	}
	return NULL;
}

bool held_has(const struct held_map *m, uint64_t owner, uint32_t id)
{
	return ref_find(m, owner, id) != NULL;
}

int held_admit(const struct held_map *m, uint64_t owner,
	       unsigned int max_owners, unsigned int max_refs)
{
	if (m->nr_owners >= max_owners && !owner_find(m, owner))
		return -EMFILE;
	if (m->nr_refs >= max_refs)
		return -ENOSPC;
	return 0;
}

int held_add(struct held_map *m, uint64_t owner, uint32_t id)
{
	struct held_owner *o;
	struct held_ref *e = ref_find(m, owner, id);

	if (e) {
		if (e->count == UINT32_MAX)
			return -EOVERFLOW;
		e->count++;
		return 0;
	}
	if (held_grow(&m->rbuckets, &m->nr_rbuckets, m->nr_refs) ||
	    held_grow(&m->obuckets, &m->nr_obuckets, m->nr_owners))
		return -ENOMEM;
	o = owner_find(m, owner);
	if (!o) {
		o = calloc(1, sizeof(*o));
		if (!o)
			return -ENOMEM;
		o->owner = owner;
		held_link_in(m->obuckets, m->nr_obuckets, &o->h,
			     held_mix(owner));
		m->nr_owners++;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		if (!o->nr_refs)
			owner_unlink(m, o);
		return -ENOMEM;
	}
	e->o = o;
	e->id = id;
	e->count = 1;
	held_link_in(m->rbuckets, m->nr_rbuckets, &e->h, ref_hash(owner, id));
	e->onext = o->refs;
	if (o->refs)
		o->refs->oprev = e;
	o->refs = e;
	o->nr_refs++;
	m->nr_refs++;
	return 0;
}

static void ref_unlink(struct held_map *m, struct held_ref *e)
{
	held_link_out(m->rbuckets, m->nr_rbuckets, &e->h);
	if (e->oprev)
		e->oprev->onext = e->onext;
	else
		e->o->refs = e->onext;
	if (e->onext)
		e->onext->oprev = e->oprev;
	e->o->nr_refs--;
	m->nr_refs--;
}

static void owner_unlink(struct held_map *m, struct held_owner *o)
{
	held_link_out(m->obuckets, m->nr_obuckets, &o->h);
	m->nr_owners--;
	free(o);
}

void held_dec(struct held_map *m, uint64_t owner, uint32_t id)
{
	struct held_ref *e = ref_find(m, owner, id);
	struct held_owner *o;

	if (!e || --e->count)
		return;
	o = e->o;
	ref_unlink(m, e);
	free(e);
	if (!o->nr_refs)
		owner_unlink(m, o);
}

/* Unlink every ref of @o, calling @fn for each, then @o itself. */
static unsigned int owner_take(struct held_map *m, struct held_owner *o,
			       held_fn fn, void *arg)
{
	uint64_t owner = o->owner;
	unsigned int n = 0;

	while (o->refs) {
		struct held_ref *e = o->refs;

		ref_unlink(m, e);
		if (fn)
			fn(arg, owner, e->id);
		n += e->count;
		free(e);
	}
	owner_unlink(m, o);
	return n;
}

unsigned int held_take_owner(struct held_map *m, uint64_t owner, held_fn fn,
			     void *arg)
{
	struct held_owner *o = owner_find(m, owner);

	return o ? owner_take(m, o, fn, arg) : 0;
}

unsigned int held_take_all(struct held_map *m, held_fn fn, void *arg)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < m->nr_obuckets; i++)
		while (m->obuckets[i])
			n += owner_take(m, (struct held_owner *)m->obuckets[i],
					fn, arg);
	return n;
}

void held_free(struct held_map *m)
{
	held_take_all(m, NULL, NULL);
	free(m->rbuckets);
	free(m->obuckets);
	m->rbuckets = NULL;
	m->obuckets = NULL;
	m->nr_rbuckets = m->nr_obuckets = 0;
}
