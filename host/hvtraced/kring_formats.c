// SPDX-License-Identifier: MIT
/*
 * hvtraced: the formats of a kring remote, a format set (an HVT_KFSET in
 * a sealed memfd, <hvtrace/proto.h>) made by common/kfset.c's folder
 * reader: the client's, which reads its formats folder with its own
 * rights, so the daemon never opens a path a user named (a FIFO there
 * would block its loop, a link would read another user's file), or the
 * daemon's own for root's bare "vmpid:PID,formats=DIR".  One parser for
 * both.
 *
 * Everything in the set is hostile: every length is bounded by what is
 * left of the buffer and by the KF_* limits, a name is "SYSTEM/EVENT" of
 * printable characters without a leading dot, a text is 1 byte to
 * HVT_KFSET_TEXT_MAX.  The result is one allocation per record
 * (kring_formats_free()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

static bool kfs_part_ok(const char *p, size_t n)
{
	size_t i;

	if (!n || p[0] == '.')
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f ||
		    p[i] == '/')
			return false;
	return true;
}

/* "SYSTEM/EVENT": two parts, each kfs_part_ok(). */
static bool kfs_name_ok(const char *p, size_t n)
{
	const char *sl = memchr(p, '/', n);

	return n && n <= HVT_PROTO_EVNAME_MAX && sl &&
	       kfs_part_ok(p, (size_t)(sl - p)) &&
	       kfs_part_ok(sl + 1, n - (size_t)(sl - p) - 1);
}

static uint32_t kfs_le(const uint8_t *p, unsigned int n)
{
	uint32_t v = 0;

	while (n--)
		v = (v << 8) | p[n];
	return v;
}

void kring_formats_free(struct hvt_m_format *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free((void *)v[i].name.ptr);
	free(v);
}

int kring_formats_parse(const uint8_t *b, size_t len,
			struct hvt_m_format **out, size_t *nr, char *msg,
			size_t msgsize)
{
	struct hvt_m_format *v = NULL;
	size_t n = 0, cap = 0, off, bytes = 0;
	int ret = -EINVAL;

	*out = NULL;
	*nr = 0;
	if (len < HVT_KFSET_MAGIC_LEN ||
	    memcmp(b, HVT_KFSET_MAGIC, HVT_KFSET_MAGIC_LEN)) {
		snprintf(msg, msgsize, "the formats sent are not a format set "
				       "(no magic): client and daemon differ; "
				       "update hvtrace");
		return -EPROTO;
	}
	for (off = HVT_KFSET_MAGIC_LEN; off < len;) {
		uint32_t nl, tl;
		char *p;

		if (len - off < HVT_KFSET_REC_HDR) {
			snprintf(msg, msgsize, "format set: a record cut at "
					       "byte %zu", off);
			goto fail;
		}
		nl = kfs_le(b + off, 2);
		tl = kfs_le(b + off + 2, 4);
		off += HVT_KFSET_REC_HDR;
		if (nl > len - off || tl > len - off - nl) {
			snprintf(msg, msgsize, "format set: record %zu is "
					       "longer than the set", n);
			goto fail;
		}
		if (!kfs_name_ok((const char *)b + off, nl)) {
			snprintf(msg, msgsize, "format set: record %zu is not "
					       "named SYSTEM/EVENT", n);
			goto fail;
		}
		if (!tl || tl > HVT_KFSET_TEXT_MAX) {
			snprintf(msg, msgsize, "format set: the format of "
					       "record %zu is empty or larger "
					       "than %u bytes", n,
				 HVT_KFSET_TEXT_MAX);
			goto fail;
		}
		if (n >= KF_MAX_FILES || bytes + tl > KF_MAX_BYTES) {
			snprintf(msg, msgsize, "more formats than the daemon "
					       "takes (16384 files, 16 MiB)");
			ret = -E2BIG;
			goto fail;
		}
		if (n == cap) {
			size_t c = cap ? 2 * cap : 256;
			struct hvt_m_format *nv = realloc(v, c * sizeof(*nv));

			if (!nv)
				goto nomem;
			v = nv;
			cap = c;
		}
		p = malloc((size_t)nl + 1 + tl);
		if (!p)
			goto nomem;
		memcpy(p, b + off, nl);
		p[nl] = '\0';
		memcpy(p + nl + 1, b + off + nl, tl);
		memset(&v[n], 0, sizeof(v[n]));
		v[n].name.ptr = p;
		v[n].name.len = nl;
		v[n].text.ptr = p + nl + 1;
		v[n].text.len = tl;
		n++;
		bytes += tl;
		off += (size_t)nl + tl;
	}
	if (!n) {
		snprintf(msg, msgsize, "the format set sent holds no format");
		ret = -ENOENT;
		goto fail;
	}
	*out = v;
	*nr = n;
	return 0;
nomem:
	snprintf(msg, msgsize, "out of memory");
	ret = -ENOMEM;
fail:
	kring_formats_free(v, n);
	return ret;
}
