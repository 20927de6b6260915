// SPDX-License-Identifier: MIT
/*
 * hvtrace proxy protocol codec: frames, checksums, message layouts, and a
 * stream decoder that reassembles frames from arbitrary chunks.
 *
 * Nothing here allocates or does I/O.  Every byte comes from a peer that
 * may be hostile (a guest agent, a guest application, a host the guest
 * does not trust), so decoding checks, before anything is used: the frame
 * length against the decoder's limit, both checksums, the version, the
 * flags and reserved fields, then per message the exact payload length,
 * every string length against its limit and the bytes present, string
 * contents (no NUL; names from a small alphabet), every enum against its
 * range, and every count against the bytes that hold the records.
 *
 * The catalogue of layouts is the table msg_layouts[] below; the encoder
 * applies the same rules, so a frame it produced always decodes to the
 * message it was given.  docs/proxy.md draws every layout.
 */
#include <errno.h>
#include <string.h>

#include <hvtrace/abi.h>
#include <hvtrace/proto.h>

/* --- little-endian access ------------------------------------------------- */

static inline uint16_t ld16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t ld64(const uint8_t *p)
{
	return (uint64_t)ld32(p) | ((uint64_t)ld32(p + 4) << 32);
}

static inline void st16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void st32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void st64(uint8_t *p, uint64_t v)
{
	st32(p, (uint32_t)v);
	st32(p + 4, (uint32_t)(v >> 32));
}

/* --- checksums ------------------------------------------------------------ */

uint32_t hvt_proto_sum(const void *p, uint32_t len)
{
	const uint8_t *b = p;
	uint64_t a = 0x9e3779b97f4a7c15ull ^ len, s = 0x6a09e667f3bcc909ull;
	uint64_t h;

	/* Fletcher-style: 'a' sums the words, 's' sums the running 'a', so
	 * a swapped or shifted word changes the result. */
	for (; len >= 8; b += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, b, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		a += w;
		s += a;
	}
	if (len) {
		uint8_t t[8] = { 0 };

		memcpy(t, b, len);
		a += ld64(t) ^ ((uint64_t)len << 56);
		s += a;
	}
	h = a ^ (s * 0xff51afd7ed558ccdull);
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (uint32_t)h ^ (uint32_t)(h >> 32);
}

uint32_t hvt_proto_hsum(const void *hdr)
{
	const uint8_t *b = hdr;
	uint32_t h = 0x811c9dc5u, i;

	/* FNV-1a over the header up to (not including) hsum. */
	for (i = 0; i < 28; i++) {
		h ^= b[i];
		h *= 0x01000193u;
	}
	return h;
}

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

/* Fixed part of each layout, in bytes. */
static const uint16_t layout_fixed[] = {
	[HVT_L_EMPTY] = 8,
	[HVT_L_HELLO] = 60,
	[HVT_L_BYE] = 12,
	[HVT_L_RESULT] = 20,
	[HVT_L_REGISTER] = 16,
	[HVT_L_UNREGISTER] = 8,
	[HVT_L_ARG] = 8,
	[HVT_L_CLIENT_GONE] = 8,
	[HVT_L_CMDLINE] = 8,
	[HVT_L_EVENT_STATE] = 16,
	[HVT_L_TRACING] = 8,
	[HVT_L_PING] = 16,
	[HVT_L_PONG] = 40,
	[HVT_L_TRIGGER] = 16,
	[HVT_L_TRIGGER_ACK] = 24,
	[HVT_L_TEXT_REQ] = 8,
	[HVT_L_TEXT] = 8,
	[HVT_L_REMOTES] = 8,
	[HVT_L_FORMAT] = 16,
	[HVT_L_STATS] = 8 + 8 * HVT_STATS_FIELDS,
	[HVT_L_SUBSCRIBE] = 8,
	[HVT_L_UNSUBSCRIBE] = 8,
	[HVT_L_PAGE] = 56,
	[HVT_L_TO_HOST] = 8,
	[HVT_L_TO_HOST_REPLY] = 16,
	[HVT_L_TRIGGER_RUN] = 8,
	[HVT_L_TRIGGER_RUN_REPLY] = 8,
};

/* --- field rules shared by the encoder and the decoder -------------------- */

static int status_ok(int32_t s)
{
	return s <= 0 && s >= -HVT_PROTO_MAX_STATUS;
}

static int name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int hvt_proto_name_ok(const char *s, uint32_t len)
{
	uint32_t i;

	if (!s || len < 1 || len > HVT_PROTO_NAME_MAX || s[0] == '.')
		return 0;
	for (i = 0; i < len; i++)
		if (!name_char((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Strings never hold a NUL. */
static int str_ok(const struct hvt_str *s, uint32_t max)
{
	if (s->len > max)
		return 0;
	if (!s->len)
		return 1;
	return s->ptr && !memchr(s->ptr, 0, s->len);
}

/* Printable text for a single line: no control characters at all. */
static int line_ok(const struct hvt_str *s, uint32_t max)
{
	uint32_t i;

	if (!str_ok(s, max))
		return 0;
	for (i = 0; i < s->len; i++) {
		unsigned char c = (unsigned char)s->ptr[i];

		if (c < 0x20 || c == 0x7f)
			return 0;
	}
	return 1;
}

/* A definition or argument line: tabs allowed, other controls not. */
static int def_ok(const struct hvt_str *s, uint32_t max)
{
	uint32_t i;

	if (!str_ok(s, max))
		return 0;
	for (i = 0; i < s->len; i++) {
		unsigned char c = (unsigned char)s->ptr[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return 0;
	}
	return 1;
}

static int arg_rules(uint16_t type, const struct hvt_m_arg *a,
		     const char **why)
{
	if (type == HVT_MSG_ENABLE) {
		if (a->arg > 1) {
			*why = "ENABLE argument is not 0 or 1";
			return 0;
		}
	} else if (type == HVT_MSG_ATTACH_AREA) {
		if (a->arg & ~HVT_ATTACH_ALL) {
			*why = "unknown ATTACH_AREA flags";
			return 0;
		}
	} else if (a->arg) {
		*why = "reserved argument is not zero";
		return 0;
	}
	if (type == HVT_MSG_ATTACH || type == HVT_MSG_DETACH) {
		if (!hvt_proto_name_ok(a->s.ptr, a->s.len)) {
			*why = "remote name is not 1..31 of [A-Za-z0-9._-]";
			return 0;
		}
		return 1;
	}
	if (a->s.len < 1 || !def_ok(&a->s, HVT_PROTO_DEF_MAX)) {
		*why = "argument string empty, too long or with control "
		       "characters";
		return 0;
	}
	return 1;
}

static int remote_rec_ok(const struct hvt_remote_rec *r)
{
	uint32_t n = 0;

	if (r->state < 1 || r->state > HVT_REMOTE_STATE_MAX ||
	    r->transport < 1 || r->transport > HVT_TRANSPORT_MAX ||
	    r->nr_cpus > HVT_ABI_MAX_CPUS || r->tracing_on > 1)
		return 0;
	while (n < sizeof(r->name) && r->name[n])
		n++;
	if (n == sizeof(r->name) || !hvt_proto_name_ok(r->name, n))
		return 0;
	for (; n < sizeof(r->name); n++)
		if (r->name[n])
			return 0;
	return 1;
}

static int trigger_rec_ok(const struct hvt_trigger_rec *r)
{
	return status_ok(r->status) && r->cpu < HVT_ABI_MAX_CPUS;
}

/*
 * Validate a message against its layout; the one rule set for both
 * directions.  Returns 0 or -EBADMSG with *why set.
 */
static int msg_check(const struct hvt_msg *m, enum hvt_layout l,
		     const char **why)
{
	const char *w = NULL;

	switch (l) {
	case HVT_L_NONE:
		w = "unknown message";
		break;
	case HVT_L_EMPTY:
		break;
	case HVT_L_HELLO: {
		const struct hvt_m_hello *h = &m->u.hello;

		if (h->min_version < 1 || h->min_version > h->max_version ||
		    h->max_version > 255)
			w = "HELLO versions out of range";
		else if (h->role < HVT_ROLE_AGENT || h->role > HVT_ROLE_DAEMON)
			w = "HELLO role out of range";
		else if (h->nr_fds > 2)
			w = "HELLO with more than 2 descriptors";
		else if (h->nr_cpus > HVT_ABI_MAX_CPUS)
			w = "HELLO nr_cpus above the ABI limit";
		else if (h->area_offset % HVT_AREA_ALIGN)
			w = "HELLO area offset not page aligned";
		else if (!status_ok(h->status))
			w = "HELLO status out of range";
		else if (h->name.len &&
			 !hvt_proto_name_ok(h->name.ptr, h->name.len))
			w = "HELLO name is not 1..31 of [A-Za-z0-9._-]";
		else if (!str_ok(&h->text, HVT_PROTO_TEXT_MAX))
			w = "HELLO text too long or holds a NUL";
		break;
	}
	case HVT_L_BYE:
		if (m->u.bye.reason > HVT_BYE_MAX)
			w = "BYE reason out of range";
		else if (!status_ok(m->u.bye.status))
			w = "BYE status out of range";
		else if (!str_ok(&m->u.bye.text, HVT_PROTO_TEXT_MAX))
			w = "BYE text too long or holds a NUL";
		break;
	case HVT_L_RESULT:
		if (!status_ok(m->u.result.status))
			w = "status out of range";
		else if (!str_ok(&m->u.result.text, HVT_PROTO_TEXT_MAX))
			w = "result text too long or holds a NUL";
		break;
	case HVT_L_REGISTER: {
		const struct hvt_m_register *r = &m->u.reg;

		if (r->flags & ~HVT_REG_ALL)
			w = "REGISTER with unknown flags";
		else if (!(r->flags & HVT_REG_REPLAY) &&
			 (r->want_id || r->want_bit))
			w = "REGISTER binding without the replay flag";
		else if (r->want_id > 0xffff ||
			 r->want_bit >= HVT_ABI_MAX_EVENTS)
			w = "REGISTER binding out of range";
		else if (r->def.len < 1 || !def_ok(&r->def, HVT_PROTO_DEF_MAX))
			w = "REGISTER definition empty, too long or with "
			    "control characters";
		break;
	}
	case HVT_L_UNREGISTER:
		if (m->u.unreg.id > 0xffff)
			w = "UNREGISTER id out of range";
		break;
	case HVT_L_ARG:
		if (!arg_rules(m->type, &m->u.arg, &w))
			break;
		w = NULL;
		break;
	case HVT_L_CLIENT_GONE:
		break;
	case HVT_L_CMDLINE:
		if (m->u.cmdline.comm.len < 1 ||
		    !line_ok(&m->u.cmdline.comm, HVT_PROTO_COMM_MAX))
			w = "CMDLINE comm empty, too long or with control "
			    "characters";
		break;
	case HVT_L_EVENT_STATE:
		if (m->u.event_state.id > 0xffff ||
		    m->u.event_state.bit >= HVT_ABI_MAX_EVENTS ||
		    m->u.event_state.enabled > 1)
			w = "EVENT_STATE out of range";
		break;
	case HVT_L_TRACING:
		if (m->u.tracing.op > HVT_TRACING_ON)
			w = "TRACING op out of range";
		break;
	case HVT_L_PING:
	case HVT_L_TRIGGER:
		break;
	case HVT_L_PONG:
		if (m->u.pong.clock_id < HVT_CLOCK_COUNTER ||
		    m->u.pong.clock_id > HVT_CLOCK_HOST_NS)
			w = "PONG clock id out of range";
		else if (m->u.pong.writer_tx < m->u.pong.writer_rx)
			w = "PONG answered before the PING arrived";
		break;
	case HVT_L_TRIGGER_ACK:
		if (!status_ok(m->u.trigger_ack.status) ||
		    m->u.trigger_ack.cpu >= HVT_ABI_MAX_CPUS)
			w = "TRIGGER acknowledgement out of range";
		break;
	case HVT_L_TEXT_REQ:
		if (m->u.text_req.kind < 1 || m->u.text_req.kind > HVT_TEXT_MAX)
			w = "TEXT kind out of range";
		break;
	case HVT_L_TEXT:
		if (!status_ok(m->u.text.status))
			w = "TEXT status out of range";
		else if (!str_ok(&m->u.text.text, HVT_PROTO_MAX_FRAME))
			w = "TEXT holds a NUL";
		break;
	case HVT_L_REMOTES:
		if (m->u.remotes.recs.count > HVT_PROTO_MAX_REMOTES)
			w = "too many REMOTES records";
		break;
	case HVT_L_FORMAT:
		if (!status_ok(m->u.format.status))
			w = "FORMAT status out of range";
		else if (!line_ok(&m->u.format.name, HVT_PROTO_EVNAME_MAX))
			w = "FORMAT name too long or with control characters";
		else if (!str_ok(&m->u.format.text, HVT_PROTO_MAX_FRAME))
			w = "FORMAT text holds a NUL";
		break;
	case HVT_L_STATS:
		if (!status_ok(m->u.stats.status) ||
		    m->u.stats.cpu >= HVT_ABI_MAX_CPUS)
			w = "STATS record out of range";
		break;
	case HVT_L_SUBSCRIBE:
		if (m->u.subscribe.cpu < -1 ||
		    m->u.subscribe.cpu >= (int32_t)HVT_ABI_MAX_CPUS)
			w = "SUBSCRIBE cpu out of range";
		break;
	case HVT_L_UNSUBSCRIBE:
		break;
	case HVT_L_PAGE: {
		const struct hvt_m_page *p = &m->u.page;

		if (p->cpu >= HVT_ABI_MAX_CPUS || (p->flags & ~HVT_PAGEF_ALL))
			w = "PAGE cpu or flags out of range";
		else if (p->len < HVT_PROTO_MIN_PAGE ||
			 p->len > HVT_PROTO_MAX_PAGE || !p->data)
			w = "PAGE length out of range";
		break;
	}
	case HVT_L_TO_HOST:
		if (m->u.to_host.ts.count < 1 ||
		    m->u.to_host.ts.count > HVT_PROTO_MAX_TS)
			w = "TO_HOST count out of range";
		break;
	case HVT_L_TO_HOST_REPLY:
		if (!status_ok(m->u.to_host_reply.status) ||
		    m->u.to_host_reply.ns.count > HVT_PROTO_MAX_TS)
			w = "TO_HOST reply out of range";
		break;
	case HVT_L_TRIGGER_RUN:
		if (m->u.trigger_run.count < 1 ||
		    m->u.trigger_run.count > HVT_PROTO_MAX_TRIGGERS)
			w = "TRIGGER_RUN count out of range";
		break;
	case HVT_L_TRIGGER_RUN_REPLY:
		if (!status_ok(m->u.trigger_run_reply.status) ||
		    m->u.trigger_run_reply.recs.count > HVT_PROTO_MAX_TRIGGERS)
			w = "TRIGGER_RUN reply out of range";
		break;
	}
	if (w) {
		if (why)
			*why = w;
		return -EBADMSG;
	}
	return 0;
}

/* Variable bytes after the fixed part, for the encoder. */
static int64_t msg_var_size(const struct hvt_msg *m, enum hvt_layout l)
{
	switch (l) {
	case HVT_L_HELLO:
		return (int64_t)m->u.hello.name.len + m->u.hello.text.len;
	case HVT_L_BYE:
		return m->u.bye.text.len;
	case HVT_L_RESULT:
		return m->u.result.text.len;
	case HVT_L_REGISTER:
		return m->u.reg.def.len;
	case HVT_L_ARG:
		return m->u.arg.s.len;
	case HVT_L_CMDLINE:
		return m->u.cmdline.comm.len;
	case HVT_L_TEXT:
		return m->u.text.text.len;
	case HVT_L_REMOTES:
		return (int64_t)m->u.remotes.recs.count * HVT_REMOTE_REC_SIZE;
	case HVT_L_FORMAT:
		return (int64_t)m->u.format.name.len + m->u.format.text.len;
	case HVT_L_PAGE:
		return m->u.page.len;
	case HVT_L_TO_HOST:
		return (int64_t)m->u.to_host.ts.count * 8;
	case HVT_L_TO_HOST_REPLY:
		return (int64_t)m->u.to_host_reply.ns.count * 8;
	case HVT_L_TRIGGER_RUN_REPLY:
		return (int64_t)m->u.trigger_run_reply.recs.count *
		       HVT_TRIGGER_REC_SIZE;
	default:
		return 0;
	}
}

static enum hvt_layout msg_layout_of(const struct hvt_msg *m)
{
	if (m->flags & ~HVT_PF_ALL)
		return HVT_L_NONE;
	if ((m->flags & HVT_PF_MORE) && !(m->flags & HVT_PF_REPLY))
		return HVT_L_NONE;
	return hvt_msg_layout(m->type, m->flags & HVT_PF_REPLY);
}

int hvt_msg_encoded_size(const struct hvt_msg *m)
{
	enum hvt_layout l;
	int64_t n;

	if (!m)
		return -EINVAL;
	l = msg_layout_of(m);
	if (l == HVT_L_NONE || msg_check(m, l, NULL))
		return -EINVAL;
	n = HVT_PROTO_HDR_SIZE + layout_fixed[l] + msg_var_size(m, l);
	if (n > HVT_PROTO_MAX_FRAME)
		return -EMSGSIZE;
	return (int)n;
}

static void put_bytes(uint8_t **p, const void *src, uint32_t len)
{
	if (len)
		memcpy(*p, src, len);
	*p += len;
}

void hvt_msg_put_u64(uint8_t *dst, uint64_t v)
{
	st64(dst, v);
}

void hvt_msg_put_remote(uint8_t *d, const struct hvt_remote_rec *r)
{
	st32(d + 0, r->id);
	st32(d + 4, r->state);
	st32(d + 8, r->writer_kind);
	st32(d + 12, r->nr_cpus);
	st32(d + 16, r->nr_subbufs);
	st32(d + 20, r->subbuf_size);
	st32(d + 24, r->mode);
	st32(d + 28, r->clock_id);
	st32(d + 32, r->transport);
	st32(d + 36, r->tracing_on);
	st32(d + 40, r->nr_events);
	st32(d + 44, r->nr_clients);
	st64(d + 48, r->clock_err_ns);
	st64(d + 56, r->sync_samples);
	st64(d + 64, r->proto_errors);
	st64(d + 72, r->generation);
	memcpy(d + 80, r->name, 32);
}

void hvt_msg_remote_at(const struct hvt_arr *a, uint32_t i,
		       struct hvt_remote_rec *r)
{
	const uint8_t *d = a->ptr + (size_t)i * HVT_REMOTE_REC_SIZE;

	r->id = ld32(d + 0);
	r->state = ld32(d + 4);
	r->writer_kind = ld32(d + 8);
	r->nr_cpus = ld32(d + 12);
	r->nr_subbufs = ld32(d + 16);
	r->subbuf_size = ld32(d + 20);
	r->mode = ld32(d + 24);
	r->clock_id = ld32(d + 28);
	r->transport = ld32(d + 32);
	r->tracing_on = ld32(d + 36);
	r->nr_events = ld32(d + 40);
	r->nr_clients = ld32(d + 44);
	r->clock_err_ns = ld64(d + 48);
	r->sync_samples = ld64(d + 56);
	r->proto_errors = ld64(d + 64);
	r->generation = ld64(d + 72);
	memcpy(r->name, d + 80, 32);
}

void hvt_msg_put_trigger(uint8_t *d, const struct hvt_trigger_rec *r)
{
	st64(d + 0, r->token);
	st64(d + 8, r->host_before);
	st64(d + 16, r->host_after);
	st64(d + 24, r->writer_ts);
	st32(d + 32, r->cpu);
	st32(d + 36, (uint32_t)r->status);
}

void hvt_msg_trigger_at(const struct hvt_arr *a, uint32_t i,
			struct hvt_trigger_rec *r)
{
	const uint8_t *d = a->ptr + (size_t)i * HVT_TRIGGER_REC_SIZE;

	r->token = ld64(d + 0);
	r->host_before = ld64(d + 8);
	r->host_after = ld64(d + 16);
	r->writer_ts = ld64(d + 24);
	r->cpu = ld32(d + 32);
	r->status = (int32_t)ld32(d + 36);
}

uint64_t hvt_msg_u64_at(const struct hvt_arr *a, uint32_t i)
{
	return ld64(a->ptr + (size_t)i * 8);
}

/* Array payloads are copied verbatim (they are already in wire order),
 * but every record is validated first. */
static int arr_records_ok(const struct hvt_msg *m, enum hvt_layout l)
{
	uint32_t i;

	if (l == HVT_L_REMOTES) {
		for (i = 0; i < m->u.remotes.recs.count; i++) {
			struct hvt_remote_rec r;

			hvt_msg_remote_at(&m->u.remotes.recs, i, &r);
			if (!remote_rec_ok(&r))
				return 0;
		}
	} else if (l == HVT_L_TRIGGER_RUN_REPLY) {
		for (i = 0; i < m->u.trigger_run_reply.recs.count; i++) {
			struct hvt_trigger_rec r;

			hvt_msg_trigger_at(&m->u.trigger_run_reply.recs, i, &r);
			if (!trigger_rec_ok(&r))
				return 0;
		}
	}
	return 1;
}

static int arr_ptr_ok(const struct hvt_arr *a)
{
	return !a->count || a->ptr;
}

int hvt_msg_encode(void *buf, uint32_t cap, const struct hvt_msg *m)
{
	uint8_t *b = buf, *p;
	enum hvt_layout l;
	int n;

	n = hvt_msg_encoded_size(m);
	if (n < 0)
		return n;
	if (!buf || (uint32_t)n > cap)
		return -EMSGSIZE;
	l = msg_layout_of(m);
	switch (l) {
	case HVT_L_REMOTES:
		if (!arr_ptr_ok(&m->u.remotes.recs))
			return -EINVAL;
		break;
	case HVT_L_TO_HOST:
		if (!arr_ptr_ok(&m->u.to_host.ts))
			return -EINVAL;
		break;
	case HVT_L_TO_HOST_REPLY:
		if (!arr_ptr_ok(&m->u.to_host_reply.ns))
			return -EINVAL;
		break;
	case HVT_L_TRIGGER_RUN_REPLY:
		if (!arr_ptr_ok(&m->u.trigger_run_reply.recs))
			return -EINVAL;
		break;
	default:
		break;
	}
	if (!arr_records_ok(m, l))
		return -EINVAL;

	memset(b, 0, HVT_PROTO_HDR_SIZE + layout_fixed[l]);
	p = b + HVT_PROTO_HDR_SIZE;
	switch (l) {
	case HVT_L_NONE:
	case HVT_L_EMPTY:
		break;
	case HVT_L_HELLO: {
		const struct hvt_m_hello *h = &m->u.hello;

		st16(p + 0, h->min_version);
		st16(p + 2, h->max_version);
		p[4] = h->role;
		p[5] = h->nr_fds;
		st32(p + 8, h->caps);
		st32(p + 12, h->pid);
		st32(p + 16, h->nr_cpus);
		st32(p + 20, h->clock_id);
		st32(p + 24, h->writer_kind);
		st32(p + 28, (uint32_t)h->status);
		st64(p + 32, h->area_offset);
		st64(p + 40, h->area_size);
		st64(p + 48, h->generation);
		st16(p + 56, (uint16_t)h->name.len);
		st16(p + 58, (uint16_t)h->text.len);
		p += 60;
		put_bytes(&p, h->name.ptr, h->name.len);
		put_bytes(&p, h->text.ptr, h->text.len);
		break;
	}
	case HVT_L_BYE:
		st32(p + 0, m->u.bye.reason);
		st32(p + 4, (uint32_t)m->u.bye.status);
		st16(p + 8, (uint16_t)m->u.bye.text.len);
		p += 12;
		put_bytes(&p, m->u.bye.text.ptr, m->u.bye.text.len);
		break;
	case HVT_L_RESULT:
		st32(p + 0, (uint32_t)m->u.result.status);
		st32(p + 4, m->u.result.id);
		st32(p + 8, m->u.result.bit);
		st32(p + 12, m->u.result.flags);
		st16(p + 16, (uint16_t)m->u.result.text.len);
		p += 20;
		put_bytes(&p, m->u.result.text.ptr, m->u.result.text.len);
		break;
	case HVT_L_REGISTER:
		st32(p + 0, m->u.reg.flags);
		st32(p + 4, m->u.reg.want_id);
		st32(p + 8, m->u.reg.want_bit);
		st16(p + 12, (uint16_t)m->u.reg.def.len);
		p += 16;
		put_bytes(&p, m->u.reg.def.ptr, m->u.reg.def.len);
		break;
	case HVT_L_UNREGISTER:
		st32(p, m->u.unreg.id);
		break;
	case HVT_L_ARG:
		st32(p + 0, m->u.arg.arg);
		st16(p + 4, (uint16_t)m->u.arg.s.len);
		p += 8;
		put_bytes(&p, m->u.arg.s.ptr, m->u.arg.s.len);
		break;
	case HVT_L_CLIENT_GONE:
		st32(p, m->u.gone.pid);
		break;
	case HVT_L_CMDLINE:
		st32(p + 0, m->u.cmdline.pid);
		st16(p + 4, (uint16_t)m->u.cmdline.comm.len);
		p += 8;
		put_bytes(&p, m->u.cmdline.comm.ptr, m->u.cmdline.comm.len);
		break;
	case HVT_L_EVENT_STATE:
		st32(p + 0, m->u.event_state.id);
		st32(p + 4, m->u.event_state.bit);
		p[8] = m->u.event_state.enabled;
		break;
	case HVT_L_TRACING:
		st32(p, m->u.tracing.op);
		break;
	case HVT_L_PING:
		st64(p + 0, m->u.ping.seq);
		st64(p + 8, m->u.ping.host_ns);
		break;
	case HVT_L_PONG:
		st64(p + 0, m->u.pong.seq);
		st64(p + 8, m->u.pong.host_ns);
		st64(p + 16, m->u.pong.writer_rx);
		st64(p + 24, m->u.pong.writer_tx);
		st32(p + 32, m->u.pong.clock_id);
		break;
	case HVT_L_TRIGGER:
		st64(p + 0, m->u.trigger.token);
		st64(p + 8, m->u.trigger.host_ns);
		break;
	case HVT_L_TRIGGER_ACK:
		st64(p + 0, m->u.trigger_ack.token);
		st64(p + 8, m->u.trigger_ack.writer_ts);
		st32(p + 16, (uint32_t)m->u.trigger_ack.status);
		st32(p + 20, m->u.trigger_ack.cpu);
		break;
	case HVT_L_TEXT_REQ:
		st32(p, m->u.text_req.kind);
		break;
	case HVT_L_TEXT:
		st32(p + 0, (uint32_t)m->u.text.status);
		st32(p + 4, m->u.text.text.len);
		p += 8;
		put_bytes(&p, m->u.text.text.ptr, m->u.text.text.len);
		break;
	case HVT_L_REMOTES:
		st32(p, m->u.remotes.recs.count);
		p += 8;
		put_bytes(&p, m->u.remotes.recs.ptr,
			  m->u.remotes.recs.count * HVT_REMOTE_REC_SIZE);
		break;
	case HVT_L_FORMAT:
		st32(p + 0, (uint32_t)m->u.format.status);
		st32(p + 4, m->u.format.id);
		st16(p + 8, (uint16_t)m->u.format.name.len);
		st32(p + 12, m->u.format.text.len);
		p += 16;
		put_bytes(&p, m->u.format.name.ptr, m->u.format.name.len);
		put_bytes(&p, m->u.format.text.ptr, m->u.format.text.len);
		break;
	case HVT_L_STATS: {
		uint32_t i;

		st32(p + 0, (uint32_t)m->u.stats.status);
		st32(p + 4, m->u.stats.cpu);
		for (i = 0; i < HVT_STATS_FIELDS; i++)
			st64(p + 8 + 8 * i, m->u.stats.v[i]);
		break;
	}
	case HVT_L_SUBSCRIBE:
		st32(p, (uint32_t)m->u.subscribe.cpu);
		st32(p + 4, m->u.subscribe.queue_kib);
		break;
	case HVT_L_UNSUBSCRIBE:
		st32(p, m->u.unsubscribe.sub);
		break;
	case HVT_L_PAGE: {
		const struct hvt_m_page *pg = &m->u.page;

		st32(p + 0, pg->cpu);
		st32(p + 4, pg->flags);
		st32(p + 8, pg->seq);
		st32(p + 12, pg->entries);
		st64(p + 16, pg->lost_events);
		st64(p + 24, pg->dropped_pages);
		st64(p + 32, pg->dropped_events);
		st64(p + 40, pg->first_ts);
		st32(p + 48, pg->len);
		p += 56;
		put_bytes(&p, pg->data, pg->len);
		break;
	}
	case HVT_L_TO_HOST:
		st32(p, m->u.to_host.ts.count);
		p += 8;
		put_bytes(&p, m->u.to_host.ts.ptr, m->u.to_host.ts.count * 8);
		break;
	case HVT_L_TO_HOST_REPLY:
		st32(p + 0, (uint32_t)m->u.to_host_reply.status);
		st32(p + 4, m->u.to_host_reply.ns.count);
		st64(p + 8, m->u.to_host_reply.err_ns);
		p += 16;
		put_bytes(&p, m->u.to_host_reply.ns.ptr,
			  m->u.to_host_reply.ns.count * 8);
		break;
	case HVT_L_TRIGGER_RUN:
		st32(p, m->u.trigger_run.count);
		break;
	case HVT_L_TRIGGER_RUN_REPLY:
		st32(p + 0, (uint32_t)m->u.trigger_run_reply.status);
		st32(p + 4, m->u.trigger_run_reply.recs.count);
		p += 8;
		put_bytes(&p, m->u.trigger_run_reply.recs.ptr,
			  m->u.trigger_run_reply.recs.count *
				  HVT_TRIGGER_REC_SIZE);
		break;
	}

	st32(b + 0, HVT_PROTO_MAGIC);
	st32(b + 4, (uint32_t)n);
	st16(b + 8, m->type);
	b[10] = HVT_PROTO_VERSION;
	b[11] = m->flags;
	st32(b + 12, m->req);
	st32(b + 16, m->chan);
	st32(b + 24, hvt_proto_sum(b + HVT_PROTO_HDR_SIZE,
				   (uint32_t)n - HVT_PROTO_HDR_SIZE));
	st32(b + 28, hvt_proto_hsum(b));
	return n;
}

/* --- decoding ------------------------------------------------------------- */

static int zero(const uint8_t *p, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

#define BAD(msg)                                                               \
	do {                                                                   \
		if (why)                                                       \
			*why = (msg);                                          \
		return -EBADMSG;                                               \
	} while (0)

/* The variable part must be exactly @want bytes. */
#define VAR_EXACT(want)                                                        \
	do {                                                                   \
		if ((uint64_t)(want) != var)                                   \
			BAD("payload length does not match its fields");       \
	} while (0)

int hvt_msg_decode(const struct hvt_frame *f, struct hvt_msg *m,
		   const char **why)
{
	const uint8_t *p;
	enum hvt_layout l;
	uint32_t fixed, var;

	if (why)
		*why = NULL;
	if (!f || !m || (f->len && !f->payload))
		BAD("no frame");
	memset(m, 0, sizeof(*m));
	m->type = f->type;
	m->flags = f->flags;
	m->req = f->req;
	m->chan = f->chan;
	if ((f->flags & HVT_PF_MORE) && !(f->flags & HVT_PF_REPLY))
		BAD("MORE flag on a request");
	l = hvt_msg_layout(f->type, f->flags & HVT_PF_REPLY);
	if (l == HVT_L_NONE) {
		if (why)
			*why = "unknown message type or direction";
		return -EOPNOTSUPP;
	}
	fixed = layout_fixed[l];
	if (f->len < fixed)
		BAD("payload shorter than its fixed part");
	p = f->payload;
	var = f->len - fixed;

	switch (l) {
	case HVT_L_NONE:
		break;
	case HVT_L_EMPTY:
		if (!zero(p, 8))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_HELLO: {
		struct hvt_m_hello *h = &m->u.hello;

		h->min_version = ld16(p + 0);
		h->max_version = ld16(p + 2);
		h->role = p[4];
		h->nr_fds = p[5];
		if (!zero(p + 6, 2))
			BAD("reserved field not zero");
		h->caps = ld32(p + 8);
		h->pid = ld32(p + 12);
		h->nr_cpus = ld32(p + 16);
		h->clock_id = ld32(p + 20);
		h->writer_kind = ld32(p + 24);
		h->status = (int32_t)ld32(p + 28);
		h->area_offset = ld64(p + 32);
		h->area_size = ld64(p + 40);
		h->generation = ld64(p + 48);
		h->name.len = ld16(p + 56);
		h->text.len = ld16(p + 58);
		VAR_EXACT((uint64_t)h->name.len + h->text.len);
		h->name.ptr = (const char *)p + fixed;
		h->text.ptr = h->name.ptr + h->name.len;
		break;
	}
	case HVT_L_BYE:
		m->u.bye.reason = ld32(p + 0);
		m->u.bye.status = (int32_t)ld32(p + 4);
		m->u.bye.text.len = ld16(p + 8);
		if (!zero(p + 10, 2))
			BAD("reserved field not zero");
		VAR_EXACT(m->u.bye.text.len);
		m->u.bye.text.ptr = (const char *)p + fixed;
		break;
	case HVT_L_RESULT:
		m->u.result.status = (int32_t)ld32(p + 0);
		m->u.result.id = ld32(p + 4);
		m->u.result.bit = ld32(p + 8);
		m->u.result.flags = ld32(p + 12);
		m->u.result.text.len = ld16(p + 16);
		if (!zero(p + 18, 2))
			BAD("reserved field not zero");
		VAR_EXACT(m->u.result.text.len);
		m->u.result.text.ptr = (const char *)p + fixed;
		break;
	case HVT_L_REGISTER:
		m->u.reg.flags = ld32(p + 0);
		m->u.reg.want_id = ld32(p + 4);
		m->u.reg.want_bit = ld32(p + 8);
		m->u.reg.def.len = ld16(p + 12);
		if (!zero(p + 14, 2))
			BAD("reserved field not zero");
		VAR_EXACT(m->u.reg.def.len);
		m->u.reg.def.ptr = (const char *)p + fixed;
		break;
	case HVT_L_UNREGISTER:
		m->u.unreg.id = ld32(p);
		if (!zero(p + 4, 4))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_ARG:
		m->u.arg.arg = ld32(p + 0);
		m->u.arg.s.len = ld16(p + 4);
		if (!zero(p + 6, 2))
			BAD("reserved field not zero");
		VAR_EXACT(m->u.arg.s.len);
		m->u.arg.s.ptr = (const char *)p + fixed;
		break;
	case HVT_L_CLIENT_GONE:
		m->u.gone.pid = ld32(p);
		if (!zero(p + 4, 4))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_CMDLINE:
		m->u.cmdline.pid = ld32(p + 0);
		m->u.cmdline.comm.len = ld16(p + 4);
		if (!zero(p + 6, 2))
			BAD("reserved field not zero");
		VAR_EXACT(m->u.cmdline.comm.len);
		m->u.cmdline.comm.ptr = (const char *)p + fixed;
		break;
	case HVT_L_EVENT_STATE:
		m->u.event_state.id = ld32(p + 0);
		m->u.event_state.bit = ld32(p + 4);
		m->u.event_state.enabled = p[8];
		if (!zero(p + 9, 7))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_TRACING:
		m->u.tracing.op = ld32(p);
		if (!zero(p + 4, 4))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_PING:
		m->u.ping.seq = ld64(p + 0);
		m->u.ping.host_ns = ld64(p + 8);
		VAR_EXACT(0);
		break;
	case HVT_L_PONG:
		m->u.pong.seq = ld64(p + 0);
		m->u.pong.host_ns = ld64(p + 8);
		m->u.pong.writer_rx = ld64(p + 16);
		m->u.pong.writer_tx = ld64(p + 24);
		m->u.pong.clock_id = ld32(p + 32);
		if (!zero(p + 36, 4))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_TRIGGER:
		m->u.trigger.token = ld64(p + 0);
		m->u.trigger.host_ns = ld64(p + 8);
		VAR_EXACT(0);
		break;
	case HVT_L_TRIGGER_ACK:
		m->u.trigger_ack.token = ld64(p + 0);
		m->u.trigger_ack.writer_ts = ld64(p + 8);
		m->u.trigger_ack.status = (int32_t)ld32(p + 16);
		m->u.trigger_ack.cpu = ld32(p + 20);
		VAR_EXACT(0);
		break;
	case HVT_L_TEXT_REQ:
		m->u.text_req.kind = ld32(p);
		if (!zero(p + 4, 4))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_TEXT:
		m->u.text.status = (int32_t)ld32(p + 0);
		m->u.text.text.len = ld32(p + 4);
		VAR_EXACT(m->u.text.text.len);
		m->u.text.text.ptr = (const char *)p + fixed;
		break;
	case HVT_L_REMOTES:
		m->u.remotes.recs.count = ld32(p);
		if (!zero(p + 4, 4))
			BAD("reserved field not zero");
		if (m->u.remotes.recs.count > HVT_PROTO_MAX_REMOTES)
			BAD("too many REMOTES records");
		VAR_EXACT((uint64_t)m->u.remotes.recs.count *
			  HVT_REMOTE_REC_SIZE);
		m->u.remotes.recs.ptr = p + fixed;
		if (!arr_records_ok(m, l))
			BAD("REMOTES record out of range");
		break;
	case HVT_L_FORMAT:
		m->u.format.status = (int32_t)ld32(p + 0);
		m->u.format.id = ld32(p + 4);
		m->u.format.name.len = ld16(p + 8);
		if (!zero(p + 10, 2))
			BAD("reserved field not zero");
		m->u.format.text.len = ld32(p + 12);
		VAR_EXACT((uint64_t)m->u.format.name.len +
			  m->u.format.text.len);
		m->u.format.name.ptr = (const char *)p + fixed;
		m->u.format.text.ptr =
			m->u.format.name.ptr + m->u.format.name.len;
		break;
	case HVT_L_STATS: {
		uint32_t i;

		m->u.stats.status = (int32_t)ld32(p + 0);
		m->u.stats.cpu = ld32(p + 4);
		for (i = 0; i < HVT_STATS_FIELDS; i++)
			m->u.stats.v[i] = ld64(p + 8 + 8 * i);
		VAR_EXACT(0);
		break;
	}
	case HVT_L_SUBSCRIBE:
		m->u.subscribe.cpu = (int32_t)ld32(p);
		m->u.subscribe.queue_kib = ld32(p + 4);
		VAR_EXACT(0);
		break;
	case HVT_L_UNSUBSCRIBE:
		m->u.unsubscribe.sub = ld32(p);
		if (!zero(p + 4, 4))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_PAGE: {
		struct hvt_m_page *pg = &m->u.page;

		pg->cpu = ld32(p + 0);
		pg->flags = ld32(p + 4);
		pg->seq = ld32(p + 8);
		pg->entries = ld32(p + 12);
		pg->lost_events = ld64(p + 16);
		pg->dropped_pages = ld64(p + 24);
		pg->dropped_events = ld64(p + 32);
		pg->first_ts = ld64(p + 40);
		pg->len = ld32(p + 48);
		if (!zero(p + 52, 4))
			BAD("reserved field not zero");
		VAR_EXACT(pg->len);
		pg->data = p + fixed;
		break;
	}
	case HVT_L_TO_HOST:
		m->u.to_host.ts.count = ld32(p);
		if (!zero(p + 4, 4))
			BAD("reserved field not zero");
		if (m->u.to_host.ts.count > HVT_PROTO_MAX_TS)
			BAD("TO_HOST count out of range");
		VAR_EXACT((uint64_t)m->u.to_host.ts.count * 8);
		m->u.to_host.ts.ptr = p + fixed;
		break;
	case HVT_L_TO_HOST_REPLY:
		m->u.to_host_reply.status = (int32_t)ld32(p + 0);
		m->u.to_host_reply.ns.count = ld32(p + 4);
		m->u.to_host_reply.err_ns = ld64(p + 8);
		if (m->u.to_host_reply.ns.count > HVT_PROTO_MAX_TS)
			BAD("TO_HOST reply count out of range");
		VAR_EXACT((uint64_t)m->u.to_host_reply.ns.count * 8);
		m->u.to_host_reply.ns.ptr = p + fixed;
		break;
	case HVT_L_TRIGGER_RUN:
		m->u.trigger_run.count = ld32(p);
		if (!zero(p + 4, 4))
			BAD("reserved field not zero");
		VAR_EXACT(0);
		break;
	case HVT_L_TRIGGER_RUN_REPLY:
		m->u.trigger_run_reply.status = (int32_t)ld32(p + 0);
		m->u.trigger_run_reply.recs.count = ld32(p + 4);
		if (m->u.trigger_run_reply.recs.count > HVT_PROTO_MAX_TRIGGERS)
			BAD("TRIGGER_RUN reply count out of range");
		VAR_EXACT((uint64_t)m->u.trigger_run_reply.recs.count *
			  HVT_TRIGGER_REC_SIZE);
		m->u.trigger_run_reply.recs.ptr = p + fixed;
		if (!arr_records_ok(m, l))
			BAD("TRIGGER_RUN record out of range");
		break;
	}
	return msg_check(m, l, why);
}

#undef BAD
#undef VAR_EXACT

/* --- stream reassembly ---------------------------------------------------- */

int hvt_proto_dec_init(struct hvt_proto_dec *d, void *buf, uint32_t cap,
		       uint32_t max_frame)
{
	if (!d || !buf || max_frame < HVT_PROTO_HDR_SIZE ||
	    max_frame > HVT_PROTO_MAX_FRAME || cap < max_frame)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	d->buf = buf;
	d->cap = cap;
	d->max_frame = max_frame;
	return 0;
}

void hvt_proto_dec_reset(struct hvt_proto_dec *d)
{
	d->head = d->tail = d->consume = d->in_garbage = 0;
	d->discard = 0;
}

/* Drop the frame returned last and move buffered bytes to the front. */
static void dec_compact(struct hvt_proto_dec *d)
{
	d->head += d->consume;
	d->consume = 0;
	if (d->head == d->tail) {
		d->head = d->tail = 0;
	} else if (d->head) {
		memmove(d->buf, d->buf + d->head, d->tail - d->head);
		d->tail -= d->head;
		d->head = 0;
	}
}

uint32_t hvt_proto_dec_room(struct hvt_proto_dec *d, uint8_t **where)
{
	dec_compact(d);
	*where = d->buf + d->tail;
	return d->cap - d->tail;
}

void hvt_proto_dec_added(struct hvt_proto_dec *d, uint32_t n)
{
	if (n > d->cap - d->tail)
		n = d->cap - d->tail;
	d->tail += n;
}

uint32_t hvt_proto_dec_feed(struct hvt_proto_dec *d, const void *data,
			    uint32_t len)
{
	uint8_t *w;
	uint32_t room = hvt_proto_dec_room(d, &w);

	if (len > room)
		len = room;
	if (len)
		memcpy(w, data, len);
	d->tail += len;
	return len;
}

/* How many leading bytes of @p[0..n) match the start of the magic. */
static uint32_t magic_prefix(const uint8_t *p, uint32_t n)
{
	static const uint8_t mg[4] = { 'H', 'V', 'T', 'P' };
	uint32_t i;

	for (i = 0; i < n && i < 4; i++)
		if (p[i] != mg[i])
			return 0;
	return i;
}

/*
 * Skip @n bytes that are not a frame.  Returns -EBADMSG for the first
 * skip of a run, 0 within a run (one error per run of garbage).
 */
static int dec_skip(struct hvt_proto_dec *d, uint32_t n)
{
	d->head += n;
	d->skipped += n;
	if (d->in_garbage)
		return 0;
	d->in_garbage = 1;
	d->errors++;
	return -EBADMSG;
}

/* Skip a whole frame whose header was valid; one error. */
static int dec_skip_frame(struct hvt_proto_dec *d, uint32_t len, int err)
{
	d->discard = len;
	d->in_garbage = 0;
	d->errors++;
	return err;
}

int hvt_proto_dec_next(struct hvt_proto_dec *d, struct hvt_frame *f)
{
	uint32_t iter;

	d->head += d->consume;
	d->consume = 0;
	/*
	 * Each iteration consumes at least one byte or returns, and the
	 * buffer holds at most cap bytes, so this is bounded.
	 */
	for (iter = 0; iter <= d->cap + 1; iter++) {
		uint32_t avail = d->tail - d->head, len, i;
		const uint8_t *h = d->buf + d->head;
		int ret;

		if (d->discard) {
			uint64_t n = d->discard < avail ? d->discard : avail;

			d->head += (uint32_t)n;
			d->skipped += n;
			d->discard -= n;
			if (d->discard)
				break;
			continue;
		}
		if (!avail)
			break;
		if (avail < 4 || ld32(h) != HVT_PROTO_MAGIC) {
			/* Not at a frame: find the next magic. */
			if (magic_prefix(h, avail) == avail && avail < 4)
				break;	/* maybe a magic split across reads */
			for (i = 1; i < avail; i++)
				if (magic_prefix(h + i, avail - i) ==
				    (avail - i < 4 ? avail - i : 4))
					break;
			ret = dec_skip(d, i);
			if (ret)
				return ret;
			continue;
		}
		if (avail < HVT_PROTO_HDR_SIZE)
			break;
		if (ld32(h + 28) != hvt_proto_hsum(h)) {
			ret = dec_skip(d, 1);
			if (ret)
				return ret;
			continue;
		}
		len = ld32(h + 4);
		if (len < HVT_PROTO_HDR_SIZE) {
			d->head += HVT_PROTO_HDR_SIZE;
			d->skipped += HVT_PROTO_HDR_SIZE;
			d->in_garbage = 0;
			d->errors++;
			return -EMSGSIZE;
		}
		if (len > d->max_frame)
			return dec_skip_frame(d, len, -EMSGSIZE);
		if (h[10] != HVT_PROTO_VERSION)
			return dec_skip_frame(d, len, -EPROTONOSUPPORT);
		if ((h[11] & ~HVT_PF_ALL) || ld32(h + 20))
			return dec_skip_frame(d, len, -EBADMSG);
		if (avail < len)
			break;
		if (ld32(h + 24) != hvt_proto_sum(h + HVT_PROTO_HDR_SIZE,
						  len - HVT_PROTO_HDR_SIZE)) {
			/* Perhaps a frame cut short and followed by a new
			 * one: resynchronise from inside it. */
			ret = dec_skip(d, 1);
			if (ret)
				return ret;
			continue;
		}
		f->type = ld16(h + 8);
		f->version = h[10];
		f->flags = h[11];
		f->req = ld32(h + 12);
		f->chan = ld32(h + 16);
		f->payload = h + HVT_PROTO_HDR_SIZE;
		f->len = len - HVT_PROTO_HDR_SIZE;
		d->consume = len;
		d->in_garbage = 0;
		d->frames++;
		return 1;
	}
	/* Need more bytes: make room for a whole frame. */
	dec_compact(d);
	return 0;
}
