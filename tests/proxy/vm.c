// SPDX-License-Identifier: MIT
/*
 * The proxy in a real guest: QEMU (TCG) boots the rig's initramfs with
 * hvtrace-agent on the ivshmem BAR (/dev/hvtrace-area) and the
 * virtio-serial port (/dev/virtio-ports/hvtrace-control); hvtraced
 * attaches the guest by name (QEMU's chardev socket, the /dev/shm area).
 *
 *   - a workload in the guest registers hvt_e2e through the agent; the
 *     host enables it; every record arrives with every field right;
 *   - the causality check holds over virtio-serial: 1000 triggers, zero
 *     violations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event-parse.h>

#include <hvtrace.h>

#include "harness.h"

#define COUNT	300

static char name[32];
static char launcher[600];
static bool started;

static void stop_guest(void)
{
	char cmd[900];

	if (!started)
		return;
	snprintf(cmd, sizeof(cmd), "%s stop %s --timeout 20 >/dev/null 2>&1",
		 launcher, name);
	if (system(cmd))
		fprintf(stderr, "warning: could not stop guest %s\n", name);
	snprintf(cmd, sizeof(cmd), "%s cleanup %s >/dev/null 2>&1", launcher,
		 name);
	if (system(cmd))
		fprintf(stderr, "warning: could not clean up guest %s\n", name);
}

/* Did the guest's command finish (its console says so)? */
static bool guest_ended(void)
{
	char path[200], line[512];
	bool ended = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/console.log", h_dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "hvtrace: run exited"))
			ended = true;
	fclose(f);
	return ended;
}

static bool event_listed(struct hvtrace_daemon *dc, uint32_t remote,
			 const char *ev)
{
	char *t = h_text(dc, remote, HVT_TEXT_STATUS);
	bool found = strstr(t, ev) != NULL;

	free(t);
	return found;
}

int main(void)
{
	static unsigned int counts[COUNT];
	struct h_e2e seen = { .total = COUNT, .count = counts };
	struct h_causality_result res;
	struct hvtrace_daemon *dc;
	struct hvt_remote_rec rec;
	struct tep_handle *tep;
	struct hvt_msg m, r;
	char cmd[2048], image[600], text[512], run[256], rundir[128];
	uint64_t deadline;
	uint32_t sub;
	int k, ret;

	if (access("/usr/bin/qemu-system-x86_64", X_OK))
		t_skip("qemu-system-x86_64 is not installed (make deps)");
	dc = h_start("--sync-interval 20");
	snprintf(launcher, sizeof(launcher), "%s/qemu-scripts/hvtrace-guest",
		 HVT_SRCTREE);
	snprintf(image, sizeof(image), "%s/qemu-scripts/guest.cpio.gz",
		 h_objtree);
	if (access(image, R_OK))
		t_fail("%s is not built: make O=%s guest-image", image,
		       h_objtree);
	snprintf(name, sizeof(name), "pxvm%d", (int)getpid());
	snprintf(rundir, sizeof(rundir), "%s/run", h_dir);
	setenv("HVT_RUNDIR", rundir, 1);
	setenv("HVT_SHM_DIR", h_dir, 1);
	setenv("HVT_OBJTREE", h_objtree, 1);
	snprintf(run, sizeof(run),
		 "ue_writer --wait-agent 30000 --count %d "
		 "--wait-enable 120000 && sleep 300",
		 COUNT);
	snprintf(cmd, sizeof(cmd),
		 "%s start --name %s --initrd %s --run '%s' "
		 "--log %s/console.log --wait-ready --timeout 120 "
		 ">%s/launcher.log 2>&1",
		 launcher, name, image, run, h_dir, h_dir);
	started = true;
	atexit(stop_guest);
	if (system(cmd))
		t_fail("the guest did not start (see %s/launcher.log)", h_dir);
	t_eq(h_result(dc, HVT_MSG_ATTACH, 0, 0, name, text, sizeof(text)), 0);

	/* The agent's session, then the workload's registration. */
	for (k = 0; k < 12000; k++) {
		if (!hvtrace_daemon_find_remote(dc, name, &rec) &&
		    rec.state == HVT_REMOTE_CONNECTED &&
		    event_listed(dc, rec.id, "hvt_e2e"))
			break;
		if (k % 100 == 0 && guest_ended())
			t_fail("the guest's run ended before the host saw its "
			       "event (console: %s/console.log)",
			       h_dir);
		usleep(10000);
	}
	if (k == 12000)
		t_fail("the guest's agent or workload did not show up");
	t_eq(rec.transport, HVT_TRANSPORT_CHARDEV);
	t_eq(rec.writer_kind, HVT_WRITER_GUEST);

	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_SUBSCRIBE;
	m.chan = rec.id;
	m.u.subscribe.cpu = -1;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 10000, NULL, NULL));
	t_eq(r.u.result.status, 0);
	sub = r.u.result.id;
	tep = h_tep(dc, rec.id);
	{
		struct tep_event *ev;

		ev = tep_find_event_by_name(tep, "user_events", "hvt_e2e");

		if (!ev)
			t_fail("no hvt_e2e format from the guest");
		seen.id = ev->id;
	}
	t_eq(h_result(dc, HVT_MSG_ENABLE, rec.id, 1, "hvt_e2e", text,
		      sizeof(text)),
	     0);
	deadline = h_now_ns() + 60000000000ull;
	while (seen.n < COUNT && h_now_ns() < deadline) {
		ret = hvtrace_daemon_recv(dc, &m, 1000);
		if (ret < 0)
			t_fail("%s", hvtrace_last_error());
		if (ret == 1 && m.type == HVT_MSG_PAGE && m.req == sub) {
			t_equ(m.u.page.lost_events, 0);
			h_decode_page(tep, &m.u.page, h_e2e_record, &seen);
		}
	}
	if (seen.n != COUNT)
		t_fail("%u of %d records from the guest arrived", seen.n,
		       COUNT);
	for (k = 0; k < COUNT; k++)
		if (counts[k] != 1)
			t_fail("seq %d arrived %u times", k, counts[k]);
	printf("guest %s: %u records through virtio-serial registration and "
	       "the BAR\n",
	       name, seen.n);
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_UNSUBSCRIBE;
	m.u.unsubscribe.sub = sub;
	t_ok(hvtrace_daemon_call(dc, &m, &r, 10000, NULL, NULL));
	tep_free(tep);

	/* Causality over virtio-serial. */
	h_wait_sync(dc, name, 96, 60000);
	h_causality(dc, name, rec.id, 1000, &res);
	printf("guest %s: %u round trips, %u violations; error bound %llu ns "
	       "from %llu sync samples; slack before/after >= %lld/%lld ns; "
	       "round trip mean %llu ns\n",
	       name, res.rounds, res.violations,
	       (unsigned long long)res.err_ns,
	       (unsigned long long)res.samples, (long long)res.min_before,
	       (long long)res.min_after, (unsigned long long)res.mean_rtt);
	if (res.violations)
		t_fail("%u causality violations over virtio-serial",
		       res.violations);
	hvtrace_daemon_close(dc);
	h_pass();
	return 0;
}
