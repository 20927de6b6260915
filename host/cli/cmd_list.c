// SPDX-License-Identifier: MIT
/*
 * hvtrace list - the remotes hvtraced has attached: guests, local agents
 * and whatever else it reads, with their ring geometry, state and how
 * well their clocks are synchronised.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>
#include <hvtrace/abi.h>
#include <hvtrace/proto.h>

#include "cli.h"
#include <hvtrace-daemon.h>

#define VERB "list"

static const char list_usage[] =
	"usage: hvtrace list [--socket PATH]\n"
	"\n"
	"The remotes hvtraced has attached, one per line:\n"
	"\n"
	"  NAME       the remote's name (a guest's name, a local agent's\n"
	"             --name)\n"
	"  KIND       who writes: guest, hyp (hypervisor), loopback\n"
	"  LINK       how hvtraced talks to its agent: chardev (a guest's\n"
	"             virtio-serial port), socket (a local agent), or the\n"
	"             transport's number\n"
	"  STATE      connected (agent session up), waiting (attached, no\n"
	"             agent yet), disconnected (its agent or QEMU left;\n"
	"             its area stays readable), missing (attached again\n"
	"             after a restart of hvtraced, but its area file is\n"
	"             gone: a line below the table names the file and\n"
	"             what to do).  A rig guest ('hvtrace guest') has the\n"
	"             words of 'hvtrace guest status': booting (its agent\n"
	"             not up yet), ready (agent up), and once its QEMU ended\n"
	"             unasked powered-off (it powered itself off, as\n"
	"             --run does when its command ends), panicked (its\n"
	"             kernel panicked) or crashed (QEMU killed or failed);\n"
	"             its area stays readable\n"
	"  MODE       consume (producer-consumer: new events are dropped\n"
	"             when full) or overwrite (flight recorder)\n"
	"  CPUS       CPU buffers\n"
	"  SIZE       ring bytes over all CPUs (sub-buffers x size x CPUs)\n"
	"  EVENTS     user events registered\n"
	"  CLOCK_ERR  time-sync error bound of the writer's clock on the\n"
	"             host's CLOCK_MONOTONIC ('-': not synchronised yet)\n"
	"\n"
	"Says so, and exits 1, when hvtraced is not running.\n"
	"\n"
	"  --socket PATH   hvtraced's socket (default $HVTRACED_SOCKET or\n"
	"                  " HVTRACE_DAEMON_DEFAULT_SOCKET ")\n";

static const char *kind_name(uint32_t k)
{
	return k == HVT_WRITER_GUEST	  ? "guest"
	       : k == HVT_WRITER_HYP	  ? "hyp"
	       : k == HVT_WRITER_LOOPBACK ? "loopback"
					  : "-";
}

static void human(uint64_t v, char *buf, size_t size)
{
	static const char units[] = "BKMGT";
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, size, "%lluB", (unsigned long long)v);
	else
		snprintf(buf, size, "%.*f%c", d < 10 ? 1 : 0, d, units[u]);
}

/* A missing remote: which file is gone (TEXT INFO's "missing: " line)
 * and what to do. */
static void list_missing(struct hvtrace_daemon *dc,
			 const struct hvt_remote_rec *x)
{
	char *text = NULL, *p, *end;
	size_t len = 0;

	if (!hvtrace_daemon_get_text(dc, x->id, HVT_TEXT_INFO, &text, &len) &&
	    text && (p = strstr(text, "\nmissing: "))) {
		p += strlen("\nmissing: ");
		end = strchr(p, '\n');
		if (end)
			*end = '\0';
	} else {
		p = NULL;
	}
	printf("%s: missing (file gone: %s): create it again, attach it again "
	       "('hvtrace daemon attach --area PATH --name %s') or forget it "
	       "('hvtrace daemon detach %s')\n",
	       x->name, p ? p : "?", x->name, x->name);
	free(text);
}

static int list_run(int argc, char **argv)
{
	const char *sock = NULL;
	struct hvtrace_daemon *dc;
	struct hvt_msg m, r;
	uint32_t i;
	int k;

	for (k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--socket") && k + 1 < argc)
			sock = argv[++k];
		else if (!strcmp(argv[k], "--socket"))
			return hvt_cli_usage(VERB, "option '%s' needs a value",
					     argv[k]);
		else if (argv[k][0] == '-')
			return hvt_cli_usage(VERB, "unknown option '%s'",
					     argv[k]);
		else
			return hvt_cli_usage(VERB, "unexpected '%s'", argv[k]);
	}
	if (hvtrace_daemon_open(sock, &dc))
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_REMOTES;
	if (hvtrace_daemon_call(dc, &m, &r, HVTRACE_DAEMON_TIMEOUT_MS, NULL, NULL) ||
	    r.type != HVT_MSG_REMOTES) {
		hvtrace_daemon_close(dc);
		return hvt_cli_error(VERB,
				     "hvtraced did not list its remotes: "
				     "%s",
				     hvtrace_last_error());
	}
	if (!r.u.remotes.recs.count) {
		printf("hvtraced runs and has no remotes: 'hvtrace guest start "
		       "NAME' boots and attaches a guest\n");
		hvtrace_daemon_close(dc);
		return HVT_EXIT_OK;
	}
	printf("%-20s %-8s %-7s %-12s %-9s %4s %7s %6s %10s\n", "NAME", "KIND",
	       "LINK", "STATE", "MODE", "CPUS", "SIZE", "EVENTS", "CLOCK_ERR");
	for (i = 0; i < r.u.remotes.recs.count; i++) {
		struct hvt_remote_rec x;
		char size[32], err[32], link[16];

		hvt_msg_remote_at(&r.u.remotes.recs, i, &x);
		if (x.nr_cpus)
			human((uint64_t)x.nr_cpus * x.nr_subbufs *
				      x.subbuf_size,
			      size, sizeof(size));
		else
			snprintf(size, sizeof(size), "-");
		if (x.clock_err_ns == UINT64_MAX)
			snprintf(err, sizeof(err), "-");
		else if (x.clock_err_ns < 10000)
			snprintf(err, sizeof(err), "%lluns",
				 (unsigned long long)x.clock_err_ns);
		else
			snprintf(err, sizeof(err), "%.1fus",
				 (double)x.clock_err_ns / 1000.0);
		if (x.transport == HVT_TRANSPORT_CHARDEV)
			snprintf(link, sizeof(link), "chardev");
		else if (x.transport == HVT_TRANSPORT_SOCKET)
			snprintf(link, sizeof(link), "socket");
		else if (x.transport == HVT_TRANSPORT_AREA)
			snprintf(link, sizeof(link), "area");
		else if (x.transport == HVT_TRANSPORT_KRING)
			snprintf(link, sizeof(link), "kring");
		else
			snprintf(link, sizeof(link), "%u", x.transport);
		printf("%-20s %-8s %-7s %-12s %-9s %4u %7s %6u %10s\n", x.name,
		       x.nr_cpus ? kind_name(x.writer_kind) : "-", link,
		       hvt_remote_state_word(x.state, x.transport),
		       !x.nr_cpus		      ? "-"
		       : x.mode == HVT_MODE_OVERWRITE ? "overwrite"
		       : x.mode == HVT_MODE_CONSUME   ? "consume"
						      : "?",
		       x.nr_cpus, size, x.nr_events, err);
	}
	for (i = 0; i < r.u.remotes.recs.count; i++) {
		struct hvt_remote_rec x;

		hvt_msg_remote_at(&r.u.remotes.recs, i, &x);
		if (x.state == HVT_REMOTE_MISSING)
			list_missing(dc, &x);
	}
	hvtrace_daemon_close(dc);
	return HVT_EXIT_OK;
}

HVT_CLI_COMMAND(list, "list",
		"the remotes hvtraced reads: kind, state, mode, CPUs, size, "
		"clock error",
		list_usage, list_run);
