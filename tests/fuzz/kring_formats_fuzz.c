// SPDX-License-Identifier: MIT
/*
 * Fuzz hvtraced's intake of the formats folder of an attach by pid
 * (issue 22 point 2): "hvtrace daemon attach --vm-pid PID --formats DIR"
 * reads DIR itself and passes it to the root daemon as a format set in a
 * sealed memfd (HVT_KFSET, <hvtrace/proto.h>), which
 * kring_formats_parse() (host/hvtraced/kring_formats.c) takes apart.  The
 * input is the set's bytes, hostile from the first.
 *
 * Properties checked besides memory safety: a set is accepted only with
 * its magic and at least one record; every record accepted has a name
 * "SYSTEM/EVENT" (one slash, printable, no leading dot, at most
 * HVT_PROTO_EVNAME_MAX bytes, NUL-terminated) and a text of 1 byte to
 * HVT_KFSET_TEXT_MAX that lies inside the input as given; the texts stay
 * within KF_MAX_BYTES and the records within KF_MAX_FILES; a refusal
 * leaves nothing and says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/hvtraced/daemon.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvt_m_format *v = (void *)1;
	size_t n = 1, i, bytes = 0;
	char msg[256] = "";
	int ret;

	ret = kring_formats_parse(data, size, &v, &n, msg, sizeof(msg));
	if (ret) {
		check(ret < 0 && !v && !n && msg[0]);
		return 0;
	}
	check(size >= HVT_KFSET_MAGIC_LEN &&
	      !memcmp(data, HVT_KFSET_MAGIC, HVT_KFSET_MAGIC_LEN));
	check(n >= 1 && n <= KF_MAX_FILES && v);
	for (i = 0; i < n; i++) {
		const char *nm = v[i].name.ptr, *sl;
		size_t k;

		check(v[i].name.len >= 3 &&
		      v[i].name.len <= HVT_PROTO_EVNAME_MAX);
		check(nm[v[i].name.len] == '\0' &&
		      strlen(nm) == v[i].name.len);
		sl = strchr(nm, '/');
		check(sl && sl != nm && sl[1] && sl[1] != '.' &&
		      nm[0] != '.' && !strchr(sl + 1, '/'));
		for (k = 0; k < v[i].name.len; k++)
			check((unsigned char)nm[k] > 0x20 &&
			      (unsigned char)nm[k] < 0x7f);
		check(v[i].text.len >= 1 &&
		      v[i].text.len <= HVT_KFSET_TEXT_MAX);
		/* The text is a copy of bytes of the input. */
		check(memmem(data, size, v[i].text.ptr, v[i].text.len) !=
		      NULL);
		bytes += v[i].text.len;
	}
	check(bytes <= KF_MAX_BYTES);
	kring_formats_free(v, n);
	return 0;
}
