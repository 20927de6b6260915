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
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <trace-seq.h>

#include <hvtrace/page.h>

#include "tracedat-local.h"

#define RD_MAX_TEXT	    (512u << 20) /* one metadata text */
#define RD_MAX_OPTION	    (64u << 20)
#define RD_MAX_OPT_SECTIONS 4096u
#define RD_MAX_BUFFERS	    1024u
#define RD_MAX_CPUS	    4096u
#define RD_FIELD_LIMIT	    65536u
#define RD_SCRATCH	    (256u * 1024) /* record + zeroed slack */

struct rd_cpu {
	uint64_t off; /* file offset of the CPU's data */
	uint64_t size;
	uint64_t next; /* offset of the next page to load */
	uint8_t *page;
	struct kbuffer *kb;
	bool have; /* an event is pending */
	void *ev;
	uint64_t ts;
	int64_t missed;
	uint32_t ev_size;
};

struct rd_buffer {
	char *name;
	char *clock;
	uint32_t page_size;
	uint32_t nr_cpus;
	uint64_t section_off; /* v7 flyrecord section; v6 "flyrecord" */
	bool latency;
	struct rd_cpu *cpu;
};

struct hvtrace_tracedat_file {
	int fd;
	uint64_t file_size;
	char *path;
	int version;
	uint32_t page_size;
	uint32_t long_size;
	uint32_t cpucount;
	struct tep_handle *tep;
	struct tep_plugin_list *plugins;
	struct rd_buffer *buf;
	unsigned int nr_buf;
	uint64_t sec_off[6]; /* v7: sections 16..21 */
	char *cpustats;
	size_t cpustats_len;
	char *uname;
	char *trace_clock;
	int64_t ts_offset;
	uint64_t errors;
	uint8_t *scratch;
	uint32_t scratch_used;
	uint8_t *bad_ids;   /* 65536 flags: fields beyond the limit */
	uint32_t *min_size; /* 65536: end of each event's last field */
	bool started;
	struct rd_op *ops; /* texts for libtraceevent */
	unsigned int nr_ops, cap_ops;
	uint64_t bad_formats; /* texts it would not survive */
	int name_width;
	char *base_name;
};

/* --- bounded file access ---------------------------------------------- */

static int rd_at(struct hvtrace_tracedat_file *f, uint64_t off, void *buf,
		 size_t len)
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

static uint32_t rd_le32(const uint8_t *p)
{
	return hvt_rd32(p);
}

static uint64_t rd_le64(const uint8_t *p)
{
	return hvt_rd64(p);
}

/* A cursor over a region of the file. */
struct rd_cur {
	struct hvtrace_tracedat_file *f;
	uint64_t pos;
	uint64_t end;
};

static int cur_read(struct rd_cur *c, void *buf, size_t len)
{
	int ret;

	if (c->pos > c->end || len > c->end - c->pos)
		return -EBADMSG;
	ret = rd_at(c->f, c->pos, buf, len);
	if (!ret)
		c->pos += len;
	return ret;
}

static int cur_u16(struct rd_cur *c, uint16_t *v)
{
	uint8_t b[2];
	int ret = cur_read(c, b, 2);

	if (!ret)
		*v = rd_le16(b);
	return ret;
}

static int cur_u32(struct rd_cur *c, uint32_t *v)
{
	uint8_t b[4];
	int ret = cur_read(c, b, 4);

	if (!ret)
		*v = rd_le32(b);
	return ret;
}

static int cur_u64(struct rd_cur *c, uint64_t *v)
{
	uint8_t b[8];
	int ret = cur_read(c, b, 8);

	if (!ret)
		*v = rd_le64(b);
	return ret;
}

/* A NUL-terminated string of at most @max bytes. */
static int cur_str(struct rd_cur *c, char *buf, size_t max)
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

/* --- libtraceevent parsing, tried in a child first ----------------------- */

/*
 * libtraceevent's parsers trust their input: a damaged format text (a
 * non-ASCII byte in an array size, for one) crashes tep_parse_event().  So
 * every text the file hands to libtraceevent is first parsed in a forked
 * child, in file order; a text that kills or hangs the child is skipped
 * (and counted) when the real handle is built.  A clean file costs one
 * fork and a second parse.
 */
enum rd_op_kind {
	RD_OP_HEADER,
	RD_OP_FORMAT,
	RD_OP_KALLSYMS,
	RD_OP_PRINTK,
	RD_OP_CMDLINES
};

struct rd_op {
	enum rd_op_kind kind;
	char system[256];
	char *text;
	size_t len;
	bool bad;
};

#define RD_SANDBOX_TIMEOUT_MS 10000

static int rd_op_add(struct hvtrace_tracedat_file *f, enum rd_op_kind kind,
		     const char *system, char *text, size_t len)
{
	struct rd_op *o;

	if (f->nr_ops == f->cap_ops) {
		unsigned int n = f->cap_ops ? f->cap_ops * 2 : 64;

		o = realloc(f->ops, n * sizeof(*o));
		if (!o) {
			free(text);
			return -ENOMEM;
		}
		f->ops = o;
		f->cap_ops = n;
	}
	o = &f->ops[f->nr_ops++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	snprintf(o->system, sizeof(o->system), "%s", system ? system : "");
	o->text = text;
	o->len = len;
	return 0;
}

static void rd_op_apply(struct hvtrace_tracedat_file *f, struct tep_handle *tep,
			const struct rd_op *o)
{
	switch (o->kind) {
	case RD_OP_HEADER:
		tep_parse_header_page(tep, o->text, o->len, (int)f->long_size);
		break;
	case RD_OP_FORMAT:
		/* One it cannot parse prints raw, as in trace-cmd. */
		tep_parse_event(tep, o->text, o->len, o->system);
		break;
	case RD_OP_KALLSYMS:
		tep_parse_kallsyms(tep, o->text);
		break;
	case RD_OP_PRINTK:
		tep_parse_printk_formats(tep, o->text);
		break;
	case RD_OP_CMDLINES:
		tep_parse_saved_cmdlines(tep, o->text);
		break;
	}
}

/* Text the kernel would write: printable ASCII, tabs and newlines. */
static bool rd_text_ok(const struct rd_op *o)
{
	size_t i;

	for (i = 0; i < o->len; i++) {
		unsigned char ch = (unsigned char)o->text[i];

		if (ch == '\0' && o->kind != RD_OP_FORMAT)
			break; /* trailing NULs in kallsyms & co */
		if (ch != '\t' && ch != '\n' && (ch < 0x20 || ch > 0x7e))
			return false;
	}
	return true;
}

/*
 * Parse ops [from, nr) in a child; returns the index of the op that
 * crashed or hung it, or nr when all went through.
 */
static unsigned int rd_sandbox_run(struct hvtrace_tracedat_file *f,
				   unsigned int from)
{
	unsigned int i, last = from, got;
	struct pollfd pfd;
	int p[2], status;
	pid_t pid;
	ssize_t r;

	if (pipe(p))
		return f->nr_ops; /* cannot check: trust it */
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return f->nr_ops;
	}
	if (pid == 0) {
		struct tep_handle *tep = tep_alloc();

		close(p[0]);
		if (!tep)
			_exit(2);
		tep_set_loglevel(TEP_LOG_NONE);
		tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
		tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
		tep_set_long_size(tep, (int)f->long_size);
		for (i = from; i < f->nr_ops; i++) {
			/* Say which one is next, then try it. */
			if (write(p[1], &i, sizeof(i)) != sizeof(i))
				_exit(2);
			if (!f->ops[i].bad)
				rd_op_apply(f, tep, &f->ops[i]);
		}
		i = f->nr_ops;
		if (write(p[1], &i, sizeof(i)) != sizeof(i))
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	for (;;) {
		int pr = poll(&pfd, 1, RD_SANDBOX_TIMEOUT_MS);

		if (pr <= 0) {
			if (pr < 0 && errno == EINTR)
				continue;
			kill(pid, SIGKILL); /* hung on op 'last' */
			break;
		}
		r = read(p[0], &got, sizeof(got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(got))
			break; /* it died on op 'last' */
		if (got >= f->nr_ops) {
			last = f->nr_ops;
			break;
		}
		last = got;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (last < f->nr_ops && WIFEXITED(status) && WEXITSTATUS(status) == 2)
		return f->nr_ops; /* the child itself failed: trust */
	return last;
}

static void rd_sandbox(struct hvtrace_tracedat_file *f)
{
	unsigned int i, from = 0;

	for (i = 0; i < f->nr_ops; i++)
		if (!rd_text_ok(&f->ops[i])) {
			f->ops[i].bad = true;
			f->bad_formats++;
		}
	/* Each round skips past one bad op: at most nr_ops rounds. */
	while (from < f->nr_ops) {
		i = rd_sandbox_run(f, from);
		if (i >= f->nr_ops)
			break;
		f->ops[i].bad = true;
		f->bad_formats++;
		from = i + 1;
	}
	for (i = 0; i < f->nr_ops; i++)
		if (!f->ops[i].bad)
			rd_op_apply(f, f->tep, &f->ops[i]);
}

/* --- metadata
 * ----------------------------------------------------------------- */

static int rd_header_info(struct hvtrace_tracedat_file *f, struct rd_cur *c)
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
		ret = rd_op_add(f, RD_OP_HEADER, NULL, text, len);
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
	return rd_op_add(f, RD_OP_FORMAT, system, text, len);
}

static int rd_ftrace_formats(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	uint32_t n, i;
	int ret;

	ret = cur_u32(c, &n);
	for (i = 0; !ret && i < n; i++)
		ret = rd_one_format(f, c, "ftrace");
	return ret;
}

static int rd_event_formats(struct hvtrace_tracedat_file *f, struct rd_cur *c)
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

static int rd_kallsyms(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	char *t = NULL;
	int ret = rd_sized_text(c, false, &t);

	if (!ret && *t)
		return rd_op_add(f, RD_OP_KALLSYMS, NULL, t, strlen(t));
	free(t);
	return ret;
}

static int rd_printk(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	char *t = NULL;
	int ret = rd_sized_text(c, false, &t);

	if (!ret && *t)
		return rd_op_add(f, RD_OP_PRINTK, NULL, t, strlen(t));
	free(t);
	return ret;
}

static int rd_cmdlines(struct hvtrace_tracedat_file *f, struct rd_cur *c)
{
	char *t = NULL;
	int ret = rd_sized_text(c, true, &t);

	if (!ret && *t)
		return rd_op_add(f, RD_OP_CMDLINES, NULL, t, strlen(t));
	free(t);
	return ret;
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
static int rd_options(struct hvtrace_tracedat_file *f, struct rd_cur *c,
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
	return ret;
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

/* --- events
 * ------------------------------------------------------------------- */

/* Load and validate the next page of a CPU; false at the end of its data. */
static bool rd_load_page(struct hvtrace_tracedat_file *f, struct rd_buffer *b,
			 struct rd_cpu *p)
{
	while (p->next < p->off + p->size) {
		struct hvt_page_iter it;
		uint64_t commit, ts;
		uint32_t size, n = 0;
		int item;

		if (!p->page) {
			/* 8 bytes of slack: kbuffer reads the lost count
			 * at the end of the data. */
			p->page = calloc(1, b->page_size + 8);
			p->kb = kbuffer_alloc(KBUFFER_LSIZE_8,
					      KBUFFER_ENDIAN_LITTLE);
			if (!p->page || !p->kb)
				return false;
		}
		if (p->off + p->size - p->next < b->page_size ||
		    rd_at(f, p->next, p->page, b->page_size)) {
			f->errors++; /* a partial page ends the CPU */
			p->next = p->off + p->size;
			return false;
		}
		p->next += b->page_size;
		commit = rd_le64(p->page + HVT_PAGE_COMMIT_OFF);
		ts = rd_le64(p->page);
		size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
		if (size > b->page_size - HVT_PAGE_HDR_SIZE) {
			f->errors++;
			continue;
		}
		if ((commit & HVT_MISSED_STORED) &&
		    size + 8 > b->page_size - HVT_PAGE_HDR_SIZE) {
			f->errors++;
			continue;
		}
		hvt_page_iter_init(&it, p->page + HVT_PAGE_HDR_SIZE, size, ts);
		while ((item = hvt_page_next(&it)) > 0)
			if (item == HVT_ITEM_DATA)
				n++;
		if (item < 0) {
			f->errors++;
			continue;
		}
		if (!n)
			continue;
		kbuffer_load_subbuffer(p->kb, p->page);
		return true;
	}
	return false;
}

/* Make p->ev the next event of the CPU, if any. */
static void rd_fill(struct hvtrace_tracedat_file *f, struct rd_buffer *b,
		    struct rd_cpu *p, bool advance)
{
	unsigned long long ts;
	void *ev = NULL;

	if (advance && p->have)
		ev = kbuffer_next_event(p->kb, &ts);
	else if (p->have)
		return;
	p->have = false;
	for (;;) {
		if (!ev) {
			if (!rd_load_page(f, b, p))
				return;
			ev = kbuffer_read_event(p->kb, &ts);
			if (!ev)
				continue;
		}
		p->ev = ev;
		p->ts = ts + (uint64_t)f->ts_offset;
		p->missed = kbuffer_missed_events(p->kb);
		p->ev_size = (uint32_t)kbuffer_event_size(p->kb);
		p->have = true;
		return;
	}
}

HVTRACE_API int hvtrace_tracedat_next(struct hvtrace_tracedat_file *f,
				      struct hvtrace_tracedat_event *ev)
{
	struct rd_cpu *best = NULL;
	unsigned int i, c, bb = 0, bc = 0;

	if (!f || !ev)
		return hvt_err(-EINVAL, "hvtrace_tracedat_next: NULL");
	for (i = 0; i < f->nr_buf; i++) {
		struct rd_buffer *b = &f->buf[i];

		if (b->latency)
			continue;
		for (c = 0; c < b->nr_cpus; c++) {
			struct rd_cpu *p = &b->cpu[c];

			if (!f->started)
				rd_fill(f, b, p, false);
			if (p->have && (!best || p->ts < best->ts)) {
				best = p;
				bb = i;
				bc = c;
			}
		}
	}
	f->started = true;
	if (!best)
		return 0;
	ev->buffer = bb;
	ev->cpu = bc;
	ev->ts = best->ts;
	ev->missed = best->missed;
	ev->size = best->ev_size;
	/* The walker bounded every event; keep one more guard for size. */
	if (ev->size > RD_FIELD_LIMIT)
		ev->size = RD_FIELD_LIMIT;
	/* Only the previous record's bytes are dirty: the slack stays 0. */
	memset(f->scratch, 0, f->scratch_used);
	memcpy(f->scratch, best->ev, ev->size);
	f->scratch_used = ev->size;
	ev->data = f->scratch;
	rd_fill(f, &f->buf[bb], best, true);
	return 1;
}

static void rd_prefix(struct hvtrace_tracedat_file *f, unsigned int buffer,
		      FILE *out)
{
	const char *name;

	if (f->nr_buf < 2)
		return;
	/* The top-level buffer has no tag, as in trace-cmd. */
	name = buffer ? f->buf[buffer].name : "";
	if (*name)
		fprintf(out, "%*s: ", f->name_width, name);
	else
		fprintf(out, "%*s  ", f->name_width, "");
}

HVTRACE_API int
hvtrace_tracedat_print_event(struct hvtrace_tracedat_file *f,
			     const struct hvtrace_tracedat_event *ev, FILE *out)
{
	static const char spaces[] = "                    ";
	struct tep_record rec;
	struct tep_event *event;
	struct trace_seq s;
	const char *name;
	uint16_t id;
	int len;

	if (!f || !ev || !out)
		return -EINVAL;
	memset(&rec, 0, sizeof(rec));
	rec.ts = ev->ts;
	rec.size = (int)ev->size;
	rec.record_size = (int)ev->size;
	/*
	 * A record shorter than its format's fields is still printed from
	 * the zeroed scratch behind it; saying it is that long keeps
	 * libtraceevent's "rest of the record" lengths from going negative.
	 */
	if (ev->data == f->scratch && ev->size >= 2) {
		uint16_t tid =
			(uint16_t)(((const uint8_t *)ev->data)[0] |
				   (((const uint8_t *)ev->data)[1] << 8));

		if (f->min_size[tid] > ev->size)
			rec.size = (int)f->min_size[tid];
	}
	rec.data = (void *)ev->data;
	rec.cpu = (int)ev->cpu;
	rec.missed_events = ev->missed;
	rec.locked = 1;

	trace_seq_init(&s);
	rd_prefix(f, ev->buffer, out);
	if (ev->missed > 0)
		trace_seq_printf(&s, "CPU:%u [%lld EVENTS DROPPED]\n", ev->cpu,
				 (long long)ev->missed);
	else if (ev->missed < 0)
		trace_seq_printf(&s, "CPU:%u [EVENTS DROPPED]\n", ev->cpu);

	id = ev->size >= 2 ? (uint16_t)(((const uint8_t *)ev->data)[0] |
					(((const uint8_t *)ev->data)[1] << 8))
			   : 0;
	event = ev->size >= 8 && !f->bad_ids[id]
			? tep_find_event_by_record(f->tep, &rec)
			: NULL;
	if (ev->size >= 8) {
		tep_print_event(f->tep, &s, &rec, "%16s-%-5d [%03d]",
				TEP_PRINT_COMM, TEP_PRINT_PID, TEP_PRINT_CPU);
	} else {
		trace_seq_printf(&s, "%16s-%-5d [%03u]", "<...>", 0, ev->cpu);
	}
	tep_print_event(f->tep, &s, &rec, " %6.1000d:", TEP_PRINT_TIME);
	name = event ? event->name : "(NULL)";
	trace_seq_printf(&s, " %s: ", name);
	len = (int)strlen(name);
	if (len < 20)
		trace_seq_printf(&s, "%.*s", 20 - len, spaces);
	if (event)
		tep_print_event(f->tep, &s, &rec, "%s", TEP_PRINT_INFO);
	else
		trace_seq_printf(&s, "[UNKNOWN TYPE %u]", id);
	if (s.len && s.buffer[s.len - 1] == '\n')
		s.len--;
	trace_seq_terminate(&s);
	fprintf(out, "%s\n", s.buffer);
	trace_seq_destroy(&s);
	return 0;
}

HVTRACE_API int hvtrace_tracedat_report(const char *path, FILE *out,
					unsigned int flags)
{
	struct hvtrace_tracedat_file *f;
	struct hvtrace_tracedat_event ev;
	int ret;

	ret = hvtrace_tracedat_open(path, &f);
	if (ret)
		return ret;
	/* trace-cmd prints the larger of CPUCOUNT and the top CPUs. */
	fprintf(out, "cpus=%u\n",
		f->buf[0].nr_cpus > f->cpucount ? f->buf[0].nr_cpus
						: f->cpucount);
	if (flags & HVTRACE_TDAT_REPORT_STAT) {
		fprintf(out, "\nKernel buffer statistics:\n"
			     "  Note: \"entries\" are the entries left in the "
			     "kernel ring buffer and are not\n"
			     "        recorded in the trace data. They should "
			     "all be zero.\n\n");
		if (f->cpustats)
			fprintf(out, "%s\n", f->cpustats);
		else
			fprintf(out, " No stats in this file\n");
		for (unsigned int c = 0; c < f->buf[0].nr_cpus; c++)
			fprintf(out,
				"CPU%u data recorded at offset=0x%llx\n"
				"    %llu bytes in size\n",
				c, (unsigned long long)f->buf[0].cpu[c].off,
				(unsigned long long)f->buf[0].cpu[c].size);
		hvtrace_tracedat_close(f);
		return 0;
	}
	while ((ret = hvtrace_tracedat_next(f, &ev)) > 0)
		hvtrace_tracedat_print_event(f, &ev, out);
	if (f->errors)
		fprintf(stderr,
			"hvtrace report: %s: skipped %llu malformed page(s)\n",
			path, (unsigned long long)f->errors);
	if (f->bad_formats)
		fprintf(stderr,
			"hvtrace report: %s: skipped %llu damaged format or "
			"symbol text(s); their events print raw\n",
			path, (unsigned long long)f->bad_formats);
	hvtrace_tracedat_close(f);
	return ret < 0 ? ret : 0;
}
