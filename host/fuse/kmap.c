// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the guest kernel's event ids in the tracefs-style view.
 *
 * A guest remote shows its user events and its kernel's own events in one
 * events/ tree and one trace_pipe_raw per CPU, so one id must name one
 * event there.  User events have the ids hvtraced gave them (32768 and up
 * by default), the kernel's are small (a few thousand at most); they do
 * not collide unless the registry was given a low id base.  So each guest
 * kernel event keeps its own id when no event of the remote has it and it
 * is below 0x8000, and otherwise is served under the highest free id below
 * 0x8000 (the recorder's rule, docs/tracedat.md); an id once served stays
 * while no event of the remote takes it.  common_type is rewritten
 * in the raw pages served and the id and format files say the served id.
 *
 * The formats come from the guest (its console, unpacked by the CLI into
 * a folder laid out like tracefs) and its pages from its RAM: both are
 * hostile.  Names, sizes and ids of the folder are bounded; every record
 * of a guest kernel page is checked (fz_kmap_keep: the 8-byte common
 * header, a type the folder describes, an id served) before it is queued,
 * and only such a record is ever rewritten.  No libfuse here: the fuzz
 * target tests/fuzz/kmap_fuzz.c builds this file alone.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kmap.h"

#define KMAP_FORMAT_MAX 65536u /* bytes of one format file */

static bool kmap_name_ok(const char *s, size_t max)
{
	size_t i, n = strlen(s);

	if (!n || n >= max || s[0] == '.')
		return false;
	for (i = 0; i < n; i++)
		if (!(s[i] == '_' || s[i] == '-' || s[i] == '.' ||
		      (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
	return true;
}

/* The "ID: N" line: its offset and length in @text, and N. */
static int kmap_id_line(const char *text, size_t len, size_t *at, size_t *llen,
			uint32_t *id)
{
	size_t p = 0;

	while (p < len) {
		const char *nl = memchr(text + p, '\n', len - p);
		size_t n = nl ? (size_t)(nl - (text + p)) : len - p;

		if (n >= 3 && !memcmp(text + p, "ID:", 3)) {
			size_t i = p + 3, end = p + n;
			uint32_t v = 0;
			bool digits = false;

			while (i < end && (text[i] == ' ' || text[i] == '\t'))
				i++;
			for (; i < end && text[i] >= '0' && text[i] <= '9';
			     i++) {
				v = v * 10 + (uint32_t)(text[i] - '0');
				digits = true;
				if (v > 0xffff)
					return -ERANGE;
			}
			while (i < end && (text[i] == ' ' || text[i] == '\t' ||
					   text[i] == '\r'))
				i++;
			if (!digits || i != end)
				return -EINVAL;
			*at = p;
			*llen = n;
			*id = v;
			return 0;
		}
		p += n + 1;
	}
	return -ENOENT;
}

struct fz_kmap *fz_kmap_new(void)
{
	return calloc(1, sizeof(struct fz_kmap));
}

void fz_kmap_free(struct fz_kmap *m)
{
	unsigned int i;

	if (!m)
		return;
	for (i = 0; i < m->nev; i++)
		free(m->ev[i].format);
	free(m->ev);
	free(m);
}

/* @enabled: the instance's events in the kernel's syntax (NULL: not known). */
static int kmap_enabled(const char *enabled, const char *system,
			const char *name)
{
	const char *p = enabled;
	size_t sl = strlen(system), nl = strlen(name);

	if (!enabled)
		return -1;
	while (*p) {
		size_t n = strcspn(p, ",");

		if ((n == sl && !strncmp(p, system, sl)) ||
		    (n == sl + 1 + nl && !strncmp(p, system, sl) &&
		     p[sl] == ':' && !strncmp(p + sl + 1, name, nl)))
			return 1;
		p += n;
		if (*p)
			p++;
	}
	return 0;
}

int fz_kmap_add(struct fz_kmap *m, const char *system, const char *name,
		const char *format, size_t len, const char *enabled)
{
	struct fz_kev *e;
	size_t at, llen;
	uint32_t id;
	int ret;

	if (!kmap_name_ok(system, sizeof(e->system)) ||
	    !kmap_name_ok(name, sizeof(e->name)))
		return -EINVAL;
	if (!len || len > KMAP_FORMAT_MAX || memchr(format, '\0', len))
		return -EINVAL;
	ret = kmap_id_line(format, len, &at, &llen, &id);
	if (ret)
		return ret;
	if (m->slot[id] || m->nev >= FZ_KMAP_MAX)
		return -EEXIST; /* two formats with one id: trust neither */
	if (m->nev == m->cap) {
		unsigned int cap = m->cap ? m->cap * 2 : 64;
		struct fz_kev *v = realloc(m->ev, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->ev = v;
		m->cap = cap;
	}
	e = &m->ev[m->nev];
	memset(e, 0, sizeof(*e));
	e->format = malloc(len + 1);
	if (!e->format)
		return -ENOMEM;
	memcpy(e->format, format, len);
	e->format[len] = '\0';
	e->len = len;
	e->id_at = at;
	e->id_len = llen;
	snprintf(e->system, sizeof(e->system), "%s", system);
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->kid = (uint16_t)id;
	e->enabled = kmap_enabled(enabled, system, name);
	m->slot[id] = (uint16_t)(m->nev + 1);
	m->nev++;
	return 0;
}

char *fz_kmap_slurp(const char *path, size_t max, size_t *len)
{
	struct stat st;
	char *buf;
	size_t n;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		return NULL;
	}
	buf = malloc(max + 1);
	n = buf ? fread(buf, 1, max + 1, f) : 0;
	fclose(f);
	if (!buf || n > max) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

int fz_kmap_load(struct fz_kmap *m, const char *dir, const char *enabled)
{
	char path[4096];
	struct dirent *se, *ee;
	DIR *sd, *ed;
	int n = 0;

	snprintf(path, sizeof(path), "%s/events", dir);
	sd = opendir(path);
	if (!sd)
		return -errno;
	while ((se = readdir(sd))) {
		if (!kmap_name_ok(se->d_name, sizeof(m->ev->system)))
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", dir, se->d_name);
		ed = opendir(path);
		while (ed && (ee = readdir(ed))) {
			char *text;
			size_t len;

			if (!kmap_name_ok(ee->d_name, sizeof(m->ev->name)) ||
			    snprintf(path, sizeof(path),
				     "%s/events/%s/%s/format", dir, se->d_name,
				     ee->d_name) >= (int)sizeof(path))
				continue;
			text = fz_kmap_slurp(path, KMAP_FORMAT_MAX, &len);
			if (text && !fz_kmap_add(m, se->d_name, ee->d_name,
						 text, len, enabled))
				n++;
			free(text);
		}
		if (ed)
			closedir(ed);
	}
	closedir(sd);
	return n ? 0 : -ENOENT;
}

static bool kmap_take(uint8_t *taken, uint32_t id)
{
	if (id >= FZ_KMAP_ID_LIMIT || (taken[id / 8] & (1u << (id % 8))))
		return false;
	taken[id / 8] |= (uint8_t)(1u << (id % 8));
	return true;
}

void fz_kmap_assign(struct fz_kmap *m, const uint32_t *ids, unsigned int n)
{
	uint8_t *taken = calloc(FZ_KMAP_ID_LIMIT / 8, 1);
	uint32_t next = FZ_KMAP_ID_LIMIT;
	unsigned int i;

	if (!taken) {
		/* Nothing served: every record counts as lost. */
		for (i = 0; i < m->nev; i++)
			m->ev[i].served = false;
		return;
	}
	for (i = 0; i < n; i++)
		if (ids[i] < FZ_KMAP_ID_LIMIT)
			taken[ids[i] / 8] |= (uint8_t)(1u << (ids[i] % 8));
	/* An id served before stays while it is free (readers that loaded
	 * the formats keep decoding), else the event's own id... */
	for (i = 0; i < m->nev; i++)
		m->ev[i].served =
			m->ev[i].served && kmap_take(taken, m->ev[i].id);
	for (i = 0; i < m->nev; i++) {
		struct fz_kev *e = &m->ev[i];

		if (!e->served && kmap_take(taken, e->kid)) {
			e->id = e->kid;
			e->served = true;
		}
	}
	/* ...then the highest free one. */
	for (i = 0; i < m->nev; i++) {
		struct fz_kev *e = &m->ev[i];

		while (!e->served && next > 1)
			if (kmap_take(taken, --next)) {
				e->id = (uint16_t)next;
				e->served = true;
			}
		/* None left (ids 1..0x7fff all taken): not served. */
	}
	free(taken);
}

int fz_kmap_keep(const struct fz_kmap *m, const uint8_t *rec, uint32_t len)
{
	uint16_t type;
	unsigned int s;

	if (len < FZ_KMAP_COMMON_SIZE)
		return -1;
	memcpy(&type, rec, sizeof(type));
	s = m->slot[type];
	if (!s || s > m->nev)
		return -1;
	return (int)(s - 1);
}

int fz_kmap_rewrite(const struct fz_kmap *m, uint8_t *rec, uint32_t len)
{
	int i = fz_kmap_keep(m, rec, len);
	uint16_t id;

	if (i < 0 || !m->ev[i].served)
		return -1;
	id = m->ev[i].id;
	memcpy(rec, &id, sizeof(id));
	return 0;
}

char *fz_kmap_format(const struct fz_kev *e)
{
	char line[16];
	size_t ln;
	char *out;

	ln = (size_t)snprintf(line, sizeof(line), "ID: %u", e->id);
	out = malloc(e->len - e->id_len + ln + 1);
	if (!out)
		return NULL;
	memcpy(out, e->format, e->id_at);
	memcpy(out + e->id_at, line, ln);
	memcpy(out + e->id_at + ln, e->format + e->id_at + e->id_len,
	       e->len - e->id_at - e->id_len);
	out[e->len - e->id_len + ln] = '\0';
	return out;
}
