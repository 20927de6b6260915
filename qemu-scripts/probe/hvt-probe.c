// SPDX-License-Identifier: MIT
/*
 * hvt-probe: guest side of the QEMU rig's plumbing probe.
 *
 * Maps the trace area (/dev/hvtrace-area, the ivshmem BAR) shared and
 * writes a header, a seeded pattern and a counter into it, then talks the
 * line protocol of hvt-probe.h on the control port
 * (/dev/virtio-ports/hvtrace-control) until the host says BYE.
 *
 *   hvt-probe [--area PATH] [--port PATH | --no-port] [--count N]
 *             [--seed N] [--timeout SECONDS]
 *
 * Built static: it runs from the busybox initramfs.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hvt-probe.h"

struct probe {
	const char *area_path;
	const char *port_path;
	uint64_t count;
	uint64_t seed;
	int timeout_ms;

	uint8_t *area;
	uint64_t area_size;
	int port_fd;
	char buf[HVT_PROBE_LINE_MAX];
	size_t buf_len;
};

static void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("hvt-probe: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	va_end(ap);
}

static int area_map(struct probe *p)
{
	enum hvt_probe_map_step step;
	int ret;

	ret = hvt_probe_area_map(p->area_path, &p->area, &p->area_size, &step);
	if (!ret)
		return 0;
	switch (step) {
	case HVT_PROBE_MAP_OPEN:
		msg("cannot open the trace area %s: %s (is an ivshmem device attached? see docs/qemu-rig.md)",
		    p->area_path, strerror(-ret));
		break;
	case HVT_PROBE_MAP_STAT:
		msg("cannot get the size of %s: %s", p->area_path,
		    strerror(-ret));
		break;
	case HVT_PROBE_MAP_SMALL:
		msg("trace area %s has %" PRIu64 " bytes; the probe needs at least %u",
		    p->area_path, p->area_size, HVT_PROBE_MIN_AREA);
		break;
	case HVT_PROBE_MAP_MMAP:
		msg("cannot map %s shared: %s", p->area_path, strerror(-ret));
		break;
	}
	return ret;
}

static void area_write(struct probe *p)
{
	volatile struct hvt_probe_hdr *hdr = (void *)p->area;
	uint8_t *last = p->area + p->area_size - HVT_PROBE_PAGE;
	uint64_t i;

	hdr->state = HVT_PROBE_STATE_WRITING;
	memcpy((void *)hdr->magic, HVT_PROBE_MAGIC, sizeof(hdr->magic));
	hdr->version = HVT_PROBE_VERSION;
	hdr->area_size = p->area_size;
	hdr->seed = p->seed;
	hdr->count = p->count;
	hdr->counter = 0;
	for (i = 0; i < HVT_PROBE_PATTERN_LEN; i++)
		p->area[HVT_PROBE_PATTERN_OFF + i] = hvt_probe_byte(p->seed, i);
	for (i = 0; i < HVT_PROBE_PAGE; i++)
		last[i] = hvt_probe_byte(~p->seed, i);
	/* Read-modify-write through the mapping, one step at a time. */
	for (i = 0; i < p->count; i++)
		hdr->counter = hdr->counter + 1;
	/*
	 * Release: everything above is visible before DONE.  Pairs with the
	 * acquire load of 'state' in hvt-probe-host's area check.
	 */
	__atomic_store_n(&hdr->state, HVT_PROBE_STATE_DONE, __ATOMIC_RELEASE);
}

/* Wait until the port is ready for 'events' or the deadline passes. */
static int port_wait(struct probe *p, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = p->port_fd, .events = events };

	for (;;) {
		int64_t left = deadline - hvt_probe_now_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, left > 100 ? 100 : (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (pfd.revents & events)
			return 0;
		if (pfd.revents & POLLERR)
			return -EIO;
		/*
		 * POLLHUP: no host side is connected.  Writes wait for one;
		 * for reads it means the host went away.
		 */
		if (events == POLLIN)
			return -EPIPE;
		usleep(20000);
	}
}

static int port_send(struct probe *p, const char *line)
{
	size_t len = strlen(line), off = 0;
	int64_t deadline = hvt_probe_now_ms() + p->timeout_ms;

	while (off < len) {
		ssize_t n;
		int ret = port_wait(p, POLLOUT, deadline);

		if (ret)
			return ret;
		n = write(p->port_fd, line + off, len - off);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		off += n;
	}
	return 0;
}

/* Read one line (without its '\n') into 'line'; 0 or -errno. */
static int port_recv(struct probe *p, char *line, size_t size)
{
	int64_t deadline = hvt_probe_now_ms() + p->timeout_ms;

	for (;;) {
		ssize_t n;
		int ret;

		ret = hvt_probe_line_take(p->buf, &p->buf_len, sizeof(p->buf),
					  line, size);
		if (ret)
			return ret < 0 ? ret : 0;
		ret = port_wait(p, POLLIN, deadline);
		if (ret)
			return ret;
		n = read(p->port_fd, p->buf + p->buf_len,
			 sizeof(p->buf) - p->buf_len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p->buf_len += n;
	}
}

static int port_talk(struct probe *p)
{
	volatile struct hvt_probe_hdr *hdr = (void *)p->area;
	char line[HVT_PROBE_LINE_MAX], out[HVT_PROBE_LINE_MAX + 16];
	int ret;

	p->port_fd = open(p->port_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (p->port_fd < 0) {
		ret = -errno;
		msg("cannot open the control port %s: %s", p->port_path,
		    strerror(-ret));
		return ret;
	}
	snprintf(out, sizeof(out),
		 "HELLO hvt-probe %u area=%" PRIu64 " seed=%" PRIu64
		 " count=%" PRIu64 "\n",
		 HVT_PROBE_VERSION, p->area_size, p->seed, p->count);
	ret = port_send(p, out);
	if (ret) {
		msg("no host on the control port within %d ms (%s)",
		    p->timeout_ms, strerror(-ret));
		return ret;
	}
	msg("host connected on %s", p->port_path);

	for (;;) {
		ret = port_recv(p, line, sizeof(line));
		if (ret) {
			msg("reading the control port: %s", strerror(-ret));
			return ret;
		}
		if (!strncmp(line, "NONCE ", 6)) {
			uint64_t want, seen;

			if (hvt_probe_parse_u64(line + 6, &want)) {
				snprintf(out, sizeof(out), "ERR bad nonce\n");
			} else {
				/*
				 * Acquire: pairs with the host's release store
				 * of host_nonce before it sent this line.
				 */
				seen = __atomic_load_n(&hdr->host_nonce,
						       __ATOMIC_ACQUIRE);
				snprintf(out, sizeof(out), "%s 0x%" PRIx64 "\n",
					 seen == want ? "NONCE-OK" : "NONCE-BAD",
					 seen);
			}
		} else if (!strncmp(line, "ECHO ", 5)) {
			snprintf(out, sizeof(out), "%s\n", line);
		} else if (!strcmp(line, "BYE")) {
			ret = port_send(p, "BYE\n");
			msg("host said BYE");
			return ret;
		} else {
			snprintf(out, sizeof(out), "ERR unknown command\n");
		}
		ret = port_send(p, out);
		if (ret) {
			msg("writing the control port: %s", strerror(-ret));
			return ret;
		}
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hvt-probe [--area PATH] [--port PATH | --no-port] [--count N]\n"
		"                 [--seed N] [--timeout SECONDS]\n"
		"Writes a known pattern and a counter into the trace area and answers\n"
		"the probe protocol on the control port (see qemu-scripts/probe/hvt-probe.h).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "area", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "no-port", no_argument, NULL, 'n' },
		{ "count", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct probe p = {
		.area_path = "/dev/hvtrace-area",
		.port_path = "/dev/virtio-ports/hvtrace-control",
		.count = 100000,
		.seed = 1,
		.timeout_ms = 30000,
		.port_fd = -1,
	};
	uint64_t v;
	int c, ret;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			p.area_path = optarg;
			break;
		case 'p':
			p.port_path = optarg;
			break;
		case 'n':
			p.port_path = NULL;
			break;
		case 'c':
			if (hvt_probe_parse_u64(optarg, &p.count) || p.count > (1ULL << 40)) {
				fprintf(stderr, "hvt-probe: --count takes a number up to 2^40, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (hvt_probe_parse_u64(optarg, &p.seed)) {
				fprintf(stderr, "hvt-probe: --seed takes a number, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 't':
			if (hvt_probe_parse_u64(optarg, &v) || !v || v > 3600) {
				fprintf(stderr, "hvt-probe: --timeout takes 1..3600 seconds, not '%s'\n", optarg);
				return 2;
			}
			p.timeout_ms = (int)v * 1000;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	ret = area_map(&p);
	if (ret)
		return 1;
	area_write(&p);
	msg("wrote the pattern (seed %" PRIu64 ") and counted to %" PRIu64
	    " in %s (%" PRIu64 " bytes)",
	    p.seed, p.count, p.area_path, p.area_size);
	if (!p.port_path)
		return 0;
	ret = port_talk(&p);
	return ret ? 1 : 0;
}
