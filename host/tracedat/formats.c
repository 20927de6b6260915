// SPDX-License-Identifier: MIT
/*
 * libhvtrace-tracedat: format texts as trace.dat stores them.
 *
 * The head of a format file ("name:" and "ID:" lines) parsed and
 * rewritten with another id, and the texts of header_page, header_event
 * and the placeholder format of unknown ids, as blobs.  The catalogs the
 * formats come from are the core library's (hvtrace_catalog_*).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracedat-local.h"

int hvt_tdat_format_parse_head(const char *text, char *name, size_t name_len,
			       uint32_t *id)
{
	const char *p, *e;
	unsigned long v;
	char *end;

	if (strncmp(text, "name: ", 6))
		return -EINVAL;
	p = text + 6;
	e = strchr(p, '\n');
	if (!e || (size_t)(e - p) >= name_len || e == p)
		return -EINVAL;
	memcpy(name, p, (size_t)(e - p));
	name[e - p] = '\0';
	p = e + 1;
	if (strncmp(p, "ID: ", 4))
		return -EINVAL;
	v = strtoul(p + 4, &end, 10);
	if (end == p + 4 || *end != '\n' || v > 0xffff)
		return -EINVAL;
	*id = (uint32_t)v;
	return 0;
}

char *hvt_tdat_format_set_id(const char *text, uint32_t id)
{
	const char *p = strstr(text, "\nID: "), *e;
	char *out;
	size_t n;

	if (!p)
		return NULL;
	p += 1;
	e = strchr(p, '\n');
	if (!e)
		return NULL;
	n = strlen(text) + 16;
	out = malloc(n);
	if (!out)
		return NULL;
	snprintf(out, n, "%.*sID: %u%s", (int)(p - text), text, id, e);
	return out;
}

/*
 * header_page and header_event: the texts the host library's decoding
 * component generates (host/lib/events_builtin.c), as a blob.
 */
int hvt_tdat_header_page_text(struct hvt_tdat_blob *b, uint32_t subbuf_size)
{
	char text[512];
	int n = hvtrace_header_page_text(subbuf_size, text, sizeof(text));

	if (n < 0 || (size_t)n >= sizeof(text))
		return -EINVAL;
	b->len = 0;
	return hvt_tdat_blob_add(b, text, (size_t)n);
}

int hvt_tdat_header_event_text(struct hvt_tdat_blob *b)
{
	char text[512];
	int n = hvtrace_header_event_text(text, sizeof(text));

	if (n < 0 || (size_t)n >= sizeof(text))
		return -EINVAL;
	b->len = 0;
	return hvt_tdat_blob_add(b, text, (size_t)n);
}

/* The common fields, for the placeholder format of unknown events. */
static const char cat_common[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char "
	"common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

int hvt_tdat_unknown_format_text(struct hvt_tdat_blob *b, uint32_t id)
{
	b->len = 0;
	return hvt_tdat_blob_printf(b,
				    "name: unknown_event\nID: %u\nformat:\n%s\n"
				    "\nprint fmt: \"event of an id the writer "
				    "did not describe\"\n",
				    id, cat_common);
}
