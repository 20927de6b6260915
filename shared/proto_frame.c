// SPDX-License-Identifier: MIT
/*
 * hvtrace proxy protocol: frames.  The two checksums of a frame and the
 * stream decoder that reassembles frames from arbitrary chunks of a byte
 * stream (a socket, or a character device a reader may open in the middle
 * of a frame).  The messages inside frames are proto.c's.
 *
 * Nothing here allocates or does I/O, and nothing needs libc: the file is
 * built freestanding and link-checked with the ring (shared/Build.mk).
 * Every byte comes from a peer that may be hostile: a header is trusted
 * only when its magic and header checksum match, a frame only when its
 * length is within the decoder's limit and its payload checksum matches;
 * every loop is bounded by the decoder's buffer.
 */
#include <hvtrace/errno.h>
#include <hvtrace/proto.h>

#include "proto-local.h"

/* --- checksums ------------------------------------------------------------ */

/*
 * Fletcher-style: 'a' sums the words, 's' sums the running 'a', so a
 * swapped or shifted word changes the result.  The sum runs in pieces
 * (hvt_proto_sum_add()) for a payload that lies in two places; every
 * piece but the last is a whole number of words.
 */
void hvt_proto_sum_init(struct hvt_proto_sum_state *st, uint32_t len)
{
	st->a = 0x9e3779b97f4a7c15ull ^ len;
	st->s = 0x6a09e667f3bcc909ull;
}

void hvt_proto_sum_add(struct hvt_proto_sum_state *st, const void *p,
		       uint32_t len)
{
	const uint8_t *b = p;
	uint64_t a = st->a, s = st->s;

	for (; len >= 8; b += 8, len -= 8) {
		a += ld64(b);
		s += a;
	}
	if (len) {
		uint8_t t[8] = { 0 };

		pr_copy(t, b, len);
		a += ld64(t) ^ ((uint64_t)len << 56);
		s += a;
	}
	st->a = a;
	st->s = s;
}

uint32_t hvt_proto_sum_end(const struct hvt_proto_sum_state *st)
{
	uint64_t h = st->a ^ (st->s * 0xff51afd7ed558ccdull);

	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (uint32_t)h ^ (uint32_t)(h >> 32);
}

uint32_t hvt_proto_sum(const void *p, uint32_t len)
{
	struct hvt_proto_sum_state st;

	hvt_proto_sum_init(&st, len);
	hvt_proto_sum_add(&st, p, len);
	return hvt_proto_sum_end(&st);
}

uint32_t hvt_proto_hsum(const void *hdr)
{
	const uint8_t *b = hdr;
	uint32_t h = 0x811c9dc5u, i;

	/* FNV-1a over the header up to (not including) hsum. */
	for (i = 0; i < 28; i++) {
		h ^= b[i];
		h *= 0x01000193u;
	}
	return h;
}

/* --- stream reassembly ---------------------------------------------------- */

int hvt_proto_dec_init(struct hvt_proto_dec *d, void *buf, uint32_t cap,
		       uint32_t max_frame)
{
	if (!d || !buf || max_frame < HVT_PROTO_HDR_SIZE ||
	    max_frame > HVT_PROTO_MAX_FRAME || cap < max_frame)
		return -HVT_EINVAL;
	pr_zero(d, sizeof(*d));
	d->buf = buf;
	d->cap = cap;
	d->max_frame = max_frame;
	return 0;
}

void hvt_proto_dec_reset(struct hvt_proto_dec *d)
{
	d->head = d->tail = d->consume = d->in_garbage = 0;
	d->discard = 0;
}

/* Drop the frame returned last and move buffered bytes to the front. */
static void dec_compact(struct hvt_proto_dec *d)
{
	d->head += d->consume;
	d->consume = 0;
	if (d->head == d->tail) {
		d->head = d->tail = 0;
	} else if (d->head) {
		pr_copy(d->buf, d->buf + d->head, d->tail - d->head);
		d->tail -= d->head;
		d->head = 0;
	}
}

uint32_t hvt_proto_dec_room(struct hvt_proto_dec *d, uint8_t **where)
{
	dec_compact(d);
	*where = d->buf + d->tail;
	return d->cap - d->tail;
}

void hvt_proto_dec_added(struct hvt_proto_dec *d, uint32_t n)
{
	if (n > d->cap - d->tail)
		n = d->cap - d->tail;
	d->tail += n;
}

uint32_t hvt_proto_dec_feed(struct hvt_proto_dec *d, const void *data,
			    uint32_t len)
{
	uint8_t *w;
	uint32_t room = hvt_proto_dec_room(d, &w);

	if (len > room)
		len = room;
	if (len)
		pr_copy(w, data, len);
	d->tail += len;
	return len;
}

/* How many leading bytes of @p[0..n) match the start of the magic. */
static uint32_t magic_prefix(const uint8_t *p, uint32_t n)
{
	static const uint8_t mg[4] = { 'H', 'V', 'T', 'P' };
	uint32_t i;

	for (i = 0; i < n && i < 4; i++)
		if (p[i] != mg[i])
			return 0;
	return i;
}

/*
 * Skip @n bytes that are not a frame.  Returns -HVT_EBADMSG for the first
 * skip of a run, 0 within a run (one error per run of garbage).
 */
static int dec_skip(struct hvt_proto_dec *d, uint32_t n)
{
	d->head += n;
	d->skipped += n;
	if (d->in_garbage)
		return 0;
	d->in_garbage = 1;
	d->errors++;
	return -HVT_EBADMSG;
}

/* Skip a whole frame whose header was valid; one error. */
static int dec_skip_frame(struct hvt_proto_dec *d, uint32_t len, int err)
{
	d->discard = len;
	d->in_garbage = 0;
	d->errors++;
	return err;
}

int hvt_proto_dec_next(struct hvt_proto_dec *d, struct hvt_frame *f)
{
	uint32_t iter;

	d->head += d->consume;
	d->consume = 0;
	/*
	 * Each iteration consumes at least one byte or returns, and the
	 * buffer holds at most cap bytes, so this is bounded.
	 */
	for (iter = 0; iter <= d->cap + 1; iter++) {
		uint32_t avail = d->tail - d->head, len, i;
		const uint8_t *h = d->buf + d->head;
		int ret;

		if (d->discard) {
			uint64_t n = d->discard < avail ? d->discard : avail;

			d->head += (uint32_t)n;
			d->skipped += n;
			d->discard -= n;
			if (d->discard)
				break;
			continue;
		}
		if (!avail)
			break;
		if (avail < 4 || ld32(h) != HVT_PROTO_MAGIC) {
			/* Not at a frame: find the next magic. */
			if (magic_prefix(h, avail) == avail && avail < 4)
				break;	/* maybe a magic split across reads */
			for (i = 1; i < avail; i++)
				if (magic_prefix(h + i, avail - i) ==
				    (avail - i < 4 ? avail - i : 4))
					break;
			ret = dec_skip(d, i);
			if (ret)
				return ret;
			continue;
		}
		if (avail < HVT_PROTO_HDR_SIZE)
			break;
		if (ld32(h + 28) != hvt_proto_hsum(h)) {
			ret = dec_skip(d, 1);
			if (ret)
				return ret;
			continue;
		}
		len = ld32(h + 4);
		if (len < HVT_PROTO_HDR_SIZE) {
			d->head += HVT_PROTO_HDR_SIZE;
			d->skipped += HVT_PROTO_HDR_SIZE;
			d->in_garbage = 0;
			d->errors++;
			return -HVT_EMSGSIZE;
		}
		if (len > d->max_frame)
			return dec_skip_frame(d, len, -HVT_EMSGSIZE);
		if (h[10] != HVT_PROTO_VERSION)
			return dec_skip_frame(d, len, -HVT_EPROTONOSUPPORT);
		if ((h[11] & ~HVT_PF_ALL) || ld32(h + 20))
			return dec_skip_frame(d, len, -HVT_EBADMSG);
		if (avail < len)
			break;
		if (ld32(h + 24) != hvt_proto_sum(h + HVT_PROTO_HDR_SIZE,
						  len - HVT_PROTO_HDR_SIZE)) {
			/* Perhaps a frame cut short and followed by a new
			 * one: resynchronise from inside it. */
			ret = dec_skip(d, 1);
			if (ret)
				return ret;
			continue;
		}
		f->type = ld16(h + 8);
		f->version = h[10];
		f->flags = h[11];
		f->req = ld32(h + 12);
		f->chan = ld32(h + 16);
		f->payload = h + HVT_PROTO_HDR_SIZE;
		f->len = len - HVT_PROTO_HDR_SIZE;
		d->consume = len;
		d->in_garbage = 0;
		d->frames++;
		return 1;
	}
	/* Need more bytes: make room for a whole frame. */
	dec_compact(d);
	return 0;
}
