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
#include <sys/types.h>

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
	bool kernel_only;     /* NAME --guest-kernel: its kernel's ring only */
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
	dev_t ram_dev;	    /* ... the file it named when opened */
	ino_t ram_ino;
	char cache_formats[PATH_MAX]; /* ... its formats in the cache */
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
#endif
