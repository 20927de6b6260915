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
 * not wait on it either: O_NONBLOCK, regular files only).  The folder is
 * read into a format set by common/'s hvt_util_kfset_read(), the reader
 * hvtraced uses for root's own "vmpid:PID,formats=DIR" too.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hvtrace-internal.h>
#include <hvt_util.h>
#include <hvtrace-daemon.h>
#include <hvtrace-ring.h>

int hvtrace_daemon_attach_vm_pid(struct hvtrace_daemon *c, const char *name,
				 int pid, const char *formats, char *text,
				 size_t textsize)
{
	char abs[PATH_MAX], *spec = NULL;
	struct hvtrace_kring_source src;
	struct hvtrace_kring *k = NULL;
	uint8_t *set = NULL;
	size_t setlen;
	char msg[512];
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
		/* With this process's rights; a FIFO or link is refused. */
		ret = hvt_util_kfset_read(abs, 0, &set, &setlen, msg,
					  sizeof(msg));
		if (!ret)
			ret = kfd = hvt_util_kfset_memfd(set, setlen, msg,
							 sizeof(msg));
		if (ret < 0) {
			ret = hvt_err(ret, "%s", msg);
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
	free(set);
	if (kfd >= 0)
		close(kfd);
	hvtrace_kring_close(k);
	close(pidfd);
	return ret;
}
