// SPDX-License-Identifier: MIT
/*
 * A guest kernel's formats folder (laid out like tracefs, as "hvtrace
 * guest kformats" writes it) as a format set (HVT_KFSET, <hvtrace/proto.h>):
 * the one reader of such a folder for an attach by pid.  The client
 * (libhvtrace-daemon, hvtrace_daemon_attach_vm_pid()) reads it with its
 * user's rights and passes the set in a sealed memfd; hvtraced reads root's
 * own "vmpid:PID,formats=DIR" with it too, and both sets go through the
 * daemon's one parser (host/hvtraced/kring_formats.c).
 *
 * Nothing here blocks or follows a link: every file is opened
 * O_NONBLOCK | O_NOFOLLOW and must be regular; the set keeps the limits the
 * daemon takes (HVT_KFSET_MAX_FILES, HVT_KFSET_MAX_BYTES, one text at most
 * HVT_KFSET_TEXT_MAX) and only names it takes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace/proto.h>

#include "hvt_util.h"

struct kfs {
	uint8_t *b;
	size_t len, cap;
	size_t files, bytes;
	const char *dir;
	unsigned int flags;
	char *msg;
	size_t msgsize;
};

static int kfs_put(struct kfs *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 65536;
		uint8_t *nb;

		while (cap < s->len + n)
			cap *= 2;
		nb = realloc(s->b, cap);
		if (!nb) {
			snprintf(s->msg, s->msgsize, "out of memory");
			return -ENOMEM;
		}
		s->b = nb;
		s->cap = cap;
	}
	memcpy(s->b + s->len, p, n);
	s->len += n;
	return 0;
}

/* A name part the daemon's parser takes: printable, no dot first. */
static bool kfs_part_ok(const char *p)
{
	if (!*p || *p == '.')
		return false;
	for (; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

/* events/@sys/@ev/format of the folder (@efd: events/@sys/@ev). */
static int kfs_add(struct kfs *s, int efd, const char *sys, const char *ev)
{
	bool skip = s->flags & HVT_UTIL_KFSET_SKIP;
	uint8_t hdr[HVT_KFSET_REC_HDR];
	size_t nl = strlen(sys) + 1 + strlen(ev), off = 0;
	struct stat st;
	ssize_t got;
	uint8_t *text;
	uint32_t tl;
	int fd, ret;

	/* Never blocks: a FIFO would hold whoever reads in open(). */
	fd = openat(efd, "format",
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || skip)
			return 0;
		ret = -errno;
		snprintf(s->msg, s->msgsize,
			 "formats folder %s: events/%s/%s/format: %s", s->dir,
			 sys, ev, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		if (skip)
			return 0;
		snprintf(s->msg, s->msgsize,
			 "formats folder %s: events/%s/%s/format is not a "
			 "regular file (a FIFO, device or socket): give a "
			 "folder of plain files, as 'hvtrace guest kformats' "
			 "writes it",
			 s->dir, sys, ev);
		return -EINVAL;
	}
	if (!st.st_size || st.st_size > HVT_KFSET_TEXT_MAX ||
	    nl > HVT_PROTO_EVNAME_MAX || !kfs_part_ok(sys) ||
	    !kfs_part_ok(ev)) {
		close(fd);
		return 0; /* not a format the daemon takes: skipped */
	}
	if (s->files >= HVT_KFSET_MAX_FILES ||
	    s->bytes + (size_t)st.st_size > HVT_KFSET_MAX_BYTES) {
		close(fd);
		snprintf(s->msg, s->msgsize,
			 "formats folder %s: more formats than hvtraced takes "
			 "(16384 files, 16 MiB)",
			 s->dir);
		return -E2BIG;
	}
	text = malloc((size_t)st.st_size);
	if (!text) {
		close(fd);
		snprintf(s->msg, s->msgsize, "out of memory");
		return -ENOMEM;
	}
	/* Bounded by the size fstat gave; a file that grew is cut. */
	while (off < (size_t)st.st_size &&
	       (got = read(fd, text + off, (size_t)st.st_size - off)) > 0)
		off += (size_t)got;
	close(fd);
	if (!off) {
		free(text);
		return 0;
	}
	tl = (uint32_t)off;
	hdr[0] = (uint8_t)nl;
	hdr[1] = (uint8_t)(nl >> 8);
	hdr[2] = (uint8_t)tl;
	hdr[3] = (uint8_t)(tl >> 8);
	hdr[4] = (uint8_t)(tl >> 16);
	hdr[5] = (uint8_t)(tl >> 24);
	ret = kfs_put(s, hdr, sizeof(hdr));
	if (!ret)
		ret = kfs_put(s, sys, strlen(sys));
	if (!ret)
		ret = kfs_put(s, "/", 1);
	if (!ret)
		ret = kfs_put(s, ev, strlen(ev));
	if (!ret)
		ret = kfs_put(s, text, off);
	free(text);
	if (!ret) {
		s->files++;
		s->bytes += off;
	}
	return ret;
}

static DIR *kfs_opendir_at(int dfd, const char *name)
{
	int fd = openat(dfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/**
 * hvt_util_kfset_read() - a formats folder's events/SYSTEM/EVENT/format
 * files as a format set
 * @dir:     the folder
 * @flags:   HVT_UTIL_KFSET_SKIP: skip a format file that cannot be opened
 *           or is not a regular file (else the read fails saying which)
 * @set:     the set (HVT_KFSET), malloc()ed: free() it
 * @len:     its length
 * @msg:     what was wrong, for the caller's message (empty on success)
 * @msgsize: its size
 *
 * Names the daemon would refuse (not printable, a leading dot, too long),
 * empty files and files over HVT_KFSET_TEXT_MAX are skipped.
 *
 * Return: 0; -ENOENT (no events/ folder, or no format in it), -EINVAL (a
 * format that is not a regular file), -E2BIG (over the daemon's limits),
 * -ENOMEM, or the -errno of an open.
 */
int hvt_util_kfset_read(const char *dir, unsigned int flags, uint8_t **set,
			size_t *len, char *msg, size_t msgsize)
{
	struct kfs s = { .dir = dir, .flags = flags, .msg = msg,
			 .msgsize = msgsize };
	struct dirent *se, *ee;
	DIR *sd, *ed;
	int ret, dfd;

	*set = NULL;
	*len = 0;
	if (msgsize)
		msg[0] = '\0';
	ret = kfs_put(&s, HVT_KFSET_MAGIC, HVT_KFSET_MAGIC_LEN);
	if (ret)
		return ret;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	sd = dfd >= 0 ? kfs_opendir_at(dfd, "events") : NULL;
	if (!sd) {
		ret = errno ? -errno : -ENOENT;
		if (dfd >= 0)
			close(dfd);
		free(s.b);
		snprintf(msg, msgsize,
			 "formats folder %s: no events/ folder in it (%s); "
			 "write one with 'hvtrace guest kformats NAME DIR' or "
			 "copy the guest's tracefs",
			 dir, strerror(-ret));
		return ret;
	}
	close(dfd);
	while (!ret && (se = readdir(sd))) {
		if (se->d_name[0] == '.')
			continue;
		ed = kfs_opendir_at(dirfd(sd), se->d_name);
		while (!ret && ed && (ee = readdir(ed))) {
			int efd;

			if (ee->d_name[0] == '.')
				continue;
			efd = openat(dirfd(ed), ee->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
			if (efd < 0)
				continue;
			ret = kfs_add(&s, efd, se->d_name, ee->d_name);
			close(efd);
		}
		if (ed)
			closedir(ed);
	}
	closedir(sd);
	if (!ret && !s.files) {
		snprintf(msg, msgsize,
			 "formats folder %s: no events/SYSTEM/EVENT/format "
			 "file in it",
			 dir);
		ret = -ENOENT;
	}
	if (ret) {
		free(s.b);
		return ret;
	}
	*set = s.b;
	*len = s.len;
	return 0;
}

/**
 * hvt_util_kfset_memfd() - a format set in a memfd sealed against writes
 * and resizing, as hvtraced takes it
 * @set:     the set
 * @len:     its length
 * @msg:     what was wrong (empty on success)
 * @msgsize: its size
 *
 * Return: the descriptor (close-on-exec), or -errno with @msg.
 */
int hvt_util_kfset_memfd(const uint8_t *set, size_t len, char *msg,
			 size_t msgsize)
{
	size_t off = 0;
	int fd, err;

	if (msgsize)
		msg[0] = '\0';
	fd = memfd_create("hvtrace-kformats", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		err = errno;
		snprintf(msg, msgsize, "memfd_create: %s", strerror(err));
		return -err;
	}
	errno = 0;
	while (off < len) {
		ssize_t w = write(fd, set + off, len - off);

		if (w <= 0)
			goto fail;
		off += (size_t)w;
	}
	if (fcntl(fd, F_ADD_SEALS,
		  F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto fail;
	return fd;
fail:
	err = errno ? errno : EIO;
	close(fd);
	snprintf(msg, msgsize, "cannot fill the formats memfd: %s",
		 strerror(err));
	return -err;
}
