// SPDX-License-Identifier: MIT
/*
 * user_events: the dynamic_events file of the registry (ue_registry.c).
 *
 * Lines written to dynamic_events create persistent events ("u:DEF") or
 * delete events ("!u:NAME fields", "-:NAME fields") with the kernel's
 * rules; a write is split into lines as the kernel splits it, and opening
 * the file with O_TRUNC deletes every event unless one is busy.  Reading
 * it lists the events in creation order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "userevents-local.h"

/* dyn_event_release() with user_event_match(): "!u:NAME args" */
static int ue_dyn_delete(struct hvtrace_ue_registry *r, const char *line,
			 struct hvtrace_ue_error *err)
{
	char **argv, *event, *system = NULL, *slash;
	struct ue_event *e;
	int argc = 0, ret = -ENOENT;

	argv = ue_argv_split(line, &argc);
	if (!argv)
		return ue_err(err, -ENOMEM, "out of memory");
	if (argv[0][0] == '-') {
		if (argv[0][1] != ':') {
			ret = ue_err(err, -EINVAL,
				     "bad delete command \"%s\": use -:NAME or !u:NAME",
				     argv[0]);
			goto out;
		}
		event = &argv[0][2];
	} else {
		event = strchr(argv[0], ':');
		if (!event) {
			ret = ue_err(err, -EINVAL,
				     "bad delete command \"%s\": use !u:NAME [fields]",
				     argv[0]);
			goto out;
		}
		event++;
	}
	slash = strchr(event, '/');
	if (slash) {
		system = event;
		event = slash + 1;
		*slash = '\0';
	}
	if (!system && event[0] == '\0') {
		ret = ue_err(err, -EINVAL, "delete command names no event");
		goto out;
	}
	if (system && strcmp(system, HVT_UE_SYSTEM) &&
	    strcmp(system, HVT_UE_SYSTEM_MULTI))
		e = NULL;
	else
		e = ue_find(r, event);
	if (e && hvt_ue_match_argv(e->def, argc - 1, argv + 1)) {
		if (ue_busy(e)) {
			ret = ue_err(err, -EBUSY,
				     "event \"%s\" is in use (%u registrations%s); it can be deleted once unused",
				     event, e->refs,
				     e->used_by ? ", enabled" : "");
		} else {
			ue_destroy(r, e);
			ret = 0;
		}
	} else if (e) {
		char *have = hvtrace_ue_dyn_line(e->def);

		ret = ue_err(err, -ENOENT,
			     "no event \"%s\" with these fields; the delete command must repeat them (%s)",
			     event, have ? have : "?");
		free(have);
	} else {
		ret = ue_err(err, -ENOENT, "no event \"%s\"", event);
	}
out:
	free(argv);
	return ret;
}

static int ue_dyn_apply_locked(struct hvtrace_ue_registry *r, const char *line,
			       size_t len, struct hvtrace_ue_error *err)
{
	char *copy, *hash;
	struct ue_event *e;
	bool created;
	int ret;

	if (len > HVT_UE_MAX_LINE)
		return ue_err(err, -E2BIG,
			      "line is %zu bytes; dynamic_events lines are limited to %u",
			      len, HVT_UE_MAX_LINE);
	if (memchr(line, '\0', len) || memchr(line, '\n', len))
		return ue_err(err, -EINVAL,
			      "a line must not contain NUL or newline bytes");
	copy = malloc(len + 1);
	if (!copy)
		return ue_err(err, -ENOMEM, "out of memory");
	memcpy(copy, line, len);
	copy[len] = '\0';
	/* Comments run from '#' to the end of the line. */
	hash = strchr(copy, '#');
	if (hash)
		*hash = '\0';

	if (copy[0] == '-' || copy[0] == '!') {
		ret = ue_dyn_delete(r, copy, err);
	} else if (*ue_skip_spaces(copy) == '\0') {
		ret = 0;
	} else if (strncmp(copy, HVT_UE_PREFIX, 2)) {
		char ex[64];

		ue_excerpt(ex, sizeof(ex), copy, strlen(copy));
		ret = ue_err(err, -EINVAL,
			     "\"%s\" is not a user_events command: write u:NAME [fields] to define an event, !u:NAME [fields] to delete one",
			     ex);
	} else {
		ret = ue_define(r, ue_skip_spaces(copy + 2), true, &e,
				&created, err);
	}
	free(copy);
	return ret;
}

int hvtrace_ue_dyn_apply(struct hvtrace_ue_registry *r, const char *line,
		     struct hvtrace_ue_error *err)
{
	int ret;

	ue_clear_err(err);
	pthread_mutex_lock(&r->lock);
	ret = ue_dyn_apply_locked(r, line, strlen(line), err);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

long hvt_ue_dyn_write(struct hvtrace_ue_registry *r, const char *buf, size_t len,
		      struct hvtrace_ue_error *err)
{
	size_t pos = 0;
	int ret = 0;

	ue_clear_err(err);
	if (memchr(buf, '\0', len))
		return ue_err(err, -EINVAL,
			      "dynamic_events text must not contain NUL bytes");
	pthread_mutex_lock(&r->lock);
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		ret = ue_dyn_apply_locked(r, buf + pos, n, err);
		if (ret)
			break;
		pos += n + (nl ? 1 : 0);
	}
	pthread_mutex_unlock(&r->lock);
	return ret ? ret : (long)len;
}

int hvtrace_ue_dyn_clear(struct hvtrace_ue_registry *r, struct hvtrace_ue_error *err)
{
	struct ue_event *e;
	int n = 0, ret = 0;

	ue_clear_err(err);
	pthread_mutex_lock(&r->lock);
	for (e = r->head; e; e = e->next) {
		if (ue_busy(e)) {
			ret = ue_err(err, -EBUSY,
				     "event \"%s\" is in use; nothing was deleted",
				     e->def->name);
			break;
		}
	}
	while (!ret && r->head) {
		ue_destroy(r, r->head);
		n++;
	}
	pthread_mutex_unlock(&r->lock);
	return ret ? ret : n;
}

char *hvtrace_ue_dyn_events_text(struct hvtrace_ue_registry *r)
{
	struct ue_buf b = { 0 };
	struct ue_event *e;

	pthread_mutex_lock(&r->lock);
	for (e = r->head; e; e = e->next) {
		ue_dyn_line_into(&b, e->def);
		ue_buf_put(&b, "\n", 1);
	}
	pthread_mutex_unlock(&r->lock);
	return ue_buf_finish(&b);
}
