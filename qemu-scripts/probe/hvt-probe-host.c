// SPDX-License-Identifier: MIT
/*
 * hvt-probe-host: host side of the QEMU rig's plumbing probe.
 *
 * Checks what hvt-probe wrote into a guest's trace area, as seen through
 * the host's file (/dev/shm/hvtrace-NAME), and drives the probe protocol
 * (hvt-probe.h) over the guest's control socket: HELLO, a nonce written
 * by the host into the area and read back by the guest, echoed lines,
 * BYE.
 *
 *   hvt-probe-host --area FILE [--sock PATH] [--seed N] [--count N]
 *                  [--echo N] [--timeout SECONDS]
 *
 * Without --sock only the area is checked (e.g. a kept area after the
 * guest is gone).  The area is written by another context: every field is
 * bounded before use.  Exit 0 when every check passed, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hvt-probe.h"

struct host {
	const char *area_path;
	const char *sock_path;
	uint64_t seed, count;
	int have_seed, have_count;
	unsigned int echo;
	int timeout_ms;

	uint8_t *area;
	uint64_t area_size;
	int fd;
	char buf[HVT_PROBE_LINE_MAX];
	size_t buf_len;
};

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("hvt-probe-host: FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void area_map(struct host *h)
{
	enum hvt_probe_map_step step;
	int ret;

	ret = hvt_probe_area_map(h->area_path, &h->area, &h->area_size, &step);
	if (!ret)
		return;
	switch (step) {
	case HVT_PROBE_MAP_OPEN:
		fail("cannot open the area file %s: %s", h->area_path,
		     strerror(-ret));
	case HVT_PROBE_MAP_STAT:
		fail("cannot stat %s: %s", h->area_path, strerror(-ret));
	case HVT_PROBE_MAP_SMALL:
		fail("area file %s has %" PRIu64 " bytes, fewer than the probe's %u",
		     h->area_path, h->area_size, HVT_PROBE_MIN_AREA);
	case HVT_PROBE_MAP_MMAP:
		break;
	}
	fail("cannot map %s: %s", h->area_path, strerror(-ret));
}

/* Check header, counter and both pattern ranges; print what was found. */
static void area_check(struct host *h)
{
	struct hvt_probe_hdr hdr;
	const uint8_t *last;
	uint32_t state;
	uint64_t i;

	/*
	 * Acquire: pairs with the release store of DONE in hvt-probe's
	 * area_write(); the rest of the area is read after it.
	 */
	state = __atomic_load_n(&((struct hvt_probe_hdr *)h->area)->state,
				__ATOMIC_ACQUIRE);
	/* Copy before parsing: the guest may still be writing. */
	memcpy(&hdr, h->area, sizeof(hdr));
	if (memcmp(hdr.magic, HVT_PROBE_MAGIC, sizeof(hdr.magic)))
		fail("no probe header at offset 0 of %s (magic %02x %02x %02x %02x ...)",
		     h->area_path, (uint8_t)hdr.magic[0], (uint8_t)hdr.magic[1],
		     (uint8_t)hdr.magic[2], (uint8_t)hdr.magic[3]);
	if (hdr.version != HVT_PROBE_VERSION)
		fail("probe header version %u, expected %u", hdr.version,
		     HVT_PROBE_VERSION);
	if (state != HVT_PROBE_STATE_DONE)
		fail("probe state %u, expected %u (done)", state,
		     HVT_PROBE_STATE_DONE);
	if (hdr.area_size != h->area_size)
		fail("the guest saw a %" PRIu64 "-byte area, the host file has %" PRIu64,
		     hdr.area_size, h->area_size);
	if (h->have_seed && hdr.seed != h->seed)
		fail("area holds seed %" PRIu64 ", expected %" PRIu64
		     " (another guest's area?)",
		     hdr.seed, h->seed);
	if (h->have_count && hdr.count != h->count)
		fail("area says count %" PRIu64 ", expected %" PRIu64, hdr.count,
		     h->count);
	if (hdr.counter != hdr.count)
		fail("counter is %" PRIu64 ", expected %" PRIu64, hdr.counter,
		     hdr.count);
	for (i = 0; i < HVT_PROBE_PATTERN_LEN; i++) {
		uint8_t want = hvt_probe_byte(hdr.seed, i);
		uint8_t got = h->area[HVT_PROBE_PATTERN_OFF + i];

		if (got != want)
			fail("pattern byte at offset %" PRIu64 " is 0x%02x, expected 0x%02x",
			     HVT_PROBE_PATTERN_OFF + i, got, want);
	}
	last = h->area + h->area_size - HVT_PROBE_PAGE;
	for (i = 0; i < HVT_PROBE_PAGE; i++) {
		uint8_t want = hvt_probe_byte(~hdr.seed, i);

		if (last[i] != want)
			fail("last-page byte at offset %" PRIu64 " is 0x%02x, expected 0x%02x",
			     h->area_size - HVT_PROBE_PAGE + i, last[i], want);
	}
	printf("hvt-probe-host: area %s: %" PRIu64 " bytes, seed %" PRIu64
	       ", counter %" PRIu64 ", %u + %u pattern bytes match\n",
	       h->area_path, h->area_size, hdr.seed, hdr.counter,
	       HVT_PROBE_PATTERN_LEN, HVT_PROBE_PAGE);
}

static void sock_connect(struct host *h)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = hvt_probe_now_ms() + h->timeout_ms;
	int err = 0;

	if (strlen(h->sock_path) >= sizeof(sa.sun_path))
		fail("socket path %s is too long", h->sock_path);
	strcpy(sa.sun_path, h->sock_path);
	while (hvt_probe_now_ms() < deadline) {
		h->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (h->fd < 0)
			fail("socket: %s", strerror(errno));
		if (!connect(h->fd, (struct sockaddr *)&sa, sizeof(sa)))
			return;
		err = errno;
		close(h->fd);
		h->fd = -1;
		usleep(50000);
	}
	fail("cannot connect to %s: %s (is the guest running?)", h->sock_path,
	     strerror(err));
}

static void sock_send(struct host *h, const char *line)
{
	size_t len = strlen(line), off = 0;

	while (off < len) {
		ssize_t n = send(h->fd, line + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("writing to %s: %s", h->sock_path, strerror(errno));
		off += n;
	}
}

static void sock_recv(struct host *h, char *line, size_t size,
		      const char *waiting_for)
{
	int64_t deadline = hvt_probe_now_ms() + h->timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = h->fd, .events = POLLIN };
		int64_t left;
		ssize_t n;

		n = hvt_probe_line_take(h->buf, &h->buf_len, sizeof(h->buf),
					line, size);
		if (n > 0)
			return;
		if (n < 0)
			fail("a line from the guest is longer than %zu bytes",
			     size - 1);
		left = deadline - hvt_probe_now_ms();
		if (left <= 0)
			fail("no %s from the guest within %d ms", waiting_for,
			     h->timeout_ms);
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno != EINTR)
			fail("poll: %s", strerror(errno));
		if (n <= 0)
			continue;
		n = recv(h->fd, h->buf + h->buf_len,
			 sizeof(h->buf) - h->buf_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("reading %s: %s", h->sock_path, strerror(errno));
		if (n == 0)
			fail("the guest closed the control channel while the host waited for %s",
			     waiting_for);
		h->buf_len += n;
	}
}

static uint64_t rand64(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void talk(struct host *h)
{
	char line[HVT_PROBE_LINE_MAX], out[HVT_PROBE_LINE_MAX];
	unsigned int version, i;
	unsigned long long area, seed, count;
	uint64_t rs = (uint64_t)hvt_probe_now_ms() ^ ((uint64_t)getpid() << 32);
	uint64_t nonce;
	int n;

	sock_connect(h);
	sock_recv(h, line, sizeof(line), "HELLO");
	n = sscanf(line, "HELLO hvt-probe %u area=%llu seed=%llu count=%llu",
		   &version, &area, &seed, &count);
	if (n != 4)
		fail("expected a HELLO line from the guest, got '%.200s'", line);
	if (version != HVT_PROBE_VERSION)
		fail("guest probe speaks version %u, expected %u", version,
		     HVT_PROBE_VERSION);
	if (area != h->area_size)
		fail("guest says its area has %llu bytes, the host file %s has %" PRIu64,
		     area, h->area_path, h->area_size);
	if (h->have_seed && seed != h->seed)
		fail("guest says seed %llu, expected %" PRIu64, seed, h->seed);
	if (h->have_count && count != h->count)
		fail("guest says count %llu, expected %" PRIu64, count,
		     h->count);
	printf("hvt-probe-host: %s\n", line);

	/* The guest wrote the area before HELLO: it must be complete now. */
	area_check(h);

	nonce = rand64(&rs) | 1;
	/*
	 * Release: the nonce is in the area before the NONCE line leaves.
	 * Pairs with the acquire load of host_nonce in hvt-probe.
	 */
	__atomic_store_n(&((struct hvt_probe_hdr *)h->area)->host_nonce, nonce,
			 __ATOMIC_RELEASE);
	snprintf(out, sizeof(out), "NONCE 0x%" PRIx64 "\n", nonce);
	sock_send(h, out);
	sock_recv(h, line, sizeof(line), "NONCE-OK");
	snprintf(out, sizeof(out), "NONCE-OK 0x%" PRIx64, nonce);
	if (strcmp(line, out))
		fail("the guest did not read the host's nonce 0x%" PRIx64
		     " through its mapping: '%.200s'",
		     nonce, line);
	printf("hvt-probe-host: guest read the host's nonce 0x%" PRIx64 "\n",
	       nonce);

	for (i = 0; i < h->echo; i++) {
		/* Lengths from 1 to ~3000 bytes: some lines span buffers. */
		size_t len = 1 + rand64(&rs) % 3000, k;
		int off = snprintf(out, sizeof(out), "ECHO %u ", i);

		for (k = 0; k < len && off + 2 < (int)sizeof(out); k++)
			out[off++] = 'a' + rand64(&rs) % 26;
		out[off] = '\0';
		memcpy(line, out, off + 1);
		out[off++] = '\n';
		out[off] = '\0';
		sock_send(h, out);
		sock_recv(h, out, sizeof(out), "an ECHO reply");
		if (strcmp(line, out))
			fail("echo %u differs: sent '%.60s...' (%zu bytes), got '%.60s...' (%zu bytes)",
			     i, line, strlen(line), out, strlen(out));
	}
	printf("hvt-probe-host: %u lines echoed\n", h->echo);

	sock_send(h, "BYE\n");
	sock_recv(h, line, sizeof(line), "BYE");
	if (strcmp(line, "BYE"))
		fail("expected BYE, got '%.200s'", line);
	close(h->fd);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hvt-probe-host --area FILE [--sock PATH] [--seed N] [--count N]\n"
		"                      [--echo N] [--timeout SECONDS]\n"
		"Checks what hvt-probe wrote into a guest's trace area and, with --sock,\n"
		"runs the probe protocol over the guest's control socket.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "area", required_argument, NULL, 'a' },
		{ "sock", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "echo", required_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct host h = { .echo = 16, .timeout_ms = 30000, .fd = -1 };
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			h.area_path = optarg;
			break;
		case 'S':
			h.sock_path = optarg;
			break;
		case 's':
			if (hvt_probe_parse_u64(optarg, &h.seed))
				fail("--seed takes a number, not '%s'", optarg);
			h.have_seed = 1;
			break;
		case 'c':
			if (hvt_probe_parse_u64(optarg, &h.count))
				fail("--count takes a number, not '%s'", optarg);
			h.have_count = 1;
			break;
		case 'e':
			if (hvt_probe_parse_u64(optarg, &v) || v > 100000)
				fail("--echo takes 0..100000, not '%s'", optarg);
			h.echo = (unsigned int)v;
			break;
		case 't':
			if (hvt_probe_parse_u64(optarg, &v) || !v || v > 3600)
				fail("--timeout takes 1..3600 seconds, not '%s'",
				     optarg);
			h.timeout_ms = (int)v * 1000;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !h.area_path) {
		usage(stderr);
		return 2;
	}

	area_map(&h);
	if (h.sock_path)
		talk(&h);
	else
		area_check(&h);
	printf("hvt-probe-host: OK\n");
	return 0;
}
