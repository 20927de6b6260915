// SPDX-License-Identifier: MIT
/*
 * libhvtrace trace.dat component: event catalogs.
 *
 * A catalog is the list of event formats (tracefs format file texts) a
 * buffer's pages refer to.  Remote writers get theirs by writer kind: the
 * built-in "hvtrace" events (hvtrace_builtin_format()), plus the
 * hypervisor's events for HVT_WRITER_HYP areas (<hvtrace/hyp_events.h>).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/hyp_events.h>

#include "tdat.h"

int hvt_tdat_catalog_add(struct hvt_tdat_catalog *c, const char *system,
			 const char *name, uint32_t id, const char *text,
			 int bit)
{
	struct hvt_tdat_format *f;
	int *b;

	if (c->nr == c->cap) {
		unsigned int ncap = c->cap ? c->cap * 2 : 16;

		f = realloc(c->fmt, ncap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		c->fmt = f;
		b = realloc(c->bit, ncap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		c->bit = b;
		c->cap = ncap;
	}
	f = &c->fmt[c->nr];
	f->system = strdup(system);
	f->name = strdup(name);
	f->text = strdup(text);
	f->id = id;
	if (!f->system || !f->name || !f->text) {
		free(f->system);
		free(f->name);
		free(f->text);
		return -ENOMEM;
	}
	c->bit[c->nr] = bit;
	c->nr++;
	return 0;
}

void hvt_tdat_catalog_free(struct hvt_tdat_catalog *c)
{
	unsigned int i;

	for (i = 0; i < c->nr; i++) {
		free(c->fmt[i].system);
		free(c->fmt[i].name);
		free(c->fmt[i].text);
	}
	free(c->fmt);
	free(c->bit);
	memset(c, 0, sizeof(*c));
}

const struct hvt_tdat_format *
hvt_tdat_catalog_by_id(const struct hvt_tdat_catalog *c, uint32_t id, int *bit)
{
	unsigned int i;

	for (i = 0; i < c->nr; i++)
		if (c->fmt[i].id == id) {
			if (bit)
				*bit = c->bit[i];
			return &c->fmt[i];
		}
	return NULL;
}

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

int hvt_tdat_catalog_for_writer(struct hvt_tdat_catalog *c,
				uint32_t writer_kind)
{
	const char *text, *name;
	unsigned int i, id;
	int ret;

	/* The built-in "hvtrace" events: a loopback writer writes them, with
	 * their index as enable bit; others may carry them, untouched. */
	for (i = 0; (text = hvtrace_builtin_format(i, &name, &id)); i++) {
		ret = hvt_tdat_catalog_add(
			c, HVTRACE_BUILTIN_SYSTEM, name, id, text,
			writer_kind == HVT_WRITER_LOOPBACK ? (int)i : -1);
		if (ret)
			return ret;
	}
	if (writer_kind != HVT_WRITER_HYP)
		return 0;
	for (i = 0; i < hvt_hypevents_count(); i++) {
		const struct hvt_hypevent *ev = hvt_hypevents_get(i);

		if (!ev || !ev->format)
			continue;
		ret = hvt_tdat_catalog_add(c, ev->system, ev->name, ev->id,
					   ev->format, (int)ev->index);
		if (ret)
			return ret;
	}
	return 0;
}
