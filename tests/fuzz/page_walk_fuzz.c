// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the sub-buffer walker hvt_page_next() over arbitrary bytes.
 *
 * Input: 8 bytes of page time_stamp, then the page data (the committed
 * size is the rest of the input).  The walker must stay inside the data
 * (ASan sees the exact input buffer), advance on every item and end.
 *
 * Where the input is a canonical page -- every item the walker accepted
 * is one the kernel writes (padding lengths and the size in 4-byte units)
 * -- libtraceevent's kbuffer must decode the same events: same payload
 * offsets, lengths and timestamps.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kbuffer.h>

#include <hvtrace/page.h>

#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENTS 16384

struct seen {
	uint32_t off, len;
	uint64_t ts;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct seen ev[MAX_EVENTS];
	static struct kbuffer *kb;
	struct hvt_page_iter it;
	uint32_t n = 0, dsize, steps = 0, last_pos = 0;
	bool canon;
	uint64_t ts0;
	int ret;

	if (size < 8 || size - 8 > HVT_COMMIT_SIZE_MASK)
		return 0;
	memcpy(&ts0, data, 8);
	dsize = (uint32_t)(size - 8);
	canon = dsize % 4 == 0;

	hvt_page_iter_init(&it, data + 8, dsize, ts0);
	while ((ret = hvt_page_next(&it)) > 0) {
		const uint8_t *e = data + 8 + it.evt_pos;

		/* Progress, bounds. */
		fuzz_assert(it.pos > last_pos);
		fuzz_assert(it.pos <= dsize);
		last_pos = it.pos;
		fuzz_assert(++steps <= dsize / 4 + 1);
		if (ret == HVT_ITEM_DATA) {
			fuzz_assert(it.payload >= data + 8);
			fuzz_assert(it.payload + it.len <= data + 8 + dsize);
			fuzz_assert(it.len % 4 == 0 && it.len > 0);
			if (n < MAX_EVENTS) {
				ev[n].off = (uint32_t)(it.payload - data - 8);
				ev[n].len = it.len;
				ev[n].ts = it.ts;
			}
			n++;
		} else if (ret == HVT_ITEM_PADDING) {
			uint32_t plen;

			memcpy(&plen, e + 4, 4);
			/* The walker skips at least 4 bytes where the kernel
			 * would skip plen: only compare multiples of 4. */
			if (plen < 4 || plen % 4)
				canon = false;
		}
	}
	if (ret < 0) {
		/* The iterator stays at the bad item, inside the data. */
		fuzz_assert(it.pos < dsize);
		return 0;
	}
	if (!canon || n > MAX_EVENTS)
		return 0;

	/* Differential: kbuffer on the same page. */
	{
		uint8_t *page = calloc(1, 16 + (size_t)dsize + 16);
		unsigned long long kts;
		uint64_t commit = dsize;
		uint32_t k = 0;
		void *d;

		fuzz_assert(page);
		if (!kb)
			kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					   KBUFFER_ENDIAN_LITTLE);
		fuzz_assert(kb);
		memcpy(page, &ts0, 8);
		memcpy(page + 8, &commit, 8);
		memcpy(page + 16, data + 8, dsize);
		fuzz_assert(kbuffer_load_subbuffer(kb, page) == 0);
		for (d = kbuffer_read_event(kb, &kts); d;
		     d = kbuffer_next_event(kb, &kts)) {
			fuzz_assert(k < n);
			fuzz_assert((uint32_t)((uint8_t *)d - page - 16) ==
				    ev[k].off);
			fuzz_assert((uint32_t)kbuffer_event_size(kb) ==
				    ev[k].len);
			fuzz_assert(kts == ev[k].ts);
			k++;
		}
		fuzz_assert(k == n);
		free(page);
	}
	return 0;
}
