// SPDX-License-Identifier: MIT
/*
 * hvtrace record -o FILE [-k|-B NAME] REMOTE...: remotes of hvtraced (and
 * the host kernel) into trace.dat (hvtrace_tracedat_record_add_remote()),
 * with the same stops, signals and status line as recording areas.
 */
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
	int i;

	/* Ctrl-C finishes the file instead of killing the process. */
	hvt_cli_catch_stop_signals(true);
	if (hvtrace_tracedat_record_create(&ro, &rec.r))
		return hvt_cli_error("record", "%s", hvtrace_last_error());
	for (i = 0; i < n; i++) {
		if (hvtrace_tracedat_record_add_remote(rec.r, remotes[i],
						       NULL) < 0) {
			hvt_cli_error("record", "%s", hvtrace_last_error());
			hvtrace_tracedat_record_abort(rec.r);
			return HVT_EXIT_FAIL;
		}
	}
	if (hvtrace_tracedat_record_start(rec.r)) {
		hvt_cli_error("record", "%s", hvtrace_last_error());
		hvtrace_tracedat_record_abort(rec.r);
		return HVT_EXIT_FAIL;
	}
	return hvt_cli_rec_run(&rec);
}
