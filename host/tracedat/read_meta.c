// SPDX-License-Identifier: MIT
/*
 * libhvtrace: bounded reads of a trace.dat file and its metadata.
 *
 * One job: get the file's header texts (header_page, formats, kallsyms,
 * printk, cmdlines) and options (buffers, clocks, uname, cpustats, ...)
 * out of an untrusted file.  Every offset and size is checked against
 * the file before a read, section bodies are bounded by their section,
 * strings by their field, and the options chain is followed a bounded
 * number of times.  The sections of v6 and v7 files are walked in read.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace/page.h>

#include "rw-local.h"

/* --- bounded file access ---------------------------------------------- */

int rd_at(struct hvtrace_tracedat_file *f, uint64_t off, void *buf, size_t len)
{
	size_t done = 0;
	ssize_t r;

	if (off > f->file_size || len > f->file_size - off)
		return -EBADMSG;
	while (done < len) {
		r = pread(f->fd, (char *)buf + done, len - done,
			  (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EBADMSG;
		done += (size_t)r;
	}
	return 0;
}

static uint16_t rd_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t rd_le32(const uint8_t *p)
{
	return hvt_rd32(p);
}

uint64_t rd_le64(const uint8_t *p)
{
	return hvt_rd64(p);
}

int cur_read(struct rd_cur *c, void *buf, size_t len)
{
	int ret;

	if (c->pos > c->end || len > c->end - c->pos)
		return -EBADMSG;
	ret = rd_at(c->f, c->pos, buf, len);
	if (!ret)
		c->pos += len;
	return ret;
}

int cur_u16(struct rd_cur *c, uint16_t *v)
{
	uint8_t b[2];
	int ret = cur_read(c, b, 2);

	if (!ret)
		*v = rd_le16(b);
	return ret;
}

int cur_u32(struct rd_cur *c, uint32_t *v)
{
	uint8_t b[4];
	int ret = cur_read(c, b, 4);

	if (!ret)
		*v = rd_le32(b);
	return ret;
}

int cur_u64(struct rd_cur *c, uint64_t *v)
{
	uint8_t b[8];
	int ret = cur_read(c, b, 8);

	if (!ret)
		*v = rd_le64(b);
	return ret;
}

/* A NUL-terminated string of at most @max bytes. */
int cur_str(struct rd_cur *c, char *buf, size_t max)
{
	size_t i;
	int ret;

	for (i = 0; i < max; i++) {
		ret = cur_read(c, &buf[i], 1);
		if (ret)
			return ret;
		if (!buf[i])
			return 0;
	}
	return -EBADMSG;
}

/* @len bytes as a fresh NUL-terminated allocation. */
static int cur_text(struct rd_cur *c, uint64_t len, char **out)
{
	char *p;
	int ret;

	if (len > RD_MAX_TEXT || c->pos > c->end || len > c->end - c->pos)
		return -EBADMSG;
	p = malloc(len + 1);
	if (!p)
		return -ENOMEM;
	ret = cur_read(c, p, len);
	if (ret) {
		free(p);
		return ret;
	}
	p[len] = '\0';
	*out = p;
	return 0;
}

/* --- metadata
 * ----------------------------------------------------------------- */

int rd_header_info(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	char name[16];
	uint64_t len;
	char *text = NULL;
	int ret;

	ret = cur_str(c, name, sizeof(name));
	if (ret || strcmp(name, "header_page"))
		return -EBADMSG;
	ret = cur_u64(c, &len);
	if (!ret)
		ret = cur_text(c, len, &text);
	if (ret)
		return ret;
	if (len)
		ret = rd_op_add(f, HVT_TEP_HEADER_PAGE, NULL, text, len);
	else
		free(text);
	if (ret)
		return ret;
	ret = cur_str(c, name, sizeof(name));
	if (ret || strcmp(name, "header_event"))
		return -EBADMSG;
	ret = cur_u64(c, &len);
	if (!ret)
		ret = cur_text(c, len, &text);
	if (!ret)
		free(text);
	return ret;
}

static int rd_one_format(struct hvtrace_tracedat_file *f, struct rd_cur *c,
			 const char *system)
{
	uint64_t len;
	char *text;
	int ret;

	ret = cur_u64(c, &len);
	if (!ret)
		ret = cur_text(c, len, &text);
	if (ret)
		return ret;
	return rd_op_add(f, HVT_TEP_FORMAT, system, text, len);
}

int rd_ftrace_formats(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	uint32_t n, i;
	int ret;

	ret = cur_u32(c, &n);
	for (i = 0; !ret && i < n; i++)
		ret = rd_one_format(f, c, "ftrace");
	return ret;
}

int rd_event_formats(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	uint32_t nsys, n, i, j;
	char sys[256];
	int ret;

	ret = cur_u32(c, &nsys);
	for (i = 0; !ret && i < nsys; i++) {
		ret = cur_str(c, sys, sizeof(sys));
		if (!ret)
			ret = cur_u32(c, &n);
		for (j = 0; !ret && j < n; j++)
			ret = rd_one_format(f, c, sys);
	}
	return ret;
}

static int rd_sized_text(struct rd_cur *c, bool wide, char **out)
{
	uint32_t n32;
	uint64_t n;
	int ret;

	if (wide) {
		ret = cur_u64(c, &n);
	} else {
		ret = cur_u32(c, &n32);
		n = n32;
	}
	if (!ret)
		ret = cur_text(c, n, out);
	return ret;
}

/* A sized text (kallsyms, printk formats, cmdlines) queued as @kind. */
static int rd_text_op(struct hvtrace_tracedat_file *f, struct rd_cur *c,
		      bool wide, enum hvt_tep_text_kind kind)
{
	char *t = NULL;
	int ret = rd_sized_text(c, wide, &t);

	if (!ret && *t)
		return rd_op_add(f, kind, NULL, t, strlen(t));
	free(t);
	return ret;
}

int rd_kallsyms(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	return rd_text_op(f, c, false, HVT_TEP_KALLSYMS);
}

int rd_printk(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	return rd_text_op(f, c, false, HVT_TEP_PRINTK);
}

int rd_cmdlines(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	return rd_text_op(f, c, true, HVT_TEP_CMDLINES);
}

/* --- options
 * ------------------------------------------------------------------ */

static int rd_add_buffer(struct hvtrace_tracedat_file *f, const char *name,
			 struct rd_buffer **out)
{
	struct rd_buffer *b;
	unsigned int i;

	/* The top-level buffer is always buf[0]. */
	if (!*name) {
		b = &f->buf[0];
		if (b->name)
			return -EBADMSG; /* two top-level buffers */
	} else {
		for (i = 1; i < f->nr_buf; i++)
			if (!strcmp(f->buf[i].name, name))
				return -EBADMSG;
		if (f->nr_buf >= RD_MAX_BUFFERS)
			return -EBADMSG;
		b = &f->buf[f->nr_buf++];
	}
	b->name = strdup(name);
	if (!b->name)
		return -ENOMEM;
	*out = b;
	return 0;
}

/* v7 BUFFER option. */
static int rd_opt_buffer(struct hvtrace_tracedat_file *f, struct rd_cur *c,
			 bool latency)
{
	char name[256], clock[64];
	struct rd_buffer *b;
	uint64_t off;
	uint32_t i, cpu;
	int ret;

	ret = cur_u64(c, &off);
	if (!ret)
		ret = cur_str(c, name, sizeof(name));
	if (f->version < 7) {
		if (ret)
			return ret;
		ret = rd_add_buffer(f, name, &b);
		if (!ret)
			b->section_off = off;
		return ret;
	}
	if (!ret)
		ret = cur_str(c, clock, sizeof(clock));
	if (ret)
		return ret;
	ret = rd_add_buffer(f, name, &b);
	if (ret)
		return ret;
	b->section_off = off;
	b->clock = strdup(clock);
	if (!b->clock)
		return -ENOMEM;
	if (latency) {
		b->latency = true;
		return 0;
	}
	ret = cur_u32(c, &b->page_size);
	if (!ret)
		ret = cur_u32(c, &b->nr_cpus);
	if (ret)
		return ret;
	if (b->nr_cpus > RD_MAX_CPUS)
		return -EBADMSG;
	b->cpu = calloc(b->nr_cpus ? b->nr_cpus : 1, sizeof(*b->cpu));
	if (!b->cpu)
		return -ENOMEM;
	for (i = 0; i < b->nr_cpus; i++) {
		ret = cur_u32(c, &cpu);
		if (ret)
			return ret;
		/* CPUs are listed in order; anything else is not ours to
		 * guess at. */
		if (cpu != i)
			return -EBADMSG;
		ret = cur_u64(c, &b->cpu[i].off);
		if (!ret)
			ret = cur_u64(c, &b->cpu[i].size);
		if (ret)
			return ret;
	}
	return 0;
}

static void rd_opt_text(char **dst, const uint8_t *p, uint32_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		return;
	memcpy(s, p, len);
	s[len] = '\0';
	free(*dst);
	*dst = s;
}

/* One options section (v7) or the options list (v6). */
int rd_options(struct hvtrace_tracedat_file *f, struct rd_cur *c,
	       uint64_t *next)
{
	uint8_t *data;
	uint16_t id;
	uint32_t len;
	int ret;

	*next = 0;
	for (;;) {
		ret = cur_u16(c, &id);
		if (ret)
			return ret;
		if (f->version < 7 && id == HVT_TDAT_OPT_DONE)
			return 0;
		ret = cur_u32(c, &len);
		if (ret)
			return ret;
		if (len > RD_MAX_OPTION)
			return -EBADMSG;
		data = malloc(len + 1);
		if (!data)
			return -ENOMEM;
		ret = cur_read(c, data, len);
		if (ret) {
			free(data);
			return ret;
		}
		data[len] = 0;
		switch (id) {
		case HVT_TDAT_OPT_DONE:
			if (len >= 8)
				*next = rd_le64(data);
			free(data);
			return len >= 8 ? 0 : -EBADMSG;
		case HVT_TDAT_OPT_BUFFER:
		case HVT_TDAT_OPT_BUFFER_TEXT: {
			struct rd_cur oc = {f, c->pos - len, c->pos};

			ret = rd_opt_buffer(f, &oc,
					    id == HVT_TDAT_OPT_BUFFER_TEXT);
			break;
		}
		case HVT_TDAT_OPT_CPUSTAT: {
			/* As trace-cmd: the text with its last byte (the
			 * NUL) made a newline. */
			size_t n = len;
			char *s = realloc(f->cpustats, f->cpustats_len + n + 2);

			if (!s) {
				ret = -ENOMEM;
				break;
			}
			memcpy(s + f->cpustats_len, data, n);
			if (n)
				s[f->cpustats_len + n - 1] = '\n';
			for (size_t k = 0; k < n; k++)
				if (!s[f->cpustats_len + k])
					s[f->cpustats_len + k] = ' ';
			f->cpustats_len += n;
			s[f->cpustats_len] = '\0';
			f->cpustats = s;
			break;
		}
		case HVT_TDAT_OPT_TIME_SHIFT:
			/* A damaged one: counted, the times left as they
			 * are. */
			ret = rd_time_shift(f, data, len);
			if (ret == -EBADMSG) {
				f->errors++;
				ret = 0;
			}
			break;
		case HVT_TDAT_OPT_TRACECLOCK:
			rd_opt_text(&f->trace_clock, data, len);
			break;
		case HVT_TDAT_OPT_UNAME:
			rd_opt_text(&f->uname, data, len);
			break;
		case HVT_TDAT_OPT_CPUCOUNT:
			if (len >= 4)
				f->cpucount = rd_le32(data);
			break;
		case HVT_TDAT_OPT_OFFSET:
			f->ts_offset += strtoll((char *)data, NULL, 0);
			break;
		case HVT_TDAT_OPT_DATE:
			/* microseconds between the trace clock and gtod */
			f->ts_offset += strtoll((char *)data, NULL, 0) * 1000;
			break;
		case HVT_TDAT_OPT_HEADER_INFO:
		case HVT_TDAT_OPT_FTRACE_EVENTS:
		case HVT_TDAT_OPT_EVENT_FORMATS:
		case HVT_TDAT_OPT_KALLSYMS:
		case HVT_TDAT_OPT_PRINTK:
		case HVT_TDAT_OPT_CMDLINES:
			if (len >= 8)
				f->sec_off[id - HVT_TDAT_OPT_HEADER_INFO] =
					rd_le64(data);
			break;
		default:
			break;
		}
		free(data);
		if (ret)
			return ret;
	}
}
