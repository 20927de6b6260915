// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the guest kernel's event ids in the tracefs-style view
 * (host/fuse/kmap.c).  The guest's format files and its pages are both
 * hostile; the view takes formats into a table (fz_kmap_add), serves each
 * event under an id none of the remote's own events has (fz_kmap_assign),
 * keeps only records whose type the table knows (fz_kmap_keep) and
 * rewrites their common_type when it serves them (fz_kmap_rewrite).
 *
 * Input: 1 byte F (formats: F % 4 + 1), then F times a 2-byte length and
 * that many bytes of format text (its system and name are fixed); 1 byte
 * U (U % 8 ids of the remote), U times 2 bytes; the rest is a page: 8
 * bytes of time_stamp, then the page data (the committed size is the
 * rest).
 *
 * Beyond the sanitizers: served ids are unique, below 0x8000 and none of
 * the remote's; a kept record names an event whose guest id is its type
 * and is at least the common header long; a rewritten record carries its
 * event's served id; the served format text parses back to that id.
 *
 * Seeds: tests/fuzz/corpus/kmap/ (the sched_switch and print formats of a
 * Debian 6.12 guest and of a host kernel with pages of their records,
 * colliding ids, a page with unknown types and short records).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/page.h>

#include "../../host/fuse/kmap.h"
#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[4] = {"sched_switch", "print", "a", "b"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t rec[1 << 16];
	struct fz_kmap *m, *back;
	uint32_t ids[8];
	unsigned int nf, nu, i, j;
	struct hvt_page_iter it;
	size_t p = 0;
	uint64_t ts0;
	int item;

	if (size < 1)
		return 0;
	m = fz_kmap_new();
	back = fz_kmap_new();
	fuzz_assert(m && back);
	nf = data[p++] % 4 + 1;
	for (i = 0; i < nf && p + 2 <= size; i++) {
		size_t len = (size_t)data[p] | (size_t)data[p + 1] << 8;

		p += 2;
		if (len > size - p)
			len = size - p;
		fz_kmap_add(m, i & 1 ? "ftrace" : "sched", names[i],
			    (const char *)data + p, len,
			    i & 2 ? NULL : "sched,ftrace:print");
		p += len;
	}
	nu = p < size ? data[p++] % 8 : 0;
	for (i = 0; i < nu; i++) {
		ids[i] = p + 2 <= size ? (uint32_t)data[p] | data[p + 1] << 8
				       : i;
		p += p + 2 <= size ? 2 : 0;
	}
	/* Twice, as the remote's events change: ids served before stay
	 * where they are free. */
	fz_kmap_assign(m, ids + nu / 2, nu - nu / 2);
	fz_kmap_assign(m, ids, nu);
	for (i = 0; i < m->nev; i++) {
		const struct fz_kev *e = &m->ev[i];
		char *text;

		fuzz_assert(m->slot[e->kid] == i + 1);
		fuzz_assert(e->enabled >= -1 && e->enabled <= 1);
		if (!e->served)
			continue;
		fuzz_assert(e->id < FZ_KMAP_ID_LIMIT);
		for (j = 0; j < nu; j++)
			fuzz_assert(e->id != ids[j]);
		for (j = 0; j < i; j++)
			fuzz_assert(!m->ev[j].served || m->ev[j].id != e->id);
		text = fz_kmap_format(e);
		fuzz_assert(text);
		/* The served text names the served id. */
		fuzz_assert(fz_kmap_add(back, "s", "e", text, strlen(text),
					NULL) == 0);
		fuzz_assert(back->ev[back->nev - 1].kid == e->id);
		fz_kmap_free(back);
		back = fz_kmap_new();
		fuzz_assert(back);
		free(text);
	}
	if (p + 8 <= size && size - p - 8 <= HVT_COMMIT_SIZE_MASK) {
		memcpy(&ts0, data + p, 8);
		p += 8;
		hvt_page_iter_init(&it, data + p, (uint32_t)(size - p), ts0);
		while ((item = hvt_page_next(&it)) > 0) {
			uint16_t type, id;
			int k;

			if (item != HVT_ITEM_DATA)
				continue;
			k = fz_kmap_keep(m, it.payload, it.len);
			if (k < 0)
				continue;
			fuzz_assert((unsigned int)k < m->nev);
			fuzz_assert(it.len >= FZ_KMAP_COMMON_SIZE);
			memcpy(&type, it.payload, 2);
			fuzz_assert(m->ev[k].kid == type);
			memcpy(rec, it.payload, it.len);
			if (fz_kmap_rewrite(m, rec, it.len)) {
				fuzz_assert(!m->ev[k].served);
				continue;
			}
			memcpy(&id, rec, 2);
			fuzz_assert(m->ev[k].served && id == m->ev[k].id);
			fuzz_assert(
				!memcmp(rec + 2, it.payload + 2, it.len - 2));
		}
		fuzz_assert(item == HVT_ITEM_END || item < 0);
	}
	fz_kmap_free(m);
	fz_kmap_free(back);
	return 0;
}
