/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace - the loopback writer: a writer running in the
 * calling process, the whole pipeline without a VM.
 *
 * Part of the core library; <hvtrace.h> includes it, and it may be
 * included on its own.  Conventions as in <hvtrace.h>.
 */
#ifndef HVTRACE_LOOPBACK_H
#define HVTRACE_LOOPBACK_H

#include <hvtrace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- loopback writer ------------------------------------------------------ */

/*
 * A local writer process that formats an area file and writes selftest
 * events into it with one pinned thread per CPU, through the writer core's
 * direct API: the whole pipeline without a VM.
 */
struct hvtrace_loopback;

struct hvtrace_loopback_params {
	const char *path;	/* area file to create (/dev/shm/NAME) */
	uint32_t nr_cpus;	/* CPU buffers = writer threads */
	uint32_t nr_subbufs;	/* per CPU, power of two */
	uint32_t subbuf_size;	/* power of two, 4K..64K */
	uint32_t mode;		/* HVT_MODE_* */
	uint32_t clock_id;	/* HVT_CLOCK_COUNTER or HVT_CLOCK_MONO_NS */
	uint64_t events;	/* per CPU; 0: until stopped */
	uint64_t rate;		/* events/s per CPU; 0: as fast as possible */
	double duration;	/* seconds; 0: no limit */
	/* Start with the selftest event enabled in the control page (the
	 * writer plays the host's part until a host takes control); false:
	 * wait, writing nothing, until a host enables it. */
	bool pre_enable;
};

/* One writer thread's account. */
struct hvtrace_loopback_cpu_stats {
	uint64_t written;	/* committed into the ring */
	uint64_t dropped;	/* ring full (consume mode): counted lost */
	uint64_t next_id;	/* written + dropped: the next id */
	uint64_t disabled_waits; /* polls that found the event disabled */
	uint64_t syncs;		/* time-sync requests answered */
	uint64_t resets;	/* reset requests served */
	int host_cpu;		/* CPU the thread is pinned to, -1 if none */
};

/**
 * hvtrace_loopback_create - create, lock and format the area file
 *
 * Refuses (-EBUSY) when another live writer holds the file (writers keep
 * an exclusive flock() on it while they live).  The file is created 0600
 * (the writer's user only: hvtraced attaches it for others) and sized
 * exactly for the geometry.
 *
 * Return: 0 or a negative errno (hvtrace_last_error() says why).
 */
HVTRACE_API int hvtrace_loopback_create(const struct hvtrace_loopback_params *p,
					struct hvtrace_loopback **out);

/**
 * hvtrace_loopback_run - write until done (events/duration) or stopped
 *
 * Starts one thread per CPU, pinned to host CPU (cpu % online CPUs), and
 * waits for them.  Marks the area STOPPED when they are done.
 */
HVTRACE_API int hvtrace_loopback_run(struct hvtrace_loopback *lb);

/** hvtrace_loopback_stop - ask the writer threads to stop (signal safe) */
HVTRACE_API void hvtrace_loopback_stop(struct hvtrace_loopback *lb);

/** hvtrace_loopback_get_stats - one writer thread's account */
HVTRACE_API int hvtrace_loopback_get_stats(const struct hvtrace_loopback *lb,
					   unsigned int cpu,
					   struct hvtrace_loopback_cpu_stats *st);

/** hvtrace_loopback_get_info - the area geometry and clock it wrote */
HVTRACE_API int hvtrace_loopback_get_info(const struct hvtrace_loopback *lb,
					  struct hvtrace_area_info *info);

/**
 * hvtrace_area_sync_local - a time-sync sample read from this host's own
 * clock, for a writer known to run on this host (the loopback writer):
 * the CPU counter or CLOCK_MONOTONIC, per the area's clock, read between
 * two host clock reads
 *
 * Needs no control page and no help from the writer.  Wrong for a writer
 * elsewhere (a guest, a hypervisor, a file from another boot).
 * Return: 0, or -EINVAL for an area whose clock is not one of those.
 */
HVTRACE_API int hvtrace_area_sync_local(struct hvtrace_area *a);

/** hvtrace_loopback_destroy - unmap, unlock and free (keeps the file) */
HVTRACE_API void hvtrace_loopback_destroy(struct hvtrace_loopback *lb);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_LOOPBACK_H */
