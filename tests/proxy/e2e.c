// SPDX-License-Identifier: MIT
/*
 * End to end on one machine: a workload registers
 * "hvt_e2e u32 seq; u64 val; __rel_loc char[] msg" through the agent and
 * hvtraced; events it writes before the host enables the event are
 * skipped by the enable-bit check; events after the enable arrive through
 * a page subscription with every field right, __rel_loc strings included,
 * decoded by libtraceevent from the format text the registry produced.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT	500

int main(void)
{
	struct hvtrace_daemon *dc = h_start(NULL);
	static unsigned int counts[COUNT];
	struct h_e2e seen = { .total = COUNT, .count = counts };
	struct hvt_msg m, r;
	struct h_agent a;
	struct h_proc w;
	struct tep_handle *tep = NULL;
	char text[512], *cmdlines, want[64];
	const char *line;
	uint32_t sub;
	uint64_t deadline, pages = 0;
	int ret, skipped = -1, written = -1, wrote = -1, failed = -1;

	h_agent_start(&a, "e2e", NULL);

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = a.remote;
	m.u.subscribe.cpu = -1;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 10000, NULL, NULL));
	t_eq(r.type, HVT_MSG_SUBSCRIBE);
	t_eq(r.u.result.status, 0);
	sub = r.u.result.id;

	h_proc_start(&w, "guest/workloads/ue_writer", "--socket", a.sock,
		     "--pre", "100", "--count", "500", "--wait-enable",
		     "20000", NULL);
	seen.pid = w.pid;
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "registered id=%d", &seen.id) != 1)
		t_fail("workload: %s", line);
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "pre skipped=%d written=%d", &skipped, &written) != 2)
		t_fail("workload: %s", line);
	/* Disabled: every write before the enable was skipped by the bit. */
	t_eq(skipped, 100);
	t_eq(written, 0);

	tep = h_tep(dc, a.remote);
	t_assert(tep_find_event_by_name(tep, "user_events", "hvt_e2e"));
	t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "hvt_e2e", text,
		      sizeof(text)),
	     0);
	line = h_proc_line(&w, 15000);
	if (strcmp(line, "enabled"))
		t_fail("workload: %s", line);
	line = h_proc_line(&w, 15000);
	if (sscanf(line, "done wrote=%d failed=%d", &wrote, &failed) != 2)
		t_fail("workload: %s", line);
	t_eq(wrote, COUNT);
	t_eq(failed, 0);
	t_eq(h_proc_wait(&w, 10000), 0);

	/* Collect until every record arrived (20 s at most). */
	deadline = h_now_ns() + 20000000000ull;
	while (seen.n < COUNT && h_now_ns() < deadline) {
		ret = hvtrace_daemon_recv(dc, &m, 1000);
		if (ret < 0)
			t_fail("%s", hvtrace_last_error());
		if (ret == 0 || m.type != HVT_MSG_PAGE)
			continue;
		t_equ(m.req, sub);
		t_equ(m.chan, a.remote);
		t_equ(m.u.page.lost_events, 0);
		t_equ(m.u.page.dropped_pages, 0);
		pages++;
		h_decode_page(tep, &m.u.page, h_e2e_record, &seen);
	}
	if (seen.n != COUNT)
		t_fail("%u of %d records arrived", seen.n, COUNT);
	for (int i = 0; i < COUNT; i++)
		if (seen.count[i] != 1)
			t_fail("seq %d arrived %u times", i, seen.count[i]);

	/* The host knows the writer's comm for its pid. */
	cmdlines = h_text(dc, a.remote, HVT_TEXT_CMDLINES);
	snprintf(want, sizeof(want), "%d ue_writer\n", seen.pid);
	if (!strstr(cmdlines, want))
		t_fail("saved_cmdlines lacks '%d ue_writer': %s", seen.pid,
		       cmdlines);
	free(cmdlines);

	printf("%u records in %llu pages, %u other records; pre-enable "
	       "writes skipped: %d\n",
	       seen.n, (unsigned long long)pages, seen.other, skipped);
	tep_free(tep);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
