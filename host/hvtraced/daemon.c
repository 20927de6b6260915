// SPDX-License-Identifier: MIT
/*
 * hvtraced: the daemon's one instance, its clocks and its log.
 *
 * The bottom of the daemon's call graph: every other file calls these and
 * they call none of them (docs/proxy.md, "Inside hvtraced").  The clocks
 * are CLOCK_MONOTONIC, the clock of every deadline and time-sync sample;
 * the log goes to stderr (a file once main.c detached).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "daemon.h"

struct daemon *D;

uint64_t d_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t d_now_us(void)
{
	return d_now_ns() / 1000;
}

uint64_t d_now_ms(void)
{
	return d_now_ns() / 1000000;
}

static void d_vlog(const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "hvtraced: %s\n", buf);
}

void d_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	d_vlog(fmt, ap);
	va_end(ap);
}

void d_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!D || !D->verbose)
		return;
	va_start(ap, fmt);
	d_vlog(fmt, ap);
	va_end(ap);
}
