/* SPDX-License-Identifier: MIT */
/*
 * Minimal test helpers.  A test is a program: exit 0 = pass, 1 = fail,
 * 77 = skipped (only when the environment lacks what the test needs).
 * Every check prints what was expected and what was seen.
 */
#ifndef HVT_TEST_H
#define HVT_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

#define t_fail(fmt, ...)                                                      \
	do {                                                                  \
		fprintf(stderr, "FAIL %s:%d: " fmt "\n", __FILE__, __LINE__,  \
			##__VA_ARGS__);                                       \
		exit(T_EXIT_FAIL);                                            \
	} while (0)

#define t_skip(fmt, ...)                                                      \
	do {                                                                  \
		printf("SKIP: " fmt "\n", ##__VA_ARGS__);                     \
		exit(T_EXIT_SKIP);                                            \
	} while (0)

#define t_assert(cond)                                                        \
	do {                                                                  \
		if (!(cond))                                                  \
			t_fail("assertion failed: %s", #cond);                \
	} while (0)

#define t_eq(a, b)                                                            \
	do {                                                                  \
		long long _a = (long long)(a), _b = (long long)(b);           \
		if (_a != _b)                                                 \
			t_fail("%s == %s: got %lld, expected %lld", #a, #b,   \
			       _a, _b);                                       \
	} while (0)

#define t_equ(a, b)                                                           \
	do {                                                                  \
		unsigned long long _a = (unsigned long long)(a),              \
				   _b = (unsigned long long)(b);              \
		if (_a != _b)                                                 \
			t_fail("%s == %s: got %llu (0x%llx), expected %llu "  \
			       "(0x%llx)",                                    \
			       #a, #b, _a, _a, _b, _b);                       \
	} while (0)

#define t_ok(expr)                                                            \
	do {                                                                  \
		long long _r = (long long)(expr);                             \
		if (_r < 0)                                                   \
			t_fail("%s returned %lld (%s)", #expr, _r,            \
			       strerror((int)-_r));                           \
	} while (0)

#define t_memeq(a, b, n)                                                      \
	do {                                                                  \
		if (memcmp((a), (b), (n)))                                    \
			t_fail("memory differs: %s vs %s (%zu bytes)", #a,    \
			       #b, (size_t)(n));                              \
	} while (0)

#endif /* HVT_TEST_H */
