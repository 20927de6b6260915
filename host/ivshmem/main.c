// SPDX-License-Identifier: MIT
/*
 * hvtrace-ivshmem - the doorbell server of one rig guest (docs/design.md,
 * "Waking the reader").
 *
 * QEMU's ivshmem-doorbell device gives the guest a register (BAR0,
 * offset 12) whose write signals an eventfd of a peer: no guest process
 * has to wake up and relay it.  QEMU gets those eventfds from a server
 * over a UNIX socket (QEMU's ivshmem protocol, docs/specs/ivshmem-spec
 * in QEMU's tree).  This is that server, for one guest, started by the
 * launcher's supervisor before QEMU:
 *
 *   QEMU ---connects---> DIR/ivshmem.sock
 *                        version 0, "you are peer 1", the shared memory
 *                        (a sealed 4 KiB memfd, unused), peer 0's vector 0
 *                        (the host's eventfd), peer 1's vector 0
 *   hvtraced -connects-> DIR/bell.sock
 *                        one 8-byte message, HVT_BELL_MAGIC, with the
 *                        host's eventfd (SCM_RIGHTS), then closed
 *
 *   guest writer: *(BAR0 + 12) = (0 << 16) | 0  ->  QEMU: eventfd_write()
 *   on the host's eventfd  ->  hvtraced's epoll
 *
 * Both sockets are 0600 in the guest's runtime folder.  The server keeps
 * the eventfds for the guest's life, so a restarted hvtraced gets the
 * same one, and a QEMU that boots again (the launcher's boot retry) gets
 * the same setup.  It serves one QEMU at a time and ends on SIGTERM,
 * SIGINT, or when its parent (the supervisor) dies.
 *
 *   hvtrace-ivshmem DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <hvtrace/abi.h>

#include "hvt_util.h"

#define IVS_SHM_SIZE 4096 /* QEMU wants a power of two; nothing uses it */

static volatile sig_atomic_t ivs_stop;

static void ivs_on_signal(int sig)
{
	(void)sig;
	ivs_stop = 1;
}

/* One ivshmem protocol message: a little-endian int64, with @fd or none. */
static int ivs_send(int sock, int64_t v, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec io = {.iov_base = &v, .iov_len = sizeof(v)};
	struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (fd >= 0) {
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(sock, &m, MSG_NOSIGNAL) != (ssize_t)sizeof(v))
		return -errno;
	return 0;
}

static int ivs_listen(const char *dir, const char *leaf)
{
	struct sockaddr_un sa;
	char path[sizeof(sa.sun_path)];
	int fd, ret;

	if (snprintf(path, sizeof(path), "%s/%s", dir, leaf) >=
	    (int)sizeof(path)) {
		hvt_util_log("%s/%s: path too long for a socket", dir, leaf);
		return -ENAMETOOLONG;
	}
	ret = hvt_util_sock_prepare(path, &sa);
	if (ret) {
		hvt_util_log("%s: %s", path, strerror(-ret));
		return ret;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, 0600) ||
	    listen(fd, 4)) {
		ret = -errno;
		hvt_util_log("%s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

/* QEMU's setup: version, its id, the memory, then each peer's vectors. */
static int ivs_setup_qemu(int sock, int shm, int host_ev, int guest_ev)
{
	int ret;

	ret = ivs_send(sock, 0, -1);
	if (!ret)
		ret = ivs_send(sock, HVT_BELL_GUEST_ID, -1);
	if (!ret)
		ret = ivs_send(sock, -1, shm);
	if (!ret)
		ret = ivs_send(sock, HVT_BELL_HOST_PEER, host_ev);
	if (!ret)
		ret = ivs_send(sock, HVT_BELL_GUEST_ID, guest_ev);
	return ret;
}

static int ivs_shm(void)
{
	int fd = memfd_create("hvtrace-ivshmem",
			      MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, IVS_SHM_SIZE) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

static const char ivs_usage[] =
	"usage: hvtrace-ivshmem DIR\n"
	"       hvtrace-ivshmem --help\n"
	"\n"
	"Serve one rig guest's ivshmem-doorbell: QEMU connects to\n"
	"DIR/ivshmem.sock for the device's memory and eventfds, hvtraced to\n"
	"DIR/bell.sock for the host's doorbell eventfd.  The launcher of\n"
	"'hvtrace guest start' runs it; it is not meant to be run by hand.\n"
	"\n"
	"  -h, --help   this text\n";

int main(int argc, char **argv)
{
	int qlis, hlis, shm, host_ev, guest_ev, qemu = -1;
	struct sigaction sa = {.sa_handler = ivs_on_signal};
	const char *dir;
	uint64_t served = 0;

	hvt_util_log_setup("hvtrace-ivshmem", 0);
	if (argc == 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(ivs_usage, stdout);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		if (argc < 2)
			fprintf(stderr, "hvtrace-ivshmem: which folder? "
					"(hvtrace-ivshmem DIR)\n");
		else if (argv[1][0] == '-')
			fprintf(stderr,
				"hvtrace-ivshmem: unknown option '%s'\n",
				argv[1]);
		else
			fprintf(stderr, "hvtrace-ivshmem: unexpected '%s'\n",
				argv[2]);
		fprintf(stderr, "Run 'hvtrace-ivshmem --help' for usage.\n");
		return 2;
	}
	dir = argv[1];
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (getppid() == 1)
		return 1; /* the supervisor is gone already */

	shm = ivs_shm();
	host_ev = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	guest_ev = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (shm < 0 || host_ev < 0 || guest_ev < 0) {
		hvt_util_log("cannot create the doorbell's memory or "
			     "eventfds: %s",
			     strerror(shm < 0 ? -shm : errno));
		return 1;
	}
	hlis = ivs_listen(dir, "bell.sock");
	qlis = hlis < 0 ? -1 : ivs_listen(dir, "ivshmem.sock");
	if (hlis < 0 || qlis < 0)
		return 1;

	while (!ivs_stop) {
		struct pollfd p[3] = {
			{.fd = qlis, .events = POLLIN},
			{.fd = hlis, .events = POLLIN},
			{.fd = qemu, .events = POLLIN},
		};
		int fd;

		if (poll(p, qemu >= 0 ? 3 : 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			hvt_util_log("poll: %s", strerror(errno));
			break;
		}
		if (p[0].revents) {
			fd = accept4(qlis, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0 && qemu >= 0) {
				/* One guest, one QEMU at a time. */
				hvt_util_log("a second QEMU connected while "
					     "one is served: refused");
				close(fd);
			} else if (fd >= 0 &&
				   ivs_setup_qemu(fd, shm, host_ev, guest_ev)) {
				hvt_util_log("QEMU's setup: %s",
					     strerror(errno));
				close(fd);
			} else if (fd >= 0) {
				qemu = fd;
			}
		}
		if (p[1].revents) {
			fd = accept4(hlis, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				/* One message and done: never blocks. */
				if (ivs_send(fd, (int64_t)HVT_BELL_MAGIC,
					     host_ev))
					hvt_util_log("bell.sock: %s",
						     strerror(errno));
				else
					served++;
				close(fd);
			}
		}
		if (qemu >= 0 && p[2].revents) {
			char b[64];
			ssize_t n = read(qemu, b, sizeof(b));

			/* QEMU sends nothing; EOF: it quit (a boot retry
			 * connects again). */
			if (n == 0 ||
			    (n < 0 && errno != EAGAIN && errno != EINTR)) {
				close(qemu);
				qemu = -1;
			}
		}
	}
	hvt_util_dbg("stopping; the host's eventfd was handed out %llu times",
		     (unsigned long long)served);
	return 0;
}
