// SPDX-License-Identifier: MIT
/*
 * The formats cache entry of the guest kernel whose RAM a file holds, for
 * a read of a guest that can no longer say which kernel it ran (stream
 * RAMFILE --drain, record --guest-kernel RAMFILE).
 *
 * The cache ($HVT_CACHE/kformats, default /var/cache/hvtrace) has a
 * folder per guest kernel build:
 *
 *   RELEASE@BUILDID   what the host made for a kernel build (trusted:
 *                     the rig, an administrator, the kernel package;
 *                     the release is uname -r, the build id the kernel's
 *                     GNU build id in hex, "none" if it has none)
 *   guests/REMOTE/RELEASE@BUILDID
 *                     what hvtraced kept from remote REMOTE's agent: only
 *                     what that guest claimed, so used only when no
 *                     trusted folder of the release is confirmed, and
 *                     for a RAM file known to be a guest's (a rig
 *                     guest's NAME, a file hvtrace-NAME.ram) only that
 *                     guest's own: another guest may upload under the
 *                     same release and build id
 *   VERSION-LINE      what hvtrace-guest kformats kept from a guest's
 *                     console (its "Linux version ..." line, characters
 *                     outside [A-Za-z0-9._+-] as '_')
 *
 * The guest's RAM holds its kernel's banner, "Linux version RELEASE
 * (...)", and its image, notes included.  The banner names the release;
 * each RELEASE@BUILDID folder of it is confirmed by finding its build id's
 * bytes in guest RAM (the kernel image's notes hold them; the holes of a
 * sparse RAM file are skipped).  Trusted folders are tried first; the
 * guests' folders only when none of those is confirmed.  Exactly
 * one confirmed folder is used; two confirmed, or folders of the release
 * none of which is confirmed, are refused with a message that names
 * them (give --formats).  A release with no agent folder falls back to
 * the console's VERSION-LINE folder.  The RAM file is read in bounded
 * chunks; at most 64 banners and KC_MAX_CANDIDATES folders are tried.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include <hvtrace-daemon.h>
#include <hvtrace-events.h>
#include <hvtrace-ring.h>

#define KC_MAX_CANDIDATES	16
#define KC_MAX_GUESTS		64		/* guests/ folders looked at */
#define KC_ID_MAX		64		/* build id bytes */
#define KC_CHUNK		(1u << 20)

struct kc_cand {
	char dir[PATH_MAX];
	char hex[2 * KC_ID_MAX + 1];
	uint8_t id[KC_ID_MAX];
	size_t len;		/* 0: no build id */
	bool seen;		/* found in guest RAM */
};

static const char *kc_root(char *buf, size_t size)
{
	const char *cache = getenv("HVT_CACHE");

	snprintf(buf, size, "%s/kformats",
		 cache && *cache ? cache : "/var/cache/hvtrace");
	return buf;
}

static int kc_hex(const char *hex, uint8_t *out, size_t max)
{
	size_t n = strlen(hex), i;

	if (n % 2 || n / 2 > max)
		return -1;
	for (i = 0; i < n / 2; i++) {
		unsigned int v;

		if (!isxdigit((unsigned char)hex[2 * i]) ||
		    !isxdigit((unsigned char)hex[2 * i + 1]) ||
		    sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return (int)(n / 2);
}

/* The folders RELEASE@* of @rel in @root, from @c[@n] on; returns how
 * many there are then (bounded). */
static int kc_candidates(const char *root, const char *rel,
			 struct kc_cand *c, int n)
{
	size_t rl = strlen(rel);
	struct dirent *de;
	DIR *d = opendir(root);

	if (!d)
		return n;
	while ((de = readdir(d)) && n < KC_MAX_CANDIDATES) {
		const char *bid = de->d_name + rl + 1;
		struct stat st;

		if (strncmp(de->d_name, rel, rl) || de->d_name[rl] != '@')
			continue;
		if ((size_t)snprintf(c[n].dir, sizeof(c[n].dir), "%.*s/%s",
				     PATH_MAX - NAME_MAX - 2, root,
				     de->d_name) >= sizeof(c[n].dir) ||
		    stat(c[n].dir, &st) || !S_ISDIR(st.st_mode))
			continue;
		snprintf(c[n].hex, sizeof(c[n].hex), "%s", bid);
		c[n].seen = false;
		if (!strcmp(bid, "none")) {
			c[n].len = 0;
		} else {
			int len = kc_hex(bid, c[n].id, KC_ID_MAX);

			if (len <= 0)
				continue;	/* not a folder hvtraced made */
			c[n].len = (size_t)len;
		}
		n++;
	}
	closedir(d);
	return n;
}

/*
 * The folders RELEASE@* of @rel that guests' agents uploaded: only
 * @remote's when the RAM file is known to be that guest's, so that no
 * other guest's upload under the same release and build id is taken for
 * it; every guest's otherwise (stderr names the folder used).
 */
static int kc_guest_candidates(const char *root, const char *remote,
			       const char *rel, struct kc_cand *c, int n)
{
	char dir[PATH_MAX];
	struct dirent *de;
	unsigned int seen = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%.*s/guests", PATH_MAX - 8, root);
	if (remote) {
		char sub[PATH_MAX];

		if (!hvt_proto_name_ok(remote, (uint32_t)strlen(remote)) ||
		    (size_t)snprintf(sub, sizeof(sub), "%.*s/%s",
				     PATH_MAX - NAME_MAX - 2, dir,
				     remote) >= sizeof(sub))
			return n;
		return kc_candidates(sub, rel, c, n);
	}
	d = opendir(dir);
	if (!d)
		return n;
	while ((de = readdir(d)) && n < KC_MAX_CANDIDATES &&
	       seen++ < KC_MAX_GUESTS) {
		char sub[PATH_MAX];

		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%.*s/%s",
				     PATH_MAX - NAME_MAX - 2, dir,
				     de->d_name) >= sizeof(sub))
			continue;
		n = kc_candidates(sub, rel, c, n);
	}
	closedir(d);
	return n;
}

/*
 * Mark the candidates whose build id is in @fd (@size bytes): all of it,
 * a chunk at a time, the holes of a sparse RAM file skipped (SEEK_DATA).
 */
static void kc_confirm(int fd, uint64_t size, struct kc_cand *c, int n)
{
	size_t keep = KC_ID_MAX, have = 0;
	uint8_t *buf = malloc(KC_CHUNK + KC_ID_MAX);
	uint64_t off = 0;
	int left = 0, i;

	for (i = 0; i < n; i++)
		left += c[i].len > 0;
	while (buf && left && off < size) {
		size_t want = size - off < KC_CHUNK ? (size_t)(size - off) :
						       KC_CHUNK;
		off_t data = lseek(fd, (off_t)off, SEEK_DATA);
		ssize_t got;
		size_t len;

		if (data < 0)
			break;		/* only a hole is left */
		if ((uint64_t)data != off) {
			off = (uint64_t)data;
			have = 0;
			continue;
		}
		got = pread(fd, buf + have, want, (off_t)off);
		if (got <= 0)
			break;
		off += (uint64_t)got;
		len = have + (size_t)got;
		for (i = 0; i < n; i++)
			if (c[i].len && !c[i].seen &&
			    memmem(buf, len, c[i].id, c[i].len)) {
				c[i].seen = true;
				left--;
			}
		/* Keep the tail: an id may straddle two chunks. */
		have = len < keep ? len : keep;
		memmove(buf, buf + len - have, have);
	}
	free(buf);
}

/*
 * The guest whose folders are looked at: its RAM in a file (@fd, @size
 * bytes: a candidate is confirmed by its build id's bytes found there),
 * or the build id the guest kernel's vmcoreinfo gave (@id_hex).
 */
struct kc_guest {
	int fd;
	uint64_t size;
	const char *id_hex;
};

/* Mark the candidates @g confirms. */
static void kc_confirm_guest(const struct kc_guest *g, struct kc_cand *c,
			     int n)
{
	int i;

	if (!g->id_hex) {
		kc_confirm(g->fd, g->size, c, n);
		return;
	}
	for (i = 0; i < n; i++)
		c[i].seen = c[i].len && !strcasecmp(c[i].hex, g->id_hex);
}

/*
 * Pick among the agent folders of @rel for guest @g.
 * Returns 0 with @dir set, -ENOENT when the release has no agent folder,
 * -EEXIST/-ESRCH when it has some but none can be chosen (said on
 * stderr).
 */
static int kc_pick(const char *verb, const struct kc_guest *g,
		   const char *remote, const char *rel, char *dir,
		   size_t dirsize)
{
	const char *where = g->id_hex ? "in the guest kernel's vmcoreinfo" :
					"in guest RAM";
	struct kc_cand c[KC_MAX_CANDIDATES];
	char root[PATH_MAX];
	int n, i, seen = 0, pick = -1, noid = -1;

	n = kc_candidates(kc_root(root, sizeof(root)), rel, c, 0);
	if (n) {
		kc_confirm_guest(g, c, n);
		for (i = 0; i < n && !c[i].seen; i++)
			;
	}
	if (!n || i == n) {
		/* No trusted folder confirmed: the guests' uploads. */
		int t = n;

		n = kc_guest_candidates(root, remote, rel, c, n);
		if (n > t)
			kc_confirm_guest(g, c + t, n - t);
	}
	if (!n)
		return -ENOENT;
	for (i = 0; i < n; i++) {
		if (c[i].seen) {
			seen++;
			pick = i;
		} else if (!c[i].len) {
			noid = i;
		}
	}
	if (seen > 1) {
		fprintf(stderr,
			"hvtrace %s: the guest kernel's formats: %d entries "
			"of the cache match release %s and a build id found "
			"%s:",
			verb, seen, rel, where);
		for (i = 0; i < n; i++)
			if (c[i].seen)
				fprintf(stderr, " %s", c[i].dir);
		fprintf(stderr, "; give the right one with --formats DIR\n");
		return -EEXIST;
	}
	if (!seen && noid >= 0 && n == 1) {
		pick = noid;
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel %s has no build "
			"id: its formats are taken by release alone\n",
			verb, rel);
	}
	if (pick < 0) {
		fprintf(stderr,
			"hvtrace %s: the guest kernel's formats: the cache "
			"has release %s, but %s (",
			verb, rel,
			g->id_hex ? "none of its build ids is the one in the "
				    "guest kernel's vmcoreinfo" :
				    "guest RAM holds none of its build ids");
		for (i = 0; i < n; i++)
			fprintf(stderr, "%s%s", i ? ", " : "", c[i].hex);
		fprintf(stderr, "): another build of that release ran here; "
				"give its formats with --formats DIR\n");
		return -ESRCH;
	}
	snprintf(dir, dirsize, "%s", c[pick].dir);
	if (c[pick].len)
		fprintf(stderr,
			"hvtrace %s: the guest kernel's formats from %s "
			"(release %s, build id %s found %s)\n",
			verb, dir, rel, c[pick].hex, where);
	return 0;
}

/* The console's folder of the banner line at @p (len bytes). */
static int kc_console(const char *verb, const char *p, size_t len, char *dir,
		      size_t dirsize)
{
	char root[PATH_MAX], key[241];
	struct stat st;
	size_t i;

	if (len > 240)
		len = 240;
	for (i = 0; i < len; i++)
		key[i] = isalnum((unsigned char)p[i]) || strchr("._+-", p[i]) ?
				 p[i] :
				 '_';
	key[len] = '\0';
	snprintf(dir, dirsize, "%s/%s", kc_root(root, sizeof(root)), key);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return -ENOENT;
	fprintf(stderr, "hvtrace %s: the guest kernel's formats from %s\n",
		verb, dir);
	return 0;
}

/* A rig guest's name from its RAM file's, $HVT_SHM_DIR/hvtrace-NAME.ram. */
static const char *kc_remote_of(const char *ram, char *buf, size_t size)
{
	const char *base = strrchr(ram, '/');
	size_t len;

	base = base ? base + 1 : ram;
	len = strlen(base);
	if (strncmp(base, "hvtrace-", 8) || len <= 12 ||
	    strcmp(base + len - 4, ".ram") || len - 12 >= size)
		return NULL;
	memcpy(buf, base + 8, len - 12);
	buf[len - 12] = '\0';
	return buf;
}

int hvt_cli_kformats_cached(const char *verb, const char *ram,
			    const char *remote, char *dir, size_t dirsize)
{
	char remote_buf[NAME_MAX + 1];
	static const char tag[] = "Linux version ";
	struct kc_guest g = { .fd = -1 };
	size_t chunk = KC_CHUNK, keep = 512, have = 0;
	unsigned int tries = 0;
	int fd, found = -ENOENT;
	char *buf;
	struct stat st;
	uint64_t off = 0;

	if (!remote)
		remote = kc_remote_of(ram, remote_buf, sizeof(remote_buf));
	fd = open(ram, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	g.fd = fd;
	g.size = (uint64_t)st.st_size;
	buf = malloc(chunk + keep);
	while (buf && found == -ENOENT && tries < 64) {
		ssize_t n = pread(fd, buf + have, chunk, (off_t)off);
		char *p, *end;

		if (n <= 0)
			break;
		off += (uint64_t)n;
		end = buf + have + (size_t)n;
		for (p = buf;
		     found == -ENOENT && tries < 64 &&
		     (p = memmem(p, (size_t)(end - p), tag, sizeof(tag) - 1));
		     p++) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			char rel[HVT_CLI_RELEASE_MAX + 1];
			const char *r = p + sizeof(tag) - 1;
			size_t rl = 0;

			if (!nl || nl - p > (ptrdiff_t)keep)
				continue; /* cut by the chunk, or no line */
			tries++;
			while (r + rl < nl && rl < HVT_CLI_RELEASE_MAX &&
			       (isalnum((unsigned char)r[rl]) ||
				strchr("._+-", r[rl])))
				rl++;
			memcpy(rel, r, rl);
			rel[rl] = '\0';
			if (rl && r[rl] == ' ' && rel[0] != '.')
				found = kc_pick(verb, &g, remote, rel, dir,
						dirsize);
			if (found == -ENOENT)
				found = kc_console(verb, p, (size_t)(nl - p),
						   dir, dirsize);
		}
		/* Keep the tail: a banner may straddle two chunks. */
		have = (size_t)(end - buf) < keep ? (size_t)(end - buf) : keep;
		memmove(buf, end - have, have);
	}
	free(buf);
	close(fd);
	return found;
}

int hvt_cli_kformats_of_kernel(const char *verb,
			       const struct hvtrace_ksyms_info *ki,
			       const char *remote, char *dir, size_t dirsize)
{
	struct kc_guest g = { .fd = -1, .id_hex = ki->build_id };
	const char *rel = ki->release;
	size_t i;
	int ret = -ENOENT;

	/* Hostile text (a validated note's, still the guest's): a release
	 * is a name, as the banner scan takes it. */
	for (i = 0; rel[i]; i++)
		if (!isalnum((unsigned char)rel[i]) && !strchr("._+-", rel[i]))
			return -ENOENT;
	if (!i || rel[0] == '.')
		return -ENOENT;
	if (ki->build_id[0])
		ret = kc_pick(verb, &g, remote, rel, dir, dirsize);
	if (ret == -ENOENT && ki->banner[0])
		ret = kc_console(verb, ki->banner, strlen(ki->banner), dir,
				 dirsize);
	return ret;
}

int hvt_cli_kformats_of_kring(const char *verb, struct hvtrace_kring *k,
			      const char *remote, char *dir, size_t dirsize)
{
	struct hvtrace_ksyms_info ki;
	struct hvtrace_ksyms *ks = NULL;

	if (hvtrace_ksyms_from_kring(k, &ks, &ki)) {
		fprintf(stderr,
			"hvtrace %s: note: which kernel the guest runs is not "
			"known (%s), so no formats come from the cache\n",
			verb, hvtrace_last_error());
		return -ENOENT;
	}
	hvtrace_ksyms_free(ks);
	return hvt_cli_kformats_of_kernel(verb, &ki, remote, dir, dirsize);
}

int hvt_cli_kformats_of_pid(const char *verb, int pid, char *dir,
			    size_t dirsize)
{
	struct hvtrace_kring *k;
	int ret;

	if (hvtrace_kring_open_pid(pid, &k))
		return -ENOENT;	/* the caller's own open says why */
	ret = hvt_cli_kformats_of_kring(verb, k, NULL, dir, dirsize);
	hvtrace_kring_close(k);
	return ret;
}
