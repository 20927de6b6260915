// SPDX-License-Identifier: MIT
/*
 * Fuzz hvtraced's intake of a guest kernel's formats (host/hvtraced/
 * kformats.c): an agent's KFORMATS and KFILE messages, hostile from the
 * first byte.  The input is a list of records "u8 type, u16 length
 * (little-endian), payload": type 0 is KFORMATS, 1 is KFILE, anything
 * else ends the list.  Each payload goes through the codec's validation
 * (hvt_msg_decode(), as hvtraced gets it from a frame) and, when it is
 * accepted, to kf_begin(), kf_file() or kf_end() against a cache folder
 * of this process in /dev/shm.
 *
 * Properties checked besides memory safety: everything the upload left
 * in the cache lies below CACHE/kformats, is a regular file or folder (no
 * link), has a path that kf_path_ok() accepts (or is the "release" and
 * "build_id" files of a kept folder, or a staging folder of an upload
 * still open), at most 4 folders deep; a kept folder is named
 * RELEASE@BUILDID of a release kf_release_ok() accepts; the bytes kept
 * stay within KF_MAX_BYTES; and after kf_abort() no staging folder is
 * left.  The cache is emptied after every input.
 *
 * KFORMATS BOOT and BOOT_END, and KFILE between them, go to kboot.c, as
 * hvtraced's agent.c routes them: what a BOOT_END keeps is at most one
 * text per name, each within its bound and without a NUL byte, served
 * only for the generation it came with.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../host/hvtraced/daemon.h"

#define TRUSTED_KEY	"6.1.0-trusted@none"
#define TRUSTED_TEXT	"trusted\n"

static char cache[PATH_MAX];
static char root[PATH_MAX];
static char owner[64] = "fuzz-a";

static void remove_cache(void)
{
	rmdir(cache);
}

static void check(int cond)
{
	if (!cond)
		abort();
}

/* Walk @dir (relative path @rel under root/KEY), checking each entry. */
static uint64_t walk(const char *dir, const char *rel, int depth,
		     bool staging)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t bytes = 0;

	check(d != NULL);
	check(depth <= 4);
	while ((de = readdir(d))) {
		char path[PATH_MAX], r[PATH_MAX];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "",
			 de->d_name);
		check(!lstat(path, &st));
		check(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
		check(!(st.st_mode & 0007));	/* nobody else reads it */
		if (S_ISDIR(st.st_mode)) {
			bytes += walk(path, r, depth + 1, staging);
			continue;
		}
		bytes += (uint64_t)st.st_size;
		if (!staging && (!strcmp(r, "release") ||
				 !strcmp(r, "build_id")))
			continue;
		check(kf_path_ok(r) >= 0);
	}
	closedir(d);
	return bytes;
}

/* One remote's folder; with @open an upload may still be staging. */
static void check_remote(const char *dir, bool open)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned int staging = 0, kept = 0;

	check(d != NULL);
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		const char *at;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		check(!lstat(path, &st) && S_ISDIR(st.st_mode));
		check(!(st.st_mode & 0007));
		if (!strncmp(de->d_name, ".upload-", 8)) {
			staging++;
			check(walk(path, "", 1, true) <= KF_MAX_BYTES);
			continue;
		}
		at = strchr(de->d_name, '@');
		check(at != NULL);
		check(kf_release_ok(de->d_name, (size_t)(at - de->d_name)));
		check(walk(path, "", 1, false) <= KF_MAX_BYTES + 4096);
		kept++;
	}
	closedir(d);
	check(staging <= (open ? 1u : 0u));
	check(kept <= KF_GUEST_KERNELS);
}

/* Check the cache; with @open an upload may still be staging. */
static void check_cache(bool busy)
{
	char path[PATH_MAX], text[64];
	DIR *d = opendir(root);
	struct dirent *de;
	struct stat st;
	ssize_t n;
	int fd;

	check(d != NULL);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, TRUSTED_KEY))
			continue;
		/* nothing but the remotes' folders */
		check(!strcmp(de->d_name, KF_GUESTS_DIR));
	}
	closedir(d);
	/* The trusted folder: as the host made it. */
	snprintf(path, sizeof(path), "%s/" TRUSTED_KEY "/version", root);
	fd = open(path, O_RDONLY);
	check(fd >= 0);
	n = read(fd, text, sizeof(text));
	close(fd);
	check(n == (ssize_t)strlen(TRUSTED_TEXT) &&
	      !memcmp(text, TRUSTED_TEXT, (size_t)n));
	snprintf(path, sizeof(path), "%s/" KF_GUESTS_DIR, root);
	d = opendir(path);
	if (!d)
		return;		/* no upload began */
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		check(hvt_proto_name_ok(de->d_name,
					(uint32_t)strlen(de->d_name)));
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		check(!lstat(sub, &st) && S_ISDIR(st.st_mode));
		check_remote(sub, busy && !strcmp(de->d_name, owner));
	}
	closedir(d);
}

/* The folder a host made from a kernel package. */
static void make_trusted(void)
{
	char path[PATH_MAX];
	int fd;

	check(!mkdir(root, 0700) || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/" TRUSTED_KEY, root);
	check(!mkdir(path, 0700) || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/" TRUSTED_KEY "/version", root);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	check(fd >= 0);
	check(write(fd, TRUSTED_TEXT, strlen(TRUSTED_TEXT)) ==
	      (ssize_t)strlen(TRUSTED_TEXT));
	close(fd);
}

static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!lstat(path, &st) && S_ISDIR(st.st_mode))
			rm_tree(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* What kboot keeps: bounded texts without NUL, for its generation only. */
static void check_kboot(const struct kboot *kb)
{
	static const size_t max[KB_NR] = {4096, 1u << 20, 4u << 20};
	const char *t;
	size_t len;
	unsigned int i;
	int ret;

	for (i = 0; i < KB_NR; i++) {
		ret = kboot_text(kb, i, 7, &t, &len);
		check(ret == 0 || ret == -ENOENT || ret == -ENODATA);
		if (ret)
			continue;
		check(kb->kept && kb->generation == 7);
		check(len <= max[i] && strlen(t) == len);
		check(kboot_text(kb, i, 8, &t, &len) == -ENOENT);
	}
	check(kb->cur >= -1 && kb->cur < KB_NR);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kboot kb = {.cur = -1};
	struct kf_upload u;
	char dir[PATH_MAX], msg[HVT_PROTO_TEXT_MAX + 1];
	size_t off = 0;
	int records = 0;

	if (!cache[0]) {
		snprintf(cache, sizeof(cache),
			 "/dev/shm/hvt-kformats-fuzz.XXXXXX");
		check(mkdtemp(cache) != NULL);
		snprintf(root, sizeof(root), "%s/kformats", cache);
		atexit(remove_cache);
	}
	msg[0] = '\0';
	snprintf(owner, sizeof(owner), "fuzz-a");
	make_trusted();
	kf_init(&u);
	while (off + 3 <= size && records++ < 4096) {
		uint8_t type = data[off];
		uint32_t len = (uint32_t)data[off + 1] |
			       (uint32_t)data[off + 2] << 8;
		struct hvt_frame f;
		struct hvt_msg m;
		const char *why = NULL;
		uint8_t *copy;
		int ret;

		off += 3;
		if (type > 2 || len > size - off)
			break;
		if (type == 2) {
			/* Another remote uploads from here on. */
			kf_abort(&u);
			snprintf(owner, sizeof(owner), "%.*s",
				 (int)(len < sizeof(owner) ? len :
							     sizeof(owner) - 1),
				 (const char *)data + off);
			off += len;
			continue;
		}
		/* A copy of exactly the payload, so ASan sees any overread. */
		copy = malloc(len ? len : 1);
		check(copy != NULL);
		memcpy(copy, data + off, len);
		off += len;
		memset(&f, 0, sizeof(f));
		f.type = type ? HVT_MSG_KFILE : HVT_MSG_KFORMATS;
		f.version = HVT_PROTO_VERSION;
		f.payload = copy;
		f.len = len;
		if (hvt_msg_decode(&f, &m, &why)) {
			free(copy);
			continue;
		}
		if ((type && kb.active) ||
		    (!type && (m.u.kformats.op == HVT_KF_BOOT ||
			       m.u.kformats.op == HVT_KF_BOOT_END))) {
			if (type)
				kboot_file(&kb, &m.u.kfile);
			else if (m.u.kformats.op == HVT_KF_BOOT)
				kboot_begin(&kb, &m.u.kformats);
			else
				kboot_end(&kb, &m.u.kformats, 7, msg,
					  sizeof(msg));
			check_kboot(&kb);
		} else if (type) {
			kf_file(&u, &m.u.kfile);
		} else if (m.u.kformats.op == HVT_KF_BEGIN) {
			ret = kf_begin(&u, cache, owner, NULL, &m.u.kformats,
				       dir, sizeof(dir), msg, sizeof(msg));
			check(ret <= 1);
			check(ret != 0 || u.active);
			/* Only the trusted folder or the remote's own. */
			if (ret == 1) {
				char mine[PATH_MAX];

				snprintf(mine, sizeof(mine),
					 "%s/" KF_GUESTS_DIR "/%s/", root,
					 owner);
				check(!strncmp(dir, mine, strlen(mine)) ||
				      (!strncmp(dir, root, strlen(root)) &&
				       !strcmp(dir + strlen(root),
					       "/" TRUSTED_KEY)));
			}
		} else {
			ret = kf_end(&u, &m.u.kformats, dir, sizeof(dir), msg,
				     sizeof(msg));
			check(!u.active);
			if (!ret) {
				struct stat st;

				char mine[PATH_MAX];

				snprintf(mine, sizeof(mine),
					 "%s/" KF_GUESTS_DIR "/%s/", root,
					 owner);
				check(!lstat(dir, &st) && S_ISDIR(st.st_mode));
				check(!strncmp(dir, mine, strlen(mine)));
			}
		}
		check(memchr(msg, '\0', sizeof(msg)) != NULL);
		free(copy);
		check_cache(u.active);
	}
	kboot_abort(&kb);
	check(!kb.active);
	for (unsigned int i = 0; i < KB_NR; i++) {
		free(kb.in[i].text);
		free(kb.done[i].text);
	}
	kf_abort(&u);
	check(!u.active && u.dfd < 0 && u.fd < 0);
	check_cache(false);
	rm_tree(root);
	return 0;
}
