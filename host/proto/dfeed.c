// SPDX-License-Identifier: MIT
/*
 * libhvtrace: reading remotes through hvtraced (see the page-feed section of <hvtrace-daemon.h>).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/page.h>

#include <hvtrace-internal.h>
#include <hvtrace-daemon.h>

/* At most this many pages wait in a feed's queue: past it the feed stops
 * receiving until the caller takes some (the daemon then drops pages for
 * this subscriber and says so). */
#define DF_MAX_QUEUED 65536u

struct hvtrace_daemon_feed {
	struct hvtrace_daemon *dc;
	struct hvtrace_daemon_page *head, *tail;
	unsigned int queued;
};

int hvtrace_daemon_feed_open(const char *sock, struct hvtrace_daemon_feed **out)
{
	struct hvtrace_daemon_feed *f = calloc(1, sizeof(*f));
	int ret;

	*out = NULL;
	if (!f)
		return hvt_err(-ENOMEM, "out of memory");
	ret = hvtrace_daemon_open(sock, &f->dc);
	if (ret) {
		free(f);
		return ret;
	}
	*out = f;
	return 0;
}

void hvtrace_daemon_feed_close(struct hvtrace_daemon_feed *f)
{
	struct hvtrace_daemon_page *p, *n;

	if (!f)
		return;
	for (p = f->head; p; p = n) {
		n = p->next;
		free(p);
	}
	hvtrace_daemon_close(f->dc);
	free(f);
}

int hvtrace_daemon_feed_fd(const struct hvtrace_daemon_feed *f)
{
	return hvtrace_daemon_fd(f->dc);
}

bool hvtrace_daemon_feed_pending(const struct hvtrace_daemon_feed *f)
{
	return f->head != NULL;
}

/* Keep a PAGE (anything else that is not ours is dropped). */
static void df_other(void *arg, const struct hvt_msg *m)
{
	struct hvtrace_daemon_feed *f = arg;
	struct hvtrace_daemon_page *p;

	if (m->type != HVT_MSG_PAGE || (m->flags & HVT_PF_REPLY) ||
	    f->queued >= DF_MAX_QUEUED)
		return;
	p = malloc(sizeof(*p) + m->u.page.len);
	if (!p)
		return;
	p->next = NULL;
	p->remote = m->chan;
	p->sub = m->req;
	p->cpu = m->u.page.cpu;
	p->flags = m->u.page.flags;
	p->seq = m->u.page.seq;
	p->entries = m->u.page.entries;
	p->lost_events = m->u.page.lost_events;
	p->dropped_pages = m->u.page.dropped_pages;
	p->dropped_events = m->u.page.dropped_events;
	p->first_ts = m->u.page.first_ts;
	p->len = m->u.page.len;
	memcpy(p->data, m->u.page.data, m->u.page.len);
	if (f->tail)
		f->tail->next = p;
	else
		f->head = p;
	f->tail = p;
	f->queued++;
}

static int df_call(struct hvtrace_daemon_feed *f, struct hvt_msg *req,
		   struct hvt_msg *reply)
{
	return hvtrace_daemon_call(f->dc, req, reply, HVTRACE_DAEMON_TIMEOUT_MS,
				   df_other, f);
}

static int df_result(struct hvtrace_daemon_feed *f, struct hvt_msg *req,
		     struct hvt_m_result *res)
{
	struct hvt_msg r;
	int ret = df_call(f, req, &r);

	if (ret)
		return ret;
	if (hvt_msg_layout(r.type, 1) != HVT_L_RESULT)
		return hvt_err(-EPROTO, "unexpected %s reply",
			       hvt_msg_type_name(r.type));
	if (r.u.result.status)
		return hvt_err(r.u.result.status, "%.*s",
			       (int)r.u.result.text.len, r.u.result.text.ptr);
	if (res) {
		*res = r.u.result;
		res->text.ptr = NULL;
		res->text.len = 0;
	}
	return 0;
}

int hvtrace_daemon_feed_subscribe(struct hvtrace_daemon_feed *f,
				  uint32_t remote, int cpu, uint32_t queue_kib,
				  uint32_t *sub)
{
	struct hvt_m_result res;
	struct hvt_msg m;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = remote;
	m.u.subscribe.cpu = cpu;
	m.u.subscribe.queue_kib = queue_kib;
	ret = df_result(f, &m, &res);
	if (!ret && sub)
		*sub = res.id;
	return ret;
}

int hvtrace_daemon_feed_next(struct hvtrace_daemon_feed *f, int timeout_ms,
			     struct hvtrace_daemon_page **page)
{
	struct hvt_msg m;
	int ret;

	*page = NULL;
	for (;;) {
		struct pollfd pfd = {.fd = hvtrace_daemon_fd(f->dc),
				     .events = POLLIN};

		if (f->head) {
			*page = f->head;
			f->head = f->head->next;
			if (!f->head)
				f->tail = NULL;
			f->queued--;
			(*page)->next = NULL;
			return 1;
		}
		/* Frames already received come first (a zero timeout only
		 * decodes what the client holds)... */
		ret = hvtrace_daemon_recv(f->dc, &m, 0);
		if (ret < 0)
			return ret;
		if (ret) {
			df_other(f, &m);
			continue;
		}
		/* ... then the socket, as long as the caller waits. */
		ret = poll(&pfd, 1, timeout_ms);
		if (ret < 0 && errno != EINTR)
			return hvt_err(-errno, "poll: %s", strerror(errno));
		if (ret <= 0)
			return 0;
		/* Bytes are there: a whole frame follows at once. */
		ret = hvtrace_daemon_recv(f->dc, &m, HVTRACE_DAEMON_TIMEOUT_MS);
		if (ret < 0)
			return ret;
		if (!ret)
			return hvt_err(-ETIMEDOUT,
				       "hvtraced stopped mid-frame");
		/* A page is queued and returned above; anything else (a
		 * stray message) is dropped and we look again. */
		df_other(f, &m);
	}
}

int hvtrace_daemon_feed_drain(struct hvtrace_daemon_feed *f, uint32_t remote)
{
	struct hvt_msg m;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_DRAIN;
	m.chan = remote;
	return df_result(f, &m, NULL);
}

int hvtrace_daemon_feed_to_host(struct hvtrace_daemon_feed *f, uint32_t remote,
				const uint64_t *ts, uint64_t *ns, size_t n,
				uint64_t *err_ns)
{
	uint8_t *buf;
	size_t off = 0;
	int ret = 0;

	if (err_ns)
		*err_ns = UINT64_MAX;
	buf = malloc((size_t)HVT_PROTO_MAX_TS * 8);
	if (!buf)
		return hvt_err(-ENOMEM, "out of memory");
	while (off < n) {
		uint32_t k = n - off > HVT_PROTO_MAX_TS ? HVT_PROTO_MAX_TS
							: (uint32_t)(n - off);
		struct hvt_msg m, r;
		uint32_t i;

		for (i = 0; i < k; i++)
			hvt_msg_put_u64(buf + 8 * i, ts[off + i]);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_TO_HOST;
		m.chan = remote;
		m.u.to_host.ts.ptr = buf;
		m.u.to_host.ts.count = k;
		ret = df_call(f, &m, &r);
		if (ret)
			break;
		if (r.type == HVT_MSG_ERROR) {
			ret = hvt_err(r.u.result.status ? r.u.result.status
							: -EIO,
				      "%.*s", (int)r.u.result.text.len,
				      r.u.result.text.ptr);
			break;
		}
		if (r.type != HVT_MSG_TO_HOST ||
		    r.u.to_host_reply.ns.count != k) {
			ret = hvt_err(-EPROTO, "unexpected TO_HOST reply");
			break;
		}
		if (r.u.to_host_reply.status) {
			ret = hvt_err(r.u.to_host_reply.status,
				      "hvtraced cannot convert timestamps");
			break;
		}
		for (i = 0; i < k; i++)
			ns[off + i] = hvt_msg_u64_at(&r.u.to_host_reply.ns, i);
		if (err_ns)
			*err_ns = r.u.to_host_reply.err_ns;
		off += k;
	}
	free(buf);
	return ret;
}

/* --- remotes and events ----------------------------------------------------
 */

int hvtrace_daemon_get_remotes(struct hvtrace_daemon *dc,
			       struct hvt_remote_rec **recs, uint32_t *n)
{
	struct hvt_remote_rec *v;
	struct hvt_msg m, r;
	uint32_t i;
	int ret;

	*recs = NULL;
	*n = 0;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REMOTES;
	ret = hvtrace_daemon_call(dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL,
				  NULL);
	if (ret)
		return ret;
	if (r.type != HVT_MSG_REMOTES)
		return hvt_err(-EPROTO, "hvtraced answered REMOTES with %s",
			       hvt_msg_type_name(r.type));
	v = calloc(r.u.remotes.recs.count + 1, sizeof(*v));
	if (!v)
		return hvt_err(-ENOMEM, "out of memory");
	for (i = 0; i < r.u.remotes.recs.count; i++)
		hvt_msg_remote_at(&r.u.remotes.recs, i, &v[i]);
	*recs = v;
	*n = r.u.remotes.recs.count;
	return 0;
}

void hvtrace_daemon_events_free(struct hvtrace_daemon_events *evs)
{
	unsigned int i;

	for (i = 0; i < evs->nr; i++)
		free(evs->ev[i].format);
	free(evs->ev);
	free(evs->header_page);
	free(evs->header_event);
	memset(evs, 0, sizeof(*evs));
}

static char *df_strndup(const char *p, uint32_t len)
{
	char *s = malloc((size_t)len + 1);

	if (s) {
		memcpy(s, p, len);
		s[len] = '\0';
	}
	return s;
}

static int df_add_format(struct hvtrace_daemon_events *evs,
			 const struct hvt_msg *r)
{
	const struct hvt_m_format *f = &r->u.format;
	struct hvtrace_daemon_event *e, *v;
	const char *slash;
	uint32_t nl;

	if (f->name.len == 11 && !memcmp(f->name.ptr, "header_page", 11)) {
		free(evs->header_page);
		evs->header_page = df_strndup(f->text.ptr, f->text.len);
		return evs->header_page ? 0 : -ENOMEM;
	}
	if (f->name.len == 12 && !memcmp(f->name.ptr, "header_event", 12)) {
		free(evs->header_event);
		evs->header_event = df_strndup(f->text.ptr, f->text.len);
		return evs->header_event ? 0 : -ENOMEM;
	}
	if (!f->name.len || f->name.len >= 300)
		return 0;
	v = realloc(evs->ev, (evs->nr + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	evs->ev = v;
	e = &v[evs->nr];
	memset(e, 0, sizeof(*e));
	slash = memchr(f->name.ptr, '/', f->name.len);
	if (slash) {
		nl = (uint32_t)(slash - f->name.ptr);
		if (nl >= sizeof(e->system) ||
		    f->name.len - nl - 1 >= sizeof(e->name))
			return 0;
		memcpy(e->system, f->name.ptr, nl);
		memcpy(e->name, slash + 1, f->name.len - nl - 1);
	} else {
		if (f->name.len >= sizeof(e->name))
			return 0;
		snprintf(e->system, sizeof(e->system), "%s", "user_events");
		memcpy(e->name, f->name.ptr, f->name.len);
	}
	e->id = f->id;
	e->bit = -1;
	e->format = df_strndup(f->text.ptr, f->text.len);
	if (!e->format)
		return -ENOMEM;
	evs->nr++;
	return 0;
}

int hvtrace_daemon_events_state(struct hvtrace_daemon *dc, uint32_t remote,
				struct hvtrace_daemon_events *evs)
{
	char *text = NULL, *line, *save = NULL;
	unsigned int i;
	int ret;

	ret = hvtrace_daemon_get_text(dc, remote, HVT_TEXT_EVENTS, &text, NULL);
	if (ret)
		return ret;
	for (i = 0; i < evs->nr; i++) {
		evs->ev[i].bit = -1;
		evs->ev[i].enabled = false;
	}
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char sys[64], name[256];
		unsigned int id, on;
		int bit;

		if (sscanf(line, "%63s %255s %u %d %u", sys, name, &id, &bit,
			   &on) != 5)
			continue;
		for (i = 0; i < evs->nr; i++) {
			if (strcmp(evs->ev[i].system, sys) ||
			    strcmp(evs->ev[i].name, name))
				continue;
			evs->ev[i].bit = bit;
			evs->ev[i].enabled = on != 0;
		}
	}
	free(text);
	return 0;
}

int hvtrace_daemon_events_get(struct hvtrace_daemon *dc, uint32_t remote,
			      struct hvtrace_daemon_events *out)
{
	struct hvtrace_daemon_events evs = {0};
	struct hvt_msg m, r;
	int ret, parts;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_FORMATS;
	m.chan = remote;
	ret = hvtrace_daemon_call(dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL,
				  NULL);
	/* Bounded: one format per message, at most 65536 of them. */
	for (parts = 0; !ret && parts < 65536; parts++) {
		if (r.type == HVT_MSG_ERROR) {
			ret = hvt_err(r.u.result.status ? r.u.result.status
							: -EIO,
				      "%.*s", (int)r.u.result.text.len,
				      r.u.result.text.ptr);
			break;
		}
		if (r.type != HVT_MSG_FORMATS) {
			ret = hvt_err(-EPROTO, "unexpected %s reply",
				      hvt_msg_type_name(r.type));
			break;
		}
		ret = df_add_format(&evs, &r);
		if (ret) {
			ret = hvt_err(ret, "out of memory");
			break;
		}
		if (!(r.flags & HVT_PF_MORE))
			break;
		do {
			ret = hvtrace_daemon_recv(dc, &r,
						  HVTRACE_DAEMON_TIMEOUT_MS);
		} while (ret == 1 && r.req != m.req);
		ret = ret == 1 ? 0
		      : ret    ? ret
			       : hvt_err(-ETIMEDOUT,
					 "hvtraced stopped mid-formats");
	}
	if (!ret)
		ret = hvtrace_daemon_events_state(dc, remote, &evs);
	if (ret) {
		hvtrace_daemon_events_free(&evs);
		return ret;
	}
	*out = evs;
	return 0;
}

int hvtrace_daemon_decoder_new(const struct hvt_remote_rec *rec,
			       const struct hvtrace_daemon_events *evs,
			       struct hvtrace_decoder **out)
{
	struct hvtrace_decoder *d;
	unsigned int i;
	int ret;

	ret = hvtrace_decoder_new(rec->subbuf_size ? rec->subbuf_size : 4096,
				  &d);
	if (ret)
		return ret;
	ret = hvtrace_decoder_add_builtin(d, rec->writer_kind);
	for (i = 0; !ret && i < evs->nr; i++) {
		ret = hvtrace_decoder_add_format(d, evs->ev[i].system,
						 evs->ev[i].format,
						 strlen(evs->ev[i].format));
		/* A format the built-ins already hold is the same event. */
		if (ret == -EEXIST)
			ret = 0;
	}
	if (ret) {
		hvtrace_decoder_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

static void df_set_comm(void *arg, int pid, const char *comm)
{
	if (pid > 0)
		hvtrace_decoder_set_comm(arg, pid, comm);
}

int hvtrace_daemon_comms_load(struct hvtrace_daemon *dc, uint32_t remote,
			      struct hvtrace_decoder *d)
{
	return hvtrace_daemon_cmdlines_each(dc, remote, df_set_comm, d);
}

int hvtrace_daemon_comm_read(const char *path, char *comm, size_t size)
{
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, comm, size - 1);
	ret = n < 0 ? -errno : -ENODATA;
	close(fd);
	if (n <= 0)
		return ret;
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	return 0;
}

void hvtrace_daemon_comm_local(struct hvtrace_decoder *d, int pid)
{
	char path[64], comm[32];

	if (pid <= 0 || hvtrace_decoder_comm(d, pid))
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (!hvtrace_daemon_comm_read(path, comm, sizeof(comm)))
		hvtrace_decoder_set_comm(d, pid, comm);
}

int hvtrace_daemon_page_walk(const uint8_t *data, uint32_t len, uint64_t *lost,
			     int (*cb)(void *arg, uint64_t ts,
				       const uint8_t *rec, uint32_t rec_len),
			     void *arg)
{
	struct hvt_page_iter it;
	uint64_t commit, ts;
	uint32_t size;
	int item, n = 0;

	*lost = 0;
	if (len < HVT_PAGE_HDR_SIZE)
		return -EBADMSG;
	ts = hvt_rd64(data);
	commit = hvt_rd64(data + HVT_PAGE_COMMIT_OFF);
	size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	if (size > len - HVT_PAGE_HDR_SIZE)
		return -EBADMSG;
	if (commit & HVT_MISSED_EVENTS) {
		*lost = UINT64_MAX;
		if ((commit & HVT_MISSED_STORED) &&
		    (uint64_t)size + 8 <= len - HVT_PAGE_HDR_SIZE)
			*lost = hvt_rd64(data + HVT_PAGE_HDR_SIZE + size);
	}
	hvt_page_iter_init(&it, data + HVT_PAGE_HDR_SIZE, size, ts);
	while ((item = hvt_page_next(&it)) > 0) {
		if (item != HVT_ITEM_DATA)
			continue;
		n++;
		if (cb && cb(arg, it.ts, it.payload, it.len))
			break;
	}
	return item < 0 ? -EBADMSG : n;
}

bool hvtrace_daemon_name_is_remote(const char *arg)
{
	struct stat st;

	if (!arg || !hvt_proto_name_ok(arg, (uint32_t)strlen(arg)))
		return false;
	/* A regular file of that name is an area; a directory never is. */
	return stat(arg, &st) != 0 || !S_ISREG(st.st_mode);
}
