// SPDX-License-Identifier: MIT
/*
 * The comms an agent sends (CMDLINE: pid -> comm) stay right and bounded
 * in hvtraced, whatever the agent sends.
 *
 * A remote keeps one comm per slot pid % 4096, at most 4096: a pid takes
 * its slot from the pid before it, and each such replacement is counted.
 * The table grows with use, so an idle remote holds none.  A raw agent
 * (the test speaking the protocol) checks:
 *
 *   idle       no comm sent: "cmdlines: 0" and "cmdlines_bytes: 0" in
 *              the remote's info
 *   a few      100 pids: all 100 in saved_cmdlines, none replaced; then
 *              5 more of pid 7's slot: the newest of them alone kept
 *              there, 5 replacements counted, the other 99 untouched
 *   hostile    three floods of more distinct pids than the table holds:
 *              exactly 4096 kept, the newest pid of every slot (the
 *              oldest gone), every replacement counted, the table no
 *              larger than 4096 entries and the daemon's resident memory
 *              not growing with the floods
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#define SLOTS 4096u

static struct hvtrace_daemon *dc;
static uint32_t remote;
static int afd;
static uint64_t sent;		/* distinct pids sent */

/* Write all (blocking), reading away what the daemon says meanwhile. */
static void put(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sink[65536];

	while (len) {
		ssize_t w = send(afd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		while (recv(afd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
		if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
			usleep(1000);
			continue;
		}
		if (w < 0)
			t_fail("the daemon hung up on the agent: %s",
			       strerror(errno));
		b += w;
		len -= (size_t)w;
	}
}

/* CMDLINE of pids @first..@first + @n - 1, comm "cPID" (cut to 15). */
static void send_pids(uint32_t first, uint32_t n)
{
	static uint8_t buf[256 * 1024];
	size_t len = 0;
	uint32_t k;

	for (k = 0; k < n; k++) {
		struct hvt_msg m;
		char comm[32];
		int f;

		snprintf(comm, sizeof(comm), "c%u", first + k);
		memset(&m, 0, sizeof(m));
		m.type = HVT_MSG_CMDLINE;
		m.u.cmdline.pid = first + k;
		m.u.cmdline.comm.ptr = comm;
		m.u.cmdline.comm.len = (uint32_t)strnlen(comm, 15);
		f = hvt_msg_encode(buf + len, (uint32_t)(sizeof(buf) - len),
				   &m);
		if (f < 0)
			t_fail("encode CMDLINE: %d", f);
		len += (size_t)f;
		if (len > sizeof(buf) - 256 || k == n - 1) {
			put(buf, len);
			len = 0;
		}
	}
	sent += n;
}

/* Wait until the daemon took what was sent: kept + replaced == sent. */
static void settle(void)
{
	uint64_t kept = 0, replaced = 0;
	int k;

	for (k = 0; k < 1000; k++) {
		uint8_t sink[65536];

		while (recv(afd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
		kept = h_info_u64(dc, remote, "cmdlines");
		replaced = h_info_u64(dc, remote, "cmdlines_replaced");
		if (kept + replaced >= sent)
			return;
		usleep(10000);
	}
	t_fail("the daemon took %llu + %llu of %llu comms",
	       (unsigned long long)kept, (unsigned long long)replaced,
	       (unsigned long long)sent);
}

static long rss_kib(void)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)h_dpid);
	f = fopen(path, "r");
	if (!f)
		t_fail("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1)
			break;
	fclose(f);
	if (v < 0)
		t_fail("no VmRSS in %s", path);
	return v;
}

/* Whether saved_cmdlines has the line "PID cPID". */
static bool has_pid(const char *text, uint32_t pid)
{
	char want[48];
	const char *p;

	snprintf(want, sizeof(want), "%u c%u\n", pid, pid);
	for (p = text; (p = strstr(p, want)); p++)
		if (p == text || p[-1] == '\n')
			return true;
	return false;
}

static unsigned int lines(const char *text)
{
	unsigned int n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

int main(void)
{
	struct hvt_remote_rec rec;
	char area[256], *text;
	long rss0, rss1, rss2;
	uint32_t pid, base;
	int round;

	dc = h_start(NULL);
	snprintf(area, sizeof(area), "/dev/shm/hvtrace-t%d-cmdlines",
		 (int)getpid());
	afd = h_raw_agent("cmds", area);
	h_wait_connected(dc, "cmds", 5000);
	h_remote(dc, "cmds", &rec);
	remote = rec.id;

	/* Idle: no table at all. */
	if (h_info_u64(dc, remote, "cmdlines") != 0 ||
	    h_info_u64(dc, remote, "cmdlines_bytes") != 0)
		t_fail("an idle remote holds comms: %llu, %llu bytes",
		       (unsigned long long)h_info_u64(dc, remote, "cmdlines"),
		       (unsigned long long)h_info_u64(dc, remote,
						      "cmdlines_bytes"));
	printf("idle: no comms, no table\n");

	/* A few: every one kept, in a table smaller than the maximum. */
	send_pids(1, 100);
	settle();
	text = h_text(dc, remote, HVT_TEXT_CMDLINES);
	if (lines(text) != 100 || !has_pid(text, 1) || !has_pid(text, 57) ||
	    !has_pid(text, 100))
		t_fail("saved_cmdlines after pids 1..100 (%u lines):\n%s",
		       lines(text), text);
	free(text);
	if (h_info_u64(dc, remote, "cmdlines") != 100 ||
	    h_info_u64(dc, remote, "cmdlines_replaced") != 0)
		t_fail("100 comms: %llu kept, %llu replaced",
		       (unsigned long long)h_info_u64(dc, remote, "cmdlines"),
		       (unsigned long long)h_info_u64(dc, remote,
						      "cmdlines_replaced"));
	printf("100 pids: kept, %llu bytes\n",
	       (unsigned long long)h_info_u64(dc, remote, "cmdlines_bytes"));

	/* Pids of one slot (7 + k * 4096): each takes it from the one
	 * before, counted; the others stay. */
	for (pid = 7 + SLOTS; pid <= 7 + 5 * SLOTS; pid += SLOTS)
		send_pids(pid, 1);
	settle();
	text = h_text(dc, remote, HVT_TEXT_CMDLINES);
	if (lines(text) != 100 || has_pid(text, 7) ||
	    has_pid(text, 7 + 4 * SLOTS) || !has_pid(text, 7 + 5 * SLOTS) ||
	    !has_pid(text, 8) ||
	    h_info_u64(dc, remote, "cmdlines_replaced") != 5)
		t_fail("5 pids of pid 7's slot: %llu replaced, "
		       "saved_cmdlines:\n%s",
		       (unsigned long long)h_info_u64(dc, remote,
						      "cmdlines_replaced"),
		       text);
	free(text);
	printf("5 pids of one slot: the newest kept, 5 replacements\n");

	/* Hostile: floods of more pids than the table holds. */
	rss0 = rss_kib();
	rss1 = rss0;
	base = 1000;
	for (round = 0; round < 3; round++) {
		uint32_t n = 3 * SLOTS + 500;

		send_pids(base, n);
		settle();
		if (h_info_u64(dc, remote, "cmdlines") != SLOTS)
			t_fail("after %llu pids: %llu comms kept, not %u",
			       (unsigned long long)sent,
			       (unsigned long long)h_info_u64(dc, remote,
							      "cmdlines"),
			       SLOTS);
		if (h_info_u64(dc, remote, "cmdlines_replaced") !=
		    sent - SLOTS)
			t_fail("after %llu pids: %llu replacements counted, "
			       "not %llu",
			       (unsigned long long)sent,
			       (unsigned long long)h_info_u64(
				       dc, remote, "cmdlines_replaced"),
			       (unsigned long long)(sent - SLOTS));
		if (h_info_u64(dc, remote, "cmdlines_bytes") > SLOTS * 20)
			t_fail("the comm table holds %llu bytes, more than "
			       "4096 entries",
			       (unsigned long long)h_info_u64(
				       dc, remote, "cmdlines_bytes"));
		text = h_text(dc, remote, HVT_TEXT_CMDLINES);
		if (lines(text) != SLOTS)
			t_fail("saved_cmdlines has %u lines, not %u",
			       lines(text), SLOTS);
		/* The newest pid of every slot, none older. */
		for (pid = base + n - SLOTS; pid < base + n; pid++)
			if (!has_pid(text, pid))
				t_fail("saved_cmdlines lacks pid %u, one of "
				       "the newest %u",
				       pid, SLOTS);
		if (has_pid(text, base + n - SLOTS - 1) || has_pid(text, 1))
			t_fail("saved_cmdlines keeps a pid whose slot a "
			       "newer pid took");
		free(text);
		if (round == 0)
			rss1 = rss_kib();
		base += n;
	}
	rss2 = rss_kib();
	printf("%llu pids: 4096 kept, %llu replaced; daemon RSS %ld KiB "
	       "before, %ld after the first flood, %ld after the third\n",
	       (unsigned long long)sent,
	       (unsigned long long)h_info_u64(dc, remote,
					      "cmdlines_replaced"),
	       rss0, rss1, rss2);
	/* The later floods add nothing to what the first one cost. */
	if (rss2 > rss1 + 1024)
		t_fail("the daemon grew by %ld KiB over two more floods of "
		       "comms",
		       rss2 - rss1);
	close(afd);
	h_pass();
	return 0;
}
