/* SPDX-License-Identifier: MIT */
/*
 * Private to the protocol codec (proto.c, proto_layouts.c, proto_frame.c):
 * little-endian access to frame bytes, the few byte loops the codec needs,
 * and the field descriptors the layouts are tables of.
 *
 * The codec is freestanding (link-checked with the ring, see
 * shared/Build.mk): no libc symbol.  Hosted builds copy with the
 * compiler's memcpy (a page per PAGE frame); the freestanding build uses
 * byte loops, which -fno-tree-loop-distribute-patterns keeps from being
 * turned back into library calls.
 */
#ifndef HVT_SHARED_PROTO_LOCAL_H
#define HVT_SHARED_PROTO_LOCAL_H

#include <stdint.h>

#include <hvtrace/proto.h>

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

/* Copy @n bytes; with @dst below @src the ranges may overlap. */
static inline void pr_copy(void *dst, const void *src, uint32_t n)
{
#if __STDC_HOSTED__
	__builtin_memmove(dst, src, n);
#else
	uint8_t *d = dst;
	const uint8_t *s = src;

	while (n--)
		*d++ = *s++;
#endif
}

static inline void pr_zero(void *dst, uint32_t n)
{
	uint8_t *d = dst;

	while (n--)
		*d++ = 0;
}

/* Whether @n bytes at @p are all zero. */
static inline int pr_is_zero(const uint8_t *p, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* --- field descriptors ------------------------------------------------- */

/*
 * One field of a layout.  Integers (PK_INT) sit in the fixed part; a
 * variable field (PK_VAR: a string, an array of records, page bytes) has
 * its length or count in the fixed part and its bytes after it, in table
 * order.  Member offsets are from the start of the structure the table
 * describes (struct hvt_msg, or a record).
 */
enum pf_kind {
	PK_INT,		/* integer; @n consecutive ones (STATS) */
	PK_BYTES,	/* @wire raw bytes (a record's name) */
	PK_VAR,		/* length/count here, then @unit bytes per item */
};

enum pf_rule {
	PR_NONE,
	PR_RANGE,	/* lo <= value <= hi (signed members compare signed) */
	PR_MASK,	/* no bit outside hi */
	PR_STATUS,	/* 0 or -1 .. -HVT_PROTO_MAX_STATUS */
	/* PK_VAR strings: length lo..hi, and the contents: */
	PR_TEXT,	/* no NUL */
	PR_LINE,	/* no control character */
	PR_DEF,		/* no control character but tab */
	PR_NAME,	/* hvt_proto_name_ok(); lo 0: may be empty */
};

struct pf {
	uint8_t kind;		/* enum pf_kind */
	uint8_t rule;		/* enum pf_rule */
	uint8_t off;		/* offset in the fixed part */
	uint8_t wire;		/* bytes of the value, length or count */
	uint16_t mem;		/* member: the integer, length or count */
	uint8_t msize;		/* bytes of that member */
	uint8_t sgn;		/* the member is signed */
	uint8_t n;		/* PK_INT: values in a row */
	uint16_t mptr;		/* PK_VAR: the pointer member */
	uint16_t unit;		/* PK_VAR: bytes per item */
	int64_t lo, hi;		/* bounds, see enum pf_rule */
	const char *why;	/* what a value breaking the rule is */
	/* PK_VAR arrays: NULL, or what is wrong with a record */
	const char *(*rec_bad)(const uint8_t *rec);
};

struct pl {
	uint16_t fixed;		/* bytes of the fixed part */
	uint8_t nf;
	const struct pf *f;
	/* Rules across fields, after the table's; NULL when none. */
	int (*extra)(const struct hvt_msg *m, const char **why);
};

/* The layouts, indexed by enum hvt_layout (proto_layouts.c). */
extern const struct pl hvt_proto_layouts[HVT_L_COUNT]
	__attribute__((visibility("hidden")));

/* --- values in members and on the wire ------------------------------------ */

static inline uint64_t mem_get(const void *base, uint32_t off, uint32_t size)
{
	const uint8_t *p = (const uint8_t *)base + off;

	switch (size) {
	case 1:
		return *p;
	case 2:
		return *(const uint16_t *)p;
	case 4:
		return *(const uint32_t *)p;
	default:
		return *(const uint64_t *)p;
	}
}

static inline void mem_put(void *base, uint32_t off, uint32_t size, uint64_t v)
{
	uint8_t *p = (uint8_t *)base + off;

	switch (size) {
	case 1:
		*p = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)p = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)p = (uint32_t)v;
		break;
	default:
		*(uint64_t *)p = v;
		break;
	}
}

static inline uint64_t wire_get(const uint8_t *p, uint32_t w)
{
	return w == 1 ? p[0] : w == 2 ? ld16(p) : w == 4 ? ld32(p) : ld64(p);
}

static inline void wire_put(uint8_t *p, uint32_t w, uint64_t v)
{
	if (w == 1)
		p[0] = (uint8_t)v;
	else if (w == 2)
		st16(p, (uint16_t)v);
	else if (w == 4)
		st32(p, (uint32_t)v);
	else
		st64(p, v);
}

/* An integer member as its type says: signed ones sign-extended. */

/* A string of @len bytes at @s (not NULL when @len) under @rule. */
static inline int str_ok(uint32_t rule, int64_t lo, int64_t hi, const char *s,
		  uint32_t len)
{
	uint32_t i;

	if (rule == PR_NAME)
		return (!len && !lo) || hvt_proto_name_ok(s, len);
	if (len < lo || len > hi)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!c)
			return 0;
		if (rule == PR_LINE && (c < 0x20 || c == 0x7f))
			return 0;
		if (rule == PR_DEF && ((c < 0x20 && c != '\t') || c == 0x7f))
			return 0;
	}
	return 1;
}

#endif /* HVT_SHARED_PROTO_LOCAL_H */
