// SPDX-License-Identifier: MIT
/*
 * UNIX stream sockets at a path: what a server does before bind() (create
 * the directory, refuse to replace a file that is not a socket or a
 * server that still answers, remove a stale socket) and what a client
 * does to connect.  Both hvtrace-agent and hvtraced serve such a socket;
 * libhvtrace-client and the daemon client connect to one.  The caller
 * binds (with the mode and group it wants) and words every message.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvt_util.h"

/**
 * hvt_util_dir_create() - create a directory and its missing parents
 * (mode 0755, as mkdir -p does)
 * @dir: the directory; one that exists already is fine
 *
 * Return: 0, -ENAMETOOLONG when @dir exceeds PATH_MAX, or the -errno of
 * the mkdir() that failed.
 */
int hvt_util_dir_create(const char *dir)
{
	char path[PATH_MAX], *p;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int sock_addr_set(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/**
 * hvt_util_sock_prepare() - make @path ready for a server's bind()
 * @path: where the socket will be
 * @sa:   filled with the address of @path
 *
 * Creates the directory of @path (hvt_util_dir_create()), then looks at
 * what is at @path: nothing is fine; a socket nobody answers on is stale
 * and removed; anything else is left alone and refused.
 *
 * Return: 0; -ENAMETOOLONG when @path does not fit a socket address;
 * -EEXIST when a file that is not a socket is at @path; -EADDRINUSE when a
 * server accepts connections there; else the -errno of creating the
 * directory.
 */
int hvt_util_sock_prepare(const char *path, struct sockaddr_un *sa)
{
	char dir[sizeof(sa->sun_path)], *slash;
	struct stat st;
	int fd, ret;

	ret = sock_addr_set(path, sa);
	if (ret)
		return ret;
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		ret = hvt_util_dir_create(dir);
		if (ret)
			return ret;
	}
	if (lstat(path, &st))
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && !connect(fd, (struct sockaddr *)sa, sizeof(*sa))) {
		close(fd);
		return -EADDRINUSE;
	}
	if (fd >= 0)
		close(fd);
	unlink(path); /* stale: nobody answers */
	return 0;
}

/**
 * hvt_util_sock_connect() - connect a blocking stream socket to @path
 * @path: the server's socket
 *
 * Return: the connected descriptor (close-on-exec), or -ENAMETOOLONG
 * when @path does not fit a socket address, or the -errno of socket() or
 * connect() (-ENOENT or -ECONNREFUSED: no server; -EACCES: no permission).
 */
int hvt_util_sock_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd, ret;

	ret = sock_addr_set(path, &sa);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}
