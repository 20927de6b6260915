// SPDX-License-Identifier: MIT
/*
 * issue 22 point 3: a local agent's read-only area descriptor must not
 * become read-write.  hvtraced (root) re-opens the descriptor an agent
 * passes with HELLO through /proc/self/fd to own the area's control page;
 * an agent that passes its area opened O_RDONLY must be refused with a
 * message saying that it must pass it O_RDWR, and the file -- its control
 * page above all -- must be left byte for byte as it was.  The same area
 * passed O_RDWR is then accepted (the check is the access mode, nothing
 * else about the area).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace-guest.h>

#include "harness.h"

#define AREA_SIZE (1u << 20)

/* HELLO as agent @name with @afd; the daemon's answer's status, its
 * text in @text. */
static int hello_with(const char *name, int afd, char *text, size_t size)
{
	static uint8_t buf[4096], reply[4096];
	struct hvt_proto_dec d;
	struct hvt_frame f;
	struct hvt_msg m, r;
	int fd, n;

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_HELLO;
	m.req = 1;
	m.u.hello.min_version = HVT_PROTO_MIN_VERSION;
	m.u.hello.max_version = HVT_PROTO_VERSION;
	m.u.hello.role = HVT_ROLE_AGENT;
	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.name.ptr = name;
	m.u.hello.name.len = (uint32_t)strlen(name);
	m.u.hello.nr_fds = 1;
	n = hvt_msg_encode(buf, sizeof(buf), &m);
	t_assert(n > 0);
	fd = h_connect();
	t_eq(h_send_with_fd(fd, buf, (size_t)n, afd), n);
	hvt_proto_dec_init(&d, reply, sizeof(reply), sizeof(reply));
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint8_t *room;
		ssize_t rn;

		if (poll(&p, 1, 10000) <= 0)
			t_fail("%s: no answer to HELLO", name);
		rn = recv(fd, (hvt_proto_dec_room(&d, &room), room), 64, 0);
		if (rn <= 0)
			t_fail("%s: hung up without answering", name);
		hvt_proto_dec_added(&d, (uint32_t)rn);
		while (hvt_proto_dec_next(&d, &f) == 1)
			if (!hvt_msg_decode(&f, &r, NULL) &&
			    r.type == HVT_MSG_HELLO) {
				snprintf(text, size, "%.*s",
					 (int)r.u.hello.text.len,
					 r.u.hello.text.ptr);
				close(fd);
				return r.u.hello.status;
			}
	}
}

static void read_all(const char *path, uint8_t *buf)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	t_assert(fd >= 0);
	t_eq(pread(fd, buf, AREA_SIZE, 0), AREA_SIZE);
	close(fd);
}

int main(void)
{
	static uint8_t before[AREA_SIZE], after[AREA_SIZE];
	struct hvtrace_daemon *dc = h_start(NULL);
	struct hvt_remote_rec rec;
	char area[300], text[512];
	size_t i;
	int fd, st;

	snprintf(area, sizeof(area), "%s/ro-area", h_dir);
	t_ok(hvtg_area_create(area, AREA_SIZE, NULL));
	read_all(area, before);

	/* Read-only: refused, and not written through. */
	fd = open(area, O_RDONLY | O_CLOEXEC);
	t_assert(fd >= 0);
	st = hello_with("rofd", fd, text, sizeof(text));
	close(fd);
	printf("HELLO with an O_RDONLY area: status %d: %s\n", st, text);
	if (st == 0)
		t_fail("hvtraced accepted an area descriptor opened read-only "
		       "(it re-opened it read-write)");
	t_eq(st, -EACCES);
	if (!strstr(text, "O_RDWR"))
		t_fail("the refusal does not say what to pass: %s", text);
	read_all(area, after);
	for (i = 0; i < AREA_SIZE && before[i] == after[i]; i++)
		;
	if (i < AREA_SIZE)
		t_fail("the read-only area changed at offset 0x%zx", i);
	if (!hvtrace_daemon_find_remote(dc, "rofd", &rec))
		t_fail("a remote 'rofd' exists after the refusal");

	/* The same area read-write: accepted. */
	fd = open(area, O_RDWR | O_CLOEXEC);
	t_assert(fd >= 0);
	st = hello_with("rwfd", fd, text, sizeof(text));
	close(fd);
	printf("HELLO with an O_RDWR area: status %d %s\n", st, text);
	t_eq(st, 0);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
