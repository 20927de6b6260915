// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the trace.dat (trace-cmd file format version 7) writer.
 *
 * Pages arrive while recording, interleaved across CPUs, but trace.dat
 * wants each CPU's pages contiguous.  So each (buffer, CPU) gathers its
 * pages in memory, in chunks, up to WR_MEM_MAX for all of them
 * (rw-local.h); past that a CPU spills to an unnamed temporary file next
 * to the output (O_TMPFILE: it vanishes with the process).  _finish()
 * writes the whole file in one pass: a CPU's chunks straight from memory,
 * a spilled CPU's file with copy_file_range().
 *
 * Rooms.  Where the recorder knows about how much a CPU will bring (an
 * area whose writer has stopped: what its ring holds), it asks for a room
 * of that size (hvt_tdat_writer_set_room()), and _lay_rooms() places the
 * rooms at the front of the file, one flyrecord section per buffer:
 *
 *   0      file header (written by _finish())
 *   32     section 3, buffer A:  zero padding to the page size,
 *          | CPU 0's room | CPU 1's room | ... |
 *          section 3, buffer B:  ...
 *   rooms_end                    _finish() writes the rest from here
 *
 * A CPU's pages then go into its room as they come, through its stage
 * (WR_STAGE_SIZE bytes, written with pwrite() from WR_STAGE_WRITE on:
 * wr_room_add()): one copy into memory that stays in the cache, one into
 * the file, and nothing cleared (chunks are fresh memory, which the
 * kernel clears first); reader threads take turns writing while the
 * others read and pack.  A room is a hint: a CPU that outgrows it goes on
 * in chunks, and _finish() then moves the whole buffer behind the
 * metadata like one without rooms, its old section left as an "unused
 * room" (its bytes given back with a punched hole where the filesystem
 * can).  A room's unused tail stays a hole in the file; the last
 * buffer's ends where its pages end.
 *
 * This file gathers: creating the writer, metadata, options, buffers and
 * pages, and aborting; write_finish.c is the output pass and documents
 * the layout it writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rw-local.h"

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

/* $HVT_RECORD_MEM_MB: the pages kept in memory, in MiB (default
 * WR_MEM_MAX; 0: every full chunk goes to a temporary file). */
static int wr_mem_max(uint64_t *max)
{
	const char *v = getenv("HVT_RECORD_MEM_MB");
	unsigned long long mb = 0;
	const char *p;

	*max = WR_MEM_MAX;
	if (!v)
		return 0;
	for (p = v; *p >= '0' && *p <= '9' && mb <= (1ull << 20); p++)
		mb = mb * 10 + (unsigned long long)(*p - '0');
	if (!*v || *p || mb > (1ull << 20))
		return hvt_err(-EINVAL,
			       "HVT_RECORD_MEM_MB='%s' is not a number of MiB "
			       "from 0 to 1048576 (the recorded pages kept in "
			       "memory; unset it for %llu)",
			       v, (unsigned long long)(WR_MEM_MAX >> 20));
	*max = (uint64_t)mb << 20;
	return 0;
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
	w->jfd = -1;
	pthread_mutex_init(&w->room_lock, NULL);
	pthread_mutex_init(&w->jlock, NULL);
	ret = wr_mem_max(&w->mem_max);
	if (ret) {
		free(w);
		return ret;
	}
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
	/* Read too: a buffer that outgrew its rooms is copied out of them. */
	w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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
	if (w->jmeta) {
		uint8_t n[4] = {(uint8_t)hp_len, (uint8_t)(hp_len >> 8),
				(uint8_t)(hp_len >> 16),
				(uint8_t)(hp_len >> 24)};
		uint8_t *b;

		if (hp_len > UINT32_MAX)
			return hvt_err(-EFBIG, "header_page too large");
		b = malloc(4 + hp_len);
		if (!b)
			return hvt_err(-ENOMEM, "out of memory");
		memcpy(b, n, 4);
		memcpy(b + 4, header_page, hp_len);
		ret = wr_journal_add2(w, HVT_TDAT_J_HEADERS, 0, 0, b,
				      4 + hp_len, header_event, he_len);
		free(b);
		return ret;
	}
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
	if (w->jmeta)
		return wr_journal_add2(w, HVT_TDAT_J_FORMAT, 0, 0, system,
				       strlen(system) + 1, text, len);
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

/* Replace the text of @b (the kallsyms or printk section), named @what. */
static int wr_set_text(struct hvt_tdat_blob *b, const char *what,
		       const char *text, size_t len)
{
	if (!b || (!text && len))
		return hvt_err(-EINVAL, "tracedat writer: bad %s", what);
	if (len > UINT32_MAX)
		return hvt_err(-EFBIG, "%s larger than 4 GiB", what);
	b->len = 0;
	return hvt_tdat_blob_add(b, text, len)
		       ? hvt_err(-ENOMEM, "out of memory")
		       : 0;
}

HVTRACE_API int
hvtrace_tracedat_writer_set_kallsyms(struct hvtrace_tracedat_writer *w,
				     const char *text, size_t len)
{
	if (w && w->jmeta && (text || !len))
		return wr_journal_add2(w, HVT_TDAT_J_KALLSYMS, 0, 0, text, len,
				       NULL, 0);
	return wr_set_text(w ? &w->kallsyms : NULL, "kallsyms", text, len);
}

HVTRACE_API int
hvtrace_tracedat_writer_set_printk(struct hvtrace_tracedat_writer *w,
				   const char *text, size_t len)
{
	if (w && w->jmeta && (text || !len))
		return wr_journal_add2(w, HVT_TDAT_J_PRINTK, 0, 0, text, len,
				       NULL, 0);
	return wr_set_text(w ? &w->printk : NULL, "printk formats", text, len);
}

bool hvt_tdat_writer_named(const struct hvtrace_tracedat_writer *w, int pid)
{
	unsigned int i;

	for (i = 0; i < w->nr_cmd; i++)
		if (w->cmd[i].pid == pid)
			return true;
	return false;
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
	if (w->jmeta)
		return wr_journal_add2(w, HVT_TDAT_J_CMDLINE, 0, (uint32_t)pid,
				       comm, strnlen(comm, 63), NULL, 0);
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
	if (w->jmeta)
		return wr_journal_add2(w, HVT_TDAT_J_OPTION, id, 0, data, len,
				       NULL, 0);
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

int hvt_tdat_writer_set_buffer_clock(struct hvtrace_tracedat_writer *w,
				     int buffer, const char *clock)
{
	char *c;
	int ret;

	if (!w || buffer <= 0 || (unsigned int)buffer >= w->nr_buf || !clock ||
	    !*clock)
		return hvt_err(-EINVAL, "tracedat writer: no buffer %d or no "
					"clock",
			       buffer);
	ret = wr_journal_add2(w, HVT_TDAT_J_CLOCK, (uint16_t)buffer, 0, clock,
			      strlen(clock), NULL, 0);
	/* A snapshot's (the metadata pass of the start) is the journal's
	 * only: the end's pass decides for the file. */
	if (ret || w->jmeta)
		return ret;
	c = strdup(clock);
	if (!c)
		return hvt_err(-ENOMEM, "out of memory");
	free(w->buf[buffer].clock);
	w->buf[buffer].clock = c;
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
	b->cpu = hvt_calloc_lines(nr_cpus, sizeof(*b->cpu));
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
	if (w->jfd >= 0) {
		uint8_t ps[4] = {(uint8_t)page_size, (uint8_t)(page_size >> 8),
				 (uint8_t)(page_size >> 16),
				 (uint8_t)(page_size >> 24)};
		size_t nl = strlen(name) + 1, cl = strlen(clock) + 1;
		char *nc = malloc(nl + cl);
		int ret;

		if (!nc)
			return hvt_err(-ENOMEM, "out of memory");
		memcpy(nc, name, nl);
		memcpy(nc + nl, clock, cl);
		ret = wr_journal_add2(w, HVT_TDAT_J_BUFFER, (uint16_t)idx,
				      nr_cpus, ps, 4, nc, nl + cl);
		free(nc);
		if (ret)
			return ret;
	}
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

/*
 * A chunk: 2 MiB aligned to 2 MiB, so that where transparent huge pages
 * are allowed (MADV_HUGEPAGE: "always" or "madvise") it is one huge page,
 * one fault and one clear instead of 512; elsewhere the advice does
 * nothing.  Mapped afresh and unmapped when done, not taken from the
 * heap: a recording always pays for the memory it touches (a heap chunk
 * freed by an earlier recording in the same process would come back
 * already faulted in, which no real one-shot recording gets).
 */
static uint8_t *wr_chunk_alloc(void)
{
	size_t span = 2 * (size_t)WR_BATCH_SIZE, head;
	uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	head = (WR_BATCH_SIZE - ((uintptr_t)p & (WR_BATCH_SIZE - 1))) &
	       (WR_BATCH_SIZE - 1);
	if (head)
		munmap(p, head);
	munmap(p + head + WR_BATCH_SIZE, span - head - WR_BATCH_SIZE);
	p += head;
	madvise(p, WR_BATCH_SIZE, MADV_HUGEPAGE);
	return p;
}

static void wr_chunk_free(uint8_t *p)
{
	if (p)
		munmap(p, WR_BATCH_SIZE);
}

/* Free @c's kept chunks and give their bytes back to the writer's cap. */
static void wr_cpu_drop_chunks(struct hvtrace_tracedat_writer *w,
			       struct wr_cpu *c)
{
	unsigned int i;

	for (i = 0; i < c->nr_chunks; i++)
		wr_chunk_free(c->chunks[i]);
	__atomic_fetch_sub(&w->mem_bytes,
			   (uint64_t)c->nr_chunks * WR_BATCH_SIZE,
			   __ATOMIC_RELAXED);
	c->nr_chunks = 0;
}

/* Everything gathered for @c into its temporary file: it spills. */
int wr_cpu_flush(struct hvtrace_tracedat_writer *w, struct wr_cpu *c)
{
	struct iovec iov;
	unsigned int i;
	int ret = 0;

	if (!c->batch_len && !c->nr_chunks)
		return 0;
	if (c->fd < 0) {
		c->fd = wr_tmpfile(w);
		if (c->fd < 0)
			return hvt_err(c->fd,
				       "cannot create a temporary file in %s: "
				       "%s",
				       w->dir, strerror(-c->fd));
	}
	for (i = 0; i < c->nr_chunks && !ret; i++) {
		iov.iov_base = c->chunks[i];
		iov.iov_len = WR_BATCH_SIZE;
		ret = wr_write_all(c->fd, &iov, 1);
	}
	if (!ret && c->batch_len) {
		iov.iov_base = c->batch;
		iov.iov_len = c->batch_len;
		ret = wr_write_all(c->fd, &iov, 1);
	}
	if (ret)
		return hvt_err(ret,
			       "cannot write recorded pages next to %s: %s",
			       w->path, strerror(-ret));
	wr_cpu_drop_chunks(w, c);
	c->batch_len = 0;
	return 0;
}

/* A full chunk: kept while the writer's memory allows, else spilled. */
static int wr_cpu_chunk_full(struct hvtrace_tracedat_writer *w,
			     struct wr_cpu *c)
{
	uint8_t **v;

	if (c->fd >= 0)
		return wr_cpu_flush(w, c);
	if (__atomic_add_fetch(&w->mem_bytes, WR_BATCH_SIZE, __ATOMIC_RELAXED) >
	    w->mem_max)
		goto spill;
	v = wr_grow(c->chunks, &c->cap_chunks, c->nr_chunks, sizeof(*v));
	if (!v)
		goto spill;
	c->chunks = v;
	c->chunks[c->nr_chunks++] = c->batch;
	c->batch = NULL;
	c->batch_len = 0;
	return 0;
spill:
	__atomic_fetch_sub(&w->mem_bytes, WR_BATCH_SIZE, __ATOMIC_RELAXED);
	return wr_cpu_flush(w, c);
}

static void wr_cpu_free(struct hvtrace_tracedat_writer *w, struct wr_cpu *c)
{
	free(c->stage);
	c->stage = NULL;
	c->stage_len = 0;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	wr_cpu_drop_chunks(w, c);
	free(c->chunks);
	c->chunks = NULL;
	c->cap_chunks = 0;
	wr_chunk_free(c->batch);
	c->batch = NULL;
	c->batch_len = 0;
}

/* A page of @size bytes at @dst: every page takes exactly @b's page size
 * in the file, zero-padded. */
static void wr_page_put(uint8_t *dst, const struct wr_buffer *b,
			const void *page, size_t size)
{
	memcpy(dst, page, size);
	memset(dst + size, 0, b->page_size - size);
}

/* --- rooms ------------------------------------------------------------- */

int hvt_tdat_writer_set_room(struct hvtrace_tracedat_writer *w, int buffer,
			     uint32_t cpu, uint64_t bytes)
{
	if (!w || buffer < 0 || (unsigned int)buffer >= w->nr_buf ||
	    cpu >= w->buf[buffer].nr_cpus)
		return hvt_err(-EINVAL, "tracedat writer: no buffer %d CPU %u",
			       buffer, cpu);
	if (w->rooms_laid)
		return hvt_err(-EBUSY, "tracedat writer: the rooms are "
				       "already laid out");
	/* A hint from shared memory: bounded by what a file may hold. */
	if (bytes > (1ull << 40))
		bytes = 1ull << 40;
	w->buf[buffer].cpu[cpu].room_want = bytes;
	return 0;
}

int hvt_tdat_writer_lay_rooms(struct hvtrace_tracedat_writer *w)
{
	uint64_t at = 32; /* after the file header */
	unsigned int i;
	uint32_t c;

	if (!w)
		return hvt_err(-EINVAL, "tracedat writer: NULL");
	if (w->rooms_laid)
		return 0;
	w->rooms_laid = true;
	for (i = 0; i < w->nr_buf; i++) {
		struct wr_buffer *b = &w->buf[i];
		uint64_t data;

		for (c = 0; c < b->nr_cpus; c++)
			if (b->cpu[c].room_want)
				break;
		if (c == b->nr_cpus)
			continue;
		b->room_section = at;
		data = hvt_align_up(at + HVT_TDAT_SEC_HDR_SIZE, b->page_size);
		for (c = 0; c < b->nr_cpus; c++) {
			struct wr_cpu *p = &b->cpu[c];

			if (!p->room_want)
				continue;
			p->room_off = data;
			p->room_len = hvt_align_up(p->room_want, b->page_size);
			data += p->room_len;
		}
		b->room_end = data;
		at = data;
	}
	/* Nothing asked: the file is laid out as without rooms. */
	w->rooms_end = at > 32 ? at : 0;
	return 0;
}

/* CPU @c's staged pages into its room (@w->room_lock held). */
static int wr_room_write(struct hvtrace_tracedat_writer *w, struct wr_cpu *c)
{
	uint32_t done = 0;
	ssize_t r;

	while (done < c->stage_len) {
		r = pwrite(w->fd, c->stage + done, c->stage_len - done,
			   (off_t)(c->room_off + c->room_used + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return hvt_err(r < 0 ? -errno : -EIO,
				       "cannot write %s: %s", w->path,
				       r < 0 ? strerror(errno) : "no room");
		done += (uint32_t)r;
	}
	c->room_used += c->stage_len;
	c->stage_len = 0;
	return 0;
}

int wr_room_flush(struct hvtrace_tracedat_writer *w, struct wr_cpu *c)
{
	int ret;

	pthread_mutex_lock(&w->room_lock);
	ret = wr_room_write(w, c);
	pthread_mutex_unlock(&w->room_lock);
	return ret;
}

/*
 * A page into @c's room (it fits): staged.  Writes into one file take
 * turns in the kernel (the inode's lock, on which a waiting thread spins),
 * so a thread writes its stage when no other thread is writing, from
 * WR_STAGE_WRITE bytes on, and waits for its turn only with the stage
 * full: the others read and pack meanwhile.
 */
static int wr_room_add(struct hvtrace_tracedat_writer *w, struct wr_buffer *b,
		       struct wr_cpu *c, const void *page, size_t size)
{
	if (!c->stage) {
		c->stage = malloc(WR_STAGE_SIZE);
		if (!c->stage)
			return hvt_err(-ENOMEM, "out of memory");
	}
	wr_page_put(c->stage + c->stage_len, b, page, size);
	c->stage_len += b->page_size;
	c->size += b->page_size;
	/* A page size (at most 64 KiB) fits the stage four times. */
	if (c->stage_len + b->page_size > WR_STAGE_SIZE)
		return wr_room_flush(w, c);
	if (c->stage_len >= WR_STAGE_WRITE &&
	    !pthread_mutex_trylock(&w->room_lock)) {
		int ret = wr_room_write(w, c);

		pthread_mutex_unlock(&w->room_lock);
		return ret;
	}
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
	if (w->jfd >= 0) {
		ret = wr_journal_add(w, HVT_TDAT_J_PAGE, (uint16_t)buffer, cpu,
				     page, (uint32_t)size);
		if (ret)
			return ret;
	}
	c = &b->cpu[cpu];
	if (c->room_off && !c->room_full) {
		if (c->room_used + c->stage_len + b->page_size <= c->room_len)
			return wr_room_add(w, b, c, page, size);
		/* Outgrown: what is staged into the room, the rest to
		 * chunks. */
		ret = wr_room_flush(w, c);
		if (ret)
			return ret;
		c->room_full = true;
	}
	/* A page size (at most 64 KiB, HVT_ABI_MAX_SUBBUF_SIZE) divides a
	 * chunk: a chunk is always full when it is kept. */
	if (c->batch_len + b->page_size > WR_BATCH_SIZE) {
		ret = wr_cpu_chunk_full(w, c);
		if (ret)
			return ret;
	}
	if (!c->batch) {
		c->batch = wr_chunk_alloc();
		if (!c->batch)
			return hvt_err(-ENOMEM, "out of memory");
	}
	wr_page_put(c->batch + c->batch_len, b, page, size);
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

HVTRACE_API void
hvtrace_tracedat_writer_abort(struct hvtrace_tracedat_writer *w)
{
	unsigned int i, c;

	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	/* An incomplete file is worse than none.  The journal goes too:
	 * the file is complete, or the recording failed and removed it. */
	if (!w->keep && w->path && w->created)
		unlink(w->path);
	wr_journal_close(w, true);
	for (i = 0; w->buf && i < w->nr_buf; i++) {
		for (c = 0; c < w->buf[i].nr_cpus; c++)
			wr_cpu_free(w, &w->buf[i].cpu[c]);
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
	pthread_mutex_destroy(&w->room_lock);
	pthread_mutex_destroy(&w->jlock);
	free(w);
}
