// SPDX-License-Identifier: MIT
/*
 * hvtraced keeps serving while peers misbehave.  A good agent and an
 * application registered through it are checked after every attack (and
 * during the flood): the daemon answers a tool, the application can
 * register a new event, and a causality trigger round trips through the
 * good agent.  Attacks:
 *
 *   garbage      256 KiB of random bytes, then more until the daemon
 *                drops the connection for protocol errors
 *   oversized    a frame whose valid header claims 100 MiB
 *   half frames  a HELLO cut short, then silence; then a close
 *   flood        a tool sending requests without reading the replies,
 *                in a second process, while the checks run
 *   evil agent   a real area and HELLO, then a flood of registrations,
 *                garbage in the middle, and a close in mid-frame
 *   bad HELLOs   an area descriptor that is not an area; a name taken
 *   chardev      a fake QEMU chardev socket: garbage and cut frames
 *                before the agent's HELLO; the daemon resynchronises
 *                and never hangs up on a guest
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hvtrace.h>

#include "harness.h"
#include "hvtrace-client.h"

static struct hvtrace_daemon *dc;
static struct h_agent good;
static struct hvtc *app;
static unsigned int checks;
static uint32_t rng = 0x12345678;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* Write all (blocking); returns -errno when the daemon hung up. */
static int put(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t w = send(fd, b, len, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		b += w;
		len -= (size_t)w;
	}
	return 0;
}

static int frame(uint8_t *buf, size_t cap, struct hvt_msg *m)
{
	int n = hvt_msg_encode(buf, (uint32_t)cap, m);

	if (n < 0)
		t_fail("encode: %d", n);
	return n;
}

/* The good path still works, end to end. */
static void check(const char *after)
{
	struct hvtg_event ev = HVTG_EVENT_INIT;
	struct hvt_remote_rec rec;
	struct hvt_msg m, r;
	char def[64];
	int ret;

	checks++;
	h_remote(dc, good.name, &rec);
	if (rec.state != HVT_REMOTE_CONNECTED)
		t_fail("after %s: the good agent is not connected", after);
	snprintf(def, sizeof(def), "ok_%u u32 a", checks);
	ret = hvtc_register(app, def, &ev);
	if (ret)
		t_fail("after %s: registration failed: %s", after,
		       hvtc_last_error());
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_TRIGGER_RUN;
	m.chan = good.remote;
	m.u.trigger_run.count = 5;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 10000, NULL, NULL));
	if (r.type != HVT_MSG_TRIGGER_RUN || r.u.trigger_run_reply.status ||
	    r.u.trigger_run_reply.recs.count != 5)
		t_fail("after %s: trigger run failed", after);
}

/* Wait (bounded) until the daemon closed @fd; fail if it does not. */
static void expect_hangup(int fd, const char *what)
{
	uint8_t buf[4096];
	int i;

	for (i = 0; i < 500; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 20) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return;
	}
	t_fail("%s: the daemon kept the connection open", what);
}

static void attack_garbage(void)
{
	static uint8_t junk[256 * 1024];
	int fd = h_connect(), ret = 0;
	size_t i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rnd();
	/* Sprinkle fake magics so the decoder has to work for it. */
	for (i = 0; i + 4 < sizeof(junk); i += 997)
		memcpy(junk + i, "HVTP", 4);
	for (i = 0; i < 8 && !ret; i++)
		ret = put(fd, junk, sizeof(junk));
	expect_hangup(fd, "garbage");
	close(fd);
	check("garbage");
}

static void attack_oversized(void)
{
	static uint8_t buf[1 << 20];
	struct hvt_msg m;
	uint32_t len = 100u << 20, hs;
	int fd = h_connect(), n;

	h_hello_msg(&m, HVT_ROLE_TOOL, NULL);
	n = frame(buf, sizeof(buf), &m);
	t_ok(put(fd, buf, (size_t)n));
	/* A header that checks out but claims 100 MiB. */
	m.type = HVT_MSG_REMOTES;
	m.u.hello.role = 0;
	memset(&m.u, 0, sizeof(m.u));
	n = frame(buf, sizeof(buf), &m);
	memcpy(buf + 4, &len, 4);
	hs = hvt_proto_hsum(buf);
	memcpy(buf + 28, &hs, 4);
	memset(buf + n, 0xa5, sizeof(buf) - (size_t)n);
	put(fd, buf, sizeof(buf));
	put(fd, buf + 64, sizeof(buf) - 64);
	check("an oversized frame (connection still open)");
	close(fd);
	check("an oversized frame");
}

static void attack_half(void)
{
	static uint8_t buf[4096];
	struct hvt_msg m;
	int fd, n;

	h_hello_msg(&m, HVT_ROLE_AGENT, "half");
	n = frame(buf, sizeof(buf), &m);
	fd = h_connect();
	t_ok(put(fd, buf, 20));
	check("half a header (connection open)");
	close(fd);
	fd = h_connect();
	t_ok(put(fd, buf, (size_t)n - 3));
	check("a frame missing its last bytes (connection open)");
	close(fd);
	check("half frames");
}

static void attack_flood(void)
{
	pid_t pid = fork();
	int st, i;

	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		static uint8_t buf[64 * 1024];
		struct hvt_msg m;
		int fd = h_connect(), n, k, len = 0;

		h_hello_msg(&m, HVT_ROLE_TOOL, NULL);
		n = frame(buf, sizeof(buf), &m);
		put(fd, buf, (size_t)n);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_REMOTES;
		for (k = 0; len + 64 < (int)sizeof(buf); k++) {
			m.req = (uint32_t)k + 2;
			len += frame(buf + len, sizeof(buf) - len, &m);
		}
		/* Requests, never a read, for 3 s or until hung up on. */
		uint64_t end = h_now_ns() + 3000000000ull;

		while (h_now_ns() < end)
			if (put(fd, buf, (size_t)len))
				break;
		_exit(0);
	}
	for (i = 0; i < 5; i++) {
		usleep(200000);
		check("a request flood (while it runs)");
	}
	waitpid(pid, &st, 0);
	check("a request flood");
}

static void attack_evil_agent(void)
{
	static uint8_t buf[256 * 1024];
	char area[256];
	struct hvt_remote_rec rec;
	struct hvt_msg m;
	int fd, n, len, k;

	snprintf(area, sizeof(area), "/dev/shm/hvtrace-t%d-evil",
		 (int)getpid());
	fd = h_raw_agent("evil", area);
	h_wait_connected(dc, "evil", 5000);
	check("an agent connected");

	/* Registrations, good and bad, as fast as possible, unread. */
	len = 0;
	for (k = 0; k < 3000; k++) {
		char def[64];

		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_REGISTER;
		m.req = (uint32_t)k + 10;
		m.chan = (uint32_t)k % 7 + 1;
		snprintf(def, sizeof(def), k % 3 ? "evil_%d u32 a" :
						   "evil_%d long a",
			 k);
		m.u.reg.def.ptr = def;
		m.u.reg.def.len = (uint32_t)strlen(def);
		len += frame(buf + len, sizeof(buf) - (size_t)len, &m);
		if (len > (int)sizeof(buf) - 512 || k == 2999) {
			if (put(fd, buf, (size_t)len))
				break;
			len = 0;
		}
	}
	check("an agent's registration flood");
	/* Garbage in mid-stream, then a valid PONG for no PING, then half a
	 * frame and the connection closes under it. */
	for (k = 0; k < 2048; k++)
		buf[k] = (uint8_t)rnd();
	put(fd, buf, 2048);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_PING;
	m.flags = HVT_PF_REPLY;
	m.req = 99999;
	m.u.pong.clock_id = HVT_CLOCK_COUNTER;
	n = frame(buf, sizeof(buf), &m);
	put(fd, buf, (size_t)n);
	/* Keep reading what the daemon answers until it has seen it all
	 * (bounded: 10 s). */
	for (k = 0; k < 1000; k++) {
		uint8_t sink[65536];

		while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
		h_remote(dc, "evil", &rec);
		if (rec.proto_errors >= 2)
			break;
		usleep(10000);
	}
	if (rec.proto_errors < 2)
		t_fail("the evil agent's garbage and stray reply were not "
		       "counted (%llu errors)",
		       (unsigned long long)rec.proto_errors);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REGISTER;
	m.u.reg.def.ptr = "cut_short u32 a";
	m.u.reg.def.len = 15;
	n = frame(buf, sizeof(buf), &m);
	put(fd, buf, (size_t)n / 2);
	close(fd);
	for (k = 0; k < 500; k++) {
		h_remote(dc, "evil", &rec);
		if (rec.state == HVT_REMOTE_DISCONNECTED)
			break;
		usleep(10000);
	}
	if (rec.state != HVT_REMOTE_DISCONNECTED)
		t_fail("the evil agent still counts as connected");
	printf("evil agent: %u events registered, %llu protocol errors "
	       "counted\n",
	       rec.nr_events, (unsigned long long)rec.proto_errors);
	check("an agent that vanished in mid-frame");
}

static void attack_bad_hellos(void)
{
	static uint8_t buf[4096], reply[4096];
	struct hvt_proto_dec d;
	struct hvt_frame f;
	struct hvt_msg m, r;
	char path[300];
	int fd, tfd, n, k, got = 0;

	/* A descriptor that is not an area. */
	snprintf(path, sizeof(path), "%s/not-an-area", h_dir);
	tfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	t_assert(tfd >= 0);
	t_ok(ftruncate(tfd, 1 << 20));
	/* k = 0: zeros (not formatted yet); 1: a header that lies about its
	 * geometry; 2: a good area under a name that is taken. */
	for (k = 0; k < 3; k++) {
		if (k == 1) {
			uint64_t magic = HVT_AREA_MAGIC;
			uint8_t junk[4096];

			for (n = 0; n < (int)sizeof(junk); n++)
				junk[n] = (uint8_t)rnd();
			memcpy(junk, &magic, 8);
			t_eq(pwrite(tfd, junk, sizeof(junk), 0), sizeof(junk));
		}
		if (k == 2) {
			close(tfd);
			snprintf(path, sizeof(path), "%s/good-area", h_dir);
			t_ok(hvtg_area_create(path, 1 << 20, NULL));
			tfd = open(path, O_RDWR | O_CLOEXEC);
			t_assert(tfd >= 0);
		}
		fd = h_connect();
		h_hello_msg(&m, HVT_ROLE_AGENT, k == 2 ? good.name : "notarea");
		m.u.hello.nr_fds = 1;
		n = frame(buf, sizeof(buf), &m);
		t_eq(h_send_with_fd(fd, buf, (size_t)n, tfd), n);
		hvt_proto_dec_init(&d, reply, sizeof(reply), sizeof(reply));
		got = 0;
		while (!got) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			uint8_t *room;
			ssize_t rn;

			if (poll(&p, 1, 10000) <= 0)
				t_fail("no answer to a bad HELLO");
			rn = recv(fd, (hvt_proto_dec_room(&d, &room), room),
				  64, 0);
			if (rn <= 0)
				t_fail("hung up without answering");
			hvt_proto_dec_added(&d, (uint32_t)rn);
			while (hvt_proto_dec_next(&d, &f) == 1)
				if (!hvt_msg_decode(&f, &r, NULL) &&
				    r.type == HVT_MSG_HELLO)
					got = 1;
		}
		t_eq(r.u.hello.status,
		     k == 0 ? -EAGAIN : k == 1 ? -EINVAL : -EADDRINUSE);
		printf("bad HELLO %d refused: %.*s\n", k,
		       (int)r.u.hello.text.len, r.u.hello.text.ptr);
		expect_hangup(fd, "a refused HELLO");
		close(fd);
	}
	close(tfd);
	check("refused HELLOs");
}

static void attack_chardev(void)
{
	static uint8_t buf[64 * 1024];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct hvt_remote_rec rec;
	struct hvt_proto_dec d;
	struct hvt_frame f;
	struct hvt_msg r;
	char dir[80], text[512];
	int lfd, fd, n, k, hellos = 0;

	/* Where QEMU would put the chardev socket of guest "fakevm". */
	snprintf(dir, sizeof(dir), "%s/run", h_dir);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/run/fakevm", h_dir);
	mkdir(dir, 0755);
	if (strlen(dir) + 14 >= sizeof(sa.sun_path))
		t_fail("socket path too long");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.*s/control.sock",
		 (int)(sizeof(sa.sun_path) - 14), dir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	t_assert(lfd >= 0);
	t_ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)));
	t_ok(listen(lfd, 1));
	t_eq(h_result(dc, HVT_MSG_ATTACH, 0, 0, "fakevm", text, sizeof(text)),
	     0);
	fd = accept(lfd, NULL, NULL);
	t_assert(fd >= 0);

	/* The daemon says HELLO first (the guest may be up already). */
	hvt_proto_dec_init(&d, buf, sizeof(buf), sizeof(buf));
	while (!hellos) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint8_t *room;
		ssize_t rn;

		if (poll(&p, 1, 10000) <= 0)
			t_fail("the daemon did not say HELLO on the chardev");
		rn = recv(fd, (hvt_proto_dec_room(&d, &room), room), 512, 0);
		if (rn <= 0)
			t_fail("the daemon hung up the chardev");
		hvt_proto_dec_added(&d, (uint32_t)rn);
		while (hvt_proto_dec_next(&d, &f) == 1)
			if (!hvt_msg_decode(&f, &r, NULL) &&
			    r.type == HVT_MSG_HELLO && r.u.hello.role ==
							       HVT_ROLE_HOST)
				hellos++;
	}
	/* What a guest port delivers after a reconnect: the tail of an old
	 * frame, garbage, half a frame -- then the agent's real HELLO. */
	{
		static uint8_t junk[32 * 1024];
		struct hvt_msg h;

		for (k = 0; k < (int)sizeof(junk); k++)
			junk[k] = (uint8_t)rnd();
		t_ok(put(fd, junk, sizeof(junk)));
		h_hello_msg(&h, HVT_ROLE_AGENT, "fakevm");
		n = frame(junk, sizeof(junk), &h);
		t_ok(put(fd, junk, (size_t)n / 2));
		t_ok(put(fd, junk, (size_t)n));
	}
	for (k = 0; k < 500; k++) {
		h_remote(dc, "fakevm", &rec);
		if (rec.state == HVT_REMOTE_CONNECTED)
			break;
		usleep(10000);
	}
	if (rec.state != HVT_REMOTE_CONNECTED)
		t_fail("the daemon did not resynchronise on the chardev");
	if (!rec.proto_errors)
		t_fail("the chardev garbage was not counted");
	printf("chardev: session up after %llu protocol errors\n",
	       (unsigned long long)rec.proto_errors);
	/* A guest is never hung up on for garbage. */
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint8_t tmp[4096];

		for (k = 0; k < 10; k++)
			if (poll(&p, 1, 20) > 0 &&
			    recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT) == 0)
				t_fail("the daemon hung up on a guest");
	}
	check("garbage on a guest's chardev");
	t_eq(h_result(dc, HVT_MSG_DETACH, 0, 0, "fakevm", text, sizeof(text)),
	     0);
	close(fd);
	close(lfd);
	check("a guest detached");
}

int main(void)
{
	dc = h_start(NULL);
	h_agent_start(&good, "good", NULL);
	if (hvtc_open(good.sock, &app))
		t_fail("hvtc_open: %s", hvtc_last_error());
	check("start");
	attack_garbage();
	attack_oversized();
	attack_half();
	attack_flood();
	attack_evil_agent();
	attack_bad_hellos();
	attack_chardev();
	printf("%u liveness checks passed\n", checks);
	hvtc_close(app);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
