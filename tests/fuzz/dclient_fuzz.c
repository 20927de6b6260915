// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the daemon client's receiver (hvtrace_daemon_recv()) on a
 * byte stream from a peer that may be hostile, as hvtraced's socket is
 * read.
 *
 * A private listening socket stands in for hvtraced.  Each input connects
 * a client (a thread accepts and answers its HELLO), and the peer writes the
 * input in pieces whose sizes the input chooses (first byte: a seed for them),
 * then closes.  The client receives until the connection ends.
 *
 * Oracle beyond the sanitizers: every message encodes again (its fields
 * are in range: the receiver handed over only checked frames); where the
 * protocol's stream decoder (hvt_proto_dec, fed the same bytes at once)
 * finds no error, the client returns exactly its frames, in order,
 * however the bytes were split; and the stream always ends in
 * -ECONNRESET (no hang, no other error).
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

#include "hvt_fuzz.h"

uint64_t hvt_host_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char sock_path[108];
static int lfd = -1;
static uint8_t ebuf[HVT_PROTO_MAX_FRAME];
static uint8_t dbuf[HVT_PROTO_MAX_FRAME];
/* The reference decoder's frames: offsets into refs[], then the bytes. */
#define MAX_REF 256
static uint8_t refs[1 << 20];
static uint32_t ref_off[MAX_REF + 1];

/*
 * The frames hvt_proto_dec accepts from @data, stored in refs[]; their
 * number, or -1 when it found an error (or more than MAX_REF frames).
 */
static int reference(const uint8_t *data, size_t size)
{
	struct hvt_proto_dec d;
	struct hvt_frame f;
	struct hvt_msg m;
	size_t off = 0;
	int nr = 0, ret;

	fuzz_assert(!hvt_proto_dec_init(&d, dbuf, sizeof(dbuf), sizeof(dbuf)));
	ref_off[0] = 0;
	while (off < size || d.tail > d.head) {
		off += hvt_proto_dec_feed(&d, data + off,
					  (uint32_t)(size - off));
		ret = hvt_proto_dec_next(&d, &f);
		if (ret < 0 || nr == MAX_REF)
			return -1;
		if (!ret) {
			if (off == size)
				break;
			continue;
		}
		if (hvt_msg_decode(&f, &m, NULL))
			continue; /* a frame, not a message: skipped by both */
		if (ref_off[nr] + HVT_PROTO_HDR_SIZE + f.len > sizeof(refs))
			return -1;
		memcpy(refs + ref_off[nr], f.payload - HVT_PROTO_HDR_SIZE,
		       HVT_PROTO_HDR_SIZE + f.len);
		ref_off[nr + 1] = ref_off[nr] + HVT_PROTO_HDR_SIZE + f.len;
		nr++;
	}
	return d.errors ? -1 : nr;
}

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
	/* In the current folder: the fuzz runner's scratch folder, which it
	 * removes (libFuzzer may end without running atexit handlers). */
	strcpy(sock_dir, "hvt-dclient.XXXXXX");
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
	unsigned int seed = size ? data[0] : 0;
	int nr_ref = reference(data + (size ? 1 : 0), size ? size - 1 : 0);
	int got = 0;
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
		/* (A zero timeout decodes only what the client holds.) */
		ret = hvtrace_daemon_recv(c, &m, off < size ? 1 : 1000);
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
			/* A clean stream: the reference's next frame. */
			if (nr_ref >= 0) {
				fuzz_assert(got < nr_ref);
				fuzz_assert((uint32_t)n ==
					    ref_off[got + 1] - ref_off[got]);
				fuzz_assert(!memcmp(ebuf, refs + ref_off[got],
						    (size_t)n));
			}
			got++;
		}
	}
	hvtrace_daemon_close(c);
	fuzz_assert(nr_ref < 0 || got == nr_ref);
	return 0;
}
