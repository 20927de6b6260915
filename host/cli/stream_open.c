// SPDX-License-Identifier: MIT
/*
 * hvtrace stream: opening what is streamed as per-CPU rings -- an area
 * (with its control page or read-only), the host kernel's tracefs
 * instance, or a guest kernel's ring in guest RAM with the formats its
 * console gave or the formats cache holds -- with the decoder that prints
 * its records.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/config.h>

#include <hvt_util.h>

#include "cli.h"
#include "stream.h"
#include <hvtrace-daemon.h>

static int st_ring_area(void *src, int cpu, struct hvtrace_ring **out)
{
	return hvtrace_ring_open_area(src, cpu, out);
}

static int st_ring_kring(void *src, int cpu, struct hvtrace_ring **out)
{
	return hvtrace_ring_open_kring(src, cpu, out);
}

/* One ring per CPU first..last of @src, opened with @open. */
static int st_open_rings(struct st_state *s, unsigned int first,
			 unsigned int last,
			 int (*open)(void *, int, struct hvtrace_ring **),
			 void *src)
{
	unsigned int cpu;

	s->cpus = calloc(last - first + 1, sizeof(*s->cpus));
	if (!s->cpus)
		return hvt_cli_error(VERB, "out of memory");
	for (cpu = first; cpu <= last; cpu++) {
		struct st_cpu *c = &s->cpus[s->nr];

		c->cpu = (int)cpu;
		if (open(src, (int)cpu, &c->ring))
			return hvt_cli_error(VERB, "%s", hvtrace_last_error());
		s->nr++;
	}
	return 0;
}

/*
 * Are the area's times on the host's clock?  A writer that stamps host
 * ns is; with a clock model (time sync through the control page, or the
 * clock of a loopback writer on this host read here) they are, within
 * the bound said on stderr.  Without one they are the writer's own: said
 * once, with why, as record says it.  The model is fitted now or never
 * (a writer that did not answer is not asked again), so the stream has
 * one time base.
 */
static void st_area_clock(struct st_state *s)
{
	struct hvtrace_clock_map m;
	const char *why;
	uint64_t err;

	hvtrace_area_clock_map(s->area, &m);
	if (m.clock_id == HVT_CLOCK_HOST_NS)
		return;
	if (m.flags & HVTRACE_CLOCK_SYNCED) {
		hvtrace_area_to_host_ns(s->area, m.base_writer, &err);
		if (err != UINT64_MAX) {
			fprintf(stderr,
				"hvtrace stream: '%s': times on the host's "
				"CLOCK_MONOTONIC through a clock model of "
				"the writer's clock (error bound +-%.3f us)\n",
				s->info.name, (double)err / 1e3);
			return;
		}
	}
	s->own_clock = true;
	if (s->info.state == HVT_STATE_STOPPED ||
	    (s->info.writer_kind == HVT_WRITER_LOOPBACK &&
	     s->info.writer_pid && kill((pid_t)s->info.writer_pid, 0) &&
	     errno == ESRCH))
		why = "its writer had stopped: no time sync";
	else if (s->read_only)
		why = "--read-only: no time sync through the control page";
	else if (!s->control)
		why = "read-only, not this user's to write: no time sync "
		      "through the control page";
	else
		why = "its writer did not answer time sync";
	fprintf(stderr,
		"hvtrace stream: '%s': times are the writer's own (clock "
		"'%s'), not the host's CLOCK_MONOTONIC (%s)\n",
		s->info.name, hvt_clock_own_name(s->info.clock_id), why);
}

int st_open_area(struct st_state *s)
{
	unsigned int bit, first, last, i;
	int ret;

	ret = 0;
	if (!s->read_only) {
		ret = hvtrace_area_open_spec(s->spec, HVTRACE_OPEN_CONTROL,
					     &s->area);
		if (ret && ret != -EACCES && ret != -EROFS && ret != -EPERM)
			return hvt_cli_error(VERB, "%s", hvtrace_last_error());
		s->control = !ret;
	}
	if (!s->control) {
		/* Not writable: read-only, said once it opened (a file this
		 * user may not read at all gets that error alone). */
		if (hvtrace_area_open_spec(s->spec, 0, &s->area))
			return hvt_cli_error(VERB, "%s", hvtrace_last_error());
		if (ret)
			fprintf(stderr,
				"hvtrace stream: note: cannot open %s for "
				"writing (%s); reading it read-only: events "
				"are not enabled and a consume-mode writer "
				"drops once its ring is full\n",
				s->spec, strerror(-ret));
	}
	hvtrace_area_get_info(s->area, &s->info);

	if (s->control) {
		/* The owner enables everything the writer may write. */
		for (bit = 0; bit < HVT_ABI_MAX_EVENTS; bit++)
			hvtrace_area_set_event(s->area, bit, true);
		hvtrace_area_set_tracing(s->area, true);
		/* A few clock samples while the writer answers (a stopped
		 * or vanished writer never does). */
		s->syncing =
			s->info.state != HVT_STATE_STOPPED &&
			!(s->info.writer_kind == HVT_WRITER_LOOPBACK &&
			  s->info.writer_pid &&
			  kill((pid_t)s->info.writer_pid, 0) && errno == ESRCH);
		for (i = 0; i < 8 && s->syncing; i++)
			if (hvtrace_area_sync(s->area, i ? 20 : 100))
				s->syncing = false;
	}

	/* A live loopback writer runs on this host: its clock is ours to
	 * read, with or without its answers. */
	if (!s->syncing && s->info.writer_kind == HVT_WRITER_LOOPBACK &&
	    s->info.writer_pid && !kill((pid_t)s->info.writer_pid, 0))
		for (i = 0; i < 4; i++)
			hvtrace_area_sync_local(s->area);

	st_area_clock(s);

	first = 0;
	last = s->info.nr_cpus - 1;
	if (s->only_cpu >= 0) {
		if ((unsigned int)s->only_cpu >= s->info.nr_cpus)
			return hvt_cli_usage(VERB,
					     "--cpu %d: area '%s' has "
					     "CPUs 0..%u",
					     s->only_cpu, s->info.name, last);
		first = last = (unsigned int)s->only_cpu;
	}
	if (st_open_rings(s, first, last, st_ring_area, s->area))
		return HVT_EXIT_FAIL;
	if (hvtrace_decoder_new_area(s->area, &s->dec))
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	return 0;
}

int st_open_kernel(struct st_state *s)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int cpu, first, last, ret, err = 0;
	char dir[256], path[512];
	FILE *f;

	if (ncpu < 1)
		ncpu = 1;
	first = 0;
	last = (int)ncpu - 1;
	if (s->only_cpu >= 0) {
		if (s->only_cpu > last)
			return hvt_cli_usage(VERB,
					     "--cpu %d: this host has "
					     "CPUs 0..%d",
					     s->only_cpu, last);
		first = last = s->only_cpu;
	}
	s->cpus = calloc((size_t)(last - first + 1), sizeof(*s->cpus));
	if (!s->cpus)
		return hvt_cli_error(VERB, "out of memory");
	for (cpu = first; cpu <= last; cpu++) {
		struct st_cpu *c = &s->cpus[s->nr];

		ret = hvtrace_ring_open_kernel(s->instance, cpu, &c->ring);
		if (ret == -ENOENT && s->only_cpu < 0 && s->nr) {
			continue; /* a CPU that is not there */
		} else if (ret) {
			err = ret;
			break;
		}
		c->cpu = cpu;
		s->nr++;
	}
	if (err || !s->nr)
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	if (hvtrace_ring_fallback(s->cpus[0].ring))
		fprintf(stderr,
			"hvtrace: host kernel ring: trace_pipe_raw read() "
			"(%s)\n",
			hvtrace_ring_fallback(s->cpus[0].ring));
	if (!hvtrace_ring_clock_is_ns(s->cpus[0].ring))
		s->text_flags |= HVTRACE_TEXT_RAW_TS;
	if (hvtrace_decoder_new_kernel(NULL, &s->dec))
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());

	/* A common surprise: tracing switched off in that buffer. */
	if (hvtrace_tracefs_dir(s->instance, dir, sizeof(dir)))
		return 0;
	snprintf(path, sizeof(path), "%s/tracing_on", dir);
	f = fopen(path, "r");
	if (f) {
		if (fgetc(f) == '0')
			fprintf(stderr,
				"hvtrace stream: note: tracing is off "
				"(echo 1 > %s)\n",
				path);
		fclose(f);
	}
	return 0;
}

/*
 * A guest kernel's ring in guest RAM: a RAM file given by its path (a rig
 * guest's NAME goes through hvtraced: cmd_stream.c), or a VMM's by pid.
 */
int st_open_kring(struct st_state *s)
{
	struct hvtrace_kring_info ki;
	unsigned int first, last;

	if (s->vm_pid) {
		if (hvtrace_kring_open_pid(s->vm_pid, &s->kring))
			return hvt_cli_error(VERB, "--vm-pid %d: %s", s->vm_pid,
					     hvtrace_last_error());
	} else {
		struct stat st;

		snprintf(s->ram, sizeof(s->ram), "%s", s->spec);
		if (!stat(s->ram, &st)) {
			s->ram_dev = st.st_dev;
			s->ram_ino = st.st_ino;
		}
	}
	if (!s->kring && hvtrace_kring_open(s->ram, 0, &s->kring))
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	hvtrace_kring_get_info(s->kring, &ki);
	first = 0;
	last = ki.nr_cpus - 1;
	if (s->only_cpu >= 0) {
		if ((unsigned int)s->only_cpu > last)
			return hvt_cli_usage(VERB,
					     "--cpu %d: the guest kernel "
					     "ring has CPUs 0..%u",
					     s->only_cpu, last);
		first = last = (unsigned int)s->only_cpu;
	}
	if (st_open_rings(s, first, last, st_ring_kring, s->kring))
		return HVT_EXIT_FAIL;
	snprintf(s->info.name, sizeof(s->info.name), "guest kernel");
	fprintf(stderr,
		"hvtrace stream: guest kernel times are the guest's own (its "
		"trace clock), not the host's CLOCK_MONOTONIC (%s: no clock "
		"model; 'hvtrace stream NAME' of a rig guest reads its ring "
		"through hvtraced, on the host's clock)\n",
		s->vm_pid ? "--vm-pid" : "a RAM file");
	/* --vm-pid: the formats cache's folder of the kernel its vmcoreinfo
	 * names; not by the banner's scan of all guest RAM below, which
	 * would populate the untouched pages of a VMM's memfd. */
	if (!s->formats && s->vm_pid &&
	    !hvt_cli_kformats_of_kring("stream", s->kring, NULL,
				       s->cache_formats,
				       sizeof(s->cache_formats)))
		s->formats = s->cache_formats;
	if (!s->formats && !s->vm_pid &&
	    !hvt_cli_kformats_cached("stream", s->ram, NULL, s->cache_formats,
				     sizeof(s->cache_formats)))
		s->formats = s->cache_formats;
	if (s->formats) {
		if (hvtrace_decoder_new_kernel(s->formats, &s->dec))
			return hvt_cli_error(VERB, "--formats %s: %s",
					     s->formats, hvtrace_last_error());
		hvt_cli_kring_ksyms("stream", s->dec, s->kring);
		return 0;
	}
	fprintf(stderr, "hvtrace stream: note: no event formats of the guest "
			"kernel (--formats DIR): its events print as UNKNOWN "
			"id=N; --summary counts them per CPU\n");
	if (hvtrace_decoder_new(ki.subbuf_size, &s->dec))
		return hvt_cli_error(VERB, "%s", hvtrace_last_error());
	return 0;
}
