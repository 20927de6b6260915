// SPDX-License-Identifier: MIT
/*
 * libhvtrace: writes to the files of hvtrace mount, and the attribute
 * changes that stand for one (truncating trace, setting buffer_size_kb).
 *
 * One job: turn what a user writes (tracing_on, set_event, enable,
 * dynamic_events, trace_clock, ...) into calls on the view and its
 * source, and a failed command into an error_log entry with a caret at
 * the word that was wrong, as tracefs does.  Nodes, opening and reading
 * are in fs.c and fs_io.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>
#include <hvtrace/proto.h>

#include "fs-local.h"

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

void fz_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size,
	      off_t off, struct fuse_file_info *fi)
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

void fz_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi)
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
void fz_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi)
{
	fuse_reply_err(req, EACCES);
}

void fz_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	      dev_t rdev)
{
	fuse_reply_err(req, EACCES);
}
