// SPDX-License-Identifier: MIT
/*
 * --domain NAME: the QEMU process of a running libvirt domain, for the
 * verbs that read a guest kernel's ring from a VMM's memory (stream,
 * record, stat, daemon attach; docs/guest-kernel.md, "libvirt").
 *
 * libvirt's QEMU driver writes each running domain's QEMU pid to
 * RUNDIR/NAME.pid: /run/libvirt/qemu for the system instance
 * (qemu:///system, as root), $XDG_RUNTIME_DIR/libvirt/qemu/run for a
 * user's session instance (qemu:///session).  A pid file can outlive its
 * QEMU (libvirtd killed, a host crash) and the pid be reused, so the
 * process it names must be QEMU started for that domain: its command line
 * has "-name guest=NAME[,...]" (libvirt doubles a comma in the name).
 * HVT_LIBVIRT_RUNDIR names another folder (tests; a libvirt built with
 * another prefix).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define DOMAIN_NAME_MAX	   255
#define DOMAIN_CMDLINE_MAX (256 * 1024)

/* Read at most @size - 1 bytes of @path into @buf, NUL-terminated; the
 * byte count or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	while (len < size - 1) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = -errno;

			close(fd);
			return err;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* Does "-name" ARG in @args (@len bytes of NUL-separated words) name the
 * domain @name ("guest=NAME" alone or before a comma; libvirt's commas
 * doubled)? */
static bool cmdline_names_domain(const char *args, size_t len, const char *name)
{
	const char *end = args + len, *w = args;
	bool next_is_name = false;

	while (w < end) {
		size_t wl = strnlen(w, (size_t)(end - w));

		if (next_is_name) {
			const char *p = w + 6, *n = name;

			if (wl < 6 || strncmp(w, "guest=", 6))
				return false;
			while (p < w + wl && *n) {
				if (*p != *n)
					return false;
				if (*n == ',') {
					if (p + 1 >= w + wl || p[1] != ',')
						return false;
					p++;
				}
				p++;
				n++;
			}
			return !*n && (p == w + wl || *p == ',');
		}
		next_is_name = !strcmp(w, "-name");
		w += wl + 1;
	}
	return false;
}

/* The pid file of @name: the session instance's folder first for a user
 * with one, else the system instance's. */
static void pidfile_of(const char *name, char *path, size_t size)
{
	const char *dir = getenv("HVT_LIBVIRT_RUNDIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (dir && *dir) {
		snprintf(path, size, "%s/%s.pid", dir, name);
		return;
	}
	if (geteuid() && xdg && *xdg) {
		snprintf(path, size, "%s/libvirt/qemu/run/%s.pid", xdg, name);
		if (!access(path, F_OK))
			return;
	}
	snprintf(path, size, "/run/libvirt/qemu/%s.pid", name);
}

int hvt_cli_domain_pid(const char *verb, const char *name, int *pid)
{
	char path[PATH_MAX], buf[32], *args;
	size_t i, len = strlen(name);
	ssize_t n;
	int ret;

	if (!len || len > DOMAIN_NAME_MAX || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return hvt_cli_usage(verb,
				     "--domain '%s': not a libvirt domain "
				     "name",
				     name);
	for (i = 0; i < len; i++)
		if (name[i] == '/' || (unsigned char)name[i] < 0x20)
			return hvt_cli_usage(verb, "--domain: a libvirt domain "
						   "name has no '/' or control "
						   "characters");
	pidfile_of(name, path, sizeof(path));
	n = read_small(path, buf, sizeof(buf));
	if (n == -ENOENT)
		return hvt_cli_error(verb,
				     "--domain %s: no running libvirt "
				     "domain of that name (no %s): start it "
				     "with 'virsh start %s', or see 'virsh "
				     "list --all'",
				     name, path, name);
	if (n == -EACCES || n == -EPERM)
		return hvt_cli_error(verb,
				     "--domain %s: cannot read %s: "
				     "reading a system domain needs root",
				     name, path);
	if (n < 0)
		return hvt_cli_error(verb, "--domain %s: cannot read %s: %s",
				     name, path, strerror((int)-n));
	buf[strcspn(buf, "\n")] = '\0';
	if (hvt_cli_parse_pid(buf, pid))
		return hvt_cli_error(verb,
				     "--domain %s: %s does not hold a "
				     "pid",
				     name, path);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", *pid);
	args = malloc(DOMAIN_CMDLINE_MAX);
	if (!args)
		return hvt_cli_error(verb, "out of memory");
	n = read_small(path, args, DOMAIN_CMDLINE_MAX);
	ret = n >= 0 && cmdline_names_domain(args, (size_t)n, name);
	free(args);
	if (n == -ENOENT || n == -ESRCH)
		return hvt_cli_error(verb,
				     "--domain %s: its QEMU (pid %d, "
				     "from libvirt's pid file) is gone: the "
				     "domain is not running",
				     name, *pid);
	if (n < 0)
		return hvt_cli_error(verb,
				     "--domain %s: cannot read the "
				     "command line of pid %d: %s",
				     name, *pid, strerror((int)-n));
	if (!ret)
		return hvt_cli_error(
			verb,
			"--domain %s: pid %d (from libvirt's "
			"pid file) is not that domain's QEMU (a "
			"stale pid file?): see 'virsh domstate %s'",
			name, *pid, name);
	return 0;
}
