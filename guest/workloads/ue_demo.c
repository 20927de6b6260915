// SPDX-License-Identifier: MIT
/*
 * ue_demo - register two user events through the agent and write them
 * while the host has them enabled.
 *
 *   ue_demo [SECONDS] [AGENT-SOCKET]
 *
 * Every 100 ms: "hvtrace_demo_tick u64 n; char[16] name" and, every
 * tenth tick, "hvtrace_demo_msg __rel_loc char[] text".  Enable them on
 * the host with
 *
 *   hvtrace events enable hvtrace_demo_tick hvtrace_demo_msg
 *
 * and watch them with hvtrace stream.  Writes are skipped (one load and
 * a mask) while an event is disabled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvtrace-client.h"

int main(int argc, char **argv)
{
	static struct hvtg_event tick = HVTG_EVENT_INIT, msg = HVTG_EVENT_INIT;
	long seconds = argc > 1 ? atol(argv[1]) : 10, n;
	const char *sock = argc > 2 ? argv[2] : NULL;
	struct hvtc *c;

	if (hvtc_open(sock, &c)) {
		fprintf(stderr, "ue_demo: %s\n", hvtc_last_error());
		return 1;
	}
	if (hvtc_register(c, "hvtrace_demo_tick u64 n; char[16] name", &tick) ||
	    hvtc_register(c, "hvtrace_demo_msg __rel_loc char[] text", &msg)) {
		fprintf(stderr, "ue_demo: %s\n", hvtc_last_error());
		return 1;
	}
	printf("ue_demo: registered hvtrace_demo_tick (id %d) and "
	       "hvtrace_demo_msg (id %d); writing for %ld s\n",
	       hvtc_event_id(c, &tick), hvtc_event_id(c, &msg), seconds);
	fflush(stdout);
	for (n = 0; n < seconds * 10; n++) {
		if (hvtg_enabled(&tick)) {
			struct {
				uint64_t n;
				char name[16];
			} __attribute__((packed)) rec = { (uint64_t)n,
							  "ue_demo" };

			hvtg_write(&tick, &rec, sizeof(rec));
		}
		if (n % 10 == 0 && hvtg_enabled(&msg)) {
			char text[64];
			uint32_t loc;
			uint8_t buf[80];
			int len = snprintf(text, sizeof(text),
					   "second %ld of %ld", n / 10,
					   seconds) + 1;

			loc = (uint32_t)len << 16;
			memcpy(buf, &loc, 4);
			memcpy(buf + 4, text, (size_t)len);
			hvtg_write(&msg, buf, 4 + (size_t)len);
		}
		usleep(100000);
	}
	hvtc_close(c);
	return 0;
}
