// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the trace.dat (trace-cmd file format version 7) writer.
 *
 * Pages arrive while recording, interleaved across CPUs, but trace.dat
 * wants each CPU's pages contiguous.  So each (buffer, CPU) appends its
 * pages to an unnamed temporary file next to the output (O_TMPFILE: it
 * vanishes with the process), and _finish() writes the whole file in one
 * pass and copies the page data in with copy_file_range().
 *
 * The layout written by _finish() (every number little-endian):
 *
 *   0      magic 17 08 44 "tracing", "7\0", endian 0, long size 8,
 *          u32 page size, compression "none\0" "\0",
 *          u64 offset of the first options section
 *   32     section 16 HEADER_INFO     "header_page\0" u64 n, text,
 *                                     "header_event\0" u64 n, text
 *          section 17 FTRACE_EVENTS   u32 count, { u64 n, format }...
 *          section 18 EVENT_FORMATS   u32 systems, { "sys\0" u32 count,
 *                                     { u64 n, format }... }...
 *          section 19 KALLSYMS        u32 n, text
 *          section 20 PRINTK          u32 n, text
 *          section 21 CMDLINES        u64 n, "pid comm\n"...
 *          section 0  OPTIONS         the offsets of sections 16..21, the
 *                                     caller's options (TRACECLOCK, UNAME,
 *                                     VERSION, CPUSTAT, CPUCOUNT...),
 *                                     DONE = offset of the next options
 *   for each buffer (the top-level one, name "", first):
 *          section 3  BUFFER FLYRECORD  zero padding up to the buffer's
 *                                     page size, then each CPU's pages
 *          section 0  OPTIONS         BUFFER: u64 offset of the section
 *                                     above, name, clock, u32 page size,
 *                                     u32 cpus, { u32 cpu, u64 offset,
 *                                     u64 size }...; DONE = next or 0
 *          section 15 STRINGS         the section descriptions
 *
 * Every section header is u16 id, u16 flags (0: not compressed), u32
 * string id (offset into the strings section), u64 size; sections follow
 * each other with no gap, because trace-cmd finds the strings section by
 * walking them from the start.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tracedat-local.h"

#define WR_OBUF_SIZE   (256u * 1024)
#define WR_MAX_BUFFERS 256u
#define WR_BATCH_SIZE  (64u * 1024) /* pages written at once, per CPU */

/*
 * One CPU of a buffer.  Its pages gather in @batch and go to the
 * temporary file WR_BATCH_SIZE bytes at a time: one system call per page
 * costs more than the page's copy.  Nothing but the CPU's own state is
 * touched by _add_page(), so callers may add pages of different CPUs
 * from different threads.
 */
struct wr_cpu {
	int fd;	       /* temporary page file, -1 until first write */
	uint64_t size; /* bytes added (in the file and in @batch) */
	uint8_t *batch;
	uint32_t batch_len;
};

struct wr_buffer {
	char *name;
	char *clock;
	uint32_t page_size;
	uint32_t nr_cpus;
	struct wr_cpu *cpu;
	/* computed by _finish() */
	uint64_t section_off;
	uint64_t data_off;
};

struct wr_format {
	char *system;
	char *text;
	size_t len;
};

struct wr_option {
	uint16_t id;
	uint32_t len;
	void *data;
};

struct wr_cmdline {
	int pid;
	char comm[64];
};

struct hvtrace_tracedat_writer {
	int fd;
	char *path;
	char *dir;
	uint32_t page_size;

	struct hvt_tdat_blob header_page;
	struct hvt_tdat_blob header_event;
	struct hvt_tdat_blob kallsyms;
	struct hvt_tdat_blob printk;

	struct wr_format *fmt;
	unsigned int nr_fmt, cap_fmt;
	struct wr_option *opt;
	unsigned int nr_opt, cap_opt;
	struct wr_cmdline *cmd;
	unsigned int nr_cmd, cap_cmd;
	struct wr_buffer *buf;
	unsigned int nr_buf;

	/* output state of _finish() */
	struct hvt_tdat_blob strings;
	uint8_t *obuf;
	size_t olen;
	uint64_t off; /* logical output offset */
	int err;
	bool keep;    /* the file is complete: do not unlink */
	bool created; /* we created or truncated the output */
};

static void *wr_grow(void *arr, unsigned int *cap, unsigned int nr, size_t elem)
{
	unsigned int ncap;
	void *p;

	if (nr < *cap)
		return arr;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(arr, (size_t)ncap * elem);
	if (!p)
		return NULL;
	*cap = ncap;
	return p;
}

static bool wr_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

HVTRACE_API int
hvtrace_tracedat_writer_create(const char *path, uint32_t page_size,
			       struct hvtrace_tracedat_writer **out)
{
	struct hvtrace_tracedat_writer *w;
	char *tmp;
	int ret;

	if (!path || !out)
		return hvt_err(-EINVAL, "tracedat writer: no output path");
	if (!wr_pow2(page_size) || page_size < 4096 || page_size > 65536)
		return hvt_err(-EINVAL,
			       "tracedat writer: page size %u is not a power "
			       "of two between 4096 and 65536",
			       page_size);
	w = calloc(1, sizeof(*w));
	if (!w)
		return hvt_err(-ENOMEM, "out of memory");
	w->page_size = page_size;
	w->path = strdup(path);
	tmp = strdup(path);
	if (!w->path || !tmp) {
		free(tmp);
		ret = hvt_err(-ENOMEM, "out of memory");
		goto fail;
	}
	w->dir = strdup(dirname(tmp));
	free(tmp);
	w->buf = calloc(WR_MAX_BUFFERS, sizeof(*w->buf));
	if (!w->dir || !w->buf) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto fail;
	}
	/* The top-level buffer always exists; it may have no CPUs. */
	w->buf[0].name = strdup("");
	w->buf[0].clock = strdup("local");
	w->buf[0].page_size = page_size;
	w->nr_buf = 1;
	if (!w->buf[0].name || !w->buf[0].clock) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto fail;
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		ret = hvt_err(-errno,
			      "cannot create %s: %s (choose a writable "
			      "output path with -o)",
			      path, strerror(errno));
		w->fd = -1;
		goto fail;
	}
	w->created = true;
	*out = w;
	return 0;
fail:
	w->fd = -1;
	hvtrace_tracedat_writer_abort(w);
	return ret;
}

HVTRACE_API int
hvtrace_tracedat_writer_set_headers(struct hvtrace_tracedat_writer *w,
				    const char *header_page, size_t hp_len,
				    const char *header_event, size_t he_len)
{
	int ret;

	if (!w || !header_page || !header_event)
		return hvt_err(-EINVAL, "tracedat writer: no header text");
	w->header_page.len = 0;
	w->header_event.len = 0;
	ret = hvt_tdat_blob_add(&w->header_page, header_page, hp_len);
	if (!ret)
		ret = hvt_tdat_blob_add(&w->header_event, header_event, he_len);
	return ret ? hvt_err(ret, "out of memory") : 0;
}

HVTRACE_API int
hvtrace_tracedat_writer_add_format(struct hvtrace_tracedat_writer *w,
				   const char *system, const char *text,
				   size_t len)
{
	struct wr_format *f;

	if (!w || !system || !*system || !text)
		return hvt_err(-EINVAL, "tracedat writer: format without a "
					"system name or text");
	if (strlen(system) > 255)
		return hvt_err(-EINVAL,
			       "tracedat writer: system name too long");
	f = wr_grow(w->fmt, &w->cap_fmt, w->nr_fmt, sizeof(*f));
	if (!f)
		return hvt_err(-ENOMEM, "out of memory");
	w->fmt = f;
	f = &w->fmt[w->nr_fmt];
	f->system = strdup(system);
	f->text = malloc(len + 1);
	if (!f->system || !f->text) {
		free(f->system);
		free(f->text);
		return hvt_err(-ENOMEM, "out of memory");
	}
	memcpy(f->text, text, len);
	f->text[len] = '\0';
	f->len = len;
	w->nr_fmt++;
	return 0;
}

HVTRACE_API int
hvtrace_tracedat_writer_set_kallsyms(struct hvtrace_tracedat_writer *w,
				     const char *text, size_t len)
{
	if (!w || (!text && len))
		return hvt_err(-EINVAL, "tracedat writer: bad kallsyms");
	if (len > UINT32_MAX)
		return hvt_err(-EFBIG, "kallsyms larger than 4 GiB");
	w->kallsyms.len = 0;
	return hvt_tdat_blob_add(&w->kallsyms, text, len)
		       ? hvt_err(-ENOMEM, "out of memory")
		       : 0;
}

HVTRACE_API int
hvtrace_tracedat_writer_set_printk(struct hvtrace_tracedat_writer *w,
				   const char *text, size_t len)
{
	if (!w || (!text && len))
		return hvt_err(-EINVAL, "tracedat writer: bad printk formats");
	if (len > UINT32_MAX)
		return hvt_err(-EFBIG, "printk formats larger than 4 GiB");
	w->printk.len = 0;
	return hvt_tdat_blob_add(&w->printk, text, len)
		       ? hvt_err(-ENOMEM, "out of memory")
		       : 0;
}

HVTRACE_API int
hvtrace_tracedat_writer_add_cmdline(struct hvtrace_tracedat_writer *w, int pid,
				    const char *comm)
{
	struct wr_cmdline *c;
	unsigned int i;
	size_t n;

	if (!w || !comm || !*comm)
		return hvt_err(-EINVAL, "tracedat writer: empty comm");
	for (i = 0; i < w->nr_cmd; i++)
		if (w->cmd[i].pid == pid)
			break;
	if (i == w->nr_cmd) {
		c = wr_grow(w->cmd, &w->cap_cmd, w->nr_cmd, sizeof(*c));
		if (!c)
			return hvt_err(-ENOMEM, "out of memory");
		w->cmd = c;
		w->nr_cmd++;
	}
	c = &w->cmd[i];
	c->pid = pid;
	/* One line per pid: no newlines inside the name. */
	for (n = 0; comm[n] && n < sizeof(c->comm) - 1; n++)
		c->comm[n] =
			(comm[n] == '\n' || comm[n] == '\r') ? ' ' : comm[n];
	c->comm[n] = '\0';
	return 0;
}

HVTRACE_API int
hvtrace_tracedat_writer_add_option(struct hvtrace_tracedat_writer *w,
				   uint16_t id, const void *data, uint32_t len)
{
	struct wr_option *o;

	if (!w || (!data && len))
		return hvt_err(-EINVAL, "tracedat writer: bad option");
	switch (id) {
	case HVT_TDAT_OPT_DONE:
	case HVT_TDAT_OPT_BUFFER:
	case HVT_TDAT_OPT_BUFFER_TEXT:
	case HVT_TDAT_OPT_HEADER_INFO:
	case HVT_TDAT_OPT_FTRACE_EVENTS:
	case HVT_TDAT_OPT_EVENT_FORMATS:
	case HVT_TDAT_OPT_KALLSYMS:
	case HVT_TDAT_OPT_PRINTK:
	case HVT_TDAT_OPT_CMDLINES:
	case HVT_TDAT_OPT_STRINGS:
		return hvt_err(-EINVAL,
			       "tracedat writer: option %u is written by the "
			       "writer itself",
			       id);
	}
	o = wr_grow(w->opt, &w->cap_opt, w->nr_opt, sizeof(*o));
	if (!o)
		return hvt_err(-ENOMEM, "out of memory");
	w->opt = o;
	o = &w->opt[w->nr_opt];
	o->id = id;
	o->len = len;
	o->data = malloc(len ? len : 1);
	if (!o->data)
		return hvt_err(-ENOMEM, "out of memory");
	if (len)
		memcpy(o->data, data, len);
	w->nr_opt++;
	return 0;
}

HVTRACE_API int
hvtrace_tracedat_writer_add_buffer(struct hvtrace_tracedat_writer *w,
				   const char *name, const char *clock,
				   uint32_t nr_cpus, uint32_t page_size)
{
	struct wr_buffer *b;
	unsigned int i, idx;

	if (!w || !name || !clock || !*clock)
		return hvt_err(-EINVAL, "tracedat writer: buffer without a "
					"name or clock");
	if (!wr_pow2(page_size) || page_size < 4096 || page_size > 65536)
		return hvt_err(-EINVAL,
			       "buffer '%s': page size %u is not a power of "
			       "two between 4096 and 65536",
			       name, page_size);
	if (nr_cpus > 4096)
		return hvt_err(-EINVAL, "buffer '%s': %u CPUs is too many",
			       name, nr_cpus);
	if (!*name) {
		idx = 0;
		if (w->buf[0].nr_cpus)
			return hvt_err(-EEXIST, "the top-level buffer is "
						"already defined");
		if (page_size != w->page_size)
			return hvt_err(-EINVAL,
				       "the top-level buffer's page size %u "
				       "must be the file's page size %u",
				       page_size, w->page_size);
	} else {
		for (i = 1; i < w->nr_buf; i++)
			if (!strcmp(w->buf[i].name, name))
				return hvt_err(-EEXIST,
					       "two buffers named '%s': give "
					       "each area its own name",
					       name);
		if (strchr(name, '\n') || strlen(name) > 255)
			return hvt_err(-EINVAL, "bad buffer name '%s'", name);
		if (w->nr_buf >= WR_MAX_BUFFERS)
			return hvt_err(-ENOSPC, "more than %u buffers",
				       WR_MAX_BUFFERS);
		idx = w->nr_buf;
	}
	b = &w->buf[idx];
	free(b->name);
	free(b->clock);
	free(b->cpu);
	memset(b, 0, sizeof(*b));
	b->name = strdup(name);
	b->clock = strdup(clock);
	b->cpu = calloc(nr_cpus ? nr_cpus : 1, sizeof(*b->cpu));
	if (!b->name || !b->clock || !b->cpu) {
		free(b->name);
		free(b->clock);
		free(b->cpu);
		memset(b, 0, sizeof(*b));
		if (!idx) {
			b->name = strdup("");
			b->clock = strdup("local");
			b->page_size = w->page_size;
		}
		return hvt_err(-ENOMEM, "out of memory");
	}
	for (i = 0; i < nr_cpus; i++)
		b->cpu[i].fd = -1;
	b->nr_cpus = nr_cpus;
	b->page_size = page_size;
	if (idx == w->nr_buf)
		w->nr_buf++;
	return (int)idx;
}

/* An unnamed temporary file next to the output. */
static int wr_tmpfile(struct hvtrace_tracedat_writer *w)
{
	char tmpl[4096];
	int fd;

	fd = open(w->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	/* Filesystems without O_TMPFILE: create and unlink at once. */
	if (snprintf(tmpl, sizeof(tmpl), "%s/.hvtrace-rec-XXXXXX", w->dir) >=
	    (int)sizeof(tmpl))
		return -ENAMETOOLONG;
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(tmpl);
	return fd;
}

static int wr_write_all(int fd, const struct iovec *iov, int n)
{
	struct iovec v[2];
	ssize_t r;
	int i;

	for (i = 0; i < n && i < 2; i++)
		v[i] = iov[i];
	i = 0;
	while (i < n) {
		r = writev(fd, &v[i], n - i);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (i < n && (size_t)r >= v[i].iov_len) {
			r -= (ssize_t)v[i].iov_len;
			i++;
		}
		if (i < n) {
			v[i].iov_base = (char *)v[i].iov_base + r;
			v[i].iov_len -= (size_t)r;
		}
	}
	return 0;
}

/* The pages gathered for @c into its temporary file. */
static int wr_cpu_flush(struct hvtrace_tracedat_writer *w, struct wr_cpu *c)
{
	struct iovec iov;
	int ret;

	if (!c->batch_len)
		return 0;
	if (c->fd < 0) {
		c->fd = wr_tmpfile(w);
		if (c->fd < 0)
			return hvt_err(c->fd,
				       "cannot create a temporary file in %s: "
				       "%s",
				       w->dir, strerror(-c->fd));
	}
	iov.iov_base = c->batch;
	iov.iov_len = c->batch_len;
	ret = wr_write_all(c->fd, &iov, 1);
	if (ret)
		return hvt_err(ret,
			       "cannot write recorded pages next to %s: %s",
			       w->path, strerror(-ret));
	c->batch_len = 0;
	return 0;
}

HVTRACE_API int
hvtrace_tracedat_writer_add_page(struct hvtrace_tracedat_writer *w, int buffer,
				 uint32_t cpu, const void *page, size_t size)
{
	struct wr_buffer *b;
	struct wr_cpu *c;
	int ret;

	if (!w || !page || buffer < 0 || (unsigned int)buffer >= w->nr_buf)
		return hvt_err(-EINVAL, "tracedat writer: no buffer %d",
			       buffer);
	b = &w->buf[buffer];
	if (cpu >= b->nr_cpus)
		return hvt_err(-EINVAL, "buffer '%s' has no CPU %u", b->name,
			       cpu);
	if (size < HVT_PAGE_HDR_SIZE || size > b->page_size)
		return hvt_err(-EINVAL,
			       "buffer '%s': page of %zu bytes (page size %u)",
			       b->name, size, b->page_size);
	c = &b->cpu[cpu];
	if (!c->batch) {
		/* A page size is at most 64 KiB (HVT_ABI_MAX_SUBBUF_SIZE). */
		c->batch = malloc(WR_BATCH_SIZE > b->page_size ? WR_BATCH_SIZE
							       : b->page_size);
		if (!c->batch)
			return hvt_err(-ENOMEM, "out of memory");
	}
	if (c->batch_len + b->page_size >
	    (WR_BATCH_SIZE > b->page_size ? WR_BATCH_SIZE : b->page_size)) {
		ret = wr_cpu_flush(w, c);
		if (ret)
			return ret;
	}
	/* Every page takes exactly page_size bytes in the file. */
	memcpy(c->batch + c->batch_len, page, size);
	memset(c->batch + c->batch_len + size, 0, b->page_size - size);
	c->batch_len += b->page_size;
	c->size += b->page_size;
	return 0;
}

HVTRACE_API uint64_t
hvtrace_tracedat_writer_data_bytes(const struct hvtrace_tracedat_writer *w)
{
	uint64_t n = 0;
	unsigned int i, j;

	if (!w)
		return 0;
	for (i = 0; i < w->nr_buf; i++)
		for (j = 0; j < w->buf[i].nr_cpus; j++)
			n += w->buf[i].cpu[j].size;
	return n;
}

/* --- _finish(): the output pass ------------------------------------------- */

static int wr_flush(struct hvtrace_tracedat_writer *w)
{
	size_t done = 0;
	ssize_t r;

	while (!w->err && done < w->olen) {
		r = pwrite(w->fd, w->obuf + done, w->olen - done,
			   (off_t)(w->off - w->olen + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			w->err = -errno;
			break;
		}
		done += (size_t)r;
	}
	w->olen = 0;
	return w->err;
}

static void wr_out(struct hvtrace_tracedat_writer *w, const void *p, size_t n)
{
	const uint8_t *s = p;

	while (n && !w->err) {
		size_t k = WR_OBUF_SIZE - w->olen;

		if (k > n)
			k = n;
		memcpy(w->obuf + w->olen, s, k);
		w->olen += k;
		w->off += k;
		s += k;
		n -= k;
		if (w->olen == WR_OBUF_SIZE)
			wr_flush(w);
	}
}

static void wr_u16(struct hvtrace_tracedat_writer *w, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};

	wr_out(w, b, 2);
}

static void wr_u32(struct hvtrace_tracedat_writer *w, uint32_t v)
{
	uint8_t b[4];
	int i;

	for (i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	wr_out(w, b, 4);
}

static void wr_u64(struct hvtrace_tracedat_writer *w, uint64_t v)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	wr_out(w, b, 8);
}

static void wr_zeros(struct hvtrace_tracedat_writer *w, uint64_t n)
{
	static const uint8_t z[4096];

	while (n && !w->err) {
		size_t k = n > sizeof(z) ? sizeof(z) : (size_t)n;

		wr_out(w, z, k);
		n -= k;
	}
}

/* The string id of @s (its offset in the strings section). */
static uint32_t wr_string(struct hvtrace_tracedat_writer *w, const char *s)
{
	uint32_t id = (uint32_t)w->strings.len;

	if (hvt_tdat_blob_add(&w->strings, s, strlen(s) + 1))
		w->err = -ENOMEM;
	return id;
}

static void wr_section(struct hvtrace_tracedat_writer *w, uint16_t id,
		       const char *desc, uint64_t size)
{
	wr_u16(w, id);
	wr_u16(w, 0); /* not compressed */
	wr_u32(w, wr_string(w, desc));
	wr_u64(w, size);
}

/* Building section bodies in memory. */
static void bl_u32(struct hvt_tdat_blob *b, uint32_t v, int *err)
{
	uint8_t x[4];
	int i;

	for (i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	if (hvt_tdat_blob_add(b, x, 4))
		*err = -ENOMEM;
}

static void bl_u64(struct hvt_tdat_blob *b, uint64_t v, int *err)
{
	uint8_t x[8];
	int i;

	for (i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	if (hvt_tdat_blob_add(b, x, 8))
		*err = -ENOMEM;
}

static void bl_add(struct hvt_tdat_blob *b, const void *p, size_t n, int *err)
{
	if (hvt_tdat_blob_add(b, p, n))
		*err = -ENOMEM;
}

static void bl_option(struct hvt_tdat_blob *b, uint16_t id, const void *p,
		      uint32_t n, int *err)
{
	uint8_t x[2] = {(uint8_t)id, (uint8_t)(id >> 8)};

	bl_add(b, x, 2, err);
	bl_u32(b, n, err);
	bl_add(b, p, n, err);
}

static void bl_option_u64(struct hvt_tdat_blob *b, uint16_t id, uint64_t v,
			  int *err)
{
	uint8_t x[8];
	int i;

	for (i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	bl_option(b, id, x, 8, err);
}

/* Write a section whose body is @body; returns the section's offset. */
static uint64_t wr_blob_section(struct hvtrace_tracedat_writer *w, uint16_t id,
				const char *desc,
				const struct hvt_tdat_blob *body)
{
	uint64_t at = w->off;

	wr_section(w, id, desc, body->len);
	wr_out(w, body->data ? body->data : "", body->len);
	return at;
}

/* Systems in first-seen order; "ftrace" goes to its own section. */
static int wr_formats(struct hvtrace_tracedat_writer *w,
		      struct hvt_tdat_blob *ftrace,
		      struct hvt_tdat_blob *events)
{
	unsigned int i, j, n, nsys = 0;
	int err = 0;
	bool *done;

	done = calloc(w->nr_fmt + 1, sizeof(*done));
	if (!done)
		return -ENOMEM;
	for (i = 0, n = 0; i < w->nr_fmt; i++)
		if (!strcmp(w->fmt[i].system, "ftrace"))
			n++;
	bl_u32(ftrace, n, &err);
	for (i = 0; i < w->nr_fmt; i++) {
		if (strcmp(w->fmt[i].system, "ftrace"))
			continue;
		bl_u64(ftrace, w->fmt[i].len, &err);
		bl_add(ftrace, w->fmt[i].text, w->fmt[i].len, &err);
		done[i] = true;
	}
	for (i = 0; i < w->nr_fmt; i++) {
		if (done[i])
			continue;
		for (j = 0; j < i; j++)
			if (!strcmp(w->fmt[j].system, w->fmt[i].system))
				break;
		if (j == i)
			nsys++;
	}
	bl_u32(events, nsys, &err);
	for (i = 0; i < w->nr_fmt; i++) {
		if (done[i])
			continue;
		for (j = i, n = 0; j < w->nr_fmt; j++)
			if (!done[j] &&
			    !strcmp(w->fmt[j].system, w->fmt[i].system))
				n++;
		bl_add(events, w->fmt[i].system, strlen(w->fmt[i].system) + 1,
		       &err);
		bl_u32(events, n, &err);
		for (j = i; j < w->nr_fmt; j++) {
			if (done[j] ||
			    strcmp(w->fmt[j].system, w->fmt[i].system))
				continue;
			bl_u64(events, w->fmt[j].len, &err);
			bl_add(events, w->fmt[j].text, w->fmt[j].len, &err);
			done[j] = true;
		}
	}
	free(done);
	return err;
}

static uint64_t wr_buffer_bytes(const struct wr_buffer *b)
{
	uint64_t n = 0;
	uint32_t c;

	for (c = 0; c < b->nr_cpus; c++)
		n += b->cpu[c].size;
	return n;
}

/* Size of the BUFFER option's data for @b. */
static uint32_t wr_buffer_opt_len(const struct wr_buffer *b)
{
	return 8 + (uint32_t)strlen(b->name) + 1 + (uint32_t)strlen(b->clock) +
	       1 + 4 + 4 + b->nr_cpus * 20u;
}

/* Bytes of an options section holding just one BUFFER option + DONE. */
static uint64_t wr_buffer_opts_size(const struct wr_buffer *b)
{
	return 6 + (uint64_t)wr_buffer_opt_len(b) + 6 + 8;
}

/* Section body size of @b's flyrecord section starting at @at. */
static uint64_t wr_fly_size(const struct wr_buffer *b, uint64_t at,
			    uint64_t *data_off)
{
	uint64_t start = at + HVT_TDAT_SEC_HDR_SIZE;

	if (!b->nr_cpus) {
		*data_off = start;
		return 0;
	}
	*data_off = hvt_align_up(start, b->page_size);
	return *data_off - start + wr_buffer_bytes(b);
}

static int wr_copy(struct hvtrace_tracedat_writer *w, int fd, uint64_t len)
{
	loff_t in = 0, out;
	ssize_t r;
	char *buf = NULL;

	if (wr_flush(w))
		return w->err;
	out = (loff_t)w->off;
	while (len) {
		r = copy_file_range(fd, &in, w->fd, &out, len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len -= (uint64_t)r;
	}
	/* Fallback where copy_file_range() cannot work (other fs, old kernel).
	 */
	while (len) {
		ssize_t k;

		if (!buf) {
			buf = malloc(1u << 20);
			if (!buf)
				return w->err = -ENOMEM;
		}
		k = pread(fd, buf, len > (1u << 20) ? (1u << 20) : len, in);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			w->err = k < 0 ? -errno : -EIO;
			break;
		}
		r = pwrite(w->fd, buf, (size_t)k, out);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			w->err = r < 0 ? -errno : -EIO;
			break;
		}
		in += r;
		out += r;
		len -= (uint64_t)r;
	}
	free(buf);
	w->off = (uint64_t)out;
	return w->err;
}

static void wr_cmdlines(struct hvtrace_tracedat_writer *w,
			struct hvt_tdat_blob *body, int *err)
{
	unsigned int i;

	for (i = 0; i < w->nr_cmd; i++)
		if (hvt_tdat_blob_printf(body, "%d %s\n", w->cmd[i].pid,
					 w->cmd[i].comm))
			*err = -ENOMEM;
}

HVTRACE_API int
hvtrace_tracedat_writer_finish(struct hvtrace_tracedat_writer *w)
{
	struct hvt_tdat_blob body = {0}, ftrace = {0}, events = {0};
	struct hvt_tdat_blob opts = {0};
	uint64_t sec[6], first_opts, next, fly_at, fly_size;
	unsigned int i, c;
	int err = 0, ret;

	if (!w)
		return hvt_err(-EINVAL, "tracedat writer: NULL");
	if (!w->header_page.len || !w->header_event.len) {
		hvtrace_tracedat_writer_abort(w);
		return hvt_err(-EINVAL, "tracedat writer: header_page and "
					"header_event were not set");
	}
	w->obuf = malloc(WR_OBUF_SIZE);
	if (!w->obuf) {
		hvtrace_tracedat_writer_abort(w);
		return hvt_err(-ENOMEM, "out of memory");
	}
	w->off = 0;
	w->olen = 0;
	/* The pages still gathered, to their files before they are copied. */
	for (i = 0; i < w->nr_buf && !err; i++)
		for (c = 0; c < w->buf[i].nr_cpus && !err; c++)
			err = wr_cpu_flush(w, &w->buf[i].cpu[c]);
	if (err) {
		char why[512];

		snprintf(why, sizeof(why), "%s", hvtrace_last_error());
		hvtrace_tracedat_writer_abort(w);
		return hvt_err(err, "%s", why);
	}

	/* Initial format. */
	wr_out(w, HVT_TDAT_MAGIC, HVT_TDAT_MAGIC_LEN);
	wr_out(w, "7", 2);
	wr_out(w, "\0\010", 2); /* little endian, 8-byte long */
	wr_u32(w, w->page_size);
	wr_out(w, "none\0", 6); /* compression "none", version "" */
	wr_u64(w, 0);		/* first options: patched below */

	/* HEADER_INFO */
	bl_add(&body, "header_page", 12, &err);
	bl_u64(&body, w->header_page.len, &err);
	bl_add(&body, w->header_page.data, w->header_page.len, &err);
	bl_add(&body, "header_event", 13, &err);
	bl_u64(&body, w->header_event.len, &err);
	bl_add(&body, w->header_event.data, w->header_event.len, &err);
	sec[0] = wr_blob_section(w, HVT_TDAT_OPT_HEADER_INFO, "headers", &body);

	err = err ? err : wr_formats(w, &ftrace, &events);
	sec[1] = wr_blob_section(w, HVT_TDAT_OPT_FTRACE_EVENTS, "ftrace events",
				 &ftrace);
	sec[2] = wr_blob_section(w, HVT_TDAT_OPT_EVENT_FORMATS, "events format",
				 &events);

	body.len = 0;
	bl_u32(&body, (uint32_t)w->kallsyms.len, &err);
	bl_add(&body, w->kallsyms.data, w->kallsyms.len, &err);
	sec[3] = wr_blob_section(w, HVT_TDAT_OPT_KALLSYMS, "kallsyms", &body);

	body.len = 0;
	bl_u32(&body, (uint32_t)w->printk.len, &err);
	bl_add(&body, w->printk.data, w->printk.len, &err);
	sec[4] = wr_blob_section(w, HVT_TDAT_OPT_PRINTK, "printk", &body);

	body.len = 0;
	{
		struct hvt_tdat_blob text = {0};

		wr_cmdlines(w, &text, &err);
		bl_u64(&body, text.len, &err);
		bl_add(&body, text.data, text.len, &err);
		hvt_tdat_blob_free(&text);
	}
	sec[5] = wr_blob_section(w, HVT_TDAT_OPT_CMDLINES, "command lines",
				 &body);

	/* First options section. */
	first_opts = w->off;
	for (i = 0; i < 6; i++)
		bl_option_u64(&opts, (uint16_t)(HVT_TDAT_OPT_HEADER_INFO + i),
			      sec[i], &err);
	for (i = 0; i < w->nr_opt; i++)
		bl_option(&opts, w->opt[i].id, w->opt[i].data, w->opt[i].len,
			  &err);
	/* DONE: the next options section follows the first flyrecord. */
	fly_at = first_opts + HVT_TDAT_SEC_HDR_SIZE + opts.len + 6 + 8;
	fly_size = wr_fly_size(&w->buf[0], fly_at, &w->buf[0].data_off);
	next = fly_at + HVT_TDAT_SEC_HDR_SIZE + fly_size;
	bl_option_u64(&opts, HVT_TDAT_OPT_DONE, next, &err);
	if (err) {
		w->err = err;
		goto out;
	}
	wr_blob_section(w, HVT_TDAT_OPT_DONE, "options", &opts);

	for (i = 0; i < w->nr_buf && !w->err; i++) {
		struct wr_buffer *b = &w->buf[i];
		char desc[300];
		uint64_t off;

		/* Flyrecord section: fly_at/fly_size computed above. */
		if (w->off != fly_at) {
			w->err = -EIO; /* layout arithmetic bug */
			break;
		}
		b->section_off = fly_at;
		snprintf(desc, sizeof(desc), "buffer flyrecord %s", b->name);
		wr_section(w, HVT_TDAT_OPT_BUFFER, desc, fly_size);
		wr_zeros(w, b->data_off - w->off);
		for (c = 0; c < b->nr_cpus && !w->err; c++)
			if (b->cpu[c].size)
				wr_copy(w, b->cpu[c].fd, b->cpu[c].size);

		/* Its options section: BUFFER, then DONE -> next or 0. */
		next = 0;
		if (i + 1 < w->nr_buf) {
			fly_at = w->off + HVT_TDAT_SEC_HDR_SIZE +
				 wr_buffer_opts_size(b);
			fly_size = wr_fly_size(&w->buf[i + 1], fly_at,
					       &w->buf[i + 1].data_off);
			next = fly_at + HVT_TDAT_SEC_HDR_SIZE + fly_size;
		}
		opts.len = 0;
		body.len = 0;
		bl_u64(&body, b->section_off, &err);
		bl_add(&body, b->name, strlen(b->name) + 1, &err);
		bl_add(&body, b->clock, strlen(b->clock) + 1, &err);
		bl_u32(&body, b->page_size, &err);
		bl_u32(&body, b->nr_cpus, &err);
		off = b->data_off;
		for (c = 0; c < b->nr_cpus; c++) {
			bl_u32(&body, c, &err);
			bl_u64(&body, off, &err);
			bl_u64(&body, b->cpu[c].size, &err);
			off += b->cpu[c].size;
		}
		bl_option(&opts, HVT_TDAT_OPT_BUFFER, body.data,
			  (uint32_t)body.len, &err);
		bl_option_u64(&opts, HVT_TDAT_OPT_DONE, next, &err);
		if (err) {
			w->err = err;
			break;
		}
		wr_blob_section(w, HVT_TDAT_OPT_DONE, "options", &opts);
	}

	if (!w->err) {
		/* The strings section names itself: add it before writing. */
		struct hvt_tdat_blob s;
		uint32_t sid = wr_string(w, "strings");

		s = w->strings;
		wr_u16(w, HVT_TDAT_OPT_STRINGS);
		wr_u16(w, 0);
		wr_u32(w, sid);
		wr_u64(w, s.len);
		wr_out(w, s.data, s.len);
	}
	wr_flush(w);
	if (!w->err) {
		uint8_t b[8];

		for (i = 0; i < 8; i++)
			b[i] = (uint8_t)(first_opts >> (8 * i));
		if (pwrite(w->fd, b, 8, 24) != 8)
			w->err = -errno ? -errno : -EIO;
	}
	if (!w->err && ftruncate(w->fd, (off_t)w->off))
		w->err = -errno;
out:
	ret = w->err;
	hvt_tdat_blob_free(&body);
	hvt_tdat_blob_free(&ftrace);
	hvt_tdat_blob_free(&events);
	hvt_tdat_blob_free(&opts);
	if (!ret && close(w->fd))
		ret = -errno;
	else if (ret)
		close(w->fd);
	w->fd = -1;
	if (ret)
		hvt_err(ret, "cannot write %s: %s", w->path, strerror(-ret));
	w->keep = !ret;
	hvtrace_tracedat_writer_abort(w);
	return ret;
}

HVTRACE_API void
hvtrace_tracedat_writer_abort(struct hvtrace_tracedat_writer *w)
{
	unsigned int i, c;

	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	/* An incomplete file is worse than none. */
	if (!w->keep && w->path && w->created)
		unlink(w->path);
	for (i = 0; w->buf && i < w->nr_buf; i++) {
		for (c = 0; c < w->buf[i].nr_cpus; c++) {
			if (w->buf[i].cpu[c].fd >= 0)
				close(w->buf[i].cpu[c].fd);
			free(w->buf[i].cpu[c].batch);
		}
		free(w->buf[i].cpu);
		free(w->buf[i].name);
		free(w->buf[i].clock);
	}
	for (i = 0; i < w->nr_fmt; i++) {
		free(w->fmt[i].system);
		free(w->fmt[i].text);
	}
	for (i = 0; i < w->nr_opt; i++)
		free(w->opt[i].data);
	free(w->buf);
	free(w->fmt);
	free(w->opt);
	free(w->cmd);
	hvt_tdat_blob_free(&w->header_page);
	hvt_tdat_blob_free(&w->header_event);
	hvt_tdat_blob_free(&w->kallsyms);
	hvt_tdat_blob_free(&w->printk);
	hvt_tdat_blob_free(&w->strings);
	free(w->obuf);
	free(w->path);
	free(w->dir);
	free(w);
}
