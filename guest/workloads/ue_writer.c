// SPDX-License-Identifier: MIT
/*
 * ue_writer - a scriptable user-event writer for the proxy tests.
 *
 * Connects to the agent (waiting up to --wait-agent ms for it to come up,
 * as a program started next to it must), registers one definition, then:
 *   1. writes --pre events while (normally) still disabled and reports how
 *      many the enable-bit check skipped;
 *   2. waits up to --wait-enable ms for the host to enable the event;
 *   3. writes --count events (--gap-ms apart, printing "wrote seq=N" after
 *      each, when given);
 *   4. with --hold, sleeps until killed (a client that vanishes).
 *
 * The default definition is "hvt_e2e u32 seq; u64 val; __rel_loc char[]
 * msg" and the record i carries seq = base + i, val = seq * 7 + 3 and
 * msg = "m<seq>" followed by (seq % 13) 'x' characters, so a reader can
 * check every field of every record.  --pre events use base 1000000.
 *
 * Lines on stdout (one per step, flushed): "registered id=N",
 * "pre skipped=N written=N", "enabled", "done wrote=N failed=N",
 * "error: ..." (exit 1).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvtrace-client.h"

#define DEFAULT_DEF	"hvt_e2e u32 seq; u64 val; __rel_loc char[] msg"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Build the e2e record after the common fields. */
static size_t build_record(uint8_t *buf, uint32_t seq)
{
	uint64_t val = (uint64_t)seq * 7 + 3;
	char msg[64];
	uint32_t loc, n;
	int len;

	len = snprintf(msg, sizeof(msg), "m%u", seq);
	for (n = 0; n < seq % 13; n++)
		msg[len++] = 'x';
	msg[len++] = '\0';
	/* __rel_loc: length << 16 | offset from the end of the loc field. */
	loc = ((uint32_t)len << 16) | 0;
	memcpy(buf, &seq, 4);
	memcpy(buf + 4, &val, 8);
	memcpy(buf + 12, &loc, 4);
	memcpy(buf + 16, msg, (size_t)len);
	return 16 + (size_t)len;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "def", required_argument, NULL, 'd' },
		{ "pre", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'c' },
		{ "wait-enable", required_argument, NULL, 'w' },
		{ "hold", no_argument, NULL, 'H' },
		{ "wait-agent", required_argument, NULL, 'a' },
		{ "gap-ms", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	static struct hvtg_event ev = HVTG_EVENT_INIT;
	const char *sock = NULL, *def = DEFAULT_DEF;
	long pre = 0, count = 0, wait_ms = 10000, agent_ms = 0, gap_ms = 0, i;
	long skipped = 0, written = 0, wrote = 0, failed = 0;
	int opt, ret, e2e, hold = 0;
	struct hvtc *c;
	uint8_t rec[128];
	uint64_t deadline;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sock = optarg;
			break;
		case 'd':
			def = optarg;
			break;
		case 'p':
			pre = atol(optarg);
			break;
		case 'c':
			count = atol(optarg);
			break;
		case 'w':
			wait_ms = atol(optarg);
			break;
		case 'H':
			hold = 1;
			break;
		case 'a':
			agent_ms = atol(optarg);
			break;
		case 'g':
			gap_ms = atol(optarg);
			break;
		default:
			fprintf(stderr, "usage: ue_writer [--socket PATH] "
					"[--def DEF] [--pre N] [--count N] "
					"[--wait-enable MS] [--hold] "
					"[--wait-agent MS] [--gap-ms MS]\n");
			return 2;
		}
	}
	e2e = !strcmp(def, DEFAULT_DEF);
	deadline = now_ms() + (uint64_t)agent_ms;
	while ((ret = hvtc_open(sock, &c)) &&
	       (ret == -ENOENT || ret == -ECONNREFUSED) && now_ms() < deadline)
		usleep(50000);
	if (ret) {
		printf("error: %s\n", hvtc_last_error());
		return 1;
	}
	ret = hvtc_register(c, def, &ev);
	if (ret) {
		printf("error: register: %s\n", hvtc_last_error());
		return 1;
	}
	printf("registered id=%d\n", hvtc_event_id(c, &ev));

	for (i = 0; i < pre; i++) {
		size_t len = e2e ? build_record(rec, 1000000 + (uint32_t)i) : 8;

		if (!e2e)
			memset(rec, 0, sizeof(rec));
		/* The fast path: one load and a mask, then the write. */
		if (!hvtg_enabled(&ev)) {
			skipped++;
			continue;
		}
		if (hvtg_write(&ev, rec, len) == 0)
			written++;
	}
	if (pre)
		printf("pre skipped=%ld written=%ld\n", skipped, written);

	if (count) {
		deadline = now_ms() + (uint64_t)wait_ms;
		while (!hvtg_enabled(&ev) && now_ms() < deadline)
			usleep(1000);
		if (!hvtg_enabled(&ev)) {
			printf("error: not enabled within %ld ms\n", wait_ms);
			return 1;
		}
		printf("enabled\n");
		for (i = 0; i < count; i++) {
			size_t len = e2e ? build_record(rec, (uint32_t)i) : 8;

			if (!e2e)
				memset(rec, (int)i, 8);
			if (gap_ms && i)
				usleep((useconds_t)gap_ms * 1000);
			ret = hvtg_write(&ev, rec, len);
			if (ret)
				failed++;
			else
				wrote++;
			if (gap_ms)
				printf("wrote seq=%ld\n", i);
		}
		printf("done wrote=%ld failed=%ld\n", wrote, failed);
	}
	if (hold) {
		printf("holding\n");
		for (;;)
			pause();
	}
	hvtc_close(c);
	return failed ? 1 : 0;
}
