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

#define UE_HASH_BITS	8
#define UE_HASH_SIZE	(1u << UE_HASH_BITS)

struct ue_owner_ref {
	uint64_t owner;
	uint32_t count;
};

struct ue_event {
	struct hvtrace_ue_def *def;
	char *format;
	uint32_t id;
	uint32_t bit;
	uint8_t used_by;
	bool persistent;
	uint32_t refs;			/* sum of owners[].count */
	struct ue_owner_ref *owners;
	uint32_t nr_owners;
	uint32_t cap_owners;
	struct ue_event *hnext;		/* bucket chain, newest first */
	struct ue_event *prev, *next;	/* creation order */
	uint32_t bucket;
};

struct hvtrace_ue_registry {
	pthread_mutex_t lock;
	unsigned int max_events;	/* enable bits: by_bit[] slots */
	unsigned int limit;		/* events allowed, <= max_events */
	uint32_t id_base;
	uint32_t next_id;
	unsigned int nr_events;
	struct ue_event *buckets[UE_HASH_SIZE];
	struct ue_event *head, *tail;
	struct ue_event **by_bit;	/* max_events slots */
	uint64_t *id_used;		/* bitmap over [id_base, ID_MAX] */
	struct ue_event **by_id;	/* [id - id_base]: O(1) by id */
	uint64_t *enabled;		/* bitmap over bits */
	uint64_t gen;
	void (*hook)(void *arg, uint32_t bit, bool on);
	void *hook_arg;
	/* hvtrace_ue_register_at(): the binding the event it creates should
	 * get; set only for that call, under the lock. */
	const struct hvtrace_ue_reg *want;
};

/* --- jhash (include/linux/jhash.h) ------------------------------------ */

static inline uint32_t ue_rol32(uint32_t w, unsigned int s)
{
	return (w << s) | (w >> (32 - s));
}

#define UE_JHASH_MIX(a, b, c)						\
	do {								\
		a -= c; a ^= ue_rol32(c, 4); c += b;			\
		b -= a; b ^= ue_rol32(a, 6); a += c;			\
		c -= b; c ^= ue_rol32(b, 8); b += a;			\
		a -= c; a ^= ue_rol32(c, 16); c += b;			\
		b -= a; b ^= ue_rol32(a, 19); a += c;			\
		c -= b; c ^= ue_rol32(b, 4); b += a;			\
	} while (0)

#define UE_JHASH_FINAL(a, b, c)						\
	do {								\
		c ^= b; c -= ue_rol32(b, 14);				\
		a ^= c; a -= ue_rol32(c, 11);				\
		b ^= a; b -= ue_rol32(a, 25);				\
		c ^= b; c -= ue_rol32(b, 16);				\
		a ^= c; a -= ue_rol32(c, 4);				\
		b ^= a; b -= ue_rol32(a, 14);				\
		c ^= b; c -= ue_rol32(b, 24);				\
	} while (0)

static uint32_t ue_le32(const uint8_t *k)
{
	return (uint32_t)k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 |
	       (uint32_t)k[3] << 24;
}

uint32_t ue_jhash(const void *key, uint32_t length, uint32_t initval)
{
	const uint8_t *k = key;
	uint32_t a, b, c;

	a = b = c = 0xdeadbeef + length + initval;
	while (length > 12) {
		a += ue_le32(k);
		b += ue_le32(k + 4);
		c += ue_le32(k + 8);
		UE_JHASH_MIX(a, b, c);
		length -= 12;
		k += 12;
	}
	switch (length) {
	case 12: c += (uint32_t)k[11] << 24; /* fall through */
	case 11: c += (uint32_t)k[10] << 16; /* fall through */
	case 10: c += (uint32_t)k[9] << 8; /* fall through */
	case 9: c += k[8]; /* fall through */
	case 8: b += (uint32_t)k[7] << 24; /* fall through */
	case 7: b += (uint32_t)k[6] << 16; /* fall through */
	case 6: b += (uint32_t)k[5] << 8; /* fall through */
	case 5: b += k[4]; /* fall through */
	case 4: a += (uint32_t)k[3] << 24; /* fall through */
	case 3: a += (uint32_t)k[2] << 16; /* fall through */
	case 2: a += (uint32_t)k[1] << 8; /* fall through */
	case 1:
		a += k[0];
		UE_JHASH_FINAL(a, b, c);
		break;
	case 0:
		break;
	}
	return c;
}

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

static struct ue_event *ue_find(struct hvtrace_ue_registry *r, const char *name)
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

static bool ue_busy(const struct ue_event *e)
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

static void ue_destroy(struct hvtrace_ue_registry *r, struct ue_event *e)
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
static int ue_define(struct hvtrace_ue_registry *r, const char *text,
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

static void ue_clear_err(struct hvtrace_ue_error *err)
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

/* dyn_event_release() with user_event_match(): "!u:NAME args" */
static int ue_dyn_delete(struct hvtrace_ue_registry *r, const char *line,
			 struct hvtrace_ue_error *err)
{
	char **argv, *event, *system = NULL, *slash;
	struct ue_event *e;
	int argc = 0, ret = -ENOENT;

	argv = ue_argv_split(line, &argc);
	if (!argv)
		return ue_err(err, -ENOMEM, "out of memory");
	if (argv[0][0] == '-') {
		if (argv[0][1] != ':') {
			ret = ue_err(err, -EINVAL,
				     "bad delete command \"%s\": use -:NAME or !u:NAME",
				     argv[0]);
			goto out;
		}
		event = &argv[0][2];
	} else {
		event = strchr(argv[0], ':');
		if (!event) {
			ret = ue_err(err, -EINVAL,
				     "bad delete command \"%s\": use !u:NAME [fields]",
				     argv[0]);
			goto out;
		}
		event++;
	}
	slash = strchr(event, '/');
	if (slash) {
		system = event;
		event = slash + 1;
		*slash = '\0';
	}
	if (!system && event[0] == '\0') {
		ret = ue_err(err, -EINVAL, "delete command names no event");
		goto out;
	}
	if (system && strcmp(system, HVT_UE_SYSTEM) &&
	    strcmp(system, HVT_UE_SYSTEM_MULTI))
		e = NULL;
	else
		e = ue_find(r, event);
	if (e && hvt_ue_match_argv(e->def, argc - 1, argv + 1)) {
		if (ue_busy(e)) {
			ret = ue_err(err, -EBUSY,
				     "event \"%s\" is in use (%u registrations%s); it can be deleted once unused",
				     event, e->refs,
				     e->used_by ? ", enabled" : "");
		} else {
			ue_destroy(r, e);
			ret = 0;
		}
	} else if (e) {
		char *have = hvtrace_ue_dyn_line(e->def);

		ret = ue_err(err, -ENOENT,
			     "no event \"%s\" with these fields; the delete command must repeat them (%s)",
			     event, have ? have : "?");
		free(have);
	} else {
		ret = ue_err(err, -ENOENT, "no event \"%s\"", event);
	}
out:
	free(argv);
	return ret;
}

static int ue_dyn_apply_locked(struct hvtrace_ue_registry *r, const char *line,
			       size_t len, struct hvtrace_ue_error *err)
{
	char *copy, *hash;
	struct ue_event *e;
	bool created;
	int ret;

	if (len > HVT_UE_MAX_LINE)
		return ue_err(err, -E2BIG,
			      "line is %zu bytes; dynamic_events lines are limited to %u",
			      len, HVT_UE_MAX_LINE);
	if (memchr(line, '\0', len) || memchr(line, '\n', len))
		return ue_err(err, -EINVAL,
			      "a line must not contain NUL or newline bytes");
	copy = malloc(len + 1);
	if (!copy)
		return ue_err(err, -ENOMEM, "out of memory");
	memcpy(copy, line, len);
	copy[len] = '\0';
	/* Comments run from '#' to the end of the line. */
	hash = strchr(copy, '#');
	if (hash)
		*hash = '\0';

	if (copy[0] == '-' || copy[0] == '!') {
		ret = ue_dyn_delete(r, copy, err);
	} else if (*ue_skip_spaces(copy) == '\0') {
		ret = 0;
	} else if (strncmp(copy, HVT_UE_PREFIX, 2)) {
		char ex[64];

		ue_excerpt(ex, sizeof(ex), copy, strlen(copy));
		ret = ue_err(err, -EINVAL,
			     "\"%s\" is not a user_events command: write u:NAME [fields] to define an event, !u:NAME [fields] to delete one",
			     ex);
	} else {
		ret = ue_define(r, ue_skip_spaces(copy + 2), true, &e,
				&created, err);
	}
	free(copy);
	return ret;
}

int hvtrace_ue_dyn_apply(struct hvtrace_ue_registry *r, const char *line,
		     struct hvtrace_ue_error *err)
{
	int ret;

	ue_clear_err(err);
	pthread_mutex_lock(&r->lock);
	ret = ue_dyn_apply_locked(r, line, strlen(line), err);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

long hvt_ue_dyn_write(struct hvtrace_ue_registry *r, const char *buf, size_t len,
		      struct hvtrace_ue_error *err)
{
	size_t pos = 0;
	int ret = 0;

	ue_clear_err(err);
	if (memchr(buf, '\0', len))
		return ue_err(err, -EINVAL,
			      "dynamic_events text must not contain NUL bytes");
	pthread_mutex_lock(&r->lock);
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		ret = ue_dyn_apply_locked(r, buf + pos, n, err);
		if (ret)
			break;
		pos += n + (nl ? 1 : 0);
	}
	pthread_mutex_unlock(&r->lock);
	return ret ? ret : (long)len;
}

int hvtrace_ue_dyn_clear(struct hvtrace_ue_registry *r, struct hvtrace_ue_error *err)
{
	struct ue_event *e;
	int n = 0, ret = 0;

	ue_clear_err(err);
	pthread_mutex_lock(&r->lock);
	for (e = r->head; e; e = e->next) {
		if (ue_busy(e)) {
			ret = ue_err(err, -EBUSY,
				     "event \"%s\" is in use; nothing was deleted",
				     e->def->name);
			break;
		}
	}
	while (!ret && r->head) {
		ue_destroy(r, r->head);
		n++;
	}
	pthread_mutex_unlock(&r->lock);
	return ret ? ret : n;
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

char *hvtrace_ue_dyn_events_text(struct hvtrace_ue_registry *r)
{
	struct ue_buf b = { 0 };
	struct ue_event *e;

	pthread_mutex_lock(&r->lock);
	for (e = r->head; e; e = e->next) {
		ue_dyn_line_into(&b, e->def);
		ue_buf_put(&b, "\n", 1);
	}
	pthread_mutex_unlock(&r->lock);
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
