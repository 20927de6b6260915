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

struct held_ref {
	struct held_ref *hnext;		/* hash chain */
	struct held_ref *onext, *oprev;	/* the owner's refs */
	struct held_owner *o;
	uint32_t id;
	uint32_t count;
};

struct held_owner {
	struct held_owner *hnext;
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

static size_t ref_slot(const struct held_map *m, uint64_t owner, uint32_t id)
{
	return (size_t)(held_mix(owner * 0x9e3779b97f4a7c15ULL ^ id) &
			(m->nr_rbuckets - 1));
}

static size_t owner_slot(const struct held_map *m, uint64_t owner)
{
	return (size_t)(held_mix(owner) & (m->nr_obuckets - 1));
}

/* Double a table once it holds as many entries as buckets (or create
 * it); keeps the old one when memory is short (chains just grow). */
static int held_grow_refs(struct held_map *m)
{
	size_t n = m->nr_rbuckets ? m->nr_rbuckets * 2 : HELD_MIN_BUCKETS;
	struct held_ref **b, **old = m->rbuckets, *e, *next;
	size_t i, oldn = m->nr_rbuckets;

	if (m->nr_rbuckets && m->nr_refs < m->nr_rbuckets)
		return 0;
	b = calloc(n, sizeof(*b));
	if (!b)
		return m->nr_rbuckets ? 0 : -ENOMEM;
	m->rbuckets = b;
	m->nr_rbuckets = n;
	for (i = 0; i < oldn; i++)
		for (e = old[i]; e; e = next) {
			size_t s = ref_slot(m, e->o->owner, e->id);

			next = e->hnext;
			e->hnext = b[s];
			b[s] = e;
		}
	free(old);
	return 0;
}

static int held_grow_owners(struct held_map *m)
{
	size_t n = m->nr_obuckets ? m->nr_obuckets * 2 : HELD_MIN_BUCKETS;
	struct held_owner **b, **old = m->obuckets, *e, *next;
	size_t i, oldn = m->nr_obuckets;

	if (m->nr_obuckets && m->nr_owners < m->nr_obuckets)
		return 0;
	b = calloc(n, sizeof(*b));
	if (!b)
		return m->nr_obuckets ? 0 : -ENOMEM;
	m->obuckets = b;
	m->nr_obuckets = n;
	for (i = 0; i < oldn; i++)
		for (e = old[i]; e; e = next) {
			size_t s = owner_slot(m, e->owner);

			next = e->hnext;
			e->hnext = b[s];
			b[s] = e;
		}
	free(old);
	return 0;
}

static struct held_owner *owner_find(const struct held_map *m, uint64_t owner)
{
	struct held_owner *o;

	if (!m->nr_obuckets)
		return NULL;
	for (o = m->obuckets[owner_slot(m, owner)]; o; o = o->hnext)
		if (o->owner == owner)
			return o;
	return NULL;
}

static struct held_ref *ref_find(const struct held_map *m, uint64_t owner,
				 uint32_t id)
{
	struct held_ref *e;

	if (!m->nr_rbuckets)
		return NULL;
	for (e = m->rbuckets[ref_slot(m, owner, id)]; e; e = e->hnext)
		if (e->id == id && e->o->owner == owner)
			return e;
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
	size_t s;

	if (e) {
		if (e->count == UINT32_MAX)
			return -EOVERFLOW;
		e->count++;
		return 0;
	}
	if (held_grow_refs(m) || held_grow_owners(m))
		return -ENOMEM;
	o = owner_find(m, owner);
	if (!o) {
		o = calloc(1, sizeof(*o));
		if (!o)
			return -ENOMEM;
		o->owner = owner;
		s = owner_slot(m, owner);
		o->hnext = m->obuckets[s];
		m->obuckets[s] = o;
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
	s = ref_slot(m, owner, id);
	e->hnext = m->rbuckets[s];
	m->rbuckets[s] = e;
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
	struct held_ref **pp = &m->rbuckets[ref_slot(m, e->o->owner, e->id)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
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
	struct held_owner **pp = &m->obuckets[owner_slot(m, o->owner)];

	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
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
			n += owner_take(m, m->obuckets[i], fn, arg);
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
