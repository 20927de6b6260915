// SPDX-License-Identifier: MIT
/*
 * hvtraced: the guest kernel's event formats an agent uploads, kept in
 * the host's formats cache.
 *
 * An agent sends KFORMATS BEGIN (the kernel's release and build id),
 * then each file as KFILE pieces, then KFORMATS END with the counts
 * (docs/proxy.md).  Everything in them is hostile input:
 *
 *   - the release becomes part of a folder name: its length-delimited
 *     bytes only [A-Za-z0-9._+-] (no NUL, no '/', nothing unprintable),
 *     not starting with '.' or '-';
 *   - a file's path must have one of the shapes of a tracefs formats
 *     folder (events/header_page, events/header_event, events/SYS/enable,
 *     events/SYS/EVENT/format, printk_formats, saved_cmdlines,
 *     trace_clock, version), SYS and EVENT of [A-Za-z0-9_.-] not starting
 *     with '.': no "..", no absolute path, no other file;
 *   - each file arrives in order, its pieces contiguous, once; a file
 *     is at most KF_FILE_MAX bytes, an upload at most KF_MAX_FILES files
 *     and KF_MAX_BYTES bytes;
 *   - files are created with openat() under a fresh staging folder that
 *     only this daemon made (O_CREAT | O_EXCL | O_NOFOLLOW), folders with
 *     mkdirat(), never following a link.
 *
 * The release and build id are only what the guest claims, so what a
 * guest uploads is that guest's alone: it goes to
 * CACHE/kformats/guests/REMOTE/RELEASE@BUILDID (REMOTE the name of the
 * remote whose agent sent it; BUILDID "none" when the kernel has none)
 * and is used for that remote only.  A folder CACHE/kformats/RELEASE@
 * BUILDID that the host made (the rig, an administrator, from the kernel
 * package: trusted) is used for any remote of that build and never
 * written here.  A remote keeps at most KF_GUEST_KERNELS folders: a new
 * kernel evicts its own least recently used one (a hit touches it), never
 * another remote's, so no guest can fill the cache for the others.  And
 * the cache keeps at most KF_GUESTS_MAX remotes' folders (the remote's
 * folder is touched with each use): a remote's first upload evicts the
 * least recently used folders of remotes that are not attached (at most
 * KF_GUESTS_EVICT of them, renamed out of the way at once and removed by
 * a thread: a folder of thousands of files holds a slow disk for
 * seconds, and the daemon's loop must not wait), so that
 * guests that come and go (a test rig's, a host's short-lived VMs) do not
 * fill the disk.  Names are the host's to give, not a guest's: no guest
 * can make the cache evict another's folder.
 *
 * The cache holds guest kernel addresses (printk_formats: a KASLR leak)
 * and task names: its folders are 0750 and files 0640 of group hvtrace
 * (0700/0600 when there is no such group); kf_cache_fix() takes what
 * is more open than that back at start.
 *
 * END with counts that match what arrived renames the staging folder to
 * the remote's RELEASE@BUILDID, the layout hvtrace_decoder_new_kernel()
 * reads, plus "release" and "build_id" files written from the BEGIN.
 * Any error discards the staging folder; the agent learns why in the
 * answer to END.  A connection that ends mid-upload discards it too
 * (kf_abort()).
 *
 * This file knows nothing of connections or remotes, so the fuzz target
 * (tests/fuzz/kformats_fuzz.c) drives it directly.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

static void kf_msg(char *msg, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void kf_msg(char *msg, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (!msg || !size)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, size, fmt, ap);
	va_end(ap);
}

static bool kf_part_ok(const char *s, size_t len, bool dot_dash)
{
	size_t i;

	if (!len || len > NAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '_')
			continue;
		if (dot_dash && (ch == '.' || ch == '-' || ch == '+'))
			continue;
		return false;
	}
	return true;
}

/* @len bytes at @s, length-delimited: a NUL inside is refused. */
bool kf_release_ok(const char *s, size_t len)
{
	return s && len <= HVT_PROTO_RELEASE_MAX && !memchr(s, '\0', len) &&
	       kf_part_ok(s, len, true);
}

/* The cache's group: "hvtrace" when it exists, else none. */
static gid_t kf_gid(void)
{
	static bool looked;
	static gid_t gid = (gid_t)-1;

	if (!looked) {
		struct group *g = getgrnam("hvtrace");

		looked = true;
		if (g)
			gid = g->gr_gid;
	}
	return gid;
}

/* What the cache's folders and files may be at most. */
static mode_t kf_mask(void)
{
	return kf_gid() != (gid_t)-1 ? 0750 : 0700;
}

/* Give @fd the cache's group and @mode & kf_mask(), whatever the umask. */
static void kf_own(int fd, mode_t mode)
{
	if (kf_gid() != (gid_t)-1 && fchown(fd, (uid_t)-1, kf_gid())) {
		/* not root (a test): the owner's group stays */
	}
	if (fchmod(fd, mode & kf_mask())) {
		/* the folder is this daemon's own: cannot fail */
	}
}

/* mkdir @path (one level) with the cache's modes; an existing folder is
 * kept as it is (kf_cache_fix() took it back at start). */
static int kf_mkdir(const char *path)
{
	int fd;

	if (mkdir(path, 0700)) {
		struct stat st;

		if (errno != EEXIST)
			return -errno;
		if (lstat(path, &st))
			return -errno;
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	kf_own(fd, 0750);
	close(fd);
	return 0;
}

/*
 * Is @p (NUL-terminated) a file of a formats folder?  Returns the number
 * of folders it has (0..3), or -1.
 */
int kf_path_ok(const char *p)
{
	static const char *const top[] = { "printk_formats", "saved_cmdlines",
					    "trace_clock", "version" };
	const char *parts[4];
	size_t lens[4], n = 0, i;
	const char *s = p;

	if (strlen(p) > HVT_PROTO_KPATH_MAX)
		return -1;
	for (;;) {
		const char *sl = strchr(s, '/');
		size_t len = sl ? (size_t)(sl - s) : strlen(s);

		if (n == 4)
			return -1;
		parts[n] = s;
		lens[n++] = len;
		if (!sl)
			break;
		s = sl + 1;
	}
	for (i = 0; i < n; i++)
		if (!kf_part_ok(parts[i], lens[i], true))
			return -1;
	if (n == 1) {
		for (i = 0; i < sizeof(top) / sizeof(top[0]); i++)
			if (!strcmp(p, top[i]))
				return 0;
		return -1;
	}
	if (lens[0] != 6 || strncmp(parts[0], "events", 6))
		return -1;
	if (n == 2)
		return !strcmp(parts[1], "header_page") ||
				       !strcmp(parts[1], "header_event") ?
			       1 :
			       -1;
	if (n == 3)
		return lens[2] == 6 && !strncmp(parts[2], "enable", 6) ? 2 : -1;
	return lens[3] == 6 && !strncmp(parts[3], "format", 6) ? 3 : -1;
}

/* Remove what an upload wrote under its staging folder (bounded depth). */
static void kf_rm_at(int dfd, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd = dup(dfd);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!unlinkat(dfd, de->d_name, 0))
			continue;
		if (depth >= 4)
			continue;
		sub = openat(dfd, de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		kf_rm_at(sub, depth + 1);
		close(sub);
		unlinkat(dfd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

static void kf_close_file(struct kf_upload *u)
{
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
	u->cur[0] = '\0';
	u->cur_off = 0;
}

void kf_abort(struct kf_upload *u)
{
	kf_close_file(u);
	if (u->dfd >= 0) {
		kf_rm_at(u->dfd, 0);
		close(u->dfd);
		u->dfd = -1;
		if (u->stage[0])
			rmdir(u->stage);
	}
	u->stage[0] = '\0';
	u->active = false;
}

void kf_init(struct kf_upload *u)
{
	memset(u, 0, sizeof(*u));
	u->fd = -1;
	u->dfd = -1;
}

/* @dir and its parents, as mkdir -p with mode 0755 (the cache folder
 * itself: what is below it, kformats/, is kf_mkdir()'s). */
static int kf_mkdirs(const char *dir)
{
	char p[PATH_MAX];
	size_t i, n = strlen(dir);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		p[i] = dir[i];
	}
	return 0;
}

int kf_key(char *out, size_t size, const struct hvt_m_kformats *m)
{
	int n;

	if (!kf_release_ok(m->release.ptr, m->release.len))
		return -EINVAL;
	n = snprintf(out, size, "%.*s@%.*s", (int)m->release.len,
		     m->release.ptr, (int)m->build_id.len, m->build_id.ptr);
	if (!m->build_id.len)
		n = snprintf(out, size, "%.*s@none", (int)m->release.len,
			     m->release.ptr);
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/*
 * Make room in a remote's folder @mine for one more kernel: remove its
 * stale staging folders (a remote uploads one at a time, and kf_abort()
 * removed this one's), then its least recently used kernels until fewer
 * than KF_GUEST_KERNELS are left.  Only this remote's folders.
 */
static int kf_make_room(const char *mine)
{
	int pass;

	for (pass = 0; pass <= KF_GUEST_KERNELS + 1; pass++) {
		char old[NAME_MAX + 1] = "";
		struct timespec oldest = { 0 };
		struct dirent *de;
		unsigned int n = 0, seen = 0;
		int dfd = open(mine, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC);
		DIR *d;

		if (dfd < 0)
			return -errno;
		d = fdopendir(dfd);
		if (!d) {
			close(dfd);
			return -errno;
		}
		while ((de = readdir(d)) && seen++ < 4096) {
			struct stat st;
			int sub;

			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			if (fstatat(dfd, de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) ||
			    !S_ISDIR(st.st_mode))
				continue;
			if (!strncmp(de->d_name, ".upload-", 8)) {
				sub = openat(dfd, de->d_name,
					     O_RDONLY | O_DIRECTORY |
						     O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0) {
					kf_rm_at(sub, 0);
					close(sub);
				}
				unlinkat(dfd, de->d_name, AT_REMOVEDIR);
				continue;
			}
			n++;
			if (!old[0] || st.st_mtim.tv_sec < oldest.tv_sec ||
			    (st.st_mtim.tv_sec == oldest.tv_sec &&
			     st.st_mtim.tv_nsec < oldest.tv_nsec)) {
				oldest = st.st_mtim;
				snprintf(old, sizeof(old), "%s", de->d_name);
			}
		}
		if (n < KF_GUEST_KERNELS) {
			closedir(d);
			return 0;
		}
		{
			int sub = openat(dfd, old, O_RDONLY | O_DIRECTORY |
							   O_NOFOLLOW |
							   O_CLOEXEC);

			if (sub >= 0) {
				kf_rm_at(sub, 0);
				close(sub);
			}
			if (unlinkat(dfd, old, AT_REMOVEDIR)) {
				int ret = -errno;

				closedir(d);
				return ret;
			}
		}
		closedir(d);
	}
	return -ENOSPC;
}

struct kf_lru {
	char name[NAME_MAX + 1];
	struct timespec at;
};

static int kf_lru_cmp(const void *a, const void *b)
{
	const struct kf_lru *x = a, *y = b;

	if (x->at.tv_sec != y->at.tv_sec)
		return x->at.tv_sec < y->at.tv_sec ? -1 : 1;
	return x->at.tv_nsec < y->at.tv_nsec ? -1
					     : x->at.tv_nsec > y->at.tv_nsec;
}

/* A folder's removal, off the daemon's loop: a remote's folder holds a
 * couple of thousand files per kernel, seconds of a slow disk. */
static void *kf_rm_thread(void *arg)
{
	char *path = arg;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0) {
		kf_rm_at(fd, 0);
		close(fd);
	}
	rmdir(path);
	free(path);
	return NULL;
}

/*
 * Folder @name of @dir (open as @dfd) out of the way now -- renamed to
 * ".trash-PID-N", which no scan counts -- and removed by a detached
 * thread (in place, when no thread can start).  An entry left by a daemon
 * that died before it was done is removed the same way by the next scan.
 */
static void kf_rm_later(int dfd, const char *dir, const char *name)
{
	static unsigned int seq;
	char trash[64];
	pthread_attr_t attr;
	pthread_t tid;
	char *path;
	int ret = -1;

	if (!strncmp(name, ".trash-", 7))
		snprintf(trash, sizeof(trash), "%.63s", name);
	else
		snprintf(trash, sizeof(trash), ".trash-%d-%u", (int)getpid(),
			 seq++);
	if (strcmp(trash, name) && renameat(dfd, name, dfd, trash))
		return;
	path = malloc(strlen(dir) + strlen(trash) + 2);
	if (!path)
		return;
	sprintf(path, "%s/%s", dir, trash);
	if (!pthread_attr_init(&attr)) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&tid, &attr, kf_rm_thread, path);
		pthread_attr_destroy(&attr);
	}
	if (ret)
		kf_rm_thread(path);
}

/*
 * Room in @guests for the folder of @owner, a remote new to the cache:
 * while KF_GUESTS_MAX folders or more are there, the least recently used
 * one of a remote that @in_use says is not attached goes, up to
 * KF_GUESTS_EVICT of them.  The scan is bounded (the first 4096 entries);
 * how many went is in @u->evicted.
 */
static void kf_make_guest_room(struct kf_upload *u, const char *guests,
			       const char *owner,
			       bool (*in_use)(const char *remote))
{
	struct kf_lru *v = NULL;
	unsigned int n = 0, nv = 0, seen = 0, i;
	struct dirent *de;
	int dfd = open(guests, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	u->evicted = 0;
	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) && seen++ < 4096) {
		struct stat st;
		struct kf_lru *nvp;

		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (!strncmp(de->d_name, ".trash-", 7))
			kf_rm_later(dfd, guests, de->d_name);
		if (de->d_name[0] == '.')
			continue;
		n++;
		if (!strcmp(de->d_name, owner) ||
		    (in_use && in_use(de->d_name)))
			continue;
		nvp = realloc(v, (nv + 1) * sizeof(*v));
		if (!nvp)
			break;
		v = nvp;
		snprintf(v[nv].name, sizeof(v[nv].name), "%s", de->d_name);
		v[nv].at = st.st_mtim;
		nv++;
	}
	if (nv)
		qsort(v, nv, sizeof(*v), kf_lru_cmp);
	/* At most KF_GUESTS_EVICT a call (each a thread of its own), so a
	 * cache far over the limit (an older hvtraced's) comes down a few
	 * folders an upload. */
	for (i = 0;
	     i < nv && n >= KF_GUESTS_MAX && u->evicted < KF_GUESTS_EVICT;
	     i++) {
		kf_rm_later(dfd, guests, v[i].name);
		if (faccessat(dfd, v[i].name, F_OK, AT_SYMLINK_NOFOLLOW)) {
			n--;
			u->evicted++;
		}
	}
	free(v);
	closedir(d);
}

int kf_begin(struct kf_upload *u, const char *cache, const char *owner,
	     bool (*in_use)(const char *remote), const struct hvt_m_kformats *m,
	     char *dir, size_t dir_size, char *msg, size_t msgsize)
{
	char root[PATH_MAX], mine[PATH_MAX];
	struct stat st;
	int ret;

	kf_abort(u);
	if (m->op != HVT_KF_BEGIN)
		return -EINVAL;
	if (kf_key(u->key, sizeof(u->key), m)) {
		kf_msg(msg, msgsize,
		       "kernel release '%.*s' is not a folder name of "
		       "[A-Za-z0-9._+-]",
		       (int)m->release.len, m->release.ptr);
		return -EINVAL;
	}
	if (!owner || !hvt_proto_name_ok(owner, (uint32_t)strlen(owner))) {
		kf_msg(msg, msgsize,
		       "the remote's name cannot name its formats folder");
		return -EINVAL;
	}
	if (m->nr_files > KF_MAX_FILES) {
		kf_msg(msg, msgsize, "%u files: at most %u are kept",
		       m->nr_files, KF_MAX_FILES);
		return -E2BIG;
	}
	ret = kf_mkdirs(cache);
	if (snprintf(root, sizeof(root), "%s/kformats", cache) >=
	    (int)sizeof(root))
		return -ENAMETOOLONG;
	if (!ret)
		ret = kf_mkdir(root);
	if (ret) {
		kf_msg(msg, msgsize, "cannot make the formats cache %s: %s",
		       root, strerror(-ret));
		return ret;
	}
	/* A folder the host made (trusted): for every guest of that build. */
	if (snprintf(dir, dir_size, "%s/%s", root, u->key) >= (int)dir_size)
		return -ENAMETOOLONG;
	if (!lstat(dir, &st) && S_ISDIR(st.st_mode))
		return 1;
	/* Else this remote's own upload, and nobody else's. */
	if (snprintf(mine, sizeof(mine), "%s/" KF_GUESTS_DIR "/%s", root,
		     owner) >= (int)sizeof(mine) ||
	    snprintf(dir, dir_size, "%s/%s", mine, u->key) >= (int)dir_size)
		return -ENAMETOOLONG;
	snprintf(u->stage, sizeof(u->stage), "%.*s/" KF_GUESTS_DIR,
		 (int)(sizeof(u->stage) - sizeof(KF_GUESTS_DIR) - 1), root);
	ret = kf_mkdir(u->stage);
	/* A remote new to the cache: room among the remotes' folders. */
	if (!ret && lstat(mine, &st))
		kf_make_guest_room(u, u->stage, owner, in_use);
	u->stage[0] = '\0';
	if (!ret)
		ret = kf_mkdir(mine);
	/* Its folder's time is its last use (the remotes' LRU). */
	if (!ret)
		utimensat(AT_FDCWD, mine, NULL, AT_SYMLINK_NOFOLLOW);
	if (ret) {
		kf_msg(msg, msgsize, "cannot make the folder %s: %s", mine,
		       strerror(-ret));
		return ret;
	}
	if (!lstat(dir, &st) && S_ISDIR(st.st_mode)) {
		/* cached already; recently used now */
		utimensat(AT_FDCWD, dir, NULL, AT_SYMLINK_NOFOLLOW);
		return 1;
	}
	ret = kf_make_room(mine);
	if (ret) {
		kf_msg(msg, msgsize,
		       "cannot make room in %s for another kernel: %s", mine,
		       strerror(-ret));
		return ret;
	}
	if (snprintf(u->stage, sizeof(u->stage), "%s/.upload-%s.%d.XXXXXX",
		     mine, u->key, (int)getpid()) >= (int)sizeof(u->stage)) {
		u->stage[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(u->stage)) {
		ret = -errno;
		u->stage[0] = '\0';
		kf_msg(msg, msgsize, "cannot make a folder in %s: %s", mine,
		       strerror(-ret));
		return ret;
	}
	u->dfd = open(u->stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				       O_CLOEXEC);
	if (u->dfd < 0) {
		ret = -errno;
		rmdir(u->stage);
		u->stage[0] = '\0';
		return ret;
	}
	kf_own(u->dfd, 0750);
	snprintf(u->dir, sizeof(u->dir), "%s", dir);
	u->active = true;
	u->failed = 0;
	u->why[0] = '\0';
	u->files = 0;
	u->bytes = 0;
	u->max_files = m->nr_files;
	return 0;
}

/*
 * At start: nothing under CACHE/kformats more open than the cache's modes
 * (folders 0750, files 0640, group hvtrace; 0700/0600 without the group):
 * what an older hvtraced or a copy left readable to all is taken back.
 * Links are not followed.  A folder already at the cache's mode and group
 * is not entered: no one else can reach what lies below it, so what lies
 * there is as closed as the folder.  The walk so costs a few folders, not
 * every file of every kernel the cache holds (a kernel's formats are a
 * couple of thousand files, and hvtraced listens only after the walk).
 * Returns how many were changed, or -errno with @msg saying why.
 */
static unsigned int kf_fixed;

static int kf_fix_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	mode_t want = st->st_mode & 07777 & kf_mask();
	int fd;

	(void)ftw;
	if (flag != FTW_F && flag != FTW_D && flag != FTW_DP)
		return FTW_CONTINUE; /* a link, or unreadable: not followed */
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return FTW_CONTINUE;
	if (want == (st->st_mode & 07777) &&
	    (kf_gid() == (gid_t)-1 || st->st_gid == kf_gid()))
		return flag == FTW_D ? FTW_SKIP_SUBTREE : FTW_CONTINUE;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
				(S_ISDIR(st->st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		return FTW_CONTINUE;
	kf_own(fd, want);
	close(fd);
	kf_fixed++;
	return FTW_CONTINUE;
}

int kf_cache_fix(const char *cache, char *msg, size_t msgsize)
{
	char root[PATH_MAX];
	struct stat st;
	int ret;

	if (snprintf(root, sizeof(root), "%s/kformats", cache) >=
	    (int)sizeof(root))
		return -ENAMETOOLONG;
	if (lstat(root, &st)) {
		if (errno == ENOENT)
			return 0;	/* made right by the first upload */
		ret = -errno;
		kf_msg(msg, msgsize, "cannot see %s: %s", root,
		       strerror(errno));
		return ret;
	}
	if (!S_ISDIR(st.st_mode)) {
		kf_msg(msg, msgsize,
		       "%s is not a folder (a link?): remove it; guests' "
		       "formats cannot be kept",
		       root);
		return -ENOTDIR;
	}
	kf_fixed = 0;
	if (nftw(root, kf_fix_one, 16, FTW_PHYS | FTW_ACTIONRETVAL)) {
		ret = -errno;
		kf_msg(msg, msgsize, "cannot walk %s: %s", root,
		       strerror(errno));
		return ret;
	}
	return (int)kf_fixed;
}

/* The upload breaks: remember why for END, drop what was written. */
static int kf_fail(struct kf_upload *u, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int kf_fail(struct kf_upload *u, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->why, sizeof(u->why), fmt, ap);
	va_end(ap);
	kf_abort(u);
	u->failed = err;
	return err;
}

/* Open @name for writing under the staging folder, making its folders. */
static int kf_create(struct kf_upload *u, const char *name)
{
	char path[HVT_PROTO_KPATH_MAX + 1];
	char *s, *sl;
	int dfd = u->dfd, fd, ret = 0;

	snprintf(path, sizeof(path), "%s", name);
	s = path;
	while ((sl = strchr(s, '/'))) {
		int nd;

		*sl = '\0';
		if (mkdirat(dfd, s, 0700) && errno != EEXIST) {
			ret = -errno;
			break;
		}
		nd = openat(dfd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					    O_CLOEXEC);
		if (nd < 0) {
			ret = -errno;
			break;
		}
		kf_own(nd, 0750);
		if (dfd != u->dfd)
			close(dfd);
		dfd = nd;
		s = sl + 1;
	}
	if (ret) {
		if (dfd != u->dfd)
			close(dfd);
		return ret;
	}
	fd = openat(dfd, s, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC, 0600);
	ret = fd < 0 ? -errno : fd;
	if (fd >= 0)
		kf_own(fd, 0640);
	if (dfd != u->dfd)
		close(dfd);
	return ret;
}

int kf_file(struct kf_upload *u, const struct hvt_m_kfile *m)
{
	char name[HVT_PROTO_KPATH_MAX + 1];
	size_t done;

	if (!u->active)
		return u->failed ? u->failed : -EPROTO;
	d_copy_str(name, sizeof(name), &m->name);
	if (m->name.len >= sizeof(name) || kf_path_ok(name) < 0)
		return kf_fail(u, -EINVAL,
			       "'%s' is not a file of a formats folder", name);
	if (u->cur[0] && strcmp(u->cur, name))
		return kf_fail(u, -EPROTO,
			       "'%s' began before '%s' ended", name, u->cur);
	if (!u->cur[0]) {
		int fd;

		if (m->offset)
			return kf_fail(u, -EPROTO,
				       "'%s' does not start at offset 0",
				       name);
		if (u->files >= KF_MAX_FILES || u->files >= u->max_files)
			return kf_fail(u, -E2BIG,
				       "more files than announced (%u)",
				       u->max_files);
		fd = kf_create(u, name);
		if (fd < 0)
			return kf_fail(u, fd, "cannot create '%s': %s%s",
				       name, strerror(-fd),
				       fd == -EEXIST ? " (sent twice)" : "");
		u->fd = fd;
		snprintf(u->cur, sizeof(u->cur), "%s", name);
		u->cur_off = 0;
	}
	if (m->offset != u->cur_off)
		return kf_fail(u, -EPROTO,
			       "'%s': a piece at offset %llu, expected %llu",
			       name, (unsigned long long)m->offset,
			       (unsigned long long)u->cur_off);
	if (u->cur_off + m->len > KF_FILE_MAX ||
	    u->bytes + m->len > KF_MAX_BYTES)
		return kf_fail(u, -EFBIG,
			       "'%s' goes past %u bytes, or the upload past "
			       "%u",
			       name, KF_FILE_MAX, KF_MAX_BYTES);
	for (done = 0; done < m->len;) {
		ssize_t n = write(u->fd, m->data + done, m->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return kf_fail(u, n < 0 ? -errno : -EIO,
				       "cannot write '%s': %s", name,
				       strerror(n < 0 ? errno : EIO));
		done += (size_t)n;
	}
	u->cur_off += m->len;
	u->bytes += m->len;
	if (m->flags & HVT_KFILE_LAST) {
		kf_close_file(u);
		u->files++;
	}
	return 0;
}

static int kf_write_small(int dfd, const char *name, const char *text,
			  size_t len)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
					   O_CLOEXEC, 0600);
	ssize_t n;

	if (fd < 0)
		return -errno;
	kf_own(fd, 0640);
	n = write(fd, text, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

int kf_end(struct kf_upload *u, const struct hvt_m_kformats *m, char *dir,
	   size_t dir_size, char *msg, size_t msgsize)
{
	char line[2 * HVT_PROTO_BUILD_ID_MAX + 2];
	int ret;

	if (!u->active) {
		kf_msg(msg, msgsize, "%s",
		       u->failed ? u->why : "KFORMATS END without a BEGIN");
		ret = u->failed ? u->failed : -EPROTO;
		u->failed = 0;
		return ret;
	}
	if (u->cur[0]) {
		kf_msg(msg, msgsize, "'%s' did not end", u->cur);
		kf_abort(u);
		return -EPROTO;
	}
	if (m->nr_files != u->files || m->total_bytes != u->bytes) {
		kf_msg(msg, msgsize,
		       "END counts %u files, %llu bytes; %u files, %llu "
		       "bytes arrived",
		       m->nr_files, (unsigned long long)m->total_bytes,
		       u->files, (unsigned long long)u->bytes);
		kf_abort(u);
		return -EPROTO;
	}
	if (kf_key(line, sizeof(line), m) || strcmp(line, u->key)) {
		kf_msg(msg, msgsize, "END names another kernel than BEGIN");
		kf_abort(u);
		return -EPROTO;
	}
	snprintf(line, sizeof(line), "%.*s\n", (int)m->release.len,
		 m->release.ptr);
	ret = kf_write_small(u->dfd, "release", line, strlen(line));
	snprintf(line, sizeof(line), "%.*s\n", (int)m->build_id.len,
		 m->build_id.ptr);
	if (!ret)
		ret = kf_write_small(u->dfd, "build_id", line, strlen(line));
	if (!ret && rename(u->stage, u->dir)) {
		ret = -errno;
		if (ret == -EEXIST || ret == -ENOTEMPTY)
			ret = 1;	/* another upload made it first */
	}
	if (ret < 0) {
		kf_msg(msg, msgsize, "cannot keep the formats in %s: %s",
		       u->dir, strerror(-ret));
		kf_abort(u);
		return ret;
	}
	snprintf(dir, dir_size, "%s", u->dir);
	if (ret == 0) {
		/* Renamed: the folder is the cache's now, not to remove. */
		close(u->dfd);
		u->dfd = -1;
		u->stage[0] = '\0';
	}
	kf_abort(u);
	kf_msg(msg, msgsize, "%u files, %llu bytes kept in %s", m->nr_files,
	       (unsigned long long)m->total_bytes, dir);
	return 0;
}
