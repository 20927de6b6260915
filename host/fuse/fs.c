// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the file system of hvtrace mount (libfuse3, low-level API).
 *
 *   /remotes/NAME/...     every remote, laid out like an upstream trace
 *                         remote and like a tracefs instance
 *   /instances/NAME       -> ../remotes/NAME, so libtracefs's instance
 *                         API (tracefs_instance_alloc(DIR, NAME)) finds it
 *
 * Nodes (inodes) are created on first lookup and live as long as the
 * mount: their number is bounded by the names remotes, CPUs and events
 * ever had.  Whether a node exists is decided at every lookup, getattr
 * and open from the view, so remotes and events that come and go show
 * at once (entry and attribute timeouts are zero).
 *
 * Files have no size (like tracefs): every open is direct I/O.  Text
 * files are rendered when opened and read from that copy; trace_pipe and
 * trace_pipe_raw consume the view's queues.  A read that finds nothing
 * is parked -- it holds no thread -- and answered when records arrive,
 * when the remote's writer stopped and was read to the end, when the
 * remote goes away (the end of file), when it is interrupted (EINTR) or
 * at shutdown.  O_NONBLOCK reads get EAGAIN instead, after the source
 * was asked for everything committed until then.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <hvtrace/proto.h>

#include "fuse-local.h"

enum fz_kind {
	K_NONE = 0,
	K_ROOT,
	K_REMOTES,
	K_INSTANCES,
	K_LINK,	 /* instances/NAME */
	K_RDIR,	 /* remotes/NAME */
	K_RFILE, /* remotes/NAME/<file> */
	K_PERCPU,
	K_CPUDIR,
	K_CPUFILE,
	K_EVENTS,
	K_EVFILE, /* events/{enable,header_page,header_event} */
	K_SYSDIR,
	K_SYSENABLE,
	K_EVDIR,
	K_EVENTFILE, /* events/SYS/EV/{enable,id,format} */
};

enum fz_file {
	F_NONE = 0,
	/* remotes/NAME */
	F_TRACING_ON,
	F_BUFFER_SIZE_KB,
	F_TRACE_CLOCK,
	F_TRACE,
	F_TRACE_PIPE,
	F_ERROR_LOG,
	F_DYNAMIC_EVENTS,
	F_USER_EVENTS_STATUS,
	F_SAVED_CMDLINES,
	F_SET_EVENT,
	F_AVAILABLE_EVENTS,
	/* per_cpu/cpuN */
	F_CPU_TRACE,
	F_CPU_TRACE_PIPE,
	F_CPU_RAW,
	F_CPU_STATS,
	F_CPU_BUFFER_SIZE_KB,
	/* events */
	F_EV_ENABLE,
	F_HEADER_PAGE,
	F_HEADER_EVENT,
	/* events/SYS/EV */
	F_E_ENABLE,
	F_E_ID,
	F_E_FORMAT,
};

struct file_def {
	const char *name;
	enum fz_file f;
	mode_t mode;
	bool pipe; /* consuming: no snapshot */
};

static const struct file_def rfiles[] = {
	{"tracing_on", F_TRACING_ON, 0640, false},
	{"buffer_size_kb", F_BUFFER_SIZE_KB, 0640, false},
	{"trace_clock", F_TRACE_CLOCK, 0640, false},
	{"trace", F_TRACE, 0640, false},
	{"trace_pipe", F_TRACE_PIPE, 0440, true},
	{"error_log", F_ERROR_LOG, 0640, false},
	{"set_event", F_SET_EVENT, 0640, false},
	{"available_events", F_AVAILABLE_EVENTS, 0440, false},
	{"saved_cmdlines", F_SAVED_CMDLINES, 0440, false},
	{"dynamic_events", F_DYNAMIC_EVENTS, 0640, false},
	{"user_events_status", F_USER_EVENTS_STATUS, 0440, false},
	{NULL, F_NONE, 0, false},
};

static const struct file_def cpufiles[] = {
	{"trace", F_CPU_TRACE, 0640, false},
	{"trace_pipe", F_CPU_TRACE_PIPE, 0440, true},
	{"trace_pipe_raw", F_CPU_RAW, 0440, true},
	{"stats", F_CPU_STATS, 0440, false},
	{"buffer_size_kb", F_CPU_BUFFER_SIZE_KB, 0640, false},
	{NULL, F_NONE, 0, false},
};

static const struct file_def evfiles[] = {
	{"enable", F_EV_ENABLE, 0640, false},
	{"header_page", F_HEADER_PAGE, 0440, false},
	{"header_event", F_HEADER_EVENT, 0440, false},
	{NULL, F_NONE, 0, false},
};

static const struct file_def eventfiles[] = {
	{"enable", F_E_ENABLE, 0640, false},
	{"id", F_E_ID, 0440, false},
	{"format", F_E_FORMAT, 0440, false},
	{NULL, F_NONE, 0, false},
};

struct fz_node {
	struct fz_node *hnext;
	fuse_ino_t ino;
	uint8_t kind;
	uint8_t file;
	uint32_t cpu;
	char remote[32];
	char system[64];
	char event[256];
};

/* An open file. */
struct fz_fh {
	struct fz_fh *fnext, *fprev; /* every open file, for shutdown */
	struct fz_node node;	     /* a copy: what was opened */
	const struct file_def *def;
	struct fz_remote *r; /* holds a reference, or NULL */
	int flags;
	char *buf; /* snapshot files */
	size_t len;
	char *rest; /* trace_pipe: the rest of a line */
	size_t rest_len, rest_off;
	uint8_t *raw; /* trace_pipe_raw: a partly read page */
	uint32_t raw_len, raw_off;
	struct fuse_pollhandle *ph;
	/*
	 * Reads in progress or parked.  RELEASE can arrive while a reply
	 * made from this handle is still being written (the reader wakes as
	 * soon as the kernel has the bytes), so the handle lives until the
	 * last of them is done.
	 */
	unsigned int busy;
	bool released;
};

/* A parked read. */
struct fz_waiter {
	struct fz_waiter *next;
	uint64_t id;
	fuse_req_t req;
	struct fz_fh *fh;
	size_t size;
};

#define NODE_HASH 1024

struct fz_fs {
	struct fz_node **nodes; /* by ino - 1 */
	size_t nr_nodes, cap_nodes;
	struct fz_node *hash[NODE_HASH];
	struct fz_waiter *waiters;
	uint64_t next_waiter;
	struct fz_fh *files;  /* open files */
	struct fz_fh **polls; /* open pipes with a poll handle */
	size_t nr_polls, cap_polls;
	time_t t0;
	uid_t uid;
	gid_t gid;
};

static struct fz_view *req_view(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* --- nodes (view lock held) ----------------------------------------------- */

static uint32_t node_hash(const struct fz_node *k)
{
	const unsigned char *p;
	uint32_t h = 2166136261u;

	h = (h ^ k->kind) * 16777619u;
	h = (h ^ k->file) * 16777619u;
	h = (h ^ k->cpu) * 16777619u;
	for (p = (const unsigned char *)k->remote; *p; p++)
		h = (h ^ *p) * 16777619u;
	for (p = (const unsigned char *)k->system; *p; p++)
		h = (h ^ *p) * 16777619u;
	for (p = (const unsigned char *)k->event; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % NODE_HASH;
}

static bool node_same(const struct fz_node *a, const struct fz_node *b)
{
	return a->kind == b->kind && a->file == b->file && a->cpu == b->cpu &&
	       !strcmp(a->remote, b->remote) && !strcmp(a->system, b->system) &&
	       !strcmp(a->event, b->event);
}

static struct fz_node *node_get(struct fz_fs *fs, const struct fz_node *key)
{
	uint32_t h = node_hash(key);
	struct fz_node *n;

	for (n = fs->hash[h]; n; n = n->hnext)
		if (node_same(n, key))
			return n;
	if (fs->nr_nodes == fs->cap_nodes) {
		size_t cap = fs->cap_nodes ? fs->cap_nodes * 2 : 256;
		struct fz_node **v = realloc(fs->nodes, cap * sizeof(*v));

		if (!v)
			return NULL;
		fs->nodes = v;
		fs->cap_nodes = cap;
	}
	n = malloc(sizeof(*n));
	if (!n)
		return NULL;
	*n = *key;
	n->ino = (fuse_ino_t)fs->nr_nodes + 1;
	fs->nodes[fs->nr_nodes++] = n;
	n->hnext = fs->hash[h];
	fs->hash[h] = n;
	return n;
}

static struct fz_node *node_of(struct fz_fs *fs, fuse_ino_t ino)
{
	if (ino < 1 || ino > fs->nr_nodes)
		return NULL;
	return fs->nodes[ino - 1];
}

static const struct file_def *find_def(const struct file_def *t,
				       const char *name, enum fz_file f)
{
	for (; t->name; t++)
		if (name ? !strcmp(t->name, name) : t->f == f)
			return t;
	return NULL;
}

static const struct file_def *node_def(const struct fz_node *n)
{
	switch (n->kind) {
	case K_RFILE:
		return find_def(rfiles, NULL, n->file);
	case K_CPUFILE:
		return find_def(cpufiles, NULL, n->file);
	case K_EVFILE:
		return find_def(evfiles, NULL, n->file);
	case K_EVENTFILE:
		return find_def(eventfiles, NULL, n->file);
	case K_SYSENABLE:
		return find_def(evfiles, "enable", F_NONE);
	default:
		return NULL;
	}
}

/* Does the node exist now?  Returns its remote (no reference) or NULL
 * for the nodes above remotes; *ok says. */
static struct fz_remote *node_check(struct fz_view *v, const struct fz_node *n,
				    bool *ok)
{
	struct fz_remote *r = NULL;

	*ok = false;
	switch (n->kind) {
	case K_ROOT:
	case K_REMOTES:
	case K_INSTANCES:
		*ok = true;
		return NULL;
	default:
		break;
	}
	r = fz_remote_find(v, n->remote);
	if (!r)
		return NULL;
	switch (n->kind) {
	case K_LINK:
	case K_RDIR:
	case K_EVENTS:
	case K_EVFILE:
		*ok = true;
		break;
	case K_RFILE:
		*ok = (n->file != F_DYNAMIC_EVENTS &&
		       n->file != F_USER_EVENTS_STATUS) ||
		      r->user_events;
		break;
	case K_PERCPU:
		*ok = true;
		break;
	case K_CPUDIR:
	case K_CPUFILE:
		*ok = r->loaded && n->cpu < r->ncpu;
		break;
	case K_SYSDIR:
	case K_SYSENABLE:
		*ok = fz_system_exists(r, n->system);
		break;
	case K_EVDIR:
	case K_EVENTFILE:
		*ok = fz_event_find(r, n->system, n->event) != NULL;
		break;
	default:
		break;
	}
	return r;
}

static void node_stat(struct fz_fs *fs, const struct fz_node *n,
		      struct stat *st)
{
	const struct file_def *d = node_def(n);

	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atime = st->st_mtime = st->st_ctime = fs->t0;
	st->st_blksize = 4096;
	if (n->kind == K_LINK) {
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = (off_t)strlen(n->remote) + 11;
	} else if (d) {
		st->st_mode = S_IFREG | d->mode;
		st->st_nlink = 1;
	} else {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	}
}

/* --- lookup, getattr, readlink, readdir ------------------------------------
 */

static bool parse_cpu(const char *name, uint32_t *cpu)
{
	char *end;
	unsigned long v;

	if (strncmp(name, "cpu", 3) || name[3] < '0' || name[3] > '9')
		return false;
	v = strtoul(name + 3, &end, 10);
	if (*end || v >= 4096 || (name[3] == '0' && name[4]))
		return false;
	*cpu = (uint32_t)v;
	return true;
}

/* The child @name of @p, or K_NONE (view lock held). */
static bool child_key(struct fz_view *v, const struct fz_node *p,
		      const char *name, struct fz_node *k)
{
	const struct file_def *d;

	memset(k, 0, sizeof(*k));
	snprintf(k->remote, sizeof(k->remote), "%s", p->remote);
	snprintf(k->system, sizeof(k->system), "%s", p->system);
	k->cpu = p->cpu;
	switch (p->kind) {
	case K_ROOT:
		if (!strcmp(name, "remotes"))
			k->kind = K_REMOTES;
		else if (!strcmp(name, "instances"))
			k->kind = K_INSTANCES;
		break;
	case K_REMOTES:
	case K_INSTANCES:
		if (strlen(name) < sizeof(k->remote) &&
		    fz_remote_find(v, name)) {
			k->kind = p->kind == K_REMOTES ? K_RDIR : K_LINK;
			snprintf(k->remote, sizeof(k->remote), "%s", name);
		}
		break;
	case K_RDIR:
		if (!strcmp(name, "per_cpu")) {
			k->kind = K_PERCPU;
		} else if (!strcmp(name, "events")) {
			k->kind = K_EVENTS;
		} else if ((d = find_def(rfiles, name, F_NONE))) {
			k->kind = K_RFILE;
			k->file = d->f;
		}
		break;
	case K_PERCPU:
		if (parse_cpu(name, &k->cpu))
			k->kind = K_CPUDIR;
		break;
	case K_CPUDIR:
		if ((d = find_def(cpufiles, name, F_NONE))) {
			k->kind = K_CPUFILE;
			k->file = d->f;
		}
		break;
	case K_EVENTS:
		if ((d = find_def(evfiles, name, F_NONE))) {
			k->kind = K_EVFILE;
			k->file = d->f;
		} else if (strlen(name) < sizeof(k->system)) {
			k->kind = K_SYSDIR;
			snprintf(k->system, sizeof(k->system), "%s", name);
		}
		break;
	case K_SYSDIR:
		if (!strcmp(name, "enable")) {
			k->kind = K_SYSENABLE;
			k->file = F_EV_ENABLE;
		} else if (strlen(name) < sizeof(k->event)) {
			k->kind = K_EVDIR;
			snprintf(k->event, sizeof(k->event), "%s", name);
		}
		break;
	case K_EVDIR:
		snprintf(k->event, sizeof(k->event), "%s", p->event);
		if ((d = find_def(eventfiles, name, F_NONE))) {
			k->kind = K_EVENTFILE;
			k->file = d->f;
		}
		break;
	default:
		break;
	}
	return k->kind != K_NONE;
}

static void fz_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fz_view *v = req_view(req);
	struct fz_fs *fs = v->fs;
	struct fuse_entry_param e;
	struct fz_node key, *p, *n;
	bool ok = false;

	pthread_mutex_lock(&v->lock);
	p = node_of(fs, parent);
	if (p)
		node_check(v, p, &ok);
	if (!ok || !child_key(v, p, name, &key)) {
		pthread_mutex_unlock(&v->lock);
		fuse_reply_err(req, ENOENT);
		return;
	}
	node_check(v, &key, &ok);
	n = ok ? node_get(fs, &key) : NULL;
	if (!n) {
		pthread_mutex_unlock(&v->lock);
		fuse_reply_err(req, ok ? ENOMEM : ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	node_stat(fs, n, &e.attr);
	pthread_mutex_unlock(&v->lock);
	fuse_reply_entry(req, &e);
}

static void fz_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_node *n;
	struct stat st;
	bool ok = false;

	pthread_mutex_lock(&v->lock);
	n = node_of(v->fs, ino);
	if (n)
		node_check(v, n, &ok);
	/* An open file keeps answering, even for a remote that went. */
	if (n && (ok || fi))
		node_stat(v->fs, n, &st);
	pthread_mutex_unlock(&v->lock);
	if (!n || (!ok && !fi))
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, 0);
}

static void fz_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fz_view *v = req_view(req);
	struct fz_node *n;
	char link[64];
	bool ok = false;

	pthread_mutex_lock(&v->lock);
	n = node_of(v->fs, ino);
	if (n && n->kind == K_LINK)
		node_check(v, n, &ok);
	if (ok)
		snprintf(link, sizeof(link), "../remotes/%s", n->remote);
	pthread_mutex_unlock(&v->lock);
	if (!ok)
		fuse_reply_err(req, n ? EINVAL : ENOENT);
	else
		fuse_reply_readlink(req, link);
}

struct dirbuf {
	char *p;
	size_t len;
};

static void dir_add(fuse_req_t req, struct fz_fs *fs, struct dirbuf *b,
		    const struct fz_node *p, const char *name,
		    struct fz_view *v)
{
	struct fz_node key, *n = NULL;
	struct stat st;
	size_t need;
	char *np;
	bool ok = false;

	memset(&st, 0, sizeof(st));
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		st.st_ino = p->ino;
		st.st_mode = S_IFDIR;
	} else {
		if (!child_key(v, p, name, &key))
			return;
		node_check(v, &key, &ok);
		if (!ok || !(n = node_get(fs, &key)))
			return;
		node_stat(fs, n, &st);
	}
	need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
	np = realloc(b->p, b->len + need);
	if (!np)
		return;
	b->p = np;
	fuse_add_direntry(req, b->p + b->len, need, name, &st,
			  (off_t)(b->len + need));
	b->len += need;
}

static void fz_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_fs *fs = v->fs;
	struct dirbuf *b;
	struct fz_node *n;
	struct fz_remote *r;
	const struct file_def *d;
	unsigned int i;
	bool ok = false;

	b = calloc(1, sizeof(*b));
	if (!b) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&v->lock);
	n = node_of(fs, ino);
	r = n ? node_check(v, n, &ok) : NULL;
	if (!ok || node_def(n) || n->kind == K_LINK) {
		pthread_mutex_unlock(&v->lock);
		free(b);
		fuse_reply_err(req, !ok ? ENOENT : ENOTDIR);
		return;
	}
	dir_add(req, fs, b, n, ".", v);
	dir_add(req, fs, b, n, "..", v);
	switch (n->kind) {
	case K_ROOT:
		dir_add(req, fs, b, n, "remotes", v);
		dir_add(req, fs, b, n, "instances", v);
		break;
	case K_REMOTES:
	case K_INSTANCES:
		for (r = v->remotes; r; r = r->next)
			dir_add(req, fs, b, n, r->name, v);
		break;
	case K_RDIR:
		for (d = rfiles; d->name; d++)
			dir_add(req, fs, b, n, d->name, v);
		dir_add(req, fs, b, n, "per_cpu", v);
		dir_add(req, fs, b, n, "events", v);
		break;
	case K_PERCPU:
		for (i = 0; r && r->loaded && i < r->ncpu; i++) {
			char name[16];

			snprintf(name, sizeof(name), "cpu%u", i);
			dir_add(req, fs, b, n, name, v);
		}
		break;
	case K_CPUDIR:
		for (d = cpufiles; d->name; d++)
			dir_add(req, fs, b, n, d->name, v);
		break;
	case K_EVENTS:
		for (d = evfiles; d->name; d++)
			dir_add(req, fs, b, n, d->name, v);
		for (i = 0; r && i < r->nev; i++) {
			unsigned int j;

			for (j = 0; j < i; j++)
				if (!strcmp(r->ev[j].system, r->ev[i].system))
					break;
			if (j == i)
				dir_add(req, fs, b, n, r->ev[i].system, v);
		}
		break;
	case K_SYSDIR:
		dir_add(req, fs, b, n, "enable", v);
		for (i = 0; r && i < r->nev; i++)
			if (!strcmp(r->ev[i].system, n->system))
				dir_add(req, fs, b, n, r->ev[i].name, v);
		break;
	case K_EVDIR:
		for (d = eventfiles; d->name; d++)
			dir_add(req, fs, b, n, d->name, v);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&v->lock);
	fi->fh = (uint64_t)(uintptr_t)b;
	fuse_reply_open(req, fi);
}

static void fz_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dirbuf *b = (struct dirbuf *)(uintptr_t)fi->fh;

	if (off < 0 || (size_t)off >= b->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	/* Whole entries only: fuse_add_direntry() set each entry's offset
	 * to the next one, so a cut at @size would split an entry; reply
	 * with the entries that fit. */
	{
		size_t end = (size_t)off, next;

		while (end < b->len) {
			/* struct fuse_dirent: ino, off, namelen, type. */
			uint64_t eoff;

			memcpy(&eoff, b->p + end + 8, 8);
			next = (size_t)eoff;
			if (next <= end || next - (size_t)off > size)
				break;
			end = next;
		}
		/* Reply from a copy: the directory may be released (by
		 * another thread) as soon as the kernel has the bytes. */
		{
			size_t n = end - (size_t)off;
			char *copy = malloc(n ? n : 1);

			if (!copy) {
				fuse_reply_err(req, ENOMEM);
				return;
			}
			memcpy(copy, b->p + off, n);
			fuse_reply_buf(req, copy, n);
			free(copy);
		}
	}
}

static void fz_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct dirbuf *b = (struct dirbuf *)(uintptr_t)fi->fh;

	free(b->p);
	free(b);
	fuse_reply_err(req, 0);
}

/* --- helpers for file contents ----------------------------------------------
 */

static char *xstrdup_len(const char *s, size_t *len)
{
	char *p = strdup(s ? s : "");

	if (p && len)
		*len = strlen(p);
	return p;
}

static char *xprintf(size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static char *xprintf(size_t *len, const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return p;
}

/* "0", "1" or "X" over the events of @system (NULL: all). */
static char enable_state(const struct fz_remote *r, const char *system)
{
	unsigned int i, on = 0, off = 0;

	for (i = 0; i < r->nev; i++) {
		if (system && strcmp(r->ev[i].system, system))
			continue;
		if (r->ev[i].enabled)
			on++;
		else
			off++;
	}
	return on && off ? 'X' : on ? '1' : '0';
}

/*
 * The kernel's kstrtoul(…, 10) on a write: decimal digits, an optional
 * leading '+', an optional trailing newline; nothing else.
 */
static int parse_ulong(const char *s, size_t len, unsigned long *out)
{
	unsigned long v = 0;
	size_t i = 0;

	if (len && s[len - 1] == '\n')
		len--;
	if (i < len && s[i] == '+')
		i++;
	if (i == len)
		return -EINVAL;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (v > (~0UL - 9) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Render a snapshot file (view lock NOT held; takes it). */
static int fh_render(struct fz_view *v, struct fz_fh *fh)
{
	struct fz_remote *r = fh->r;
	const struct fz_node *n = &fh->node;
	char *text = NULL;
	uint32_t kind = 0;
	int ret = 0;

	/* What needs the source first, without the lock. */
	switch (n->file) {
	case F_TRACE:
	case F_CPU_TRACE:
	case F_CPU_STATS:
		if (r->ops->drain)
			r->ops->drain(r);
		break;
	case F_EV_ENABLE:
	case F_E_ENABLE:
	case F_SET_EVENT:
	case F_AVAILABLE_EVENTS:
		/* Another tool may have changed them. */
		if (r->ops->refresh)
			r->ops->refresh(r);
		break;
	case F_DYNAMIC_EVENTS:
		kind = HVT_TEXT_DYNAMIC_EVENTS;
		break;
	case F_USER_EVENTS_STATUS:
		kind = HVT_TEXT_STATUS;
		break;
	case F_SAVED_CMDLINES:
		kind = HVT_TEXT_CMDLINES;
		break;
	default:
		break;
	}
	if (kind) {
		ret = r->ops->text(r, kind, &text);
		if (ret)
			return ret;
	}
	pthread_mutex_lock(&v->lock);
	switch (n->file) {
	case F_TRACING_ON:
		fh->buf = xprintf(&fh->len, "%d\n", r->tracing_on ? 1 : 0);
		break;
	case F_BUFFER_SIZE_KB:
	case F_CPU_BUFFER_SIZE_KB:
		fh->buf =
			xprintf(&fh->len, "%llu (%s)\n",
				(unsigned long long)((uint64_t)r->nr_subbufs *
						     r->subbuf_size / 1024),
				r->loaded && !r->gone ? "loaded" : "unloaded");
		break;
	case F_TRACE_CLOCK: {
		char b[128];

		fz_clock_text(r, b, sizeof(b));
		fh->buf = xstrdup_len(b, &fh->len);
		break;
	}
	case F_TRACE:
		fh->buf = fz_trace_text(r, -1, &fh->len);
		break;
	case F_CPU_TRACE:
		fh->buf = fz_trace_text(r, (int)n->cpu, &fh->len);
		break;
	case F_CPU_STATS:
		fh->buf = fz_stats_text(r, n->cpu, &fh->len);
		break;
	case F_ERROR_LOG:
		fh->buf = xstrdup_len(r->errlog, &fh->len);
		break;
	case F_SET_EVENT:
	case F_AVAILABLE_EVENTS: {
		size_t cap = 1, i;

		for (i = 0; i < r->nev; i++)
			cap += strlen(r->ev[i].system) + strlen(r->ev[i].name) +
			       2;
		fh->buf = malloc(cap);
		fh->len = 0;
		for (i = 0; fh->buf && i < r->nev; i++)
			if (r->ev[i].enabled || n->file == F_AVAILABLE_EVENTS)
				fh->len += (size_t)sprintf(
					fh->buf + fh->len, "%s:%s\n",
					r->ev[i].system, r->ev[i].name);
		if (fh->buf)
			fh->buf[fh->len] = '\0';
		break;
	}
	case F_DYNAMIC_EVENTS:
	case F_USER_EVENTS_STATUS:
	case F_SAVED_CMDLINES:
		fh->buf = text;
		fh->len = text ? strlen(text) : 0;
		text = NULL;
		break;
	case F_EV_ENABLE:
		fh->buf = xprintf(&fh->len, "%c\n",
				  enable_state(r, n->kind == K_SYSENABLE
							  ? n->system
							  : NULL));
		break;
	case F_HEADER_PAGE:
		if (!r->header_page) {
			char b[1024];

			if (hvtrace_header_page_text(
				    r->subbuf_size ? r->subbuf_size : 4096, b,
				    sizeof(b)) > 0)
				r->header_page = strdup(b);
		}
		fh->buf = xstrdup_len(r->header_page, &fh->len);
		break;
	case F_HEADER_EVENT:
		if (!r->header_event) {
			char b[1024];

			if (hvtrace_header_event_text(b, sizeof(b)) > 0)
				r->header_event = strdup(b);
		}
		fh->buf = xstrdup_len(r->header_event, &fh->len);
		break;
	case F_E_ENABLE:
	case F_E_ID:
	case F_E_FORMAT: {
		const struct fz_event *e =
			fz_event_find(r, n->system, n->event);

		if (!e)
			ret = -ENOENT;
		else if (n->file == F_E_ENABLE)
			fh->buf = xprintf(&fh->len, "%d\n", e->enabled ? 1 : 0);
		else if (n->file == F_E_ID)
			fh->buf = xprintf(&fh->len, "%u\n", e->id);
		else
			fh->buf = xstrdup_len(e->format, &fh->len);
		break;
	}
	default:
		break;
	}
	pthread_mutex_unlock(&v->lock);
	free(text);
	if (!ret && !fh->buf)
		ret = -ENOMEM;
	return ret;
}

/* Truncation: O_TRUNC at open or a truncate to 0 (view lock NOT held). */
static int fh_truncate(struct fz_view *v, struct fz_remote *r,
		       const struct fz_node *n)
{
	char msg[512] = "";
	int ret = 0;

	switch (n->file) {
	case F_TRACE:
	case F_CPU_TRACE:
		/* Everything committed until now goes too, as a reset of
		 * the ring would. */
		if (r->ops->drain)
			r->ops->drain(r);
		pthread_mutex_lock(&v->lock);
		fz_reset(r, n->file == F_TRACE ? -1 : (int)n->cpu);
		pthread_mutex_unlock(&v->lock);
		break;
	case F_ERROR_LOG:
		pthread_mutex_lock(&v->lock);
		free(r->errlog);
		r->errlog = NULL;
		r->errlog_len = 0;
		r->errlog_n = 0;
		pthread_mutex_unlock(&v->lock);
		break;
	case F_DYNAMIC_EVENTS:
		ret = r->ops->dyn(r, NULL, msg, sizeof(msg));
		if (ret) {
			pthread_mutex_lock(&v->lock);
			fz_errlog_add(r, "dynamic_events",
				      msg[0] ? msg : strerror(-ret),
				      "(truncate)", 0);
			pthread_mutex_unlock(&v->lock);
		}
		break;
	default:
		break; /* tracefs ignores it elsewhere */
	}
	return ret;
}

/* --- open, read, write, poll ------------------------------------------------
 */

static void fz_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_node *n;
	struct fz_remote *r;
	struct fz_fh *fh;
	bool ok = false;
	int acc = fi->flags & O_ACCMODE, ret = 0;

	fh = calloc(1, sizeof(*fh));
	if (!fh) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&v->lock);
	n = node_of(v->fs, ino);
	r = n ? node_check(v, n, &ok) : NULL;
	if (ok && r && node_def(n)) {
		fh->node = *n;
		fh->def = node_def(n);
		fh->r = r;
		fh->flags = fi->flags;
		fz_remote_get(r);
	}
	pthread_mutex_unlock(&v->lock);
	if (!fh->r) {
		free(fh);
		fuse_reply_err(req, !ok ? ENOENT : EISDIR);
		return;
	}
	if ((fi->flags & O_TRUNC) && acc != O_RDONLY)
		ret = fh_truncate(v, fh->r, &fh->node);
	if (!ret && acc != O_WRONLY && !fh->def->pipe)
		ret = fh_render(v, fh);
	if (ret) {
		pthread_mutex_lock(&v->lock);
		fz_remote_put(fh->r);
		pthread_mutex_unlock(&v->lock);
		free(fh->buf);
		free(fh);
		fuse_reply_err(req, -ret);
		return;
	}
	pthread_mutex_lock(&v->lock);
	fh->fnext = ((struct fz_fs *)v->fs)->files;
	if (fh->fnext)
		fh->fnext->fprev = fh;
	((struct fz_fs *)v->fs)->files = fh;
	pthread_mutex_unlock(&v->lock);
	fi->fh = (uint64_t)(uintptr_t)fh;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	/* Nothing to flush: a close never waits for us (nor fails when
	 * the mount went away meanwhile). */
	fi->noflush = 1;
	if (fh->def->pipe)
		fi->nonseekable = 1;
	fuse_reply_open(req, fi);
}

static void poll_forget(struct fz_fs *fs, struct fz_fh *fh)
{
	size_t i;

	for (i = 0; i < fs->nr_polls; i++)
		if (fs->polls[i] == fh) {
			fs->polls[i] = fs->polls[--fs->nr_polls];
			break;
		}
}

/* Free @fh once released and idle (view lock held). */
static void fh_put(struct fz_fs *fs, struct fz_fh *fh)
{
	if (fh->busy || !fh->released)
		return;
	if (fh->fprev)
		fh->fprev->fnext = fh->fnext;
	else
		fs->files = fh->fnext;
	if (fh->fnext)
		fh->fnext->fprev = fh->fprev;
	fz_remote_put(fh->r);
	free(fh->buf);
	free(fh->rest);
	free(fh->raw);
	free(fh);
}

/* Lock the view and keep @fh alive until fh_drop(). */
static void fh_hold(struct fz_view *v, struct fz_fh *fh)
{
	pthread_mutex_lock(&v->lock);
	fh->busy++;
}

static void fh_drop(struct fz_view *v, struct fz_fh *fh)
{
	pthread_mutex_lock(&v->lock);
	fh->busy--;
	fh_put(v->fs, fh);
	pthread_mutex_unlock(&v->lock);
}

static void fz_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_fs *fs = v->fs;
	struct fz_fh *fh = (struct fz_fh *)(uintptr_t)fi->fh;
	struct fz_waiter **pp, *w;

	pthread_mutex_lock(&v->lock);
	poll_forget(fs, fh);
	if (fh->ph)
		fuse_pollhandle_destroy(fh->ph);
	fh->ph = NULL;
	/* A read still parked on it (the kernel should not let that
	 * happen) gets the end of file. */
	for (pp = &fs->waiters; (w = *pp);) {
		if (w->fh != fh) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		fuse_reply_buf(w->req, NULL, 0);
		free(w);
	}
	fh->released = true;
	fh_put(fs, fh);
	pthread_mutex_unlock(&v->lock);
	fuse_reply_err(req, 0);
}

/*
 * Produce what a consuming read of @fh can get now into @out (view lock
 * held).  Returns the byte count, 0 with *eof when the data has ended,
 * or 0 when the reader should wait.
 */
static size_t fh_produce(struct fz_fh *fh, char *out, size_t size, bool *eof)
{
	struct fz_remote *r = fh->r;
	size_t n = 0;

	*eof = false;
	if (fh->node.file == F_CPU_RAW) {
		if (fh->raw_off < fh->raw_len) {
			n = fh->raw_len - fh->raw_off;
		} else if (r->subbuf_size) {
			uint8_t *p = fh->raw;

			if (!p)
				p = malloc(HVT_ABI_MAX_SUBBUF_SIZE);
			fh->raw = p;
			fh->raw_off = 0;
			fh->raw_len = p ? fz_take_raw(r, fh->node.cpu, p) : 0;
			n = fh->raw_len;
		}
		if (n > size)
			n = size; /* the rest of the page comes next */
		if (n) {
			memcpy(out, fh->raw + fh->raw_off, n);
			fh->raw_off += (uint32_t)n;
		}
	} else {
		int cpu = fh->node.file == F_CPU_TRACE_PIPE ? (int)fh->node.cpu
							    : -1;

		if (fh->rest_off < fh->rest_len) {
			n = fh->rest_len - fh->rest_off;
			if (n > size)
				n = size;
			memcpy(out, fh->rest + fh->rest_off, n);
			fh->rest_off += n;
			return n;
		}
		free(fh->rest);
		fh->rest = NULL;
		fh->rest_len = fh->rest_off = 0;
		n = fz_take_text(r, cpu, out, size, &fh->rest, &fh->rest_len);
	}
	/* The end: the remote went, or its writer stopped and everything
	 * it committed was delivered (sources drain before they say so). */
	if (!n && (r->gone || r->stopped))
		*eof = true;
	return n;
}

static void fz_intr(fuse_req_t req, void *data)
{
	struct fz_view *v = req_view(req);
	struct fz_fs *fs = v->fs;
	uint64_t id = (uint64_t)(uintptr_t)data;
	struct fz_waiter **pp, *w;

	pthread_mutex_lock(&v->lock);
	for (pp = &fs->waiters; (w = *pp); pp = &w->next)
		if (w->id == id) {
			*pp = w->next;
			fuse_reply_err(w->req, EINTR);
			free(w);
			break;
		}
	pthread_mutex_unlock(&v->lock);
}

static void fz_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_fh *fh = (struct fz_fh *)(uintptr_t)fi->fh;
	struct fz_waiter *w;
	bool eof, drained = false;
	uint64_t id;
	char *out;
	size_t n;

	if (!fh->def->pipe) {
		fh_hold(v, fh);
		pthread_mutex_unlock(&v->lock);
		if (off < 0 || (size_t)off >= fh->len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, fh->buf + off,
				       fh->len - (size_t)off < size
					       ? fh->len - (size_t)off
					       : size);
		fh_drop(v, fh);
		return;
	}
	out = malloc(size ? size : 1);
	if (!out) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (;;) {
		pthread_mutex_lock(&v->lock);
		n = fh_produce(fh, out, size, &eof);
		/* A stopped writer's end is believed only after a drain:
		 * its last records may still be on their way. */
		if (n || (eof && (drained || fh->r->gone)) || v->shutdown) {
			pthread_mutex_unlock(&v->lock);
			fuse_reply_buf(req, out, n);
			free(out);
			return;
		}
		pthread_mutex_unlock(&v->lock);
		if (drained)
			break;
		/* Nothing queued: ask the source for everything committed
		 * until now, once, then look again. */
		if (fh->r->ops->drain)
			fh->r->ops->drain(fh->r);
		drained = true;
	}
	/* O_NONBLOCK as the file has it now (fcntl(F_SETFL) included). */
	if (fi->flags & O_NONBLOCK) {
		free(out);
		fuse_reply_err(req, EAGAIN);
		return;
	}
	/* Park the read: it holds no thread.  The interrupt hook goes in
	 * first, while nobody else can answer the request yet. */
	w = calloc(1, sizeof(*w));
	if (!w) {
		free(out);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&v->lock);
	id = ++((struct fz_fs *)v->fs)->next_waiter;
	pthread_mutex_unlock(&v->lock);
	w->id = id;
	w->req = req;
	w->fh = fh;
	w->size = size;
	fuse_req_interrupt_func(req, fz_intr, (void *)(uintptr_t)id);
	pthread_mutex_lock(&v->lock);
	n = fh_produce(fh, out, size, &eof);
	if (n || eof || v->shutdown) {
		pthread_mutex_unlock(&v->lock);
		fuse_reply_buf(req, out, n);
		free(out);
		free(w);
		return;
	}
	if (fuse_req_interrupted(req)) {
		pthread_mutex_unlock(&v->lock);
		fuse_reply_err(req, EINTR);
		free(out);
		free(w);
		return;
	}
	w->next = ((struct fz_fs *)v->fs)->waiters;
	((struct fz_fs *)v->fs)->waiters = w;
	pthread_mutex_unlock(&v->lock);
	free(out);
}

/* Data or state changed for @r: answer its parked reads, poll (lock held). */
static void fz_wake(struct fz_view *v, struct fz_remote *r)
{
	struct fz_fs *fs = v->fs;
	struct fz_waiter **pp, *w;
	size_t i;

	for (pp = &fs->waiters; (w = *pp);) {
		char *out;
		size_t n;
		bool eof;

		if (w->fh->r != r) {
			pp = &w->next;
			continue;
		}
		out = malloc(w->size ? w->size : 1);
		if (!out)
			return;
		n = fh_produce(w->fh, out, w->size, &eof);
		if (n || eof) {
			*pp = w->next;
			fuse_reply_buf(w->req, out, n);
			free(w);
		} else {
			pp = &w->next;
		}
		free(out);
	}
	for (i = 0; i < fs->nr_polls; i++) {
		struct fz_fh *fh = fs->polls[i];
		int cpu;

		if (fh->r != r || !fh->ph)
			continue;
		cpu = fh->node.file == F_TRACE_PIPE ? -1 : (int)fh->node.cpu;
		if (fz_has_data(r, cpu) || r->gone || r->stopped) {
			fuse_lowlevel_notify_poll(fh->ph);
			fuse_pollhandle_destroy(fh->ph);
			fh->ph = NULL;
		}
	}
}

void fz_fs_release_waiters(struct fz_view *v)
{
	struct fz_fs *fs = v->fs;
	struct fz_waiter *w;

	if (!fs)
		return;
	while ((w = fs->waiters)) {
		fs->waiters = w->next;
		fuse_reply_buf(w->req, NULL, 0);
		free(w);
	}
}

static void fz_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct fuse_pollhandle *ph)
{
	struct fz_view *v = req_view(req);
	struct fz_fs *fs = v->fs;
	struct fz_fh *fh = (struct fz_fh *)(uintptr_t)fi->fh;
	unsigned int revents = 0;

	pthread_mutex_lock(&v->lock);
	if (!fh->def->pipe) {
		revents = POLLIN | POLLRDNORM;
	} else {
		int cpu =
			fh->node.file == F_TRACE_PIPE ? -1 : (int)fh->node.cpu;

		if (fz_has_data(fh->r, cpu) || fh->rest_off < fh->rest_len ||
		    fh->raw_off < fh->raw_len || fh->r->gone || fh->r->stopped)
			revents = POLLIN | POLLRDNORM;
	}
	if (ph) {
		if (fh->ph)
			fuse_pollhandle_destroy(fh->ph);
		fh->ph = revents ? NULL : ph;
		if (revents) {
			fuse_pollhandle_destroy(ph);
		} else {
			size_t i;

			for (i = 0; i < fs->nr_polls && fs->polls[i] != fh; i++)
				;
			if (i == fs->nr_polls) {
				if (fs->nr_polls == fs->cap_polls) {
					size_t cap = fs->cap_polls
							     ? fs->cap_polls * 2
							     : 16;
					struct fz_fh **p = realloc(
						fs->polls, cap * sizeof(*p));

					if (p) {
						fs->polls = p;
						fs->cap_polls = cap;
					}
				}
				if (fs->nr_polls < fs->cap_polls)
					fs->polls[fs->nr_polls++] = fh;
			}
		}
	}
	pthread_mutex_unlock(&v->lock);
	fuse_reply_poll(req, revents);
}

/* Where a failed write's command starts to be wrong (for the caret). */
static unsigned int err_pos(const char *cmd, const char *msg)
{
	const char *q = strchr(msg, '"'), *e;
	char word[256];
	const char *at;

	if (!q || !(e = strchr(q + 1, '"')) ||
	    (size_t)(e - q - 1) >= sizeof(word) || e == q + 1)
		return 0;
	memcpy(word, q + 1, (size_t)(e - q - 1));
	word[e - q - 1] = '\0';
	at = strstr(cmd, word);
	return at ? (unsigned int)(at - cmd) : 0;
}

static int write_enable(struct fz_view *v, struct fz_fh *fh, const char *buf,
			size_t size, char *msg, size_t msgsize)
{
	const struct fz_node *n = &fh->node;
	const struct fz_event *e = NULL;
	struct fz_event copy;
	unsigned long val;
	int ret;

	ret = parse_ulong(buf, size, &val);
	if (ret || val > 1) {
		snprintf(msg, msgsize, "'%.*s' is not 0 or 1",
			 (int)strcspn(buf, "\n"), buf);
		return -EINVAL;
	}
	if (n->kind == K_EVENTFILE) {
		pthread_mutex_lock(&v->lock);
		e = fz_event_find(fh->r, n->system, n->event);
		if (e)
			copy = *e;
		pthread_mutex_unlock(&v->lock);
		if (!e) {
			snprintf(msg, msgsize, "the event %s:%s is gone",
				 n->system, n->event);
			return -ENOENT;
		}
		return fh->r->ops->enable(fh->r, &copy, NULL, val, msg,
					  msgsize);
	}
	return fh->r->ops->enable(fh->r, NULL,
				  n->kind == K_SYSENABLE ? n->system : NULL,
				  val, msg, msgsize);
}

/* set_event lines: "SYSTEM:EVENT", "EVENT", "SYSTEM:*", "!" disables. */
static int write_set_event(struct fz_view *v, struct fz_fh *fh, char *buf,
			   char *msg, size_t msgsize, const char **bad)
{
	char *line, *save = NULL;
	int ret = 0;

	for (line = strtok_r(buf, "\n", &save); !ret && line;
	     line = strtok_r(NULL, "\n", &save)) {
		char sys[64] = "", name[256] = "", *p = line, *colon;
		struct fz_event copy;
		const struct fz_event *e = NULL;
		bool on = true, any = false;
		unsigned int i;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			continue;
		if (*p == '!') {
			on = false;
			p++;
		}
		*bad = line;
		colon = strchr(p, ':');
		if (colon) {
			snprintf(sys, sizeof(sys), "%.*s", (int)(colon - p), p);
			snprintf(name, sizeof(name), "%s", colon + 1);
		} else {
			snprintf(name, sizeof(name), "%s", p);
		}
		pthread_mutex_lock(&v->lock);
		for (i = 0; i < fh->r->nev; i++) {
			const struct fz_event *k = &fh->r->ev[i];

			if ((sys[0] && strcmp(sys, k->system)) ||
			    (strcmp(name, "*") && strcmp(name, k->name)))
				continue;
			any = true;
			if (!e) {
				copy = *k;
				e = &copy;
			}
		}
		pthread_mutex_unlock(&v->lock);
		if (!any) {
			snprintf(msg, msgsize, "no event '%s' in '%s'", p,
				 fh->r->name);
			return -EINVAL;
		}
		if (!strcmp(name, "*"))
			ret = fh->r->ops->enable(fh->r, NULL,
						 sys[0] ? sys : NULL, on, msg,
						 msgsize);
		else
			ret = fh->r->ops->enable(fh->r, e, NULL, on, msg,
						 msgsize);
	}
	return ret;
}

static int write_dyn(struct fz_view *v, struct fz_fh *fh, char *buf, char *msg,
		     size_t msgsize, const char **bad)
{
	char *line, *save = NULL;
	int ret = 0;

	/* Line by line, stopping at the first failure, as the kernel. */
	for (line = strtok_r(buf, "\n", &save); !ret && line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *hash;

		hash = strchr(p, '#');
		if (hash)
			*hash = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			continue;
		*bad = p;
		ret = fh->r->ops->dyn(fh->r, p, msg, msgsize);
	}
	return ret;
}

static void fz_write(fuse_req_t req, fuse_ino_t ino, const char *data,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_fh *fh = (struct fz_fh *)(uintptr_t)fi->fh;
	const char *loc = fh->def->name, *bad = NULL;
	char msg[512] = "", *buf;
	unsigned long val;
	int ret = 0;

	if (size > 65536) {
		fuse_reply_err(req, E2BIG);
		return;
	}
	buf = malloc(size + 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (memchr(buf, '\0', size)) {
		ret = -EINVAL;
		snprintf(msg, sizeof(msg), "the text holds a NUL byte");
		goto out;
	}
	switch (fh->node.file) {
	case F_TRACING_ON:
		ret = parse_ulong(buf, size, &val);
		if (ret)
			snprintf(msg, sizeof(msg), "'%.*s' is not a number",
				 (int)strcspn(buf, "\n"), buf);
		else
			ret = fh->r->ops->tracing(fh->r, val != 0, msg,
						  sizeof(msg));
		break;
	case F_BUFFER_SIZE_KB:
	case F_CPU_BUFFER_SIZE_KB:
		ret = parse_ulong(buf, size, &val);
		if (ret || !val) {
			ret = -EINVAL;
			snprintf(msg, sizeof(msg),
				 "'%.*s' is not a size in "
				 "KiB",
				 (int)strcspn(buf, "\n"), buf);
		} else {
			/* The writer sized its ring; the view cannot. */
			ret = -EBUSY;
			snprintf(msg, sizeof(msg),
				 "the buffer is loaded: its "
				 "writer chose its size");
		}
		break;
	case F_TRACE_CLOCK:
		pthread_mutex_lock(&v->lock);
		ret = fz_clock_parse(fh->r, buf);
		if (ret >= 0) {
			if (ret != fh->r->clock) {
				/* Like tracefs: a new clock, a new buffer. */
				fh->r->clock = ret;
				fz_reset(fh->r, -1);
			}
			ret = 0;
		} else {
			char b[128];

			fz_clock_text(fh->r, b, sizeof(b));
			b[strcspn(b, "\n")] = '\0';
			snprintf(msg, sizeof(msg),
				 "unknown clock '%.*s' "
				 "(there are: %s)",
				 (int)strcspn(buf, "\n"), buf, b);
		}
		pthread_mutex_unlock(&v->lock);
		break;
	case F_TRACE:
	case F_CPU_TRACE:
	case F_ERROR_LOG:
		break; /* what is written is ignored, as in tracefs */
	case F_EV_ENABLE:
	case F_E_ENABLE:
		ret = write_enable(v, fh, buf, size, msg, sizeof(msg));
		break;
	case F_SET_EVENT:
		ret = write_set_event(v, fh, buf, msg, sizeof(msg), &bad);
		break;
	case F_DYNAMIC_EVENTS:
		loc = "user_events";
		ret = write_dyn(v, fh, buf, msg, sizeof(msg), &bad);
		break;
	default:
		ret = -EINVAL;
		snprintf(msg, sizeof(msg), "%s cannot be written",
			 fh->def->name);
		break;
	}
out:
	if (ret) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "%s", bad ? bad : buf);
		cmd[strcspn(cmd, "\n")] = '\0';
		pthread_mutex_lock(&v->lock);
		fz_errlog_add(fh->r, loc, msg[0] ? msg : strerror(-ret), cmd,
			      err_pos(cmd, msg));
		pthread_mutex_unlock(&v->lock);
		fuse_reply_err(req, -ret);
	} else {
		fuse_reply_write(req, size);
	}
	free(buf);
}

static void fz_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fz_view *v = req_view(req);
	struct fz_remote *r;
	struct fz_node *n, copy;
	struct stat st;
	bool ok = false;
	int ret = 0;

	pthread_mutex_lock(&v->lock);
	n = node_of(v->fs, ino);
	r = n ? node_check(v, n, &ok) : NULL;
	if (ok && r)
		fz_remote_get(r);
	if (n) {
		copy = *n;
		node_stat(v->fs, n, &st);
	}
	pthread_mutex_unlock(&v->lock);
	if (!ok) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && r && node_def(&copy)) {
		if (attr->st_size)
			ret = -EINVAL;
		else
			ret = fh_truncate(v, r, &copy);
	}
	if (r) {
		pthread_mutex_lock(&v->lock);
		fz_remote_put(r);
		pthread_mutex_unlock(&v->lock);
	}
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, 0);
}

/* tracefs creates nothing. */
static void fz_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	fuse_reply_err(req, EACCES);
}

static void fz_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	fuse_reply_err(req, EACCES);
}

static void fz_init(void *userdata, struct fuse_conn_info *conn)
{
	/* O_TRUNC comes with the open: `echo > trace` resets in one step,
	 * and an `echo x > dynamic_events` that fails to clear fails. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
}

static const struct fuse_lowlevel_ops fz_ops = {
	.init = fz_init,
	.lookup = fz_lookup,
	.getattr = fz_getattr,
	.setattr = fz_setattr,
	.readlink = fz_readlink,
	.mknod = fz_mknod,
	.create = fz_create,
	.open = fz_open,
	.read = fz_read,
	.write = fz_write,
	.release = fz_release,
	.opendir = fz_opendir,
	.readdir = fz_readdir,
	.releasedir = fz_releasedir,
	.poll = fz_poll,
};

const struct fuse_lowlevel_ops *fz_fs_ops(void)
{
	return &fz_ops;
}

int fz_fs_init(struct fz_view *v)
{
	struct fz_fs *fs = calloc(1, sizeof(*fs));
	struct fz_node root;

	if (!fs)
		return -ENOMEM;
	fs->t0 = time(NULL);
	fs->uid = getuid();
	fs->gid = getgid();
	memset(&root, 0, sizeof(root));
	root.kind = K_ROOT;
	v->fs = fs;
	/* The root is inode 1 (FUSE_ROOT_ID). */
	if (!node_get(fs, &root)) {
		free(fs);
		v->fs = NULL;
		return -ENOMEM;
	}
	v->wake = fz_wake;
	return 0;
}

void fz_fs_fini(struct fz_view *v)
{
	struct fz_fs *fs = v->fs;
	size_t i;

	if (!fs)
		return;
	pthread_mutex_lock(&v->lock);
	v->wake = NULL;
	fz_fs_release_waiters(v);
	/* Files still open when the session ended get no RELEASE. */
	while (fs->files) {
		struct fz_fh *fh = fs->files;

		if (fh->ph)
			fuse_pollhandle_destroy(fh->ph);
		fh->ph = NULL;
		fh->busy = 0;
		fh->released = true;
		fh_put(fs, fh);
	}
	pthread_mutex_unlock(&v->lock);
	for (i = 0; i < fs->nr_nodes; i++)
		free(fs->nodes[i]);
	free(fs->nodes);
	free(fs->polls);
	free(fs);
	v->fs = NULL;
}
