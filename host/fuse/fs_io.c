// SPDX-License-Identifier: MIT
/*
 * libhvtrace: opening, reading, polling and releasing the files of
 * hvtrace mount.
 *
 * One job: the life of an open file.  Snapshot files are rendered at open
 * (fs_render.c) and read from that copy; trace_pipe and trace_pipe_raw
 * consume the view's queues.  A read that finds nothing is parked -- it
 * holds no thread -- and fz_wake() answers it when records arrive, when
 * the writer stopped and was read to the end, when the remote goes away,
 * when it is interrupted or at shutdown.  The lookup of nodes is in
 * fs.c, writes are in fs_write.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_lowlevel.h>

#include "fs-local.h"

/* --- open, read, write, poll ------------------------------------------------
 */

void fz_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_node *n;
	struct fz_remote *r;
	struct fz_fh *fh;
	bool ok = false;
	int acc = fi->flags & O_ACCMODE, ret = 0;

	fh = calloc(1, sizeof(*fh));
	if (!fh) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&v->lock);
	n = node_of(v->fs, ino);
	r = n ? node_check(v, n, &ok) : NULL;
	if (ok && r && node_def(n)) {
		fh->node = *n;
		fh->def = node_def(n);
		fh->r = r;
		fh->flags = fi->flags;
		fz_remote_get(r);
	}
	pthread_mutex_unlock(&v->lock);
	if (!fh->r) {
		free(fh);
		fuse_reply_err(req, !ok ? ENOENT : EISDIR);
		return;
	}
	if ((fi->flags & O_TRUNC) && acc != O_RDONLY)
		ret = fh_truncate(v, fh->r, &fh->node);
	if (!ret && acc != O_WRONLY && !fh->def->pipe)
		ret = fh_render(v, fh);
	if (ret) {
		pthread_mutex_lock(&v->lock);
		fz_remote_put(fh->r);
		pthread_mutex_unlock(&v->lock);
		free(fh->buf);
		free(fh);
		fuse_reply_err(req, -ret);
		return;
	}
	pthread_mutex_lock(&v->lock);
	fh->fnext = ((struct fz_fs *)v->fs)->files;
	if (fh->fnext)
		fh->fnext->fprev = fh;
	((struct fz_fs *)v->fs)->files = fh;
	pthread_mutex_unlock(&v->lock);
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	/* Nothing to flush: a close never waits for us (nor fails when
	 * the mount went away meanwhile). */
	fi->noflush = 1;
	if (fh->def->pipe)
		fi->nonseekable = 1;
	fuse_reply_open(req, fi);
}

static void poll_forget(struct fz_fs *fs, struct fz_fh *fh)
{
	size_t i;

	for (i = 0; i < fs->nr_polls; i++)
		if (fs->polls[i] == fh) {
			fs->polls[i] = fs->polls[--fs->nr_polls];
			break;
		}
}

/* Free @fh once released and idle (view lock held). */
void fh_put(struct fz_fs *fs, struct fz_fh *fh)
{
	if (fh->busy || !fh->released)
		return;
	if (fh->fprev)
		fh->fprev->fnext = fh->fnext;
	else
		fs->files = fh->fnext;
	if (fh->fnext)
		fh->fnext->fprev = fh->fprev;
	fz_remote_put(fh->r);
	free(fh->buf);
	free(fh->rest);
	free(fh->raw);
	free(fh);
}

/* Lock the view and keep @fh alive until fh_drop(). */
static void fh_hold(struct fz_view *v, struct fz_fh *fh)
{
	pthread_mutex_lock(&v->lock);
	fh->busy++;
}

static void fh_drop(struct fz_view *v, struct fz_fh *fh)
{
	pthread_mutex_lock(&v->lock);
	fh->busy--;
	fh_put(v->fs, fh);
	pthread_mutex_unlock(&v->lock);
}

void fz_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_fs *fs = v->fs;
	struct fz_fh *fh = (struct fz_fh *)(uintptr_t)fi->fh;
	struct fz_waiter **pp, *w;

	pthread_mutex_lock(&v->lock);
	poll_forget(fs, fh);
	if (fh->ph)
		fuse_pollhandle_destroy(fh->ph);
	fh->ph = NULL;
	/* A read still parked on it (the kernel should not let that
	 * happen) gets the end of file. */
	for (pp = &fs->waiters; (w = *pp);) {
		if (w->fh != fh) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		fuse_reply_buf(w->req, NULL, 0);
		free(w);
	}
	fh->released = true;
	fh_put(fs, fh);
	pthread_mutex_unlock(&v->lock);
	fuse_reply_err(req, 0);
}

/*
 * Produce what a consuming read of @fh can get now into @out (view lock
 * held).  Returns the byte count, 0 with *eof when the data has ended,
 * or 0 when the reader should wait.
 */
static size_t fh_produce(struct fz_fh *fh, char *out, size_t size, bool *eof)
{
	struct fz_remote *r = fh->r;
	size_t n = 0;

	*eof = false;
	if (fh->node.file == F_CPU_RAW) {
		if (fh->raw_off < fh->raw_len) {
			n = fh->raw_len - fh->raw_off;
		} else if (r->subbuf_size) {
			uint8_t *p = fh->raw;

			if (!p)
				p = malloc(HVT_ABI_MAX_SUBBUF_SIZE);
			fh->raw = p;
			fh->raw_off = 0;
			fh->raw_len = p ? fz_take_raw(r, fh->node.cpu, p) : 0;
			n = fh->raw_len;
		}
		if (n > size)
			n = size; /* the rest of the page comes next */
		if (n) {
			memcpy(out, fh->raw + fh->raw_off, n);
			fh->raw_off += (uint32_t)n;
		}
	} else {
		int cpu = fh->node.file == F_CPU_TRACE_PIPE ? (int)fh->node.cpu
							    : -1;

		if (fh->rest_off < fh->rest_len) {
			n = fh->rest_len - fh->rest_off;
			if (n > size)
				n = size;
			memcpy(out, fh->rest + fh->rest_off, n);
			fh->rest_off += n;
			return n;
		}
		free(fh->rest);
		fh->rest = NULL;
		fh->rest_len = fh->rest_off = 0;
		n = fz_take_text(r, cpu, out, size, &fh->rest, &fh->rest_len);
	}
	/* The end: the remote went, or its writer stopped and everything
	 * it committed was delivered (sources drain before they say so). */
	if (!n && (r->gone || r->stopped))
		*eof = true;
	return n;
}

static void fz_intr(fuse_req_t req, void *data)
{
	struct fz_view *v = req_view(req);
	struct fz_fs *fs = v->fs;
	uint64_t id = (uint64_t)(uintptr_t)data;
	struct fz_waiter **pp, *w;

	pthread_mutex_lock(&v->lock);
	for (pp = &fs->waiters; (w = *pp); pp = &w->next)
		if (w->id == id) {
			*pp = w->next;
			fuse_reply_err(w->req, EINTR);
			free(w);
			break;
		}
	pthread_mutex_unlock(&v->lock);
}

void fz_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_fh *fh = (struct fz_fh *)(uintptr_t)fi->fh;
	struct fz_waiter *w;
	bool eof, drained = false;
	uint64_t id;
	char *out;
	size_t n;

	if (!fh->def->pipe) {
		fh_hold(v, fh);
		pthread_mutex_unlock(&v->lock);
		if (off < 0 || (size_t)off >= fh->len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, fh->buf + off,
				       fh->len - (size_t)off < size
					       ? fh->len - (size_t)off
					       : size);
		fh_drop(v, fh);
		return;
	}
	out = malloc(size ? size : 1);
	if (!out) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (;;) {
		pthread_mutex_lock(&v->lock);
		n = fh_produce(fh, out, size, &eof);
		/* A stopped writer's end is believed only after a drain:
		 * its last records may still be on their way. */
		if (n || (eof && (drained || fh->r->gone)) || v->shutdown) {
			pthread_mutex_unlock(&v->lock);
			fuse_reply_buf(req, out, n);
			free(out);
			return;
		}
		pthread_mutex_unlock(&v->lock);
		if (drained)
			break;
		/* Nothing queued: ask the source for everything committed
		 * until now, once, then look again. */
		if (fh->r->ops->drain)
			fh->r->ops->drain(fh->r);
		drained = true;
	}
	/* O_NONBLOCK as the file has it now (fcntl(F_SETFL) included). */
	if (fi->flags & O_NONBLOCK) {
		free(out);
		fuse_reply_err(req, EAGAIN);
		return;
	}
	/* Park the read: it holds no thread.  The interrupt hook goes in
	 * first, while nobody else can answer the request yet. */
	w = calloc(1, sizeof(*w));
	if (!w) {
		free(out);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&v->lock);
	id = ++((struct fz_fs *)v->fs)->next_waiter;
	pthread_mutex_unlock(&v->lock);
	w->id = id;
	w->req = req;
	w->fh = fh;
	w->size = size;
	fuse_req_interrupt_func(req, fz_intr, (void *)(uintptr_t)id);
	pthread_mutex_lock(&v->lock);
	n = fh_produce(fh, out, size, &eof);
	if (n || eof || v->shutdown) {
		pthread_mutex_unlock(&v->lock);
		fuse_reply_buf(req, out, n);
		free(out);
		free(w);
		return;
	}
	if (fuse_req_interrupted(req)) {
		pthread_mutex_unlock(&v->lock);
		fuse_reply_err(req, EINTR);
		free(out);
		free(w);
		return;
	}
	w->next = ((struct fz_fs *)v->fs)->waiters;
	((struct fz_fs *)v->fs)->waiters = w;
	pthread_mutex_unlock(&v->lock);
	free(out);
}

/* Data or state changed for @r: answer its parked reads, poll (lock held). */
void fz_wake(struct fz_view *v, struct fz_remote *r)
{
	struct fz_fs *fs = v->fs;
	struct fz_waiter **pp, *w;
	size_t i;

	for (pp = &fs->waiters; (w = *pp);) {
		char *out;
		size_t n;
		bool eof;

		if (w->fh->r != r) {
			pp = &w->next;
			continue;
		}
		out = malloc(w->size ? w->size : 1);
		if (!out)
			return;
		n = fh_produce(w->fh, out, w->size, &eof);
		if (n || eof) {
			*pp = w->next;
			fuse_reply_buf(w->req, out, n);
			free(w);
		} else {
			pp = &w->next;
		}
		free(out);
	}
	for (i = 0; i < fs->nr_polls; i++) {
		struct fz_fh *fh = fs->polls[i];
		int cpu;

		if (fh->r != r || !fh->ph)
			continue;
		cpu = fh->node.file == F_TRACE_PIPE ? -1 : (int)fh->node.cpu;
		if (fz_has_data(r, cpu) || r->gone || r->stopped) {
			fuse_lowlevel_notify_poll(fh->ph);
			fuse_pollhandle_destroy(fh->ph);
			fh->ph = NULL;
		}
	}
}

void fz_fs_release_waiters(struct fz_view *v)
{
	struct fz_fs *fs = v->fs;
	struct fz_waiter *w;

	if (!fs)
		return;
	while ((w = fs->waiters)) {
		fs->waiters = w->next;
		fuse_reply_buf(w->req, NULL, 0);
		free(w);
	}
}

void fz_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
	     struct fuse_pollhandle *ph)
{
	struct fz_view *v = req_view(req);
	struct fz_fs *fs = v->fs;
	struct fz_fh *fh = (struct fz_fh *)(uintptr_t)fi->fh;
	unsigned int revents = 0;

	pthread_mutex_lock(&v->lock);
	if (!fh->def->pipe) {
		revents = POLLIN | POLLRDNORM;
	} else {
		int cpu =
			fh->node.file == F_TRACE_PIPE ? -1 : (int)fh->node.cpu;

		if (fz_has_data(fh->r, cpu) || fh->rest_off < fh->rest_len ||
		    fh->raw_off < fh->raw_len || fh->r->gone || fh->r->stopped)
			revents = POLLIN | POLLRDNORM;
	}
	if (ph) {
		if (fh->ph)
			fuse_pollhandle_destroy(fh->ph);
		fh->ph = revents ? NULL : ph;
		if (revents) {
			fuse_pollhandle_destroy(ph);
		} else {
			size_t i;

			for (i = 0; i < fs->nr_polls && fs->polls[i] != fh; i++)
				;
			if (i == fs->nr_polls) {
				if (fs->nr_polls == fs->cap_polls) {
					size_t cap = fs->cap_polls
							     ? fs->cap_polls * 2
							     : 16;
					struct fz_fh **p = realloc(
						fs->polls, cap * sizeof(*p));

					if (p) {
						fs->polls = p;
						fs->cap_polls = cap;
					}
				}
				if (fs->nr_polls < fs->cap_polls)
					fs->polls[fs->nr_polls++] = fh;
			}
		}
	}
	pthread_mutex_unlock(&v->lock);
	fuse_reply_poll(req, revents);
}
