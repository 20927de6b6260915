// SPDX-License-Identifier: MIT
/*
 * Registration errors travel back from the host's registry, through
 * hvtraced and the agent, to the application -- the errno and the text
 * that names what was wrong:
 *
 *   a bad field            -> EINVAL, the message names the field
 *   same name, other fields-> EADDRINUSE, "in use"
 *   a definition too long  -> E2BIG
 *   deleting a registered event -> EBUSY; an unknown one -> ENOENT
 *
 * and the tool path (dynamic_events lines through hvtraced) says the same.
 * This process is the application: it links libhvtrace-client.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>

#include "harness.h"
#include "hvtrace-client.h"

static void expect_register(struct hvtc *c, const char *def, int err,
			    const char *needle)
{
	struct hvtg_event ev = HVTG_EVENT_INIT;
	int ret = hvtc_register(c, def, &ev);

	if (ret != err)
		t_fail("register '%.60s': got %d (%s), expected %d", def, ret,
		       hvtc_last_error(), err);
	if (needle && !strstr(hvtc_last_error(), needle))
		t_fail("register '%.60s': message '%s' lacks '%s'", def,
		       hvtc_last_error(), needle);
	if (err && hvtg_enabled(&ev))
		t_fail("a refused registration left the handle enabled");
	printf("register '%.50s' -> %d: %s\n", def, ret,
	       ret ? hvtc_last_error() : "ok");
}

struct notice {
	bool seen, on;
	uint32_t id;
};

static void on_notice(void *arg, uint32_t id, bool enabled)
{
	struct notice *n = arg;

	n->seen = true;
	n->id = id;
	n->on = enabled;
}

int main(void)
{
	struct hvtrace_daemon *dc = h_start(NULL);
	static struct hvtg_event ok_ev = HVTG_EVENT_INIT;
	char text[1024], longdef[700];
	struct h_agent a;
	struct hvtc *c;
	int ret;

	h_agent_start(&a, "errs", NULL);
	ret = hvtc_open(a.sock, &c);
	if (ret)
		t_fail("hvtc_open: %s", hvtc_last_error());

	/* A type the kernel does not know, in the second field. */
	expect_register(c, "bad_ev u32 a; long b", -EINVAL, "field 2");
	expect_register(c, "bad_ev u32 a; long b", -EINVAL, "long");
	/* A struct without its size, an array too large. */
	expect_register(c, "bad2 struct foo f", -EINVAL, "f");
	expect_register(c, "bad3 char[2000] s", -EINVAL, NULL);

	/* The same name with other fields is in use. */
	t_ok(hvtc_register(c, "dup_ev u32 a", &ok_ev));
	t_assert(hvtc_event_id(c, &ok_ev) > 0);
	expect_register(c, "dup_ev u64 a", -EADDRINUSE, "in use");
	/* The same definition shares the event. */
	{
		struct hvtg_event again = HVTG_EVENT_INIT;

		t_ok(hvtc_register(c, "dup_ev u32 a", &again));
		t_eq(hvtc_event_id(c, &again), hvtc_event_id(c, &ok_ev));
	}

	/* The kernel's 512-byte limit (with the NUL). */
	memset(longdef, 0, sizeof(longdef));
	strcpy(longdef, "long_ev ");
	for (size_t i = strlen(longdef); i < 600; i += 10)
		memcpy(longdef + i, "u32 abcd; ", 10);
	expect_register(c, longdef, -E2BIG, NULL);

	/* Delete: busy while registered, unknown names refused. */
	ret = hvtc_delete(c, "dup_ev");
	if (ret != -EBUSY)
		t_fail("delete of a registered event: %d (%s)", ret,
		       hvtc_last_error());
	ret = hvtc_delete(c, "no_such_ev");
	if (ret != -ENOENT)
		t_fail("delete of an unknown event: %d (%s)", ret,
		       hvtc_last_error());

	/* The tool path: dynamic_events lines through hvtraced. */
	ret = h_result(dc, HVT_MSG_DEFINE, a.remote, 0,
		       "u:tool_bad u32 x; long y", text, sizeof(text));
	t_eq(ret, -EINVAL);
	if (!strstr(text, "field 2"))
		t_fail("DEFINE message '%s' does not name field 2", text);
	ret = h_result(dc, HVT_MSG_DEFINE, a.remote, 0, "u:dup_ev u16 a", text,
		       sizeof(text));
	t_eq(ret, -EADDRINUSE);
	if (!strstr(text, "in use"))
		t_fail("DEFINE message '%s' lacks 'in use'", text);
	ret = h_result(dc, HVT_MSG_DELETE, a.remote, 0, "dup_ev", text,
		       sizeof(text));
	t_eq(ret, -EBUSY);
	ret = h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "no_such_ev", text,
		       sizeof(text));
	t_eq(ret, -ENOENT);

	/* After all that, registrations still work end to end, and the
	 * host's enable reaches the application: the bit and a notice. */
	{
		static struct hvtg_event ev2 = HVTG_EVENT_INIT;
		struct notice n = { 0 };
		int k;

		t_ok(hvtc_register(c, "after_ev u64 v", &ev2));
		t_assert(hvtc_event_id(c, &ev2) > 0);
		t_assert(!hvtg_enabled(&ev2));
		t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 1, "after_ev", text,
			      sizeof(text)),
		     0);
		for (k = 0; k < 500 && !n.seen; k++) {
			t_assert(hvtc_process(c, on_notice, &n) >= 0);
			if (!n.seen)
				usleep(10000);
		}
		if (!n.seen)
			t_fail("no enable notice reached the application");
		t_eq(n.id, hvtc_event_id(c, &ev2));
		t_assert(n.on);
		t_assert(hvtg_enabled(&ev2));
		t_eq(h_result(dc, HVT_MSG_ENABLE, a.remote, 0, "after_ev", text,
			      sizeof(text)),
		     0);
		t_assert(!hvtg_enabled(&ev2));
	}
	hvtc_close(c);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
