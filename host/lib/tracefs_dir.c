// SPDX-License-Identifier: MIT
/*
 * libhvtrace: locating the host kernel's tracefs.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "tracefs_dir.h"

#define TRACEFS_MNT	"/sys/kernel/tracing"
#define DEBUGFS_TRACING	"/sys/kernel/debug/tracing"

static int tfs_is_tracefs(const char *dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/per_cpu", dir);
	return access(path, F_OK) == 0;
}

/* tracefs is mounted at @dir, whether or not this user may look inside
 * (statfs needs no permission on the folder itself). */
static bool tfs_mounted(const char *dir)
{
	struct statfs sfs;

	return !statfs(dir, &sfs) && sfs.f_type == TRACEFS_MAGIC;
}

int hvt_tracefs_dir(char *buf, size_t size)
{
	int err = 0;

	if (!tfs_is_tracefs(TRACEFS_MNT) && tfs_mounted(TRACEFS_MNT))
		/* There, but closed to this user (tracefs is mode 0700 by
		 * default): mounting again would not help. */
		return hvt_err(-EACCES,
			       "tracefs is mounted at %s, but this user may not "
			       "read it (%s): run as root, or open it to a "
			       "group of yours as root (mount -o remount,gid=GID,"
			       "mode=0750 %s)",
			       TRACEFS_MNT,
			       access(TRACEFS_MNT, R_OK | X_OK) ? strerror(errno)
								  : "no per_cpu",
			       TRACEFS_MNT);
	if (!tfs_is_tracefs(TRACEFS_MNT)) {
		/* Not mounted yet: mount it where the kernel expects it. */
		if (mount("nodev", TRACEFS_MNT, "tracefs", 0, NULL) &&
		    errno != EBUSY)
			err = errno;
	}
	if (tfs_is_tracefs(TRACEFS_MNT)) {
		snprintf(buf, size, "%s", TRACEFS_MNT);
		return 0;
	}
	if (tfs_is_tracefs(DEBUGFS_TRACING)) {
		snprintf(buf, size, "%s", DEBUGFS_TRACING);
		return 0;
	}
	return hvt_err(-ENOENT,
		       "tracefs is not mounted and could not be mounted at "
		       "%s (%s); mount it with 'mount -t tracefs nodev %s' "
		       "as root",
		       TRACEFS_MNT, err ? strerror(err) : "no tracefs there",
		       TRACEFS_MNT);
}

int hvt_tracefs_instance_dir(const char *instance, char *buf, size_t size)
{
	char root[256];
	struct stat st;
	int ret;

	if (instance && instance[0] == '/') {
		if (stat(instance, &st) || !S_ISDIR(st.st_mode))
			return hvt_err(-ENOENT,
				       "%s is not a tracefs instance directory",
				       instance);
		snprintf(buf, size, "%s", instance);
		return 0;
	}
	ret = hvt_tracefs_dir(root, sizeof(root));
	if (ret)
		return ret;
	if (!instance || !*instance) {
		snprintf(buf, size, "%s", root);
		return 0;
	}
	if (strchr(instance, '/') || !strcmp(instance, ".") ||
	    !strcmp(instance, ".."))
		return hvt_err(-EINVAL, "bad tracing instance name '%s'",
			       instance);
	snprintf(buf, size, "%s/instances/%s", root, instance);
	if (stat(buf, &st) || !S_ISDIR(st.st_mode))
		return hvt_err(-ENOENT,
			       "no tracing instance '%s' (create it with "
			       "'mkdir %s/instances/%s')",
			       instance, root, instance);
	return 0;
}

HVTRACE_API int hvtrace_tracefs_dir(const char *instance, char *buf,
				    size_t size)
{
	if (!buf || !size)
		return hvt_err(-EINVAL, "hvtrace_tracefs_dir: no buffer");
	return hvt_tracefs_instance_dir(instance, buf, size);
}
