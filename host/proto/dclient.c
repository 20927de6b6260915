// SPDX-License-Identifier: MIT
/*
 * libhvtrace-daemon: a client of hvtraced's socket (<hvtrace-daemon.h>).
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace-internal.h>
#include <hvtrace-daemon.h>

struct hvtrace_daemon {
	int fd;
	uint32_t next_req;
	char path[108];
	struct hvt_proto_dec dec;
	uint8_t *wbuf;
	int pass[HVT_ATTACH_MAX_FDS];	/* to pass with the next request */
	int nr_pass;
	uint8_t rbuf[HVT_PROTO_MAX_FRAME];
};

static uint64_t dc_now_ms(void)
{
	return hvt_host_now_ns() / 1000000;
}

const char *hvtrace_daemon_default_socket(void)
{
	const char *p = getenv("HVTRACED_SOCKET");

	return p && *p ? p : HVTRACE_DAEMON_DEFAULT_SOCKET;
}

int hvtrace_daemon_fd(const struct hvtrace_daemon *c)
{
	return c ? c->fd : -1;
}

void hvtrace_daemon_close(struct hvtrace_daemon *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->wbuf);
	free(c);
}

int hvtrace_daemon_send(struct hvtrace_daemon *c, struct hvt_msg *m)
{
	int n, off = 0;

	if (!m->req) {
		m->req = c->next_req++;
		if (!m->req)
			m->req = c->next_req++;
	}
	n = hvt_msg_encode(c->wbuf, HVT_PROTO_MAX_FRAME, m);
	if (n < 0)
		return hvt_err(n, "cannot encode a %s request: %s",
			       hvt_msg_type_name(m->type), strerror(-n));
	while (off < n) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(HVT_ATTACH_MAX_FDS * sizeof(int))];
		} cm;
		struct iovec iov = { c->wbuf + off, (size_t)(n - off) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t w;

		/* Descriptors go with the frame's first byte. */
		if (c->nr_pass) {
			size_t fl = (size_t)c->nr_pass * sizeof(int);

			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.buf;
			mh.msg_controllen = CMSG_SPACE(fl);
			cm.h.cmsg_level = SOL_SOCKET;
			cm.h.cmsg_type = SCM_RIGHTS;
			cm.h.cmsg_len = CMSG_LEN(fl);
			memcpy(CMSG_DATA(&cm.h), c->pass, fl);
		}
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w > 0)
			c->nr_pass = 0;

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return hvt_err(-ECONNRESET,
				       "hvtraced closed the connection (%s)",
				       strerror(errno));
		off += (int)w;
	}
	return 0;
}

int hvtrace_daemon_pass_fds(struct hvtrace_daemon *c, const int *fds, int nr)
{
	if (!c || nr < 0 || nr > (int)HVT_ATTACH_MAX_FDS || (nr && !fds))
		return hvt_err(-EINVAL, "hvtrace_daemon_pass_fds: %d "
					"descriptors (at most %u)",
			       nr, HVT_ATTACH_MAX_FDS);
	memcpy(c->pass, fds, (size_t)nr * sizeof(int));
	c->nr_pass = nr;
	return 0;
}

int hvtrace_daemon_recv(struct hvtrace_daemon *c, struct hvt_msg *m, int timeout_ms)
{
	uint64_t wait = timeout_ms < 0 ? 0 : (uint64_t)timeout_ms;
	uint64_t deadline = dc_now_ms() + wait;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		struct hvt_frame f;
		uint8_t *room;
		uint64_t now;
		size_t space;
		ssize_t n;
		int ret;

		while ((ret = hvt_proto_dec_next(&c->dec, &f)) != 0) {
			if (ret < 0)
				continue;
			if (hvt_msg_decode(&f, m, NULL))
				continue;
			return 1;
		}
		now = dc_now_ms();
		if (timeout_ms >= 0 && now >= deadline)
			return 0;
		ret = poll(&pfd, 1,
			   timeout_ms < 0 ? -1 : (int)(deadline - now));
		if (ret < 0 && errno != EINTR)
			return hvt_err(-errno, "poll: %s", strerror(errno));
		if (ret <= 0)
			continue;
		space = hvt_proto_dec_room(&c->dec, &room);
		n = recv(c->fd, room, space, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return hvt_err(-ECONNRESET,
				       "hvtraced closed the connection");
		hvt_proto_dec_added(&c->dec, (uint32_t)n);
	}
}

int hvtrace_daemon_call(struct hvtrace_daemon *c, struct hvt_msg *req,
		     struct hvt_msg *reply, int timeout_ms,
		     hvtrace_daemon_cb other, void *arg)
{
	uint64_t deadline;
	int ret;

	ret = hvtrace_daemon_send(c, req);
	if (ret)
		return ret;
	deadline = dc_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		uint64_t now = dc_now_ms();

		if (now >= deadline)
			return hvt_err(-ETIMEDOUT,
				       "hvtraced did not answer a %s request "
				       "within %d ms",
				       hvt_msg_type_name(req->type),
				       timeout_ms);
		ret = hvtrace_daemon_recv(c, reply, (int)(deadline - now));
		if (ret < 0)
			return ret;
		if (!ret)
			continue;
		if ((reply->flags & HVT_PF_REPLY) && reply->req == req->req)
			return 0;
		if (other)
			other(arg, reply);
	}
}

/*
 * A socket this user may not use: say whose group it belongs to and how
 * to get in.  hvtraced gives its socket to the group "hvtrace" when that
 * group exists; otherwise the socket stays in root's group and only root
 * gets in.
 */
static void dc_no_permission(int err, const char *path)
{
	const struct group *gr;
	struct stat st;

	if (stat(path, &st)) {
		hvt_err(err, "no permission to use hvtraced's socket %s (%s): "
			     "run as root",
			path, strerror(-err));
		return;
	}
	gr = getgrgid(st.st_gid);
	if (st.st_gid == 0 || !gr) {
		hvt_err(err,
			"no permission to use hvtraced's socket %s: it is in "
			"root's group, as the group hvtrace did not exist when "
			"hvtraced started.  Run as root, or create the group "
			"('groupadd --system hvtrace' as root), restart hvtraced "
			"('hvtrace daemon stop', then 'hvtrace daemon'), add "
			"yourself ('usermod -aG hvtrace USER') and log in again",
			path);
		return;
	}
	hvt_err(err,
		"no permission to use hvtraced's socket %s: join its group "
		"%s ('usermod -aG %s USER' as root, then log in again) or run "
		"as root",
		path, gr->gr_name, gr->gr_name);
}

int hvtrace_daemon_open(const char *path, struct hvtrace_daemon **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct hvtrace_daemon *c;
	struct hvt_msg m, r;
	int ret;

	*out = NULL;
	if (!path)
		path = hvtrace_daemon_default_socket();
	if (strlen(path) >= sizeof(sa.sun_path))
		return hvt_err(-ENAMETOOLONG, "socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return hvt_err(-ENOMEM, "out of memory");
	c->wbuf = malloc(HVT_PROTO_MAX_FRAME);
	if (!c->wbuf) {
		free(c);
		return hvt_err(-ENOMEM, "out of memory");
	}
	c->next_req = 1;
	snprintf(c->path, sizeof(c->path), "%s", path);
	hvt_proto_dec_init(&c->dec, c->rbuf, sizeof(c->rbuf), sizeof(c->rbuf));
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		ret = hvt_err(-errno, "socket: %s", strerror(errno));
		goto fail;
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		if (ret == -EACCES || ret == -EPERM)
			dc_no_permission(ret, path);
		else
			hvt_err(ret,
				"hvtraced is not running (%s: %s): start it "
				"with 'hvtrace daemon' (or 'hvtraced'), or "
				"point HVTRACED_SOCKET at its socket",
				path, strerror(-ret));
		goto fail;
	}
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_HELLO;
	m.u.hello.min_version = HVT_PROTO_MIN_VERSION;
	m.u.hello.max_version = HVT_PROTO_VERSION;
	m.u.hello.role = HVT_ROLE_TOOL;
	m.u.hello.caps = HVT_CAP_TOOL_MISSING | HVT_CAP_TOOL_POWERED_OFF |
			   HVT_CAP_TOOL_RIG_STATES;
	m.u.hello.pid = (uint32_t)getpid();
	ret = hvtrace_daemon_call(c, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL, NULL);
	if (ret)
		goto fail;
	if (r.type != HVT_MSG_HELLO || r.u.hello.role != HVT_ROLE_DAEMON) {
		ret = hvt_err(-EPROTO, "%s is not hvtraced's socket", path);
		goto fail;
	}
	if (r.u.hello.status) {
		ret = hvt_err(r.u.hello.status,
			      "hvtraced refused the connection: %.*s",
			      (int)r.u.hello.text.len, r.u.hello.text.ptr);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	hvtrace_daemon_close(c);
	return ret;
}

int hvtrace_daemon_find_remote(struct hvtrace_daemon *c, const char *name,
		       struct hvt_remote_rec *rec)
{
	struct hvt_msg m, r;
	char names[512];
	size_t off = 0;
	uint32_t i, found = 0;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REMOTES;
	ret = hvtrace_daemon_call(c, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL, NULL);
	if (ret)
		return ret;
	if (r.type != HVT_MSG_REMOTES)
		return hvt_err(-EPROTO, "hvtraced answered REMOTES with %s",
			       hvt_msg_type_name(r.type));
	names[0] = '\0';
	for (i = 0; i < r.u.remotes.recs.count; i++) {
		struct hvt_remote_rec x;

		hvt_msg_remote_at(&r.u.remotes.recs, i, &x);
		if (off < sizeof(names))
			off += (size_t)snprintf(names + off,
						sizeof(names) - off, "%s%s%s",
						i ? ", " : "", x.name,
						x.state == HVT_REMOTE_MISSING ?
							" (missing: its file "
							"is gone)" :
							"");
		if (name ? !strcmp(x.name, name) : !found) {
			*rec = x;
			found++;
		} else if (!name) {
			found++;
		}
	}
	if (!r.u.remotes.recs.count)
		return hvt_err(-ENOENT,
			       "hvtraced has no remotes: start an agent "
			       "(hvtrace-agent) or attach a guest ('hvtrace "
			       "daemon attach NAME')");
	if (name && !found)
		return hvt_err(-ENOENT, "no remote named '%s' (there are: %s)",
			       name, names);
	if (!name && found > 1)
		return hvt_err(-EINVAL,
			       "hvtraced has several remotes (%s): choose one "
			       "with --remote NAME",
			       names);
	return 0;
}

int hvtrace_daemon_get_text(struct hvtrace_daemon *c, uint32_t remote, uint32_t kind,
		     char **out, size_t *len)
{
	struct hvt_msg m, r;
	size_t have = 0;
	char *buf = NULL;
	int ret, parts;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_TEXT;
	m.chan = remote;
	m.u.text_req.kind = kind;
	ret = hvtrace_daemon_call(c, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL, NULL);
	/* Bounded: a part per message; the daemon's text is finite, and a
	 * hostile stream is cut at 4096 parts. */
	for (parts = 0; !ret && parts < 4096; parts++) {
		char *n;

		if (r.type == HVT_MSG_ERROR) {
			free(buf);
			return hvt_err(r.u.result.status, "%.*s",
				       (int)r.u.result.text.len,
				       r.u.result.text.ptr);
		}
		if (r.type != HVT_MSG_TEXT) {
			free(buf);
			return hvt_err(-EPROTO, "unexpected %s reply",
				       hvt_msg_type_name(r.type));
		}
		n = realloc(buf, have + r.u.text.text.len + 1);
		if (!n) {
			free(buf);
			return hvt_err(-ENOMEM, "out of memory");
		}
		buf = n;
		memcpy(buf + have, r.u.text.text.ptr, r.u.text.text.len);
		have += r.u.text.text.len;
		buf[have] = '\0';
		if (!(r.flags & HVT_PF_MORE))
			break;
		do {
			ret = hvtrace_daemon_recv(c, &r, HVTRACE_DAEMON_TIMEOUT_MS);
		} while (ret == 1 && r.req != m.req);
		if (ret == 0)
			ret = hvt_err(-ETIMEDOUT, "hvtraced stopped mid-text");
		else if (ret == 1)
			ret = 0;
	}
	if (ret) {
		free(buf);
		return ret;
	}
	if (!buf) {
		buf = strdup("");
		if (!buf)
			return hvt_err(-ENOMEM, "out of memory");
	}
	*out = buf;
	if (len)
		*len = have;
	return 0;
}

int hvtrace_daemon_call_result(struct hvtrace_daemon *c, struct hvt_msg *req,
		       struct hvt_m_result *res, char *text, size_t textsize)
{
	struct hvt_msg r;
	int ret;

	ret = hvtrace_daemon_call(c, req, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL, NULL);
	if (ret)
		return ret;
	if (hvt_msg_layout(r.type, 1) != HVT_L_RESULT)
		return hvt_err(-EPROTO, "unexpected %s reply",
			       hvt_msg_type_name(r.type));
	if (text && textsize) {
		size_t n = r.u.result.text.len < textsize - 1 ?
				   r.u.result.text.len :
				   textsize - 1;

		memcpy(text, r.u.result.text.ptr, n);
		text[n] = '\0';
	}
	if (res) {
		*res = r.u.result;
		res->text.ptr = NULL;
	}
	if (r.u.result.status)
		hvt_err(r.u.result.status, "%.*s", (int)r.u.result.text.len,
			r.u.result.text.ptr);
	return r.u.result.status;
}
