// SPDX-License-Identifier: MIT
/*
 * hvtrace record - record trace areas or remotes of hvtraced (and the
 * host kernel) into a trace-cmd trace.dat file.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvtrace-tracedat.h>

#include "cli.h"
#include "daemon_src.h"
#include <hvtrace-daemon.h>

static const char record_usage[] =
	"usage: hvtrace record -o FILE [OPTIONS] [[NAME=]AREA...]\n"
	"       hvtrace record -o FILE [OPTIONS] [--socket PATH] REMOTE...\n"
	"       hvtrace record -o FILE --guest-kernel RAMFILE|--vm-pid PID|\n"
	"                      --domain DOMAIN [--formats DIR] [-q]\n"
	"       hvtrace record --recover FILE\n"
	"\n"
	"Record trace areas or remotes of hvtraced, and with --kernel the\n"
	"host kernel's ftrace, into a trace-cmd trace.dat file (version 7)\n"
	"for trace-cmd report and KernelShark.  Each AREA\n"
	"(PATH[@OFFSET[+SIZE]]) goes in a buffer of its own, named NAME or\n"
	"after its writer, each REMOTE in one named after it; the kernel's\n"
	"events go in the top-level buffer.  All buffers share the host's\n"
	"CLOCK_MONOTONIC: the kernel records with its 'mono' trace clock,\n"
	"remote timestamps are converted; a buffer with no clock model (no\n"
	"time sync: --read-only, a stopped writer) keeps the writer's own\n"
	"times under a clock of its own ('counter', 'writer-mono'), said on\n"
	"stderr.  The kernel is read as 'hvtrace\n"
	"stream --kernel' reads it: through the ring-buffer mmap, or, before\n"
	"Linux 6.10, read() of trace_pipe_raw (said once on stderr).\n"
	"\n"
	"  -o, --output FILE     the trace.dat to write (required)\n"
	"  -k, --kernel          record the host kernel's events too (with\n"
	"                        areas or with REMOTEs)\n"
	"  -B, --instance NAME   record the kernel's tracefs instance NAME\n"
	"                        (created if missing, removed afterwards)\n"
	"                        instead of the top-level one; implies -k\n"
	"  -e, --event PATTERN   enable events: SYSTEM, SYSTEM:EVENT, EVENT\n"
	"                        or 'all', shell globs allowed; repeatable.\n"
	"                        Without -e the kernel keeps the events it\n"
	"                        has enabled (trace_marker writes are always\n"
	"                        recorded) and areas record all their events\n"
	"  -d, --duration S      stop after S seconds\n"
	"  -n, --events N        stop once N events were recorded (what\n"
	"                        is pending then is kept too)\n"
	"      --read-only, --no-control\n"
	"                        attach areas read-only (no enabling, no\n"
	"                        time sync, nothing written to the area;\n"
	"                        beside another owner, or for post-mortem\n"
	"                        copies; not with REMOTEs)\n"
	"      --reader-threads N\n"
	"                        read the areas' CPU buffers with N threads\n"
	"                        (1..256, or 'auto', the default: one per\n"
	"                        CPU buffer up to the online CPUs and 8);\n"
	"                        the file is the same whatever N.  Raise it\n"
	"                        for guests with many CPUs whose writers\n"
	"                        outrun one reader (lost events); not with\n"
	"                        REMOTEs (hvtraced reads them)\n"
	"      --guest-kernel RAMFILE\n"
	"                        record a guest kernel's persistent ring\n"
	"                        (docs/guest-kernel.md) from its guest RAM\n"
	"                        file instead: as it is, up to its newest\n"
	"                        event (a dead guest's, a running guest's\n"
	"                        so far), with the guest's own trace clock;\n"
	"                        recorded alone\n"
	"      --vm-pid PID      the same from the memory of VMM process PID\n"
	"      --domain DOMAIN   the same from the QEMU of libvirt domain\n"
	"                        DOMAIN (its pid from libvirt's pid file)\n"
	"      --formats DIR     the guest kernel's formats (a copy of its\n"
	"                        tracefs files: hvtrace-guest kformats);\n"
	"                        with a RAM file, the default is the\n"
	"                        formats cache's entry of its kernel\n"
	"                        ($HVT_CACHE/kformats: what hvtraced kept\n"
	"                        from the guest's agent)\n"
	"      --no-guest-kernel leave out the kernel ring of a rig guest\n"
	"                        REMOTE (by default its events go in a\n"
	"                        buffer REMOTE-kernel, on the host's clock)\n"
	"      --pair            write a rig guest REMOTE's kernel ring\n"
	"                        to a guest file of its own instead,\n"
	"                        FILE-REMOTE.dat (FILE less .dat): the\n"
	"                        host/guest pair of 'trace-cmd record -A',\n"
	"                        on the guest's clock with TIME_SHIFT, its\n"
	"                        kallsyms, trace ids and the GUEST option\n"
	"                        (vCPU threads) in FILE; read with\n"
	"                        'trace-cmd report -i FILE -i GUESTFILE',\n"
	"                        'kernelshark FILE -a GUESTFILE'\n"
	"  -q, --quiet           warnings and errors only: no status line,\n"
	"                        no notes (the clock models' error bounds\n"
	"                        stay in the file: hvtrace report --stat)\n"
	"      --socket PATH     hvtraced's socket, for REMOTEs (default\n"
	"                        $HVTRACED_SOCKET or "
	"/run/hvtrace/hvtraced.sock)\n"
	"\n"
	"A REMOTE is the name of a remote of hvtraced (a guest, a local\n"
	"agent, a hypervisor or loopback area attached with 'hvtrace daemon\n"
	"attach'): hvtraced owns it and hands its pages to the recorder.\n"
	"Remotes go in buffers named after them, next to the kernel's events\n"
	"with -k or -B; -e enables the matching events for the recording\n"
	"(and disables them again at the end), without -e the events\n"
	"hvtraced has enabled are recorded.  Record remotes and areas in\n"
	"separate runs (or attach the areas to hvtraced too).\n"
	"\n"
	"      --recover FILE    write FILE from what a killed recording\n"
	"                        left in FILE.unfinished, and remove that\n"
	"\n"
	"While recording, FILE.unfinished (mode 0600, beside FILE) keeps\n"
	"what was recorded; it is gone once FILE is complete.  A recording\n"
	"killed outright (SIGKILL, the OOM killer, a power cut) leaves it:\n"
	"--recover FILE then writes FILE with every event written more\n"
	"than 0.5 s (1.5 s for a power cut) before the kill, but for the\n"
	"last partly filled page of each CPU.\n"
	"\n"
	"Recording stops on Ctrl-C or SIGTERM (the file is then finished\n"
	"and complete), after --duration or --events, or once every area's\n"
	"or REMOTE's writer has stopped (or died, or the remote was\n"
	"detached) and everything it wrote was read.\n"
	"With only --kernel it runs until interrupted or a limit is reached.\n"
	"While stderr is a terminal a status line shows events/s, lost\n"
	"events and bytes per buffer.\n"
	"\n"
	"  hvtrace record -o trace.dat /dev/shm/hvt-loop\n"
	"  hvtrace record -o t.dat -k -e sched:sched_switch g0=/dev/shm/g0\n"
	"  hvtrace record -o t.dat -k -d 10 guest0 hyp0\n"
	"  trace-cmd report trace.dat; kernelshark trace.dat\n";

/* hvtrace record --recover FILE: FILE from FILE.unfinished. */
static int record_recover(const char *path, bool quiet)
{
	struct hvtrace_tracedat_recover_stats st;

	if (hvtrace_tracedat_recover(path, &st))
		return hvt_cli_error("record", "%s", hvtrace_last_error());
	if (st.bad_records || st.bad_pages)
		fprintf(stderr,
			"hvtrace record: %s: %llu damaged record(s) "
			"(%llu bytes%s) and %llu bad page(s) skipped\n",
			path, (unsigned long long)st.bad_records,
			(unsigned long long)st.bad_bytes,
			st.torn ? ", the last one cut off by the kill" : "",
			(unsigned long long)st.bad_pages);
	if (!quiet)
		fprintf(stderr, "hvtrace record: recovered %s: %llu pages\n",
			path, (unsigned long long)st.pages);
	return HVT_EXIT_OK;
}

static int record_run(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"kernel", no_argument, NULL, 'k'},
		{"instance", required_argument, NULL, 'B'},
		{"event", required_argument, NULL, 'e'},
		{"duration", required_argument, NULL, 'd'},
		{"events", required_argument, NULL, 'n'},
		{"no-control", no_argument, NULL, 'C'},
		{"read-only", no_argument, NULL, 'C'},
		{"quiet", no_argument, NULL, 'q'},
		{"reader-threads", required_argument, NULL, 'R'},
		{"socket", required_argument, NULL, 'S'},
		{"guest-kernel", required_argument, NULL, 'G'},
		{"vm-pid", required_argument, NULL, 'P'},
		{"domain", required_argument, NULL, 'D'},
		{"formats", required_argument, NULL, 'F'},
		{"no-guest-kernel", no_argument, NULL, 'K'},
		{"pair", no_argument, NULL, 'A'},
		{"recover", required_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct hvtrace_tracedat_record_opts o = {0};
	struct hvt_cli_rec rec = {
		.errors_note = " (the events they hid are counted lost)",
	};
	const char **events;
	unsigned long long max_events = 0;
	double duration = 0;
	bool quiet = false, threads_set = false, no_guest_kernel = false;
	bool pair = false;
	unsigned int threads = 0;
	const char *sock = NULL, *recover = NULL, *domain = NULL;
	static char cached[PATH_MAX];
	int nev = 0, c, i, ret;

	events = calloc((size_t)argc + 1, sizeof(*events));
	if (!events)
		return hvt_cli_error("record", "out of memory");
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:kB:e:d:n:qh", lopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'o':
			o.path = optarg;
			break;
		case 'k':
			o.kernel = true;
			break;
		case 'B':
			o.kernel = true;
			o.kernel_instance = optarg;
			break;
		case 'e':
			events[nev++] = optarg;
			break;
		case 'd':
			if (hvt_cli_parse_seconds(optarg, &duration)) {
				free(events);
				return hvt_cli_usage(
					"record",
					"bad --duration '%s' (seconds, "
					"e.g. 2.5)",
					optarg);
			}
			break;
		case 'n':
			if (hvt_cli_parse_u64(optarg, &max_events) ||
			    !max_events) {
				free(events);
				return hvt_cli_usage(
					"record",
					"bad --events '%s' (a positive "
					"count)",
					optarg);
			}
			break;
		case 'C':
			o.flags |= HVTRACE_TDAT_REC_NO_CONTROL;
			break;
		case 'q':
			quiet = true;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'G':
			o.guest_ram = optarg;
			break;
		case 'P':
			if (hvt_cli_parse_pid(optarg, &o.guest_pid)) {
				free(events);
				return hvt_cli_usage("record",
						     "bad --vm-pid '%s' (a "
						     "process id)",
						     optarg);
			}
			break;
		case 'D':
			domain = optarg;
			break;
		case 'F':
			o.guest_formats = optarg;
			break;
		case 'K':
			no_guest_kernel = true;
			break;
		case 'A':
			pair = true;
			break;
		case 'R':
			if (hvt_cli_parse_reader_threads(optarg, &threads)) {
				free(events);
				return hvt_cli_usage(
					"record",
					"bad --reader-threads '%s' (1..256 "
					"or 'auto')",
					optarg);
			}
			threads_set = true;
			break;
		case 'V':
			recover = optarg;
			break;
		case 'h':
			free(events);
			fputs(record_usage, stdout);
			return HVT_EXIT_OK;
		default:
			free(events);
			return hvt_cli_bad_option("record", argv, c);
		}
	}
	o.events = nev ? events : NULL;
	if (domain) {
		int rc = o.guest_pid ? hvt_cli_usage("record", "--domain or "
							       "--vm-pid, not "
							       "both")
				     : hvt_cli_domain_pid("record", domain,
							  &o.guest_pid);

		if (rc) {
			free(events);
			return rc;
		}
	}
	if (recover) {
		free(events);
		if (optind < argc || o.path || nev || o.kernel)
			return hvt_cli_usage("record", "--recover FILE goes "
						       "alone");
		return record_recover(recover, quiet);
	}
	if (o.guest_ram || o.guest_pid || o.guest_formats) {
		const char *why = NULL;

		if (o.guest_ram && o.guest_pid)
			why = "give --guest-kernel RAMFILE or --vm-pid PID, not "
			      "both";
		else if (!o.guest_ram && !o.guest_pid)
			why = "--formats goes with --guest-kernel RAMFILE or "
			      "--vm-pid PID";
		else if (optind < argc || o.kernel || sock || threads_set ||
			 (o.flags & HVTRACE_TDAT_REC_NO_CONTROL))
			why = "a guest kernel's ring is recorded alone: no "
			      "areas, remotes, --kernel, --socket, "
			      "--read-only or --reader-threads with it";
		else if (!o.path)
			why = "no output file: give -o FILE";
		if (why) {
			free(events);
			return hvt_cli_usage("record", "%s", why);
		}
		/* A RAM file without --formats: the formats cache's entry of
		 * the kernel it held (stderr says which, or why none). */
		if (o.guest_ram && !o.guest_formats &&
		    !hvt_cli_kformats_cached("record", o.guest_ram, NULL,
					     cached, sizeof(cached)))
			o.guest_formats = cached;
		/* A VMM by pid: the entry its kernel's vmcoreinfo names. */
		if (o.guest_pid && !o.guest_formats &&
		    !hvt_cli_kformats_of_pid("record", o.guest_pid, cached,
					     sizeof(cached)))
			o.guest_formats = cached;
	}
	if (optind < argc && hvtrace_daemon_name_is_remote(argv[optind])) {
		struct hvt_rrecord_opts ro = {
			.path = o.path,
			.sock = sock,
			.events = o.events,
			.duration = duration,
			.max_events = max_events,
			.quiet = quiet,
			.kernel = o.kernel,
			.kernel_instance = o.kernel_instance,
			.no_guest_kernel = no_guest_kernel,
			.pair = pair,
		};

		if (pair && no_guest_kernel) {
			free(events);
			return hvt_cli_usage("record",
					     "--pair writes the guest kernel "
					     "rings --no-guest-kernel leaves "
					     "out: give one of them");
		}
		if (threads_set) {
			free(events);
			return hvt_cli_usage("record",
					     "--reader-threads is for areas: "
					     "hvtraced reads its remotes");
		}
		if (o.flags & HVTRACE_TDAT_REC_NO_CONTROL) {
			free(events);
			return hvt_cli_usage(
				"record", "--read-only is for areas: hvtraced "
					  "owns its remotes and reads them "
					  "itself");
		}
		for (i = optind; i < argc; i++)
			if (!hvtrace_daemon_name_is_remote(argv[i])) {
				free(events);
				return hvt_cli_usage(
					"record",
					"'%s' is not a remote of hvtraced, "
					"'%s' is: record areas and remotes in "
					"separate runs (or attach the area: "
					"hvtrace daemon attach --area)",
					argv[i], argv[optind]);
			}
		ret = hvt_cli_record_remotes(&ro, argc - optind, argv + optind);
		free(events);
		return ret;
	}
	if (sock || pair) {
		free(events);
		return hvt_cli_usage("record", "%s goes with remote names",
				     sock ? "--socket" : "--pair");
	}
	if (!o.path) {
		free(events);
		return hvt_cli_usage("record", "no output file: give -o FILE");
	}
	if (optind >= argc && !o.kernel && !o.guest_ram && !o.guest_pid) {
		free(events);
		return hvt_cli_usage("record",
				     "nothing to record: give trace areas "
				     "(PATH[@OFFSET[+SIZE]]) and/or --kernel");
	}

	/* Ctrl-C finishes the file instead of killing the process. */
	hvt_cli_catch_stop_signals(true);
	ret = hvtrace_tracedat_record_create(&o, &rec.r);
	if (ret) {
		free(events);
		return hvt_cli_error("record", "%s", hvtrace_last_error());
	}
	for (i = optind; i < argc; i++) {
		const char *spec = argv[i], *eq = strchr(spec, '='),
			   *name = NULL;
		char nbuf[64];

		/* NAME=AREA, unless the '=' is part of a path. */
		if (eq && eq != spec &&
		    !memchr(spec, '/', (size_t)(eq - spec)) &&
		    (size_t)(eq - spec) < sizeof(nbuf)) {
			memcpy(nbuf, spec, (size_t)(eq - spec));
			nbuf[eq - spec] = '\0';
			name = nbuf;
			spec = eq + 1;
		}
		ret = hvtrace_tracedat_record_add_area(rec.r, spec, name);
		if (ret < 0) {
			hvt_cli_error("record", "%s", hvtrace_last_error());
			hvtrace_tracedat_record_abort(rec.r);
			free(events);
			return HVT_EXIT_FAIL;
		}
	}
	ret = hvtrace_tracedat_record_set_reader_threads(rec.r, threads);
	if (!ret)
		ret = hvtrace_tracedat_record_start(rec.r);
	if (ret) {
		hvt_cli_error("record", "%s", hvtrace_last_error());
		hvtrace_tracedat_record_abort(rec.r);
		free(events);
		return HVT_EXIT_FAIL;
	}
	free(events);
	rec.path = o.path;
	rec.duration = duration;
	rec.max_events = max_events;
	rec.quiet = quiet;
	return hvt_cli_rec_run(&rec);
}

HVT_CLI_COMMAND(record, "record",
		"record areas or remotes (and the kernel) into a trace.dat",
		record_usage, record_run);
