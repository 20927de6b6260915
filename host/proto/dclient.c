// SPDX-License-Identifier: MIT
/*
 * libhvtrace-daemon: a client of hvtraced's socket (<hvtrace-daemon.h>).
 *
 * Frames are received one at a time, each into a buffer of its own
 * (struct dc_frame, laid out as a struct hvtrace_daemon_page followed by
 * the frame), so that a PAGE's sub-buffer never moves once the kernel
 * copied it out of the socket: the feed keeps the buffer as the page
 * (hvt_dclient_take(), dfeed.c) and a remote's ring reads the sub-buffer
 * where it lies (dring.c).  Each recvmsg(2) takes the rest of the current
 * frame and at most the next frame's header, so no byte is ever received
 * into a place it must be moved from.
 *
 * The bytes are hostile: a header is taken only when its magic, header
 * checksum and length hold (else the stream is searched for the next
 * magic, one error per run of garbage; a frame over the size limit is
 * skipped), and a whole frame only when hvt_proto_dec_next(), the
 * protocol's one frame check, accepts it as one frame at its start.
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

#include "dfeed.h"

/* A received frame: a page's header first, so the feed can keep it. */
struct dc_frame {
	struct hvtrace_daemon_page page;
	uint64_t cap; /* bytes at frame[] (8-aligned, as
		       * is a PAGE's sub-buffer in it) */
	uint8_t frame[];
};

struct hvtrace_daemon {
	int fd;
	uint32_t next_req;
	char path[108];
	uint8_t *wbuf;
	int pass[HVT_ATTACH_MAX_FDS];	/* to pass with the next request */
	int nr_pass;
	/* receiving */
	uint8_t hdr[HVT_PROTO_HDR_SIZE]; /* the next frame's header */
	uint32_t hlen;			 /* bytes of it received */
	struct dc_frame *rx;		 /* the frame being received */
	uint32_t rx_len, rx_got;
	struct dc_frame *cur;	/* returned last, kept until the next
				 * receive unless taken */
	struct dc_frame *spare; /* a buffer to reuse */
	uint64_t discard;	/* bytes of an oversized frame left */
	bool in_garbage;	/* inside a run of skipped bytes */
	uint64_t rx_errors;
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
	free(c->rx);
	free(c->cur);
	free(c->spare);
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

/* Done with a frame: kept as the spare when it is the better fit. */
static void dc_frame_put(struct hvtrace_daemon *c, struct dc_frame *fr)
{
	if (!fr)
		return;
	if (c->spare && c->spare->cap >= fr->cap) {
		free(fr);
		return;
	}
	free(c->spare);
	c->spare = fr;
}

/*
 * A buffer for a frame of @len bytes: the spare when it fits without
 * wasting much (a kept page holds its buffer), else a new one.
 */
static struct dc_frame *dc_frame_get(struct hvtrace_daemon *c, uint32_t len)
{
	struct dc_frame *fr = c->spare;

	if (fr && fr->cap >= len && fr->cap - len <= 1024 + len / 8) {
		c->spare = NULL;
		return fr;
	}
	fr = malloc(sizeof(*fr) + len);
	if (fr)
		fr->cap = len;
	return fr;
}

struct hvtrace_daemon_page *hvt_dclient_take(struct hvtrace_daemon *c)
{
	struct dc_frame *fr = c->cur;

	c->cur = NULL;
	return fr ? &fr->page : NULL;
}

/* Bytes not at a frame: count one error per run of them. */
static void dc_garbage(struct hvtrace_daemon *c)
{
	if (!c->in_garbage)
		c->rx_errors++;
	c->in_garbage = true;
}

/*
 * The header in c->hdr is complete: start its frame, or skip what is not
 * one (to the next place the magic may start).  Return 0, or -ENOMEM.
 */
static int dc_header(struct hvtrace_daemon *c)
{
	static const uint8_t magic[4] = {'H', 'V', 'T', 'P'};
	uint32_t len, magic_v, hsum, i, j;

	memcpy(&magic_v, c->hdr, 4);
	memcpy(&len, c->hdr + 4, 4);
	memcpy(&hsum, c->hdr + 28, 4);
	if (magic_v != HVT_PROTO_MAGIC || hsum != hvt_proto_hsum(c->hdr)) {
		dc_garbage(c);
		for (i = 1; i < HVT_PROTO_HDR_SIZE; i++) {
			for (j = 0; j < 4 && i + j < HVT_PROTO_HDR_SIZE; j++)
				if (c->hdr[i + j] != magic[j])
					break;
			if (j == 4 || i + j == HVT_PROTO_HDR_SIZE)
				break;
		}
		memmove(c->hdr, c->hdr + i, HVT_PROTO_HDR_SIZE - i);
		c->hlen = HVT_PROTO_HDR_SIZE - i;
		return 0;
	}
	c->in_garbage = false;
	if (len < HVT_PROTO_HDR_SIZE || len > HVT_PROTO_MAX_FRAME) {
		c->rx_errors++;
		if (len > HVT_PROTO_MAX_FRAME)
			c->discard = len - HVT_PROTO_HDR_SIZE;
		c->hlen = 0;
		return 0;
	}
	/* Without memory the header stays: a later receive starts it. */
	c->rx = dc_frame_get(c, len);
	if (!c->rx)
		return hvt_err(-ENOMEM, "out of memory for a %u-byte frame",
			       len);
	c->hlen = 0;
	memcpy(c->rx->frame, c->hdr, HVT_PROTO_HDR_SIZE);
	c->rx_len = len;
	c->rx_got = HVT_PROTO_HDR_SIZE;
	return 0;
}

/* c->rx is complete: 1 with @m decoded from it (c->cur), or 0 (skipped). */
static int dc_frame_done(struct hvtrace_daemon *c, struct hvt_msg *m)
{
	struct dc_frame *fr = c->rx;
	struct hvt_proto_dec d;
	struct hvt_frame f;

	c->rx = NULL;
	hvt_proto_dec_init(&d, fr->frame, c->rx_len, c->rx_len);
	hvt_proto_dec_added(&d, c->rx_len);
	if (hvt_proto_dec_next(&d, &f) != 1 ||
	    f.payload != fr->frame + HVT_PROTO_HDR_SIZE ||
	    hvt_msg_decode(&f, m, NULL)) {
		c->rx_errors++;
		dc_frame_put(c, fr);
		return 0;
	}
	c->cur = fr;
	return 1;
}

/*
 * One recvmsg(2) without waiting, and what it completes.  Return: 1 with a
 * message; 0 when bytes came but no whole frame yet; -EAGAIN when none
 * came; or a negative errno.
 */
static int dc_receive(struct hvtrace_daemon *c, struct hvt_msg *m)
{
	uint8_t skip[4096];
	struct iovec iov[2];
	struct msghdr mh;
	size_t want;
	ssize_t n;
	int ret;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	if (c->discard) {
		want = c->discard < sizeof(skip) ? c->discard : sizeof(skip);
		iov[0] = (struct iovec){skip, want};
		mh.msg_iovlen = 1;
	} else if (!c->rx) {
		iov[0] = (struct iovec){c->hdr + c->hlen,
					HVT_PROTO_HDR_SIZE - c->hlen};
		mh.msg_iovlen = 1;
	} else {
		/* The frame's rest, then at most the next header. */
		iov[0] = (struct iovec){c->rx->frame + c->rx_got,
					c->rx_len - c->rx_got};
		iov[1] = (struct iovec){c->hdr + c->hlen,
					HVT_PROTO_HDR_SIZE - c->hlen};
		mh.msg_iovlen = 2;
	}
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT);
	if (n < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return -EAGAIN;
	if (n < 0)
		return hvt_err(-errno, "receiving from hvtraced: %s",
			       strerror(errno));
	if (!n)
		return hvt_err(-ECONNRESET, "hvtraced closed the connection");
	if (c->discard) {
		c->discard -= (uint64_t)n;
		return 0;
	}
	if (!c->rx) {
		c->hlen += (uint32_t)n;
		if (c->hlen < HVT_PROTO_HDR_SIZE)
			return 0;
		ret = dc_header(c);
		if (ret || !c->rx || c->rx_got < c->rx_len)
			return ret;
		return dc_frame_done(c, m); /* a bare header */
	}
	if ((size_t)n <= c->rx_len - c->rx_got) {
		c->rx_got += (uint32_t)n;
	} else {
		c->hlen += (uint32_t)(n - (c->rx_len - c->rx_got));
		c->rx_got = c->rx_len;
	}
	if (c->rx_got < c->rx_len)
		return 0;
	return dc_frame_done(c, m);
}

/* A whole header in c->hdr (read ahead) whose frame is not started yet. */
static int dc_pending_header(struct hvtrace_daemon *c, struct hvt_msg *m)
{
	int ret;

	while (!c->rx && !c->discard && c->hlen == HVT_PROTO_HDR_SIZE) {
		ret = dc_header(c);
		if (ret)
			return ret;
		if (c->rx && c->rx_got == c->rx_len)
			return dc_frame_done(c, m);
	}
	return 0;
}

int hvtrace_daemon_recv(struct hvtrace_daemon *c, struct hvt_msg *m, int timeout_ms)
{
	uint64_t wait = timeout_ms < 0 ? 0 : (uint64_t)timeout_ms;
	uint64_t deadline = dc_now_ms() + wait;

	dc_frame_put(c, c->cur); /* the message returned last */
	c->cur = NULL;
	for (;;) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		uint64_t now;
		int ret;

		ret = dc_pending_header(c, m);
		if (!ret)
			ret = dc_receive(c, m);
		if (ret == 1 || (ret < 0 && ret != -EAGAIN))
			return ret;
		if (!ret)
			continue; /* received some: try again at once */
		now = dc_now_ms();
		if (timeout_ms >= 0 && now >= deadline)
			return 0;
		ret = poll(&pfd, 1,
			   timeout_ms < 0 ? -1 : (int)(deadline - now));
		if (ret < 0 && errno != EINTR)
			return hvt_err(-errno, "poll: %s", strerror(errno));
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
