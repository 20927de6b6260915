// SPDX-License-Identifier: MIT
/*
 * libhvtrace: _finish() of the trace.dat writer: the output pass.
 *
 * One job: write the whole file in one pass from what write.c gathered
 * (metadata, options, and each CPU's pages): a CPU's pages straight from
 * its chunks in memory, or, for a CPU that spilled, from its temporary
 * file with copy_file_range().
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
 *
 * With rooms (write.c), their sections come first, from offset 32, and
 * the rest follows them: a buffer whose pages all stayed in its rooms
 * has no flyrecord section here, its BUFFER option names its rooms'
 * section and each CPU's room; one that outgrew them is written here like
 * a buffer without rooms, and its rooms' section is renamed "unused
 * room".  The rooms' section headers are written last, when their
 * strings are known.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rw-local.h"

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

/* Bytes @p..@p+@n straight to the output at its offset (no staging). */
static void wr_direct(struct hvtrace_tracedat_writer *w, const uint8_t *p,
		      size_t n)
{
	ssize_t r;

	if (wr_flush(w))
		return;
	while (n) {
		r = pwrite(w->fd, p, n, (off_t)w->off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			w->err = r < 0 ? -errno : -EIO;
			return;
		}
		p += r;
		n -= (size_t)r;
		w->off += (uint64_t)r;
	}
}

/* @len bytes of @fd from @from to the output at its offset. */
static int wr_copy(struct hvtrace_tracedat_writer *w, int fd, uint64_t from,
		   uint64_t len)
{
	loff_t in = (loff_t)from, out;
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
	w->off = (uint64_t)out;
	/* Fallback where copy_file_range() cannot work (other fs, old kernel).
	 */
	while (len && !w->err) {
		if (!buf) {
			buf = malloc(1u << 20);
			if (!buf)
				return w->err = -ENOMEM;
		}
		r = pread(fd, buf, len > (1u << 20) ? (1u << 20) : len, in);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			w->err = r < 0 ? -errno : -EIO;
			break;
		}
		wr_direct(w, (const uint8_t *)buf, (size_t)r);
		in += r;
		len -= (uint64_t)r;
	}
	free(buf);
	return w->err;
}

/* CPU @c's pages: those in its room (a buffer that outgrew its rooms),
 * then those from memory, or from the file it spilled to. */
static void wr_cpu_pages(struct hvtrace_tracedat_writer *w, struct wr_cpu *c)
{
	unsigned int i;

	if (c->room_used)
		wr_copy(w, w->fd, c->room_off, c->room_used);
	if (c->fd >= 0) {
		wr_copy(w, c->fd, 0, c->size - c->room_used);
		return;
	}
	for (i = 0; i < c->nr_chunks && !w->err; i++)
		wr_direct(w, c->chunks[i], WR_BATCH_SIZE);
	if (!w->err && c->batch_len)
		wr_direct(w, c->batch, c->batch_len);
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

/* --- rooms (write.c) ---------------------------------------------------- */

/* Does @b stay in its rooms: is every page of it in its CPU's room? */
static bool wr_in_rooms(const struct wr_buffer *b)
{
	uint32_t c;

	if (!b->room_section)
		return false;
	for (c = 0; c < b->nr_cpus; c++)
		if (b->cpu[c].size != b->cpu[c].room_used)
			return false;
	return true;
}

/*
 * Which buffers stay in their rooms, and where the rest of the file
 * starts (0: no rooms): after the last rooms' section, which ends with
 * its last page when its buffer stays.
 */
static uint64_t wr_rooms_place(struct hvtrace_tracedat_writer *w)
{
	struct wr_buffer *last = NULL;
	unsigned int i;
	uint32_t c;

	for (i = 0; i < w->nr_buf; i++) {
		struct wr_buffer *b = &w->buf[i];

		b->in_rooms = wr_in_rooms(b);
		if (b->room_section &&
		    (!last || b->room_section > last->room_section))
			last = b;
	}
	if (!last)
		return 0;
	if (last->in_rooms) {
		last->room_end =
			hvt_align_up(last->room_section + HVT_TDAT_SEC_HDR_SIZE,
				     last->page_size);
		for (c = 0; c < last->nr_cpus; c++) {
			const struct wr_cpu *p = &last->cpu[c];

			if (p->room_used &&
			    p->room_off + p->room_used > last->room_end)
				last->room_end = p->room_off + p->room_used;
		}
	}
	return last->room_end;
}

/* The rooms' section headers, now that their strings are known; a buffer
 * moved out of its rooms gives their bytes back where it can. */
static void wr_rooms_close(struct hvtrace_tracedat_writer *w)
{
	unsigned int i;
	int k;

	for (i = 0; i < w->nr_buf && !w->err; i++) {
		const struct wr_buffer *b = &w->buf[i];
		uint64_t size, data;
		uint8_t h[HVT_TDAT_SEC_HDR_SIZE];

		if (!b->room_section)
			continue;
		size = b->room_end - b->room_section - HVT_TDAT_SEC_HDR_SIZE;
		h[0] = (uint8_t)HVT_TDAT_OPT_BUFFER;
		h[1] = (uint8_t)(HVT_TDAT_OPT_BUFFER >> 8);
		h[2] = h[3] = 0; /* not compressed */
		for (k = 0; k < 4; k++)
			h[4 + k] = (uint8_t)(b->room_sid >> (8 * k));
		for (k = 0; k < 8; k++)
			h[8 + k] = (uint8_t)(size >> (8 * k));
		if (pwrite(w->fd, h, sizeof(h), (off_t)b->room_section) !=
		    (ssize_t)sizeof(h)) {
			w->err = errno ? -errno : -EIO;
			break;
		}
		if (b->in_rooms)
			continue;
		data = hvt_align_up(b->room_section + HVT_TDAT_SEC_HDR_SIZE,
				    b->page_size);
		/* Best effort: the section reads as zeros either way. */
		(void)fallocate(w->fd,
				FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				(off_t)data, (off_t)(b->room_end - data));
	}
}

HVTRACE_API int
hvtrace_tracedat_writer_finish(struct hvtrace_tracedat_writer *w)
{
	struct hvt_tdat_blob body = {0}, ftrace = {0}, events = {0};
	struct hvt_tdat_blob opts = {0};
	uint64_t sec[6], first_opts, next, fly_at = 0, fly_size = 0, base;
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
	/* Staged pages to their rooms.  A spilled CPU's pages still in
	 * memory, to its file before it is copied; the others are written
	 * from memory. */
	for (i = 0; i < w->nr_buf && !err; i++)
		for (c = 0; c < w->buf[i].nr_cpus && !err; c++) {
			struct wr_cpu *p = &w->buf[i].cpu[c];

			if (p->stage_len)
				err = wr_room_flush(w, p);
			if (!err && p->fd >= 0)
				err = wr_cpu_flush(w, p);
		}
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
	/* With rooms, the rest follows them. */
	base = wr_rooms_place(w);
	if (base && !wr_flush(w))
		w->off = base;

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
	/* DONE: the next options section follows this one, and the first
	 * buffer's flyrecord section unless that stays in its rooms. */
	next = first_opts + HVT_TDAT_SEC_HDR_SIZE + opts.len + 6 + 8;
	if (!w->buf[0].in_rooms) {
		fly_at = next;
		fly_size = wr_fly_size(&w->buf[0], fly_at, &w->buf[0].data_off);
		next = fly_at + HVT_TDAT_SEC_HDR_SIZE + fly_size;
	}
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

		snprintf(desc, sizeof(desc), "buffer flyrecord %s", b->name);
		if (b->in_rooms) {
			/* Its pages are in place already. */
			b->section_off = b->room_section;
			b->data_off = hvt_align_up(
				b->room_section + HVT_TDAT_SEC_HDR_SIZE,
				b->page_size);
			b->room_sid = wr_string(w, desc);
		} else {
			/* Flyrecord section: fly_at/fly_size computed
			 * above. */
			if (w->off != fly_at) {
				w->err = -EIO; /* layout arithmetic bug */
				break;
			}
			b->section_off = fly_at;
			wr_section(w, HVT_TDAT_OPT_BUFFER, desc, fly_size);
			wr_zeros(w, b->data_off - w->off);
			for (c = 0; c < b->nr_cpus && !w->err; c++)
				if (b->cpu[c].size)
					wr_cpu_pages(w, &b->cpu[c]);
			if (b->room_section)
				b->room_sid = wr_string(w, "unused room");
		}

		/* Its options section: BUFFER, then DONE -> next or 0. */
		next = 0;
		if (i + 1 < w->nr_buf) {
			next = w->off + HVT_TDAT_SEC_HDR_SIZE +
			       wr_buffer_opts_size(b);
			if (!w->buf[i + 1].in_rooms) {
				fly_at = next;
				fly_size = wr_fly_size(&w->buf[i + 1], fly_at,
						       &w->buf[i + 1].data_off);
				next = fly_at + HVT_TDAT_SEC_HDR_SIZE +
				       fly_size;
			}
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
			const struct wr_cpu *p = &b->cpu[c];

			bl_u32(&body, c, &err);
			if (b->in_rooms)
				bl_u64(&body, p->room_off ? p->room_off : off,
				       &err);
			else
				bl_u64(&body, off, &err);
			bl_u64(&body, p->size, &err);
			if (!b->in_rooms)
				off += p->size;
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
	wr_rooms_close(w);
	if (!w->err) {
		uint8_t b[8];

		for (i = 0; i < 8; i++)
			b[i] = (uint8_t)(first_opts >> (8 * i));
		if (pwrite(w->fd, b, 8, 24) != 8)
			w->err = -errno ? -errno : -EIO;
	}
	if (!w->err && ftruncate(w->fd, (off_t)w->off))
		w->err = -errno;
	/* On disk before its journal goes (a power cut just after). */
	if (!w->err && w->jfd >= 0 && fdatasync(w->fd) && errno != EINVAL)
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
