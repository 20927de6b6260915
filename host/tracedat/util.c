// SPDX-License-Identifier: MIT
/*
 * libhvtrace trace.dat component: growable buffers and whole-file reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracedat-local.h"

static int blob_reserve(struct hvt_tdat_blob *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX - b->len - 1)
		return -ENOMEM;
	need = b->len + extra + 1; /* always room for a NUL */
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int hvt_tdat_blob_add(struct hvt_tdat_blob *b, const void *p, size_t len)
{
	int ret = blob_reserve(b, len);

	if (ret)
		return ret;
	if (len)
		memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int hvt_tdat_blob_printf(struct hvt_tdat_blob *b, const char *fmt, ...)
{
	va_list ap;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	ret = blob_reserve(b, (size_t)n);
	if (ret)
		return ret;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void hvt_tdat_blob_free(struct hvt_tdat_blob *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int hvt_tdat_read_file(const char *path, struct hvt_tdat_blob *b, size_t max)
{
	char buf[65536];
	ssize_t n;
	int fd, ret = 0;

	b->len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* proc and tracefs files report no size: read until EOF. */
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		if (b->len + (size_t)n > max) {
			ret = -EFBIG;
			break;
		}
		ret = hvt_tdat_blob_add(b, buf, (size_t)n);
		if (ret)
			break;
	}
	close(fd);
	if (!ret && !b->data)
		ret = hvt_tdat_blob_add(b, "", 0);
	return ret;
}
