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
#include <stddef.h>

#include <hvtrace.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hvtrace_daemon_kring; /* <hvtrace-daemon.h> */

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
	/*
	 * The guest kernel's own ring of a remote of hvtraced (a guest
	 * whose agent's clock is mono), asked once per run of the remote's
	 * writer, when its agent session is up.  NULL: no remote shows its
	 * guest kernel's events.
	 *
	 * kring_open() returns 0 with *@out set, the folder of the guest
	 * kernel's formats (laid out like tracefs) in @formats and, when
	 * known, the events its instance has enabled in the kernel's syntax
	 * ("sched,ftrace:print") in @enabled (else ""); or 0 with *@out NULL
	 * when the remote has none.  kring_close() gives both back; the
	 * view reads the folder only between the two.
	 */
	int (*kring_open)(void *arg, const char *name,
			  struct hvtrace_daemon_kring **out, char *formats,
			  size_t formats_size, char *enabled,
			  size_t enabled_size);
	void (*kring_close)(void *arg, struct hvtrace_daemon_kring *kr,
			    char *formats);
	void *kring_arg;
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
