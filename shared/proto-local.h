/* SPDX-License-Identifier: MIT */
/*
 * Private to the protocol codec (proto.c, proto_frame.c): little-endian
 * access to frame bytes and the few byte loops the codec needs.
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

#endif /* HVT_SHARED_PROTO_LOCAL_H */
