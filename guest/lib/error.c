// SPDX-License-Identifier: MIT
/*
 * Per-thread error text behind hvtg_last_error().
 */
#include <stdarg.h>
#include <stdio.h>

#include "hvtg_internal.h"

static __thread char hvtg_errbuf[256];

int hvtg_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hvtg_errbuf, sizeof(hvtg_errbuf), fmt, ap);
	va_end(ap);
	return err;
}

const char *hvtg_last_error(void)
{
	return hvtg_errbuf[0] ? hvtg_errbuf : "no error";
}
