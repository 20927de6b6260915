// SPDX-License-Identifier: MIT
/*
 * Reading remotes through hvtraced, the parts every reader needs beside
 * the page feed (dfeed.c): the stream and stat verbs, the recorder and
 * the tracefs-style view all use these, so a remote is read one way.
 *
 *   hvtrace_daemon_feed_to_host_mixed()  timestamps of several remotes, one
 *                              TO_HOST per remote
 *   hvtrace_daemon_remote_now()          what became of a remote since it was
 *                              looked up (gone, a new run, stopped)
 *   hvtrace_daemon_stats_get()           a remote's per-CPU counters (STATS),
 * and hvtrace_daemon_feed_stats_to_host()       their oldest/now stamps on the
 * host clock hvtrace_daemon_cmdlines_each()       the comms a guest's agent
 * reported hvtrace_daemon_enable_event()              an event of a remote on
 * or off
 *
 * Everything that comes from the daemon is bounded by what the caller
 * asked for: a reply beyond it is an error, never a write past an array.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace-internal.h>
#include <hvtrace-daemon.h>

int hvtrace_daemon_feed_to_host_mixed(struct hvtrace_daemon_feed *f, size_t n,
				      const uint32_t *remote, uint64_t *ts,
				      int (*done)(void *arg, uint32_t remote,
						  int ret, uint64_t err_ns),
				      void *arg)
{
	uint64_t *sub, err;
	bool *seen;
	size_t i, j, k;
	int ret = 0;

	if (!n)
		return 0;
	sub = malloc(n * sizeof(*sub));
	seen = calloc(n, sizeof(*seen));
	if (!sub || !seen) {
		free(sub);
		free(seen);
		return hvt_err(-ENOMEM, "out of memory");
	}
	for (i = 0; !ret && i < n; i++) {
		if (seen[i])
			continue;
		for (j = i, k = 0; j < n; j++)
			if (remote[j] == remote[i]) {
				seen[j] = true;
				sub[k++] = ts[j];
			}
		ret = hvtrace_daemon_feed_to_host(f, remote[i], sub, sub, k,
						  &err);
		if (!ret)
			for (j = i, k = 0; j < n; j++)
				if (remote[j] == remote[i])
					ts[j] = sub[k++];
		ret = done ? done(arg, remote[i], ret, err) : ret;
	}
	free(sub);
	free(seen);
	return ret;
}

int hvtrace_daemon_feed_ts_to_host_mixed(
	struct hvtrace_daemon_feed *f, size_t n, const uint32_t *remote,
	uint64_t *ts,
	int (*done)(void *arg, uint32_t remote, int ret, uint64_t err_ns),
	void *arg)
{
	struct hvtrace_clock_map m;
	uint64_t err = UINT64_MAX;
	uint32_t *left = NULL, cur = 0;
	size_t i, j, nl = 0;
	bool have = false;
	int ret = 0;

	/* One pass: runs of a remote share its model, looked up once. */
	for (i = 0; i < n; i++) {
		if (!i || remote[i] != cur) {
			if (i && have && done) {
				ret = done(arg, cur, 0, err);
				if (ret)
					return ret;
			}
			cur = remote[i];
			have = !hvtrace_daemon_feed_clock(f, cur, &m);
			if (!have && !left) {
				left = malloc(n * sizeof(*left));
				if (!left)
					return hvt_err(-ENOMEM,
						       "out of memory");
			}
		}
		if (have) {
			ts[i] = hvtrace_clock_map_to_host(&m, ts[i], &err);
		} else {
			left[nl++] = (uint32_t)i;
		}
	}
	if (n && have && done) {
		ret = done(arg, cur, 0, err);
		if (ret)
			goto out;
	}
	/* Remotes without a model yet: hvtraced converts them (TO_HOST). */
	if (nl) {
		uint32_t *rid = malloc(nl * sizeof(*rid));
		uint64_t *sub = malloc(nl * sizeof(*sub));

		if (!rid || !sub) {
			free(rid);
			free(sub);
			ret = hvt_err(-ENOMEM, "out of memory");
			goto out;
		}
		for (j = 0; j < nl; j++) {
			rid[j] = remote[left[j]];
			sub[j] = ts[left[j]];
		}
		ret = hvtrace_daemon_feed_to_host_mixed(f, nl, rid, sub, done,
							arg);
		for (j = 0; j < nl; j++)
			ts[left[j]] = sub[j];
		free(rid);
		free(sub);
	}
out:
	free(left);
	return ret;
}

enum hvtrace_daemon_remote_change
hvtrace_daemon_remote_now(const struct hvt_remote_rec *v, uint32_t n,
			  const struct hvt_remote_rec *was,
			  const struct hvt_remote_rec **cur)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (v[i].id == was->id)
			break;
	if (cur)
		*cur = i < n ? &v[i] : NULL;
	if (i == n)
		return HVTRACE_DAEMON_REMOTE_GONE;
	if (v[i].generation != was->generation)
		return HVTRACE_DAEMON_REMOTE_NEW_RUN;
	if (hvtrace_daemon_remote_stopped(&v[i]))
		return HVTRACE_DAEMON_REMOTE_STOPPED;
	return HVTRACE_DAEMON_REMOTE_LIVE;
}

bool hvtrace_daemon_remote_stopped(const struct hvt_remote_rec *rec)
{
	/* A socket remote's agent may come back to its listening writers;
	 * an area's writer, a VMM and a rig guest's QEMU do not. */
	return (rec->transport == HVT_TRANSPORT_AREA ||
		rec->transport == HVT_TRANSPORT_KRING ||
		rec->transport == HVT_TRANSPORT_CHARDEV) &&
	       (rec->state == HVT_REMOTE_DISCONNECTED ||
		rec->state == HVT_REMOTE_POWERED_OFF ||
		rec->state == HVT_REMOTE_PANICKED ||
		rec->state == HVT_REMOTE_CRASHED);
}

int hvtrace_daemon_stats_get(struct hvtrace_daemon *dc, uint32_t remote,
			     uint32_t max, struct hvt_m_stats *st, uint32_t *n)
{
	struct hvt_msg m, r;
	int ret;

	*n = 0;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_STATS;
	m.chan = remote;
	ret = hvtrace_daemon_call(dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL,
				  NULL);
	/* One record per CPU, MORE on all but the last; bounded by @max. */
	while (!ret) {
		if (r.type == HVT_MSG_ERROR)
			return hvt_err(r.u.result.status ? r.u.result.status
							 : -EIO,
				       "%.*s", (int)r.u.result.text.len,
				       r.u.result.text.ptr);
		if (r.type != HVT_MSG_STATS || *n >= max)
			return hvt_err(-EPROTO, "unexpected reply");
		st[(*n)++] = r.u.stats;
		if (!(r.flags & HVT_PF_MORE))
			return 0;
		do {
			ret = hvtrace_daemon_recv(dc, &r,
						  HVTRACE_DAEMON_TIMEOUT_MS);
		} while (ret == 1 && r.req != m.req);
		if (!ret)
			ret = hvt_err(-ETIMEDOUT, "hvtraced did not send the "
						  "statistics of every CPU");
		else if (ret == 1)
			ret = 0;
	}
	return ret;
}

int hvtrace_daemon_feed_stats_to_host(struct hvtrace_daemon_feed *f,
				      uint32_t remote,
				      const struct hvt_m_stats *st, uint32_t n,
				      uint64_t *ts)
{
	uint32_t k;

	/* v[12], v[13]: the oldest event's and the writer's "now" stamps,
	 * on the writer's clock. */
	for (k = 0; k < n; k++) {
		ts[2 * k] = st[k].v[12];
		ts[2 * k + 1] = st[k].v[13];
	}
	if (!n)
		return 0;
	/* Locally with the model the feed holds; else hvtraced's. */
	if (!hvtrace_daemon_feed_ts_to_host_n(f, remote, ts, ts, NULL,
					      2 * (size_t)n))
		return 0;
	return hvtrace_daemon_feed_to_host(f, remote, ts, ts, 2 * (size_t)n,
					   NULL);
}

int hvtrace_daemon_cmdlines_each(struct hvtrace_daemon *dc, uint32_t remote,
				 void (*cb)(void *arg, int pid,
					    const char *comm),
				 void *arg)
{
	char *text = NULL, *line, *save = NULL;
	int ret;

	ret = hvtrace_daemon_get_text(dc, remote, HVT_TEXT_CMDLINES, &text,
				      NULL);
	if (ret)
		return ret;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char comm[32];
		int pid;

		if (sscanf(line, "%d %31[^\n]", &pid, comm) == 2)
			cb(arg, pid, comm);
	}
	free(text);
	return 0;
}

void hvtrace_daemon_event_path(char *buf, size_t size, const char *system,
			       const char *name)
{
	bool user = !strcmp(system, "user_events");

	snprintf(buf, size, "%s%s%s", user ? "" : system, user ? "" : "/",
		 name);
}

int hvtrace_daemon_enable_event(struct hvtrace_daemon *dc, uint32_t remote,
				const char *path, bool on, char *msg,
				size_t msgsize)
{
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_ENABLE;
	m.chan = remote;
	m.u.arg.arg = on;
	m.u.arg.s.ptr = path;
	m.u.arg.s.len = (uint32_t)strlen(path);
	return hvtrace_daemon_call_result(dc, &m, NULL, msg, msgsize);
}
