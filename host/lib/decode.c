// SPDX-License-Identifier: MIT
/*
 * libhvtrace: event decoding with libtraceevent.
 *
 * A decoder wraps one tep_handle: the header_page description of the
 * writer, the event formats it may write, and a pid -> comm table
 * (comm.c, which also learns names from the records).
 *
 *   area    hvtrace_decoder_new_area(): header_page for the area's
 *           sub-buffer size, the built-in "hvtrace" events, and the
 *           hypervisor's events for a hypervisor area; user events and
 *           anything else arrive through hvtrace_decoder_add_format()
 *   kernel  hvtrace_decoder_new_kernel(): every format in tracefs
 *           (libtracefs), saved_cmdlines and /proc/kallsyms
 *
 * Formats may come from a guest (user events it registered), so each one
 * is first parsed into a scratch handle and rejected if any field lies
 * outside 64 KiB; records are copied into a zero-padded buffer before they
 * are printed (decode.h).  Together that keeps libtraceevent inside memory
 * we own whatever the writer put in a record.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <tracefs.h>

#include <hvtrace/hyp_events.h>

#include "decode.h"
#include "tracefs_dir.h"

#define DEC_MAX_FORMAT		65536u
#define DEC_MAX_FIELD_END	65536u
#define DEC_TRACEFS_MAGIC	0x74726163	/* statfs f_type of tracefs */

static int dec_alloc(struct hvtrace_decoder **out)
{
	struct hvtrace_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return hvt_err(-ENOMEM, "out of memory");
	d->scratch = calloc(1, DEC_SCRATCH_SIZE);
	if (!d->scratch || hvt_dec_comm_init(d)) {
		free(d->scratch);
		hvt_dec_comm_fini(d);
		free(d);
		return hvt_err(-ENOMEM, "out of memory");
	}
	trace_seq_init(&d->seq);
	trace_seq_init(&d->sym_seq);
	*out = d;
	return 0;
}

HVTRACE_API void hvtrace_decoder_free(struct hvtrace_decoder *d)
{
	if (!d)
		return;
	if (d->tep)
		tep_free(d->tep);
	hvtrace_ksyms_free(d->ksyms);
	trace_seq_destroy(&d->seq);
	trace_seq_destroy(&d->sym_seq);
	free(d->scratch);
	hvt_dec_comm_fini(d);
	free(d);
}

static struct tep_handle *dec_tep_new(void)
{
	struct tep_handle *tep = tep_alloc();

	if (!tep)
		return NULL;
	tep_set_long_size(tep, 8);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_page_size(tep, (int)sysconf(_SC_PAGESIZE));
	return tep;
}

/* An empty decoder whose header_page is @text: 0, -ENOMEM, or -EINVAL when
 * libtraceevent rejects the text (no message set). */
static int dec_new_header(const char *text, size_t len,
			  struct hvtrace_decoder **out)
{
	struct hvtrace_decoder *d;
	int ret;

	ret = dec_alloc(&d);
	if (ret)
		return ret;
	d->tep = dec_tep_new();
	if (!d->tep) {
		hvtrace_decoder_free(d);
		return hvt_err(-ENOMEM, "out of memory");
	}
	if (tep_parse_header_page(d->tep, (char *)text, (unsigned long)len,
				  8)) {
		hvtrace_decoder_free(d);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

HVTRACE_API int hvtrace_decoder_new(uint32_t subbuf_size,
				    struct hvtrace_decoder **out)
{
	char text[512];
	int ret, len;

	if (!out)
		return hvt_err(-EINVAL, "hvtrace_decoder_new: NULL argument");
	if (subbuf_size < HVT_ABI_MIN_SUBBUF_SIZE ||
	    subbuf_size > HVT_ABI_MAX_SUBBUF_SIZE ||
	    (subbuf_size & (subbuf_size - 1)))
		return hvt_err(-EINVAL, "sub-buffer size %u is not a power of "
					"two in 4K..64K",
			       subbuf_size);
	len = hvtrace_header_page_text(subbuf_size, text, sizeof(text));
	if (len < 0 || (size_t)len >= sizeof(text))
		return hvt_err(-EINVAL, "cannot describe the header_page");
	ret = dec_new_header(text, (size_t)len, out);
	if (ret == -EINVAL)
		return hvt_err(ret, "libtraceevent rejected the generated "
				    "header_page");
	return ret;
}

HVTRACE_API int hvtrace_decoder_new_area(const struct hvtrace_area *a,
					 struct hvtrace_decoder **out)
{
	struct hvtrace_decoder *d;
	int ret;

	if (!a || !out)
		return hvt_err(-EINVAL, "hvtrace_decoder_new_area: NULL "
					"argument");
	ret = hvtrace_decoder_new(a->hdr.subbuf_size, &d);
	if (ret)
		return ret;
	ret = hvtrace_decoder_add_builtin(d, a->hdr.writer_kind);
	if (ret) {
		hvtrace_decoder_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

/* Read a whole (small, pseudo) file; NUL-terminated, caller frees. */
static char *dec_slurp(const char *path, size_t max, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t r;
	int fd;

	if (!buf)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return NULL;
	}
	for (;;) {
		if (cap - n < 4096) {
			if (cap >= max)
				break;
			nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int dec_load_cmdlines(struct hvtrace_decoder *d, const char *root)
{
	char path[PATH_MAX + 32], *buf, *line, *save = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/saved_cmdlines", root);
	buf = dec_slurp(path, 16u << 20, &len);
	if (!buf)
		return hvt_err(-errno ? -errno : -EIO, "cannot read %s", path);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char comm[64];
		int pid;

		if (sscanf(line, "%d %63[^\n]", &pid, comm) == 2 && pid > 0)
			hvtrace_decoder_set_comm(d, pid, comm);
	}
	free(buf);
	return 0;
}

HVTRACE_API int hvtrace_decoder_load_cmdlines(struct hvtrace_decoder *d,
					      const char *tracefs)
{
	char root[PATH_MAX];
	int ret;

	if (!d)
		return hvt_err(-EINVAL, "hvtrace_decoder_load_cmdlines: no "
					"decoder");
	if (tracefs)
		snprintf(root, sizeof(root), "%s", tracefs);
	else if ((ret = hvt_tracefs_dir(root, sizeof(root))))
		return ret;
	return dec_load_cmdlines(d, root);
}

/* The formats of a folder, gathered to be added as one batch. */
struct dec_batch {
	struct hvt_tep_text *t;
	unsigned int n, cap;
};

static void dec_batch_free(struct dec_batch *b)
{
	unsigned int i;

	for (i = 0; i < b->n; i++) {
		free((char *)b->t[i].system);
		free((char *)b->t[i].text);
	}
	free(b->t);
}

/* @text (taken) of @system into @b. */
static int dec_batch_add(struct dec_batch *b, const char *system, char *text,
			 size_t len)
{
	struct hvt_tep_text *t = NULL;
	char *sys = strdup(system);

	if (!sys ||
	    (b->n == b->cap &&
	     !(t = realloc(b->t, (b->cap ? 2 * b->cap : 256) * sizeof(*t))))) {
		free(sys);
		free(text);
		return -ENOMEM;
	}
	if (b->n == b->cap) {
		b->t = t;
		b->cap = b->cap ? 2 * b->cap : 256;
	}
	b->t[b->n++] = (struct hvt_tep_text){
		.kind = HVT_TEP_FORMAT,
		.system = sys,
		.text = text,
		.len = len,
	};
	return 0;
}

/*
 * Another kernel's formats from a directory laid out like tracefs (a
 * guest kernel's copy): its header_page, then every
 * events/SYSTEM/EVENT/format, all of them checked in one sandbox child
 * (hvt_decoder_add_formats()).  Not
 * libtracefs's loader: that one also takes this host's /proc/kallsyms,
 * which would name the wrong functions.
 */
static int dec_load_dir(const char *root, struct hvtrace_decoder **out)
{
	char path[PATH_MAX + 600], *text;
	struct hvtrace_decoder *d = NULL;
	struct dec_batch b = {0};
	struct dirent *se, *ee;
	DIR *sd, *ed;
	size_t len;
	int ret, *rets;
	unsigned int n = 0;

	snprintf(path, sizeof(path), "%s/events/header_page", root);
	text = dec_slurp(path, 64u << 10, &len);
	ret = text ? dec_new_header(text, len, &d) : -EINVAL;
	free(text);
	if (ret == -EINVAL)
		return hvt_err(ret, "%s: missing or not a header_page", path);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/events", root);
	sd = opendir(path);
	while (!ret && sd && (se = readdir(sd))) {
		if (se->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", root, se->d_name);
		ed = opendir(path);
		while (!ret && ed && (ee = readdir(ed))) {
			if (ee->d_name[0] == '.')
				continue;
			if (snprintf(path, sizeof(path),
				     "%s/events/%s/%s/format", root, se->d_name,
				     ee->d_name) >= (int)sizeof(path))
				continue;
			text = dec_slurp(path, DEC_MAX_FORMAT, &len);
			if (text && len)
				ret = dec_batch_add(&b, se->d_name, text, len);
			else
				free(text);
		}
		if (ed)
			closedir(ed);
	}
	if (sd)
		closedir(sd);
	/* All of them through one sandbox child. */
	rets = calloc(b.n ? b.n : 1, sizeof(*rets));
	if (!ret && !rets)
		ret = -ENOMEM;
	if (!ret)
		n = hvt_decoder_add_formats(d, b.t, b.n, rets);
	free(rets);
	dec_batch_free(&b);
	if (ret) {
		hvtrace_decoder_free(d);
		return hvt_err(ret, "out of memory");
	}
	if (!n) {
		hvtrace_decoder_free(d);
		return hvt_err(-ENOENT, "no event format under %s/events",
			       root);
	}
	*out = d;
	return 0;
}

HVTRACE_API int hvtrace_decoder_new_kernel(const char *tracefs,
					   struct hvtrace_decoder **out)
{
	struct hvtrace_decoder *d = NULL;
	char root[PATH_MAX], path[PATH_MAX + 32];
	struct statfs sfs;
	size_t len;
	char *syms;
	int ret;

	if (!out)
		return hvt_err(-EINVAL, "hvtrace_decoder_new_kernel: NULL "
					"argument");
	if (tracefs)
		snprintf(root, sizeof(root), "%s", tracefs);
	else if ((ret = hvt_tracefs_dir(root, sizeof(root))))
		return ret;
	if (tracefs && (statfs(root, &sfs) || sfs.f_type != DEC_TRACEFS_MAGIC)) {
		/* Not a tracefs: another kernel's copy (a guest's). */
		ret = dec_load_dir(root, &d);
		if (ret)
			return ret;
		dec_load_cmdlines(d, root);	/* best effort */
		snprintf(path, sizeof(path), "%s/kallsyms", root);
		syms = dec_slurp(path, HVTRACE_KSYMS_TEXT_MAX, &len);
		if (syms) {
			struct hvtrace_ksyms *ks;

			/* The guest's text, sanitized; a table refused
			 * leaves addresses in hex (best effort). */
			if (!hvtrace_ksyms_parse(syms, len, &ks))
				hvtrace_decoder_set_ksyms(d, ks);
			free(syms);
		}
		*out = d;
		return 0;
	}
	ret = dec_alloc(&d);
	if (ret)
		return ret;
	d->tep = tracefs_local_events(root);
	if (!d->tep) {
		hvtrace_decoder_free(d);
		return hvt_err(-EIO, "cannot load the kernel's event formats "
				     "from %s (libtracefs failed; is it "
				     "readable?)",
			       root);
	}
	dec_load_cmdlines(d, root);	/* best effort */
	/* %ps needs symbols; without them (or hidden: kptr_restrict)
	 * addresses print in hex.  The same table and forms as a guest's. */
	syms = dec_slurp("/proc/kallsyms", HVTRACE_KSYMS_TEXT_MAX, &len);
	if (syms) {
		struct hvtrace_ksyms *ks;

		if (!hvtrace_ksyms_parse(syms, len, &ks))
			hvtrace_decoder_set_ksyms(d, ks);
		free(syms);
	}
	*out = d;
	return 0;
}

/* The "ID: N" line of a format file; -1 if absent or out of range. */
static long dec_format_id(const char *format, size_t len)
{
	const char *p = format, *end = format + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[32];

		if (n > 4 && n < sizeof(line) && !strncmp(p, "ID:", 3)) {
			char *e;
			long id;

			memcpy(line, p + 3, n - 3);
			line[n - 3] = '\0';
			id = strtol(line, &e, 10);
			while (*e == ' ' || *e == '\t' || *e == '\r')
				e++;
			if (*e || id < 0 || id > 0xffff)
				return -1;
			return id;
		}
		p += n + 1;
	}
	return -1;
}

/* Every field of @ev must end inside DEC_MAX_FIELD_END bytes. */
static int dec_check_fields(struct tep_event *ev, const char **bad)
{
	struct tep_format_field **lists[2];
	int i, j, ret = 0;

	lists[0] = tep_event_common_fields(ev);
	lists[1] = tep_event_fields(ev);
	for (i = 0; i < 2; i++) {
		for (j = 0; lists[i] && lists[i][j]; j++) {
			struct tep_format_field *f = lists[i][j];

			if (f->offset < 0 || f->size < 0 ||
			    (unsigned long)f->offset + (unsigned long)f->size >
				    DEC_MAX_FIELD_END) {
				*bad = f->name;
				ret = -EINVAL;
			}
		}
	}
	free(lists[0]);
	free(lists[1]);
	return ret;
}

/* What a format must be before any parser sees it: its event id, or
 * -EINVAL (error set). */
static long dec_format_check(const char *system, const char *format, size_t len)
{
	struct hvt_tep_text t = {
		.kind = HVT_TEP_FORMAT,
		.text = format,
		.len = len,
	};
	long id, bad_at;

	if (!len || len > DEC_MAX_FORMAT)
		return hvt_err(-EINVAL, "format of %zu bytes for system %s "
					"(at most %u)",
			       len, system, DEC_MAX_FORMAT);
	bad_at = hvt_tep_text_bad_byte(&t);
	if (bad_at >= 0)
		return hvt_err(-EINVAL, "format for system %s: byte 0x%02x at "
					"offset %ld is not text (a format is "
					"ASCII)",
			       system, (unsigned char)format[bad_at], bad_at);
	id = dec_format_id(format, len);
	if (id < 0)
		return hvt_err(-EINVAL, "format for system %s has no valid "
					"\"ID: N\" line (N < 65536)",
			       system);
	return id;
}

static int dec_sandbox_refused(long id, const char *system)
{
	return hvt_err(-EINVAL,
		       "format of event id %ld (system %s) crashes "
		       "libtraceevent's parser: refused",
		       id, system);
}

/* A format the checks and the sandbox passed, into @d. */
static int dec_add_checked(struct hvtrace_decoder *d, const char *system,
			   const char *format, size_t len, long id)
{
	struct tep_handle *tmp;
	struct tep_event *ev;
	const char *bad = NULL;
	char msg[256], badname[64] = "?";
	enum tep_errno err;
	int ret;

	ev = tep_find_event(d->tep, (int)id);
	if (ev) {
		/* The same event again is fine; another one is not. */
		tmp = dec_tep_new();
		if (!tmp)
			return hvt_err(-ENOMEM, "out of memory");
		err = tep_parse_event(tmp, format, len, system);
		ret = 0;
		if (err || !tep_find_event(tmp, (int)id) ||
		    strcmp(tep_find_event(tmp, (int)id)->name, ev->name) ||
		    strcmp(ev->system, system))
			ret = hvt_err(-EEXIST, "event id %ld is already %s:%s",
				      id, ev->system, ev->name);
		tep_free(tmp);
		return ret;
	}

	/* Parse into a scratch handle first: a hostile format must not
	 * reach the real one. */
	tmp = dec_tep_new();
	if (!tmp)
		return hvt_err(-ENOMEM, "out of memory");
	err = tep_parse_event(tmp, format, len, system);
	if (err) {
		tep_strerror(tmp, err, msg, sizeof(msg));
		tep_free(tmp);
		return hvt_err(-EINVAL, "cannot parse format of event id %ld "
					"(system %s): %s",
			       id, system, msg);
	}
	ev = tep_find_event(tmp, (int)id);
	ret = ev ? dec_check_fields(ev, &bad) : -EINVAL;
	if (bad)	/* owned by tmp */
		snprintf(badname, sizeof(badname), "%s", bad);
	tep_free(tmp);
	if (ret)
		return hvt_err(-EINVAL, "format of event id %ld (system %s): "
					"field %s lies outside 64 KiB",
			       id, system, badname);
	err = tep_parse_event(d->tep, format, len, system);
	if (err) {
		tep_strerror(d->tep, err, msg, sizeof(msg));
		return hvt_err(-EINVAL, "cannot add format of event id %ld: %s",
			       id, msg);
	}
	hvt_dec_learn_forget(d, (unsigned int)id);
	return 0;
}

HVTRACE_API int hvtrace_decoder_add_format(struct hvtrace_decoder *d,
					   const char *system,
					   const char *format, size_t len)
{
	struct hvt_tep_text t = {
		.kind = HVT_TEP_FORMAT,
		.system = system,
		.text = format,
		.len = len,
	};
	long id, ret;

	if (!d || !system || !format)
		return hvt_err(-EINVAL, "hvtrace_decoder_add_format: NULL "
					"argument");
	id = dec_format_check(system, format, len);
	if (id < 0)
		return (int)id;
	/* A text that crashes libtraceevent's parser never reaches ours. */
	ret = hvt_tep_sandbox(&t, 1, 8);
	if (ret < 0)
		return hvt_err((int)ret,
			       "cannot check the format of event "
			       "id %ld (system %s) in a child: %s",
			       id, system, strerror((int)-ret));
	if (t.bad)
		return dec_sandbox_refused(id, system);
	return dec_add_checked(d, system, format, len, id);
}

unsigned int hvt_decoder_add_formats(struct hvtrace_decoder *d,
				     struct hvt_tep_text *t, unsigned int n,
				     int *ret)
{
	unsigned int i, added = 0;
	long *id, sb;

	id = calloc(n ? n : 1, sizeof(*id));
	if (!d || !id) {
		free(id);
		for (i = 0; i < n; i++)
			ret[i] = hvt_err(-ENOMEM, "out of memory");
		return 0;
	}
	for (i = 0; i < n; i++) {
		ret[i] = 0;
		t[i].bad = false;
		id[i] = t[i].system && t[i].text
				? dec_format_check(t[i].system, t[i].text,
						   t[i].len)
				: hvt_err(-EINVAL, "a format without its text");
		if (id[i] < 0) {
			ret[i] = (int)id[i];
			t[i].bad = true;
		}
	}
	/* One child for the whole batch. */
	sb = hvt_tep_sandbox(t, n, 8);
	for (i = 0; i < n; i++) {
		if (ret[i])
			continue;
		if (sb < 0)
			ret[i] = hvt_err((int)sb,
					 "cannot check formats in a "
					 "child: %s",
					 strerror((int)-sb));
		else if (t[i].bad)
			ret[i] = dec_sandbox_refused(id[i], t[i].system);
		else
			ret[i] = dec_add_checked(d, t[i].system, t[i].text,
						 t[i].len, id[i]);
		added += !ret[i];
	}
	free(id);
	return added;
}

/* One of hvtrace's own formats (compiled in, trusted). */
static int dec_add_builtin(struct hvtrace_decoder *d, const char *system,
			   const char *fmt)
{
	long id = dec_format_check(system, fmt, strlen(fmt));

	return id < 0 ? (int)id
		      : dec_add_checked(d, system, fmt, strlen(fmt), id);
}

HVTRACE_API int hvtrace_decoder_add_builtin(struct hvtrace_decoder *d,
					    uint32_t writer_kind)
{
	const char *fmt;
	unsigned int i;
	int ret;

	if (!d)
		return hvt_err(-EINVAL, "hvtrace_decoder_add_builtin: no "
					"decoder");
	/* hvtrace's own formats, built in: no sandbox needed. */
	for (i = 0; (fmt = hvtrace_builtin_format(i, NULL, NULL)); i++) {
		ret = dec_add_builtin(d, HVTRACE_BUILTIN_SYSTEM, fmt);
		if (ret)
			return ret;
	}
	if (writer_kind == HVT_WRITER_HYP) {
		d->hyp = true;
		for (i = 0; i < hvt_hypevents_count(); i++) {
			const struct hvt_hypevent *ev = hvt_hypevents_get(i);

			if (!ev)
				continue;
			ret = dec_add_builtin(d, ev->system, ev->format);
			if (ret)
				return ret;
		}
	}
	return 0;
}

HVTRACE_API struct tep_handle *
hvtrace_decoder_tep(const struct hvtrace_decoder *d)
{
	return d ? d->tep : NULL;
}

HVTRACE_API int hvtrace_decoder_event_name(const struct hvtrace_decoder *d,
					   unsigned int id,
					   const char **system,
					   const char **name)
{
	struct tep_event *ev;

	if (!d)
		return hvt_err(-EINVAL,
			       "hvtrace_decoder_event_name: no decoder");
	ev = tep_find_event(d->tep, (int)id);
	if (!ev)
		return -ENOENT;
	if (system)
		*system = ev->system;
	if (name)
		*name = ev->name;
	return 0;
}
