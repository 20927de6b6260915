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
	"\n"
	"Print the events of a trace.dat file (trace-cmd format, version 6\n"
	"or 7, uncompressed) like 'trace-cmd report': every buffer merged in\n"
	"time, each line tagged with its buffer's name when the file has\n"
	"buffers, decoded with libtraceevent from the formats saved in the\n"
	"file, and 'CPU:N [M EVENTS DROPPED]' where events were lost.  FILE\n"
	"defaults to trace.dat.  Useful where trace-cmd is not installed.\n"
	"\n"
	"  -i FILE     the file to read (same as the FILE argument)\n"
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
	const char *path = NULL;
	unsigned int flags = 0;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:i:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
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
		if (path || optind + 1 < argc)
			return hvt_cli_usage("report", "give one file");
		path = argv[optind];
	}
	if (!path)
		path = "trace.dat";
	ret = hvtrace_tracedat_report(path, stdout, flags);
	if (fflush(stdout))
		return HVT_EXIT_FAIL;
	if (ret)
		return hvt_cli_error("report", "%s", hvtrace_last_error());
	return HVT_EXIT_OK;
}

HVT_CLI_COMMAND(report, "report",
		"print a trace.dat file like trace-cmd report", report_usage,
		report_run);
