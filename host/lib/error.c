// SPDX-License-Identifier: MIT
/*
 * Per-thread error text behind hvtrace_last_error().
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hvtrace-local.h"

static __thread char hvt_errbuf[512];

int hvt_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hvt_errbuf, sizeof(hvt_errbuf), fmt, ap);
	va_end(ap);
	return err;
}

HVTRACE_API const char *hvtrace_last_error(void)
{
	return hvt_errbuf[0] ? hvt_errbuf : "no error";
}
