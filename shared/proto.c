// SPDX-License-Identifier: MIT
/*
 * hvtrace proxy protocol: the messages.  Every payload layout is one table
 * of field descriptors (struct pf: where the field is on the wire, which
 * member of struct hvt_msg holds it, and the bounds its value must keep;
 * the tables are in proto_layouts.c), and four walkers over that table,
 * here, do all the work: the check (msg_check()), the size
 * (hvt_msg_encoded_size()), the encoder and the decoder.  A layout is
 * written once; docs/proxy.md draws every one of them and
 * tests/unit/proto_golden.c checks the tables against that drawing byte
 * for byte.  Frames, checksums and the stream decoder are proto_frame.c's.
 *
 * Nothing here allocates or does I/O, and nothing needs libc: the file is
 * built freestanding and link-checked with the ring (shared/Build.mk).
 * Every byte comes from a peer that may be hostile (a guest agent, a
 * guest application, a host the guest does not trust), so decoding
 * checks, before anything is used: the exact payload length against the
 * fixed part and the lengths and counts it declares (in 64 bits, so no
 * count can wrap it), reserved bytes (every byte of the fixed part no
 * field covers must be zero), every string length against its limit and
 * its contents (no NUL; names from a small alphabet), every enum against
 * its range, every count against its limit, and every record of an array.
 * The encoder applies the same check, so a frame it produced always
 * decodes to the message it was given.
 */
#include <hvtrace/abi.h>
#include <hvtrace/errno.h>
#include <hvtrace/proto.h>

#include "proto-local.h"

/* --- values of fields ---------------------------------------------------- */

static int64_t mem_value(const struct pf *f, const void *base)
{
	uint64_t v = mem_get(base, f->mem, f->msize);
	uint32_t sh = 64 - 8 * f->msize;

	return f->sgn ? (int64_t)(v << sh) >> sh : (int64_t)v;
}

static const uint8_t *var_ptr(const struct pf *f, const void *base)
{
	const uint8_t *p;

	pr_copy(&p, (const uint8_t *)base + f->mptr, sizeof(p));
	return p;
}

static void var_set_ptr(const struct pf *f, void *base, const uint8_t *p)
{
	pr_copy((uint8_t *)base + f->mptr, &p, sizeof(p));
}

static uint32_t var_count(const struct pf *f, const void *base)
{
	return (uint32_t)mem_get(base, f->mem, 4);
}

/* Records: integers and raw bytes, no rules (rec_bad() has them). */

/* --- the rules ------------------------------------------------------------ */

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

static int int_ok(const struct pf *f, const void *base)
{
	int64_t v;

	if (f->rule == PR_NONE)
		return 1;
	v = mem_value(f, base);
	switch (f->rule) {
	case PR_RANGE:
		return v >= f->lo && v <= f->hi;
	case PR_MASK:
		return !((uint64_t)v & ~(uint64_t)f->hi);
	case PR_STATUS:
		return v <= 0 && v >= -HVT_PROTO_MAX_STATUS;
	default:
		return 0;
	}
}

static int var_ok(const struct pf *f, const void *base)
{
	uint32_t n = var_count(f, base);
	const uint8_t *p = var_ptr(f, base);

	if ((f->wire == 2 && n > 0xffff) || (n && !p))
		return 0;
	if (f->rule == PR_NONE)
		return 1;
	if (f->rule == PR_RANGE)
		return n >= f->lo && n <= f->hi;
	return str_ok(f->rule, f->lo, f->hi, (const char *)p, n);
}

/* The first bad record of a checked array, or NULL. */
static const char *var_records_bad(const struct pf *f, const void *base)
{
	const uint8_t *p = var_ptr(f, base);
	const char *w = NULL;
	uint32_t i, n = var_count(f, base);

	for (i = 0; f->rec_bad && i < n && !w; i++)
		w = f->rec_bad(p + (uint64_t)i * f->unit);
	return w;
}

/* --- the walkers ---------------------------------------------------------- */

/*
 * Validate a message against its layout's table, then its rules across
 * fields; the one rule set for both directions.  Returns 0 or -EBADMSG
 * with *why set.
 */
static int msg_check(const struct hvt_msg *m, enum hvt_layout l,
		     const char **why)
{
	const struct pl *L = &hvt_proto_layouts[l];
	const char *w = NULL;
	uint32_t i;

	if (l == HVT_L_NONE)
		w = "unknown message";
	for (i = 0; !w && i < L->nf; i++) {
		const struct pf *f = &L->f[i];

		if (!(f->kind == PK_VAR ? var_ok(f, m) : int_ok(f, m)))
			w = f->why;
	}
	if (!w && L->extra && !L->extra(m, &w) && !w)
		w = "message out of range";
	if (w) {
		if (why)
			*why = w;
		return -HVT_EBADMSG;
	}
	return 0;
}

/* Bytes of the variable part: the sum of its fields' lengths. */
static uint64_t msg_var_size(const struct hvt_msg *m, const struct pl *L)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < L->nf; i++)
		if (L->f[i].kind == PK_VAR)
			n += (uint64_t)var_count(&L->f[i], m) * L->f[i].unit;
	return n;
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
	uint64_t n;

	if (!m)
		return -HVT_EINVAL;
	l = msg_layout_of(m);
	if (l == HVT_L_NONE || msg_check(m, l, NULL))
		return -HVT_EINVAL;
	n = HVT_PROTO_HDR_SIZE + hvt_proto_layouts[l].fixed +
	    msg_var_size(m, &hvt_proto_layouts[l]);
	if (n > HVT_PROTO_MAX_FRAME)
		return -HVT_EMSGSIZE;
	return (int)n;
}

/*
 * Build the frame of @m into @buf; with @tail, all but the bytes of its
 * last variable field, which are left where they are (*@tail) and summed
 * in place.  The frame's length, or -errno.
 */
static int msg_encode(void *buf, uint32_t cap, const struct hvt_msg *m,
		      const void **tail, uint32_t *tail_len)
{
	struct hvt_proto_sum_state sum;
	const struct pl *L;
	uint8_t *b = buf, *p, *q;
	const void *t = NULL;
	uint32_t i, k, tlen = 0;
	int n;

	n = hvt_msg_encoded_size(m);
	if (n < 0)
		return n;
	L = &hvt_proto_layouts[msg_layout_of(m)];
	if (tail) {
		const struct pf *f = L->nf ? &L->f[L->nf - 1] : NULL;

		/* The last field is where the frame ends; the sum goes on
		 * over it only from a word boundary. */
		if (!f || f->kind != PK_VAR)
			return -HVT_EINVAL;
		tlen = var_count(f, m) * f->unit;
		t = var_ptr(f, m);
		if ((n - HVT_PROTO_HDR_SIZE - tlen) % 8)
			return -HVT_EINVAL;
	}
	if (!buf || (uint32_t)n - tlen > cap)
		return -HVT_EMSGSIZE;
	/* Array payloads are copied verbatim (they are already in wire
	 * order), but every record is validated first. */
	for (i = 0; i < L->nf; i++)
		if (L->f[i].kind == PK_VAR && var_records_bad(&L->f[i], m))
			return -HVT_EINVAL;

	pr_zero(b, HVT_PROTO_HDR_SIZE + L->fixed);
	p = b + HVT_PROTO_HDR_SIZE;
	q = p + L->fixed;
	for (i = 0; i < L->nf; i++) {
		const struct pf *f = &L->f[i];
		uint32_t c, len;

		if (f->kind == PK_INT) {
			for (k = 0; k < f->n; k++)
				wire_put(p + f->off + k * f->wire, f->wire,
					 mem_get(m, f->mem + k * f->msize,
						 f->msize));
			continue;
		}
		c = var_count(f, m);
		wire_put(p + f->off, f->wire, c);
		len = c * f->unit;	/* within the frame: checked above */
		if (tail && i == L->nf - 1)
			break; /* the tail stays where it is */
		if (len)
			pr_copy(q, var_ptr(f, m), len);
		q += len;
	}

	st32(b + 0, HVT_PROTO_MAGIC);
	st32(b + 4, (uint32_t)n);
	st16(b + 8, m->type);
	b[10] = HVT_PROTO_VERSION;
	b[11] = m->flags;
	st32(b + 12, m->req);
	st32(b + 16, m->chan);
	hvt_proto_sum_init(&sum, (uint32_t)n - HVT_PROTO_HDR_SIZE);
	hvt_proto_sum_add(&sum, b + HVT_PROTO_HDR_SIZE,
			  (uint32_t)n - HVT_PROTO_HDR_SIZE - tlen);
	if (tlen)
		hvt_proto_sum_add(&sum, t, tlen);
	st32(b + 24, hvt_proto_sum_end(&sum));
	st32(b + 28, hvt_proto_hsum(b));
	if (tail) {
		*tail = t;
		*tail_len = tlen;
	}
	return n;
}

int hvt_msg_encode(void *buf, uint32_t cap, const struct hvt_msg *m)
{
	return msg_encode(buf, cap, m, NULL, NULL);
}

int hvt_msg_encode_head(void *buf, uint32_t cap, const struct hvt_msg *m,
			const void **tail, uint32_t *tail_len)
{
	int n;

	if (!tail || !tail_len)
		return -HVT_EINVAL;
	n = msg_encode(buf, cap, m, tail, tail_len);
	return n < 0 ? n : n - (int)*tail_len;
}

#define BAD(msg)                                                               \
	do {                                                                   \
		if (why)                                                       \
			*why = (msg);                                          \
		return -HVT_EBADMSG;                                           \
	} while (0)

int hvt_msg_decode(const struct hvt_frame *f, struct hvt_msg *m,
		   const char **why)
{
	const struct pl *L;
	const uint8_t *p, *q;
	const char *bad;
	enum hvt_layout l;
	uint32_t i, k, next = 0;
	uint64_t need = 0;

	if (why)
		*why = NULL;
	if (!f || !m || (f->len && !f->payload))
		BAD("no frame");
	pr_zero(m, sizeof(*m));
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
		return -HVT_EOPNOTSUPP;
	}
	L = &hvt_proto_layouts[l];
	if (f->len < L->fixed)
		BAD("payload shorter than its fixed part");
	p = f->payload;

	/* The fixed part: fields in offset order, zero in between. */
	for (i = 0; i < L->nf; i++) {
		const struct pf *d = &L->f[i];

		if (!pr_is_zero(p + next, d->off - next))
			BAD("reserved field not zero");
		if (d->kind == PK_INT) {
			for (k = 0; k < d->n; k++)
				mem_put(m, d->mem + k * d->msize, d->msize,
					wire_get(p + d->off + k * d->wire,
						 d->wire));
			next = d->off + d->n * d->wire;
			continue;
		}
		mem_put(m, d->mem, 4, wire_get(p + d->off, d->wire));
		if (d->unit > 1 && var_count(d, m) > d->hi)
			BAD(d->why);
		need += (uint64_t)var_count(d, m) * d->unit;
		next = d->off + d->wire;
	}
	if (!pr_is_zero(p + next, L->fixed - next))
		BAD("reserved field not zero");
	/* The variable part: exactly the bytes the fixed part declares. */
	if (need != f->len - L->fixed)
		BAD("payload length does not match its fields");
	q = p + L->fixed;
	for (i = 0; i < L->nf; i++) {
		const struct pf *d = &L->f[i];

		if (d->kind != PK_VAR)
			continue;
		var_set_ptr(d, m, q);
		bad = var_records_bad(d, m);
		if (bad)
			BAD(bad);
		q += var_count(d, m) * d->unit;
	}
	return msg_check(m, l, why);
}

#undef BAD
