// SPDX-License-Identifier: MIT
/*
 * Fuzz the proxy protocol decoder: arbitrary bytes, fed in chunk sizes
 * the input itself chooses, through the stream decoder and the message
 * decoder.  Oracle: every frame the decoders accept re-encodes to exactly
 * the same bytes (so nothing outside the validated fields was ignored),
 * every view points inside the frame, and the decoder's accounting adds
 * up (bytes fed == bytes in frames + bytes skipped + bytes still held).
 *
 * Inputs whose first byte is odd are instead sealed into one frame with
 * valid checksums (type and flags from the next bytes, the rest as the
 * payload), so mutations reach the per-message validation directly.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/proto.h>

static uint8_t dbuf[HVT_PROTO_AGENT_FRAME];
static uint8_t ebuf[HVT_PROTO_MAX_FRAME];

static void inside(const void *p, uint32_t len, const uint8_t *lo,
		   const uint8_t *hi)
{
	const uint8_t *b = p;

	if (len && (b < lo || b + len > hi))
		abort();
}

static void check_msg(const struct hvt_frame *f)
{
	const uint8_t *lo = f->payload, *hi = f->payload + f->len;
	const uint8_t *frame = f->payload - HVT_PROTO_HDR_SIZE;
	struct hvt_msg m;
	int ret, n;

	ret = hvt_msg_decode(f, &m, NULL);
	if (ret)
		return;
	switch (hvt_msg_layout(m.type, m.flags & HVT_PF_REPLY)) {
	case HVT_L_HELLO:
		inside(m.u.hello.name.ptr, m.u.hello.name.len, lo, hi);
		inside(m.u.hello.text.ptr, m.u.hello.text.len, lo, hi);
		break;
	case HVT_L_REGISTER:
		inside(m.u.reg.def.ptr, m.u.reg.def.len, lo, hi);
		break;
	case HVT_L_PAGE:
		inside(m.u.page.data, m.u.page.len, lo, hi);
		break;
	case HVT_L_FORMAT:
		inside(m.u.format.name.ptr, m.u.format.name.len, lo, hi);
		inside(m.u.format.text.ptr, m.u.format.text.len, lo, hi);
		break;
	case HVT_L_KFORMATS:
		inside(m.u.kformats.release.ptr, m.u.kformats.release.len, lo,
		       hi);
		inside(m.u.kformats.build_id.ptr, m.u.kformats.build_id.len, lo,
		       hi);
		break;
	case HVT_L_KFILE:
		inside(m.u.kfile.name.ptr, m.u.kfile.name.len, lo, hi);
		inside(m.u.kfile.data, m.u.kfile.len, lo, hi);
		break;
	case HVT_L_REMOTES:
		inside(m.u.remotes.recs.ptr,
		       m.u.remotes.recs.count * HVT_REMOTE_REC_SIZE, lo, hi);
		break;
	default:
		break;
	}
	n = hvt_msg_encode(ebuf, sizeof(ebuf), &m);
	if (n != (int)(f->len + HVT_PROTO_HDR_SIZE) ||
	    memcmp(ebuf, frame, (size_t)n))
		abort();
}

static uint8_t sealed[HVT_PROTO_AGENT_FRAME];

static void seal_one(const uint8_t *data, size_t size)
{
	struct hvt_proto_dec d;
	struct hvt_frame f;
	uint32_t len, s;

	if (size < 4 || size - 4 > sizeof(sealed) - HVT_PROTO_HDR_SIZE)
		return;
	len = (uint32_t)(size - 4) + HVT_PROTO_HDR_SIZE;
	memset(sealed, 0, HVT_PROTO_HDR_SIZE);
	s = HVT_PROTO_MAGIC;
	memcpy(sealed, &s, 4);
	memcpy(sealed + 4, &len, 4);
	sealed[8] = data[1];
	sealed[9] = data[2] & 0x1;
	sealed[10] = HVT_PROTO_VERSION;
	sealed[11] = data[3] & HVT_PF_ALL;
	memcpy(sealed + HVT_PROTO_HDR_SIZE, data + 4, size - 4);
	s = hvt_proto_sum(sealed + HVT_PROTO_HDR_SIZE,
			  len - HVT_PROTO_HDR_SIZE);
	memcpy(sealed + 24, &s, 4);
	s = hvt_proto_hsum(sealed);
	memcpy(sealed + 28, &s, 4);
	if (hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), sizeof(dbuf)))
		abort();
	if (hvt_proto_dec_feed(&d, sealed, len) != len)
		abort();
	if (hvt_proto_dec_next(&d, &f) != 1)
		abort();	/* a sealed frame is always a frame */
	check_msg(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvt_proto_dec d;
	struct hvt_frame f;
	uint64_t framed = 0;
	uint32_t seed = 1, off = 0;
	int ret;

	if (size > (1u << 20))
		return 0;
	if (size && (data[0] & 1)) {
		seal_one(data, size);
		return 0;
	}
	if (size)
		seed = data[0] | 1u;
	if (hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), sizeof(dbuf)))
		abort();
	while (off < size) {
		uint32_t n;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 300;
		if (n > size - off)
			n = (uint32_t)(size - off);
		n = hvt_proto_dec_feed(&d, data + off, n);
		off += n;
		while ((ret = hvt_proto_dec_next(&d, &f)) != 0) {
			if (ret == 1) {
				framed += f.len + HVT_PROTO_HDR_SIZE;
				check_msg(&f);
			} else if (ret != -EBADMSG && ret != -EMSGSIZE &&
				   ret != -EPROTONOSUPPORT) {
				abort();
			}
		}
		if (!n && d.tail - d.head >= d.cap)
			abort();	/* stuck: full and nothing to do */
	}
	/* Every byte fed is in a frame, skipped, held, or being discarded. */
	if (framed + d.skipped + (d.tail - d.head) != size)
		abort();
	return 0;
}
