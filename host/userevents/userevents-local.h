/* SPDX-License-Identifier: MIT */
/*
 * The user_events component's private header: the functions the core
 * library, its tests and fuzzers use beside the public API of
 * <hvtrace-userevents.h>, and what the files of host/userevents share.
 */
#ifndef HVT_USEREVENTS_LOCAL_H
#define HVT_USEREVENTS_LOCAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace-userevents.h>

/**
 * hvt_ue_parse - parse a user_events definition
 * @def: "name[:flags] [type name[;type name...]]" without the "u:" prefix
 * @out: the parsed definition, freed with hvt_ue_def_free()
 * @err: receives the message on failure (may be NULL)
 *
 * Applies the kernel's rules field by field; a rejected definition names
 * the offending field ("field 2 \"long x\": unknown type \"long\"").
 * There is no length limit here: callers apply HVT_UE_MAX_DESC or
 * HVT_UE_MAX_LINE.  Returns 0, -EINVAL or -ENOMEM.
 */
int hvt_ue_parse(const char *def, struct hvtrace_ue_def **out,
		 struct hvtrace_ue_error *err);

/** hvt_ue_def_free - free a definition from hvt_ue_parse() (NULL is ok). */
void hvt_ue_def_free(struct hvtrace_ue_def *def);

/**
 * hvt_ue_match_argv - match pre-split words (the dynamic_events delete form)
 *
 * Like hvtrace_ue_match_args() but without the implied space after ';' (the
 * kernel's "!u:NAME fields" path splits the line as it is).
 */
bool hvt_ue_match_argv(const struct hvtrace_ue_def *def, int argc,
		       char *const *argv);

/**
 * hvt_ue_format_text - the events/user_events/NAME/format file
 * @def: the event
 * @id:  its id (the "ID:" line and common_type)
 *
 * Byte for byte what Linux 6.12 prints for the same definition.
 * Returns a malloc'd string, or NULL when out of memory.
 */
char *hvt_ue_format_text(const struct hvtrace_ue_def *def, unsigned int id);

/**
 * hvt_ue_validate_record - check a record against its event's layout
 * @def:  the event
 * @rec:  the record, common fields included (what a ring buffer holds)
 * @len:  bytes of @rec
 *
 * The kernel's checks on a user_events write: the record must hold every
 * static field (-EINVAL), every __data_loc / __rel_loc must point inside
 * the record (-EFAULT), and a string one must end in a NUL (-EFAULT).
 * Returns 0 when a decoder may follow the locations safely.
 */
int hvt_ue_validate_record(const struct hvtrace_ue_def *def, const void *rec,
			   size_t len);

/**
 * hvt_ue_unregister_all - drop every reference of an owner (it went away)
 *
 * Returns the number of references dropped.
 */
int hvt_ue_unregister_all(struct hvtrace_ue_registry *reg, uint64_t owner);

/**
 * hvt_ue_dyn_write - apply a write(2) to dynamic_events
 * @buf: one or more newline-separated lines
 * @len: bytes in @buf
 *
 * Applies the lines in order and stops at the first failure, like the
 * kernel.  Returns @len, or -errno.
 */
long hvt_ue_dyn_write(struct hvtrace_ue_registry *reg, const char *buf,
		      size_t len, struct hvtrace_ue_error *err);

/**
 * hvt_ue_set_limit - change how many events may exist (kernel.user_events_max)
 * @limit: 0..max_events of the registry's config; lowering it below the
 *         current count deletes nothing, it only refuses new events.
 *
 * Returns 0, or -EINVAL when @limit exceeds the configured max_events.
 */
int hvt_ue_set_limit(struct hvtrace_ue_registry *reg, unsigned int limit);

/**
 * hvt_ue_format_of - the format file of an event by name
 *
 * Returns a malloc'd copy, or NULL with errno ENOENT or ENOMEM.
 */
char *hvt_ue_format_of(struct hvtrace_ue_registry *reg, const char *name);

/** hvt_ue_enable_generation - the current enable generation. */
uint64_t hvt_ue_enable_generation(struct hvtrace_ue_registry *reg);

/* --- helpers of the host/userevents files ---------------------------- */

/* The kernel's isspace(): the C locale's six plus 0xa0 (Latin-1 NBSP). */
static inline int ue_isspace(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0;
}

static inline const char *ue_skip_spaces(const char *s)
{
	while (ue_isspace((unsigned char)*s))
		s++;
	return s;
}

/* Set @err (if any) to @code and the formatted message; returns @code. */
int ue_err(struct hvtrace_ue_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copy @s (at most @n bytes) into @dst as a quoted-safe excerpt: control
 * characters become \t, \n or \xNN and long text ends in "...". */
void ue_excerpt(char *dst, size_t dstlen, const char *s, size_t n);

/* A growing string; on allocation failure 'failed' is set and further
 * appends do nothing. */
struct ue_buf {
	char *p;
	size_t len;
	size_t cap;
	int failed;
};

void ue_buf_printf(struct ue_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ue_buf_put(struct ue_buf *b, const char *s, size_t n);
/* The finished string (caller frees), or NULL if any append failed. */
char *ue_buf_finish(struct ue_buf *b);

/*
 * Split @s at runs of the kernel's white space, as argv_split() does.
 * Returns a malloc'd NULL-terminated vector whose strings live in the
 * same allocation (free the vector only), or NULL when out of memory.
 */
char **ue_argv_split(const char *s, int *argc);

/* The dynamic_events line "u:NAME type name; ..." into @b. */
void ue_dyn_line_into(struct ue_buf *b, const struct hvtrace_ue_def *def);

/* Bob Jenkins' lookup3 as the kernel's jhash(): the user_events table
 * hashes event names with it, which fixes the user_events_status order. */
uint32_t ue_jhash(const void *key, uint32_t length, uint32_t initval);

/* --- registry internals (ue_registry.c; ue_dynevents.c uses them) ------ */

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

/* The event named @name, or NULL (lock held). */
struct ue_event *ue_find(struct hvtrace_ue_registry *r, const char *name);
/* Whether an owner or a consumer uses @e. */
bool ue_busy(const struct ue_event *e);
/* Unlink and free @e (lock held). */
void ue_destroy(struct hvtrace_ue_registry *r, struct ue_event *e);
/*
 * Find or create the event of definition @text (lock held): the name and
 * field match first, then the parse, then the limits.  On success *out is
 * the event (new or existing) and *created says which.
 */
int ue_define(struct hvtrace_ue_registry *r, const char *text,
	      bool persistent, struct ue_event **out, bool *created,
	      struct hvtrace_ue_error *err);
/* Clear @err (may be NULL). */
void ue_clear_err(struct hvtrace_ue_error *err);

#endif /* HVT_USEREVENTS_LOCAL_H */
