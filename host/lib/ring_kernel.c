// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the host kernel's CPU buffers as a ring view
 * (hvtrace_ring_open_kernel()).
 *
 * One job: open per_cpu/cpuN/trace_pipe_raw of a tracefs instance either
 * through the kernel's mmap ABI (TRACE_MMAP_IOCTL_GET_READER) or, without
 * it, with read() into two private reader pages, counters from
 * per_cpu/cpuN/stats, and keep the kernel's trace clock related to
 * CLOCK_MONOTONIC.  The layouts are described at the top of ring.c; above
 * get-reader both are the same cursor (ring.c).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring-local.h"
#include "subbuf.h"
#include "tracefs_dir.h"

/* --- kernel view ---------------------------------------------------------- */

struct ring_kernel {
	struct hvtrace_ring r;
	int fd;				/* trace_pipe_raw */
	int stats_fd;			/* per_cpu/cpuN/stats (read() view) */
	bool mapped;			/* meta and data are the kernel's map */
	char why[96];			/* why read() (read() view) */
	char stats_path[PATH_MAX];
	bool clock_ns;			/* trace clock counts nanoseconds */
	bool clock_mono;		/* ... and is CLOCK_MONOTONIC itself */
	bool clock_known;		/* offset below is valid */
	int64_t clock_off;		/* trace clock - CLOCK_MONOTONIC */
	uint64_t clock_synced_at;
};

static struct ring_kernel *to_kernel(const struct hvtrace_ring *r)
{
	return container_of(r, struct ring_kernel, r);
}

/* Parse "now ts: SEC.USEC" from a per_cpu stats file; 0 if absent. */
static int ring_kernel_now(struct ring_kernel *r, uint64_t *ns)
{
	char buf[1024], *p;
	unsigned long long sec, usec;
	ssize_t n;
	int fd;

	fd = open(r->stats_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strstr(buf, "now ts:");
	if (!p || sscanf(p + 7, " %llu.%llu", &sec, &usec) != 2)
		return -EINVAL;
	*ns = sec * 1000000000ULL + usec * 1000ULL;
	return 0;
}

/* Relate the trace clock to CLOCK_MONOTONIC (µs precision is plenty for
 * ordering and for the reorder window). */
static void ring_kernel_clock_sync(struct ring_kernel *r)
{
	uint64_t t0, t1, now;

	if (!r->clock_ns)
		return;
	t0 = hvt_host_now_ns();
	if (r->clock_mono) {
		r->clock_off = 0;
		r->clock_known = true;
		r->clock_synced_at = t0;
		return;
	}
	if (ring_kernel_now(r, &now))
		return;
	t1 = hvt_host_now_ns();
	r->clock_off = (int64_t)(now - (t0 + (t1 - t0) / 2));
	r->clock_known = true;
	r->clock_synced_at = t1;
}

static void ring_kernel_read_clock(struct ring_kernel *r, const char *dir)
{
	static const char *const ns_clocks[] = {
		"local", "global", "perf", "mono", "mono_raw", "boot", "tai",
	};
	char path[PATH_MAX], buf[512], *b, *e;

	ssize_t n;
	size_t i;
	int fd;

	/* Default: the kernel's default clock, "local", in ns. */
	r->clock_ns = true;
	snprintf(path, sizeof(path), "%s/trace_clock", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	b = strchr(buf, '[');
	e = b ? strchr(b, ']') : NULL;
	if (!b || !e)
		return;
	*e = '\0';
	b++;
	r->clock_ns = false;
	for (i = 0; i < sizeof(ns_clocks) / sizeof(ns_clocks[0]); i++)
		if (!strcmp(b, ns_clocks[i]))
			r->clock_ns = true;
	r->clock_mono = !strcmp(b, "mono");
}

enum { RING_KAUTO, RING_KREAD, RING_KMMAP };

/* HVTRACE_KERNEL_RING: "read" forces read(), "mmap" refuses the fallback,
 * "auto" (or unset) maps where the kernel can and reads elsewhere. */
static int ring_kernel_mode(struct ring_kernel *r)
{
	const char *e = getenv("HVTRACE_KERNEL_RING");

	if (!e || !*e || !strcmp(e, "auto"))
		return RING_KAUTO;
	if (!strcmp(e, "mmap"))
		return RING_KMMAP;
	if (!strcmp(e, "read")) {
		snprintf(r->why, sizeof(r->why), "HVTRACE_KERNEL_RING=read");
		return RING_KREAD;
	}
	return hvt_err(-EINVAL, "HVTRACE_KERNEL_RING='%s': say 'auto' (the "
				"mmap ABI where the kernel has it, else read()), "
				"'mmap' or 'read'",
		       e);
}

/* Why the mmap of trace_pipe_raw failed, for hvtrace_ring_fallback(). */
static void ring_kernel_why(struct ring_kernel *r, int err)
{
	if (err == ENODEV || err == EINVAL || err == ENOTTY ||
	    err == EOPNOTSUPP)
		snprintf(r->why, sizeof(r->why),
			 "no ring-buffer mmap on this kernel");
	else if (err == EBUSY)
		snprintf(r->why, sizeof(r->why),
			 "the buffer has a snapshot, which blocks its mmap");
	else
		snprintf(r->why, sizeof(r->why), "its mmap failed: %s",
			 strerror(err));
}

/* "NAME: N" in a stats file; 0 when absent. */
static uint64_t ring_stats_field(const char *buf, const char *name)
{
	const char *p = buf;
	size_t n = strlen(name);

	while (p && *p) {
		if (!strncmp(p, name, n) && p[n] == ':')
			return strtoull(p + n + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

/* The meta counters of the read() view, as the kernel's meta page has
 * them: per_cpu stats "entries" is what is still unread. */
static void ring_kread_counters(struct ring_kernel *k)
{
	struct hvtrace_ring *r = &k->r;
	char buf[1024];
	uint64_t unread, overrun, read;
	ssize_t n;

	n = pread(k->stats_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	unread = ring_stats_field(buf, "entries");
	overrun = ring_stats_field(buf, "overrun");
	read = ring_stats_field(buf, "read events");
	r->meta->entries = unread + overrun + read;
	r->meta->overrun = overrun;
	r->meta->read = read;
}

/* The sub-buffer size read() hands out: buffer_subbuf_size_kb (6.8+),
 * else the page size. */
static uint32_t ring_kread_subbuf_size(const struct hvtrace_ring *r,
				       const char *dir)
{
	char path[PATH_MAX], buf[32];
	unsigned long kb;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/buffer_subbuf_size_kb", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return (uint32_t)r->page_size;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return (uint32_t)r->page_size;
	buf[n] = '\0';
	kb = strtoul(buf, NULL, 10);
	if (kb * 1024 < r->page_size || kb > 1024 || (kb & (kb - 1)))
		return (uint32_t)r->page_size;
	return (uint32_t)kb * 1024;
}

static const struct ring_ops ring_kernel_ops, ring_kread_ops;

/* Set up the read() view of an open trace_pipe_raw (k->fd). */
static int ring_kread_open(struct ring_kernel *k, const char *dir)
{
	struct hvtrace_ring *r = &k->r;
	char path[PATH_MAX];
	int ret;

	r->ops = &ring_kread_ops;
	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", dir, r->cpu);
	k->stats_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (k->stats_fd < 0)
		return hvt_err(-errno, "cannot open %s: %s", path,
			       strerror(errno));
	r->subbuf_size = ring_kread_subbuf_size(r, dir);
	r->nr_subbufs = 2;
	r->meta_len = r->page_size > 4096 ? r->page_size : 4096;
	r->data_len = (size_t)r->nr_subbufs * r->subbuf_size;
	r->resv_len = r->meta_len + r->data_len;
	ret = ring_reserve(r, 0);	/* reader page id 0, empty */
	if (ret)
		return ret;
	ring_kread_counters(k);
	ring_kernel_read_clock(k, dir);
	ring_kernel_clock_sync(k);
	return 0;
}

HVTRACE_API int hvtrace_ring_open_kernel(const char *instance, int cpu,
					 struct hvtrace_ring **out)
{
	const struct hvt_trace_buffer_meta *m;
	char dir[256], path[PATH_MAX];
	struct ring_kernel *k;
	struct hvtrace_ring *r;
	uint64_t data_len;
	int ret, mode;
	void *p;

	if (!out || cpu < 0)
		return hvt_err(-EINVAL,
			       "hvtrace_ring_open_kernel: bad argument");
	ret = hvt_tracefs_instance_dir(instance, dir, sizeof(dir));
	if (ret)
		return ret;
	r = ring_new(sizeof(*k), offsetof(struct ring_kernel, r), cpu,
		     &ring_kernel_ops);
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	k = to_kernel(r);
	k->stats_fd = -1;
	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", dir,
		 cpu);
	snprintf(k->stats_path, sizeof(k->stats_path),
		 "%s/per_cpu/cpu%d/stats", dir, cpu);
	k->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k->fd < 0) {
		ret = hvt_err(-errno, "cannot open %s: %s%s", path,
			      strerror(errno),
			      errno == ENOENT ? " (no such CPU)" :
			      errno == EACCES ? " (reading the kernel's trace "
						"buffers needs root)" : "");
		goto fail;
	}

	mode = ring_kernel_mode(k);
	if (mode < 0) {
		ret = mode;
		goto fail;
	}
	p = mode == RING_KREAD ?
		    MAP_FAILED :
		    mmap(NULL, r->page_size, PROT_READ, MAP_SHARED, k->fd, 0);
	if (p == MAP_FAILED && mode == RING_KMMAP) {
		ret = -errno;
		hvt_err(ret, "cannot mmap %s: %s (the ring-buffer mmap needs "
			     "Linux 6.10 or later, and no snapshot of this "
			     "buffer; HVTRACE_KERNEL_RING=mmap refuses the "
			     "read() fallback)",
			path, strerror(errno));
		if (ret == -EINVAL || ret == -ENODEV || ret == -ENOTTY)
			ret = -EOPNOTSUPP;
		goto fail;
	}
	if (p == MAP_FAILED) {
		if (mode == RING_KAUTO)
			ring_kernel_why(k, errno);
		ret = ring_kread_open(k, dir);
		if (ret)
			goto fail;
		*out = r;
		return 0;
	}
	k->mapped = true;
	r->meta = p;
	r->meta_len = r->page_size;
	m = r->meta;
	if (m->meta_struct_len < sizeof(*m) || m->meta_page_size < sizeof(*m) ||
	    m->meta_page_size % r->page_size ||
	    m->meta_page_size > (1u << 20) ||
	    m->subbuf_size < 4096 || (m->subbuf_size & (m->subbuf_size - 1)) ||
	    m->subbuf_size > (1u << 27) || m->nr_subbufs < 2 ||
	    m->nr_subbufs > (1u << 20)) {
		ret = hvt_err(-EPROTO,
			      "%s: unexpected meta page (size %u, struct %u, "
			      "sub-buffer %u x %u)",
			      path, m->meta_page_size, m->meta_struct_len,
			      m->subbuf_size, m->nr_subbufs);
		goto fail;
	}
	if (m->meta_page_size != r->meta_len) {
		size_t len = m->meta_page_size;

		munmap(r->meta, r->meta_len);
		r->meta = NULL;
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, k->fd, 0);
		if (p == MAP_FAILED) {
			ret = hvt_err(-errno, "cannot mmap the %zu-byte meta "
					      "page of %s: %s",
				      len, path, strerror(errno));
			goto fail;
		}
		r->meta = p;
		r->meta_len = len;
	}
	r->subbuf_size = r->meta->subbuf_size;
	r->nr_subbufs = r->meta->nr_subbufs;
	data_len = (uint64_t)r->subbuf_size * r->nr_subbufs;
	p = mmap(NULL, data_len, PROT_READ, MAP_SHARED, k->fd,
		 (off_t)r->meta_len);
	if (p == MAP_FAILED) {
		ret = hvt_err(-errno, "cannot mmap the sub-buffers of %s: %s",
			      path, strerror(errno));
		goto fail;
	}
	r->data = p;
	r->data_len = data_len;
	ring_kernel_read_clock(k, dir);
	ring_kernel_clock_sync(k);
	*out = r;
	return 0;
fail:
	hvtrace_ring_close(r);
	return ret;
}

static int ring_kernel_get_reader(struct hvtrace_ring *r)
{
	int tries;

	for (tries = 0; tries < 8; tries++) {
		if (!ioctl(to_kernel(r)->fd, HVT_TRACE_MMAP_IOCTL_GET_READER))
			return 0;
		if (errno != EINTR)
			return hvt_err(-errno, "TRACE_MMAP_IOCTL_GET_READER on "
					       "CPU %d: %s",
				       r->cpu, strerror(errno));
	}
	return hvt_err(-EINTR, "TRACE_MMAP_IOCTL_GET_READER kept being "
			       "interrupted");
}

/*
 * read() view: one sub-buffer from trace_pipe_raw into the inactive reader
 * page.  Nothing pending (EAGAIN) leaves the reader page as it is.
 */
static int ring_kread_get_reader(struct hvtrace_ring *r)
{
	struct ring_kernel *k = to_kernel(r);
	struct hvt_trace_buffer_meta *m = r->meta;
	uint32_t other = m->reader.id ? 0 : 1;
	uint8_t *page = r->data + (size_t)other * r->subbuf_size;
	uint32_t max = r->subbuf_size - HVT_PAGE_HDR_SIZE;
	uint64_t commit, size, lost = 0;
	ssize_t n;

	for (;;) {
		n = read(k->fd, page, r->subbuf_size);
		if (n >= 0 || errno != EINTR)
			break;
	}
	if (n < 0 && errno != EAGAIN)
		return hvt_err(-errno, "reading trace_pipe_raw of CPU %d: %s",
			       r->cpu, strerror(errno));
	if (n > 0 && (size_t)n < HVT_PAGE_HDR_SIZE) {
		r->errors++;
		return hvt_err(-EIO, "trace_pipe_raw of CPU %d: a %zd-byte "
				     "sub-buffer",
			       r->cpu, n);
	}
	if (n > 0) {
		if ((size_t)n < r->subbuf_size)
			memset(page + n, 0, r->subbuf_size - (size_t)n);
		memcpy(&commit, page + HVT_PAGE_COMMIT_OFF, 8);
		size = commit & HVT_COMMIT_SIZE_MASK;
		if ((commit & HVT_MISSED_STORED) && size + 8 <= max)
			memcpy(&lost, page + HVT_PAGE_HDR_SIZE + size, 8);
		/* A size past the page is caught (and counted) by the
		 * cursor when it loads the page. */
		m->reader.id = other;
		m->reader.read = size < max ? (uint32_t)size : max;
		m->reader.lost_events = lost;
	}
	ring_kread_counters(k);
	return 0;
}

static void ring_kernel_close(struct hvtrace_ring *r)
{
	struct ring_kernel *k = to_kernel(r);

	/* The read() view's reservation is unmapped by the caller. */
	if (k->mapped) {
		if (r->data)
			munmap(r->data, r->data_len);
		if (r->meta)
			munmap(r->meta, r->meta_len);
	}
	if (k->fd >= 0)
		close(k->fd);
	if (k->stats_fd >= 0)
		close(k->stats_fd);
	free(k);
}

static uint64_t ring_kernel_now_ns(struct hvtrace_ring *r, uint64_t now)
{
	struct ring_kernel *k = to_kernel(r);

	if (k->clock_ns && now - k->clock_synced_at >= RING_KCLOCK_RESYNC_NS)
		ring_kernel_clock_sync(k);
	return k->clock_known ? now : 0;
}

static uint64_t ring_kernel_to_host(struct hvtrace_ring *r, uint64_t ts)
{
	struct ring_kernel *k = to_kernel(r);

	return k->clock_known ? ts - (uint64_t)k->clock_off : ts;
}

static bool ring_kernel_clock_is_ns(const struct hvtrace_ring *r)
{
	return to_kernel(r)->clock_ns;
}

static const char *ring_kread_fallback(const struct hvtrace_ring *r)
{
	return to_kernel(r)->why;
}

/* The mmap ABI of the kernel itself. */
static const struct ring_ops ring_kernel_ops = {
	.kernel = true,
	.get_reader = ring_kernel_get_reader,
	.close = ring_kernel_close,
	.now_ns = ring_kernel_now_ns,
	.to_host = ring_kernel_to_host,
	.clock_is_ns = ring_kernel_clock_is_ns,
};

/* read() of trace_pipe_raw into two private reader pages. */
static const struct ring_ops ring_kread_ops = {
	.kernel = true,
	.get_reader = ring_kread_get_reader,
	.close = ring_kernel_close,
	.now_ns = ring_kernel_now_ns,
	.to_host = ring_kernel_to_host,
	.clock_is_ns = ring_kernel_clock_is_ns,
	.fallback = ring_kread_fallback,
};
