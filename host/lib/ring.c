// SPDX-License-Identifier: MIT
/*
 * libhvtrace: one CPU buffer as the Linux ring-buffer mmap ABI, for a trace
 * area and for the host kernel, and the record cursor on top of it.
 *
 * Area view (one contiguous reservation):
 *
 *   +0                      meta page (private, ours): trace_buffer_meta
 *   +meta_page_size         id 0 .. nr-1: the writer's ring slots, the area
 *                           file mapped PROT_READ over the reservation
 *   + (nr) * subbuf_size    id nr:   reader page A (private)
 *   + (nr+1) * subbuf_size  id nr+1: reader page B (private)
 *
 * get-reader asks the area reader (hvtrace_cpu_read_page()) for the next
 * validated events.  If they continue the writer sub-buffer the current
 * reader page holds, and that page carries no lost-events mark, they are
 * appended to it: same reader.id, larger reader.read, exactly as the kernel
 * hands over events a writer added to its reader page.  Otherwise they go
 * to the other reader page, which becomes reader.id.  Two private pages
 * (rather than the kernel's one) keep the kernel's rule that a new reader
 * page always has a new id, without remapping writer slots.
 *
 * Kernel view: per_cpu/cpuN/trace_pipe_raw mapped as the kernel lays it out
 * (meta page, then the sub-buffers) and TRACE_MMAP_IOCTL_GET_READER.
 *
 * Kernel view without the mmap ABI (before Linux 6.10, a buffer with a
 * snapshot, or HVTRACE_KERNEL_RING=read): laid out as the area view's
 * private part, a meta page of ours and two reader pages (ids 0 and 1).
 * get-reader is one read() of trace_pipe_raw into the inactive page: the
 * kernel hands over a self-contained sub-buffer (its own time_stamp, the
 * RB_MISSED_EVENTS/STORED flags and count of the losses before it), which
 * becomes reader.id with reader.read = its data bytes.  The counters come
 * from per_cpu/cpuN/stats (entries = unread + overrun + read, as the
 * kernel's meta page counts them).  Above get-reader nothing differs.
 *
 * The cursor (hvtrace_ring_peek()/consume()) is the one consumer of both:
 *
 *   walk the reader page from our position up to reader.read
 *   used up?  get-reader;  new reader.id -> start at 0 on that page
 *                           same id, larger reader.read -> keep walking
 *                           neither -> nothing pending
 *
 * Every event is bounded by the handed-over size and the sub-buffer size
 * (subbuf.h); a malformed page is counted and skipped.
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

#include "subbuf.h"
#include "tracefs_dir.h"

/* Resync a kernel trace clock with CLOCK_MONOTONIC this often. */
#define RING_KCLOCK_RESYNC_NS	1000000000ULL

struct ring_cursor {
	bool primed;
	bool have;			/* rec holds a peeked record */
	uint32_t id;			/* reader page being walked */
	uint32_t pos;			/* next event offset in its data */
	uint32_t limit;			/* handed-over bytes (reader.read) */
	uint64_t ts;			/* running timestamp at pos */
	uint64_t lost;			/* report with the next record */
	uint32_t next_pos;		/* past the peeked record */
	uint64_t next_ts;
	uint64_t fetched_ns;		/* when the data up to limit arrived */
	struct hvtrace_record rec;
};

struct hvtrace_ring {
	bool kernel;
	int cpu;
	size_t page_size;

	/* the view */
	struct hvt_trace_buffer_meta *meta;
	size_t meta_len;
	uint8_t *data;			/* sub-buffer id 0 */
	size_t data_len;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;
	uint8_t *resv;			/* area: the whole reservation */
	size_t resv_len;

	/* area backend */
	struct hvtrace_area *area;
	uint32_t ring_nr;		/* writer slots */
	bool page_valid;		/* the reader page holds events */
	uint32_t page_seq;		/* writer sub-buffer it continues */

	/* kernel backend */
	int fd;
	bool kread;			/* read() instead of the mmap ABI */
	int stats_fd;			/* per_cpu/cpuN/stats (kread) */
	char why[96];			/* why kread */
	char stats_path[PATH_MAX];
	bool clock_ns;			/* trace clock counts nanoseconds */
	bool clock_mono;		/* ... and is CLOCK_MONOTONIC itself */
	bool clock_known;		/* offset below is valid */
	int64_t clock_off;		/* trace clock - CLOCK_MONOTONIC */
	uint64_t clock_synced_at;

	struct ring_cursor cur;
	uint64_t errors;
};

/* --- area view ------------------------------------------------------------ */

static void ring_area_counters(struct hvtrace_ring *r)
{
	struct hvtrace_cpu_stats st;

	if (hvtrace_cpu_get_stats(r->area, r->cpu, &st))
		return;
	/*
	 * The kernel's meta counts every committed event in 'entries', the
	 * ones overwritten in 'overrun' and the ones handed over in 'read';
	 * entries - overrun - read is what is still unread.  Events hidden
	 * by malformed pages are as unreadable as overwritten ones.
	 */
	r->meta->entries = st.read + st.entries + st.overrun + st.skipped;
	r->meta->overrun = st.overrun + st.skipped;
	r->meta->read = st.read;
}

static int ring_area_get_reader(struct hvtrace_ring *r)
{
	struct hvt_trace_buffer_meta *m = r->meta;
	uint32_t cur = m->reader.id;
	uint32_t other = cur == r->ring_nr ? r->ring_nr + 1 : r->ring_nr;
	uint8_t *cpage = r->data + (size_t)cur * r->subbuf_size;
	uint8_t *opage = r->data + (size_t)other * r->subbuf_size;
	uint32_t max = r->subbuf_size - HVT_PAGE_HDR_SIZE;
	struct hvtrace_page_info info;
	uint64_t commit;
	int ret;

	/* The inactive reader page is ours to fill: nobody walks it now. */
	ret = hvtrace_cpu_read_page(r->area, r->cpu, opage, r->subbuf_size,
				    &info);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		memcpy(&commit, cpage + HVT_PAGE_COMMIT_OFF, 8);
		if (r->page_valid && info.seq == r->page_seq &&
		    !info.lost_events && !(commit & HVT_COMMIT_FLAGS) &&
		    commit == m->reader.read && info.size <= max - commit) {
			/* More of the same writer sub-buffer: append.  The
			 * first new event's delta is relative to the last
			 * one already on the page, as in the writer's page. */
			memcpy(cpage + HVT_PAGE_HDR_SIZE + commit,
			       opage + HVT_PAGE_HDR_SIZE, info.size);
			commit += info.size;
			memcpy(cpage + HVT_PAGE_COMMIT_OFF, &commit, 8);
			m->reader.read = (uint32_t)commit;
		} else {
			m->reader.id = other;
			m->reader.read = info.size;
			m->reader.lost_events = info.lost_events;
		}
		r->page_valid = true;
		r->page_seq = info.seq;
	}
	ring_area_counters(r);
	return 0;
}

HVTRACE_API int hvtrace_ring_open_area(struct hvtrace_area *a, int cpu,
				       struct hvtrace_ring **out)
{
	struct hvtrace_ring *r;
	uint64_t file_off;
	size_t slots_len;
	void *p;
	int ret;

	if (!a || !out)
		return hvt_err(-EINVAL,
			       "hvtrace_ring_open_area: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= a->hdr.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in area '%s' (it has %u)",
			       cpu, a->hdr.name, a->hdr.nr_cpus);
	r = calloc(1, sizeof(*r));
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	r->fd = -1;
	r->stats_fd = -1;
	r->cpu = cpu;
	r->area = a;
	r->page_size = (size_t)sysconf(_SC_PAGESIZE);
	r->subbuf_size = a->hdr.subbuf_size;
	r->ring_nr = a->hdr.nr_subbufs;
	r->nr_subbufs = r->ring_nr + 2;
	r->meta_len = r->page_size > 4096 ? r->page_size : 4096;
	slots_len = (size_t)r->ring_nr * r->subbuf_size;
	r->data_len = (size_t)r->nr_subbufs * r->subbuf_size;
	r->resv_len = r->meta_len + r->data_len;
	file_off = a->offset + a->hdr.cpu_offset +
		   (uint64_t)cpu * a->hdr.cpu_stride + a->hdr.meta_size;
	if (file_off % r->page_size || r->subbuf_size % r->page_size) {
		ret = hvt_err(-EOPNOTSUPP,
			      "area '%s': its sub-buffers are not aligned to "
			      "this host's %zu-byte pages, so they cannot be "
			      "mapped as an mmap view",
			      a->hdr.name, r->page_size);
		goto fail;
	}

	/* Reserve the whole view, then lay the pieces over it. */
	p = mmap(NULL, r->resv_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		ret = hvt_err(-errno, "cannot reserve %zu bytes for the mmap "
				      "view: %s",
			      r->resv_len, strerror(errno));
		goto fail;
	}
	r->resv = p;
	r->meta = p;
	r->data = (uint8_t *)p + r->meta_len;
	p = mmap(r->data, slots_len, PROT_READ, MAP_SHARED | MAP_FIXED, a->fd,
		 (off_t)file_off);
	if (p == MAP_FAILED) {
		ret = hvt_err(-errno, "cannot map the sub-buffers of CPU %d of "
				      "%s: %s",
			      cpu, a->path, strerror(errno));
		goto fail;
	}

	r->meta->meta_page_size = (uint32_t)r->meta_len;
	r->meta->meta_struct_len = sizeof(*r->meta);
	r->meta->subbuf_size = r->subbuf_size;
	r->meta->nr_subbufs = r->nr_subbufs;
	r->meta->reader.id = r->ring_nr;	/* empty reader page A */
	r->meta->reader.read = 0;
	ring_area_counters(r);
	*out = r;
	return 0;
fail:
	hvtrace_ring_close(r);
	return ret;
}

/* --- kernel view ---------------------------------------------------------- */

/* Parse "now ts: SEC.USEC" from a per_cpu stats file; 0 if absent. */
static int ring_kernel_now(struct hvtrace_ring *r, uint64_t *ns)
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
static void ring_kernel_clock_sync(struct hvtrace_ring *r)
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

static void ring_kernel_read_clock(struct hvtrace_ring *r, const char *dir)
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
static int ring_kernel_mode(struct hvtrace_ring *r)
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
static void ring_kernel_why(struct hvtrace_ring *r, int err)
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
static void ring_kread_counters(struct hvtrace_ring *r)
{
	char buf[1024];
	uint64_t unread, overrun, read;
	ssize_t n;

	n = pread(r->stats_fd, buf, sizeof(buf) - 1, 0);
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

/* Set up the read() view of an open trace_pipe_raw (r->fd). */
static int ring_kread_open(struct hvtrace_ring *r, const char *dir)
{
	char path[PATH_MAX];
	void *p;

	r->kread = true;
	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", dir, r->cpu);
	r->stats_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->stats_fd < 0)
		return hvt_err(-errno, "cannot open %s: %s", path,
			       strerror(errno));
	r->subbuf_size = ring_kread_subbuf_size(r, dir);
	r->nr_subbufs = 2;
	r->meta_len = r->page_size > 4096 ? r->page_size : 4096;
	r->data_len = (size_t)r->nr_subbufs * r->subbuf_size;
	r->resv_len = r->meta_len + r->data_len;
	p = mmap(NULL, r->resv_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return hvt_err(-errno, "cannot reserve %zu bytes for the "
				       "kernel ring view: %s",
			       r->resv_len, strerror(errno));
	r->resv = p;
	r->meta = p;
	r->data = (uint8_t *)p + r->meta_len;
	r->meta->meta_page_size = (uint32_t)r->meta_len;
	r->meta->meta_struct_len = sizeof(*r->meta);
	r->meta->subbuf_size = r->subbuf_size;
	r->meta->nr_subbufs = r->nr_subbufs;
	r->meta->reader.id = 0;		/* an empty reader page */
	r->meta->reader.read = 0;
	ring_kread_counters(r);
	ring_kernel_read_clock(r, dir);
	ring_kernel_clock_sync(r);
	return 0;
}

HVTRACE_API int hvtrace_ring_open_kernel(const char *instance, int cpu,
					 struct hvtrace_ring **out)
{
	const struct hvt_trace_buffer_meta *m;
	char dir[256], path[PATH_MAX];
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
	r = calloc(1, sizeof(*r));
	if (!r)
		return hvt_err(-ENOMEM, "out of memory");
	r->kernel = true;
	r->cpu = cpu;
	r->stats_fd = -1;
	r->page_size = (size_t)sysconf(_SC_PAGESIZE);
	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", dir,
		 cpu);
	snprintf(r->stats_path, sizeof(r->stats_path),
		 "%s/per_cpu/cpu%d/stats", dir, cpu);
	r->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->fd < 0) {
		ret = hvt_err(-errno, "cannot open %s: %s%s", path,
			      strerror(errno),
			      errno == ENOENT ? " (no such CPU)" :
			      errno == EACCES ? " (reading the kernel's trace "
						"buffers needs root)" : "");
		goto fail;
	}

	mode = ring_kernel_mode(r);
	if (mode < 0) {
		ret = mode;
		goto fail;
	}
	p = mode == RING_KREAD ?
		    MAP_FAILED :
		    mmap(NULL, r->page_size, PROT_READ, MAP_SHARED, r->fd, 0);
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
			ring_kernel_why(r, errno);
		ret = ring_kread_open(r, dir);
		if (ret)
			goto fail;
		*out = r;
		return 0;
	}
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
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, r->fd, 0);
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
	p = mmap(NULL, data_len, PROT_READ, MAP_SHARED, r->fd,
		 (off_t)r->meta_len);
	if (p == MAP_FAILED) {
		ret = hvt_err(-errno, "cannot mmap the sub-buffers of %s: %s",
			      path, strerror(errno));
		goto fail;
	}
	r->data = p;
	r->data_len = data_len;
	ring_kernel_read_clock(r, dir);
	ring_kernel_clock_sync(r);
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
		if (!ioctl(r->fd, HVT_TRACE_MMAP_IOCTL_GET_READER))
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
	struct hvt_trace_buffer_meta *m = r->meta;
	uint32_t other = m->reader.id ? 0 : 1;
	uint8_t *page = r->data + (size_t)other * r->subbuf_size;
	uint32_t max = r->subbuf_size - HVT_PAGE_HDR_SIZE;
	uint64_t commit, size, lost = 0;
	ssize_t n;

	for (;;) {
		n = read(r->fd, page, r->subbuf_size);
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
	ring_kread_counters(r);
	return 0;
}

/* --- common --------------------------------------------------------------- */

HVTRACE_API void hvtrace_ring_close(struct hvtrace_ring *r)
{
	if (!r)
		return;
	if (r->resv) {
		munmap(r->resv, r->resv_len);
	} else if (r->kernel) {
		if (r->data)
			munmap(r->data, r->data_len);
		if (r->meta)
			munmap(r->meta, r->meta_len);
	}
	if (r->fd >= 0)
		close(r->fd);
	if (r->stats_fd >= 0)
		close(r->stats_fd);
	free(r);
}

HVTRACE_API const struct hvt_trace_buffer_meta *
hvtrace_ring_meta(const struct hvtrace_ring *r)
{
	return r ? r->meta : NULL;
}

HVTRACE_API const void *hvtrace_ring_subbuf(const struct hvtrace_ring *r,
					    uint32_t id)
{
	if (!r || id >= r->nr_subbufs)
		return NULL;
	return r->data + (size_t)id * r->subbuf_size;
}

HVTRACE_API int hvtrace_ring_get_reader(struct hvtrace_ring *r)
{
	if (!r)
		return hvt_err(-EINVAL, "hvtrace_ring_get_reader: no ring");
	if (r->kread)
		return ring_kread_get_reader(r);
	return r->kernel ? ring_kernel_get_reader(r) : ring_area_get_reader(r);
}

HVTRACE_API const char *hvtrace_ring_fallback(const struct hvtrace_ring *r)
{
	return r && r->kread ? r->why : NULL;
}

HVTRACE_API int hvtrace_ring_cpu(const struct hvtrace_ring *r)
{
	return r ? r->cpu : -1;
}

HVTRACE_API bool hvtrace_ring_is_kernel(const struct hvtrace_ring *r)
{
	return r && r->kernel;
}

HVTRACE_API bool hvtrace_ring_clock_is_ns(const struct hvtrace_ring *r)
{
	return r && (!r->kernel || r->clock_ns);
}

HVTRACE_API uint64_t hvtrace_ring_errors(const struct hvtrace_ring *r)
{
	return r ? r->errors : 0;
}

HVTRACE_API uint64_t hvtrace_ring_take_trailing_lost(struct hvtrace_ring *r)
{
	if (!r || r->kernel)
		return 0;
	return hvtrace_cpu_take_trailing_lost(r->area, r->cpu);
}

HVTRACE_API uint64_t hvtrace_ring_now_ns(struct hvtrace_ring *r)
{
	uint64_t now;

	if (!r)
		return 0;
	now = hvt_host_now_ns();
	if (r->kernel) {
		if (r->clock_ns &&
		    now - r->clock_synced_at >= RING_KCLOCK_RESYNC_NS)
			ring_kernel_clock_sync(r);
		return r->clock_known ? now : 0;
	}
	return r->area->clock.synced ? now : 0;
}

static uint64_t ring_to_host(struct hvtrace_ring *r, uint64_t ts)
{
	if (r->kernel)
		return r->clock_known ? ts - (uint64_t)r->clock_off : ts;
	return hvtrace_area_to_host_ns(r->area, ts, NULL);
}

/* --- the cursor ----------------------------------------------------------- */

static inline uint32_t ring_read_u32(const uint32_t *p)
{
	/* The kernel updates the meta page under its reader lock during our
	 * ioctl; a relaxed load is enough once the ioctl returned. */
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Data bytes of the reader page the consumer may walk. */
static uint32_t ring_limit(const struct hvtrace_ring *r)
{
	uint32_t read = ring_read_u32(&r->meta->reader.read);
	uint32_t max = r->subbuf_size - HVT_PAGE_HDR_SIZE;

	return read < max ? read : max;
}

/* Start walking reader page @id from its beginning. */
static void ring_load_page(struct hvtrace_ring *r, uint32_t id)
{
	const uint8_t *page = r->data + (size_t)id * r->subbuf_size;
	uint32_t size;
	uint64_t ts, lost;

	r->cur.id = id;
	r->cur.pos = 0;
	r->cur.limit = ring_limit(r);
	if (sb_header(page, r->subbuf_size, &ts, &size, &lost)) {
		r->errors++;
		r->cur.pos = r->cur.limit;	/* nothing here is usable */
	}
	r->cur.ts = ts;
	/* Losses before a page that had no events stay owed to the next. */
	if (lost == HVTRACE_LOST_UNKNOWN || r->cur.lost == HVTRACE_LOST_UNKNOWN)
		r->cur.lost = lost ? HVTRACE_LOST_UNKNOWN : r->cur.lost;
	else
		r->cur.lost += lost;
}

/* Take over whatever reader page the view has now: what was handed over
 * before we came is not ours (the kernel counted it as read). */
static int ring_prime(struct hvtrace_ring *r)
{
	uint32_t id = ring_read_u32(&r->meta->reader.id);
	const uint8_t *payload;
	uint32_t len, i;
	int ret = 1;

	if (id >= r->nr_subbufs)
		return hvt_err(-EPROTO, "reader id %u out of range (%u "
					"sub-buffers)",
			       id, r->nr_subbufs);
	ring_load_page(r, id);
	r->cur.lost = 0;	/* belongs to what was consumed before us */
	/* Skip to reader.read, keeping the running timestamp. */
	for (i = 0; i < r->subbuf_size && ret > 0; i++)
		ret = sb_step(r->data + (size_t)id * r->subbuf_size +
				      HVT_PAGE_HDR_SIZE,
			      r->cur.limit, &r->cur.pos, &r->cur.ts, &payload,
			      &len);
	if (ret < 0)
		r->errors++;
	r->cur.pos = r->cur.limit;
	r->cur.fetched_ns = hvt_host_now_ns();
	r->cur.primed = true;
	return 0;
}

HVTRACE_API int hvtrace_ring_peek(struct hvtrace_ring *r,
				  struct hvtrace_record *rec)
{
	struct ring_cursor *c;
	int tries, ret;

	if (!r || !rec)
		return hvt_err(-EINVAL, "hvtrace_ring_peek: NULL argument");
	c = &r->cur;
	if (c->have) {
		*rec = c->rec;
		return 1;
	}
	if (!c->primed) {
		ret = ring_prime(r);
		if (ret)
			return ret;
	}
	/* Each pass either returns or asks for new data once: the first
	 * get-reader hands over everything pending, so three are plenty. */
	for (tries = 0; tries < 3; tries++) {
		const uint8_t *data = r->data + (size_t)c->id * r->subbuf_size +
				      HVT_PAGE_HDR_SIZE;
		const uint8_t *payload;
		uint32_t len, id, limit;

		c->next_pos = c->pos;
		c->next_ts = c->ts;
		ret = sb_step(data, c->limit, &c->next_pos, &c->next_ts,
			      &payload, &len);
		if (ret > 0) {
			c->rec.ts = c->next_ts;
			c->rec.host_ns = ring_to_host(r, c->next_ts);
			c->rec.data = payload;
			c->rec.size = len;
			c->rec.cpu = r->cpu;
			c->rec.lost_before = c->lost;
			c->rec.fetched_ns = c->fetched_ns;
			c->have = true;
			*rec = c->rec;
			return 1;
		}
		if (ret < 0) {
			/* Malformed: drop the rest of what was handed over. */
			r->errors++;
			c->ts = c->next_ts;
		}
		c->pos = c->limit;

		ret = hvtrace_ring_get_reader(r);
		if (ret)
			return ret;
		id = ring_read_u32(&r->meta->reader.id);
		if (id >= r->nr_subbufs) {
			r->errors++;
			return hvt_err(-EPROTO, "reader id %u out of range",
				       id);
		}
		if (id != c->id) {
			ring_load_page(r, id);
			c->fetched_ns = hvt_host_now_ns();
			continue;
		}
		limit = ring_limit(r);
		if (limit <= c->limit)
			return 0;
		c->limit = limit;
		c->fetched_ns = hvt_host_now_ns();
	}
	return 0;
}

HVTRACE_API void hvtrace_ring_consume(struct hvtrace_ring *r)
{
	if (!r || !r->cur.have)
		return;
	r->cur.pos = r->cur.next_pos;
	r->cur.ts = r->cur.next_ts;
	r->cur.lost = 0;
	r->cur.have = false;
}
