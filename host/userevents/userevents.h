/* SPDX-License-Identifier: MIT */
/*
 * user_events on the host: the definition grammar, the format files and
 * the registry that owns event ids, enable bits and lifetimes.
 *
 * Guest processes define Linux user_events ("name type field;type field")
 * that the host proxies: the host parses every definition with the rules
 * of the kernel's kernel/trace/trace_events_user.c (Linux 6.4+), generates
 * the same events/user_events/NAME/format text a kernel would, and keeps a
 * registry with tracefs-like behaviour (dynamic_events, user_events_status,
 * reference counting, "Used by" enablement).  docs/userevents.md describes
 * the grammar, the lifetime rules and the few deliberate differences.
 *
 * Internal to libhvtrace (hidden visibility); the host daemon, the CLI and
 * the tests use it directly.  Every function returns 0 (or a count) on
 * success and a negative errno on failure; where a struct hvt_ue_error is
 * passed, it receives a message naming what was wrong.
 */
#ifndef HVT_USEREVENTS_H
#define HVT_USEREVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Names the kernel uses. */
#define HVT_UE_SYSTEM		"user_events"
#define HVT_UE_SYSTEM_MULTI	"user_events_multi"
#define HVT_UE_PREFIX		"u:"

/* A definition registered by a process: 512 bytes with the NUL. */
#define HVT_UE_MAX_DESC		512u
/* One dynamic_events line (the kernel's WRITE_BUFSIZE - 2). */
#define HVT_UE_MAX_LINE		4094u
/* Largest char[N]. */
#define HVT_UE_MAX_ARRAY	1024u
/* The common fields (type, flags, preempt_count, pid) before user data. */
#define HVT_UE_COMMON_SIZE	8u
/*
 * Event ids (common_type) of user events: from HVT_UE_ID_BASE by default,
 * above the ids a Linux kernel gives its own events, up to HVT_UE_ID_MAX,
 * below hvtrace's built-in events (HVTRACE_BUILTIN_ID_BASE, 0xe000) and
 * the hypervisor's (HVT_HYP_ID_BASE, 0xf000).
 */
#define HVT_UE_ID_BASE		32768u
#define HVT_UE_ID_MAX		0xdfffu

#define HVT_UE_MSG_MAX		256

struct hvt_ue_error {
	int code;			/* the -errno returned, 0 if none */
	char msg[HVT_UE_MSG_MAX];	/* what was wrong, in words */
};

/* --- definitions ---------------------------------------------------- */

/*
 * What a field holds.  Loc values are u32: length << 16 | offset, the
 * offset counted from the record start (__data_loc) or from the end of the
 * loc field (__rel_loc).
 */
enum hvt_ue_kind {
	HVT_UE_KIND_INT,	/* sN, uN, char, short, int, unsigned ... */
	HVT_UE_KIND_ARRAY,	/* char[N], unsigned char[N]: N bytes */
	HVT_UE_KIND_DATA_LOC,	/* __data_loc TYPE */
	HVT_UE_KIND_REL_LOC,	/* __rel_loc TYPE */
	HVT_UE_KIND_STRUCT,	/* struct TYPE NAME SIZE: SIZE bytes */
};

struct hvt_ue_field {
	const char *type;	/* as the kernel keeps it: "unsigned int" */
	const char *name;
	uint32_t offset;	/* in the record, common fields included */
	uint32_t size;
	uint8_t kind;		/* enum hvt_ue_kind */
	bool is_signed;		/* the kernel's rule: type[0] != 'u' */
};

struct hvt_ue_def {
	const char *name;
	uint32_t nr_fields;
	const struct hvt_ue_field *fields;	/* in definition order */
	uint32_t record_size;	/* common + static fields: least bytes */
};

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
int hvt_ue_parse(const char *def, struct hvt_ue_def **out,
		 struct hvt_ue_error *err);

/** hvt_ue_def_free - free a definition from hvt_ue_parse() (NULL is ok). */
void hvt_ue_def_free(struct hvt_ue_def *def);

/**
 * hvt_ue_split_name - find the event name of a definition
 * @def:     the definition (no "u:" prefix)
 * @name:    receives the NUL-terminated name
 * @namelen: size of @name
 * @args:    receives a pointer into @def to the field list, or NULL when
 *           the definition has no space (no field list at all)
 * @err:     receives the message on failure (may be NULL)
 *
 * Rejects text flags (":FLAG") and names the registry cannot serve.
 * Returns 0, -EINVAL, or -E2BIG when the name does not fit @namelen.
 */
int hvt_ue_split_name(const char *def, char *name, size_t namelen,
		      const char **args, struct hvt_ue_error *err);

/**
 * hvt_ue_match_args - does a field list describe an existing event?
 * @def:  the existing event
 * @args: the field list of a new definition (NULL for none)
 *
 * The kernel's matching: whitespace runs are one separator, a space is
 * implied after every ';', struct sizes take part, and the fields must
 * agree in order, type and name.  Returns true on a match.
 */
bool hvt_ue_match_args(const struct hvt_ue_def *def, const char *args);

/**
 * hvt_ue_match_argv - match pre-split words (the dynamic_events delete form)
 *
 * Like hvt_ue_match_args() but without the implied space after ';' (the
 * kernel's "!u:NAME fields" path splits the line as it is).
 */
bool hvt_ue_match_argv(const struct hvt_ue_def *def, int argc,
		       char *const *argv);

/* --- text ------------------------------------------------------------ */

/**
 * hvt_ue_format_text - the events/user_events/NAME/format file
 * @def: the event
 * @id:  its id (the "ID:" line and common_type)
 *
 * Byte for byte what Linux 6.12 prints for the same definition.
 * Returns a malloc'd string, or NULL when out of memory.
 */
char *hvt_ue_format_text(const struct hvt_ue_def *def, unsigned int id);

/** hvt_ue_print_fmt - the "print fmt:" value alone (malloc'd, or NULL). */
char *hvt_ue_print_fmt(const struct hvt_ue_def *def);

/**
 * hvt_ue_dyn_line - the dynamic_events line "u:NAME type name; type name"
 * without the newline (malloc'd, or NULL).
 */
char *hvt_ue_dyn_line(const struct hvt_ue_def *def);

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
int hvt_ue_validate_record(const struct hvt_ue_def *def, const void *rec,
			   size_t len);

/**
 * hvt_ue_errno_name - "EINVAL" for -EINVAL and the like (static string)
 */
const char *hvt_ue_errno_name(int err);

/* --- the registry ---------------------------------------------------- */

struct hvt_ue_registry;

/* Consumers that can enable an event (the kernel's "Used by" words). */
#define HVT_UE_USED_FTRACE	(1u << 0)
#define HVT_UE_USED_PERF	(1u << 1)
#define HVT_UE_USED_OTHER	(1u << 7)
#define HVT_UE_USED_MASK	(HVT_UE_USED_FTRACE | HVT_UE_USED_PERF | \
				 HVT_UE_USED_OTHER)

struct hvt_ue_registry_config {
	unsigned int max_events;	/* 0: HVT_ABI_MAX_EVENTS */
	unsigned int id_base;		/* 0: HVT_UE_ID_BASE; ids run from
					 * here to HVT_UE_ID_MAX */
};

/* What a registration hands back to a writer. */
struct hvt_ue_reg {
	uint32_t id;			/* common_type of its records */
	uint32_t bit;			/* its bit in hvt_control.enable[] */
};

struct hvt_ue_event_info {
	const char *name;
	uint32_t id;
	uint32_t bit;
	uint8_t used_by;		/* HVT_UE_USED_* */
	bool enabled;			/* used_by != 0: the bit is set */
	bool persistent;		/* defined through dynamic_events */
	uint32_t refs;			/* registrations held by owners */
	uint32_t owners;		/* distinct owners holding it */
	const struct hvt_ue_def *def;
	const char *format;		/* format file text */
};

/**
 * hvt_ue_registry_create - an empty registry
 * @cfg: limits; NULL for the defaults
 * @out: the registry
 *
 * Returns 0, -EINVAL when a limit is out of range, or -ENOMEM.
 */
int hvt_ue_registry_create(const struct hvt_ue_registry_config *cfg,
			   struct hvt_ue_registry **out);

/** hvt_ue_registry_destroy - free the registry and every event in it. */
void hvt_ue_registry_destroy(struct hvt_ue_registry *reg);

/**
 * hvt_ue_register - register a definition on behalf of an owner
 * @reg:   the registry
 * @owner: opaque token of the registrant (a client connection, ...)
 * @def:   the definition, no "u:" prefix, at most HVT_UE_MAX_DESC - 1 bytes
 * @out:   receives the event's id and enable bit
 * @err:   receives the message on failure (may be NULL)
 *
 * An existing event with the same name and fields is shared; the owner
 * takes one reference per call.  Returns 0, or -EINVAL (bad definition),
 * -E2BIG (too long), -EADDRINUSE (the name is in use with other fields),
 * -EMFILE (no room for another event), -ENOSPC (no free id) or -ENOMEM.
 */
int hvt_ue_register(struct hvt_ue_registry *reg, uint64_t owner,
		    const char *def, struct hvt_ue_reg *out,
		    struct hvt_ue_error *err);

/**
 * hvt_ue_register_at - hvt_ue_register() with a preferred binding
 * @want_id:  the id the event should get
 * @want_bit: the enable bit it should get
 *
 * For replays: a writer that registered with an earlier registry (a host
 * daemon that restarted) holds a handle bound to an id and a bit it
 * cannot change.  When the event does not exist yet and both @want_id and
 * @want_bit are free, the new event gets them; otherwise this behaves as
 * hvt_ue_register() (an existing event keeps its binding, a taken id or
 * bit means fresh ones).  @out says which binding the event has: compare
 * it with the wanted one.  Returns as hvt_ue_register().
 */
int hvt_ue_register_at(struct hvt_ue_registry *reg, uint64_t owner,
		       const char *def, uint32_t want_id, uint32_t want_bit,
		       struct hvt_ue_reg *out, struct hvt_ue_error *err);

/**
 * hvt_ue_unregister - drop one reference an owner holds on an event
 *
 * An event that nobody uses any more and that was not defined through
 * dynamic_events is deleted.  Returns 0, or -ENOENT when @owner holds no
 * reference on @id.
 */
int hvt_ue_unregister(struct hvt_ue_registry *reg, uint64_t owner,
		      uint32_t id, struct hvt_ue_error *err);

/**
 * hvt_ue_unregister_owner_id - drop every reference an owner holds on one
 * event (for a caller that tracks what each owner holds)
 *
 * Returns the number of references dropped (0 when there were none).
 */
int hvt_ue_unregister_owner_id(struct hvt_ue_registry *reg, uint64_t owner,
			       uint32_t id);

/**
 * hvt_ue_unregister_all - drop every reference of an owner (it went away)
 *
 * Returns the number of references dropped.
 */
int hvt_ue_unregister_all(struct hvt_ue_registry *reg, uint64_t owner);

/**
 * hvt_ue_delete - delete an event by name (the DIAG_IOCSDEL ioctl)
 *
 * Returns 0, -ENOENT when there is no such event, or -EBUSY while a
 * registrant or a consumer uses it.
 */
int hvt_ue_delete(struct hvt_ue_registry *reg, const char *name,
		  struct hvt_ue_error *err);

/**
 * hvt_ue_dyn_apply - apply one line written to dynamic_events
 * @line: "u:DEF" creates a persistent event, "!u:NAME fields" or
 *        "-:NAME fields" deletes one; text after '#' is a comment; an
 *        empty line does nothing.  No newline.
 *
 * Returns 0 or -errno (-EINVAL, -E2BIG, -EADDRINUSE, -EMFILE, -ENOENT,
 * -EBUSY, -ENOMEM) with the reason in @err.
 */
int hvt_ue_dyn_apply(struct hvt_ue_registry *reg, const char *line,
		     struct hvt_ue_error *err);

/**
 * hvt_ue_dyn_write - apply a write(2) to dynamic_events
 * @buf: one or more newline-separated lines
 * @len: bytes in @buf
 *
 * Applies the lines in order and stops at the first failure, like the
 * kernel.  Returns @len, or -errno.
 */
long hvt_ue_dyn_write(struct hvt_ue_registry *reg, const char *buf,
		      size_t len, struct hvt_ue_error *err);

/**
 * hvt_ue_dyn_clear - delete every event (open dynamic_events with O_TRUNC)
 *
 * Returns the number of events deleted, or -EBUSY (nothing deleted) when
 * any event is in use.
 */
int hvt_ue_dyn_clear(struct hvt_ue_registry *reg, struct hvt_ue_error *err);

/**
 * hvt_ue_set_enabled - enable or disable an event for a consumer
 * @name:     the event
 * @consumer: one of HVT_UE_USED_*
 * @on:       enable or disable
 *
 * An enabled event is busy (cannot be deleted) and its enable bit is set.
 * Disabling the last consumer of an event that nobody holds and that was
 * not defined through dynamic_events deletes it, as in the kernel.
 * Returns 0, -ENOENT, or -EINVAL for a bad @consumer.
 */
int hvt_ue_set_enabled(struct hvt_ue_registry *reg, const char *name,
		       unsigned int consumer, bool on,
		       struct hvt_ue_error *err);

/**
 * hvt_ue_lookup - describe an event by name
 * @info: filled in; its pointers stay valid until the event is deleted
 *
 * Returns 0 or -ENOENT.
 */
int hvt_ue_lookup(struct hvt_ue_registry *reg, const char *name,
		  struct hvt_ue_event_info *info);

/** hvt_ue_lookup_id - describe an event by id; 0 or -ENOENT. */
int hvt_ue_lookup_id(struct hvt_ue_registry *reg, uint32_t id,
		     struct hvt_ue_event_info *info);

/**
 * hvt_ue_foreach - visit every event in creation order
 * @fn: called with the registry lock held; must not call the registry.
 *      A non-zero return stops the walk and is returned.
 *
 * Returns 0, or what @fn returned.
 */
int hvt_ue_foreach(struct hvt_ue_registry *reg,
		   int (*fn)(const struct hvt_ue_event_info *info, void *arg),
		   void *arg);

/**
 * hvt_ue_set_limit - change how many events may exist (kernel.user_events_max)
 * @limit: 0..max_events of the registry's config; lowering it below the
 *         current count deletes nothing, it only refuses new events.
 *
 * Returns 0, or -EINVAL when @limit exceeds the configured max_events.
 */
int hvt_ue_set_limit(struct hvt_ue_registry *reg, unsigned int limit);

/** hvt_ue_count - number of events. */
unsigned int hvt_ue_count(struct hvt_ue_registry *reg);

/**
 * hvt_ue_status_text - user_events_status: one line per event (" # Used
 * by ftrace" when enabled), a blank line, "Active: N", "Busy: N".
 * Events are listed in the kernel's order.  malloc'd, or NULL.
 */
char *hvt_ue_status_text(struct hvt_ue_registry *reg);

/** hvt_ue_dyn_events_text - the dynamic_events file (malloc'd, or NULL). */
char *hvt_ue_dyn_events_text(struct hvt_ue_registry *reg);

/**
 * hvt_ue_format_of - the format file of an event by name
 *
 * Returns a malloc'd copy, or NULL with errno ENOENT or ENOMEM.
 */
char *hvt_ue_format_of(struct hvt_ue_registry *reg, const char *name);

/**
 * hvt_ue_enable_snapshot - copy the enable bitmap
 * @words:  receives the bitmap, bit N in words[N / 64] (hvt_control.enable)
 * @nwords: words available; bits beyond are not copied
 * @gen:    receives the generation the copy belongs to (may be NULL)
 *
 * The generation increases with every change of any enable bit, so a
 * daemon can compare it with the one it last wrote to a control page.
 * Returns the number of words written.
 */
int hvt_ue_enable_snapshot(struct hvt_ue_registry *reg, uint64_t *words,
			   size_t nwords, uint64_t *gen);

/** hvt_ue_enable_generation - the current enable generation. */
uint64_t hvt_ue_enable_generation(struct hvt_ue_registry *reg);

/**
 * hvt_ue_set_enable_hook - be told about every enable bit change
 * @fn: called with the registry lock held, after the change, with the bit
 *      and its new value; must not call the registry.  NULL removes it.
 */
void hvt_ue_set_enable_hook(struct hvt_ue_registry *reg,
			    void (*fn)(void *arg, uint32_t bit, bool on),
			    void *arg);

#endif /* HVT_USEREVENTS_H */
