// SPDX-License-Identifier: MIT
/*
 * libhvtrace: reading trace.dat files (versions 6 and 7, uncompressed).
 *
 * A trace.dat may come from anywhere, so the whole file is untrusted:
 *
 *   - every offset and size is checked against the file before a read,
 *     section bodies are bounded by their section, strings by their field;
 *   - the options chain (v7) is followed at most a fixed number of times
 *     and never to an offset it has visited;
 *   - every page is copied, its commit size bounded by the page, and its
 *     events walked with the bounded walker (<hvtrace/page.h>) before
 *     libtraceevent's kbuffer sees it; a page that fails is skipped and
 *     counted in hvtrace_tracedat_errors();
 *   - records are handed to libtraceevent from a scratch area with zeroed
 *     slack after them, and events whose format places a field beyond
 *     64 KiB are printed raw, so a hostile format cannot make the printer
 *     read outside it (a __data_loc offset and length are 16 bits each).
 *
 * Output follows trace-cmd report: "cpus=N", then one line per event,
 * merged by timestamp over all buffers and CPUs (ties: lower buffer, then
 * lower CPU), prefixed by the buffer's name when the file has buffers
 * besides the top-level one.
 *
 * This file opens and closes a file, walks the sections of v6 and v7
 * files and checks what they declare; read_meta.c reads the metadata and
 * options, read_sandbox.c tries libtraceevent's parsers in a child,
 * read_events.c reads and prints the events.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event-parse.h>
#include <kbuffer.h>

#include "rw-local.h"

static int rd_section_header(struct hvtrace_tracedat_file *f, uint64_t off,
			     uint16_t want, struct rd_cur *body)
{
	struct rd_cur c = {f, off, f->file_size};
	uint16_t id, flags;
	uint32_t str;
	uint64_t size;
	int ret;

	ret = cur_u16(&c, &id);
	if (!ret)
		ret = cur_u16(&c, &flags);
	if (!ret)
		ret = cur_u32(&c, &str);
	if (!ret)
		ret = cur_u64(&c, &size);
	if (ret)
		return ret;
	if (id != want)
		return -EBADMSG;
	if (flags & HVT_TDAT_SEC_COMPRESS)
		return -ENOTSUP;
	if (size > f->file_size - c.pos)
		return -EBADMSG;
	body->f = f;
	body->pos = c.pos;
	body->end = c.pos + size;
	return 0;
}

static int rd_v7(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	static int (*const load[6])(struct hvtrace_tracedat_file *,
				    struct rd_cur *) = {
		rd_header_info, rd_ftrace_formats, rd_event_formats,
		rd_kallsyms,	rd_printk,	   rd_cmdlines,
	};
	uint64_t visited[64], next;
	char comp[64], ver[64];
	unsigned int n = 0, i;
	int ret;

	ret = cur_str(c, comp, sizeof(comp));
	if (!ret)
		ret = cur_str(c, ver, sizeof(ver));
	if (ret)
		return ret;
	if (strcmp(comp, "none"))
		return hvt_err(-ENOTSUP,
			       "%s is compressed (%s): hvtrace report reads "
			       "uncompressed files; convert it with "
			       "'trace-cmd convert --compression none -i %s "
			       "-o OUT'",
			       f->path, comp, f->path);
	ret = cur_u64(c, &next);
	while (!ret && next) {
		struct rd_cur body;

		for (i = 0; i < n && i < 64; i++)
			if (visited[i] == next)
				return -EBADMSG; /* a loop */
		if (n >= RD_MAX_OPT_SECTIONS)
			return -EBADMSG;
		if (n < 64)
			visited[n] = next;
		n++;
		ret = rd_section_header(f, next, HVT_TDAT_OPT_DONE, &body);
		if (!ret)
			ret = rd_options(f, &body, &next);
	}
	for (i = 0; !ret && i < 6; i++) {
		struct rd_cur body;

		if (!f->sec_off[i])
			continue;
		ret = rd_section_header(
			f, f->sec_off[i],
			(uint16_t)(HVT_TDAT_OPT_HEADER_INFO + i), &body);
		if (!ret)
			ret = load[i](f, &body);
	}
	if (ret)
		return ret;
	if (!f->buf[0].name) {
		/* No top-level BUFFER option: an empty top-level buffer. */
		f->buf[0].name = strdup("");
		f->buf[0].clock = strdup("local");
		f->buf[0].page_size = f->page_size;
		if (!f->buf[0].name || !f->buf[0].clock)
			return -ENOMEM;
	}
	/* Each buffer's flyrecord section must be where its option says. */
	for (i = 0; i < f->nr_buf; i++) {
		struct rd_buffer *b = &f->buf[i];
		struct rd_cur body;

		if (b->latency || !b->nr_cpus)
			continue;
		ret = rd_section_header(f, b->section_off, HVT_TDAT_OPT_BUFFER,
					&body);
		if (ret)
			return ret;
	}
	return 0;
}

static int rd_v6(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	char kind[10];
	uint32_t cpus, i;
	uint64_t next;
	int ret;

	ret = rd_header_info(f, c);
	if (!ret)
		ret = rd_ftrace_formats(f, c);
	if (!ret)
		ret = rd_event_formats(f, c);
	if (!ret)
		ret = rd_kallsyms(f, c);
	if (!ret)
		ret = rd_printk(f, c);
	if (!ret)
		ret = rd_cmdlines(f, c);
	if (!ret)
		ret = cur_u32(c, &cpus);
	if (!ret)
		ret = cur_read(c, kind, 10);
	if (ret)
		return ret;
	if (cpus > RD_MAX_CPUS)
		return -EBADMSG;
	if (!memcmp(kind, "options  ", 10)) {
		ret = rd_options(f, c, &next);
		if (!ret)
			ret = cur_read(c, kind, 10);
		if (ret)
			return ret;
	}
	if (memcmp(kind, "flyrecord", 10))
		return hvt_err(-ENOTSUP,
			       "%s holds a latency trace, which "
			       "hvtrace report does not read",
			       f->path);
	/* Top-level buffer: CPU offsets follow here; buffers repeat the
	 * "options"/"flyrecord" block at their offset with the same CPUs. */
	for (i = 0; i < f->nr_buf; i++) {
		struct rd_buffer *b = i ? &f->buf[i] : NULL;
		struct rd_cur bc = *c;
		uint32_t k;

		if (!b) {
			if (!f->buf[0].name) {
				f->buf[0].name = strdup("");
				if (!f->buf[0].name)
					return -ENOMEM;
			}
			b = &f->buf[0];
		} else {
			bc.pos = b->section_off;
			bc.end = f->file_size;
			ret = cur_read(&bc, kind, 10);
			if (!ret && !memcmp(kind, "options  ", 10)) {
				ret = rd_options(f, &bc, &next);
				if (!ret)
					ret = cur_read(&bc, kind, 10);
			}
			if (ret || memcmp(kind, "flyrecord", 10))
				return -EBADMSG;
		}
		b->nr_cpus = cpus;
		b->page_size = f->page_size;
		if (!b->clock) {
			b->clock = strdup("local");
			if (!b->clock)
				return -ENOMEM;
		}
		b->cpu = calloc(cpus ? cpus : 1, sizeof(*b->cpu));
		if (!b->cpu)
			return -ENOMEM;
		for (k = 0; k < cpus; k++) {
			ret = cur_u64(&bc, &b->cpu[k].off);
			if (!ret)
				ret = cur_u64(&bc, &b->cpu[k].size);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* The clock of the top-level buffer from TRACECLOCK: "[mono]" etc. */
static void rd_trace_clock(struct hvtrace_tracedat_file *f)
{
	const char *b, *e;

	if (!f->trace_clock)
		return;
	b = strchr(f->trace_clock, '[');
	e = b ? strchr(b, ']') : NULL;
	if (b && e && e - b < 64 && f->version < 7) {
		free(f->buf[0].clock);
		f->buf[0].clock = strndup(b + 1, (size_t)(e - b - 1));
	}
}

/* Buffers and CPUs must describe whole pages inside the file. */
static int rd_check_buffers(struct hvtrace_tracedat_file *f)
{
	unsigned int i, c;

	for (i = 0; i < f->nr_buf; i++) {
		struct rd_buffer *b = &f->buf[i];

		if (b->latency)
			continue;
		if (b->nr_cpus &&
		    (b->page_size < 4096 || b->page_size > 65536 ||
		     (b->page_size & (b->page_size - 1))))
			return hvt_err(-EBADMSG,
				       "%s: buffer '%s' has a bad page size %u",
				       f->path, b->name, b->page_size);
		for (c = 0; c < b->nr_cpus; c++) {
			struct rd_cpu *p = &b->cpu[c];

			p->next = p->off;
			if (!p->size)
				continue;
			if (p->off > f->file_size ||
			    p->size > f->file_size - p->off)
				return hvt_err(-EBADMSG,
					       "%s: buffer '%s' CPU %u data "
					       "[%llu, +%llu) is outside the "
					       "file (truncated?)",
					       f->path, b->name, c,
					       (unsigned long long)p->off,
					       (unsigned long long)p->size);
			p->next = p->off;
		}
	}
	return 0;
}

/* Events whose static fields reach past the limit print raw. */
static void rd_check_formats(struct hvtrace_tracedat_file *f)
{
	struct tep_event **ev = tep_list_events(f->tep, TEP_EVENT_SORT_ID);
	unsigned int i;

	for (i = 0; ev && ev[i]; i++) {
		struct tep_format_field *fl;
		int id = ev[i]->id;

		if (id < 0 || id > 0xffff)
			continue;
		for (fl = ev[i]->format.fields; fl; fl = fl->next) {
			if (fl->offset < 0 || fl->size < 0 ||
			    (uint64_t)fl->offset + (uint64_t)fl->size >
				    RD_FIELD_LIMIT) {
				f->bad_ids[id] = 1;
				continue;
			}
			if ((uint32_t)(fl->offset + fl->size) > f->min_size[id])
				f->min_size[id] =
					(uint32_t)(fl->offset + fl->size);
		}
		for (fl = ev[i]->format.common_fields; fl; fl = fl->next)
			if (fl->offset < 0 || fl->size < 0 ||
			    (uint64_t)fl->offset + (uint64_t)fl->size >
				    RD_FIELD_LIMIT)
				f->bad_ids[id] = 1;
	}
}

/*
 * A file that does not open may be a recording that was never finished
 * (killed: SIGKILL, the OOM killer, a power cut): its journal beside it
 * holds what was recorded.  Say so, and how to get the file, instead of
 * what is wrong with the bytes.
 */
static int rd_unfinished(const char *path, int ret)
{
	switch (hvtrace_tracedat_unfinished(path)) {
	case 1:
		return hvt_err(ret,
			       "%s: the recording was not finished (hvtrace "
			       "record was killed before it wrote the file); "
			       "what it recorded is in %s%s: recover it with "
			       "'hvtrace record --recover %s'",
			       path, path, HVT_TDAT_JOURNAL_SUFFIX, path);
	case 2:
		return hvt_err(ret,
			       "%s is still being recorded (hvtrace record "
			       "writes it when it stops: Ctrl-C or SIGTERM)",
			       path);
	}
	return ret;
}

HVTRACE_API int hvtrace_tracedat_open(const char *path,
				      struct hvtrace_tracedat_file **out)
{
	struct hvtrace_tracedat_file *f;
	struct rd_cur c;
	struct stat st;
	uint8_t magic[HVT_TDAT_MAGIC_LEN], hdr[6];
	char ver[16];
	unsigned int i;
	const char *base;
	int ret;

	if (!path || !out)
		return hvt_err(-EINVAL, "hvtrace_tracedat_open: no path");
	f = calloc(1, sizeof(*f));
	if (!f)
		return hvt_err(-ENOMEM, "out of memory");
	f->fd = -1;
	f->path = strdup(path);
	base = strrchr(path, '/');
	f->base_name = strdup(base ? base + 1 : path);
	f->buf = calloc(RD_MAX_BUFFERS, sizeof(*f->buf));
	f->scratch = calloc(1, RD_SCRATCH);
	f->bad_ids = calloc(65536, 1);
	f->min_size = calloc(65536, sizeof(*f->min_size));
	f->nr_buf = 1;
	if (!f->path || !f->base_name || !f->buf || !f->scratch ||
	    !f->bad_ids || !f->min_size) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto fail;
	}
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		ret = hvt_err(-errno, "cannot open %s: %s", path,
			      strerror(errno));
		goto fail;
	}
	if (fstat(f->fd, &st) || !S_ISREG(st.st_mode)) {
		ret = hvt_err(-EINVAL, "%s is not a regular file", path);
		goto fail;
	}
	f->file_size = (uint64_t)st.st_size;
	c.f = f;
	c.pos = 0;
	c.end = f->file_size;
	ret = cur_read(&c, magic, sizeof(magic));
	if (ret || memcmp(magic, HVT_TDAT_MAGIC, HVT_TDAT_MAGIC_LEN)) {
		ret = hvt_err(-EINVAL,
			      "%s is not a trace.dat file (no "
			      "trace-cmd magic)",
			      path);
		goto fail;
	}
	ret = cur_str(&c, ver, sizeof(ver));
	if (!ret)
		ret = cur_read(&c, hdr, 6);
	if (ret) {
		ret = hvt_err(-EBADMSG, "%s: truncated header", path);
		goto fail;
	}
	f->version = atoi(ver);
	if (f->version < 6 || f->version > 7) {
		ret = hvt_err(-ENOTSUP,
			      "%s: trace.dat version '%s' is not supported "
			      "(6 and 7 are)",
			      path, ver);
		goto fail;
	}
	f->long_size = hdr[1];
	f->page_size = rd_le32(hdr + 2);
	if (hdr[0] != 0 || f->long_size != 8) {
		ret = hvt_err(-ENOTSUP,
			      "%s was recorded on a %s-endian machine with "
			      "%u-byte longs; hvtrace report reads 64-bit "
			      "little-endian files (use trace-cmd report)",
			      path, hdr[0] ? "big" : "little", f->long_size);
		goto fail;
	}
	f->tep = tep_alloc();
	if (!f->tep) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto fail;
	}
	tep_set_file_bigendian(f->tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(f->tep, TEP_LITTLE_ENDIAN);
	tep_set_long_size(f->tep, (int)f->long_size);
	tep_set_page_size(f->tep, (int)f->page_size);
	f->plugins = tep_load_plugins(f->tep);

	ret = f->version >= 7 ? rd_v7(f, &c) : rd_v6(f, &c);
	if (ret) {
		if (ret == -EBADMSG || ret == -ENOMEM)
			hvt_err(ret, "%s: %s", path,
				ret == -ENOMEM ? "out of memory"
					       : "malformed trace.dat metadata "
						 "(truncated or corrupt file)");
		goto fail;
	}
	rd_sandbox(f);
	rd_trace_clock(f);
	ret = rd_check_buffers(f);
	if (ret)
		goto fail;
	if (f->cpucount)
		tep_set_cpus(f->tep, (int)f->cpucount);
	rd_check_formats(f);
	for (i = 1; i < f->nr_buf; i++) {
		int w = (int)strlen(f->buf[i].name);

		if (w > f->name_width)
			f->name_width = w;
	}
	*out = f;
	return 0;
fail:
	hvtrace_tracedat_close(f);
	return rd_unfinished(path, ret);
}

HVTRACE_API void hvtrace_tracedat_close(struct hvtrace_tracedat_file *f)
{
	unsigned int i, c;

	if (!f)
		return;
	for (i = 0; f->buf && i < f->nr_buf; i++) {
		struct rd_buffer *b = &f->buf[i];

		for (c = 0; b->cpu && c < b->nr_cpus; c++) {
			free(b->cpu[c].page);
			if (b->cpu[c].kb)
				kbuffer_free(b->cpu[c].kb);
		}
		free(b->cpu);
		free(b->name);
		free(b->clock);
	}
	if (f->tep) {
		if (f->plugins)
			tep_unload_plugins(f->plugins, f->tep);
		tep_free(f->tep);
	}
	hvtrace_ksyms_free(f->ksyms);
	if (f->fd >= 0)
		close(f->fd);
	for (i = 0; i < f->nr_ops; i++)
		free(f->ops[i].text);
	free(f->ops);
	free(f->buf);
	free(f->scratch);
	free(f->bad_ids);
	free(f->min_size);
	free(f->cpustats);
	free(f->uname);
	rd_tsync_free(f);
	free(f->trace_clock);
	free(f->path);
	free(f->base_name);
	free(f);
}

HVTRACE_API struct tep_handle *
hvtrace_tracedat_tep(const struct hvtrace_tracedat_file *f)
{
	return f ? f->tep : NULL;
}

HVTRACE_API int hvtrace_tracedat_version(const struct hvtrace_tracedat_file *f)
{
	return f ? f->version : -EINVAL;
}

HVTRACE_API unsigned int
hvtrace_tracedat_nr_buffers(const struct hvtrace_tracedat_file *f)
{
	return f ? f->nr_buf : 0;
}

HVTRACE_API const char *
hvtrace_tracedat_buffer_name(const struct hvtrace_tracedat_file *f,
			     unsigned int i)
{
	return f && i < f->nr_buf ? f->buf[i].name : NULL;
}

HVTRACE_API unsigned int
hvtrace_tracedat_buffer_cpus(const struct hvtrace_tracedat_file *f,
			     unsigned int i)
{
	return f && i < f->nr_buf ? f->buf[i].nr_cpus : 0;
}

HVTRACE_API const char *
hvtrace_tracedat_buffer_clock(const struct hvtrace_tracedat_file *f,
			      unsigned int i)
{
	return f && i < f->nr_buf ? f->buf[i].clock : NULL;
}

HVTRACE_API const char *
hvtrace_tracedat_cpustats(const struct hvtrace_tracedat_file *f)
{
	return f ? f->cpustats : NULL;
}

HVTRACE_API uint64_t
hvtrace_tracedat_errors(const struct hvtrace_tracedat_file *f)
{
	return f ? f->errors : 0;
}
