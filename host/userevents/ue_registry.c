// SPDX-License-Identifier: MIT
/*
 * The user_events registry: which events exist, their ids, enable bits,
 * references and consumers.
 *
 * Lifetime follows the kernel (kernel/trace/trace_events_user.c):
 *
 *  - An event registered by an owner (a client) lives while someone uses
 *    it: a registration reference or an enabled consumer.  When the last
 *    use goes, it is deleted.
 *  - An event defined through dynamic_events is persistent: it stays until
 *    deleted, and it can only be deleted while nobody uses it (-EBUSY).
 *  - The same name with the same fields is the same event; the same name
 *    with other fields is refused (-EADDRINUSE).
 *
 * Events hang in a 256-bucket table hashed with the kernel's jhash, new
 * entries first in their bucket, so user_events_status lists them in the
 * order a kernel would; a list in creation order serves dynamic_events.
 * Lookups by id (a table over the id range) and by owner within an event
 * (owners sorted, binary search) do not scan, since owners and ids can
 * come from a hostile guest.
 *
 * Ids (common_type) come from [id_base, HVT_UE_ID_MAX], handed out in
 * increasing order and not reused until the range wraps, so records of a
 * deleted event are not attributed to a new one soon after.  Enable bits
 * are indices into struct hvt_control.enable[]; a new event takes the
 * lowest free bit (bits carry no history: a deleted event's bit is clear).
 *
 * Locking: one mutex serialises every call; callbacks run under it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>
#include <hvtrace/abi.h>
#include <hvtrace/hyp_events.h>

#include "userevents-local.h"

HVT_STATIC_ASSERT(HVT_UE_ID_MAX < HVTRACE_BUILTIN_ID_BASE &&
			  HVT_UE_ID_MAX < HVT_HYP_ID_BASE,
		  "user event ids must stay below the fixed event ids");
HVT_STATIC_ASSERT(HVT_UE_ID_MAX - HVT_UE_ID_BASE + 1 >= HVT_ABI_MAX_EVENTS,
		  "room for an id per event");

/* hash_min(jhash(name), 8): hash_32() with the golden ratio. */
static uint32_t ue_bucket(const char *name)
{
	uint32_t key = ue_jhash(name, (uint32_t)strlen(name), 0);

	return (key * 0x61C88647u) >> (32 - UE_HASH_BITS);
}

/* --- bitmaps ------------------------------------------------------------ */

static inline bool ue_test_bit(const uint64_t *map, uint32_t n)
{
	return map[n / 64] >> (n % 64) & 1;
}

static inline void ue_assign_bit(uint64_t *map, uint32_t n, bool on)
{
	if (on)
		map[n / 64] |= 1ULL << (n % 64);
	else
		map[n / 64] &= ~(1ULL << (n % 64));
}

/* --- events ------------------------------------------------------------- */

struct ue_event *ue_find(struct hvtrace_ue_registry *r, const char *name)
{
	struct ue_event *e;

	for (e = r->buckets[ue_bucket(name)]; e; e = e->hnext)
		if (!strcmp(e->def->name, name))
			return e;
	return NULL;
}

static struct ue_event *ue_find_id(struct hvtrace_ue_registry *r, uint32_t id)
{
	struct ue_event *e;

	if (id < r->id_base || id > HVT_UE_ID_MAX ||
	    !ue_test_bit(r->id_used, id - r->id_base))
		return NULL;
	e = r->by_id[id - r->id_base];
	return e && e->id == id ? e : NULL;
}

bool ue_busy(const struct ue_event *e)
{
	return e->refs || e->used_by;
}

static void ue_set_enable(struct hvtrace_ue_registry *r, struct ue_event *e,
			  bool on)
{
	if (ue_test_bit(r->enabled, e->bit) == on)
		return;
	ue_assign_bit(r->enabled, e->bit, on);
	r->gen++;
	if (r->hook)
		r->hook(r->hook_arg, e->bit, on);
}

void ue_destroy(struct hvtrace_ue_registry *r, struct ue_event *e)
{
	struct ue_event **pp;

	ue_set_enable(r, e, false);
	for (pp = &r->buckets[e->bucket]; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	if (e->prev)
		e->prev->next = e->next;
	else
		r->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		r->tail = e->prev;
	r->by_bit[e->bit] = NULL;
	r->by_id[e->id - r->id_base] = NULL;
	ue_assign_bit(r->id_used, e->id - r->id_base, false);
	r->nr_events--;
	free(e->owners);
	free(e->format);
	hvt_ue_def_free(e->def);
	free(e);
}

/* Delete an event nobody uses unless dynamic_events made it persistent. */
static void ue_maybe_release(struct hvtrace_ue_registry *r, struct ue_event *e)
{
	if (!e->persistent && !ue_busy(e))
		ue_destroy(r, e);
}

/*
 * An event's owners are sorted by owner, so finding one is a binary search:
 * a guest chooses its owners (client channels), and a linear scan per
 * registration would let it buy quadratic work.  Returns the index of
 * @owner, or where it would go (with *found false).
 */
static uint32_t ue_owner_pos(const struct ue_event *e, uint64_t owner,
			     bool *found)
{
	uint32_t lo = 0, hi = e->nr_owners;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (e->owners[mid].owner < owner)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < e->nr_owners && e->owners[lo].owner == owner;
	return lo;
}

static int ue_add_ref(struct ue_event *e, uint64_t owner)
{
	bool found;
	uint32_t i = ue_owner_pos(e, owner, &found);

	if (found) {
		if (e->owners[i].count == UINT32_MAX)
			return -EOVERFLOW;
		e->owners[i].count++;
		e->refs++;
		return 0;
	}
	if (e->nr_owners == e->cap_owners) {
		uint32_t cap = e->cap_owners ? e->cap_owners * 2 : 4;
		struct ue_owner_ref *o;

		o = realloc(e->owners, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		e->owners = o;
		e->cap_owners = cap;
	}
	memmove(&e->owners[i + 1], &e->owners[i],
		(e->nr_owners - i) * sizeof(*e->owners));
	e->owners[i].owner = owner;
	e->owners[i].count = 1;
	e->nr_owners++;
	e->refs++;
	return 0;
}

/* Drop @n references of @owner (all if n == 0); returns how many went. */
static uint32_t ue_drop_refs(struct ue_event *e, uint64_t owner, uint32_t n)
{
	bool found;
	uint32_t i = ue_owner_pos(e, owner, &found), dropped;

	if (!found)
		return 0;
	dropped = n && n < e->owners[i].count ? n : e->owners[i].count;
	e->owners[i].count -= dropped;
	e->refs -= dropped;
	if (!e->owners[i].count) {
		e->nr_owners--;
		memmove(&e->owners[i], &e->owners[i + 1],
			(e->nr_owners - i) * sizeof(*e->owners));
	}
	return dropped;
}

static int ue_alloc_id(struct hvtrace_ue_registry *r, uint32_t *id)
{
	uint32_t span = HVT_UE_ID_MAX - r->id_base + 1, i, cand;

	for (i = 0; i < span; i++) {
		cand = r->next_id + i;
		if (cand > HVT_UE_ID_MAX)
			cand -= span;
		if (!ue_test_bit(r->id_used, cand - r->id_base)) {
			*id = cand;
			r->next_id = cand == HVT_UE_ID_MAX ? r->id_base :
							     cand + 1;
			return 0;
		}
	}
	return -ENOSPC;
}

static int ue_alloc_bit(struct hvtrace_ue_registry *r, uint32_t *bit)
{
	uint32_t b;

	for (b = 0; b < r->max_events; b++) {
		if (!r->by_bit[b]) {
			*bit = b;
			return 0;
		}
	}
	return -EMFILE;
}

/*
 * A preferred binding (hvtrace_ue_register_at()) replaces the one just
 * allocated when its id and its bit are both free; the allocation is then
 * undone (@next_id: the allocator's position before it).  Ids keep
 * growing: the next new event gets an id above the preferred one.
 */
static void ue_apply_want(struct hvtrace_ue_registry *r, uint32_t next_id,
			  uint32_t *id, uint32_t *bit)
{
	const struct hvtrace_ue_reg *w = r->want;

	if (!w || w->id < r->id_base || w->id > HVT_UE_ID_MAX ||
	    w->bit >= r->max_events)
		return;
	if (ue_test_bit(r->id_used, w->id - r->id_base) || r->by_bit[w->bit])
		return;
	*id = w->id;
	*bit = w->bit;
	r->next_id = next_id;
	if (w->id >= r->next_id)
		r->next_id = w->id == HVT_UE_ID_MAX ? r->id_base : w->id + 1;
}

/*
 * user_event_parse() for a definition @text: the flags check, the lookup
 * by name and the field match first, then the parse, then the limits.
 * On success *out is the event (new or existing) and *created says which.
 */
int ue_define(struct hvtrace_ue_registry *r, const char *text,
		     bool persistent, struct ue_event **out, bool *created,
		     struct hvtrace_ue_error *err)
{
	char name[HVT_UE_MAX_LINE + 1];
	struct hvtrace_ue_def *def;
	struct ue_event *e;
	const char *args;
	uint32_t id, bit, next_id;
	int ret;

	*created = false;
	ret = hvtrace_ue_split_name(text, name, sizeof(name), &args, err);
	if (ret)
		return ret;
	e = ue_find(r, name);
	if (e) {
		char *line;

		if (hvtrace_ue_match_args(e->def, args)) {
			*out = e;
			return 0;
		}
		line = hvtrace_ue_dyn_line(e->def);
		ret = ue_err(err, -EADDRINUSE,
			     "event \"%s\" is in use with other fields (%s); register the same fields or use another name",
			     name, line ? line : "?");
		free(line);
		return ret;
	}
	ret = hvt_ue_parse(text, &def, err);
	if (ret)
		return ret;
	if (r->nr_events >= r->limit || ue_alloc_bit(r, &bit)) {
		hvt_ue_def_free(def);
		return ue_err(err, -EMFILE,
			      "too many events: the limit is %u; delete unused events first",
			      r->limit);
	}
	next_id = r->next_id;
	if (ue_alloc_id(r, &id)) {
		hvt_ue_def_free(def);
		return ue_err(err, -ENOSPC,
			      "no free event id in %u..%u; delete unused events first",
			      r->id_base, HVT_UE_ID_MAX);
	}
	ue_apply_want(r, next_id, &id, &bit);
	e = calloc(1, sizeof(*e));
	if (e)
		e->format = hvt_ue_format_text(def, id);
	if (!e || !e->format) {
		free(e);
		hvt_ue_def_free(def);
		return ue_err(err, -ENOMEM, "out of memory");
	}
	e->def = def;
	e->id = id;
	e->bit = bit;
	e->persistent = persistent;
	e->bucket = ue_bucket(def->name);
	e->hnext = r->buckets[e->bucket];
	r->buckets[e->bucket] = e;
	e->prev = r->tail;
	if (r->tail)
		r->tail->next = e;
	else
		r->head = e;
	r->tail = e;
	r->by_bit[bit] = e;
	r->by_id[id - r->id_base] = e;
	ue_assign_bit(r->id_used, id - r->id_base, true);
	r->nr_events++;
	*out = e;
	*created = true;
	return 0;
}

static void ue_fill_info(const struct ue_event *e,
			 struct hvtrace_ue_event_info *info)
{
	info->name = e->def->name;
	info->id = e->id;
	info->bit = e->bit;
	info->used_by = e->used_by;
	info->enabled = e->used_by != 0;
	info->persistent = e->persistent;
	info->refs = e->refs;
	info->owners = e->nr_owners;
	info->def = e->def;
	info->format = e->format;
}

void ue_clear_err(struct hvtrace_ue_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

/* --- public API ---------------------------------------------------------- */

int hvtrace_ue_registry_create(const struct hvtrace_ue_registry_config *cfg,
			   struct hvtrace_ue_registry **out)
{
	unsigned int max = cfg && cfg->max_events ? cfg->max_events :
						    HVT_ABI_MAX_EVENTS;
	unsigned int base = cfg && cfg->id_base ? cfg->id_base :
						  HVT_UE_ID_BASE;
	struct hvtrace_ue_registry *r;
	size_t id_words;

	if (max > HVT_ABI_MAX_EVENTS || base > HVT_UE_ID_MAX ||
	    HVT_UE_ID_MAX - base + 1 < max)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	id_words = (HVT_UE_ID_MAX - base + 1 + 63) / 64;
	r->by_bit = calloc(max, sizeof(*r->by_bit));
	r->id_used = calloc(id_words, sizeof(uint64_t));
	r->by_id = calloc(HVT_UE_ID_MAX - base + 1, sizeof(*r->by_id));
	r->enabled = calloc((max + 63) / 64, sizeof(uint64_t));
	if (!r->by_bit || !r->id_used || !r->by_id || !r->enabled ||
	    pthread_mutex_init(&r->lock, NULL)) {
		free(r->by_bit);
		free(r->id_used);
		free(r->by_id);
		free(r->enabled);
		free(r);
		return -ENOMEM;
	}
	r->max_events = max;
	r->limit = max;
	r->id_base = base;
	r->next_id = base;
	*out = r;
	return 0;
}

void hvtrace_ue_registry_destroy(struct hvtrace_ue_registry *r)
{
	if (!r)
		return;
	r->hook = NULL;
	while (r->head)
		ue_destroy(r, r->head);
	pthread_mutex_destroy(&r->lock);
	free(r->by_bit);
	free(r->id_used);
	free(r->by_id);
	free(r->enabled);
	free(r);
}

static int ue_register(struct hvtrace_ue_registry *r, uint64_t owner,
		       const char *def, const struct hvtrace_ue_reg *want,
		       struct hvtrace_ue_reg *out, struct hvtrace_ue_error *err)
{
	struct ue_event *e;
	bool created;
	size_t len;
	int ret;

	ue_clear_err(err);
	len = strnlen(def, HVT_UE_MAX_DESC);
	if (len >= HVT_UE_MAX_DESC)
		return ue_err(err, -E2BIG,
			      "definition is longer than %u bytes (%u with the terminating NUL); shorten the names",
			      HVT_UE_MAX_DESC - 1, HVT_UE_MAX_DESC);
	pthread_mutex_lock(&r->lock);
	r->want = want;
	ret = ue_define(r, def, false, &e, &created, err);
	r->want = NULL;
	if (!ret) {
		ret = ue_add_ref(e, owner);
		if (ret) {
			if (created)
				ue_destroy(r, e);
			ue_err(err, ret, "cannot take another reference");
		} else {
			out->id = e->id;
			out->bit = e->bit;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int hvtrace_ue_register(struct hvtrace_ue_registry *r, uint64_t owner,
		    const char *def, struct hvtrace_ue_reg *out,
		    struct hvtrace_ue_error *err)
{
	return ue_register(r, owner, def, NULL, out, err);
}

int hvtrace_ue_register_at(struct hvtrace_ue_registry *r, uint64_t owner,
		       const char *def, uint32_t want_id, uint32_t want_bit,
		       struct hvtrace_ue_reg *out, struct hvtrace_ue_error *err)
{
	struct hvtrace_ue_reg want = { want_id, want_bit };

	return ue_register(r, owner, def, &want, out, err);
}

int hvtrace_ue_unregister(struct hvtrace_ue_registry *r, uint64_t owner, uint32_t id,
		      struct hvtrace_ue_error *err)
{
	struct ue_event *e;
	int ret = 0;

	ue_clear_err(err);
	pthread_mutex_lock(&r->lock);
	e = ue_find_id(r, id);
	if (!e || !ue_drop_refs(e, owner, 1))
		ret = ue_err(err, -ENOENT,
			     "event id %u is not registered by this owner", id);
	else
		ue_maybe_release(r, e);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int hvtrace_ue_unregister_owner_id(struct hvtrace_ue_registry *r, uint64_t owner,
			       uint32_t id)
{
	struct ue_event *e;
	uint32_t n = 0;

	pthread_mutex_lock(&r->lock);
	e = ue_find_id(r, id);
	if (e) {
		n = ue_drop_refs(e, owner, 0);
		if (n)
			ue_maybe_release(r, e);
	}
	pthread_mutex_unlock(&r->lock);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int hvt_ue_unregister_all(struct hvtrace_ue_registry *r, uint64_t owner)
{
	struct ue_event *e, *next;
	uint32_t total = 0;

	pthread_mutex_lock(&r->lock);
	for (e = r->head; e; e = next) {
		uint32_t n;

		next = e->next;
		n = ue_drop_refs(e, owner, 0);
		if (n) {
			total += n;
			ue_maybe_release(r, e);
		}
	}
	pthread_mutex_unlock(&r->lock);
	return total > INT32_MAX ? INT32_MAX : (int)total;
}

int hvtrace_ue_delete(struct hvtrace_ue_registry *r, const char *name,
		  struct hvtrace_ue_error *err)
{
	struct ue_event *e;
	int ret = 0;

	ue_clear_err(err);
	pthread_mutex_lock(&r->lock);
	e = ue_find(r, name);
	if (!e)
		ret = ue_err(err, -ENOENT, "no event \"%s\"", name);
	else if (ue_busy(e))
		ret = ue_err(err, -EBUSY,
			     "event \"%s\" is in use (%u registrations%s); it can be deleted once unused",
			     name, e->refs, e->used_by ? ", enabled" : "");
	else
		ue_destroy(r, e);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int hvtrace_ue_set_enabled(struct hvtrace_ue_registry *r, const char *name,
		       unsigned int consumer, bool on,
		       struct hvtrace_ue_error *err)
{
	struct ue_event *e;
	int ret = 0;

	ue_clear_err(err);
	if (consumer != HVT_UE_USED_FTRACE && consumer != HVT_UE_USED_PERF &&
	    consumer != HVT_UE_USED_OTHER)
		return ue_err(err, -EINVAL,
			      "consumer 0x%x is not one of HVT_UE_USED_*",
			      consumer);
	pthread_mutex_lock(&r->lock);
	e = ue_find(r, name);
	if (!e) {
		ret = ue_err(err, -ENOENT, "no event \"%s\"", name);
	} else if (on) {
		e->used_by |= (uint8_t)consumer;
		ue_set_enable(r, e, true);
	} else if (e->used_by & consumer) {
		e->used_by &= (uint8_t)~consumer;
		ue_set_enable(r, e, e->used_by != 0);
		ue_maybe_release(r, e);
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int hvtrace_ue_lookup(struct hvtrace_ue_registry *r, const char *name,
		  struct hvtrace_ue_event_info *info)
{
	struct ue_event *e;

	pthread_mutex_lock(&r->lock);
	e = ue_find(r, name);
	if (e)
		ue_fill_info(e, info);
	pthread_mutex_unlock(&r->lock);
	return e ? 0 : -ENOENT;
}

int hvtrace_ue_lookup_id(struct hvtrace_ue_registry *r, uint32_t id,
		     struct hvtrace_ue_event_info *info)
{
	struct ue_event *e;

	pthread_mutex_lock(&r->lock);
	e = ue_find_id(r, id);
	if (e)
		ue_fill_info(e, info);
	pthread_mutex_unlock(&r->lock);
	return e ? 0 : -ENOENT;
}

int hvtrace_ue_foreach(struct hvtrace_ue_registry *r,
		   int (*fn)(const struct hvtrace_ue_event_info *info, void *arg),
		   void *arg)
{
	struct hvtrace_ue_event_info info;
	struct ue_event *e;
	int ret = 0;

	pthread_mutex_lock(&r->lock);
	for (e = r->head; e && !ret; e = e->next) {
		ue_fill_info(e, &info);
		ret = fn(&info, arg);
	}
	pthread_mutex_unlock(&r->lock);
	return ret;
}

int hvt_ue_set_limit(struct hvtrace_ue_registry *r, unsigned int limit)
{
	if (limit > r->max_events)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	r->limit = limit;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

unsigned int hvtrace_ue_count(struct hvtrace_ue_registry *r)
{
	unsigned int n;

	pthread_mutex_lock(&r->lock);
	n = r->nr_events;
	pthread_mutex_unlock(&r->lock);
	return n;
}

char *hvtrace_ue_status_text(struct hvtrace_ue_registry *r)
{
	struct ue_buf b = { 0 };
	struct ue_event *e;
	unsigned int i, active = 0, busy = 0;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < UE_HASH_SIZE; i++) {
		for (e = r->buckets[i]; e; e = e->hnext) {
			ue_buf_put(&b, e->def->name, strlen(e->def->name));
			if (e->used_by) {
				ue_buf_printf(&b, " # Used by%s%s%s",
					      e->used_by & HVT_UE_USED_FTRACE ?
						      " ftrace" : "",
					      e->used_by & HVT_UE_USED_PERF ?
						      " perf" : "",
					      e->used_by & HVT_UE_USED_OTHER ?
						      " other" : "");
				busy++;
			}
			ue_buf_put(&b, "\n", 1);
			active++;
		}
	}
	pthread_mutex_unlock(&r->lock);
	ue_buf_printf(&b, "\nActive: %u\nBusy: %u\n", active, busy);
	return ue_buf_finish(&b);
}

char *hvt_ue_format_of(struct hvtrace_ue_registry *r, const char *name)
{
	struct ue_event *e;
	char *s = NULL;

	pthread_mutex_lock(&r->lock);
	e = ue_find(r, name);
	if (e)
		s = strdup(e->format);
	pthread_mutex_unlock(&r->lock);
	errno = e ? (s ? 0 : ENOMEM) : ENOENT;
	return s;
}

int hvtrace_ue_enable_snapshot(struct hvtrace_ue_registry *r, uint64_t *words,
			   size_t nwords, uint64_t *gen)
{
	size_t have, i;

	pthread_mutex_lock(&r->lock);
	have = (r->max_events + 63) / 64;
	for (i = 0; i < nwords; i++)
		words[i] = i < have ? r->enabled[i] : 0;
	if (gen)
		*gen = r->gen;
	pthread_mutex_unlock(&r->lock);
	return nwords > INT32_MAX ? INT32_MAX : (int)nwords;
}

uint64_t hvt_ue_enable_generation(struct hvtrace_ue_registry *r)
{
	uint64_t g;

	pthread_mutex_lock(&r->lock);
	g = r->gen;
	pthread_mutex_unlock(&r->lock);
	return g;
}

void hvtrace_ue_set_enable_hook(struct hvtrace_ue_registry *r,
			    void (*fn)(void *arg, uint32_t bit, bool on),
			    void *arg)
{
	pthread_mutex_lock(&r->lock);
	r->hook = fn;
	r->hook_arg = arg;
	pthread_mutex_unlock(&r->lock);
}
