// SPDX-License-Identifier: MIT
/*
 * libhvtrace: one owner per area.
 *
 * The owner of an area (HVTRACE_OPEN_CONTROL) writes its control page:
 * enable bits, consumer positions, time-sync and reset requests.  Two
 * owners would fight over those (each moving consumer[] on its own lets a
 * consume-mode writer overwrite what the other has not read), so taking
 * an area as owner takes a lock first, and a second owner is refused with
 * the holder's pid and program.
 *
 * The lock is an open file description lock (F_OFD_SETLK) on the area's
 * file: it goes away with the last descriptor of the owner's open, so an
 * owner that dies (even SIGKILLed) leaves nothing to clean up, and a
 * post-mortem owner simply gets it.  Byte ranges, per area (an area is
 * 4 KiB aligned in its file; a file may hold several, e.g. a guest-RAM
 * file):
 *
 *   OWNER_BASE + slot * OWNER_SLOT          the owner byte (write lock)
 *   OWNER_BASE + slot * OWNER_SLOT + 1 + P  a pid marker (write lock),
 *                                           P = the owner's pid
 *
 * with slot = offset / 4096.  OFD locks report no pid (F_OFD_GETLK gives
 * l_pid -1), so the owner names itself with the position of its marker: a
 * refused owner asks F_OFD_GETLK for a lock in the marker range and reads
 * the pid from its start.  The ranges lie at 2^62 and above, far past the
 * data of any file, so they never meet a byte-range lock of another
 * program on the same file (QEMU locks image files at bytes 100 and
 * up); the loopback writer's lock on its file is a flock(), which Linux
 * keeps apart from OFD locks.
 *
 * Handles of one process share its ownership: a program that re-attaches
 * after a re-format opens the new handle before it closes the old one.
 * The second handle then holds a duplicate of the first one's descriptor,
 * which keeps the lock alive until both are closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvtrace-local.h"

#define OWNER_BASE  (1ull << 62)
#define OWNER_SLOT  (1ull << 23) /* > 1 + PID_MAX_LIMIT (2^22) */
#define OWNER_SLOTS (1ull << 39) /* keeps every range below 2^63 */

static pthread_mutex_t owner_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct hvtrace_area *owner_list; /* handles that own, this process */

static int owner_lock(int fd, short type, uint64_t start, uint64_t len)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = (off_t)start,
		.l_len = (off_t)len,
	};

	return fcntl(fd, F_OFD_SETLK, &fl) ? -errno : 0;
}

/* The holder's pid from its marker; 0 when it has none (yet). */
static pid_t owner_holder(int fd, uint64_t base)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = (off_t)(base + 1),
		.l_len = (off_t)(OWNER_SLOT - 1),
	};

	if (fcntl(fd, F_OFD_GETLK, &fl) || fl.l_type == F_UNLCK ||
	    (uint64_t)fl.l_start <= base ||
	    (uint64_t)fl.l_start - base - 1 >= OWNER_SLOT - 1)
		return 0;
	return (pid_t)((uint64_t)fl.l_start - base - 1);
}

static int owner_refuse(const struct hvtrace_area *a, int fd, uint64_t base)
{
	char comm[64] = "", path[64], where[320];
	pid_t pid = owner_holder(fd, base);
	FILE *f;

	if (a->offset)
		snprintf(where, sizeof(where), "%s@0x%llx", a->path,
			 (unsigned long long)a->offset);
	else
		snprintf(where, sizeof(where), "%s", a->path);
	if (pid > 0) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		f = fopen(path, "re");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = '\0';
	}
	if (pid > 0 && !strcmp(comm, "hvtraced"))
		return hvt_err(-EBUSY,
			       "%s is owned by hvtraced (pid %d), which "
			       "writes its control page; one owner per area: "
			       "read it through the daemon ('hvtrace list' "
			       "names the remote, then 'hvtrace stream NAME'), "
			       "or read it alongside without writing "
			       "(--read-only)",
			       where, (int)pid);
	if (pid > 0)
		return hvt_err(
			-EBUSY,
			"%s is owned by pid %d (%s), which "
			"writes its control page; one owner per area: "
			"stop that owner, read the area through hvtraced "
			"if it is attached there, or read it alongside "
			"without writing (--read-only)",
			where, (int)pid, comm[0] ? comm : "exited just now");
	return hvt_err(-EBUSY,
		       "%s is owned by another process (it is taking "
		       "the area just now), which writes its control page; "
		       "one owner per area: read it alongside without "
		       "writing (--read-only), or retry once it is gone",
		       where);
}

int hvt_area_owner_take(struct hvtrace_area *a)
{
	uint64_t slot = a->offset / HVT_AREA_ALIGN, base;
	struct hvtrace_area *o;
	struct stat st;
	int ret, fd;

	if (slot >= OWNER_SLOTS)
		return hvt_err(-EINVAL,
			       "%s: an area at 0x%llx is past the offsets "
			       "whose ownership can be locked (below 2^51)",
			       a->path, (unsigned long long)a->offset);
	base = OWNER_BASE + slot * OWNER_SLOT;
	if (fstat(a->fd, &st))
		return hvt_err(-errno, "cannot stat %s: %s", a->path,
			       strerror(errno));
	pthread_mutex_lock(&owner_mutex);
	for (o = owner_list; o; o = o->owner_next)
		if (o->owner_dev == st.st_dev && o->owner_ino == st.st_ino &&
		    o->offset == a->offset)
			break;
	if (o) {
		/* This process owns it already: share that lock. */
		fd = fcntl(o->lock_fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0) {
			ret = hvt_err(-errno,
				      "%s: cannot share the owner "
				      "lock: %s",
				      a->path, strerror(errno));
			goto out;
		}
	} else {
		fd = a->fd;
		ret = owner_lock(fd, F_WRLCK, base, 1);
		if (ret == -EAGAIN || ret == -EACCES) {
			ret = owner_refuse(a, fd, base);
			goto out;
		}
		if (ret) {
			ret = hvt_err(ret,
				      "%s: cannot lock the area for its "
				      "owner: %s",
				      a->path, strerror(-ret));
			goto out;
		}
		/* The marker only names us; without it we still own. */
		owner_lock(fd, F_WRLCK, base + 1 + (uint64_t)getpid(), 1);
	}
	a->lock_fd = fd;
	a->owner_dev = st.st_dev;
	a->owner_ino = st.st_ino;
	a->owner_next = owner_list;
	owner_list = a;
	ret = 0;
out:
	pthread_mutex_unlock(&owner_mutex);
	return ret;
}

void hvt_area_owner_drop(struct hvtrace_area *a)
{
	struct hvtrace_area **pp;

	if (a->lock_fd < 0)
		return;
	pthread_mutex_lock(&owner_mutex);
	for (pp = &owner_list; *pp; pp = &(*pp)->owner_next)
		if (*pp == a) {
			*pp = a->owner_next;
			break;
		}
	/* The lock goes with the last descriptor of its open. */
	if (a->lock_fd != a->fd)
		close(a->lock_fd);
	a->lock_fd = -1;
	pthread_mutex_unlock(&owner_mutex);
}
