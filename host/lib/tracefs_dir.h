/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace internals: finding (and if need be mounting) the host's
 * tracefs, and the directory of a tracing instance in it.
 */
#ifndef HVT_HOST_TRACEFS_DIR_H
#define HVT_HOST_TRACEFS_DIR_H

#include <stddef.h>

#include "hvtrace-local.h"

/*
 * The tracefs mount point: /sys/kernel/tracing (mounted there first when
 * it is not, and this process may), else /sys/kernel/debug/tracing.
 * Return: 0 or -ENOENT (with hvtrace_last_error() set).
 */
HVT_INTERNAL int hvt_tracefs_dir(char *buf, size_t size);

/*
 * The directory of @instance: NULL for the top level, an absolute path as
 * is, else instances/@instance under the tracefs mount point.
 */
HVT_INTERNAL int hvt_tracefs_instance_dir(const char *instance, char *buf,
					  size_t size);

#endif /* HVT_HOST_TRACEFS_DIR_H */
