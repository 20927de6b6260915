/* SPDX-License-Identifier: MIT */
/*
 * Private to the writer core (ring_buffer.c) and the area container
 * (trace_area.c): the byte loops and checks both need.  Freestanding.
 */
#ifndef HVT_SHARED_RING_LOCAL_H
#define HVT_SHARED_RING_LOCAL_H

#include <stdint.h>

/*
 * Copy for plan ops.  Hosted builds use the C library; the freestanding
 * build (hypervisor, link-checked by scripts/check-freestanding.sh) uses
 * aligned word loops so that no memcpy() symbol is needed and no unaligned
 * access is made (EL2 may run with strict alignment).
 */
static inline void rb_copy(void *dst, const void *src, uint32_t len)
{
#if __STDC_HOSTED__
	/* Most ops are a word or two (time stamp cache, event header,
	 * common fields): copy those inline rather than call memcpy(). */
	switch (len) {
	case 4:
		__builtin_memcpy(dst, src, 4);
		return;
	case 8:
		__builtin_memcpy(dst, src, 8);
		return;
	case 16:
		__builtin_memcpy(dst, src, 16);
		return;
	}
	__builtin_memcpy(dst, src, len);
#else
	uint8_t *d = dst;
	const uint8_t *s = src;
	uintptr_t mis = (uintptr_t)d | (uintptr_t)s;

	if ((mis & 7) == 0) {
		for (; len >= 8; d += 8, s += 8, len -= 8)
			*(uint64_t *)d = *(const uint64_t *)s;
	}
	if ((mis & 3) == 0) {
		for (; len >= 4; d += 4, s += 4, len -= 4)
			*(uint32_t *)d = *(const uint32_t *)s;
	}
	for (; len; len--)
		*d++ = *s++;
#endif
}

static inline void rb_zero(void *dst, uint64_t len)
{
	uint8_t *d = dst;

	for (; len && ((uintptr_t)d & 7); len--)
		*d++ = 0;
	for (; len >= 8; d += 8, len -= 8)
		*(uint64_t *)d = 0;
	for (; len; len--)
		*d++ = 0;
}

static inline int rb_is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

#endif /* HVT_SHARED_RING_LOCAL_H */
