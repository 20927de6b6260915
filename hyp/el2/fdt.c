// SPDX-License-Identifier: MIT
/*
 * Just enough of a flattened-device-tree reader to find /chosen/bootargs
 * in the DTB QEMU places at the start of RAM for a bare-metal image.
 * Every offset is bounded by the blob's declared size (itself bounded by
 * the caller), so a malformed blob yields NULL, never a fault.
 */
#include "hyp.h"

#define FDT_MAGIC	0xd00dfeedu
#define FDT_BEGIN_NODE	1u
#define FDT_END_NODE	2u
#define FDT_PROP	3u
#define FDT_NOP		4u
#define FDT_END		9u

static uint32_t be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

static int str_eq_bounded(const uint8_t *s, uint32_t avail, const char *want)
{
	uint32_t i;

	for (i = 0; i < avail; i++) {
		if (s[i] != (uint8_t)want[i])
			return 0;
		if (!want[i])
			return 1;
	}
	return 0;
}

const char *fdt_bootargs(const void *dtb, uint32_t max)
{
	const uint8_t *b = dtb;
	uint32_t total, off_struct, off_strings, size_strings, size_struct;
	uint32_t pos, end, depth = 0, chosen_depth = 0, steps;

	if (max < 40 || be32(b) != FDT_MAGIC)
		return NULL;
	total = be32(b + 4);
	off_struct = be32(b + 8);
	off_strings = be32(b + 12);
	size_strings = be32(b + 32);
	size_struct = be32(b + 36);
	if (total > max || off_struct > total ||
	    size_struct > total - off_struct || off_strings > total ||
	    size_strings > total - off_strings)
		return NULL;
	pos = off_struct;
	end = off_struct + size_struct;
	for (steps = 0; steps < 100000 && pos + 4 <= end; steps++) {
		uint32_t tok = be32(b + pos);

		pos += 4;
		switch (tok) {
		case FDT_BEGIN_NODE: {
			uint32_t n = 0;

			while (pos + n < end && b[pos + n])
				n++;
			if (pos + n >= end)
				return NULL;
			depth++;
			if (depth == 2 && !chosen_depth &&
			    str_eq_bounded(b + pos, n + 1, "chosen"))
				chosen_depth = depth;
			pos = (pos + n + 1 + 3) & ~3u;
			break;
		}
		case FDT_END_NODE:
			if (chosen_depth && depth == chosen_depth)
				return NULL;	/* no /chosen/bootargs */
			if (depth)
				depth--;
			break;
		case FDT_PROP: {
			uint32_t len, nameoff;

			if (pos + 8 > end)
				return NULL;
			len = be32(b + pos);
			nameoff = be32(b + pos + 4);
			pos += 8;
			if (len > end - pos || nameoff >= size_strings)
				return NULL;
			if (chosen_depth && depth == chosen_depth &&
			    str_eq_bounded(b + off_strings + nameoff,
					   size_strings - nameoff, "bootargs") &&
			    len && b[pos + len - 1] == 0)
				return (const char *)(b + pos);
			pos = (pos + len + 3) & ~3u;
			break;
		}
		case FDT_NOP:
			break;
		default:	/* FDT_END or garbage */
			return NULL;
		}
	}
	return NULL;
}
