// SPDX-License-Identifier: MIT
/*
 * user_events: the kernel's jhash() (Bob Jenkins' lookup3,
 * include/linux/jhash.h), with which the registry hashes event names: the
 * bucket order fixes the order of user_events_status, as in the kernel.
 */
#include <stdint.h>
#include <string.h>

#include "userevents-local.h"

static inline uint32_t ue_rol32(uint32_t w, unsigned int s)
{
	return (w << s) | (w >> (32 - s));
}

#define UE_JHASH_MIX(a, b, c)						\
	do {								\
		a -= c; a ^= ue_rol32(c, 4); c += b;			\
		b -= a; b ^= ue_rol32(a, 6); a += c;			\
		c -= b; c ^= ue_rol32(b, 8); b += a;			\
		a -= c; a ^= ue_rol32(c, 16); c += b;			\
		b -= a; b ^= ue_rol32(a, 19); a += c;			\
		c -= b; c ^= ue_rol32(b, 4); b += a;			\
	} while (0)

#define UE_JHASH_FINAL(a, b, c)						\
	do {								\
		c ^= b; c -= ue_rol32(b, 14);				\
		a ^= c; a -= ue_rol32(c, 11);				\
		b ^= a; b -= ue_rol32(a, 25);				\
		c ^= b; c -= ue_rol32(b, 16);				\
		a ^= c; a -= ue_rol32(c, 4);				\
		b ^= a; b -= ue_rol32(a, 14);				\
		c ^= b; c -= ue_rol32(b, 24);				\
	} while (0)

static uint32_t ue_le32(const uint8_t *k)
{
	return (uint32_t)k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 |
	       (uint32_t)k[3] << 24;
}

uint32_t ue_jhash(const void *key, uint32_t length, uint32_t initval)
{
	const uint8_t *k = key;
	uint32_t a, b, c;

	a = b = c = 0xdeadbeef + length + initval;
	while (length > 12) {
		a += ue_le32(k);
		b += ue_le32(k + 4);
		c += ue_le32(k + 8);
		UE_JHASH_MIX(a, b, c);
		length -= 12;
		k += 12;
	}
	switch (length) {
	case 12: c += (uint32_t)k[11] << 24; /* fall through */
	case 11: c += (uint32_t)k[10] << 16; /* fall through */
	case 10: c += (uint32_t)k[9] << 8; /* fall through */
	case 9: c += k[8]; /* fall through */
	case 8: b += (uint32_t)k[7] << 24; /* fall through */
	case 7: b += (uint32_t)k[6] << 16; /* fall through */
	case 6: b += (uint32_t)k[5] << 8; /* fall through */
	case 5: b += k[4]; /* fall through */
	case 4: a += (uint32_t)k[3] << 24; /* fall through */
	case 3: a += (uint32_t)k[2] << 16; /* fall through */
	case 2: a += (uint32_t)k[1] << 8; /* fall through */
	case 1:
		a += k[0];
		UE_JHASH_FINAL(a, b, c);
		break;
	case 0:
		break;
	}
	return c;
}
