// SPDX-License-Identifier: MIT
/*
 * hvtraced: a rig guest's relay-free doorbell (docs/design.md, "Waking
 * the reader").
 *
 * A guest started by the rig has an ivshmem-doorbell device served by
 * hvtrace-ivshmem (host/ivshmem/main.c) in its runtime folder.  When the
 * chardev transport connects a guest's control socket, it asks for the
 * host's eventfd on RUN_DIR/NAME/bell.sock: one message, HVT_BELL_MAGIC
 * with the descriptor.  A guest writer's store to the device's doorbell
 * register makes QEMU signal that eventfd, and its epoll event here is a
 * DOORBELL of the remote (wake.c), as if the agent had relayed it, with
 * no guest process scheduled on the way.
 *
 * No bell.sock (a guest started with --no-bell, or not by the rig, or a
 * launcher without hvtrace-ivshmem): nothing changes, the agent relays.
 * What arrives on the socket is checked: the magic, one descriptor, and
 * that it is an eventfd; anything else is refused with a log line.
 * Nothing here waits: the socket is non-blocking, a full backlog is
 * given up on (the agent relays) and the answer is read when the loop's
 * epoll says it came, so a server that is stuck or hostile never stalls
 * the daemon.
 */
#include <errno.h>
#include <limits.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"

static void bell_event(struct conn *c, uint32_t events)
{
	uint64_t n;

	(void)events;
	/* An eventfd read gives the count and resets it; the rings it
	 * counts are one wake (wake.c decides what it is worth, and stops
	 * watching the eventfd after a stale one). */
	if (read(c->fd, &n, sizeof(n)) != (ssize_t)sizeof(n) || !c->remote)
		return;
	c->remote->wake.bell_rings += n;
	wake_doorbell(c->remote);
}

static const struct conn_ops bell_ops = {
	.name = "bell",
	.event = bell_event,
};

static bool bell_is_eventfd(int fd)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return !strcmp(target, "anon_inode:[eventfd]");
}

/*
 * The eventfd from @sock, -EAGAIN while nothing has come yet, or another
 * -errno.  Never waits: the socket is non-blocking and read with
 * MSG_DONTWAIT, and a message cut short is refused, not waited for.
 */
static int bell_recv(int sock)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	uint64_t magic = 0;
	struct iovec io = {.iov_base = &magic, .iov_len = sizeof(magic)};
	struct msghdr m = {.msg_iov = &io,
			   .msg_iovlen = 1,
			   .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *ch;
	int fds[2], nr = 0, i;
	ssize_t n;

	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (!n)
		return -ECONNRESET;
	for (ch = CMSG_FIRSTHDR(&m); ch; ch = CMSG_NXTHDR(&m, ch)) {
		size_t k;

		if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
			continue;
		for (k = 0;
		     k < (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int) && nr < 2;
		     k++)
			memcpy(&fds[nr++], CMSG_DATA(ch) + k * sizeof(int),
			       sizeof(int));
	}
	if (n == (ssize_t)sizeof(magic) && magic == HVT_BELL_MAGIC && nr == 1 &&
	    !(m.msg_flags & MSG_CTRUNC) && bell_is_eventfd(fds[0]))
		return fds[0];
	for (i = 0; i < nr; i++)
		close(fds[i]);
	return -EPROTO;
}

/* Take @fd, the doorbell eventfd of @r. */
static void bell_adopt(struct remote *r, int fd)
{
	struct conn *c = conn_new(fd, &bell_ops);

	if (!c) {
		close(fd);
		return;
	}
	c->remote = r;
	r->wake.bell = c;
	d_log("remote '%s': doorbell eventfd received", r->name);
}

/* The server's socket, until its one message comes (the loop's epoll
 * says when): a server that never sends holds nothing up. */
static void bell_wait_event(struct conn *c, uint32_t events)
{
	struct remote *r = c->remote;
	int fd = bell_recv(c->fd);

	if (fd == -EAGAIN && !(events & (EPOLLHUP | EPOLLERR)))
		return; /* not yet */
	conn_close(c);	/* clears r->wake.bell_wait */
	if (fd < 0) {
		if (r)
			d_log("remote '%s': the doorbell server sent no "
			      "eventfd (%s): the agent relays",
			      r->name,
			      strerror(fd == -EAGAIN ? ECONNRESET : -fd));
		return;
	}
	if (!r) {
		close(fd);
		return;
	}
	bell_adopt(r, fd);
}

static void bell_wait_closed(struct conn *c)
{
	if (c->remote && c->remote->wake.bell_wait == c)
		c->remote->wake.bell_wait = NULL;
	c->remote = NULL;
}

static const struct conn_ops bell_wait_ops = {
	.name = "bell-wait",
	.event = bell_wait_event,
	.closed = bell_wait_closed,
};

void bell_close(struct remote *r)
{
	if (r->wake.bell) {
		r->wake.bell->remote = NULL;
		conn_close(r->wake.bell);
		r->wake.bell = NULL;
	}
	if (r->wake.bell_wait)
		conn_close(r->wake.bell_wait); /* clears it */
}

/*
 * Ask RUN_DIR/NAME/bell.sock at @path for @r's doorbell eventfd, without
 * ever blocking the daemon's loop: the socket is non-blocking, a server
 * whose backlog is full (connect() says EAGAIN) is given up on for this
 * connection (the agent relays), and its answer is read when epoll says
 * it came (bell_wait_event()).
 */
void bell_connect(struct remote *r, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct conn *c;
	int sock, fd;

	bell_close(r);
	if (strlen(path) >= sizeof(sa.sun_path) || access(path, F_OK))
		return; /* no doorbell device: the agent relays */
	strcpy(sa.sun_path, path);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sock < 0)
		return;
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) &&
	    errno != EINPROGRESS) {
		d_log("remote '%s': no doorbell from %s: %s (the agent "
		      "relays)",
		      r->name, path,
		      errno == EAGAIN ? "its backlog is full" :
					strerror(errno));
		close(sock);
		return;
	}
	/* Connected (or, EINPROGRESS, soon: epoll reports either way). */
	fd = bell_recv(sock);
	if (fd >= 0) {
		close(sock);
		bell_adopt(r, fd);
		return;
	}
	if (fd != -EAGAIN) {
		d_log("remote '%s': %s sent no doorbell eventfd (%s): the "
		      "agent relays",
		      r->name, path, strerror(-fd));
		close(sock);
		return;
	}
	c = conn_new(sock, &bell_wait_ops);
	if (!c) {
		close(sock);
		return;
	}
	c->remote = r;
	r->wake.bell_wait = c;
	d_dbg("remote '%s': waiting for the doorbell eventfd from %s", r->name,
	      path);
}
