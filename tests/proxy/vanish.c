// SPDX-License-Identifier: MIT
/*
 * A client that vanishes (SIGKILL, no goodbye): the agent notices the
 * closed socket and tells hvtraced (CLIENT_GONE), which drops the
 * client's references.  An event it held that was defined persistently
 * (dynamic_events) is then no longer busy and can be deleted; an event
 * only it had registered goes away by itself, as in the kernel.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>

#include "harness.h"

static int wait_clients(struct hvtrace_daemon *dc, const char *name,
			unsigned int want)
{
	struct hvt_remote_rec rec;
	int i;

	/* Bounded: 10 s. */
	for (i = 0; i < 1000; i++) {
		h_remote(dc, name, &rec);
		if (rec.nr_clients == want)
			return 0;
		usleep(10000);
	}
	t_fail("remote %s: %u clients, expected %u", name, rec.nr_clients,
	       want);
}

static bool listed(struct hvtrace_daemon *dc, uint32_t remote, const char *ev)
{
	char *t = h_text(dc, remote, HVT_TEXT_STATUS), *p;
	size_t n = strlen(ev);
	bool found = false;

	/* One event per line: "NAME" or "NAME # Used by ...". */
	for (p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, ev, n) && (p[n] == '\n' || p[n] == ' '))
			found = true;
	free(t);
	return found;
}

int main(void)
{
	struct hvtrace_daemon *dc = h_start(NULL);
	struct h_agent a;
	struct h_proc w1, w2;
	const char *line;
	char text[512];
	int ret;

	h_agent_start(&a, "vanish", NULL);
	/* Only the agent itself holds a registration (its trigger event). */
	wait_clients(dc, "vanish", 1);

	/* A persistent definition, then a client that registers it too and
	 * one that registers an event of its own. */
	t_eq(h_result(dc, HVT_MSG_DEFINE, a.remote, 0, "u:van_persist u32 a",
		      text, sizeof(text)),
	     0);
	h_proc_start(&w1, "guest/workloads/ue_writer", "--socket", a.sock,
		     "--def", "van_persist u32 a", "--hold", NULL);
	h_proc_start(&w2, "guest/workloads/ue_writer", "--socket", a.sock,
		     "--def", "van_own u64 b", "--hold", NULL);
	line = h_proc_line(&w1, 15000);
	if (strncmp(line, "registered id=", 14))
		t_fail("workload 1: %s", line);
	line = h_proc_line(&w2, 15000);
	if (strncmp(line, "registered id=", 14))
		t_fail("workload 2: %s", line);
	if (strcmp(h_proc_line(&w1, 15000), "holding") ||
	    strcmp(h_proc_line(&w2, 15000), "holding"))
		t_fail("workloads did not reach their hold");
	wait_clients(dc, "vanish", 3);
	t_assert(listed(dc, a.remote, "van_persist"));
	t_assert(listed(dc, a.remote, "van_own"));

	/* Registered: delete is refused. */
	ret = h_result(dc, HVT_MSG_DELETE, a.remote, 0, "van_persist", text,
		       sizeof(text));
	if (ret != -EBUSY)
		t_fail("delete while registered: %d (%s)", ret, text);

	/* The clients vanish without a word. */
	kill(w1.pid, SIGKILL);
	kill(w2.pid, SIGKILL);
	t_eq(h_proc_wait(&w1, 10000), 128 + SIGKILL);
	t_eq(h_proc_wait(&w2, 10000), 128 + SIGKILL);
	wait_clients(dc, "vanish", 1);

	/* The persistent event stays, no longer busy: delete works. */
	t_assert(listed(dc, a.remote, "van_persist"));
	ret = h_result(dc, HVT_MSG_DELETE, a.remote, 0, "van_persist", text,
		       sizeof(text));
	if (ret)
		t_fail("delete after the client vanished: %d (%s)", ret, text);
	t_assert(!listed(dc, a.remote, "van_persist"));
	/* The event only the vanished client held is gone by itself. */
	t_assert(!listed(dc, a.remote, "van_own"));

	/* An event enabled on the host outlives its registrant, like an
	 * ftrace-enabled user event; disabling it then deletes it. */
	h_proc_start(&w1, "guest/workloads/ue_writer", "--socket", a.sock,
		     "--def", "van_enabled u32 a", "--hold", NULL);
	line = h_proc_line(&w1, 15000);
	if (strncmp(line, "registered id=", 14))
		t_fail("workload 3: %s", line);
	t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "van_enabled", text,
		      sizeof(text)),
	     0);
	kill(w1.pid, SIGKILL);
	h_proc_wait(&w1, 10000);
	wait_clients(dc, "vanish", 1);
	t_assert(listed(dc, a.remote, "van_enabled"));
	ret = h_result(dc, HVT_MSG_DELETE, a.remote, 0, "van_enabled", text,
		       sizeof(text));
	if (ret != -EBUSY)
		t_fail("delete of an enabled event: %d (%s)", ret, text);
	t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 0, "van_enabled", text,
		      sizeof(text)),
	     0);
	t_assert(!listed(dc, a.remote, "van_enabled"));

	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
