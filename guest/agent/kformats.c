// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: the guest kernel's event formats, sent to the host.
 *
 * The host reads the guest kernel's own ring from guest RAM but cannot see
 * the guest's tracefs, so it cannot decode that ring without the formats.
 * When a host session comes up, the agent uploads them:
 *
 *   events/header_page, events/header_event,
 *   events/SYSTEM/enable, events/SYSTEM/EVENT/format   every event
 *   printk_formats, saved_cmdlines                     the top level's
 *   trace_clock                                        the instance's
 *   version                                            /proc/version
 *
 * from the kernel instance (--kernel-instance, default "hvt"; the top
 * level when the guest has no such instance), as one KFORMATS BEGIN that
 * names the kernel (uname's release and the GNU build id from
 * /sys/kernel/notes), a KFILE message per piece of each file, in order,
 * and a KFORMATS END with the counts.  All events, not only the enabled
 * ones: the host keeps the set for post-mortem reads of a guest that can
 * no longer answer, and an event enabled later (hvtrace events enable
 * --remote) must decode too.  A host that has this build already says so
 * in its answer to BEGIN, and nothing more is sent.
 *
 * The cache keeps those per kernel build, not per boot, so first, with a
 * host that takes them (HVT_CAP_DAEMON_KBOOT in its HELLO; this agent
 * says it sends them with HVT_CAP_AGENT_KBOOT), each session sends this
 * boot's own files the same way between KFORMATS BOOT and BOOT_END:
 *
 *   trace_clock      the instance's
 *   saved_cmdlines   the top level's
 *   kallsyms         the /proc/kallsyms lines of the modules loaded
 *
 * which the host keeps in memory for this boot's area and gives to the
 * tools that read the kernel's pages through it.
 *
 * The upload is paced: a piece is queued only while less than
 * KF_QUEUE_LOW bytes wait for the link, so time-sync answers never queue
 * behind megabytes of formats.  A link that drops ends the upload; the
 * next session starts it over.  Files are read whole (up to KF_FILE_MAX)
 * before their first piece goes, so each file the host gets is one
 * reading of the guest's file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent.h"

#define KF_MAX_FILES	16384
#define KF_FILE_MAX	(8u << 20)	/* bytes of one file */
#define KF_PIECE	15360u		/* KFILE data per frame */
#define KF_QUEUE_LOW	(64u * 1024u)
#define KF_NOTES_MAX	(64u * 1024u)
#define KF_PIECES_PER_ROUND	32
#define KF_MODSYMS_MAX		(4u << 20) /* hvtraced's bound (kboot.c) */
#define KF_MODSYMS_SRC		"/proc/kallsyms"

enum kf_state {
	KF_IDLE = 0,	/* nothing to send (done, refused or no tracefs) */
	KF_ASKED,	/* BEGIN sent, waiting for its answer */
	KF_SENDING,	/* files going out */
	KF_ENDING,	/* END sent */
};

struct kformats {
	enum kf_state state;
	char release[HVT_PROTO_RELEASE_MAX + 1];
	char build_id[2 * HVT_PROTO_BUILD_ID_MAX + 1];
	char **names;		/* paths in the upload */
	char **srcs;		/* where each is read in the guest */
	size_t nr;
	size_t next;		/* next file to read */
	uint8_t *buf;		/* the file being sent */
	size_t len, off;
	bool cur;		/* buf holds file next - 1 */
	uint32_t sent_files;
	uint64_t sent_bytes;
	bool boot; /* sending this boot's files (BOOT) */
	bool warned;
};

static struct kformats kf_state;

/* --- what the kernel is -------------------------------------------------- */

/*
 * The GNU build id from /sys/kernel/notes (the kernel's ELF notes: namesz,
 * descsz, type, then the name and the descriptor, each padded to 4 bytes),
 * as lowercase hex; "" when the kernel has none.
 */
static void kf_build_id(char *out, size_t size)
{
	uint8_t *b = malloc(KF_NOTES_MAX);
	size_t have = 0, off = 0;
	int fd;

	out[0] = '\0';
	if (!b)
		return;
	fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n;

		while (have < KF_NOTES_MAX &&
		       (n = read(fd, b + have, KF_NOTES_MAX - have)) > 0)
			have += (size_t)n;
		close(fd);
	}
	while (off + 12 <= have) {
		uint32_t namesz, descsz, type;
		size_t name_pad, desc_pad;

		memcpy(&namesz, b + off, 4);
		memcpy(&descsz, b + off + 4, 4);
		memcpy(&type, b + off + 8, 4);
		name_pad = ((size_t)namesz + 3) & ~(size_t)3;
		desc_pad = ((size_t)descsz + 3) & ~(size_t)3;
		if (namesz > have || descsz > have ||
		    off + 12 + name_pad + desc_pad > have)
			break;
		if (type == 3 && namesz == 4 &&
		    !memcmp(b + off + 12, "GNU", 4) && descsz >= 1 &&
		    descsz <= HVT_PROTO_BUILD_ID_MAX &&
		    2 * (size_t)descsz < size) {
			const uint8_t *d = b + off + 12 + name_pad;
			uint32_t i;

			for (i = 0; i < descsz; i++)
				snprintf(out + 2 * i, 3, "%02x", d[i]);
			break;
		}
		off += 12 + name_pad + desc_pad;
	}
	free(b);
}

/* --- the list of files --------------------------------------------------- */

/* A path into @dst; a path that does not fit is cut (and then not found). */
void agent_path(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, size, fmt, ap);
	va_end(ap);
}

void agent_kinstance_dir(const struct agent *ag, char *dst, size_t size)
{
	struct stat st;

	agent_path(dst, size, "%s/instances/%s", ag->tracefs, ag->kinstance);
	if (stat(dst, &st) || !S_ISDIR(st.st_mode))
		agent_path(dst, size, "%s", ag->tracefs);
}

static void kf_clear_list(struct kformats *k)
{
	size_t i;

	for (i = 0; i < k->nr; i++) {
		free(k->names[i]);
		free(k->srcs[i]);
	}
	free(k->names);
	free(k->srcs);
	k->names = k->srcs = NULL;
	k->nr = k->next = 0;
	free(k->buf);
	k->buf = NULL;
	k->len = k->off = 0;
	k->cur = false;
}

static int kf_add(struct kformats *k, size_t *cap, const char *name,
		  const char *src)
{
	if (k->nr >= KF_MAX_FILES || strlen(name) > HVT_PROTO_KPATH_MAX)
		return 0;	/* bounded: the rest is left out */
	if (k->nr == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		char **a = realloc(k->names, nc * sizeof(*a));
		char **b;

		if (!a)
			return -ENOMEM;
		k->names = a;
		b = realloc(k->srcs, nc * sizeof(*b));
		if (!b)
			return -ENOMEM;
		k->srcs = b;
		*cap = nc;
	}
	k->names[k->nr] = strdup(name);
	k->srcs[k->nr] = strdup(src);
	if (!k->names[k->nr] || !k->srcs[k->nr]) {
		free(k->names[k->nr]);
		free(k->srcs[k->nr]);
		return -ENOMEM;
	}
	k->nr++;
	return 0;
}

static int kf_name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Directory entries of @dir that are folders, sorted; NULL-terminated. */
static char **kf_subdirs(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL, path[PATH_MAX];
	size_t n = 0, cap = 0;
	struct stat st;

	if (!d)
		return NULL;
	while ((de = readdir(d)) && n < KF_MAX_FILES) {
		if (de->d_name[0] == '.')
			continue;
		agent_path(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (n + 1 >= cap) {
			size_t nc = cap ? cap * 2 : 64;
			char **a = realloc(v, nc * sizeof(*a));

			if (!a)
				break;
			v = a;
			cap = nc;
		}
		v[n] = strdup(de->d_name);
		if (v[n])
			n++;
	}
	closedir(d);
	if (!v)
		v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	qsort(v, n, sizeof(*v), kf_name_cmp);
	v[n] = NULL;
	return v;
}

static void kf_free_v(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Fill the list from the guest's tracefs; -ENOENT when it has none. */
static int kf_build_list(struct agent *ag, struct kformats *k)
{
	char inst[PATH_MAX], evd[PATH_MAX], name[PATH_MAX], src[2 * PATH_MAX];
	char **sys, **ev;
	size_t cap = 0, i, j;
	struct stat st;
	int ret = 0;

	agent_kinstance_dir(ag, inst, sizeof(inst));
	agent_path(evd, sizeof(evd), "%s/events", inst);
	if (stat(evd, &st) || !S_ISDIR(st.st_mode))
		return -ENOENT;
	sys = kf_subdirs(evd);
	if (!sys)
		return -ENOMEM;
#define ADD(n, s) do { if (!ret) ret = kf_add(k, &cap, (n), (s)); } while (0)
	agent_path(src, sizeof(src), "%s/header_page", evd);
	ADD("events/header_page", src);
	agent_path(src, sizeof(src), "%s/header_event", evd);
	ADD("events/header_event", src);
	for (i = 0; sys[i] && !ret; i++) {
		agent_path(name, sizeof(name), "%s/%s", evd, sys[i]);
		ev = kf_subdirs(name);
		agent_path(name, sizeof(name), "events/%s/enable", sys[i]);
		agent_path(src, sizeof(src), "%s/%s/enable", evd, sys[i]);
		ADD(name, src);
		for (j = 0; ev && ev[j] && !ret; j++) {
			agent_path(name, sizeof(name), "events/%s/%s/format",
				 sys[i], ev[j]);
			agent_path(src, sizeof(src), "%s/%s/%s/format", evd,
				 sys[i], ev[j]);
			if (!access(src, R_OK))
				ADD(name, src);
		}
		kf_free_v(ev);
	}
	kf_free_v(sys);
	agent_path(src, sizeof(src), "%s/printk_formats", ag->tracefs);
	ADD("printk_formats", src);
	agent_path(src, sizeof(src), "%s/saved_cmdlines", ag->tracefs);
	ADD("saved_cmdlines", src);
	agent_path(src, sizeof(src), "%s/trace_clock", inst);
	ADD("trace_clock", src);
	ADD("version", "/proc/version");
#undef ADD
	return ret;
}

bool kformats_offered(struct agent *ag)
{
	char inst[PATH_MAX], evd[PATH_MAX + 8];
	struct stat st;

	if (!ag->tracefs)
		return false;
	agent_kinstance_dir(ag, inst, sizeof(inst));
	agent_path(evd, sizeof(evd), "%s/events", inst);
	return !stat(evd, &st) && S_ISDIR(st.st_mode);
}

/* This boot's files (BOOT): what the cache of a build cannot hold. */
static int kf_build_boot_list(struct agent *ag, struct kformats *k)
{
	char inst[PATH_MAX], src[2 * PATH_MAX];
	size_t cap = 0;
	int ret;

	agent_kinstance_dir(ag, inst, sizeof(inst));
	agent_path(src, sizeof(src), "%s/trace_clock", inst);
	ret = kf_add(k, &cap, "trace_clock", src);
	agent_path(src, sizeof(src), "%s/saved_cmdlines", ag->tracefs);
	if (!ret)
		ret = kf_add(k, &cap, "saved_cmdlines", src);
	if (!ret)
		ret = kf_add(k, &cap, "kallsyms", KF_MODSYMS_SRC);
	return ret;
}

/* --- sending ------------------------------------------------------------- */

static void kf_send_op(struct agent *ag, struct kformats *k, uint32_t op)
{
	struct pending *p;
	struct hvt_msg m;
	bool first = op == HVT_KF_BEGIN || op == HVT_KF_BOOT;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_KFORMATS;
	m.u.kformats.op = op;
	m.u.kformats.nr_files = first ? (uint32_t)k->nr : k->sent_files;
	m.u.kformats.total_bytes = first ? 0 : k->sent_bytes;
	m.u.kformats.release.ptr = k->release;
	m.u.kformats.release.len = (uint32_t)strlen(k->release);
	m.u.kformats.build_id.ptr = k->build_id;
	m.u.kformats.build_id.len = (uint32_t)strlen(k->build_id);
	/* The views point at k, which outlives the request. */
	p = pending_new(HVT_MSG_KFORMATS, 0, 0, &m);
	if (!p) {
		k->state = KF_IDLE;
		return;
	}
	k->state = first ? KF_ASKED : KF_ENDING;
	if (link_submit(ag, p))
		k->state = KF_IDLE;
}

/* The formats themselves (BEGIN), after this boot's files if any. */
static void kf_formats_start(struct agent *ag, struct kformats *k)
{
	int ret;

	kf_clear_list(k);
	k->boot = false;
	k->state = KF_IDLE;
	k->sent_files = 0;
	k->sent_bytes = 0;
	ret = kf_build_list(ag, k);
	if (ret) {
		if (!k->warned)
			agent_log("the guest kernel's event formats are not "
				  "sent: %s has no events folder (%s); mount "
				  "tracefs there or give --tracefs",
				  ag->tracefs, strerror(-ret));
		k->warned = true;
		kf_clear_list(k);
		return;
	}
	agent_dbg("offering the formats of kernel %s (build id %s): %zu "
		  "files", k->release, k->build_id[0] ? k->build_id : "none",
		  k->nr);
	kf_send_op(ag, k, HVT_KF_BEGIN);
}

void kformats_session_up(struct agent *ag)
{
	struct kformats *k = &kf_state;
	struct utsname u;

	ag->kf = k;
	kf_clear_list(k);
	k->state = KF_IDLE;
	if (!ag->tracefs)
		return;
	if (uname(&u))
		return;
	snprintf(k->release, sizeof(k->release), "%s", u.release);
	kf_build_id(k->build_id, sizeof(k->build_id));
	if (!(ag->link.host_caps & HVT_CAP_DAEMON_KBOOT) ||
	    kf_build_boot_list(ag, k)) {
		kf_formats_start(ag, k);
		return;
	}
	k->boot = true;
	k->sent_files = 0;
	k->sent_bytes = 0;
	kf_send_op(ag, k, HVT_KF_BOOT);
}

void kformats_answer(struct agent *ag, const struct hvt_msg *m)
{
	struct kformats *k = &kf_state;
	int st = m->u.result.status;

	if (k->boot && (k->state == KF_ASKED || k->state == KF_ENDING)) {
		if (st)
			agent_log("the host did not take this boot's kernel "
				  "files: %.*s",
				  (int)m->u.result.text.len,
				  m->u.result.text.ptr);
		if (k->state == KF_ASKED && !st) {
			k->state = KF_SENDING;
			return;
		}
		if (!st)
			agent_dbg("sent this boot's kernel files: %u, %llu "
				  "bytes",
				  k->sent_files,
				  (unsigned long long)k->sent_bytes);
		/* Refused or done: the formats follow either way. */
		kf_formats_start(ag, k);
		return;
	}
	if (k->state == KF_ASKED) {
		if (st) {
			agent_log("the host refused the guest kernel's "
				  "formats: %.*s",
				  (int)m->u.result.text.len,
				  m->u.result.text.ptr);
			k->state = KF_IDLE;
		} else if (m->u.result.id == 1) {
			agent_dbg("the host has this kernel's formats already");
			k->state = KF_IDLE;
		} else {
			k->state = KF_SENDING;
		}
	} else if (k->state == KF_ENDING) {
		if (st)
			agent_log("the host did not keep the guest kernel's "
				  "formats: %.*s",
				  (int)m->u.result.text.len,
				  m->u.result.text.ptr);
		else
			agent_log("sent the formats of kernel %s: %u files, "
				  "%llu bytes",
				  k->release, k->sent_files,
				  (unsigned long long)k->sent_bytes);
		k->state = KF_IDLE;
	}
	if (k->state == KF_IDLE)
		kf_clear_list(k);
}

/* The modules' lines of /proc/kallsyms ("ADDR TYPE NAME\t[MOD]") into
 * k->buf, at most KF_MODSYMS_MAX bytes of whole lines. */
static int kf_read_modsyms(struct kformats *k)
{
	bool part = false; /* in the rest of a line too long to take */
	size_t cap = 0;
	char line[512];
	FILE *f;

	f = fopen(KF_MODSYMS_SRC, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		bool whole = n && line[n - 1] == '\n';
		bool was_part = part;

		part = !whole;
		if (was_part || !whole || !strstr(line, "\t["))
			continue;
		if (k->len + n > KF_MODSYMS_MAX)
			break;
		if (k->len + n > cap) {
			size_t nc = cap ? cap * 2 : 65536;
			uint8_t *b;

			while (nc < k->len + n)
				nc *= 2;
			b = realloc(k->buf, nc);
			if (!b) {
				fclose(f);
				return -ENOMEM;
			}
			k->buf = b;
			cap = nc;
		}
		memcpy(k->buf + k->len, line, n);
		k->len += n;
	}
	fclose(f);
	return 0;
}

/* Read file @i whole into k->buf: 0, or -errno (the file is left out). */
static int kf_read(struct kformats *k, size_t i)
{
	size_t cap = 16384;
	int fd;

	free(k->buf);
	k->buf = NULL;
	k->len = k->off = 0;
	if (k->boot && !strcmp(k->srcs[i], KF_MODSYMS_SRC))
		return kf_read_modsyms(k);
	fd = open(k->srcs[i], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	k->buf = malloc(cap);
	for (;;) {
		ssize_t n;

		if (!k->buf) {
			close(fd);
			return -ENOMEM;
		}
		if (k->len == cap) {
			uint8_t *b;

			if (cap >= KF_FILE_MAX) {
				close(fd);
				return -EFBIG;
			}
			b = realloc(k->buf, cap * 2);
			if (!b) {
				close(fd);
				return -ENOMEM;
			}
			k->buf = b;
			cap *= 2;
		}
		n = read(fd, k->buf + k->len, cap - k->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return -errno;
		}
		if (n == 0)
			break;
		k->len += (size_t)n;
	}
	close(fd);
	return 0;
}

/* One KFILE piece of the current file; 0, or -errno (link trouble). */
static int kf_piece(struct agent *ag, struct kformats *k)
{
	const char *name = k->names[k->next - 1];
	size_t n = k->len - k->off;
	struct hvt_msg m;
	int ret;

	if (n > KF_PIECE)
		n = KF_PIECE;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_KFILE;
	m.u.kfile.flags = k->off + n == k->len ? HVT_KFILE_LAST : 0;
	m.u.kfile.offset = k->off;
	m.u.kfile.name.ptr = name;
	m.u.kfile.name.len = (uint32_t)strlen(name);
	m.u.kfile.data = k->buf ? k->buf + k->off : (const uint8_t *)"";
	m.u.kfile.len = (uint32_t)n;
	ret = link_push(ag, &m);
	if (ret)
		return ret;
	k->off += n;
	k->sent_bytes += n;
	if (k->off == k->len) {
		k->sent_files++;
		k->cur = false;
	}
	return 0;
}

bool kformats_busy(const struct agent *ag)
{
	return ag->link.up && kf_state.state == KF_SENDING &&
	       ag->link.q.bytes < KF_QUEUE_LOW;
}

void kformats_tick(struct agent *ag)
{
	struct kformats *k = &kf_state;
	unsigned int pieces = 0;
	int ret;

	/* Bounded per round, so the loop serves its clients and the host's
	 * pings in between. */
	while (pieces++ < KF_PIECES_PER_ROUND && k->state == KF_SENDING &&
	       ag->link.up &&
	       ag->link.q.bytes < KF_QUEUE_LOW) {
		if (!k->cur) {
			if (k->next == k->nr) {
				kf_send_op(ag, k,
					   k->boot ? HVT_KF_BOOT_END
						   : HVT_KF_END);
				return;
			}
			ret = kf_read(k, k->next++);
			if (ret) {
				agent_dbg("%s left out of the formats: %s",
					  k->srcs[k->next - 1],
					  strerror(-ret));
				continue;
			}
			k->cur = true;
		}
		if (kf_piece(ag, k)) {
			/* The link is gone: the next session starts over. */
			k->state = KF_IDLE;
			kf_clear_list(k);
			return;
		}
	}
}
