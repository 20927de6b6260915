/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the host/userevents/ sources (not used elsewhere).
 */
#ifndef HVT_UE_INTERNAL_H
#define HVT_UE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "userevents.h"

/* The kernel's isspace(): the C locale's six plus 0xa0 (Latin-1 NBSP). */
static inline int ue_isspace(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0;
}

static inline const char *ue_skip_spaces(const char *s)
{
	while (ue_isspace((unsigned char)*s))
		s++;
	return s;
}

/* Set @err (if any) to @code and the formatted message; returns @code. */
int ue_err(struct hvt_ue_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copy @s (at most @n bytes) into @dst as a quoted-safe excerpt: control
 * characters become \t, \n or \xNN and long text ends in "...". */
void ue_excerpt(char *dst, size_t dstlen, const char *s, size_t n);

/* A growing string; on allocation failure 'failed' is set and further
 * appends do nothing. */
struct ue_buf {
	char *p;
	size_t len;
	size_t cap;
	int failed;
};

void ue_buf_printf(struct ue_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ue_buf_put(struct ue_buf *b, const char *s, size_t n);
/* The finished string (caller frees), or NULL if any append failed. */
char *ue_buf_finish(struct ue_buf *b);

/*
 * Split @s at runs of the kernel's white space, as argv_split() does.
 * Returns a malloc'd NULL-terminated vector whose strings live in the
 * same allocation (free the vector only), or NULL when out of memory.
 */
char **ue_argv_split(const char *s, int *argc);

/* The dynamic_events line "u:NAME type name; ..." into @b. */
void ue_dyn_line_into(struct ue_buf *b, const struct hvt_ue_def *def);

/* Bob Jenkins' lookup3 as the kernel's jhash(): the user_events table
 * hashes event names with it, which fixes the user_events_status order. */
uint32_t ue_jhash(const void *key, uint32_t length, uint32_t initval);

#endif /* HVT_UE_INTERNAL_H */
