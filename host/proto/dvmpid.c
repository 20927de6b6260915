// SPDX-License-Identifier: MIT
/*
 * libhvtrace-daemon: attach a VMM's guest kernel ring to hvtraced by the
 * VMM's pid (hvtrace_daemon_attach_vm_pid(), hvtrace daemon attach
 * --vm-pid).
 *
 * The root daemon never opens /proc/PID or a user's formats folder for a
 * client: this side does, with the user's rights, and passes what it
 * opened (SCM_RIGHTS with an ATTACH_AREA of flag HVT_ATTACH_VM_FDS,
 * <hvtrace/proto.h>).  So the kernel's ptrace check decides who reads a
 * VMM's memory, a pid reused meanwhile reads nothing of another user,
 * and a FIFO in the folder holds up no one but this client (which does
 * not wait on it either: O_NONBLOCK, regular files only).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hvtrace-local.h"
#include <hvtrace-daemon.h>
#include <hvtrace-ring.h>

#define DV_MAX_FILES 16384u	 /* what hvtraced takes (KF_MAX_FILES) */
#define DV_MAX_BYTES (16u << 20) /* ... and KF_MAX_BYTES */

struct dv_set {
	uint8_t *b;
	size_t len, cap;
	size_t files, bytes;
	const char *dir;
};

static int dv_put(struct dv_set *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 65536;
		uint8_t *nb;

		while (cap < s->len + n)
			cap *= 2;
		nb = realloc(s->b, cap);
		if (!nb)
			return hvt_err(-ENOMEM, "out of memory");
		s->b = nb;
		s->cap = cap;
	}
	memcpy(s->b + s->len, p, n);
	s->len += n;
	return 0;
}

/* A name part hvtraced takes (kring_formats.c): printable, no dot first. */
static bool dv_part_ok(const char *p)
{
	if (!*p || *p == '.')
		return false;
	for (; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

/* events/@sys/@ev/format of the folder (@efd: events/@sys/@ev). */
static int dv_add(struct dv_set *s, int efd, const char *sys, const char *ev)
{
	uint8_t hdr[HVT_KFSET_REC_HDR];
	size_t nl = strlen(sys) + 1 + strlen(ev), off = 0;
	struct stat st;
	ssize_t got;
	uint8_t *text;
	uint32_t tl;
	int fd, ret;

	fd = openat(efd, "format",
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 :
		       hvt_err(-errno, "formats folder %s: events/%s/%s/format: "
				       "%s", s->dir, sys, ev, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return hvt_err(-EINVAL, "formats folder %s: events/%s/%s/format "
					"is not a regular file (a FIFO, device "
					"or socket): give a folder of plain "
					"files, as 'hvtrace guest kformats' "
					"writes it",
			       s->dir, sys, ev);
	}
	if (!st.st_size || st.st_size > HVT_KFSET_TEXT_MAX ||
	    nl > HVT_PROTO_EVNAME_MAX || !dv_part_ok(sys) || !dv_part_ok(ev)) {
		close(fd);
		return 0; /* not a format hvtraced takes: skipped */
	}
	if (s->files >= DV_MAX_FILES ||
	    s->bytes + (size_t)st.st_size > DV_MAX_BYTES) {
		close(fd);
		return hvt_err(-E2BIG, "formats folder %s: more formats than "
				       "hvtraced takes (16384 files, 16 MiB)",
			       s->dir);
	}
	text = malloc((size_t)st.st_size);
	if (!text) {
		close(fd);
		return hvt_err(-ENOMEM, "out of memory");
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
	ret = dv_put(s, hdr, sizeof(hdr));
	if (!ret)
		ret = dv_put(s, sys, strlen(sys));
	if (!ret)
		ret = dv_put(s, "/", 1);
	if (!ret)
		ret = dv_put(s, ev, strlen(ev));
	if (!ret)
		ret = dv_put(s, text, off);
	free(text);
	if (!ret) {
		s->files++;
		s->bytes += off;
	}
	return ret;
}

static DIR *dv_opendir_at(int dfd, const char *name)
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

/* Every events/SYSTEM/EVENT/format of @dir as an HVT_KFSET in @s. */
static int dv_read_folder(struct dv_set *s, const char *dir)
{
	struct dirent *se, *ee;
	DIR *sd, *ed;
	int ret, dfd;

	s->dir = dir;
	ret = dv_put(s, HVT_KFSET_MAGIC, HVT_KFSET_MAGIC_LEN);
	if (ret)
		return ret;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	sd = dfd >= 0 ? dv_opendir_at(dfd, "events") : NULL;
	if (!sd) {
		ret = -errno;
		if (dfd >= 0)
			close(dfd);
		return hvt_err(ret, "formats folder %s: no events/ folder in "
				    "it (%s); write one with 'hvtrace guest "
				    "kformats NAME DIR' or copy the guest's "
				    "tracefs",
			       dir, strerror(-ret));
	}
	close(dfd);
	while (!ret && (se = readdir(sd))) {
		if (se->d_name[0] == '.')
			continue;
		ed = dv_opendir_at(dirfd(sd), se->d_name);
		while (!ret && ed && (ee = readdir(ed))) {
			int efd;

			if (ee->d_name[0] == '.')
				continue;
			efd = openat(dirfd(ed), ee->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
			if (efd < 0)
				continue;
			ret = dv_add(s, efd, se->d_name, ee->d_name);
			close(efd);
		}
		if (ed)
			closedir(ed);
	}
	closedir(sd);
	if (!ret && !s->files)
		ret = hvt_err(-ENOENT, "formats folder %s: no "
				       "events/SYSTEM/EVENT/format file in it",
			      dir);
	return ret;
}

/* The set in a memfd sealed against writes and resizing. */
static int dv_memfd(const struct dv_set *s)
{
	size_t off = 0;
	int fd, err;

	fd = memfd_create("hvtrace-kformats", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return hvt_err(-errno, "memfd_create: %s", strerror(errno));
	while (off < s->len) {
		ssize_t w = write(fd, s->b + off, s->len - off);

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
	return hvt_err(-err, "cannot fill the formats memfd: %s",
		       strerror(err));
}

int hvtrace_daemon_attach_vm_pid(struct hvtrace_daemon *c, const char *name,
				 int pid, const char *formats, char *text,
				 size_t textsize)
{
	char abs[PATH_MAX], *spec = NULL;
	struct hvtrace_kring_source src;
	struct hvtrace_kring *k = NULL;
	struct dv_set set = { 0 };
	int fds[HVT_ATTACH_MAX_FDS], nr = 0, pidfd, kfd = -1, ret;
	struct pollfd pfd;
	struct hvt_msg m;

	if (text && textsize)
		text[0] = '\0';
	if (!c || !name || pid <= 0)
		return hvt_err(-EINVAL, "hvtrace_daemon_attach_vm_pid: bad "
					"argument");
	/* The process first: the pidfd is the VMM's, whatever comes. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return errno == ESRCH ?
			       hvt_err(-ESRCH, "no process %d (--vm-pid names "
					       "the VMM process, e.g. QEMU's "
					       "pid)",
				       pid) :
			       hvt_err(-errno, "pidfd_open(%d): %s", pid,
				       strerror(errno));
	/* With this process's rights: the kernel's ptrace check. */
	ret = hvtrace_kring_open_pid(pid, &k);
	if (!ret)
		ret = hvtrace_kring_pid_source(k, &src);
	if (ret)
		goto out;
	pfd = (struct pollfd){ .fd = pidfd, .events = POLLIN };
	if (poll(&pfd, 1, 0) == 1) {
		/* It exited while it was read: the pid may be another's. */
		ret = hvt_err(-ESRCH, "process %d exited while its memory was "
				      "scanned",
			      pid);
		goto out;
	}
	if (!src.mapped && src.pagemap < 0) {
		ret = hvt_err(-EACCES, "cannot read /proc/%d/pagemap: "
				       "hvtraced skips unpopulated memory with "
				       "it",
			      pid);
		goto out;
	}
	fds[nr++] = pidfd;
	fds[nr++] = src.fd;
	if (!src.mapped)
		fds[nr++] = src.pagemap;
	if (formats) {
		if (!realpath(formats, abs)) {
			ret = hvt_err(-errno, "--formats %s: %s", formats,
				      strerror(errno));
			goto out;
		}
		ret = dv_read_folder(&set, abs);
		if (ret)
			goto out;
		kfd = dv_memfd(&set);
		if (kfd < 0) {
			ret = kfd;
			goto out;
		}
		fds[nr++] = kfd;
	}
	if (src.mapped)
		ret = asprintf(&spec, "%s=vmpid:%d,map=0x%llx+0x%llx@0x%llx%s%s",
			       name, pid, (unsigned long long)src.base,
			       (unsigned long long)src.size,
			       (unsigned long long)src.foff,
			       formats ? ",formats=" : "", formats ? abs : "");
	else
		ret = asprintf(&spec, "%s=vmpid:%d,mem=0x%llx+0x%llx%s%s", name,
			       pid, (unsigned long long)src.base,
			       (unsigned long long)src.size,
			       formats ? ",formats=" : "", formats ? abs : "");
	if (ret < 0) {
		spec = NULL;
		ret = hvt_err(-ENOMEM, "out of memory");
		goto out;
	}
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_ATTACH_AREA;
	m.u.arg.arg = HVT_ATTACH_VM_FDS;
	m.u.arg.s.ptr = spec;
	m.u.arg.s.len = (uint32_t)strlen(spec);
	ret = hvtrace_daemon_pass_fds(c, fds, nr);
	if (!ret)
		ret = hvtrace_daemon_call_result(c, &m, NULL, text, textsize);
	hvtrace_daemon_pass_fds(c, NULL, 0);
out:
	free(spec);
	free(set.b);
	if (kfd >= 0)
		close(kfd);
	hvtrace_kring_close(k);
	close(pidfd);
	return ret;
}
