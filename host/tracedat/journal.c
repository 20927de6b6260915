// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the journal of a recording, the writer's side.
 *
 * The writer keeps each CPU's pages in memory (or a temporary file that
 * vanishes with the process) and writes the trace.dat only when the
 * recording ends: a recorder killed with SIGKILL, by the OOM killer or a
 * power cut would leave nothing.  So the recorder's writer also appends
 * what it is given to FILE.unfinished, beside the output:
 *
 *   - each buffer as it is added, and a buffer's clock when it changes;
 *   - every page, as it is added (from reader threads too: the records
 *     go through one buffer under @jlock, in the order they came, so each
 *     CPU's pages stay in order);
 *   - once recording has started, a snapshot of the metadata (headers,
 *     formats, kallsyms, printk formats, options, cmdlines) between
 *     META_BEGIN and META_END: the recorder runs its metadata pass with
 *     @jmeta set, and the writer's metadata calls then go into the
 *     journal only.
 *
 * What is buffered is written out every HVT_TDAT_JOURNAL_WRITE_MS (the
 * recorder's poll) and fdatasync()ed every HVT_TDAT_JOURNAL_SYNC_MS.  The
 * journal is opened 0600 and held with flock(LOCK_EX) while recording,
 * so that recovery and report can tell a running recording from a dead
 * one; it is removed when FILE is complete (and when the recording fails
 * and removes FILE).  journal_parse.c reads it back, recover.c writes
 * FILE from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rw-local.h"

char *hvt_tdat_journal_path(const char *path)
{
	size_t n = strlen(path);
	char *p = malloc(n + sizeof(HVT_TDAT_JOURNAL_SUFFIX));

	if (p) {
		memcpy(p, path, n);
		memcpy(p + n, HVT_TDAT_JOURNAL_SUFFIX,
		       sizeof(HVT_TDAT_JOURNAL_SUFFIX));
	}
	return p;
}

static void jw_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int jw_write(int fd, struct iovec *v, int n)
{
	ssize_t r;

	while (n > 0) {
		r = writev(fd, v, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n > 0 && (size_t)r >= v->iov_len) {
			r -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n > 0) {
			v->iov_base = (char *)v->iov_base + r;
			v->iov_len -= (size_t)r;
		}
	}
	return 0;
}

/* What is buffered into the file (@jlock held). */
static int jw_out(struct hvtrace_tracedat_writer *w)
{
	struct iovec v = {w->jbuf, w->jlen};
	int ret;

	ret = w->jerr;
	if (!ret && w->jlen)
		ret = jw_write(w->jfd, &v, 1);
	w->jlen = 0;
	if (ret) {
		/* Said on each thread that meets it (error texts are per
		 * thread). */
		w->jerr = ret;
		return hvt_err(ret, "cannot write %s: %s", w->jpath,
			       strerror(-ret));
	}
	return 0;
}

int hvt_tdat_journal_open(struct hvtrace_tracedat_writer *w)
{
	uint8_t hdr[HVT_TDAT_JOURNAL_HDR];
	struct iovec v = {hdr, sizeof(hdr)};
	int ret;

	if (!w || w->jfd >= 0)
		return 0;
	w->jpath = hvt_tdat_journal_path(w->path);
	w->jbuf = malloc(WR_JBUF_SIZE);
	if (!w->jpath || !w->jbuf)
		return hvt_err(-ENOMEM, "out of memory");
	/* Never over another recording's journal: a killed one's is all
	 * that is left of it. */
	w->jfd = open(w->jpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->jfd < 0 && errno == EEXIST)
		return hvt_err(-EEXIST,
			       "%s exists: an unfinished recording of %s "
			       "(killed, or still running); recover it "
			       "with 'hvtrace record --recover %s', or "
			       "remove it, or choose another -o",
			       w->jpath, w->path, w->path);
	if (w->jfd < 0) {
		ret = -errno;
		return hvt_err(ret,
			       "cannot create %s: %s (it keeps what is "
			       "recorded until %s is complete; choose a "
			       "writable output directory with -o)",
			       w->jpath, strerror(-ret), w->path);
	}
	if (flock(w->jfd, LOCK_EX | LOCK_NB)) {
		ret = -errno;
		wr_journal_close(w, true);
		return hvt_err(ret, "cannot lock %s: %s", w->jpath,
			       strerror(-ret));
	}
	memcpy(hdr, HVT_TDAT_JOURNAL_MAGIC, 8);
	jw_le32(hdr + 8, 1);
	jw_le32(hdr + 12, w->page_size);
	ret = jw_write(w->jfd, &v, 1);
	if (ret) {
		wr_journal_close(w, true);
		return hvt_err(ret, "cannot write %s: %s", w->jpath,
			       strerror(-ret));
	}
	return 0;
}

int wr_journal_add2(struct hvtrace_tracedat_writer *w, uint16_t type,
		    uint16_t a, uint32_t b, const void *d1, size_t l1,
		    const void *d2, size_t l2)
{
	uint8_t *buf;
	int ret;

	if (w->jfd < 0)
		return 0;
	if (l1 + l2 > HVT_TDAT_JREC_MAX)
		return hvt_err(-EFBIG, "%s: a record of %zu bytes", w->jpath,
			       l1 + l2);
	buf = malloc(l1 + l2 ? l1 + l2 : 1);
	if (!buf)
		return hvt_err(-ENOMEM, "out of memory");
	if (l1)
		memcpy(buf, d1, l1);
	if (l2)
		memcpy(buf + l1, d2, l2);
	ret = wr_journal_add(w, type, a, b, buf, (uint32_t)(l1 + l2));
	free(buf);
	return ret;
}

int wr_journal_add(struct hvtrace_tracedat_writer *w, uint16_t type,
		   uint16_t a, uint32_t b, const void *data, uint32_t len)
{
	uint8_t hdr[HVT_TDAT_JREC_HDR];
	int ret = 0;

	if (w->jfd < 0)
		return 0;
	if (len > HVT_TDAT_JREC_MAX)
		return hvt_err(-EFBIG, "%s: a record of %u bytes", w->jpath,
			       len);
	jw_le32(hdr, HVT_TDAT_JREC_MAGIC);
	hdr[4] = (uint8_t)type;
	hdr[5] = (uint8_t)(type >> 8);
	hdr[6] = (uint8_t)a;
	hdr[7] = (uint8_t)(a >> 8);
	jw_le32(hdr + 8, b);
	jw_le32(hdr + 12, len);
	jw_le32(hdr + 16, hvt_tdat_jrec_sum(type, a, b, data, len));
	pthread_mutex_lock(&w->jlock);
	if (w->jlen + sizeof(hdr) + len > WR_JBUF_SIZE)
		ret = jw_out(w);
	if (!ret && sizeof(hdr) + len > WR_JBUF_SIZE) {
		struct iovec v[2] = {{hdr, sizeof(hdr)},
				     {(void *)data, len}};

		ret = jw_write(w->jfd, v, 2);
		if (ret) {
			w->jerr = ret;
			ret = hvt_err(ret, "cannot write %s: %s", w->jpath,
				      strerror(-ret));
		}
	} else if (!ret) {
		memcpy(w->jbuf + w->jlen, hdr, sizeof(hdr));
		if (len)
			memcpy(w->jbuf + w->jlen + sizeof(hdr), data, len);
		w->jlen += sizeof(hdr) + len;
	}
	pthread_mutex_unlock(&w->jlock);
	return ret;
}

int hvt_tdat_journal_sync(struct hvtrace_tracedat_writer *w, bool durable)
{
	int ret;

	if (!w || w->jfd < 0)
		return 0;
	pthread_mutex_lock(&w->jlock);
	ret = jw_out(w);
	pthread_mutex_unlock(&w->jlock);
	if (!ret && durable && fdatasync(w->jfd) && errno != EINVAL) {
		ret = -errno;
		ret = hvt_err(ret, "cannot sync %s: %s", w->jpath,
			      strerror(-ret));
	}
	return ret;
}

bool hvt_tdat_journal_snapshot(const struct hvtrace_tracedat_writer *w)
{
	return w && w->jmeta;
}

void hvt_tdat_journal_meta_begin(struct hvtrace_tracedat_writer *w)
{
	if (!w || w->jfd < 0)
		return;
	wr_journal_add(w, HVT_TDAT_J_META_BEGIN, 0, 0, NULL, 0);
	w->jmeta = true;
}

int hvt_tdat_journal_meta_end(struct hvtrace_tracedat_writer *w)
{
	int ret;

	if (!w || w->jfd < 0)
		return 0;
	w->jmeta = false;
	ret = wr_journal_add(w, HVT_TDAT_J_META_END, 0, 0, NULL, 0);
	return ret ? ret : hvt_tdat_journal_sync(w, true);
}

void wr_journal_close(struct hvtrace_tracedat_writer *w, bool remove)
{
	if (w->jfd >= 0) {
		if (remove && w->jpath)
			unlink(w->jpath);
		close(w->jfd);
	}
	w->jfd = -1;
	free(w->jpath);
	w->jpath = NULL;
	free(w->jbuf);
	w->jbuf = NULL;
	w->jlen = 0;
}
