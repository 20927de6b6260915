// SPDX-License-Identifier: MIT
/*
 * hvtrace record -o FILE [-k|-B NAME] REMOTE...: remotes of hvtraced (and
 * the host kernel) into trace.dat (hvtrace_tracedat_record_add_remote()),
 * with the same stops, signals and status line as recording areas.  A rig
 * guest's kernel ring joins its remote (hvt_cli_kring_of() finds it and
 * its formats; hvtrace_tracedat_record_add_remote_kring()) unless
 * --no-guest-kernel.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <hvtrace-daemon.h>
#include <hvtrace-tracedat.h>

#include "cli.h"
#include "daemon_src.h"

int hvt_cli_record_remotes(const struct hvt_rrecord_opts *o, int n,
			   char **remotes)
{
	struct hvtrace_tracedat_record_opts ro = {
		.path = o->path,
		.socket = o->sock,
		.events = o->events,
		.kernel = o->kernel,
		.kernel_instance = o->kernel_instance,
	};
	struct hvt_cli_rec rec = {
		.path = o->path,
		.duration = o->duration,
		.max_events = o->max_events,
		.quiet = o->quiet,
	};
	struct hvtrace_daemon_kring **kr;
	char(*formats)[PATH_MAX];
	int i, ret = HVT_EXIT_FAIL;

	kr = calloc((size_t)n, sizeof(*kr));
	formats = calloc((size_t)n, sizeof(*formats));
	if (!kr || !formats) {
		free(kr);
		free(formats);
		return hvt_cli_error("record", "out of memory");
	}
	/* -q: warnings and errors only. */
	hvt_cli_kring_quiet = o->quiet;
	/* Ctrl-C finishes the file instead of killing the process. */
	hvt_cli_catch_stop_signals(true);
	if (hvtrace_tracedat_record_create(&ro, &rec.r)) {
		hvt_cli_error("record", "%s", hvtrace_last_error());
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (hvtrace_tracedat_record_add_remote(rec.r, remotes[i],
						       NULL) < 0)
			goto fail;
		if (o->no_guest_kernel)
			continue;
		/* A rig guest's kernel ring, in a buffer of its own. */
		ret = hvt_cli_kring_of("record", remotes[i], o->sock,
				       formats[i], sizeof(formats[i]), &kr[i]);
		if (ret) {
			hvtrace_tracedat_record_abort(rec.r);
			goto out;
		}
		ret = HVT_EXIT_FAIL;
		if (kr[i] &&
		    hvtrace_tracedat_record_add_remote_kring(
			    rec.r, remotes[i], kr[i], formats[i]) < 0) {
			/* As the stream does: the user events without it. */
			fprintf(stderr,
				"hvtrace record: note: the guest kernel's ring "
				"of '%s' is left out: %s\n",
				remotes[i], hvtrace_last_error());
			hvt_cli_kring_close(kr[i], formats[i]);
			kr[i] = NULL;
		}
		rec.say_clock |= kr[i] != NULL;
	}
	if (hvtrace_tracedat_record_start(rec.r))
		goto fail;
	ret = hvt_cli_rec_run(&rec);
	goto out;
fail:
	hvt_cli_error("record", "%s", hvtrace_last_error());
	hvtrace_tracedat_record_abort(rec.r);
out:
	for (i = 0; i < n; i++)
		if (kr[i] || formats[i][0])
			hvt_cli_kring_close(kr[i], formats[i]);
	free(kr);
	free(formats);
	return ret;
}
