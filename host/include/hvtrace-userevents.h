/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace: user_events on the host, the definition grammar, the format
 * files and the registry that owns event ids, enable bits and lifetimes.
 *
 * Guest processes define Linux user_events ("name type field;type field")
 * that the host proxies: the host parses every definition with the rules
 * of the kernel's kernel/trace/trace_events_user.c (Linux 6.4+), generates
 * the same events/user_events/NAME/format text a kernel would, and keeps a
 * registry with tracefs-like behaviour (dynamic_events, user_events_status,
 * reference counting, "Used by" enablement).  docs/userevents.md describes
 * the grammar, the lifetime rules and the few deliberate differences.
 *
 * Part of the core library (<hvtrace.h>'s conventions): every function
 * returns 0 (or a count) on success and a negative errno on failure; where
 * a struct hvtrace_ue_error is passed, it receives a message naming what
 * was wrong.
 */
#ifndef HVTRACE_USEREVENTS_H
#define HVTRACE_USEREVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Names the kernel uses. */
#define HVT_UE_SYSTEM	    "user_events"
#define HVT_UE_SYSTEM_MULTI "user_events_multi"
#define HVT_UE_PREFIX	    "u:"

/* A definition registered by a process: 512 bytes with the NUL. */
#define HVT_UE_MAX_DESC 512u
/* One dynamic_events line (the kernel's WRITE_BUFSIZE - 2). */
#define HVT_UE_MAX_LINE 4094u
/* Largest char[N]. */
#define HVT_UE_MAX_ARRAY 1024u
/* The common fields (type, flags, preempt_count, pid) before user data. */
#define HVT_UE_COMMON_SIZE 8u
/*
 * Event ids (common_type) of user events: from HVT_UE_ID_BASE by default,
 * above the ids a Linux kernel gives its own events, up to HVT_UE_ID_MAX,
 * below hvtrace's built-in events (HVTRACE_BUILTIN_ID_BASE, 0xe000) and
 * the hypervisor's (HVT_HYP_ID_BASE, 0xf000).
 */
#define HVT_UE_ID_BASE 32768u
#define HVT_UE_ID_MAX  0xdfffu

#define HVT_UE_MSG_MAX 256

struct hvtrace_ue_error {
	int code;		  /* the -errno returned, 0 if none */
	char msg[HVT_UE_MSG_MAX]; /* what was wrong, in words */
};

/* --- definitions ---------------------------------------------------- */

/*
 * What a field holds.  Loc values are u32: length << 16 | offset, the
 * offset counted from the record start (__data_loc) or from the end of the
 * loc field (__rel_loc).
 */
enum hvtrace_ue_kind {
	HVT_UE_KIND_INT,      /* sN, uN, char, short, int, unsigned ... */
	HVT_UE_KIND_ARRAY,    /* char[N], unsigned char[N]: N bytes */
	HVT_UE_KIND_DATA_LOC, /* __data_loc TYPE */
	HVT_UE_KIND_REL_LOC,  /* __rel_loc TYPE */
	HVT_UE_KIND_STRUCT,   /* struct TYPE NAME SIZE: SIZE bytes */
};

struct hvtrace_ue_field {
	const char *type; /* as the kernel keeps it: "unsigned int" */
	const char *name;
	uint32_t offset; /* in the record, common fields included */
	uint32_t size;
	uint8_t kind;	/* enum hvtrace_ue_kind */
	bool is_signed; /* the kernel's rule: type[0] != 'u' */
};

struct hvtrace_ue_def {
	const char *name;
	uint32_t nr_fields;
	const struct hvtrace_ue_field *fields; /* in definition order */
	uint32_t record_size; /* common + static fields: least bytes */
};

/**
 * hvtrace_ue_split_name - find the event name of a definition
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
HVTRACE_API int hvtrace_ue_split_name(const char *def, char *name,
				      size_t namelen, const char **args,
				      struct hvtrace_ue_error *err);

/**
 * hvtrace_ue_match_args - does a field list describe an existing event?
 * @def:  the existing event
 * @args: the field list of a new definition (NULL for none)
 *
 * The kernel's matching: whitespace runs are one separator, a space is
 * implied after every ';', struct sizes take part, and the fields must
 * agree in order, type and name.  Returns true on a match.
 */
HVTRACE_API bool hvtrace_ue_match_args(const struct hvtrace_ue_def *def,
				       const char *args);

/* --- text ------------------------------------------------------------ */

/** hvtrace_ue_print_fmt - the "print fmt:" value alone (malloc'd, or NULL). */
HVTRACE_API char *hvtrace_ue_print_fmt(const struct hvtrace_ue_def *def);

/**
 * hvtrace_ue_dyn_line - the dynamic_events line "u:NAME type name; type name"
 * without the newline (malloc'd, or NULL).
 */
HVTRACE_API char *hvtrace_ue_dyn_line(const struct hvtrace_ue_def *def);

/**
 * hvtrace_ue_errno_name - "EINVAL" for -EINVAL and the like (static string)
 */
HVTRACE_API const char *hvtrace_ue_errno_name(int err);

/* --- the registry ---------------------------------------------------- */

struct hvtrace_ue_registry;

/* Consumers that can enable an event (the kernel's "Used by" words). */
#define HVT_UE_USED_FTRACE (1u << 0)
#define HVT_UE_USED_PERF   (1u << 1)
#define HVT_UE_USED_OTHER  (1u << 7)
#define HVT_UE_USED_MASK                                                       \
	(HVT_UE_USED_FTRACE | HVT_UE_USED_PERF | HVT_UE_USED_OTHER)

struct hvtrace_ue_registry_config {
	unsigned int max_events; /* 0: HVT_ABI_MAX_EVENTS */
	unsigned int id_base;	 /* 0: HVT_UE_ID_BASE; ids run from
				  * here to HVT_UE_ID_MAX */
};

/* What a registration hands back to a writer. */
struct hvtrace_ue_reg {
	uint32_t id;  /* common_type of its records */
	uint32_t bit; /* its bit in hvt_control.enable[] */
};

struct hvtrace_ue_event_info {
	const char *name;
	uint32_t id;
	uint32_t bit;
	uint8_t used_by; /* HVT_UE_USED_* */
	bool enabled;	 /* used_by != 0: the bit is set */
	bool persistent; /* defined through dynamic_events */
	uint32_t refs;	 /* registrations held by owners */
	uint32_t owners; /* distinct owners holding it */
	const struct hvtrace_ue_def *def;
	const char *format; /* format file text */
};

/**
 * hvtrace_ue_registry_create - an empty registry
 * @cfg: limits; NULL for the defaults
 * @out: the registry
 *
 * Returns 0, -EINVAL when a limit is out of range, or -ENOMEM.
 */
HVTRACE_API int
hvtrace_ue_registry_create(const struct hvtrace_ue_registry_config *cfg,
			   struct hvtrace_ue_registry **out);

/** hvtrace_ue_registry_destroy - free the registry and every event in it. */
HVTRACE_API void hvtrace_ue_registry_destroy(struct hvtrace_ue_registry *reg);

/**
 * hvtrace_ue_register - register a definition on behalf of an owner
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
HVTRACE_API int hvtrace_ue_register(struct hvtrace_ue_registry *reg,
				    uint64_t owner, const char *def,
				    struct hvtrace_ue_reg *out,
				    struct hvtrace_ue_error *err);

/**
 * hvtrace_ue_register_at - hvtrace_ue_register() with a preferred binding
 * @want_id:  the id the event should get
 * @want_bit: the enable bit it should get
 *
 * For replays: a writer that registered with an earlier registry (a host
 * daemon that restarted) holds a handle bound to an id and a bit it
 * cannot change.  When the event does not exist yet and both @want_id and
 * @want_bit are free, the new event gets them; otherwise this behaves as
 * hvtrace_ue_register() (an existing event keeps its binding, a taken id or
 * bit means fresh ones).  @out says which binding the event has: compare
 * it with the wanted one.  Returns as hvtrace_ue_register().
 */
HVTRACE_API int hvtrace_ue_register_at(struct hvtrace_ue_registry *reg,
				       uint64_t owner, const char *def,
				       uint32_t want_id, uint32_t want_bit,
				       struct hvtrace_ue_reg *out,
				       struct hvtrace_ue_error *err);

/**
 * hvtrace_ue_unregister - drop one reference an owner holds on an event
 *
 * An event that nobody uses any more and that was not defined through
 * dynamic_events is deleted.  Returns 0, or -ENOENT when @owner holds no
 * reference on @id.
 */
HVTRACE_API int hvtrace_ue_unregister(struct hvtrace_ue_registry *reg,
				      uint64_t owner, uint32_t id,
				      struct hvtrace_ue_error *err);

/**
 * hvtrace_ue_unregister_owner_id - drop every reference an owner holds on one
 * event (for a caller that tracks what each owner holds)
 *
 * Returns the number of references dropped (0 when there were none).
 */
HVTRACE_API int hvtrace_ue_unregister_owner_id(struct hvtrace_ue_registry *reg,
					       uint64_t owner, uint32_t id);

/**
 * hvtrace_ue_delete - delete an event by name (the DIAG_IOCSDEL ioctl)
 *
 * Returns 0, -ENOENT when there is no such event, or -EBUSY while a
 * registrant or a consumer uses it.
 */
HVTRACE_API int hvtrace_ue_delete(struct hvtrace_ue_registry *reg,
				  const char *name,
				  struct hvtrace_ue_error *err);

/**
 * hvtrace_ue_dyn_apply - apply one line written to dynamic_events
 * @line: "u:DEF" creates a persistent event, "!u:NAME fields" or
 *        "-:NAME fields" deletes one; text after '#' is a comment; an
 *        empty line does nothing.  No newline.
 *
 * Returns 0 or -errno (-EINVAL, -E2BIG, -EADDRINUSE, -EMFILE, -ENOENT,
 * -EBUSY, -ENOMEM) with the reason in @err.
 */
HVTRACE_API int hvtrace_ue_dyn_apply(struct hvtrace_ue_registry *reg,
				     const char *line,
				     struct hvtrace_ue_error *err);

/**
 * hvtrace_ue_dyn_clear - delete every event (open dynamic_events with O_TRUNC)
 *
 * Returns the number of events deleted, or -EBUSY (nothing deleted) when
 * any event is in use.
 */
HVTRACE_API int hvtrace_ue_dyn_clear(struct hvtrace_ue_registry *reg,
				     struct hvtrace_ue_error *err);

/**
 * hvtrace_ue_set_enabled - enable or disable an event for a consumer
 * @name:     the event
 * @consumer: one of HVT_UE_USED_*
 * @on:       enable or disable
 *
 * An enabled event is busy (cannot be deleted) and its enable bit is set.
 * Disabling the last consumer of an event that nobody holds and that was
 * not defined through dynamic_events deletes it, as in the kernel.
 * Returns 0, -ENOENT, or -EINVAL for a bad @consumer.
 */
HVTRACE_API int hvtrace_ue_set_enabled(struct hvtrace_ue_registry *reg,
				       const char *name, unsigned int consumer,
				       bool on, struct hvtrace_ue_error *err);

/**
 * hvtrace_ue_lookup - describe an event by name
 * @info: filled in; its pointers stay valid until the event is deleted
 *
 * Returns 0 or -ENOENT.
 */
HVTRACE_API int hvtrace_ue_lookup(struct hvtrace_ue_registry *reg,
				  const char *name,
				  struct hvtrace_ue_event_info *info);

/** hvtrace_ue_lookup_id - describe an event by id; 0 or -ENOENT. */
HVTRACE_API int hvtrace_ue_lookup_id(struct hvtrace_ue_registry *reg,
				     uint32_t id,
				     struct hvtrace_ue_event_info *info);

/**
 * hvtrace_ue_foreach - visit every event in creation order
 * @fn: called with the registry lock held; must not call the registry.
 *      A non-zero return stops the walk and is returned.
 *
 * Returns 0, or what @fn returned.
 */
HVTRACE_API int hvtrace_ue_foreach(
	struct hvtrace_ue_registry *reg,
	int (*fn)(const struct hvtrace_ue_event_info *info, void *arg),
	void *arg);

/** hvtrace_ue_count - number of events. */
HVTRACE_API unsigned int hvtrace_ue_count(struct hvtrace_ue_registry *reg);

/**
 * hvtrace_ue_status_text - user_events_status: one line per event (" # Used
 * by ftrace" when enabled), a blank line, "Active: N", "Busy: N".
 * Events are listed in the kernel's order.  malloc'd, or NULL.
 */
HVTRACE_API char *hvtrace_ue_status_text(struct hvtrace_ue_registry *reg);

/** hvtrace_ue_dyn_events_text - the dynamic_events file (malloc'd, or NULL). */
HVTRACE_API char *hvtrace_ue_dyn_events_text(struct hvtrace_ue_registry *reg);

/**
 * hvtrace_ue_enable_snapshot - copy the enable bitmap
 * @words:  receives the bitmap, bit N in words[N / 64] (hvt_control.enable)
 * @nwords: words available; bits beyond are not copied
 * @gen:    receives the generation the copy belongs to (may be NULL)
 *
 * The generation increases with every change of any enable bit, so a
 * daemon can compare it with the one it last wrote to a control page.
 * Returns the number of words written.
 */
HVTRACE_API int hvtrace_ue_enable_snapshot(struct hvtrace_ue_registry *reg,
					   uint64_t *words, size_t nwords,
					   uint64_t *gen);

/**
 * hvtrace_ue_set_enable_hook - be told about every enable bit change
 * @fn: called with the registry lock held, after the change, with the bit
 *      and its new value; must not call the registry.  NULL removes it.
 */
HVTRACE_API void hvtrace_ue_set_enable_hook(struct hvtrace_ue_registry *reg,
					    void (*fn)(void *arg, uint32_t bit,
						       bool on),
					    void *arg);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_USEREVENTS_H */
