// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the writer core on a hostile area.  A writer process may
 * attach to an area another process formatted (guest writers share one),
 * and every writer reads the host-owned control page; neither may make it
 * fault, write outside the area or loop.  The input is a whole area image
 * (the area_parse seeds); every CPU the header validates for gets a burst
 * of writes of all sizes, a reserve/commit, a reset poll, whole pages
 * put as the agent's kernel copy does (hvt_rb_put_page(): the input's own
 * bytes as the pages, so their commits and events are hostile too) and a
 * time-sync poll.  The area buffer and each page are exactly their size,
 * so ASan catches any access outside them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/ring_buffer.h>

#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t lens[] = { 0, 4, 13, 104, 105, 400, 2000, 5000 };
	struct hvt_common_fields c = { .common_type = 1 };
	uint8_t payload[5000];
	uint8_t *area;
	uint32_t cpu, i;

	if (size < HVT_CPU_OFFSET)
		return 0;
	area = malloc(size);	/* 16-byte aligned, exactly @size bytes */
	fuzz_assert(area);
	memcpy(area, data, size);
	memset(payload, 0xab, sizeof(payload));
	for (cpu = 0; cpu < HVT_ABI_MAX_CPUS; cpu++) {
		struct hvt_rb_reservation r;
		struct hvt_rb_cpu cb;
		uint64_t ts = 1000;
		int ret, err;
		void *p;

		if (hvt_area_cpu(area, size, cpu, &cb))
			break;
		for (i = 0; i < 64; i++) {
			struct hvt_iovec iov = { payload, lens[i % 8] };

			ts += i % 5 == 4 ? (1ULL << 28) : 3;
			ret = hvt_rb_write(&cb, ts, &c, &iov, 1);
			fuzz_assert(ret == 0 || ret == -HVT_ENOSPC ||
				    ret == -HVT_E2BIG);
		}
		p = hvt_rb_reserve(&cb, &r, ts + 1, &c, 24, &err);
		if (p) {
			memset(p, 0x5a, 24);
			hvt_rb_commit(&cb, &r);
		} else {
			fuzz_assert(err == -HVT_ENOSPC);
		}
		hvt_rb_poll_reset(&cb);
		for (i = 0; i < 4; i++) {
			/* A page of the input's bytes, at four places, one
			 * short of a whole sub-buffer. */
			uint32_t len = cb.subbuf_size - (i == 3 ? 8 : 0);
			uint64_t at = (size - 1) / 4 * i;
			uint8_t *pg = calloc(1, len);

			fuzz_assert(pg);
			memcpy(pg, data + at, size - at < len ? size - at : len);
			ret = hvt_rb_put_page(&cb, pg, len, i);
			fuzz_assert(ret == 0 || ret == -HVT_ENOSPC ||
				    ret == -HVT_EBADMSG ||
				    ret == -HVT_ENODATA || ret == -HVT_E2BIG);
			free(pg);
		}
		hvt_rb_entries(&cb);
		ret = hvt_rb_write(&cb, ts + 2, &c, NULL, 0);
		fuzz_assert(ret == 0 || ret == -HVT_ENOSPC);
	}
	hvt_area_sync_poll(area, 12345);
	free(area);
	return 0;
}
