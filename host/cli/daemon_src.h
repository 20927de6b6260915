/* SPDX-License-Identifier: MIT */
/*
 * hvtrace CLI: reading a remote through hvtraced by its name (stream,
 * stat), next to reading an area file directly.
 */
#ifndef HVT_CLI_DAEMON_SRC_H
#define HVT_CLI_DAEMON_SRC_H

#include <stdbool.h>
#include <stdint.h>

struct hvt_rstream_opts {
	const char *name;	  /* the remote */
	const char *sock;	  /* hvtraced's socket, NULL: default */
	int cpu;		  /* -1: all */
	unsigned long long count; /* 0: no limit */
	double timeout;		  /* seconds, 0: none */
	double window_ms;	  /* reorder window */
	bool drain, follow, summary;
	bool user_only; /* not the guest kernel's ring beside */
	bool kernel_only; /* the guest kernel's ring alone (--guest-kernel) */
	/* The host kernel beside (--kernel): its tracefs instance (NULL: a
	 * private one) and the events to enable there (NULL-terminated). */
	bool host_kernel;
	const char *kernel_instance;
	const char *const *kernel_events;
};

/* hvtrace stream NAME: the remote's events through hvtraced. */
int hvt_cli_stream_remote(const struct hvt_rstream_opts *o);

/* hvtrace stat NAME: per-CPU counters of hvtraced's reader. */
int hvt_cli_stat_remote(const char *name, const char *sock, int cpu);

struct hvt_rrecord_opts {
	const char *path; /* trace.dat */
	const char *sock;
	const char *const *events;     /* NULL: what the daemon enabled */
	double duration;	       /* seconds, 0: none */
	unsigned long long max_events; /* 0: none */
	bool quiet;
	bool kernel;		     /* the host kernel too (-k, -B) */
	const char *kernel_instance; /* -B NAME, or NULL */
	bool no_guest_kernel;	     /* leave a rig guest's kernel ring out */
	bool pair; /* ... or write it to a guest file of its own */
};

/* hvtrace record -o FILE REMOTE...: remotes through hvtraced (and the
 * host kernel with -k/-B). */
int hvt_cli_record_remotes(const struct hvt_rrecord_opts *o, int n,
			   char **remotes);

#endif
