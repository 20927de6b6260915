// SPDX-License-Identifier: MIT
/*
 * libhvtrace: writing the trace.dat of a killed recording from its
 * journal (FILE.unfinished, journal.c): hvtrace record --recover FILE.
 *
 * Two passes over the journal (journal_parse.c; every record checked):
 * the first finds the last complete metadata snapshot (META_BEGIN ..
 * META_END), the second gives a fresh writer on FILE the buffers and
 * clocks, every page in the order it came, and the snapshot's metadata,
 * then finishes FILE as the recorder would have.  A page the writer
 * refuses (a buffer or CPU the journal never declared, a bad size) is
 * skipped and counted.  The journal is removed once FILE is complete.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracedat-local.h"

HVTRACE_API int hvtrace_tracedat_unfinished(const char *path)
{
	char *jp;
	int fd, ret = 0;

	if (!path)
		return 0;
	jp = hvt_tdat_journal_path(path);
	if (!jp)
		return 0;
	fd = open(jp, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ret = flock(fd, LOCK_SH | LOCK_NB) ? 2 : 1;
		close(fd);
	}
	free(jp);
	return ret;
}

/* One metadata record of the snapshot into @w. */
static int rv_meta(struct hvtrace_tracedat_writer *w,
		   const struct hvt_tdat_jrec *r)
{
	const char *d = (const char *)r->data;
	uint32_t n;
	size_t sl;

	switch (r->type) {
	case HVT_TDAT_J_HEADERS:
		if (r->len < 4)
			return -EINVAL;
		n = (uint32_t)r->data[0] | (uint32_t)r->data[1] << 8 |
		    (uint32_t)r->data[2] << 16 | (uint32_t)r->data[3] << 24;
		if (n > r->len - 4)
			return -EINVAL;
		return hvtrace_tracedat_writer_set_headers(
			w, d + 4, n, d + 4 + n, r->len - 4 - n);
	case HVT_TDAT_J_FORMAT:
		sl = strnlen(d, r->len);
		if (sl == r->len)
			return -EINVAL;
		return hvtrace_tracedat_writer_add_format(w, d, d + sl + 1,
							  r->len - sl - 1);
	case HVT_TDAT_J_KALLSYMS:
		return hvtrace_tracedat_writer_set_kallsyms(w, d, r->len);
	case HVT_TDAT_J_PRINTK:
		return hvtrace_tracedat_writer_set_printk(w, d, r->len);
	case HVT_TDAT_J_OPTION:
		return hvtrace_tracedat_writer_add_option(w, r->a, d, r->len);
	case HVT_TDAT_J_CMDLINE: {
		char comm[64];

		if (!r->len || r->len >= sizeof(comm) || (int32_t)r->b <= 0)
			return -EINVAL;
		memcpy(comm, d, r->len);
		comm[r->len] = '\0';
		return hvtrace_tracedat_writer_add_cmdline(w, (int)r->b, comm);
	}
	}
	return 0;
}

/* A buffer or its clock into @w. */
static int rv_buffer(struct hvtrace_tracedat_writer *w,
		     const struct hvt_tdat_jrec *r)
{
	const char *name, *clock;
	char cl[256];
	uint32_t ps;
	size_t nl;
	int idx;

	if (r->type == HVT_TDAT_J_CLOCK) {
		if (!r->len || r->len >= sizeof(cl))
			return -EINVAL;
		memcpy(cl, r->data, r->len);
		cl[r->len] = '\0';
		return hvt_tdat_writer_set_buffer_clock(w, r->a, cl);
	}
	if (r->len < 6)
		return -EINVAL;
	ps = (uint32_t)r->data[0] | (uint32_t)r->data[1] << 8 |
	     (uint32_t)r->data[2] << 16 | (uint32_t)r->data[3] << 24;
	name = (const char *)r->data + 4;
	nl = strnlen(name, r->len - 4);
	if (nl + 4 >= r->len)
		return -EINVAL;
	clock = name + nl + 1;
	if (strnlen(clock, r->len - 4 - nl - 1) == r->len - 4 - nl - 1)
		return -EINVAL;
	idx = hvtrace_tracedat_writer_add_buffer(w, name, clock, r->b, ps);
	if (idx < 0)
		return idx;
	/* The journal's page records name buffers by this index. */
	if (idx != r->a)
		return hvt_err(-EINVAL,
			       "journal: buffer '%s' is at %d, not %u", name,
			       idx, r->a);
	return 0;
}

HVTRACE_API int
hvtrace_tracedat_recover(const char *path,
			 struct hvtrace_tracedat_recover_stats *st)
{
	struct hvtrace_tracedat_recover_stats dummy;
	struct hvtrace_tracedat_writer *w = NULL;
	uint64_t meta_begin = 0, meta_end = 0, cur_begin = 0;
	struct hvt_tdat_jparse j;
	struct hvt_tdat_jrec r;
	bool in_meta = false, have_meta = false;
	struct stat sb;
	void *map = MAP_FAILED;
	char *jp;
	int fd, ret;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (!path || !*path)
		return hvt_err(-EINVAL, "recover: no file given");
	jp = hvt_tdat_journal_path(path);
	if (!jp)
		return hvt_err(-ENOMEM, "out of memory");
	fd = open(jp, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		hvt_err(ret, "%s: %s (no unfinished recording of %s to "
			     "recover)",
			jp, strerror(-ret), path);
		free(jp);
		return ret;
	}
	/* A recorder holds it while it records. */
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		ret = hvt_err(-EBUSY,
			      "%s is still being recorded (a running "
			      "hvtrace record holds %s): stop it with "
			      "Ctrl-C or SIGTERM and it finishes the file",
			      path, jp);
		goto out;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		ret = hvt_err(-EINVAL, "%s is not a regular file", jp);
		goto out;
	}
	if (sb.st_size < (off_t)HVT_TDAT_JOURNAL_HDR) {
		ret = hvt_err(-EINVAL,
			      "%s is empty: the recording was killed before "
			      "it started; nothing to recover",
			      jp);
		goto out;
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ret = hvt_err(-errno, "cannot map %s: %s", jp, strerror(errno));
		goto out;
	}
	ret = hvt_tdat_jparse_init(&j, map, (uint64_t)sb.st_size);
	if (ret) {
		ret = hvt_err(ret, "%s: %s", jp, hvtrace_last_error());
		goto out;
	}
	/* The last complete metadata snapshot. */
	while (hvt_tdat_jparse_next(&j, &r) > 0) {
		if (r.type == HVT_TDAT_J_META_BEGIN) {
			in_meta = true;
			cur_begin = r.off;
		} else if (r.type == HVT_TDAT_J_META_END && in_meta) {
			in_meta = false;
			have_meta = true;
			meta_begin = cur_begin;
			meta_end = r.off;
		}
	}
	if (!have_meta) {
		ret = hvt_err(-ENODATA,
			      "%s: no complete metadata in it (%s); nothing "
			      "to recover",
			      jp,
			      j.bad_records > j.torn
				      ? "the journal is damaged"
				      : "the recording was killed before it "
					"had started");
		goto out;
	}
	ret = hvtrace_tracedat_writer_create(path, j.page_size, &w);
	if (ret)
		goto out;
	hvt_tdat_jparse_init(&j, map, (uint64_t)sb.st_size);
	while (!ret && hvt_tdat_jparse_next(&j, &r) > 0) {
		switch (r.type) {
		case HVT_TDAT_J_BUFFER:
		case HVT_TDAT_J_CLOCK:
			ret = rv_buffer(w, &r);
			if (ret)
				ret = hvt_err(ret,
					      "%s: a damaged buffer record at "
					      "%llu: cannot recover",
					      jp, (unsigned long long)r.off);
			break;
		case HVT_TDAT_J_PAGE:
			if (hvtrace_tracedat_writer_add_page(w, r.a, r.b,
							     r.data, r.len))
				st->bad_pages++;
			else
				st->pages++;
			break;
		case HVT_TDAT_J_META_BEGIN:
		case HVT_TDAT_J_META_END:
			break;
		default:
			if (r.off > meta_begin && r.off < meta_end &&
			    rv_meta(w, &r))
				st->bad_records++;
			break;
		}
	}
	st->bad_records += j.bad_records;
	st->bad_bytes = j.bad_bytes;
	st->torn = j.torn;
	if (ret) {
		hvtrace_tracedat_writer_abort(w);
		goto out;
	}
	ret = hvtrace_tracedat_writer_finish(w);
	if (!ret && unlink(jp))
		ret = hvt_err(-errno, "%s is complete, but %s stays: %s", path,
			      jp, strerror(errno));
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)sb.st_size);
	close(fd);
	free(jp);
	return ret;
}
