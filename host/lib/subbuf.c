// SPDX-License-Identifier: MIT
/*
 * libhvtrace: walking one ftrace sub-buffer into records.
 *
 * The public face of the bounded walker in subbuf.h; the ring cursor
 * (ring.c) uses the same walker, so what the benchmark measures is what
 * the stream path runs.
 */
#include <errno.h>
#include <string.h>

#include "subbuf.h"

HVTRACE_API int hvtrace_subbuf_iter_init(struct hvtrace_subbuf_iter *it,
					 const void *subbuf,
					 size_t subbuf_size, int cpu)
{
	uint64_t ts, lost;
	uint32_t size;
	int ret;

	if (!it || !subbuf)
		return hvt_err(-EINVAL,
			       "hvtrace_subbuf_iter_init: NULL argument");
	memset(it, 0, sizeof(*it));
	it->cpu = cpu;
	if (subbuf_size < HVT_PAGE_HDR_SIZE || subbuf_size > (1u << 27))
		return hvt_err(-EINVAL, "sub-buffer size %zu out of range",
			       subbuf_size);
	ret = sb_header(subbuf, subbuf_size, &ts, &size, &lost);
	it->data = (const uint8_t *)subbuf + HVT_PAGE_HDR_SIZE;
	it->ts = ts;
	if (ret)
		return hvt_err(ret, "sub-buffer commit size runs past its %zu "
				    "bytes",
			       subbuf_size);
	it->size = size;
	it->lost = lost;
	return 0;
}

HVTRACE_API int hvtrace_subbuf_next(struct hvtrace_subbuf_iter *it,
				    struct hvtrace_record *rec)
{
	const uint8_t *payload;
	uint32_t len;
	int ret;

	ret = sb_step(it->data, it->size, &it->pos, &it->ts, &payload, &len);
	if (ret <= 0) {
		if (ret < 0) {
			it->pos = it->size;	/* stay at the end */
			return hvt_err(ret, "malformed event in sub-buffer");
		}
		return 0;
	}
	rec->ts = it->ts;
	rec->host_ns = it->ts;
	rec->data = payload;
	rec->size = len;
	rec->cpu = it->cpu;
	rec->lost_before = it->lost;
	rec->fetched_ns = 0;
	it->lost = 0;
	return 1;
}
