/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-fuse - the tracefs-style view of trace areas and of hvtraced's
 * remotes, as a FUSE file system (what hvtrace mount serves).
 * docs/fuse.md describes the file tree and the semantics of each file.
 * Same conventions as libhvtrace (<hvtrace.h>).
 */
#ifndef HVTRACE_FUSE_H
#define HVTRACE_FUSE_H

#include <stdbool.h>

#include <hvtrace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What to mount and serve. */
struct hvtrace_fuse_options {
	const char *mountpoint;
	const char *sock; /* hvtraced's socket (NULL: default) */
	bool no_daemon;
	char *const *areas; /* NAME=SPEC */
	unsigned int nr_areas;
	bool allow_other;
	bool debug;
	/* Called once the file system is mounted and ready (before the
	 * loop runs): detaching, telling a parent. */
	void (*ready)(void *arg);
	void *ready_arg;
};

/**
 * hvtrace_fuse_run - mount the view and serve it until unmounted or
 * signalled
 *
 * Return: 0 after a clean shutdown, or a negative errno (with
 * hvtrace_last_error() set).
 */
HVTRACE_API int hvtrace_fuse_run(const struct hvtrace_fuse_options *o);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_FUSE_H */
