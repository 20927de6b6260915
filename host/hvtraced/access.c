// SPDX-License-Identifier: MIT
/*
 * hvtraced: who may use the daemon, and which files a client may attach.
 *
 * Clients.  The socket's file mode is the first gate (0660, group
 * "hvtrace", set before the socket appears: main.c).  Every accepted
 * connection is then checked with its SO_PEERCRED: root, the daemon's own
 * user, or a member of the group (primary or supplementary, from the
 * peer's /proc/PID/status, whose effective uid must still match) may use
 * it; anyone else gets a refusal naming the rule and is disconnected.
 * The check stands even when --socket-mode opens the socket wider.
 *
 * Areas.  The daemon, usually root, writes the control page of every area
 * it attaches, so ATTACH_AREA from anyone but root is held to what that
 * client could do itself.  The file is opened O_NOFOLLOW (and O_NONBLOCK,
 * so a FIFO cannot stall the daemon), and must be
 *   - a regular file,
 *   - inside one of the allowed directories (--area-dir; default /dev/shm,
 *     --shm-dir and --run-dir), judged by the path the kernel gives for
 *     the descriptor (/proc/self/fd/N), so no symbolic link in any
 *     component can lead elsewhere,
 *   - readable and writable by the client by its mode bits (owner, group
 *     with the client's groups, or other).
 * The area is then opened through that very descriptor (/proc/self/fd/N),
 * so nothing can be swapped in between the check and the open.  Every
 * re-open (writer restarted, re-formatted) repeats the check with the
 * credentials of the client that attached it.
 *
 * After a restart.  The state file (state.c) keeps who attached each area
 * (uid, gid, groups).  An entry is attached again only as that client,
 * held to what it is now (access_cred_restore()): the user must still
 * exist and still be allowed to use the daemon, and keeps only the groups
 * it had then that the user database still gives it; then the file goes
 * through access_area_open() as a new ATTACH_AREA would.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

static gid_t access_gid;
static bool access_have_gid;

void access_init(void)
{
	struct group *gr = D->group ? getgrnam(D->group) : NULL;
	unsigned int i;

	access_have_gid = gr != NULL;
	if (gr)
		access_gid = gr->gr_gid;
	else if (D->group)
		d_log("group '%s' does not exist: only root%s can use the "
		      "socket; create it ('groupadd --system %s', or 'make "
		      "install' as root) and add the users who trace "
		      "('usermod -aG %s USER')",
		      D->group, geteuid() ? " and this daemon's user" : "",
		      D->group, D->group);
	for (i = 0; i < D->nr_area_dirs; i++) {
		char *real = realpath(D->area_dirs[i], NULL);

		if (real) {
			snprintf(D->area_dir_real[i],
				 sizeof(D->area_dir_real[i]), "%s", real);
			free(real);
		} else {
			snprintf(D->area_dir_real[i],
				 sizeof(D->area_dir_real[i]), "%s",
				 D->area_dirs[i]);
		}
	}
}

bool access_group_gid(gid_t *gid)
{
	if (access_have_gid)
		*gid = access_gid;
	return access_have_gid;
}

/* The peer's effective ids and groups from /proc/PID/status. */
static int access_read_status(pid_t pid, struct d_cred *cr)
{
	char path[64], line[4096];
	bool uid = false, gid = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long r, e;
		char *p, *end;

		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			uid = e == (unsigned long)cr->uid;
		} else if (sscanf(line, "Gid: %lu %lu", &r, &e) == 2) {
			cr->gid = (gid_t)e;
			gid = true;
		} else if (!strncmp(line, "Groups:", 7)) {
			for (p = line + 7; cr->nr_groups < D_CRED_GROUPS;
			     p = end) {
				unsigned long g = strtoul(p, &end, 10);

				if (end == p)
					break;
				cr->groups[cr->nr_groups++] = (gid_t)g;
			}
		}
	}
	fclose(f);
	/* A changed uid: the pid is someone else's by now. */
	return uid && gid ? 0 : -ESRCH;
}

static bool access_in_group(const struct d_cred *cr, gid_t gid)
{
	uint32_t i;

	if (cr->gid == gid)
		return true;
	for (i = 0; i < cr->nr_groups; i++)
		if (cr->groups[i] == gid)
			return true;
	return false;
}

bool access_peer_check(struct d_cred *cr, pid_t pid, uid_t uid, char *why,
		       size_t size)
{
	memset(cr, 0, sizeof(*cr));
	cr->uid = uid;
	cr->root = uid == 0;
	if (cr->root || uid == geteuid())
		return true;
	if (access_read_status(pid, cr)) {
		snprintf(why, size,
			 "hvtraced cannot tell the groups of pid %d (uid %u); "
			 "connect again",
			 (int)pid, (unsigned int)uid);
		return false;
	}
	if (access_have_gid && access_in_group(cr, access_gid))
		return true;
	if (!D->group)
		snprintf(why, size,
			 "uid %u may not use hvtraced: it serves root and its "
			 "own user only (started with an empty --group); run "
			 "as root",
			 (unsigned int)uid);
	else
		snprintf(why, size,
			 "uid %u may not use hvtraced: it serves root and the "
			 "group '%s'%s; add the user to it ('usermod -aG %s "
			 "USER', then log in again) or run as root",
			 (unsigned int)uid, D->group,
			 access_have_gid ? "" : " (which does not exist here)",
			 D->group);
	return false;
}

static bool access_gid_in(const gid_t *list, int n, gid_t gid)
{
	int i;

	for (i = 0; i < n; i++)
		if (list[i] == gid)
			return true;
	return false;
}

int access_cred_restore(struct d_cred *cr, char *why, size_t size)
{
	gid_t *list = NULL, *bigger;
	struct passwd *pw;
	uint32_t i, kept;
	int n = 64, ret;

	cr->root = cr->uid == 0;
	if (cr->root || cr->uid == geteuid())
		return 0;
	errno = 0;
	pw = getpwuid(cr->uid);
	if (!pw) {
		snprintf(why, size,
			 "uid %u, who attached it, is no user here any more%s%s",
			 (unsigned int)cr->uid, errno ? ": " : "",
			 errno ? strerror(errno) : "");
		return -ESRCH;
	}
	/* The user's groups now, by the user database. */
	for (;;) {
		int got = n;

		bigger = realloc(list, (size_t)n * sizeof(*list));
		if (!bigger) {
			free(list);
			snprintf(why, size, "out of memory");
			return -ENOMEM;
		}
		list = bigger;
		if (getgrouplist(pw->pw_name, pw->pw_gid, list, &got) >= 0) {
			n = got;
			break;
		}
		if (n >= 65536) {
			free(list);
			snprintf(why, size, "cannot tell the groups of uid %u",
				 (unsigned int)cr->uid);
			return -EIO;
		}
		n = got > n ? got : 2 * n;
	}
	/* Never more than it had then, nor than it has now. */
	if (!access_gid_in(list, n, cr->gid))
		cr->gid = pw->pw_gid;
	for (i = kept = 0; i < cr->nr_groups && i < D_CRED_GROUPS; i++)
		if (access_gid_in(list, n, cr->groups[i]))
			cr->groups[kept++] = cr->groups[i];
	cr->nr_groups = kept;
	free(list);
	ret = access_have_gid && access_in_group(cr, access_gid) ? 0 : -EACCES;
	if (ret)
		snprintf(why, size,
			 "uid %u, who attached it, may not use hvtraced any "
			 "more (not in the group '%s')",
			 (unsigned int)cr->uid, D->group ? D->group : "");
	return ret;
}

static bool access_in_dirs(const char *real)
{
	unsigned int i;
	size_t n;

	for (i = 0; i < D->nr_area_dirs; i++) {
		n = strlen(D->area_dir_real[i]);
		while (n > 1 && D->area_dir_real[i][n - 1] == '/')
			n--;
		if (!strncmp(real, D->area_dir_real[i], n) && real[n] == '/' &&
		    real[n + 1])
			return true;
	}
	return false;
}

static bool access_may_rw(const struct d_cred *cr, const struct stat *st)
{
	mode_t need;

	if (st->st_uid == cr->uid)
		need = S_IRUSR | S_IWUSR;
	else if (access_in_group(cr, st->st_gid))
		need = S_IRGRP | S_IWGRP;
	else
		need = S_IROTH | S_IWOTH;
	return (st->st_mode & need) == need;
}

int access_area_open(const struct d_cred *cr, const char *spec, int *fd_out,
		     char *via, size_t via_size, char *msg, size_t msgsize)
{
	char path[PATH_MAX], real[PATH_MAX], link[64];
	const char *at = strrchr(spec, '@');
	size_t len = at ? (size_t)(at - spec) : strlen(spec);
	struct stat st;
	ssize_t n;
	int fd;

	*fd_out = -1;
	/* Root, and the daemon's own user, gain nothing through it. */
	if (!cr || cr->root || cr->uid == geteuid()) {
		snprintf(via, via_size, "%s", spec);
		return 0;
	}
	if (len >= sizeof(path) || !len) {
		snprintf(msg, msgsize, "bad area path in '%s'", spec);
		return -EINVAL;
	}
	memcpy(path, spec, len);
	path[len] = '\0';
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		snprintf(msg, msgsize, "cannot open %s: %s%s", path,
			 strerror(err),
			 err == ELOOP	 ? " (a symbolic link: give the file "
					   "itself)"
			 : err == ENOENT ? " (start its writer first, then "
					   "attach it)"
					 : "");
		return -err;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, real, sizeof(real) - 1);
	if (fstat(fd, &st) || n <= 0) {
		snprintf(msg, msgsize, "cannot check %s: %s", path,
			 strerror(errno));
		close(fd);
		return -EIO;
	}
	real[n] = '\0';
	if (!S_ISREG(st.st_mode)) {
		snprintf(msg, msgsize,
			 "%s is not a regular file: only root may attach "
			 "other files",
			 path);
		close(fd);
		return -EPERM;
	}
	if (!access_in_dirs(real)) {
		char dirs[512] = "";
		size_t off = 0;
		unsigned int i;

		for (i = 0; i < D->nr_area_dirs && off < sizeof(dirs); i++)
			off += (size_t)snprintf(dirs + off, sizeof(dirs) - off,
						"%s%s", i ? ", " : "",
						D->area_dir_real[i]);
		snprintf(msg, msgsize,
			 "%s (%s) is outside the directories hvtraced attaches "
			 "areas from for uid %u (%s; hvtraced --area-dir adds "
			 "one); root may attach any file",
			 path, real, (unsigned int)cr->uid, dirs);
		close(fd);
		return -EPERM;
	}
	if (!access_may_rw(cr, &st)) {
		snprintf(msg, msgsize,
			 "uid %u may not read and write %s (mode %04o, owner "
			 "%u, group %u), so hvtraced will not own it for it",
			 (unsigned int)cr->uid, path,
			 (unsigned int)(st.st_mode & 07777),
			 (unsigned int)st.st_uid, (unsigned int)st.st_gid);
		close(fd);
		return -EACCES;
	}
	snprintf(via, via_size, "%s%s", link, at ? at : "");
	*fd_out = fd;
	return 0;
}
