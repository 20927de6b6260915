/* SPDX-License-Identifier: MIT */
/*
 * hvtrace stream: the state of a stream, shared by cmd_stream.c (options,
 * the merge loop, printing) and stream_open.c (opening an area, the host
 * kernel or a guest kernel's ring as per-CPU rings).
 */
#ifndef HVT_CLI_STREAM_H
#define HVT_CLI_STREAM_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <hvtrace.h>
#include <hvtrace-daemon.h>

#define VERB "stream"

struct st_cpu {
	struct hvtrace_ring *ring;
	int cpu;
	unsigned long long events;
	unsigned long long lost;
	bool lost_unknown;
};

struct st_state {
	/* options */
	const char *spec;
	const char *sock; /* hvtraced, for a remote NAME */
	bool kernel;
	const char *instance;
	int only_cpu;
	unsigned long long count;
	double timeout;
	double window_ms;
	bool drain, follow, read_only, summary;
	bool guest_kernel;
	bool no_guest_kernel; /* NAME: its user events only */
	const char *formats;
	int vm_pid; /* --vm-pid: the VMM process */
	bool remote;	  /* spec is a remote NAME of hvtraced */
	bool host_kernel; /* NAME --kernel: the host kernel beside */
	const char *events[65]; /* -e patterns, NULL-terminated */
	unsigned int nr_events;

	/* sources */
	struct hvtrace_area *area;
	struct hvtrace_kring *kring;
	char ram[512];	    /* guest kernel: its RAM file */
	bool rig_guest;	    /* ... of a rig guest NAME (s->spec) */
	char ram_via[64];   /* its checked descriptor, /proc/self/fd/N */
	int ram_fd;	    /* ... kept open while ram_via is set */
	char kformats[PATH_MAX]; /* ... formats unpacked from its console */
	char cache_formats[PATH_MAX]; /* ... or found in the formats cache */
	struct hvtrace_area_info info;
	bool control;
	bool syncing;
	bool own_clock; /* no clock model: the writer's own times */
	struct hvtrace_decoder *dec;
	struct st_cpu *cpus;
	unsigned int nr;
	struct hvtrace_merge *merge;
	unsigned int text_flags;

	uint64_t cmdlines_at; /* kernel: last saved_cmdlines read */

	/* guest kernel times on the host clock (stream_kclock.c) */
	const char *kclock_name; /* the rig guest NAME, or NULL */
	bool boot_clock_unknown;  /* formats from the cache alone */
	struct hvtrace_daemon *kclock_dc;
	struct hvtrace_daemon_feed *kclock_feed;
	uint32_t kclock_remote;
	bool kclock_on, kclock_said;
	uint64_t kclock_g0, kclock_h0, kclock_h1, kclock_at, kclock_err;
	uint64_t kclock_bound; /* the error bound of the line now */

	/* comm lookups already tried (loopback writer threads) */
	int tried[256];
	unsigned int nr_tried;

	/* output */
	char *line;
	size_t line_cap;
	unsigned long long printed, lost;
	bool out_broken;
	struct hvt_cli_order order; /* the latest time printed */
};

/* The source's rings, decoder and formats (stream_open.c); each returns
 * 0 or an exit code, the error printed. */
int st_open_area(struct st_state *s);
int st_open_kernel(struct st_state *s);
int st_open_kring(struct st_state *s);
/* Guest kernel times through hvtraced's clock model of guest
 * @kclock_name, when it has one (stream_kclock.c); a note on stderr
 * either way. */
void st_kclock_open(struct st_state *s);
/* @ts on the host's clock, its error bound in *@err_ns (UINT64_MAX: the
 * guest's own time). */
uint64_t st_kclock_map(struct st_state *s, uint64_t ts, uint64_t *err_ns);
void st_kclock_close(struct st_state *s);
/* Remove a directory tree (formats unpacked from a console). */

#endif
