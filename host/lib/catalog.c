// SPDX-License-Identifier: MIT
/*
 * libhvtrace: event catalogs.
 *
 * A catalog is the list of event formats (tracefs format file texts) a
 * buffer's pages refer to; trace.dat files, the tracefs-style view and
 * hvtraced's area remotes build theirs here.  Remote writers get theirs by
 * writer kind: the built-in "hvtrace" events (hvtrace_builtin_format()), plus
 * the hypervisor's events for HVT_WRITER_HYP areas (<hvtrace/hyp_events.h>).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/hyp_events.h>

#include "hvtrace-local.h"

int hvtrace_catalog_add(struct hvtrace_catalog *c, const char *system,
			const char *name, uint32_t id, const char *text,
			int bit)
{
	struct hvtrace_catalog_format *f;
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

void hvtrace_catalog_free(struct hvtrace_catalog *c)
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

const struct hvtrace_catalog_format *
hvtrace_catalog_find(const struct hvtrace_catalog *c, uint32_t id, int *bit)
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

int hvtrace_catalog_add_writer(struct hvtrace_catalog *c, uint32_t writer_kind)
{
	const char *text, *name;
	unsigned int i, id;
	int ret;

	/* The built-in "hvtrace" events: a loopback writer writes them, with
	 * their index as enable bit; others may carry them, untouched. */
	for (i = 0; (text = hvtrace_builtin_format(i, &name, &id)); i++) {
		ret = hvtrace_catalog_add(
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
		ret = hvtrace_catalog_add(c, ev->system, ev->name, ev->id,
					  ev->format, (int)ev->index);
		if (ret)
			return ret;
	}
	return 0;
}
