// SPDX-License-Identifier: MIT
/*
 * Files found by a name that anyone could have chosen: a rig guest's
 * trace area $HVT_SHM_DIR/hvtrace-NAME and RAM file hvtrace-NAME.ram live
 * in a world-writable folder (/dev/shm, mode 1777), so any local user can
 * create them for a guest that has none yet.  Whoever opens such a name
 * (hvtrace stream, record and mount, hvtraced's chardev remotes, often as
 * root) takes the file only when its owner is one it trusts: root, the
 * opening process's effective user, or the remote's owner.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvt_util.h"

/**
 * hvt_util_open_owned() - open a file found by its name in a shared folder,
 * if a trusted user owns it
 * @path:    the file
 * @rdwr:    open it read-write (an area's owner maps its control page
 *           writable), else read-only
 * @owner:   a further trusted owner (a remote's owner), or (uid_t)-1
 * @msg:     what was wrong, for the caller's message (empty on success)
 * @msgsize: its size
 *
 * Opens with O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC (no symbolic link, no
 * FIFO that blocks) and checks the open file itself: a regular file,
 * owned by root, the effective user or @owner, and not writable by every
 * user.
 *
 * Return: the descriptor; -ENOENT (no such file: @msg says so, callers
 * may take it as "none"), -ELOOP (a symbolic link), -EPERM (not a regular
 * file, another owner, or world-writable) or the -errno of open().
 */
int hvt_util_open_owned(const char *path, int rdwr, uid_t owner, char *msg,
			size_t msgsize)
{
	uid_t me = geteuid();
	struct stat st;
	int fd, err;

	if (msgsize)
		msg[0] = '\0';
	fd = open(path, (rdwr ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK |
				O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (err == ELOOP)
			snprintf(msg, msgsize,
				 "%s is a symbolic link: someone else may "
				 "have planted it; remove it",
				 path);
		else
			snprintf(msg, msgsize, "cannot open %s: %s", path,
				 strerror(err));
		return -err;
	}
	if (fstat(fd, &st)) {
		err = errno;
		snprintf(msg, msgsize, "cannot stat %s: %s", path,
			 strerror(err));
		close(fd);
		return -err;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(msg, msgsize,
			 "%s is not a regular file: someone else may have "
			 "planted it; remove it",
			 path);
		close(fd);
		return -EPERM;
	}
	if (st.st_uid != 0 && st.st_uid != me &&
	    (owner == (uid_t)-1 || st.st_uid != owner)) {
		if (owner == (uid_t)-1 || owner == me || owner == 0)
			snprintf(msg, msgsize,
				 "%s is owned by uid %u, not root or you: "
				 "someone else may have planted it; remove it",
				 path, (unsigned int)st.st_uid);
		else
			snprintf(msg, msgsize,
				 "%s is owned by uid %u, not root, you or "
				 "uid %u (the remote's owner): someone else "
				 "may have planted it; remove it",
				 path, (unsigned int)st.st_uid,
				 (unsigned int)owner);
		close(fd);
		return -EPERM;
	}
	if (st.st_mode & S_IWOTH) {
		snprintf(msg, msgsize,
			 "%s is writable by every user (mode %04o): someone "
			 "else may have written it; remove it",
			 path, (unsigned int)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	return fd;
}
