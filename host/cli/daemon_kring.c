// SPDX-License-Identifier: MIT
/*
 * The guest kernel's own ring of a remote NAME, for the verbs that read
 * remotes (stream NAME today): its formats, and the ring beside them.
 *
 * A rig guest started with --kernel-events keeps its kernel's ftrace ring
 * in its RAM file; libhvtrace-daemon's hvtrace_daemon_kring_*() read it.
 * What the library cannot do is find the guest's formats: the guest
 * printed them on its console at boot, and the rig's launcher unpacks
 * them (hvtrace-guest kformats NAME DIR) into a private folder that lives
 * as long as the ring is read.  The ring joins the remote's user events
 * only when its trace clock is mono, the clock of the guest's agent, so
 * that both go through hvtraced's conversion to host time; otherwise it is
 * left out and stderr says why.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace-daemon.h>

#include "cli.h"

static void ck_rm(const char *dir)
{
	char *argv[] = {"rm", "-rf", (char *)dir, NULL};

	if (dir[0])
		hvt_cli_run(argv, NULL);
}

int hvt_cli_kring_open(const char *verb, const char *name, char *formats,
		       size_t size, struct hvtrace_daemon_kring **out)
{
	char ram[PATH_MAX], launcher[PATH_MAX], *argv[5], *text = NULL;
	char clock[64];
	int rc;

	*out = NULL;
	formats[0] = '\0';
	if (hvtrace_daemon_kring_path(name, ram, sizeof(ram)) <= 0)
		return 0; /* no kernel ring: user events only */
	snprintf(formats, size, "/tmp/hvtrace-kformats.XXXXXX");
	if (!mkdtemp(formats)) {
		formats[0] = '\0';
		return hvt_cli_error(verb,
				     "cannot make a folder for the "
				     "guest kernel's formats: %s",
				     strerror(errno));
	}
	hvt_cli_launcher(launcher, sizeof(launcher));
	argv[0] = launcher;
	argv[1] = "kformats";
	argv[2] = (char *)name;
	argv[3] = formats;
	argv[4] = NULL;
	rc = hvt_cli_run(argv, &text);
	free(text);
	if (rc || !hvt_cli_ring_clock_mono(formats, clock, sizeof(clock))) {
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's ring of '%s' "
			"is left out: %s (hvtrace stream %s --guest-kernel "
			"reads it alone)\n",
			verb, name,
			rc ? "its formats are not on its console"
			   : "its clock is not mono, the agent's",
			name);
		goto none;
	}
	if (hvtrace_daemon_kring_open(name, formats, out)) {
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's ring of '%s' "
			"is left out: %s\n",
			verb, name, hvtrace_last_error());
		goto none;
	}
	if (!*out)
		goto none; /* the RAM file went away */
	fprintf(stderr,
		"hvtrace %s: '%s': the guest kernel's ring (%u CPUs) "
		"beside its user events, on the host's clock\n",
		verb, name, hvtrace_daemon_kring_cpus(*out));
	return 0;
none:
	ck_rm(formats);
	formats[0] = '\0';
	return 0;
}

void hvt_cli_kring_close(struct hvtrace_daemon_kring *r, char *formats)
{
	hvtrace_daemon_kring_close(r);
	if (formats) {
		ck_rm(formats);
		formats[0] = '\0';
	}
}
