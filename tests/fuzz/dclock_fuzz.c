// SPDX-License-Identifier: MIT
/*
 * Fuzz a CLOCK notice as a reader of remotes takes it: the bytes after
 * the first four are a CLOCK payload (72 bytes) sealed into a frame with
 * valid checksums (remote id from byte 1, flags from byte 2), decoded by
 * the codec, kept in the feed's table of models (hvt_dclock_apply()),
 * and every further 8 bytes a writer timestamp converted with it
 * (hvtrace_clock_map_to_host()).  Byte 3 picks a second remote id, so the
 * table holds several.  Oracles, besides the sanitizers (no overflow in
 * the bound's arithmetic, no read outside the frame): a frame the decoder
 * accepts re-encodes to the same bytes; without a model (clock id 0) and
 * for host-ns clocks a timestamp stays as it is; without a fitted sample
 * the bound is UINT64_MAX; with one, the model's base maps to its base
 * host time, and no bound is below the bound at the base.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>
#include <hvtrace/proto.h>

#include "dclock.h"

#define CLOCK_PAYLOAD 72u

static uint8_t frame[HVT_PROTO_HDR_SIZE + CLOCK_PAYLOAD];
static uint8_t dbuf[HVT_PROTO_AGENT_FRAME];
static uint8_t ebuf[HVT_PROTO_AGENT_FRAME];

static int seal_decode(uint32_t chan, uint8_t flags, const uint8_t *p,
		       struct hvt_msg *m)
{
	struct hvt_proto_dec d;
	struct hvt_frame f;
	uint32_t v, len = sizeof(frame);
	uint16_t type = HVT_MSG_CLOCK;
	int n;

	memset(frame, 0, HVT_PROTO_HDR_SIZE);
	v = HVT_PROTO_MAGIC;
	memcpy(frame, &v, 4);
	memcpy(frame + 4, &len, 4);
	memcpy(frame + 8, &type, 2);
	frame[10] = HVT_PROTO_VERSION;
	frame[11] = flags & HVT_PF_ALL;
	memcpy(frame + 16, &chan, 4);
	memcpy(frame + HVT_PROTO_HDR_SIZE, p, CLOCK_PAYLOAD);
	v = hvt_proto_sum(frame + HVT_PROTO_HDR_SIZE, CLOCK_PAYLOAD);
	memcpy(frame + 24, &v, 4);
	v = hvt_proto_hsum(frame);
	memcpy(frame + 28, &v, 4);
	if (hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), sizeof(dbuf)) ||
	    hvt_proto_dec_feed(&d, frame, len) != len ||
	    hvt_proto_dec_next(&d, &f) != 1)
		abort(); /* a sealed frame is always a frame */
	if (hvt_msg_decode(&f, m, NULL))
		return -1;
	n = hvt_msg_encode(ebuf, sizeof(ebuf), m);
	if (n != (int)len || memcmp(ebuf, frame, len))
		abort();
	return 0;
}

static void convert(const struct hvtrace_clock_map *k, uint64_t ts)
{
	uint64_t ns, err, base_err;

	ns = hvtrace_clock_map_to_host(k, ts, &err);
	if (!k->clock_id || k->clock_id == HVT_CLOCK_HOST_NS) {
		if (ns != ts)
			abort();
		if (!k->clock_id && err != UINT64_MAX)
			abort();
		return;
	}
	if (!(k->flags & HVTRACE_CLOCK_SYNCED)) {
		if (err != k->err_ns)
			abort();
		return;
	}
	ns = hvtrace_clock_map_to_host(k, k->base_writer, &base_err);
	if (ns != k->base_host || err < base_err)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvt_dclocks t = { 0 };
	const struct hvtrace_clock_map *k;
	struct hvt_msg m;
	uint32_t chan[2];
	size_t off;
	int i;

	if (size < 4 + CLOCK_PAYLOAD || size > 4096)
		return 0;
	chan[0] = data[1];
	chan[1] = data[3];
	for (i = 0; i < 2; i++) {
		if (seal_decode(chan[i], i ? 0 : data[2], data + 4, &m))
			continue;
		if (hvt_dclock_apply(&t, &m) != ((m.flags & HVT_PF_REPLY) ?
							 -EINVAL :
							 0))
			abort();
	}
	for (i = 0; i < 2; i++) {
		k = hvt_dclock_find(&t, chan[i]);
		if (!k)
			continue;
		for (off = 4 + CLOCK_PAYLOAD; off + 8 <= size; off += 8) {
			uint64_t ts;

			memcpy(&ts, data + off, 8);
			convert(k, ts);
		}
	}
	hvt_dclocks_free(&t);
	return 0;
}
