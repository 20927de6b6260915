// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the daemon client's receiver (hvtrace_daemon_recv()) on a
 * byte stream from a peer that may be hostile, as hvtraced's socket is
 * read.
 *
 * A private listening socket stands in for hvtraced.  Each input connects
 * a client (a thread accepts and answers its HELLO), and the peer writes the input in pieces whose sizes the input
 * chooses (first byte: a seed for them), then closes.  The client receives
 * until the connection ends.  Every other PAGE the client returns is taken
 * (hvt_dclient_take()) and kept until the end, as the feed keeps pages.
 *
 * Oracle beyond the sanitizers: every message encodes again (its fields
 * are in range: the receiver handed over only checked frames), a kept
 * page's sub-buffer still holds the bytes it had when it was returned
 * (nothing received later moved or overwrote it), and the stream always
 * ends in -ECONNRESET (no hang, no other error).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace-internal.h>
#include <hvtrace-daemon.h>

#include "dfeed.h"
#include "hvt_fuzz.h"

uint64_t hvt_host_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define KEEP 64

static char sock_path[108];
static int lfd = -1;
static uint8_t ebuf[HVT_PROTO_MAX_FRAME];

static char sock_dir[64];

static void cleanup(void)
{
	unlink(sock_path);
	rmdir(sock_dir);
}

static void listen_once(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (lfd >= 0)
		return;
	strcpy(sock_dir, "/tmp/hvt-fuzz-dclient.XXXXXX");
	fuzz_assert(mkdtemp(sock_dir));
	snprintf(sock_path, sizeof(sock_path), "%s/s", sock_dir);
	strcpy(sa.sun_path, sock_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fuzz_assert(lfd >= 0);
	fuzz_assert(!bind(lfd, (struct sockaddr *)&sa, sizeof(sa)));
	fuzz_assert(!listen(lfd, 4));
	atexit(cleanup);
}

/* hvtraced's side of the HELLO: accept, answer request 1. */
static void *peer_hello(void *arg)
{
	int *sfd = arg, n;
	struct hvt_msg m;

	*sfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	fuzz_assert(*sfd >= 0);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_HELLO;
	m.flags = HVT_PF_REPLY;
	m.req = 1;
	m.u.hello.min_version = HVT_PROTO_MIN_VERSION;
	m.u.hello.max_version = HVT_PROTO_VERSION;
	m.u.hello.role = HVT_ROLE_DAEMON;
	n = hvt_msg_encode(ebuf, sizeof(ebuf), &m);
	fuzz_assert(n > 0);
	fuzz_assert(write(*sfd, ebuf, (size_t)n) == n);
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct {
		struct hvtrace_daemon_page *p;
		uint8_t copy[64];
		uint32_t n;
	} keep[KEEP];
	unsigned int nr_keep = 0, i, seed = size ? data[0] : 0, pages = 0;
	struct hvtrace_daemon *c;
	struct hvt_msg m;
	size_t off = size ? 1 : 0;
	int sfd = -1, ret;
	pthread_t th;

	listen_once();
	fuzz_assert(!pthread_create(&th, NULL, peer_hello, &sfd));
	ret = hvtrace_daemon_open(sock_path, &c);
	fuzz_assert(!pthread_join(th, NULL));
	fuzz_assert(!ret);
	if (off == size)
		close(sfd);
	for (;;) {
		/* Write a piece (what the socket takes), then receive. */
		if (off < size) {
			size_t piece = 1 + (seed = seed * 1103515245u + 12345u) %
						   (size - off < 700 ? size - off :
								     700);
			ssize_t n = write(sfd, data + off, piece);

			fuzz_assert(n > 0 || errno == EAGAIN);
			off += n > 0 ? (size_t)n : 0;
			if (off == size)
				close(sfd);
		}
		ret = hvtrace_daemon_recv(c, &m, 0);
		if (ret == 0)
			continue;
		if (ret < 0) {
			fuzz_assert(ret == -ECONNRESET);
			break;
		}
		/* One whole, checked frame: it encodes back the same. */
		{
			int n = hvt_msg_encode(ebuf, sizeof(ebuf), &m);

			fuzz_assert(n >= HVT_PROTO_HDR_SIZE);
		}
		if (m.type == HVT_MSG_PAGE && !(m.flags & HVT_PF_REPLY) &&
		    (pages++ & 1) && nr_keep < KEEP) {
			struct hvtrace_daemon_page *p = hvt_dclient_take(c);

			fuzz_assert(p);
			fuzz_assert(!hvt_dclient_take(c));
			keep[nr_keep].p = p;
			keep[nr_keep].n = m.u.page.len < 64 ? m.u.page.len : 64;
			p->data = m.u.page.data;
			memcpy(keep[nr_keep].copy, p->data, keep[nr_keep].n);
			nr_keep++;
		}
	}
	hvtrace_daemon_close(c);
	for (i = 0; i < nr_keep; i++) {
		fuzz_assert(!memcmp(keep[i].copy, keep[i].p->data,
				    keep[i].n));
		free(keep[i].p);
	}
	return 0;
}
