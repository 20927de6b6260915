// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the contents of the snapshot files of hvtrace mount.
 *
 * One job: render what a non-consuming file (trace, stats, format,
 * enable, available_events, error_log, ...) shows, when it is opened,
 * into the open file's own copy, and truncate what an O_TRUNC open
 * clears.  Also the small text helpers the writes share (number
 * parsing, the enable state of a system).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace/proto.h>

#include "fs-local.h"

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

/*
 * "0", "1" or "X" over the events of @system (NULL: all); X also when the
 * state of one of them is not known (a guest kernel's event).
 */
static char enable_state(const struct fz_remote *r, const char *system)
{
	unsigned int i, on = 0, off = 0;

	for (i = 0; i < r->nev; i++) {
		if (system && strcmp(r->ev[i].system, system))
			continue;
		if (r->ev[i].unknown)
			return 'X';
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
int parse_ulong(const char *s, size_t len, unsigned long *out)
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

/* Whether a "PID COMM" line of @text names @pid. */
static bool names_pid(const char *text, int pid)
{
	const char *p = text;

	while (p && *p) {
		int v;

		if (sscanf(p, "%d", &v) == 1 && v == pid)
			return true;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

/*
 * saved_cmdlines: the pids the guest's agent named (@agent, taken), then
 * those of the guest kernel's own saved_cmdlines (@kernel) the agent did
 * not name.
 */
static char *merge_cmdlines(char *agent, const char *kernel, size_t *len)
{
	size_t al = agent ? strlen(agent) : 0;
	const char *p = kernel;
	char *out;

	if (!kernel)
		return agent;
	out = malloc(al + strlen(kernel) + 2);
	if (!out)
		return agent;
	memcpy(out, agent ? agent : "", al);
	if (al && out[al - 1] != '\n')
		out[al++] = '\n';
	while (*p) {
		size_t n = strcspn(p, "\n");
		int pid;

		if (sscanf(p, "%d", &pid) == 1 && pid > 0 &&
		    !names_pid(agent, pid)) {
			memcpy(out + al, p, n);
			al += n;
			out[al++] = '\n';
		}
		p += n;
		if (*p)
			p++;
	}
	out[al] = '\0';
	free(agent);
	*len = al;
	return out;
}

/* Render a snapshot file (view lock NOT held; takes it). */
int fh_render(struct fz_view *v, struct fz_fh *fh)
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
	case F_STATE:
		fh->buf = xprintf(&fh->len, "%s\n",
				  hvt_remote_state_word(
					  r->state ? r->state
					  : r->stopped ? HVT_REMOTE_DISCONNECTED
						       : HVT_REMOTE_CONNECTED,
					  r->transport));
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
	case F_SAVED_CMDLINES:
		text = merge_cmdlines(text, r->kcmdlines, &fh->len);
		/* fall through */
	case F_DYNAMIC_EVENTS:
	case F_USER_EVENTS_STATUS:
		fh->buf = text;
		fh->len = text ? strlen(text) : 0;
		text = NULL;
		break;
	case F_PRINTK_FORMATS:
		/* The guest kernel's (bprint's format strings); else none. */
		fh->buf = xstrdup_len(r->kprintk, &fh->len);
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
		else if (n->file == F_E_ENABLE && e->unknown)
			fh->buf = xprintf(&fh->len, "X\n");
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
int fh_truncate(struct fz_view *v, struct fz_remote *r, const struct fz_node *n)
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
