// SPDX-License-Identifier: MIT
/*
 * libhvtrace trace.dat component: the host kernel's ftrace as a source.
 *
 * Records the top-level tracefs instance (like trace-cmd record) or a
 * named one (instances/NAME, created when missing and removed afterwards).
 * While recording it owns the instance the way trace-cmd does: it clears
 * the buffer, selects the trace clock the file uses (so kernel and remote
 * timestamps share one time base), enables the requested events and turns
 * tracing on; _stop() and _close() put back what it changed.
 *
 * The same code records a guest kernel's persistent ring instead
 * (hvt_tdat_kernel_opts.guest_ram or .guest_pid): the ring is read from
 * guest RAM through hvtrace_kring_*() (hvtrace_ring_open_kring()), the
 * event formats, headers, printk formats and saved_cmdlines come from a
 * folder laid out like the guest's tracefs (.guest_formats), and nothing
 * is written anywhere: the events are the ones the guest's boot options
 * enabled, the clock is the one its trace_clock file names.
 *
 * Events are read through the host library's kernel ring
 * (hvtrace_ring_open_kernel() and its cursor), the same reader every other
 * part of hvtrace uses: per_cpu/cpuN/trace_pipe_raw mapped with
 * TRACE_MMAP_IOCTL_GET_READER, or, on kernels that cannot map their ring
 * buffers (before 6.10, or a buffer with a snapshot), read() of whole
 * sub-buffers behind the same interface.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracedat-local.h"

#define KN_PATH_MAX 2048

struct kn_event {
	char *system;
	char *name;
	uint32_t id;
	int saved_enable; /* -1: untouched */
};

struct hvt_tdat_kernel {
	char root[1024]; /* tracefs mount, or a guest formats folder */
	char dir[1024 + 128 + 16]; /* the instance directory: root, name */
	char name[128]; /* "" for the top-level instance */
	bool created;	/* we created the instance */
	bool started;
	uint32_t nr_cpus;
	uint32_t subbuf_size;
	struct hvtrace_ring **ring; /* the kernel ring, per CPU */
	bool *consume;		    /* a peeked ring record to consume */

	char clock[32];	      /* clock to record with */
	char saved_clock[32]; /* clock before, "" if unchanged */
	int saved_tracing_on; /* -1 if unchanged */

	struct kn_event *ev;
	unsigned int nr_ev;
	uint64_t ids[65536 / 64];
	struct hvtrace_kring *kring; /* a guest kernel's ring, or NULL */
	bool guest;		     /* a guest kernel's (kring or rings) */
	/* a guest kernel's CPUs as the caller's rings (kring NULL) */
	int (*ring_open)(void *arg, int cpu, struct hvtrace_ring **out);
	void *ring_arg;
	const char *ksyms_text; /* the caller's */
	size_t ksyms_len;
};

static int kn_path(const struct hvt_tdat_kernel *k, char *buf, size_t len,
		   bool top, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int kn_path(const struct hvt_tdat_kernel *k, char *buf, size_t len,
		   bool top, const char *fmt, ...)
{
	va_list ap;
	int n, m;

	n = snprintf(buf, len, "%s/", top ? k->root : k->dir);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= len - (size_t)n)
		return -ENAMETOOLONG;
	return 0;
}

static int kn_write(const char *path, const char *val)
{
	size_t n = strlen(val);
	ssize_t r;
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write(fd, val, n);
	if (r < 0)
		ret = -errno;
	else if ((size_t)r != n)
		ret = -EIO;
	close(fd);
	return ret;
}

static int kn_read_small(const char *path, char *buf, size_t len)
{
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, len - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = '\0';
	return 0;
}

static int kn_find_root(struct hvt_tdat_kernel *k)
{
	static const char *const roots[] = {"/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing"};
	char p[300];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/trace_marker", roots[i]);
		if (!access(p, F_OK)) {
			snprintf(k->root, sizeof(k->root), "%s", roots[i]);
			return 0;
		}
	}
	return hvt_err(-ENOENT,
		       "tracefs is not mounted: mount it with 'mount -t "
		       "tracefs nodev /sys/kernel/tracing' (root needed)");
}

/* A copy of a guest's tracefs has format files only: the id is the
 * number on the format's "ID:" line. */
static int kn_format_id(const struct hvt_tdat_kernel *k, const char *sys,
			const char *name, char *v, size_t len)
{
	char p[KN_PATH_MAX], buf[1024], *id;
	ssize_t n;
	int fd;

	if (kn_path(k, p, sizeof(p), false, "events/%s/%s/format", sys, name))
		return -ENAMETOOLONG;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ENODATA;
	buf[n] = '\0';
	id = strstr(buf, "\nID: ");
	if (!id)
		return -ENODATA;
	snprintf(v, len, "%s", id + 5);
	return 0;
}

/* Every kernel event: system, name, id. */
static int kn_scan_events(struct hvt_tdat_kernel *k)
{
	char p[KN_PATH_MAX], v[32];
	DIR *sd, *ed;
	struct dirent *s, *e;
	unsigned int cap = 0;
	int ret = 0;

	if (kn_path(k, p, sizeof(p), false, "events"))
		return -ENAMETOOLONG;
	sd = opendir(p);
	if (!sd)
		return hvt_err(-errno, "cannot list %s: %s", p,
			       strerror(errno));
	while (!ret && (s = readdir(sd))) {
		if (s->d_name[0] == '.')
			continue;
		if (kn_path(k, p, sizeof(p), false, "events/%s", s->d_name))
			continue;
		ed = opendir(p);
		if (!ed)
			continue; /* header_page, enable, ... */
		while ((e = readdir(ed))) {
			unsigned long id;
			char *end;

			if (e->d_name[0] == '.')
				continue;
			if (kn_path(k, p, sizeof(p), false, "events/%s/%s/id",
				    s->d_name, e->d_name))
				continue;
			if (kn_read_small(p, v, sizeof(v)) &&
			    kn_format_id(k, s->d_name, e->d_name, v, sizeof(v)))
				continue;
			id = strtoul(v, &end, 10);
			if (end == v || id > 0xffff)
				continue;
			if (k->nr_ev == cap) {
				struct kn_event *n;

				cap = cap ? cap * 2 : 1024;
				n = realloc(k->ev, cap * sizeof(*n));
				if (!n) {
					ret = -ENOMEM;
					break;
				}
				k->ev = n;
			}
			k->ev[k->nr_ev].system = strdup(s->d_name);
			k->ev[k->nr_ev].name = strdup(e->d_name);
			k->ev[k->nr_ev].id = (uint32_t)id;
			k->ev[k->nr_ev].saved_enable = -1;
			if (!k->ev[k->nr_ev].system || !k->ev[k->nr_ev].name) {
				free(k->ev[k->nr_ev].system);
				free(k->ev[k->nr_ev].name);
				ret = -ENOMEM;
				break;
			}
			k->ids[id / 64] |= 1ULL << (id % 64);
			k->nr_ev++;
		}
		closedir(ed);
	}
	closedir(sd);
	return ret ? hvt_err(ret, "out of memory") : 0;
}

/* The guest kernel's ring, and its formats folder in place of tracefs. */
static int kn_open_guest(struct hvt_tdat_kernel *k,
			 const struct hvt_tdat_kernel_opts *o)
{
	struct hvtrace_kring_info info;
	char p[KN_PATH_MAX], v[256], *b, *e;
	struct stat st;
	int ret;

	if (!o->guest_formats || !*o->guest_formats)
		return hvt_err(-EINVAL,
			       "recording a guest kernel needs its event "
			       "formats: give --formats DIR (a copy of the "
			       "guest's /sys/kernel/tracing files; the rig's "
			       "'hvtrace-guest kformats NAME DIR' writes one)");
	if (strlen(o->guest_formats) >= sizeof(k->root))
		return hvt_err(-ENAMETOOLONG, "formats folder name too long");
	snprintf(k->root, sizeof(k->root), "%s", o->guest_formats);
	snprintf(k->dir, sizeof(k->dir), "%s", o->guest_formats);
	if (kn_path(k, p, sizeof(p), false, "events") || stat(p, &st) ||
	    !S_ISDIR(st.st_mode))
		return hvt_err(-ENOENT,
			       "%s has no events folder: it is not a copy of "
			       "a guest's tracefs (write one with "
			       "'hvtrace-guest kformats NAME DIR')",
			       o->guest_formats);
	k->guest = true;
	if (o->guest_rings) {
		const struct hvt_tdat_guest_rings *g = o->guest_rings;

		if (!g->open || !g->nr_cpus || !g->subbuf_size)
			return hvt_err(-EINVAL, "a guest kernel of no CPUs");
		k->ring_open = g->open;
		k->ring_arg = g->arg;
		k->ksyms_text = g->ksyms_text;
		k->ksyms_len = g->ksyms_len;
		info.nr_cpus = g->nr_cpus;
		info.subbuf_size = g->subbuf_size;
		goto geometry;
	}
	if (o->guest_ram)
		ret = hvtrace_kring_open(o->guest_ram, 0, &k->kring);
	else
		ret = hvtrace_kring_open_pid(o->guest_pid, &k->kring);
	if (ret)
		return ret;
	ret = hvtrace_kring_get_info(k->kring, &info);
	if (ret)
		return ret;
geometry:
	k->nr_cpus = info.nr_cpus;
	k->subbuf_size = info.subbuf_size;
	/* The ring's clock, as the guest's trace_clock file names it; the
	 * instance's default ("local") when the folder does not say. */
	snprintf(k->clock, sizeof(k->clock), "local");
	if (!kn_path(k, p, sizeof(p), false, "trace_clock") &&
	    !kn_read_small(p, v, sizeof(v)) && (b = strchr(v, '[')) &&
	    (e = strchr(b, ']')) && e - b > 1 &&
	    (size_t)(e - b - 1) < sizeof(k->clock))
		snprintf(k->clock, sizeof(k->clock), "%.*s", (int)(e - b - 1),
			 b + 1);
	k->ring = calloc(k->nr_cpus, sizeof(*k->ring));
	k->consume = calloc(k->nr_cpus, sizeof(*k->consume));
	if (!k->ring || !k->consume)
		return hvt_err(-ENOMEM, "out of memory");
	return kn_scan_events(k);
}

const char *hvt_tdat_kernel_clock(const struct hvt_tdat_kernel *k)
{
	return k->clock;
}

bool hvt_tdat_kernel_is_guest(const struct hvt_tdat_kernel *k)
{
	return k->guest;
}

const char *hvt_tdat_kernel_ksyms(const struct hvt_tdat_kernel *k, size_t *len)
{
	*len = k->ksyms_len;
	return k->ksyms_text;
}

int hvt_tdat_kernel_guest_stats(const struct hvt_tdat_kernel *k, uint32_t cpu,
				struct hvtrace_kring_stats *st)
{
	struct hvtrace_ring_source_stats rs;
	int ret;

	if (k->kring)
		return hvtrace_kring_get_stats(k->kring, (int)cpu, st);
	memset(st, 0, sizeof(*st));
	if (!k->guest || cpu >= k->nr_cpus)
		return -EINVAL;
	if (!k->ring || !k->ring[cpu])
		return 0; /* not started: nothing read */
	ret = hvtrace_ring_source_stats(k->ring[cpu], &rs);
	if (ret)
		return ret;
	st->read = rs.events;
	st->bytes = rs.copied;
	st->lost_events = rs.lost_events;
	st->lost_pages = rs.lost_unknown;
	st->skipped_pages = rs.skipped;
	st->errors = rs.skipped;
	return 0;
}

struct hvtrace_kring *hvt_tdat_kernel_kring(const struct hvt_tdat_kernel *k)
{
	return k->kring;
}

int hvt_tdat_kernel_open(const struct hvt_tdat_kernel_opts *o,
			 struct hvt_tdat_kernel **out)
{
	struct hvt_tdat_kernel *k;
	char p[KN_PATH_MAX], v[64];
	struct stat st;
	uint32_t cpu;
	int ret;

	k = calloc(1, sizeof(*k));
	if (!k)
		return hvt_err(-ENOMEM, "out of memory");
	k->saved_tracing_on = -1;
	snprintf(k->clock, sizeof(k->clock), "%s",
		 o->clock ? o->clock : "mono");
	if (o->guest_ram || o->guest_pid > 0 || o->guest_rings) {
		ret = kn_open_guest(k, o);
		if (ret)
			goto fail;
		*out = k;
		return 0;
	}
	ret = kn_find_root(k);
	if (ret)
		goto fail;
	if (o->instance && *o->instance) {
		if (strchr(o->instance, '/') || !strcmp(o->instance, ".") ||
		    !strcmp(o->instance, "..") ||
		    strlen(o->instance) >= sizeof(k->name)) {
			ret = hvt_err(-EINVAL, "bad kernel instance name '%s'",
				      o->instance);
			goto fail;
		}
		snprintf(k->name, sizeof(k->name), "%s", o->instance);
		snprintf(k->dir, sizeof(k->dir), "%s/instances/%s", k->root,
			 k->name);
		if (stat(k->dir, &st)) {
			if (mkdir(k->dir, 0755)) {
				ret = hvt_err(-errno,
					      "cannot create kernel instance "
					      "%s: %s",
					      k->dir, strerror(errno));
				goto fail;
			}
			k->created = true;
		}
	} else {
		snprintf(k->dir, sizeof(k->dir), "%s", k->root);
	}

	for (cpu = 0; cpu < 4096; cpu++) {
		if (kn_path(k, p, sizeof(p), false, "per_cpu/cpu%u", cpu) ||
		    stat(p, &st))
			break;
	}
	k->nr_cpus = cpu;
	if (!k->nr_cpus) {
		ret = hvt_err(-ENOENT, "%s has no per_cpu buffers", k->dir);
		goto fail;
	}
	k->subbuf_size = (uint32_t)sysconf(_SC_PAGESIZE);
	if (!kn_path(k, p, sizeof(p), false, "buffer_subbuf_size_kb") &&
	    !kn_read_small(p, v, sizeof(v))) {
		unsigned long kb = strtoul(v, NULL, 10);

		if (kb >= 4 && kb <= 64 && !(kb & (kb - 1)))
			k->subbuf_size = (uint32_t)kb * 1024;
	}
	k->ring = calloc(k->nr_cpus, sizeof(*k->ring));
	k->consume = calloc(k->nr_cpus, sizeof(*k->consume));
	if (!k->ring || !k->consume) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto fail;
	}
	/* Refuse now rather than after the instance was set up: the rings
	 * are opened by _start(), once the buffer is cleared. */
	for (cpu = 0; cpu < k->nr_cpus; cpu++) {
		int fd;

		if (kn_path(k, p, sizeof(p), false,
			    "per_cpu/cpu%u/trace_pipe_raw", cpu))
			continue;
		fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			ret = hvt_err(-errno,
				      "cannot open %s: %s (recording "
				      "the kernel needs root)",
				      p, strerror(errno));
			goto fail;
		}
		close(fd);
	}
	ret = kn_scan_events(k);
	if (ret)
		goto fail;
	*out = k;
	return 0;
fail:
	hvt_tdat_kernel_close(k);
	return ret;
}

/* Does the pattern select system:name?  Forms: "sys", "sys:ev",
 * "sys/ev", "ev" (any system), "all"; shell globs allowed. */
static bool kn_match(const char *pat, const char *sys, const char *name)
{
	const char *sep = strpbrk(pat, ":/");
	char ps[256];

	if (!strcmp(pat, "all"))
		return true;
	if (!sep)
		return !fnmatch(pat, sys, 0) || !fnmatch(pat, name, 0);
	if ((size_t)(sep - pat) >= sizeof(ps))
		return false;
	memcpy(ps, pat, (size_t)(sep - pat));
	ps[sep - pat] = '\0';
	return !fnmatch(ps, sys, 0) && !fnmatch(sep + 1, name, 0);
}

bool hvt_tdat_pattern_match(const char *pat, const char *sys, const char *name)
{
	return kn_match(pat, sys, name);
}

int hvt_tdat_kernel_enable(struct hvt_tdat_kernel *k, const char *pattern)
{
	char p[KN_PATH_MAX], v[16];
	unsigned int i;
	int n = 0, ret;

	if (k->guest)
		return hvt_err(-EOPNOTSUPP,
			       "-e %s: a guest kernel's ring holds the events "
			       "its boot options enabled (--kernel-events); "
			       "the host cannot enable more",
			       pattern);

	for (i = 0; i < k->nr_ev; i++) {
		struct kn_event *e = &k->ev[i];

		if (!kn_match(pattern, e->system, e->name))
			continue;
		if (kn_path(k, p, sizeof(p), false, "events/%s/%s/enable",
			    e->system, e->name))
			continue;
		if (e->saved_enable < 0) {
			if (kn_read_small(p, v, sizeof(v))) {
				/* No enable file: an ftrace event, always on
				 * (ftrace:print is every trace_marker write):
				 * selected, nothing to change. */
				n++;
				continue;
			}
			e->saved_enable = v[0] == '1';
		}
		ret = kn_write(p, "1");
		if (ret)
			return hvt_err(ret,
				       "cannot enable kernel event %s:%s: "
				       "%s",
				       e->system, e->name, strerror(-ret));
		n++;
	}
	return n;
}

int hvt_tdat_kernel_start(struct hvt_tdat_kernel *k)
{
	char p[KN_PATH_MAX], v[512], *b, *e;
	uint32_t cpu;
	int ret;

	if (k->guest) {
		/* Nothing to set up in the guest: read its ring as it is. */
		for (cpu = 0; cpu < k->nr_cpus; cpu++) {
			ret = k->kring ? hvtrace_ring_open_kring(k->kring,
								 (int)cpu,
								 &k->ring[cpu])
				       : k->ring_open(k->ring_arg, (int)cpu,
						      &k->ring[cpu]);
			if (ret) {
				k->ring[cpu] = NULL;
				return ret;
			}
		}
		k->started = true;
		return 0;
	}

	/* Tracing off while the clock changes and the buffer is cleared and
	 * mapped: writes made meanwhile (trace_marker) fail with EBADF, and
	 * a writer waiting for tracing_on must not start before the end. */
	if (!kn_path(k, p, sizeof(p), false, "tracing_on") &&
	    !kn_read_small(p, v, sizeof(v))) {
		k->saved_tracing_on = v[0] == '1';
		kn_write(p, "0");
	}
	/* Current clock: the bracketed name in trace_clock. */
	if (kn_path(k, p, sizeof(p), false, "trace_clock") ||
	    kn_read_small(p, v, sizeof(v)))
		return hvt_err(-ENOENT, "cannot read %s/trace_clock", k->dir);
	b = strchr(v, '[');
	e = b ? strchr(b, ']') : NULL;
	if (!strstr(v, k->clock))
		return hvt_err(-EOPNOTSUPP,
			       "the kernel has no '%s' trace clock (it offers: "
			       "%s)",
			       k->clock, v);
	if (b && e &&
	    ((size_t)(e - b - 1) != strlen(k->clock) ||
	     strncmp(b + 1, k->clock, (size_t)(e - b - 1)))) {
		snprintf(k->saved_clock, sizeof(k->saved_clock), "%.*s",
			 (int)(e - b - 1), b + 1);
		/* Changing the clock also clears the buffer. */
		ret = kn_write(p, k->clock);
		if (ret)
			return hvt_err(ret, "cannot set %s to %s: %s", p,
				       k->clock, strerror(-ret));
	}
	/* Start from an empty buffer, as trace-cmd record does. */
	if (!kn_path(k, p, sizeof(p), false, "trace"))
		kn_write(p, "");
	/* Open the rings now that the clock change and clear are done. */
	for (cpu = 0; cpu < k->nr_cpus; cpu++) {
		ret = hvtrace_ring_open_kernel(k->dir, (int)cpu, &k->ring[cpu]);
		if (ret) {
			k->ring[cpu] = NULL;
			return ret;
		}
	}
	if (hvtrace_ring_fallback(k->ring[0]))
		fprintf(stderr,
			"hvtrace: host kernel ring: trace_pipe_raw read() "
			"(%s)\n",
			hvtrace_ring_fallback(k->ring[0]));
	k->started = true;
	if (!kn_path(k, p, sizeof(p), false, "tracing_on")) {
		ret = kn_write(p, "1");
		if (ret)
			return hvt_err(ret, "cannot turn tracing on in %s: %s",
				       k->dir, strerror(-ret));
	}
	return 0;
}

uint64_t hvt_tdat_kernel_errors(const struct hvt_tdat_kernel *k)
{
	uint64_t n = 0;
	uint32_t cpu;

	for (cpu = 0; cpu < k->nr_cpus; cpu++)
		if (k->ring[cpu])
			n += hvtrace_ring_errors(k->ring[cpu]);
	return n;
}

int hvt_tdat_kernel_next(struct hvt_tdat_kernel *k, uint32_t cpu,
			 struct hvt_tdat_krec *rec)
{
	struct hvtrace_record r;
	int ret;

	if (cpu >= k->nr_cpus)
		return -EINVAL;
	if (!k->ring[cpu])
		return 0; /* not started */
	if (k->consume[cpu]) {
		hvtrace_ring_consume(k->ring[cpu]);
		k->consume[cpu] = false;
	}
	ret = hvtrace_ring_peek(k->ring[cpu], &r);
	if (ret <= 0)
		return ret;
	k->consume[cpu] = true;
	rec->ts = r.ts; /* the kernel's own clock: "mono" here */
	rec->data = r.data;
	rec->size = r.size;
	rec->lost_unknown = r.lost_before == HVTRACE_LOST_UNKNOWN;
	rec->lost = rec->lost_unknown ? 0 : r.lost_before;
	return 1;
}

void hvt_tdat_kernel_stop(struct hvt_tdat_kernel *k)
{
	char p[KN_PATH_MAX];

	/* Stop producing; what is in the buffer can still be read. */
	if (k && k->started && !k->guest &&
	    !kn_path(k, p, sizeof(p), false, "tracing_on"))
		kn_write(p, "0");
}

static void kn_restore(struct hvt_tdat_kernel *k)
{
	char p[KN_PATH_MAX];
	unsigned int i;

	for (i = 0; i < k->nr_ev; i++) {
		struct kn_event *e = &k->ev[i];

		if (e->saved_enable < 0)
			continue;
		if (!kn_path(k, p, sizeof(p), false, "events/%s/%s/enable",
			     e->system, e->name))
			kn_write(p, e->saved_enable ? "1" : "0");
		e->saved_enable = -1;
	}
	if (k->saved_clock[0] &&
	    !kn_path(k, p, sizeof(p), false, "trace_clock"))
		kn_write(p, k->saved_clock);
	k->saved_clock[0] = '\0';
	if (k->saved_tracing_on >= 0 &&
	    !kn_path(k, p, sizeof(p), false, "tracing_on"))
		kn_write(p, k->saved_tracing_on ? "1" : "0");
	k->saved_tracing_on = -1;
}

void hvt_tdat_kernel_close(struct hvt_tdat_kernel *k)
{
	uint32_t cpu;
	unsigned int i;

	if (!k)
		return;
	for (cpu = 0; k->ring && cpu < k->nr_cpus; cpu++)
		hvtrace_ring_close(k->ring[cpu]);
	free(k->ring);
	free(k->consume);
	k->ring = NULL;
	hvtrace_kring_close(k->kring);
	kn_restore(k); /* a guest's: nothing was changed, nothing written */
	if (k->created && rmdir(k->dir) && errno != ENOENT)
		fprintf(stderr,
			"hvtrace: could not remove kernel instance "
			"%s: %s\n",
			k->dir, strerror(errno));
	for (i = 0; i < k->nr_ev; i++) {
		free(k->ev[i].system);
		free(k->ev[i].name);
	}
	free(k->ev);
	free(k);
}

struct hvtrace_ring *hvt_tdat_kernel_ring(struct hvt_tdat_kernel *k,
					  uint32_t cpu)
{
	return cpu < k->nr_cpus && k->ring ? k->ring[cpu] : NULL;
}

uint32_t hvt_tdat_kernel_nr_cpus(const struct hvt_tdat_kernel *k)
{
	return k->nr_cpus;
}

uint32_t hvt_tdat_kernel_subbuf_size(const struct hvt_tdat_kernel *k)
{
	return k->subbuf_size;
}

const char *hvt_tdat_kernel_name(const struct hvt_tdat_kernel *k)
{
	return k->name;
}

bool hvt_tdat_kernel_has_id(const struct hvt_tdat_kernel *k, uint32_t id)
{
	return id <= 0xffff && (k->ids[id / 64] >> (id % 64)) & 1;
}

static int kn_add_format(struct hvt_tdat_kernel *k, const struct kn_event *e,
			 struct hvtrace_catalog *c)
{
	struct hvt_tdat_blob b = {0};
	char p[KN_PATH_MAX];
	int ret;

	if (hvtrace_catalog_find(c, e->id, NULL))
		return 0;
	if (kn_path(k, p, sizeof(p), false, "events/%s/%s/format", e->system,
		    e->name))
		return 0;
	ret = hvt_tdat_read_file(p, &b, 1u << 20);
	if (!ret)
		ret = hvtrace_catalog_add(c, e->system, e->name, e->id, b.data,
					   -1);
	hvt_tdat_blob_free(&b);
	/* An event removed meanwhile (a user_event) is not an error. */
	return ret == -ENOENT ? 0 : ret;
}

/* Is "sys:name" a line of @list? */
static bool kn_listed(const char *list, const char *sys, const char *name)
{
	size_t ls = strlen(sys), ln = strlen(name);
	const char *l = list;

	while (l && *l) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);

		if (n == ls + 1 + ln && !strncmp(l, sys, ls) && l[ls] == ':' &&
		    !strncmp(l + ls + 1, name, ln))
			return true;
		l = e ? e + 1 : NULL;
	}
	return false;
}

/*
 * Events created while recording (a user_events registration) have ids the
 * scan at open did not see: find the formats of such ids in @seen.
 */
static int kn_add_new_formats(struct hvt_tdat_kernel *k, const uint64_t *seen,
			      struct hvtrace_catalog *c)
{
	char p[KN_PATH_MAX], v[32];
	struct dirent *sd_e, *ed_e;
	unsigned int id, missing = 0;
	DIR *sd, *ed;
	int ret = 0;

	for (id = 0; id < 65536; id++)
		if ((seen[id / 64] >> (id % 64)) & 1 &&
		    !hvt_tdat_kernel_has_id(k, id))
			missing++;
	if (!missing || kn_path(k, p, sizeof(p), false, "events"))
		return 0;
	sd = opendir(p);
	if (!sd)
		return 0;
	while (!ret && missing && (sd_e = readdir(sd))) {
		if (sd_e->d_name[0] == '.' ||
		    kn_path(k, p, sizeof(p), false, "events/%s", sd_e->d_name))
			continue;
		ed = opendir(p);
		if (!ed)
			continue;
		while (!ret && missing && (ed_e = readdir(ed))) {
			struct kn_event e;
			unsigned long n;
			char *end;

			if (ed_e->d_name[0] == '.' ||
			    kn_path(k, p, sizeof(p), false, "events/%s/%s/id",
				    sd_e->d_name, ed_e->d_name) ||
			    kn_read_small(p, v, sizeof(v)))
				continue;
			n = strtoul(v, &end, 10);
			if (end == v || n > 0xffff ||
			    !((seen[n / 64] >> (n % 64)) & 1) ||
			    hvt_tdat_kernel_has_id(k, (uint32_t)n))
				continue;
			e.system = sd_e->d_name;
			e.name = ed_e->d_name;
			e.id = (uint32_t)n;
			e.saved_enable = -1;
			ret = kn_add_format(k, &e, c);
			missing--;
		}
		closedir(ed);
	}
	closedir(sd);
	return ret;
}

int hvt_tdat_kernel_event_format(struct hvt_tdat_kernel *k, uint32_t id,
				 struct hvtrace_catalog *c)
{
	unsigned int i;

	for (i = 0; i < k->nr_ev; i++)
		if (k->ev[i].id == id)
			return kn_add_format(k, &k->ev[i], c);
	return -ENOENT;
}

int hvt_tdat_kernel_formats(struct hvt_tdat_kernel *k, const uint64_t *seen,
			    struct hvtrace_catalog *c)
{
	struct hvt_tdat_blob set = {0};
	char p[KN_PATH_MAX];
	unsigned int i;
	int ret = 0;

	/* Enabled now (set_event lists "system:event" lines). */
	if (!kn_path(k, p, sizeof(p), false, "set_event"))
		hvt_tdat_read_file(p, &set, 1u << 22);
	for (i = 0; i < k->nr_ev && !ret; i++) {
		const struct kn_event *e = &k->ev[i];
		bool want = !strcmp(e->system, "ftrace") ||
			    (seen && (seen[e->id / 64] >> (e->id % 64)) & 1);

		if (!want && set.data)
			want = kn_listed(set.data, e->system, e->name);
		if (want)
			ret = kn_add_format(k, e, c);
	}
	hvt_tdat_blob_free(&set);
	if (!ret && seen)
		ret = kn_add_new_formats(k, seen, c);
	return ret;
}

int hvt_tdat_kernel_file(struct hvt_tdat_kernel *k, const char *name, bool top,
			 struct hvt_tdat_blob *b)
{
	char p[KN_PATH_MAX];

	if (kn_path(k, p, sizeof(p), top, "%s", name))
		return -ENAMETOOLONG;
	return hvt_tdat_read_file(p, b, 64u << 20);
}

int hvt_tdat_kernel_cpu_stats(struct hvt_tdat_kernel *k, uint32_t cpu,
			      struct hvt_tdat_blob *b)
{
	char p[KN_PATH_MAX];

	if (k->guest) {
		struct hvtrace_kring_stats st;
		int ret = hvt_tdat_kernel_guest_stats(k, cpu, &st);

		if (ret)
			return ret;
		return hvt_tdat_blob_printf(
			b,
			"entries: %llu\nbytes: %llu\n"
			"pages lost (overwritten before read): %llu\n"
			"errors: %llu\n",
			(unsigned long long)st.read,
			(unsigned long long)st.bytes,
			(unsigned long long)st.lost_pages,
			(unsigned long long)st.errors);
	}

	if (kn_path(k, p, sizeof(p), false, "per_cpu/cpu%u/stats", cpu))
		return -ENAMETOOLONG;
	return hvt_tdat_read_file(p, b, 1u << 16);
}
