/* SPDX-License-Identifier: MIT */
/*
 * Files of the source tree for unit tests that read committed data (the
 * fuzz corpus's real captures): where the tree is, and a whole file of it.
 * Include after hvt_test.h.
 */
#ifndef HVT_SRC_H
#define HVT_SRC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The source tree: $HVT_SRCTREE, else the one this header sits in. */
static inline const char *t_srctree(void)
{
	static char dir[4096];
	const char *env = getenv("HVT_SRCTREE");
	char *p;

	if (dir[0])
		return dir;
	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s", env);
		return dir;
	}
	snprintf(dir, sizeof(dir), "%s", __FILE__);
	p = strstr(dir, "/tests/include/");
	if (!p)
		t_fail("set HVT_SRCTREE to the source tree");
	*p = '\0';
	return dir;
}

/* The whole file @rel of the source tree, NUL-ended; its size in @len. */
static inline char *t_src_slurp(const char *rel, size_t *len)
{
	size_t cap = 1 << 16, n = 0, r;
	char *buf = malloc(cap + 1), *nb;
	char p[4200];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", t_srctree(), rel);
	f = fopen(p, "rb");
	if (!f)
		t_fail("cannot open %s", p);
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(f);
	t_assert(buf);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/*
 * One event's format text in a capture of format files @blob (@len
 * bytes): from "name: @name" to the end of its print fmt line; its
 * length in @flen.
 */
static inline const char *t_format_in(const char *blob, size_t len,
				      const char *name, size_t *flen)
{
	const char *s, *pf, *e;
	char key[64];

	snprintf(key, sizeof(key), "name: %s\n", name);
	s = memmem(blob, len, key, strlen(key));
	t_assert(s);
	pf = memmem(s, len - (size_t)(s - blob), "print fmt:", 10);
	t_assert(pf);
	e = memchr(pf, '\n', len - (size_t)(pf - blob));
	t_assert(e);
	*flen = (size_t)(e + 1 - s);
	return s;
}

#endif /* HVT_SRC_H */
