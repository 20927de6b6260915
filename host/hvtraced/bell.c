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
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"

#define BELL_WAIT_MS 200 /* for the server's one message */

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

/* The eventfd from @sock, or -errno. */
static int bell_recv(int sock)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	struct pollfd p = {.fd = sock, .events = POLLIN};
	uint64_t magic = 0;
	struct iovec io = {.iov_base = &magic, .iov_len = sizeof(magic)};
	struct msghdr m = {.msg_iov = &io,
			   .msg_iovlen = 1,
			   .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *ch;
	int fds[2], nr = 0, i;
	ssize_t n;

	if (poll(&p, 1, BELL_WAIT_MS) != 1)
		return -ETIMEDOUT;
	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
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

struct conn *bell_connect(struct remote *r, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct conn *c;
	int sock, fd;

	if (strlen(path) >= sizeof(sa.sun_path) || access(path, F_OK))
		return NULL; /* no doorbell device: the agent relays */
	strcpy(sa.sun_path, path);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return NULL;
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa))) {
		d_log("remote '%s': no doorbell from %s: %s (the agent "
		      "relays)",
		      r->name, path, strerror(errno));
		close(sock);
		return NULL;
	}
	fd = bell_recv(sock);
	close(sock);
	if (fd < 0) {
		d_log("remote '%s': %s sent no doorbell eventfd (%s): the "
		      "agent relays",
		      r->name, path, strerror(-fd));
		return NULL;
	}
	c = conn_new(fd, &bell_ops);
	if (!c) {
		close(fd);
		return NULL;
	}
	c->remote = r;
	d_log("remote '%s': doorbell eventfd from %s", r->name, path);
	return c;
}
