// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the file system of hvtrace mount (libfuse3, low-level API).
 *
 *   /remotes/NAME/...     every remote, laid out like an upstream trace
 *                         remote and like a tracefs instance, plus
 *                         "state": the remote's state in the words of
 *                         hvtrace list (powered-off for a rig guest
 *                         that powered itself off)
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
 *
 * This file holds the nodes (lookup, getattr, readlink, readdir) and
 * the operations table; fs_render.c renders snapshot files, fs_io.c
 * opens, reads and polls, fs_write.c handles writes.  Their shared types
 * are in fuse-local.h.
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

#include "fs-local.h"

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
	{"printk_formats", F_PRINTK_FORMATS, 0440, false},
	{"dynamic_events", F_DYNAMIC_EVENTS, 0640, false},
	{"user_events_status", F_USER_EVENTS_STATUS, 0440, false},
	{"state", F_STATE, 0440, false},
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

struct fz_node *node_of(struct fz_fs *fs, fuse_ino_t ino)
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

const struct file_def *node_def(const struct fz_node *n)
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
struct fz_remote *node_check(struct fz_view *v, const struct fz_node *n,
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
		if (n->file == F_DYNAMIC_EVENTS ||
		    n->file == F_USER_EVENTS_STATUS)
			*ok = r->user_events;
		else if (n->file == F_PRINTK_FORMATS)
			*ok = r->kmap != NULL; /* a guest kernel's */
		else
			*ok = true;
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

void node_stat(struct fz_fs *fs, const struct fz_node *n, struct stat *st)
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
