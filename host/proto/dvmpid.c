// SPDX-License-Identifier: MIT
/*
 * libhvtrace-daemon: attach a guest kernel ring to hvtraced: by the VMM's
 * pid (hvtrace_daemon_attach_vm_pid(), hvtrace daemon attach --vm-pid) or
 * by a guest RAM file (hvtrace_daemon_attach_ram(), hvtrace daemon attach
 * --ram).
 *
 * The root daemon never opens /proc/PID or a user's formats folder for a
 * client: this side does, with the user's rights, and passes what it
 * opened (SCM_RIGHTS with an ATTACH_AREA of flag HVT_ATTACH_VM_FDS,
 * <hvtrace/proto.h>).  So the kernel's ptrace check decides who reads a
 * VMM's memory, a pid reused meanwhile reads nothing of another user,
 * and a FIFO in the folder holds up no one but this client (which does
 * not wait on it either: O_NONBLOCK, regular files only).  The folder is
 * read into a format set by common/'s hvt_util_kfset_read(), the reader
 * hvtraced uses for root's own "vmpid:PID,formats=DIR" too.  A RAM file
 * is opened read-only here the same way and passed as it is: hvtraced
 * finds the ring in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hvtrace-internal.h>
#include <hvt_util.h>
#include <hvtrace-daemon.h>
#include <hvtrace-ring.h>

/* @formats (NULL: none) read with this process's rights into a sealed
 * memfd: its descriptor into *@kfd, its absolute path into @abs. */
static int dv_formats(const char *formats, char *abs, int *kfd)
{
	uint8_t *set = NULL;
	size_t setlen;
	char msg[512];
	int ret;

	*kfd = -1;
	if (!formats)
		return 0;
	if (!realpath(formats, abs))
		return hvt_err(-errno, "--formats %s: %s", formats,
			       strerror(errno));
	/* A FIFO or link is refused. */
	ret = hvt_util_kfset_read(abs, 0, &set, &setlen, msg, sizeof(msg));
	if (!ret)
		ret = *kfd =
			hvt_util_kfset_memfd(set, setlen, msg, sizeof(msg));
	free(set);
	return ret < 0 ? hvt_err(ret, "%s", msg) : 0;
}

/* ATTACH_AREA @spec with descriptors @fds passed (HVT_ATTACH_VM_FDS). */
static int dv_send(struct hvtrace_daemon *c, const char *spec, const int *fds,
		   int nr, char *text, size_t textsize)
{
	struct hvt_msg m;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_ATTACH_AREA;
	m.u.arg.arg = HVT_ATTACH_VM_FDS;
	m.u.arg.s.ptr = spec;
	m.u.arg.s.len = (uint32_t)strlen(spec);
	ret = hvtrace_daemon_pass_fds(c, fds, nr);
	if (!ret)
		ret = hvtrace_daemon_call_result(c, &m, NULL, text, textsize);
	hvtrace_daemon_pass_fds(c, NULL, 0);
	return ret;
}

int hvtrace_daemon_attach_ram(struct hvtrace_daemon *c, const char *name,
			      const char *path, const char *formats, char *text,
			      size_t textsize)
{
	char abs[PATH_MAX], fabs[PATH_MAX], *spec = NULL;
	int fds[2], nr = 0, fd, kfd = -1, ret;
	struct stat st;

	if (text && textsize)
		text[0] = '\0';
	if (!c || !name || !path)
		return hvt_err(-EINVAL, "hvtrace_daemon_attach_ram: bad "
					"argument");
	if (!realpath(path, abs))
		return hvt_err(-errno, "%s: %s", path, strerror(errno));
	/* With this process's rights, never waiting on a FIFO. */
	fd = open(abs, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return hvt_err(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = hvt_err(-EINVAL,
			      "%s is not a regular file (give a guest "
			      "RAM file, e.g. a kept "
			      "/dev/shm/hvtrace-NAME.ram)",
			      path);
		goto out;
	}
	ret = dv_formats(formats, fabs, &kfd);
	if (ret)
		goto out;
	fds[nr++] = fd;
	if (kfd >= 0)
		fds[nr++] = kfd;
	if (asprintf(&spec, "%s=ram:%s%s%s", name, abs,
		     formats ? ",formats=" : "", formats ? fabs : "") < 0) {
		spec = NULL;
		ret = hvt_err(-ENOMEM, "out of memory");
		goto out;
	}
	ret = dv_send(c, spec, fds, nr, text, textsize);
out:
	free(spec);
	if (kfd >= 0)
		close(kfd);
	close(fd);
	return ret;
}

int hvtrace_daemon_attach_vm_pid(struct hvtrace_daemon *c, const char *name,
				 int pid, const char *formats, char *text,
				 size_t textsize)
{
	char abs[PATH_MAX], *spec = NULL;
	struct hvtrace_kring_source src;
	struct hvtrace_kring *k = NULL;
	int fds[HVT_ATTACH_MAX_FDS], nr = 0, pidfd, kfd = -1, ret;
	struct pollfd pfd;

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
	ret = dv_formats(formats, abs, &kfd);
	if (ret)
		goto out;
	if (kfd >= 0)
		fds[nr++] = kfd;
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
	ret = dv_send(c, spec, fds, nr, text, textsize);
out:
	free(spec);
	if (kfd >= 0)
		close(kfd);
	hvtrace_kring_close(k);
	close(pidfd);
	return ret;
}
