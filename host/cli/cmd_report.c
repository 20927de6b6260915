// SPDX-License-Identifier: MIT
/*
 * hvtrace report - print a trace.dat file the way trace-cmd report does.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <hvtrace-tracedat.h>

#include "cli.h"

static const char report_usage[] =
	"usage: hvtrace report [--stat] [-i] [FILE]\n"
	"       hvtrace report -i FILE -i FILE...\n"
	"\n"
	"Print the events of a trace.dat file (trace-cmd format, version 6\n"
	"or 7, uncompressed) like 'trace-cmd report': every buffer merged in\n"
	"time, each line tagged with its buffer's name when the file has\n"
	"buffers, decoded with libtraceevent from the formats saved in the\n"
	"file, and 'CPU:N [M EVENTS DROPPED]' where events were lost.  FILE\n"
	"defaults to trace.dat.  Useful where trace-cmd is not installed.\n"
	"Several files print in one time line, each line led by its file's\n"
	"name, as 'trace-cmd report -i HOST -i GUEST' prints the host/guest\n"
	"pair of 'hvtrace record --pair' (a guest file's TIME_SHIFT puts\n"
	"its times on the host's clock, in one file alone too).\n"
	"\n"
	"  -i FILE     a file to read (same as the FILE argument); repeat\n"
	"              it for several\n"
	"  --stat      print the CPU statistics saved in the file instead\n"
	"\n"
	"The file is treated as untrusted input: malformed pages are skipped\n"
	"and counted on stderr.\n";

static int report_run(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"stat", no_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *paths[64];
	unsigned int flags = 0, n = 0;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:i:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (n == sizeof(paths) / sizeof(paths[0]))
				return hvt_cli_usage(
					"report", "at most %zu files",
					sizeof(paths) / sizeof(paths[0]));
			paths[n++] = optarg;
			break;
		case 's':
			flags |= HVTRACE_TDAT_REPORT_STAT;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return HVT_EXIT_OK;
		default:
			return hvt_cli_bad_option("report", argv, c);
		}
	}
	if (optind < argc) {
		if (n || optind + 1 < argc)
			return hvt_cli_usage("report", "give one FILE, or each "
						       "file with -i");
		paths[n++] = argv[optind];
	}
	if (!n)
		paths[n++] = "trace.dat";
	if (n > 1 && (flags & HVTRACE_TDAT_REPORT_STAT))
		return hvt_cli_usage("report", "--stat takes one file");
	ret = hvtrace_tracedat_report_files(paths, n, stdout, flags);
	if (fflush(stdout))
		return HVT_EXIT_FAIL;
	if (ret)
		return hvt_cli_error("report", "%s", hvtrace_last_error());
	return HVT_EXIT_OK;
}

HVT_CLI_COMMAND(report, "report",
		"print a trace.dat file like trace-cmd report", report_usage,
		report_run);
