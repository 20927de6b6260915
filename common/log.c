// SPDX-License-Identifier: MIT
/*
 * One-line log messages of a program to stderr, "PROG: message\n", each
 * written by one fprintf() so lines of concurrent threads do not mix; debug
 * messages only when verbose.  A daemon that detaches points stderr at
 * its log file.  hvtrace-agent and hvtraced log through it.
 */
#include <stdarg.h>
#include <stdio.h>

#include "hvt_util.h"

static const char *log_prog = "hvtrace";
static int log_verbose;

/**
 * hvt_util_log_setup() - name the program and set the debug switch
 * @prog:    prefix of every line (a string that outlives its use; NULL
 *           keeps the prefix set before, "hvtrace" at first)
 * @verbose: nonzero: hvt_util_dbg() prints too
 */
void hvt_util_log_setup(const char *prog, int verbose)
{
	if (prog)
		log_prog = prog;
	log_verbose = verbose;
}

/** hvt_util_log_verbose() - whether debug messages are printed */
int hvt_util_log_verbose(void)
{
	return log_verbose;
}

static void log_line(const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "%s: %s\n", log_prog, buf);
}

/** hvt_util_log() - print one message line (truncated at 1023 bytes) */
void hvt_util_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

/** hvt_util_dbg() - hvt_util_log(), only when verbose */
void hvt_util_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}
