// SPDX-License-Identifier: MIT
/*
 * hvtrace proxy protocol: the catalogue of messages and the layout of each
 * payload, as tables of field descriptors (struct pf, proto-local.h) that
 * proto.c's walkers check, size, encode and decode by.  One table per
 * layout, in the order of docs/proxy.md ("Payload layouts"), fields in
 * offset order (the decoder checks the bytes between them are zero), and
 * the variable parts in the order the table lists their lengths.  A rule
 * no single field carries (one field against another, or one that depends
 * on the message type) is the layout's extra() function.  The REMOTES and
 * TRIGGER_RUN records are tables too.  tests/unit/proto_golden.c checks
 * every table against the document byte for byte.
 *
 * Freestanding like the rest of the codec (shared/Build.mk).
 */
#include <hvtrace/abi.h>
#include <hvtrace/errno.h>
#include <hvtrace/proto.h>

#include "proto-local.h"

/* --- the catalogue -------------------------------------------------------- */

struct msg_layout {
	const char *name;
	uint8_t req;		/* enum hvt_layout of the request */
	uint8_t rep;		/* enum hvt_layout of the reply */
};

#define MT(t, n, rq, rp) [t] = { n, rq, rp }
static const struct msg_layout msg_layouts[] = {
	MT(HVT_MSG_HELLO, "HELLO", HVT_L_HELLO, HVT_L_HELLO),
	MT(HVT_MSG_BYE, "BYE", HVT_L_BYE, HVT_L_NONE),
	MT(HVT_MSG_ERROR, "ERROR", HVT_L_NONE, HVT_L_RESULT),
	MT(HVT_MSG_REGISTER, "REGISTER", HVT_L_REGISTER, HVT_L_RESULT),
	MT(HVT_MSG_UNREGISTER, "UNREGISTER", HVT_L_UNREGISTER, HVT_L_RESULT),
	MT(HVT_MSG_DELETE, "DELETE", HVT_L_ARG, HVT_L_RESULT),
	MT(HVT_MSG_CLIENT_GONE, "CLIENT_GONE", HVT_L_CLIENT_GONE,
	   HVT_L_RESULT),
	MT(HVT_MSG_CMDLINE, "CMDLINE", HVT_L_CMDLINE, HVT_L_RESULT),
	MT(HVT_MSG_EVENT_STATE, "EVENT_STATE", HVT_L_EVENT_STATE, HVT_L_NONE),
	MT(HVT_MSG_TRACING, "TRACING", HVT_L_TRACING, HVT_L_RESULT),
	MT(HVT_MSG_PING, "PING", HVT_L_PING, HVT_L_PONG),
	MT(HVT_MSG_TRIGGER, "TRIGGER", HVT_L_TRIGGER, HVT_L_TRIGGER_ACK),
	MT(HVT_MSG_KFORMATS, "KFORMATS", HVT_L_KFORMATS, HVT_L_RESULT),
	MT(HVT_MSG_KFILE, "KFILE", HVT_L_KFILE, HVT_L_RESULT),
	MT(HVT_MSG_KEVENT, "KEVENT", HVT_L_ARG, HVT_L_RESULT),
	MT(HVT_MSG_DOORBELL, "DOORBELL", HVT_L_EMPTY, HVT_L_NONE),
	MT(HVT_MSG_BARRIER, "BARRIER", HVT_L_EMPTY, HVT_L_RESULT),
	MT(HVT_MSG_REMOTES, "REMOTES", HVT_L_EMPTY, HVT_L_REMOTES),
	MT(HVT_MSG_TEXT, "TEXT", HVT_L_TEXT_REQ, HVT_L_TEXT),
	MT(HVT_MSG_DEFINE, "DEFINE", HVT_L_ARG, HVT_L_RESULT),
	MT(HVT_MSG_ENABLE, "ENABLE", HVT_L_ARG, HVT_L_RESULT),
	MT(HVT_MSG_FORMATS, "FORMATS", HVT_L_EMPTY, HVT_L_FORMAT),
	MT(HVT_MSG_STATS, "STATS", HVT_L_EMPTY, HVT_L_STATS),
	MT(HVT_MSG_SUBSCRIBE, "SUBSCRIBE", HVT_L_SUBSCRIBE, HVT_L_RESULT),
	MT(HVT_MSG_UNSUBSCRIBE, "UNSUBSCRIBE", HVT_L_UNSUBSCRIBE,
	   HVT_L_RESULT),
	MT(HVT_MSG_PAGE, "PAGE", HVT_L_PAGE, HVT_L_NONE),
	MT(HVT_MSG_TO_HOST, "TO_HOST", HVT_L_TO_HOST, HVT_L_TO_HOST_REPLY),
	MT(HVT_MSG_TRIGGER_RUN, "TRIGGER_RUN", HVT_L_TRIGGER_RUN,
	   HVT_L_TRIGGER_RUN_REPLY),
	MT(HVT_MSG_ATTACH, "ATTACH", HVT_L_ARG, HVT_L_RESULT),
	MT(HVT_MSG_DETACH, "DETACH", HVT_L_ARG, HVT_L_RESULT),
	MT(HVT_MSG_ATTACH_AREA, "ATTACH_AREA", HVT_L_ARG, HVT_L_RESULT),
	MT(HVT_MSG_DRAIN, "DRAIN", HVT_L_EMPTY, HVT_L_RESULT),
	MT(HVT_MSG_KFORMATS_DIR, "KFORMATS_DIR", HVT_L_EMPTY, HVT_L_TEXT),
	MT(HVT_MSG_CLOCK, "CLOCK", HVT_L_CLOCK, HVT_L_NONE),
};
#undef MT

enum hvt_layout hvt_msg_layout(uint16_t type, int reply)
{
	if (type >= sizeof(msg_layouts) / sizeof(msg_layouts[0]) ||
	    !msg_layouts[type].name)
		return HVT_L_NONE;
	return (enum hvt_layout)(reply ? msg_layouts[type].rep :
					 msg_layouts[type].req);
}

const char *hvt_msg_type_name(uint16_t type)
{
	if (type >= sizeof(msg_layouts) / sizeof(msg_layouts[0]) ||
	    !msg_layouts[type].name)
		return "unknown";
	return msg_layouts[type].name;
}

#define M_OFF(mem) __builtin_offsetof(struct hvt_msg, u.mem)
#define M_SZ(mem) sizeof(((struct hvt_msg *)0)->u.mem)
#define M_SGN(mem)                                                             \
	_Generic(((struct hvt_msg *)0)->u.mem, int32_t: 1, default: 0)

/* An integer of @w wire bytes at @o in member @mem, with a rule. */
#define I(o, w, m, r, l, h, y)                                                 \
	{ .kind = PK_INT, .rule = (r), .off = (o), .wire = (w),                \
	  .mem = M_OFF(m), .msize = M_SZ(m), .sgn = M_SGN(m), .n = 1,         \
	  .lo = (l), .hi = (h), .why = (y) }
#define U(o, w, m) I(o, w, m, PR_NONE, 0, 0, NULL)
#define ST(o, m, y) I(o, 4, m, PR_STATUS, 0, 0, y)
/* A string: u16/u32 length at @o, bytes in the variable part. */
#define S(o, w, m, r, l, h, y)                                                 \
	{ .kind = PK_VAR, .rule = (r), .off = (o), .wire = (w),                \
	  .mem = M_OFF(m.len), .msize = 4, .mptr = M_OFF(m.ptr), .unit = 1,   \
	  .lo = (l), .hi = (h), .why = (y) }
/* An array of @u-byte records: u32 count at @o (@l..@h), records after. */
#define A(o, m, u, l, h, y, bad)                                               \
	{ .kind = PK_VAR, .rule = PR_RANGE, .off = (o), .wire = 4,             \
	  .mem = M_OFF(m.count), .msize = 4, .mptr = M_OFF(m.ptr),            \
	  .unit = (u), .lo = (l), .hi = (h), .why = (y), .rec_bad = (bad) }

/* Record fields, members of struct @T. */
#define R_INT(T, o, w, m)                                                      \
	{ .kind = PK_INT, .off = (o), .wire = (w),                             \
	  .mem = __builtin_offsetof(T, m), .msize = sizeof(((T *)0)->m),      \
	  .n = 1 }
#define R_BYTES(T, o, w, m)                                                    \
	{ .kind = PK_BYTES, .off = (o), .wire = (w),                           \
	  .mem = __builtin_offsetof(T, m) }

#define NF(a) ((uint8_t)(sizeof(a) / sizeof((a)[0])))

static void rec_put(const struct pf *t, uint32_t n, uint8_t *d, const void *r)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (t[i].kind == PK_BYTES)
			pr_copy(d + t[i].off, (const uint8_t *)r + t[i].mem,
				t[i].wire);
		else
			wire_put(d + t[i].off, t[i].wire,
				 mem_get(r, t[i].mem, t[i].msize));
	}
}

static void rec_get(const struct pf *t, uint32_t n, const uint8_t *d, void *r)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (t[i].kind == PK_BYTES)
			pr_copy((uint8_t *)r + t[i].mem, d + t[i].off,
				t[i].wire);
		else
			mem_put(r, t[i].mem, t[i].msize,
				wire_get(d + t[i].off, t[i].wire));
	}
}

/* --- records -------------------------------------------------------------- */

#define RR(o, w, m) R_INT(struct hvt_remote_rec, o, w, m)
static const struct pf remote_rec_t[] = {
	RR(0, 4, id),		RR(4, 4, state),
	RR(8, 4, writer_kind),	RR(12, 4, nr_cpus),
	RR(16, 4, nr_subbufs),	RR(20, 4, subbuf_size),
	RR(24, 4, mode),	RR(28, 4, clock_id),
	RR(32, 4, transport),	RR(36, 4, tracing_on),
	RR(40, 4, nr_events),	RR(44, 4, nr_clients),
	RR(48, 8, clock_err_ns), RR(56, 8, sync_samples),
	RR(64, 8, proto_errors), RR(72, 8, generation),
	R_BYTES(struct hvt_remote_rec, 80, 32, name),
};
#undef RR

#define TR(o, w, m) R_INT(struct hvt_trigger_rec, o, w, m)
static const struct pf trigger_rec_t[] = {
	TR(0, 8, token),	TR(8, 8, host_before),
	TR(16, 8, host_after),	TR(24, 8, writer_ts),
	TR(32, 4, cpu),		TR(36, 4, status),
};
#undef TR

void hvt_msg_put_u64(uint8_t *dst, uint64_t v)
{
	st64(dst, v);
}

uint64_t hvt_msg_u64_at(const struct hvt_arr *a, uint32_t i)
{
	return ld64(a->ptr + (uint64_t)i * 8);
}

void hvt_msg_put_remote(uint8_t *d, const struct hvt_remote_rec *r)
{
	rec_put(remote_rec_t, NF(remote_rec_t), d, r);
}

void hvt_msg_remote_at(const struct hvt_arr *a, uint32_t i,
		       struct hvt_remote_rec *r)
{
	rec_get(remote_rec_t, NF(remote_rec_t),
		a->ptr + (uint64_t)i * HVT_REMOTE_REC_SIZE, r);
}

void hvt_msg_put_trigger(uint8_t *d, const struct hvt_trigger_rec *r)
{
	rec_put(trigger_rec_t, NF(trigger_rec_t), d, r);
}

void hvt_msg_trigger_at(const struct hvt_arr *a, uint32_t i,
			struct hvt_trigger_rec *r)
{
	rec_get(trigger_rec_t, NF(trigger_rec_t),
		a->ptr + (uint64_t)i * HVT_TRIGGER_REC_SIZE, r);
}

static const char *remote_rec_bad(const uint8_t *rec)
{
	struct hvt_remote_rec r;
	uint32_t n = 0;

	rec_get(remote_rec_t, NF(remote_rec_t), rec, &r);
	if (r.state < 1 || r.state > HVT_REMOTE_STATE_MAX ||
	    r.transport < 1 || r.transport > HVT_TRANSPORT_MAX ||
	    r.nr_cpus > HVT_ABI_MAX_CPUS || r.tracing_on > 1)
		return "REMOTES record out of range";
	while (n < sizeof(r.name) && r.name[n])
		n++;
	if (n == sizeof(r.name) || !hvt_proto_name_ok(r.name, n))
		return "REMOTES record out of range";
	for (; n < sizeof(r.name); n++)
		if (r.name[n])
			return "REMOTES record out of range";
	return NULL;
}

static const char *trigger_rec_bad(const uint8_t *rec)
{
	struct hvt_trigger_rec r;

	rec_get(trigger_rec_t, NF(trigger_rec_t), rec, &r);
	if (r.status > 0 || r.status < -HVT_PROTO_MAX_STATUS ||
	    r.cpu >= HVT_ABI_MAX_CPUS)
		return "TRIGGER_RUN record out of range";
	return NULL;
}

/* --- the layouts (docs/proxy.md, "Payload layouts") ----------------------- */

#define CPU_MAX (HVT_ABI_MAX_CPUS - 1)

static const struct pf f_hello[] = {
	I(0, 2, hello.min_version, PR_RANGE, 1, 255,
	  "HELLO versions out of range"),
	I(2, 2, hello.max_version, PR_RANGE, 1, 255,
	  "HELLO versions out of range"),
	I(4, 1, hello.role, PR_RANGE, HVT_ROLE_AGENT, HVT_ROLE_DAEMON,
	  "HELLO role out of range"),
	I(5, 1, hello.nr_fds, PR_RANGE, 0, 2,
	  "HELLO with more than 2 descriptors"),
	U(8, 4, hello.caps),
	U(12, 4, hello.pid),
	I(16, 4, hello.nr_cpus, PR_RANGE, 0, HVT_ABI_MAX_CPUS,
	  "HELLO nr_cpus above the ABI limit"),
	U(20, 4, hello.clock_id),
	U(24, 4, hello.writer_kind),
	ST(28, hello.status, "HELLO status out of range"),
	U(32, 8, hello.area_offset),
	U(40, 8, hello.area_size),
	U(48, 8, hello.generation),
	S(56, 2, hello.name, PR_NAME, 0, HVT_PROTO_NAME_MAX,
	  "HELLO name is not 1..31 of [A-Za-z0-9._-]"),
	S(58, 2, hello.text, PR_TEXT, 0, HVT_PROTO_TEXT_MAX,
	  "HELLO text too long or holds a NUL"),
};

static int hello_extra(const struct hvt_msg *m, const char **why)
{
	if (m->u.hello.min_version > m->u.hello.max_version)
		*why = "HELLO versions out of range";
	else if (m->u.hello.area_offset % HVT_AREA_ALIGN)
		*why = "HELLO area offset not page aligned";
	else
		return 1;
	return 0;
}

static const struct pf f_bye[] = {
	I(0, 4, bye.reason, PR_RANGE, 0, HVT_BYE_MAX,
	  "BYE reason out of range"),
	ST(4, bye.status, "BYE status out of range"),
	S(8, 2, bye.text, PR_TEXT, 0, HVT_PROTO_TEXT_MAX,
	  "BYE text too long or holds a NUL"),
};

static const struct pf f_result[] = {
	ST(0, result.status, "status out of range"),
	U(4, 4, result.id),
	U(8, 4, result.bit),
	U(12, 4, result.flags),
	S(16, 2, result.text, PR_TEXT, 0, HVT_PROTO_TEXT_MAX,
	  "result text too long or holds a NUL"),
};

static const struct pf f_register[] = {
	I(0, 4, reg.flags, PR_MASK, 0, HVT_REG_ALL,
	  "REGISTER with unknown flags"),
	I(4, 4, reg.want_id, PR_RANGE, 0, 0xffff,
	  "REGISTER binding out of range"),
	I(8, 4, reg.want_bit, PR_RANGE, 0, HVT_ABI_MAX_EVENTS - 1,
	  "REGISTER binding out of range"),
	S(12, 2, reg.def, PR_DEF, 1, HVT_PROTO_DEF_MAX,
	  "REGISTER definition empty, too long or with control characters"),
};

static int register_extra(const struct hvt_msg *m, const char **why)
{
	const struct hvt_m_register *r = &m->u.reg;

	if (!(r->flags & HVT_REG_REPLAY) && (r->want_id || r->want_bit)) {
		*why = "REGISTER binding without the replay flag";
		return 0;
	}
	return 1;
}

static const struct pf f_unregister[] = {
	I(0, 4, unreg.id, PR_RANGE, 0, 0xffff, "UNREGISTER id out of range"),
};

/*
 * A guest kernel event or system: "SYSTEM" or "SYSTEM:EVENT", both parts
 * non-empty, of [A-Za-z0-9_], HVT_PROTO_EVNAME_MAX in all (tracefs folder
 * names: nothing a path could be made of).
 */
static int kevent_name_ok(const char *s, uint32_t len)
{
	uint32_t i, part = 0, colons = 0;

	if (len < 1 || len > HVT_PROTO_EVNAME_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == ':') {
			if (!part || colons++)
				return 0;
			part = 0;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_'))
			return 0;
		part++;
	}
	return part > 0;
}

/* DELETE, DEFINE, ENABLE, ATTACH, DETACH, ATTACH_AREA, KEVENT:
 * arg_extra(). */
static const struct pf f_arg[] = {
	U(0, 4, arg.arg),
	S(4, 2, arg.s, PR_NONE, 0, 0,
	  "argument string empty, too long or with control characters"),
};

static int arg_extra(const struct hvt_msg *m, const char **why)
{
	const struct hvt_m_arg *a = &m->u.arg;

	if (m->type == HVT_MSG_ENABLE || m->type == HVT_MSG_KEVENT) {
		if (a->arg > 1) {
			*why = "ENABLE argument is not 0 or 1";
			return 0;
		}
	} else if (m->type == HVT_MSG_ATTACH_AREA) {
		if (a->arg & ~HVT_ATTACH_ALL) {
			*why = "unknown ATTACH_AREA flags";
			return 0;
		}
	} else if (a->arg) {
		*why = "reserved argument is not zero";
		return 0;
	}
	if (m->type == HVT_MSG_ATTACH || m->type == HVT_MSG_DETACH) {
		if (!hvt_proto_name_ok(a->s.ptr, a->s.len)) {
			*why = "remote name is not 1..31 of [A-Za-z0-9._-]";
			return 0;
		}
		return 1;
	}
	if (m->type == HVT_MSG_KEVENT) {
		if (!kevent_name_ok(a->s.ptr, a->s.len)) {
			*why = "KEVENT name is not SYSTEM or SYSTEM:EVENT of "
			       "[A-Za-z0-9_]";
			return 0;
		}
		return 1;
	}
	if (!str_ok(PR_DEF, 1, HVT_PROTO_DEF_MAX, a->s.ptr, a->s.len)) {
		*why = "argument string empty, too long or with control "
		       "characters";
		return 0;
	}
	return 1;
}

static const struct pf f_client_gone[] = {
	U(0, 4, gone.pid),
};

static const struct pf f_cmdline[] = {
	U(0, 4, cmdline.pid),
	S(4, 2, cmdline.comm, PR_LINE, 1, HVT_PROTO_COMM_MAX,
	  "CMDLINE comm empty, too long or with control characters"),
};

static const struct pf f_event_state[] = {
	I(0, 4, event_state.id, PR_RANGE, 0, 0xffff,
	  "EVENT_STATE out of range"),
	I(4, 4, event_state.bit, PR_RANGE, 0, HVT_ABI_MAX_EVENTS - 1,
	  "EVENT_STATE out of range"),
	I(8, 1, event_state.enabled, PR_RANGE, 0, 1,
	  "EVENT_STATE out of range"),
};

static const struct pf f_tracing[] = {
	I(0, 4, tracing.op, PR_RANGE, 0, HVT_TRACING_ON,
	  "TRACING op out of range"),
};

static const struct pf f_ping[] = {
	U(0, 8, ping.seq),
	U(8, 8, ping.host_ns),
};

static const struct pf f_pong[] = {
	U(0, 8, pong.seq),
	U(8, 8, pong.host_ns),
	U(16, 8, pong.writer_rx),
	U(24, 8, pong.writer_tx),
	I(32, 4, pong.clock_id, PR_RANGE, HVT_CLOCK_COUNTER, HVT_CLOCK_HOST_NS,
	  "PONG clock id out of range"),
};

static int pong_extra(const struct hvt_msg *m, const char **why)
{
	if (m->u.pong.writer_tx < m->u.pong.writer_rx) {
		*why = "PONG answered before the PING arrived";
		return 0;
	}
	return 1;
}

static const struct pf f_trigger[] = {
	U(0, 8, trigger.token),
	U(8, 8, trigger.host_ns),
};

static const struct pf f_trigger_ack[] = {
	U(0, 8, trigger_ack.token),
	U(8, 8, trigger_ack.writer_ts),
	ST(16, trigger_ack.status, "TRIGGER acknowledgement out of range"),
	I(20, 4, trigger_ack.cpu, PR_RANGE, 0, CPU_MAX,
	  "TRIGGER acknowledgement out of range"),
};

static const struct pf f_text_req[] = {
	I(0, 4, text_req.kind, PR_RANGE, 1, HVT_TEXT_MAX,
	  "TEXT kind out of range"),
};

static const struct pf f_text[] = {
	ST(0, text.status, "TEXT status out of range"),
	S(4, 4, text.text, PR_TEXT, 0, HVT_PROTO_MAX_FRAME, "TEXT holds a NUL"),
};

static const struct pf f_remotes[] = {
	A(0, remotes.recs, HVT_REMOTE_REC_SIZE, 0, HVT_PROTO_MAX_REMOTES,
	  "too many REMOTES records", remote_rec_bad),
};

static const struct pf f_format[] = {
	ST(0, format.status, "FORMAT status out of range"),
	U(4, 4, format.id),
	S(8, 2, format.name, PR_LINE, 0, HVT_PROTO_EVNAME_MAX,
	  "FORMAT name too long or with control characters"),
	S(12, 4, format.text, PR_TEXT, 0, HVT_PROTO_MAX_FRAME,
	  "FORMAT text holds a NUL"),
};

static const struct pf f_stats[] = {
	ST(0, stats.status, "STATS record out of range"),
	I(4, 4, stats.cpu, PR_RANGE, 0, CPU_MAX, "STATS record out of range"),
	{ .kind = PK_INT, .off = 8, .wire = 8, .mem = M_OFF(stats.v),
	  .msize = 8, .n = HVT_STATS_FIELDS },
};

static const struct pf f_subscribe[] = {
	I(0, 4, subscribe.cpu, PR_RANGE, -1, CPU_MAX,
	  "SUBSCRIBE cpu out of range"),
	U(4, 4, subscribe.queue_kib),
};

static const struct pf f_unsubscribe[] = {
	U(0, 4, unsubscribe.sub),
};

static const struct pf f_page[] = {
	I(0, 4, page.cpu, PR_RANGE, 0, CPU_MAX,
	  "PAGE cpu or flags out of range"),
	I(4, 4, page.flags, PR_MASK, 0, HVT_PAGEF_ALL,
	  "PAGE cpu or flags out of range"),
	U(8, 4, page.seq),
	U(12, 4, page.entries),
	U(16, 8, page.lost_events),
	U(24, 8, page.dropped_pages),
	U(32, 8, page.dropped_events),
	U(40, 8, page.first_ts),
	{ .kind = PK_VAR, .rule = PR_RANGE, .off = 48, .wire = 4,
	  .mem = M_OFF(page.len), .msize = 4, .mptr = M_OFF(page.data),
	  .unit = 1, .lo = HVT_PROTO_MIN_PAGE, .hi = HVT_PROTO_MAX_PAGE,
	  .why = "PAGE length out of range" },
};

static const struct pf f_to_host[] = {
	A(0, to_host.ts, 8, 1, HVT_PROTO_MAX_TS, "TO_HOST count out of range",
	  NULL),
};

static const struct pf f_to_host_reply[] = {
	ST(0, to_host_reply.status, "TO_HOST reply out of range"),
	A(4, to_host_reply.ns, 8, 0, HVT_PROTO_MAX_TS,
	  "TO_HOST reply count out of range", NULL),
	U(8, 8, to_host_reply.err_ns),
};

static const struct pf f_trigger_run[] = {
	I(0, 4, trigger_run.count, PR_RANGE, 1, HVT_PROTO_MAX_TRIGGERS,
	  "TRIGGER_RUN count out of range"),
};

static const struct pf f_trigger_run_reply[] = {
	ST(0, trigger_run_reply.status, "TRIGGER_RUN reply out of range"),
	A(4, trigger_run_reply.recs, HVT_TRIGGER_REC_SIZE, 0,
	  HVT_PROTO_MAX_TRIGGERS, "TRIGGER_RUN reply count out of range",
	  trigger_rec_bad),
};

static const struct pf f_kformats[] = {
	I(0, 4, kformats.op, PR_RANGE, 1, HVT_KF_OP_MAX,
	  "KFORMATS op out of range"),
	U(4, 4, kformats.nr_files),
	U(8, 8, kformats.total_bytes),
	S(16, 2, kformats.release, PR_LINE, 1, HVT_PROTO_RELEASE_MAX,
	  "KFORMATS release empty, too long or with control characters"),
	S(18, 2, kformats.build_id, PR_LINE, 0, 2 * HVT_PROTO_BUILD_ID_MAX,
	  "KFORMATS build id too long"),
};

static int kformats_extra(const struct hvt_msg *m, const char **why)
{
	const struct hvt_m_kformats *k = &m->u.kformats;
	uint32_t i;

	if (k->build_id.len % 2) {
		*why = "KFORMATS build id is not lowercase hex bytes";
		return 0;
	}
	for (i = 0; i < k->build_id.len; i++) {
		char ch = k->build_id.ptr[i];

		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
			*why = "KFORMATS build id is not lowercase hex bytes";
			return 0;
		}
	}
	if (k->op == HVT_KF_BEGIN && k->total_bytes) {
		*why = "KFORMATS BEGIN with a byte count";
		return 0;
	}
	return 1;
}

static const struct pf f_kfile[] = {
	I(0, 4, kfile.flags, PR_MASK, 0, HVT_KFILE_ALL,
	  "KFILE with unknown flags"),
	U(8, 8, kfile.offset),
	S(16, 2, kfile.name, PR_LINE, 1, HVT_PROTO_KPATH_MAX,
	  "KFILE name empty, too long or with control characters"),
	{ .kind = PK_VAR, .rule = PR_RANGE, .off = 20, .wire = 4,
	  .mem = M_OFF(kfile.len), .msize = 4, .mptr = M_OFF(kfile.data),
	  .unit = 1, .lo = 0, .hi = HVT_PROTO_MAX_FRAME,
	  .why = "KFILE length out of range" },
};

/* The doubles travel as their bits: finite and not negative. */
#define CLOCK_DBL(o, m)                                                        \
	I(o, 8, m, PR_RANGE, 0, HVT_CLOCK_DOUBLE_MAX,                          \
	  "CLOCK error term negative, infinite or not a number")
static const struct pf f_clock[] = {
	I(0, 4, clock.clock_id, PR_RANGE, 0, HVT_CLOCK_HOST_NS,
	  "CLOCK clock id out of range"),
	I(4, 4, clock.flags, PR_MASK, 0, HVT_CLOCKF_ALL,
	  "CLOCK with unknown flags"),
	I(8, 8, clock.generation, PR_RANGE, 1, INT64_MAX,
	  "CLOCK generation out of range"),
	U(16, 8, clock.base_writer),
	U(24, 8, clock.base_host),
	I(32, 8, clock.rate_int, PR_RANGE, 0, (int64_t)HVT_CLOCK_RATE_INT_MAX,
	  "CLOCK rate out of range"),
	U(40, 8, clock.rate_frac),
	U(48, 8, clock.err_ns),
	CLOCK_DBL(56, clock.rate_err),
	CLOCK_DBL(64, clock.drift_half),
};
#undef CLOCK_DBL

static int clock_extra(const struct hvt_msg *m, const char **why)
{
	const struct hvt_m_clock *c = &m->u.clock;

	if (!c->clock_id) {
		if (c->flags || c->base_writer || c->base_host ||
		    c->rate_int || c->rate_frac || c->err_ns ||
		    c->rate_err || c->drift_half) {
			*why = "CLOCK without a clock carries a model";
			return 0;
		}
		return 1;
	}
	if (!c->rate_int && !c->rate_frac) {
		*why = "CLOCK rate is zero";
		return 0;
	}
	if (c->rate_int == HVT_CLOCK_RATE_INT_MAX && c->rate_frac) {
		*why = "CLOCK rate out of range";
		return 0;
	}
	return 1;
}

#define L(fx, t) { (fx), NF(t), (t), NULL }
#define LX(fx, t, x) { (fx), NF(t), (t), (x) }
const struct pl hvt_proto_layouts[HVT_L_COUNT] = {
	[HVT_L_EMPTY] = { 8, 0, NULL, NULL },
	[HVT_L_HELLO] = LX(60, f_hello, hello_extra),
	[HVT_L_BYE] = L(12, f_bye),
	[HVT_L_RESULT] = L(20, f_result),
	[HVT_L_REGISTER] = LX(16, f_register, register_extra),
	[HVT_L_UNREGISTER] = L(8, f_unregister),
	[HVT_L_ARG] = LX(8, f_arg, arg_extra),
	[HVT_L_CLIENT_GONE] = L(8, f_client_gone),
	[HVT_L_CMDLINE] = L(8, f_cmdline),
	[HVT_L_EVENT_STATE] = L(16, f_event_state),
	[HVT_L_TRACING] = L(8, f_tracing),
	[HVT_L_PING] = L(16, f_ping),
	[HVT_L_PONG] = LX(40, f_pong, pong_extra),
	[HVT_L_TRIGGER] = L(16, f_trigger),
	[HVT_L_TRIGGER_ACK] = L(24, f_trigger_ack),
	[HVT_L_TEXT_REQ] = L(8, f_text_req),
	[HVT_L_TEXT] = L(8, f_text),
	[HVT_L_REMOTES] = L(8, f_remotes),
	[HVT_L_FORMAT] = L(16, f_format),
	[HVT_L_STATS] = L(8 + 8 * HVT_STATS_FIELDS, f_stats),
	[HVT_L_SUBSCRIBE] = L(8, f_subscribe),
	[HVT_L_UNSUBSCRIBE] = L(8, f_unsubscribe),
	[HVT_L_PAGE] = L(56, f_page),
	[HVT_L_TO_HOST] = L(8, f_to_host),
	[HVT_L_TO_HOST_REPLY] = L(16, f_to_host_reply),
	[HVT_L_TRIGGER_RUN] = L(8, f_trigger_run),
	[HVT_L_TRIGGER_RUN_REPLY] = L(8, f_trigger_run_reply),
	[HVT_L_KFORMATS] = LX(24, f_kformats, kformats_extra),
	[HVT_L_KFILE] = L(24, f_kfile),
	[HVT_L_CLOCK] = LX(72, f_clock, clock_extra),
};
#undef L
#undef LX
