// SPDX-License-Identifier: MIT
/*
 * libhvtrace: reading back the journal of an unfinished recording
 * (FILE.unfinished, journal.c writes it).  What a killed recorder left is
 * hostile input: it may end inside a record (a kill between two writes),
 * or hold zeros or stale bytes where a power cut lost what was not yet on
 * disk.  Every record carries a magic, its length and a checksum of its
 * header and payload; a record that fails any check is skipped and
 * counted, and the pass goes on at the next offset where a good record
 * starts.
 *
 *   0   "HVTJRNL1", u32 version (1), u32 page size of the file
 *   16  records: u32 magic "HVTJ", u16 type, u16 a, u32 b, u32 len,
 *       u32 checksum, then len bytes (enum hvt_tdat_jrec_type)
 */
#include <errno.h>
#include <string.h>

#include "tracedat-local.h"

static uint32_t jp_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint16_t jp_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* A sum of the payload's 64-bit words (cheap: every page goes through
 * it), folded with the header's fields. */
uint32_t hvt_tdat_jrec_sum(uint16_t type, uint16_t a, uint32_t b,
			   const void *data, uint32_t len)
{
	const uint8_t *p = data;
	uint64_t s = 0x9e3779b97f4a7c15ull, w;
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		s += w;
		s ^= s >> 29;
	}
	if (i < len) {
		w = 0;
		memcpy(&w, p + i, len - i);
		s += w;
		s ^= s >> 29;
	}
	s += ((uint64_t)type << 48) | ((uint64_t)a << 32) | b;
	s *= 0xbf58476d1ce4e5b9ull;
	s ^= (uint64_t)len * 0x94d049bb133111ebull;
	s ^= s >> 31;
	return (uint32_t)(s ^ (s >> 32));
}

int hvt_tdat_jparse_init(struct hvt_tdat_jparse *j, const uint8_t *p,
			 uint64_t size)
{
	uint32_t ver, ps;

	memset(j, 0, sizeof(*j));
	if (size < HVT_TDAT_JOURNAL_HDR ||
	    memcmp(p, HVT_TDAT_JOURNAL_MAGIC, 8))
		return hvt_err(-EINVAL, "not the journal of a recording (no "
					"hvtrace journal magic)");
	ver = jp_le32(p + 8);
	ps = jp_le32(p + 12);
	if (ver != 1)
		return hvt_err(-ENOTSUP,
			       "journal version %u (this hvtrace reads 1)",
			       ver);
	if (ps < 4096 || ps > 65536 || (ps & (ps - 1)))
		return hvt_err(-EINVAL, "journal: bad page size %u", ps);
	j->p = p;
	j->size = size;
	j->pos = HVT_TDAT_JOURNAL_HDR;
	j->page_size = ps;
	return 0;
}

/* A good record at @pos?  1 (into @r), 0 no, -1 it runs past the end. */
static int jp_at(const struct hvt_tdat_jparse *j, uint64_t pos,
		 struct hvt_tdat_jrec *r)
{
	const uint8_t *h = j->p + pos;

	if (j->size - pos < HVT_TDAT_JREC_HDR)
		return -1;
	if (jp_le32(h) != HVT_TDAT_JREC_MAGIC)
		return 0;
	r->type = jp_le16(h + 4);
	r->a = jp_le16(h + 6);
	r->b = jp_le32(h + 8);
	r->len = jp_le32(h + 12);
	if (!r->type || r->type >= HVT_TDAT_J_MAX ||
	    r->len > HVT_TDAT_JREC_MAX)
		return 0;
	if (j->size - pos - HVT_TDAT_JREC_HDR < r->len)
		return -1;
	r->data = h + HVT_TDAT_JREC_HDR;
	r->off = pos;
	if (hvt_tdat_jrec_sum(r->type, r->a, r->b, r->data, r->len) !=
	    jp_le32(h + 16))
		return 0;
	return 1;
}

int hvt_tdat_jparse_next(struct hvt_tdat_jparse *j, struct hvt_tdat_jrec *r)
{
	uint64_t pos = j->pos;
	bool skipping = false;
	int ok;

	while (pos < j->size) {
		ok = jp_at(j, pos, r);
		if (ok > 0) {
			if (skipping) {
				j->bad_records++;
				j->bad_bytes += pos - j->pos;
			}
			j->pos = pos + HVT_TDAT_JREC_HDR + r->len;
			return 1;
		}
		/* A record cut off by the end is the torn tail, unless good
		 * records follow it (then it was damaged): look on. */
		skipping = true;
		pos++;
	}
	if (skipping || j->pos < j->size) {
		j->torn = true;
		j->bad_records++;
		j->bad_bytes += j->size - j->pos;
	}
	j->pos = j->size;
	return 0;
}
