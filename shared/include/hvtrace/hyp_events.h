/* SPDX-License-Identifier: MIT */
/*
 * Hypervisor trace events: the one place they are declared.
 *
 * Every event is one line of HVT_HYP_EVENTS() below:
 *
 *	EVENT(name, (print fmt, print args...), (type, field), ...)
 *
 *   name        event name; the host shows it as events/hypervisor/<name>
 *   print       the format file's "print fmt" line, as a parenthesized
 *               list: a string literal followed by REC->field arguments
 *   (type, field)  one to eight fields, in record order; type is one of
 *               u8 u16 u32 u64 s8 s16 s32 s64
 *
 * From that single declaration this header generates, for every event:
 *
 *   struct hvt_hyp_rec_<name>   the record: common fields, then the fields
 *                               with natural C alignment
 *   HVT_HYP_EVENT_<name>        its index: the enable bit in the control
 *                               page's bitmap
 *   HVT_HYP_ID_<name>           its ftrace id (common_type)
 *   union hvt_hyp_rec_any       any record (member <name>), for decoders
 *   hvt_hyp_trace_<name>(...)   the writer-side emit function (only when
 *                               HVT_HYP_WRITER is defined, see below)
 *
 * and host/hypevents/ expands the same list into the host's table of
 * ftrace format files (hvt_hypevents_*() below).  Adding an event is one
 * new EVENT line here; nothing else changes.
 *
 * Freestanding: needs <stdint.h>, <stddef.h> and the writer core only.
 */
#ifndef HVTRACE_HYP_EVENTS_H
#define HVTRACE_HYP_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

/* --- the events --------------------------------------------------------- */

/*
 * hyp_enter:  the hypervisor was entered from EL1 (exception class and
 *             syndrome from ESR_EL2, the guest return address ELR_EL2).
 * hyp_exit:   the hypervisor returns to EL1 at elr.
 * host_hcall: a hypercall was handled: SMCCC function id, the first three
 *             arguments and the value returned in x0.
 * selftest:   written in answer to a host trigger (a time-sync request);
 *             id is the trigger's value.
 */
#define HVT_HYP_EVENTS(EVENT)						\
	EVENT(hyp_enter,						\
	      ("ec=0x%x iss=0x%x elr=0x%llx", REC->ec, REC->iss, REC->elr), \
	      (u32, ec), (u32, iss), (u64, elr))			\
	EVENT(hyp_exit,							\
	      ("elr=0x%llx", REC->elr),					\
	      (u64, elr))						\
	EVENT(host_hcall,						\
	      ("func=0x%llx a0=0x%llx a1=0x%llx a2=0x%llx ret=%lld",	\
	       REC->func, REC->a0, REC->a1, REC->a2, REC->ret),	\
	      (u64, func), (u64, a0), (u64, a1), (u64, a2), (s64, ret))	\
	EVENT(selftest,							\
	      ("id=%llu", REC->id),					\
	      (u64, id))

/* The system name the host shows the events under. */
#define HVT_HYP_SYSTEM		"hypervisor"

/*
 * Event ids (common_type) are HVT_HYP_ID_BASE + index.  The base keeps
 * them clear of the ids a Linux kernel assigns to its own events, so pages
 * from both can share one trace.dat.
 */
#define HVT_HYP_ID_BASE		0xf000u

/* --- preprocessor machinery -------------------------------------------- */

#define HVT_PP_CAT_(a, b)	a##b
#define HVT_PP_CAT(a, b)	HVT_PP_CAT_(a, b)
#define HVT_PP_STR(...)		#__VA_ARGS__
#define HVT_PP_UNPACK(...)	__VA_ARGS__
#define HVT_PP_CALL(m, args)	m args
#define HVT_PP_NARG(...)						\
	HVT_PP_NARG_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define HVT_PP_NARG_(_1, _2, _3, _4, _5, _6, _7, _8, n, ...) n

/* M(type, field) for each (type, field) tuple, side by side. */
#define HVT_PP_EACH(m, ...)						\
	HVT_PP_CAT(HVT_PP_EACH_, HVT_PP_NARG(__VA_ARGS__))(m, __VA_ARGS__)
#define HVT_PP_EACH_1(m, a) m a
#define HVT_PP_EACH_2(m, a, ...) m a HVT_PP_EACH_1(m, __VA_ARGS__)
#define HVT_PP_EACH_3(m, a, ...) m a HVT_PP_EACH_2(m, __VA_ARGS__)
#define HVT_PP_EACH_4(m, a, ...) m a HVT_PP_EACH_3(m, __VA_ARGS__)
#define HVT_PP_EACH_5(m, a, ...) m a HVT_PP_EACH_4(m, __VA_ARGS__)
#define HVT_PP_EACH_6(m, a, ...) m a HVT_PP_EACH_5(m, __VA_ARGS__)
#define HVT_PP_EACH_7(m, a, ...) m a HVT_PP_EACH_6(m, __VA_ARGS__)
#define HVT_PP_EACH_8(m, a, ...) m a HVT_PP_EACH_7(m, __VA_ARGS__)

/* M(type, field) for each tuple, separated by commas. */
#define HVT_PP_LIST(m, ...)						\
	HVT_PP_CAT(HVT_PP_LIST_, HVT_PP_NARG(__VA_ARGS__))(m, __VA_ARGS__)
#define HVT_PP_LIST_1(m, a) m a
#define HVT_PP_LIST_2(m, a, ...) m a, HVT_PP_LIST_1(m, __VA_ARGS__)
#define HVT_PP_LIST_3(m, a, ...) m a, HVT_PP_LIST_2(m, __VA_ARGS__)
#define HVT_PP_LIST_4(m, a, ...) m a, HVT_PP_LIST_3(m, __VA_ARGS__)
#define HVT_PP_LIST_5(m, a, ...) m a, HVT_PP_LIST_4(m, __VA_ARGS__)
#define HVT_PP_LIST_6(m, a, ...) m a, HVT_PP_LIST_5(m, __VA_ARGS__)
#define HVT_PP_LIST_7(m, a, ...) m a, HVT_PP_LIST_6(m, __VA_ARGS__)
#define HVT_PP_LIST_8(m, a, ...) m a, HVT_PP_LIST_7(m, __VA_ARGS__)

/* M(arg, type, field) for each tuple: passes one fixed argument along. */
#define HVT_PP_EACH_ARG(m, x, ...)					\
	HVT_PP_CAT(HVT_PP_EACH_ARG_,					\
		   HVT_PP_NARG(__VA_ARGS__))(m, x, __VA_ARGS__)
#define HVT_PP_EA_(m, x, a) HVT_PP_CALL(m, (x, HVT_PP_UNPACK a))
#define HVT_PP_EACH_ARG_1(m, x, a) HVT_PP_EA_(m, x, a)
#define HVT_PP_EACH_ARG_2(m, x, a, ...)					\
	HVT_PP_EA_(m, x, a) HVT_PP_EACH_ARG_1(m, x, __VA_ARGS__)
#define HVT_PP_EACH_ARG_3(m, x, a, ...)					\
	HVT_PP_EA_(m, x, a) HVT_PP_EACH_ARG_2(m, x, __VA_ARGS__)
#define HVT_PP_EACH_ARG_4(m, x, a, ...)					\
	HVT_PP_EA_(m, x, a) HVT_PP_EACH_ARG_3(m, x, __VA_ARGS__)
#define HVT_PP_EACH_ARG_5(m, x, a, ...)					\
	HVT_PP_EA_(m, x, a) HVT_PP_EACH_ARG_4(m, x, __VA_ARGS__)
#define HVT_PP_EACH_ARG_6(m, x, a, ...)					\
	HVT_PP_EA_(m, x, a) HVT_PP_EACH_ARG_5(m, x, __VA_ARGS__)
#define HVT_PP_EACH_ARG_7(m, x, a, ...)					\
	HVT_PP_EA_(m, x, a) HVT_PP_EACH_ARG_6(m, x, __VA_ARGS__)
#define HVT_PP_EACH_ARG_8(m, x, a, ...)					\
	HVT_PP_EA_(m, x, a) HVT_PP_EACH_ARG_7(m, x, __VA_ARGS__)

/* Field types: the name shown in the format file and its C type. */
#define HVT_HYP_T_u8	uint8_t
#define HVT_HYP_T_u16	uint16_t
#define HVT_HYP_T_u32	uint32_t
#define HVT_HYP_T_u64	uint64_t
#define HVT_HYP_T_s8	int8_t
#define HVT_HYP_T_s16	int16_t
#define HVT_HYP_T_s32	int32_t
#define HVT_HYP_T_s64	int64_t
#define HVT_HYP_S_u8	0
#define HVT_HYP_S_u16	0
#define HVT_HYP_S_u32	0
#define HVT_HYP_S_u64	0
#define HVT_HYP_S_s8	1
#define HVT_HYP_S_s16	1
#define HVT_HYP_S_s32	1
#define HVT_HYP_S_s64	1
#define HVT_HYP_CTYPE(t)	HVT_PP_CAT(HVT_HYP_T_, t)
#define HVT_HYP_IS_SIGNED(t)	HVT_PP_CAT(HVT_HYP_S_, t)

/* --- generated: indices, ids, records ---------------------------------- */

#define HVT_HYP_INDEX_(ev, print, ...)	HVT_HYP_EVENT_##ev,
enum hvt_hyp_event_index {
	HVT_HYP_EVENTS(HVT_HYP_INDEX_)
	HVT_HYP_NR_EVENTS
};
#undef HVT_HYP_INDEX_

#define HVT_HYP_ID_(ev, print, ...)					\
	HVT_HYP_ID_##ev = HVT_HYP_ID_BASE + HVT_HYP_EVENT_##ev,
enum hvt_hyp_event_id {
	HVT_HYP_EVENTS(HVT_HYP_ID_)
};
#undef HVT_HYP_ID_

HVT_STATIC_ASSERT(HVT_HYP_NR_EVENTS <= 64,
		  "hypervisor events must fit one enable word");
HVT_STATIC_ASSERT(HVT_HYP_ID_BASE + HVT_HYP_NR_EVENTS <= 0xffff,
		  "event ids must fit common_type");

/* The enable bits of the known events; writers mask off the others. */
#define HVT_HYP_ENABLE_MASK						\
	(HVT_HYP_NR_EVENTS == 64 ? ~0ULL : (1ULL << HVT_HYP_NR_EVENTS) - 1)

#define HVT_HYP_MEMBER_(t, n)	HVT_HYP_CTYPE(t) n;
#define HVT_HYP_REC_(ev, print, ...)					\
	struct hvt_hyp_rec_##ev {					\
		struct hvt_common_fields common;			\
		HVT_PP_EACH(HVT_HYP_MEMBER_, __VA_ARGS__)		\
	};
HVT_HYP_EVENTS(HVT_HYP_REC_)
#undef HVT_HYP_REC_

/* Any record, for decoders: one member per event, named after it. */
#define HVT_HYP_ANY_(ev, print, ...)	struct hvt_hyp_rec_##ev ev;
union hvt_hyp_rec_any {
	struct hvt_common_fields common;
	HVT_HYP_EVENTS(HVT_HYP_ANY_)
};
#undef HVT_HYP_ANY_

/* --- writer side -------------------------------------------------------- */

#ifdef HVT_HYP_WRITER
#include "ring_buffer.h"

/*
 * The includer (the EL2 image, or a native build of the same path for
 * tests and benchmarks) defines these two platform hooks, after including
 * this header and before calling an emit function:
 *
 *   hvt_hyp_writer_cpu()    the calling CPU's buffer; its ctrl is the
 *                           page whose enable bits are tested
 *   hvt_hyp_writer_clock()  the timestamp for an event written now
 */
static inline struct hvt_rb_cpu *hvt_hyp_writer_cpu(void);
static inline uint64_t hvt_hyp_writer_clock(void);

#define HVT_HYP_PARAM_(t, n)	HVT_HYP_CTYPE(t) n
#define HVT_HYP_ASSIGN_(t, n)	hvt_r_.n = n;

/*
 * hvt_hyp_trace_<name>(fields...) - write one event on this CPU
 *
 * One relaxed load and a mask when the event is disabled.  Otherwise the
 * record is built on the stack (padding zeroed: nothing of the writer's
 * memory leaks to the host) and handed to hvt_rb_write().
 *
 * Return: 0 (written or disabled), or hvt_rb_write()'s error.
 */
#define HVT_HYP_EMIT_(ev, print, ...)					\
	static inline int hvt_hyp_trace_##ev(				\
		HVT_PP_LIST(HVT_HYP_PARAM_, __VA_ARGS__))		\
	{								\
		struct hvt_rb_cpu *hvt_cb_ = hvt_hyp_writer_cpu();	\
		struct hvt_hyp_rec_##ev hvt_r_;				\
		struct hvt_iovec hvt_iov_;				\
									\
		if (!hvt_event_enabled(hvt_cb_->ctrl,			\
				       HVT_HYP_EVENT_##ev))		\
			return 0;					\
		__builtin_memset(&hvt_r_, 0, sizeof(hvt_r_));		\
		hvt_r_.common.common_type = HVT_HYP_ID_##ev;		\
		HVT_PP_EACH(HVT_HYP_ASSIGN_, __VA_ARGS__)		\
		hvt_iov_.base = (const uint8_t *)&hvt_r_ +		\
				sizeof(hvt_r_.common);			\
		hvt_iov_.len = sizeof(hvt_r_) - sizeof(hvt_r_.common);	\
		return hvt_rb_write(hvt_cb_, hvt_hyp_writer_clock(),	\
				    &hvt_r_.common, &hvt_iov_, 1);	\
	}
HVT_HYP_EVENTS(HVT_HYP_EMIT_)
#undef HVT_HYP_EMIT_

#endif /* HVT_HYP_WRITER */

/* --- host side: the event table (libhvtrace, host/hypevents/) ---------- */

#if __STDC_HOSTED__

#if defined(HVT_BUILD_LIB)
#define HVT_HYPEVENTS_API __attribute__((visibility("default")))
#else
#define HVT_HYPEVENTS_API
#endif

struct hvt_hypevent_field {
	const char *type;	/* as in the format file: "u64" */
	const char *name;
	uint32_t offset;	/* from the start of the record */
	uint32_t size;
	int is_signed;
};

struct hvt_hypevent {
	const char *name;
	const char *system;	/* HVT_HYP_SYSTEM */
	uint32_t index;		/* enable bit */
	uint32_t id;		/* common_type */
	uint32_t rec_size;	/* record bytes, common fields included */
	uint32_t nr_fields;
	const struct hvt_hypevent_field *fields;
	const char *print_fmt;	/* the text after "print fmt: " */
	const char *format;	/* events/<sys>/<name>/format, whole */
	const char *id_text;	/* the events/<sys>/<name>/id file: "61440\n" */
};

/** hvt_hypevents_count - number of hypervisor events */
HVT_HYPEVENTS_API unsigned int hvt_hypevents_count(void);

/**
 * hvt_hypevents_get - event by index (= enable bit)
 * Return: the event, or NULL when @index is out of range.
 */
HVT_HYPEVENTS_API const struct hvt_hypevent *
hvt_hypevents_get(unsigned int index);

/** hvt_hypevents_by_id - event by ftrace id, or NULL */
HVT_HYPEVENTS_API const struct hvt_hypevent *
hvt_hypevents_by_id(unsigned int id);

/** hvt_hypevents_by_name - event by name, or NULL */
HVT_HYPEVENTS_API const struct hvt_hypevent *
hvt_hypevents_by_name(const char *name);

#endif /* host side */

#endif /* HVTRACE_HYP_EVENTS_H */
