// SPDX-License-Identifier: MIT
/*
 * libhvtrace: a guest kernel's own ftrace ring buffer, read from guest RAM.
 *
 * Linux 6.12 and later can place a tracing instance's ring buffer in a
 * reserved physical range (reserve_mem= + trace_instance=NAME@LABEL).
 * With the guest's RAM in a host file, the host maps that file PROT_READ
 * and reads the ring in place, without the guest's help.  A running VMM's
 * RAM is a source too (hvtrace_kring_open_pid()): a shared memfd or file
 * of the VMM is mapped the same way through /proc/PID/fd/N, and any other
 * mapping is read through pread() of /proc/PID/mem.  kr_get() and the
 * kr_rd*() loads are the one page reader of the parser over both; every
 * offset is bounded by the source (the file, or the one VMM mapping the
 * ring was found in: a ring crossing its end is refused).  Two layouts:
 *
 *   6.12   per CPU, one block after the other, the first at the range start:
 *            ring_buffer_meta   magic 0xBADFEED, struct_size 56, text and
 *                               data addresses, first/head/commit_buffer,
 *                               subbuf_size, nr_subbufs, buffers[nr]
 *            sub-buffers        from the next subbuf_size boundary
 *
 *   6.15+  a global meta at the range start (magic, struct_sizes = cpu meta
 *          size | global size << 16, total_size, buffers_offset), a scratch
 *          area, then per CPU
 *            ring_buffer_cpu_meta  first/head/commit_buffer, subbuf_size,
 *                                  nr_subbufs, [newer fields], buffers[nr]
 *            sub-buffers           from the next subbuf_size boundary
 *          CPU 0's meta sits at buffers_offset; every later CPU's at the end
 *          of the previous CPU's sub-buffers.
 *
 * first/head/commit_buffer are guest kernel virtual addresses: they are
 * translated relative to first_buffer (slot = (va - first) / subbuf_size),
 * as the kernel itself does when it finds the buffer at the next boot.
 * buffers[id] is the slot of ring position id: id 0 is the reader page,
 * ids 1..nr-1 follow the ring's order (a reader swap gives the old reader
 * page the id of the page it replaces, so ids stay ring positions).
 *
 * Reading one CPU (every value below comes from guest memory and is
 * bounded before use; the host never writes):
 *
 *   snapshot  head, commit, buffers[] (a permutation: checked), first
 *   cursor    a ring id, the time_stamp its page had when we started it,
 *             and the data bytes already returned from it
 *   lapped?   the cursor lies outside [head .. commit] in ring order, or
 *             its page changed slot or time_stamp: the guest overwrote
 *             it; report the pages in between as lost, restart at head
 *   copy      page header (commit with acquire), then the new bytes
 *   recheck   acquire fence; time_stamp, buffers[id] and head again
 *             (see kr_copy_ok()); a failed check throws the copy away
 *   validate  hvt_subbuf_take(): the page walker over every new event
 *
 * The guest reuses a page only after moving head past it (it moves the
 * head off the next page before its writer touches it), so an unmoved
 * head after the copy proves the copy saw no byte of a new lap; see
 * docs/design.md, "Reading a guest kernel's ring".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvtrace-local.h"
#include "subbuf.h"

#define KR_MAGIC		0xBADFEEDu
#define KR_SCAN_STEP		4096u
#define KR_612_META_SIZE	56u	/* struct ring_buffer_meta, 6.12 */
#define KR_612_FIELDS		24u	/* offset of first_buffer in it */
#define KR_615_GLOBAL_SIZE	24u	/* struct ring_buffer_meta, 6.15+ */
#define KR_615_CPU_MIN		32u	/* ring_buffer_cpu_meta up to nr_subbufs */
#define KR_615_CPU_MAX		4096u
#define KR_NR_MAX		(1u << 20)
#define KR_CPUS_MAX		4096u

/* Offsets inside the common part of a CPU meta (from first_buffer). */
#define KR_F_FIRST	0u
#define KR_F_HEAD	8u
#define KR_F_COMMIT	16u
#define KR_F_SUBBUF	24u
#define KR_F_NR		28u

struct kr_cpu {
	uint64_t fields;	/* file offset of first_buffer */
	uint64_t bufs;		/* file offset of buffers[] */
	uint64_t pages;		/* file offset of sub-buffer slot 0 */

	/* snapshot (private) */
	int32_t *buffers;	/* nr entries */
	uint32_t *id_of;	/* slot -> ring id */
	uint64_t first;		/* first_buffer the cursor belongs to */

	/* cursor */
	bool started;		/* id is meaningful */
	bool page_started;	/* page_ts, slot, pos are */
	uint32_t id;
	uint32_t slot;
	uint64_t page_ts;
	uint32_t pos;
	uint64_t pos_ts;
	bool bad;		/* the commit page at bad_id is malformed */
	uint32_t bad_id;
	uint64_t pending_lost;	/* 0 or HVTRACE_LOST_UNKNOWN */

	uint8_t *copy;		/* private page copy */
	struct hvtrace_kring_stats st;
};

struct hvtrace_kring {
	int fd;
	char path[512];		/* what messages name the source by */
	const char *unit;	/* "file" or "mapping" */
	const uint8_t *map;	/* the source, PROT_READ; NULL: pread(mem) */
	uint64_t size;		/* bytes of the source: bounds every offset */
	uint64_t foff;		/* file offset of map[0] */
	/* a VMM's anonymous memory: read with pread() of /proc/PID/mem */
	int mem;		/* -1 when map is set */
	int pid;
	uint64_t base;		/* VMM virtual address of offset 0 */
	int pagemap;		/* /proc/PID/pagemap, or -1 */
	int io_err;		/* first failed read since the last check */
	struct hvtrace_kring_info info;
	uint32_t ring;		/* ring pages: nr_subbufs - 1 */
	uint32_t data_size;
	struct kr_cpu *cpus;
};

struct kr_snap {
	uint32_t head_id;
	uint32_t commit_id;	/* 0: the guest's reader page holds it */
};

/*
 * The one page reader of the parser: a mapped source (a RAM file, or a
 * VMM's memfd) is loaded from in place; a VMM's anonymous RAM is copied
 * with pread() of /proc/PID/mem (one system call, so one ordered copy per
 * call).  A failed read yields zeros, which no check accepts, and is
 * noted in io_err for the caller.
 */
static void kr_get(struct hvtrace_kring *k, uint64_t off, void *dst,
		   size_t len)
{
	ssize_t n;

	if (k->map) {
		memcpy(dst, k->map + off, len);
		return;
	}
	n = pread(k->mem, dst, len, (off_t)(k->base + off));
	if (n != (ssize_t)len) {
		if (!k->io_err)
			k->io_err = n < 0 ? errno : ESRCH;
		memset(dst, 0, len);
	}
}

/* Loads from guest memory: single, untorn loads (the guest writes them
 * with single stores too). */
static inline uint32_t kr_rd32(struct hvtrace_kring *k, uint64_t off)
{
	uint32_t v;

	if (k->map)
		return __atomic_load_n((const uint32_t *)(k->map + off),
				       __ATOMIC_RELAXED);
	kr_get(k, off, &v, sizeof(v));
	return v;
}

static inline uint64_t kr_rd64(struct hvtrace_kring *k, uint64_t off)
{
	uint64_t v;

	if (k->map)
		return __atomic_load_n((const uint64_t *)(k->map + off),
				       __ATOMIC_RELAXED);
	kr_get(k, off, &v, sizeof(v));
	return v;
}

/* An acquire load: the guest stored what it covers before it (the fence
 * after the load pairs with the guest's store order; a pread() copied
 * before it). */
static inline uint64_t kr_rd64_acq(struct hvtrace_kring *k, uint64_t off)
{
	uint64_t v = kr_rd64(k, off);

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return v;
}

static inline uint64_t kr_align(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Ring distance from id @a forward to id @b (ids 1..ring). */
static inline uint32_t kr_dist(uint32_t ring, uint32_t a, uint32_t b)
{
	return (b + ring - a) % ring;
}

static bool kr_geometry_ok(uint32_t subbuf, uint32_t nr)
{
	return subbuf >= 4096 && subbuf <= 65536 && !(subbuf & (subbuf - 1)) &&
	       nr >= 3 && nr <= KR_NR_MAX;
}

/* --- finding the ring ----------------------------------------------------- */

/*
 * Lay out @nr_cpus CPU blocks; the caller has checked that they fit.
 * @m0: CPU 0's meta, @p0: its sub-buffers, @stride: from one later CPU's
 * meta to the next, @hdr: meta size before buffers[], @fields: offset of
 * first_buffer in a meta.
 */
static int kr_layout(struct hvtrace_kring *k, uint32_t nr_cpus, uint64_t m0,
		     uint64_t p0, uint64_t stride, uint32_t hdr,
		     uint32_t fields)
{
	uint32_t nr = k->info.nr_subbufs, i;

	k->cpus = calloc(nr_cpus, sizeof(*k->cpus));
	if (!k->cpus)
		return hvt_err(-ENOMEM, "out of memory");
	k->info.nr_cpus = nr_cpus;
	for (i = 0; i < nr_cpus; i++) {
		struct kr_cpu *c = &k->cpus[i];
		uint64_t m = i == 0 ? m0 :
				      p0 + (uint64_t)k->info.subbuf_size * nr +
					      (uint64_t)(i - 1) * stride;

		c->fields = m + fields;
		c->bufs = m + hdr;
		c->pages = i == 0 ? p0 :
				    m + kr_align(hdr + 4ull * nr,
						 k->info.subbuf_size);
		c->buffers = calloc(nr, sizeof(*c->buffers));
		c->id_of = calloc(nr, sizeof(*c->id_of));
		c->copy = malloc(k->info.subbuf_size);
		if (!c->buffers || !c->id_of || !c->copy)
			return hvt_err(-ENOMEM, "out of memory");
	}
	return 0;
}

/* Why a ring can cross the end of its source, and what to do. */
static const char *kr_cross_hint(const struct hvtrace_kring *k)
{
	if (k->pid)
		return " (the guest's RAM is split over several mappings of "
		       "the VMM there; back it with one memory backend, "
		       "e.g. -object memory-backend-memfd, or move the "
		       "reserve_mem= range)";
	return " (a truncated copy of guest RAM?)";
}

/* CPU metas of the 6.12 layout at @off, one block after the other. */
static int kr_parse_612(struct hvtrace_kring *k, uint64_t off)
{
	uint32_t subbuf = kr_rd32(k, off + KR_612_FIELDS + KR_F_SUBBUF);
	uint32_t nr = kr_rd32(k, off + KR_612_FIELDS + KR_F_NR);
	uint64_t hdr, block, m;
	uint32_t n = 0;

	if (!kr_geometry_ok(subbuf, nr))
		return hvt_err(-EINVAL, "%s: 6.12 ring meta at 0x%llx has "
					"sub-buffers of %u bytes x %u: out of "
					"range",
			       k->path, (unsigned long long)off, subbuf, nr);
	hdr = kr_align(KR_612_META_SIZE + 4ull * nr, subbuf);
	block = hdr + (uint64_t)subbuf * nr;
	for (m = off; n < KR_CPUS_MAX && m + block <= k->size; m += block, n++)
		if (kr_rd32(k, m) != KR_MAGIC ||
		    kr_rd32(k, m + 4) != KR_612_META_SIZE ||
		    kr_rd32(k, m + KR_612_FIELDS + KR_F_SUBBUF) != subbuf ||
		    kr_rd32(k, m + KR_612_FIELDS + KR_F_NR) != nr)
			break;
	if (!n)
		return hvt_err(-EINVAL, "%s: 6.12 ring meta at 0x%llx: CPU 0's "
					"%llu-byte block runs past the end of "
					"the %s%s",
			       k->path, (unsigned long long)off,
			       (unsigned long long)block, k->unit,
			       kr_cross_hint(k));
	/* A next CPU's meta whose block does not fit: refuse rather than
	 * read some CPUs of the ring and leave the others unsaid. */
	if (n < KR_CPUS_MAX && m + block > k->size &&
	    m <= k->size - KR_SCAN_STEP && kr_rd32(k, m) == KR_MAGIC &&
	    kr_rd32(k, m + 4) == KR_612_META_SIZE &&
	    kr_rd32(k, m + KR_612_FIELDS + KR_F_SUBBUF) == subbuf &&
	    kr_rd32(k, m + KR_612_FIELDS + KR_F_NR) == nr)
		return hvt_err(-EINVAL, "%s: the guest kernel ring at 0x%llx "
					"crosses the end of the %s: CPU %u's "
					"block at 0x%llx needs %llu bytes, "
					"%llu are left%s",
			       k->path, (unsigned long long)off, k->unit, n,
			       (unsigned long long)m,
			       (unsigned long long)block,
			       (unsigned long long)(k->size - m),
			       kr_cross_hint(k));
	k->info.layout = HVTRACE_KRING_LAYOUT_6_12;
	k->info.subbuf_size = subbuf;
	k->info.nr_subbufs = nr;
	k->info.cpu_meta_size = KR_612_META_SIZE;
	k->info.offset = off;
	k->info.size = block * n;
	return kr_layout(k, n, off, off + hdr, block, KR_612_META_SIZE,
			 KR_612_FIELDS);
}

/* A global meta of the 6.15+ layout at @off, then the CPU metas. */
static int kr_parse_615(struct hvtrace_kring *k, uint64_t off)
{
	uint32_t sizes = kr_rd32(k, off + 4), cpu_size = sizes & 0xffff;
	uint64_t total = kr_rd64(k, off + 8), bo = kr_rd64(k, off + 16);
	uint64_t m0, p0, stride, end, m, p;
	uint32_t subbuf, nr, n;

	if (cpu_size < KR_615_CPU_MIN || cpu_size > KR_615_CPU_MAX ||
	    cpu_size % 8)
		return hvt_err(-EPROTONOSUPPORT,
			       "%s: ring meta at 0x%llx (6.15+ layout) names a "
			       "%u-byte CPU meta; supported: 32 to %u bytes, "
			       "a multiple of 8",
			       k->path, (unsigned long long)off, cpu_size,
			       KR_615_CPU_MAX);
	if (total > k->size - off || bo < KR_615_GLOBAL_SIZE || bo % 8 ||
	    bo > total - KR_615_CPU_MIN)
		return hvt_err(-EINVAL, "%s: ring meta at 0x%llx: total size "
					"%llu or buffers offset %llu does not "
					"fit the %llu bytes of the %s after "
					"it%s",
			       k->path, (unsigned long long)off,
			       (unsigned long long)total,
			       (unsigned long long)bo,
			       (unsigned long long)(k->size - off), k->unit,
			       total > k->size - off ? kr_cross_hint(k) : "");
	m0 = off + bo;
	subbuf = kr_rd32(k, m0 + KR_F_SUBBUF);
	nr = kr_rd32(k, m0 + KR_F_NR);
	if (!kr_geometry_ok(subbuf, nr))
		return hvt_err(-EINVAL, "%s: CPU 0 meta at 0x%llx has "
					"sub-buffers of %u bytes x %u: out of "
					"range",
			       k->path, (unsigned long long)m0, subbuf, nr);
	end = off + total;
	p0 = off + kr_align(bo + cpu_size + 4ull * nr, subbuf);
	stride = kr_align(cpu_size + 4ull * nr, subbuf) +
		 (uint64_t)subbuf * nr;
	if (p0 + (uint64_t)subbuf * nr > end)
		return hvt_err(-EINVAL, "%s: CPU 0's sub-buffers run past the "
					"ring's %llu bytes at 0x%llx",
			       k->path, (unsigned long long)total,
			       (unsigned long long)off);
	n = 1;
	m = p0 + (uint64_t)subbuf * nr;
	for (; n < KR_CPUS_MAX; n++, m += stride) {
		p = m + kr_align(cpu_size + 4ull * nr, subbuf);
		if (p + (uint64_t)subbuf * nr > end ||
		    kr_rd32(k, m + KR_F_SUBBUF) != subbuf ||
		    kr_rd32(k, m + KR_F_NR) != nr)
			break;
	}
	k->info.layout = HVTRACE_KRING_LAYOUT_6_15;
	k->info.subbuf_size = subbuf;
	k->info.nr_subbufs = nr;
	k->info.cpu_meta_size = cpu_size;
	k->info.offset = off;
	k->info.size = (p0 - off) + (uint64_t)subbuf * nr +
		       (uint64_t)(n - 1) * stride;
	return kr_layout(k, n, m0, p0, stride, cpu_size, 0);
}

/* A meta at @off: -ENODATA when there is none. */
static int kr_try(struct hvtrace_kring *k, uint64_t off)
{
	uint32_t second;

	if (off > k->size - KR_SCAN_STEP || kr_rd32(k, off) != KR_MAGIC)
		return -ENODATA;
	k->info.nr_magic++;
	second = kr_rd32(k, off + 4);
	if (second == KR_612_META_SIZE)
		return kr_parse_612(k, off);
	if ((second >> 16) == KR_615_GLOBAL_SIZE)
		return kr_parse_615(k, off);
	return hvt_err(-EPROTONOSUPPORT,
		       "%s: ring meta magic 0x%x at offset 0x%llx, but "
		       "its size word reads 0x%x: not the 6.12 layout "
		       "(56-byte per-CPU meta) nor the 6.15+ one (24-byte "
		       "global meta); this guest kernel's layout is not "
		       "supported",
		       k->path, KR_MAGIC, (unsigned long long)off, second);
}

/*
 * A candidate meta at @off: 0 when a ring was found there, 1 to go on
 * scanning (the first refusal is kept to report), <0 to stop (out of
 * memory).
 */
static int kr_consider(struct hvtrace_kring *k, uint64_t off, int *first_ret,
		       char *first_err, size_t len)
{
	int ret = kr_try(k, off);

	if (ret == 0)
		return 0;
	if (ret != -ENODATA && !*first_ret) {
		*first_ret = ret;
		snprintf(first_err, len, "%s", hvtrace_last_error());
	}
	if (ret != -ENODATA && k->cpus)
		return ret;	/* kr_layout() failed: out of memory */
	return 1;
}

/*
 * Scan a mapped source, skipping its holes (SEEK_DATA/SEEK_HOLE): a
 * sparse tmpfs file or memfd would otherwise get a page allocated for
 * every hole the scan touches.  Where the file system does not report
 * holes, lseek() calls all of it data.
 */
static int kr_scan_map(struct hvtrace_kring *k, int *first_ret,
		       char *first_err, size_t len)
{
	uint64_t off = 0, end = 0;
	int ret;

	while (off <= k->size - KR_SCAN_STEP) {
		if (off >= end) {
			off_t d = lseek(k->fd, (off_t)(k->foff + off),
					SEEK_DATA);
			off_t h;

			if (d < 0 && errno == ENXIO)
				break;	/* nothing but holes from here */
			if (d < 0) {
				end = k->size;	/* no hole information */
			} else {
				if ((uint64_t)d < k->foff)
					d = (off_t)k->foff;
				off = ((uint64_t)d - k->foff) &
				      ~(uint64_t)(KR_SCAN_STEP - 1);
				h = lseek(k->fd, d, SEEK_HOLE);
				end = h < 0 ? k->size :
					      (uint64_t)h - k->foff;
				if (end <= off)
					end = off + KR_SCAN_STEP;
			}
			continue;
		}
		ret = kr_consider(k, off, first_ret, first_err, len);
		if (ret <= 0)
			return ret;
		off += KR_SCAN_STEP;
	}
	return 1;
}

#define KR_CHUNK	(2u << 20)	/* pread size of the memory scan */

/*
 * Scan a VMM mapping through /proc/PID/mem in 2 MiB reads, looking at
 * the first 4 bytes of each 4 KiB.  /proc/PID/pagemap tells which pages
 * are populated (present or swapped): a chunk without any is not read
 * (untouched guest RAM is most of a large idle guest).  Without pagemap,
 * every chunk is read.
 */
static int kr_scan_mem(struct hvtrace_kring *k, int *first_ret,
		       char *first_err, size_t len)
{
	uint64_t pm[KR_CHUNK / KR_SCAN_STEP];
	uint8_t *buf = malloc(KR_CHUNK);
	uint64_t off, n, i;
	int ret = 1;

	if (!buf)
		return hvt_err(-ENOMEM, "out of memory");
	for (off = 0; ret > 0 && off < k->size; off += KR_CHUNK) {
		bool any = k->pagemap < 0;

		n = k->size - off < KR_CHUNK ? k->size - off : KR_CHUNK;
		if (k->pagemap >= 0) {
			ssize_t got = pread(k->pagemap, pm,
					    n / KR_SCAN_STEP * 8,
					    (off_t)((k->base + off) /
						    KR_SCAN_STEP * 8));

			if (got != (ssize_t)(n / KR_SCAN_STEP * 8))
				any = true;	/* no answer: read it */
			for (i = 0; !any && i < n / KR_SCAN_STEP; i++)
				any = pm[i] >> 62;	/* present, swapped */
		}
		if (!any)
			continue;
		if (pread(k->mem, buf, n, (off_t)(k->base + off)) !=
		    (ssize_t)n) {
			continue;	/* unreadable (e.g. PROT_NONE) */
		}
		for (i = 0; ret > 0 && i + KR_SCAN_STEP <= n;
		     i += KR_SCAN_STEP) {
			uint32_t w;

			memcpy(&w, buf + i, sizeof(w));
			if (w == KR_MAGIC)
				ret = kr_consider(k, off + i, first_ret,
						  first_err, len);
		}
	}
	free(buf);
	return ret;
}

static int kr_find(struct hvtrace_kring *k, uint64_t offset)
{
	char first_err[512] = "";
	int first_ret = 0, ret;

	if (offset) {
		if (offset % 8 || offset > k->size - KR_SCAN_STEP)
			return hvt_err(-EINVAL, "%s: offset 0x%llx is not inside "
						"the %s or not 8-byte aligned",
				       k->path, (unsigned long long)offset,
				       k->unit);
		ret = kr_try(k, offset);
		if (ret == -ENODATA)
			return hvt_err(-ENODATA, "%s: no ring meta (magic "
						 "0x%x) at offset 0x%llx",
				       k->path, KR_MAGIC,
				       (unsigned long long)offset);
		return ret;
	}
	/* One 4-byte load per 4 KiB: bounded by the source's size. */
	ret = k->map ? kr_scan_map(k, &first_ret, first_err,
				   sizeof(first_err)) :
		       kr_scan_mem(k, &first_ret, first_err,
				   sizeof(first_err));
	if (ret <= 0)
		return ret;
	if (first_ret)
		return hvt_err(first_ret, "%s", first_err);
	return hvt_err(-ENODATA,
		       "%s: no guest kernel ring buffer in this %s (no meta "
		       "magic 0x%x at any 4 KiB boundary); start the guest "
		       "with reserve_mem=SIZE:4096:LABEL "
		       "trace_instance=NAME@LABEL (hvtrace guest start "
		       "--kernel-events) and let it boot",
		       k->path, k->unit, KR_MAGIC);
}

HVTRACE_API int hvtrace_kring_open(const char *path, uint64_t offset,
				   struct hvtrace_kring **out)
{
	struct hvtrace_kring *k;
	struct hvt_guard g;
	struct stat st;
	void *p;
	int ret;

	if (!path || !out)
		return hvt_err(-EINVAL, "hvtrace_kring_open: NULL argument");
	k = calloc(1, sizeof(*k));
	if (!k)
		return hvt_err(-ENOMEM, "out of memory");
	k->fd = -1;
	k->mem = -1;
	k->pagemap = -1;
	k->unit = "file";
	snprintf(k->path, sizeof(k->path), "%s", path);
	/* Read-only: the host never writes guest memory. */
	k->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (k->fd < 0) {
		ret = hvt_err(-errno, "cannot open %s: %s", path,
			      strerror(errno));
		goto fail;
	}
	if (fstat(k->fd, &st) || st.st_size < (off_t)KR_SCAN_STEP ||
	    (uint64_t)st.st_size > SIZE_MAX) {
		ret = hvt_err(-EINVAL, "%s: not a guest RAM file (%lld bytes)",
			      path, (long long)st.st_size);
		goto fail;
	}
	k->size = (uint64_t)st.st_size & ~(uint64_t)(KR_SCAN_STEP - 1);
	p = mmap(NULL, k->size, PROT_READ, MAP_SHARED, k->fd, 0);
	if (p == MAP_FAILED) {
		ret = hvt_err(-errno, "cannot map %s: %s", path,
			      strerror(errno));
		goto fail;
	}
	k->map = p;
	hvt_guard_init();
	if (hvt_guard_enter(&g, k->map, k->size)) {
		ret = hvt_err(-EIO, "%s shrank while it was scanned", path);
		goto fail;
	}
	ret = kr_find(k, offset);
	hvt_guard_leave(&g);
	if (ret)
		goto fail;
	k->ring = k->info.nr_subbufs - 1;
	k->data_size = k->info.subbuf_size - HVT_PAGE_HDR_SIZE;
	*out = k;
	return 0;
fail:
	hvtrace_kring_close(k);
	return ret;
}

/* --- a running VMM's memory ----------------------------------------------- */

#define KR_VM_MIN	(64ull << 20)	/* smaller mappings are not guest RAM */
#define KR_VM_MAX	(1ull << 40)	/* larger ones are reservations */

/* Explain a refused /proc/PID file: ptrace read access is needed. */
static int kr_pid_err(int pid, const char *what, int err)
{
	if (err == ENOENT || err == ESRCH)
		return hvt_err(-ESRCH, "no process %d (--vm-pid names the VMM "
				       "process, e.g. QEMU's pid)",
			       pid);
	if (err == EACCES || err == EPERM)
		return hvt_err(-EACCES, "cannot read %s of process %d: "
					"reading a VMM's guest RAM needs "
					"ptrace read access to it; run as "
					"root, or as the VMM's user with "
					"kernel.yama.ptrace_scope at 0 "
					"(sysctl) and the VMM not marked "
					"undumpable",
			       what, pid);
	return hvt_err(-err, "cannot read %s of process %d: %s", what, pid,
		       strerror(err));
}

/* The descriptor of @pid that holds the file of a shared mapping. */
static int kr_pid_fd(int pid, unsigned int maj, unsigned int min,
		     unsigned long long ino, int *fdnum)
{
	char dir[64], p[96];
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd = -1;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while (fd < 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%.24s", dir, e->d_name);
		if (stat(p, &st) || !S_ISREG(st.st_mode) ||
		    st.st_ino != ino || major(st.st_dev) != maj ||
		    minor(st.st_dev) != min)
			continue;
		/* Read-only: the host never writes guest memory. */
		fd = open(p, O_RDONLY | O_CLOEXEC);
		*fdnum = atoi(e->d_name);
	}
	closedir(d);
	return fd;
}

/*
 * Look for the ring in one mapping of @pid.  A shared file mapping (a
 * memory-backend-file or memfd) whose descriptor the VMM holds is mapped
 * PROT_READ from that descriptor; any other mapping is read through
 * /proc/PID/mem.  Offsets are relative to the mapping's start and bounded
 * by its length: the ring must lie inside one mapping.
 */
static int kr_pid_try(int pid, uint64_t start, uint64_t end, bool shared,
		      unsigned long long foff, unsigned int maj,
		      unsigned int min, unsigned long long ino,
		      const char *name, struct hvtrace_kring **out)
{
	struct hvtrace_kring *k = calloc(1, sizeof(*k));
	char p[64];
	int ret, fdnum = -1;

	if (!k)
		return hvt_err(-ENOMEM, "out of memory");
	k->fd = -1;
	k->mem = -1;
	k->pagemap = -1;
	k->pid = pid;
	k->unit = "mapping";
	k->base = start;
	k->size = end - start;
	if (shared && ino)
		k->fd = kr_pid_fd(pid, maj, min, ino, &fdnum);
	if (k->fd >= 0 && lseek(k->fd, (off_t)foff, SEEK_DATA) < 0 &&
	    errno != ENXIO) {
		/* No hole information (hugetlbfs): a scan of our own mapping
		 * would allocate the holes; the VMM's page map tells. */
		close(k->fd);
		k->fd = -1;
	}
	if (k->fd >= 0) {
		void *m = mmap(NULL, k->size, PROT_READ, MAP_SHARED, k->fd,
			       (off_t)foff);

		if (m != MAP_FAILED) {
			k->map = m;
			k->foff = foff;
		}
	}
	if (k->map) {
		struct hvt_guard g;

		snprintf(k->path, sizeof(k->path),
			 "process %d: fd %d (%s) mapped at 0x%llx", pid,
			 fdnum, name, (unsigned long long)start);
		hvt_guard_init();
		if (hvt_guard_enter(&g, k->map, k->size)) {
			ret = hvt_err(-EIO, "%s: the file shrank while it was "
					    "scanned",
				      k->path);
			goto out;
		}
		ret = kr_find(k, 0);
		hvt_guard_leave(&g);
		goto out;
	}
	snprintf(k->path, sizeof(k->path),
		 "process %d: memory 0x%llx-0x%llx (%s)", pid,
		 (unsigned long long)start, (unsigned long long)end,
		 *name ? name : "anonymous");
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	k->mem = open(p, O_RDONLY | O_CLOEXEC);
	if (k->mem < 0) {
		ret = kr_pid_err(pid, "the memory", errno);
		goto out;
	}
	snprintf(p, sizeof(p), "/proc/%d/pagemap", pid);
	k->pagemap = open(p, O_RDONLY | O_CLOEXEC);
	ret = kr_find(k, 0);
out:
	if (ret) {
		hvtrace_kring_close(k);
		return ret;
	}
	k->ring = k->info.nr_subbufs - 1;
	k->data_size = k->info.subbuf_size - HVT_PAGE_HDR_SIZE;
	k->info.addr = start + k->info.offset;
	*out = k;
	return 0;
}

struct kr_vma {
	unsigned long long start, end, foff, ino, rss;
	unsigned int maj, min;
	bool shared;
	char name[256];
};

/*
 * The candidate mappings of @pid from /proc/PID/smaps: writable, 64 MiB
 * to 1 TiB, with resident pages (the ring is written, so populated; the
 * upper bound keeps out address-space reservations such as a sanitizer's
 * shadow, whose page map alone would take minutes to read).
 */
static int kr_pid_vmas(int pid, struct kr_vma **out, unsigned int *nr,
		       unsigned int *big)
{
	char p[64], line[512];
	struct kr_vma *v = NULL, *cur = NULL;
	unsigned int n = 0, cap = 0;
	FILE *f;

	*big = 0;
	snprintf(p, sizeof(p), "/proc/%d/smaps", pid);
	f = fopen(p, "re");
	if (!f)
		return kr_pid_err(pid, "the mappings", errno);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, foff, ino, kb;
		unsigned int maj, min;
		char perms[8];
		int pos = 0;

		if (cur && sscanf(line, "Rss: %llu kB", &kb) == 1) {
			cur->rss = kb;
			if (!kb)
				n--;	/* nothing populated: drop it */
			cur = NULL;
			continue;
		}
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start,
			   &end, perms, &foff, &maj, &min, &ino, &pos) < 7)
			continue;
		cur = NULL;
		if (end <= start || end - start < KR_VM_MIN ||
		    perms[0] != 'r' || perms[1] != 'w')
			continue;
		if (end - start > KR_VM_MAX) {
			(*big)++;
			continue;
		}
		if (n == cap) {
			struct kr_vma *nv;

			cap = cap ? 2 * cap : 16;
			nv = cap <= 65536 ? realloc(v, cap * sizeof(*v)) : NULL;
			if (!nv) {
				free(v);
				fclose(f);
				return hvt_err(-ENOMEM, "out of memory");
			}
			v = nv;
		}
		cur = &v[n++];
		*cur = (struct kr_vma){ start, end, foff, ino, 0, maj, min,
					perms[3] == 's', "" };
		snprintf(cur->name, sizeof(cur->name), "%s", line + pos);
		cur->name[strcspn(cur->name, "\n")] = '\0';
	}
	fclose(f);
	*out = v;
	*nr = n;
	return 0;
}

HVTRACE_API int hvtrace_kring_open_pid(int pid, struct hvtrace_kring **out)
{
	char first_err[512] = "";
	int ret = -ENODATA, first_ret = 0;
	unsigned int nr = 0, big = 0, i;
	struct kr_vma *v = NULL;

	if (pid <= 0 || !out)
		return hvt_err(-EINVAL, "hvtrace_kring_open_pid: bad pid %d or "
					"NULL argument",
			       pid);
	ret = kr_pid_vmas(pid, &v, &nr, &big);
	if (ret)
		return ret;
	ret = -ENODATA;
	for (i = 0; i < nr; i++) {
		ret = kr_pid_try(pid, v[i].start, v[i].end, v[i].shared,
				 v[i].foff, v[i].maj, v[i].min, v[i].ino,
				 v[i].name, out);
		if (ret == 0 || ret == -ENOMEM || ret == -EACCES ||
		    ret == -ESRCH)
			break;
		if (ret != -ENODATA && !first_ret) {
			first_ret = ret;
			snprintf(first_err, sizeof(first_err), "%s",
				 hvtrace_last_error());
		}
	}
	free(v);
	if (ret == 0 || ret == -ENOMEM || ret == -EACCES || ret == -ESRCH)
		return ret;
	if (first_ret)
		return hvt_err(first_ret, "%s", first_err);
	if (!nr)
		return hvt_err(-ENODATA, "process %d has no populated writable "
					 "mapping of 64 MiB to 1 TiB%s: not a "
					 "VMM with its guest's RAM",
			       pid, big ? " (larger ones are not scanned)" :
					  "");
	return hvt_err(-ENODATA, "no guest kernel ring buffer in the memory of "
				 "process %d (%u mappings of 64 MiB to 1 TiB "
				 "scanned for the meta magic 0x%x); start the "
				 "guest kernel with reserve_mem=SIZE:4096:LABEL "
				 "trace_instance=NAME@LABEL and let it boot",
		       pid, nr, KR_MAGIC);
}

HVTRACE_API void hvtrace_kring_close(struct hvtrace_kring *k)
{
	uint32_t i;

	if (!k)
		return;
	if (k->cpus)
		for (i = 0; i < k->info.nr_cpus; i++) {
			free(k->cpus[i].buffers);
			free(k->cpus[i].id_of);
			free(k->cpus[i].copy);
		}
	free(k->cpus);
	if (k->map)
		munmap((void *)k->map, k->size);
	if (k->fd >= 0)
		close(k->fd);
	if (k->mem >= 0)
		close(k->mem);
	if (k->pagemap >= 0)
		close(k->pagemap);
	free(k);
}

HVTRACE_API int hvtrace_kring_get_info(const struct hvtrace_kring *k,
				       struct hvtrace_kring_info *info)
{
	if (!k || !info)
		return hvt_err(-EINVAL, "hvtrace_kring_get_info: NULL argument");
	*info = k->info;
	return 0;
}

/* --- reading -------------------------------------------------------------- */

/* Translate a guest VA of a sub-buffer to its ring id; false if it is not
 * one of this CPU's sub-buffers. */
static bool kr_va_id(const struct hvtrace_kring *k, const struct kr_cpu *c,
		     uint64_t first, uint64_t va, uint32_t *id)
{
	uint64_t d = va - first;

	if (va < first || d % k->info.subbuf_size ||
	    d / k->info.subbuf_size >= k->info.nr_subbufs)
		return false;
	*id = c->id_of[d / k->info.subbuf_size];
	return true;
}

/* Take and check a snapshot of @c's meta: 0, or -EBADMSG. */
static int kr_snap(struct hvtrace_kring *k, struct kr_cpu *c,
		   struct kr_snap *s)
{
	uint32_t nr = k->info.nr_subbufs, i;
	uint64_t first, head, commit;

	first = kr_rd64(k, c->fields + KR_F_FIRST);
	head = kr_rd64(k, c->fields + KR_F_HEAD);
	/* The guest stores commit_buffer after the page commit it covers. */
	commit = kr_rd64_acq(k, c->fields + KR_F_COMMIT);
	if (kr_rd32(k, c->fields + KR_F_SUBBUF) != k->info.subbuf_size ||
	    kr_rd32(k, c->fields + KR_F_NR) != nr)
		return -EBADMSG;
	kr_get(k, c->bufs, c->buffers, 4ull * nr);
	memset(c->id_of, 0xff, 4ull * nr);
	for (i = 0; i < nr; i++) {
		int32_t b = c->buffers[i];

		/* buffers[] must be a permutation of the slots. */
		if (b < 0 || (uint32_t)b >= nr || c->id_of[b] != UINT32_MAX)
			return -EBADMSG;
		c->id_of[b] = i;
	}
	if (!kr_va_id(k, c, first, head, &s->head_id) || s->head_id == 0 ||
	    !kr_va_id(k, c, first, commit, &s->commit_id))
		return -EBADMSG;
	if (c->started && first != c->first) {
		/* The guest set its ring up again (a reboot): start over. */
		c->started = false;
		c->bad = false;
	}
	c->first = first;
	return 0;
}

static void kr_next_page(struct hvtrace_kring *k, struct kr_cpu *c)
{
	c->id = c->id % k->ring + 1;
	c->page_started = false;
	c->pos = 0;
}

/* @n pages (or their unread rests) were overwritten before we read them. */
static void kr_lost_pages(struct kr_cpu *c, uint32_t n)
{
	c->st.lost_pages += n;
	c->pending_lost = HVTRACE_LOST_UNKNOWN;
}

/*
 * A malformed page: counted and skipped, its events reported lost.  The
 * page the guest is filling is waited on until it moves past it.
 * Returns true when the read must stop there.
 */
static bool kr_skip_bad(struct hvtrace_kring *k, struct kr_cpu *c,
			bool is_commit)
{
	c->st.errors++;
	c->st.skipped_pages++;
	c->pending_lost = HVTRACE_LOST_UNKNOWN;
	if (is_commit) {
		c->bad = true;
		c->bad_id = c->id;
		return true;
	}
	kr_next_page(k, c);
	return false;
}

/*
 * The reuse rule, checked after a page was copied (acquire fence first):
 * the copy is intact if the page still has the time_stamp read before the
 * copy, still sits at ring position @id, and the head has not moved past
 * @id.  The guest moves the head off a page before its writer touches it
 * (rb_handle_head_page() before the tail moves), so a copy that saw any
 * byte of a new lap sees the head moved past it.
 */
static bool kr_copy_ok(struct hvtrace_kring *k, struct kr_cpu *c,
		       const struct kr_snap *s, uint32_t slot, uint64_t page,
		       uint64_t ts)
{
	uint32_t head2;

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (kr_rd64(k, page) != ts ||
	    (uint32_t)kr_rd32(k, c->bufs + 4ull * c->id) != slot)
		return false;
	if (!kr_va_id(k, c, c->first, kr_rd64(k, c->fields + KR_F_HEAD),
		      &head2) ||
	    head2 == 0)
		return false;
	return kr_dist(k->ring, s->head_id, head2) <=
	       kr_dist(k->ring, s->head_id, c->id);
}

static int kr_read(struct hvtrace_kring *k, struct kr_cpu *c, uint8_t *out,
		   struct hvtrace_page_info *info)
{
	uint32_t iter;

	/* Each pass consumes, skips or retries a page: bounded. */
	for (iter = 0; iter < 2 * k->info.nr_subbufs + 4; iter++) {
		struct kr_snap s;
		struct hvt_take t;
		uint64_t page, commit, ts;
		uint32_t slot, size;
		bool is_commit, valid;
		int ret;

		if (kr_snap(k, c, &s)) {
			if (k->io_err)
				return 0;	/* not the guest's fault */
			c->st.errors++;
			return 0;
		}
		if (s.commit_id == 0)
			/* The guest's own reader holds the writer's page:
			 * nothing here is ours to read (docs/guest-kernel.md). */
			return 0;
		if (!c->started) {
			c->started = true;
			c->id = s.head_id;
			c->page_started = false;
			c->pos = 0;
		} else if (kr_dist(k->ring, s.head_id, c->id) >
				   kr_dist(k->ring, s.head_id, s.commit_id) ||
			   (c->page_started &&
			    (uint32_t)c->buffers[c->id] != c->slot)) {
			/* Lapped: our page and those up to the head are
			 * gone. */
			kr_lost_pages(c, kr_dist(k->ring, c->id, s.head_id) ?
						      kr_dist(k->ring, c->id,
							      s.head_id) :
						      1);
			c->id = s.head_id;
			c->page_started = false;
			c->pos = 0;
			c->bad = false;
		}
		is_commit = c->id == s.commit_id;
		if (c->bad && c->bad_id == c->id) {
			if (is_commit)
				return 0;	/* wait for the writer to move */
			c->bad = false;
			kr_next_page(k, c);
			continue;
		}
		slot = (uint32_t)c->buffers[c->id];
		page = c->pages + (uint64_t)slot * k->info.subbuf_size;
		/* The page commit: acquire, so the bytes it covers are there
		 * (the guest stores the events before the commit). */
		commit = kr_rd64_acq(k, page + HVT_PAGE_COMMIT_OFF);
		ts = kr_rd64(k, page);
		size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
		valid = size <= k->data_size &&
			!(commit & ~(HVT_COMMIT_SIZE_MASK | HVT_COMMIT_FLAGS));
		if (c->page_started && ts != c->page_ts)
			valid = true;	/* reused: handled after the check */
		else if (valid && size > c->pos)
			kr_get(k, page + HVT_PAGE_HDR_SIZE + c->pos,
			       c->copy + HVT_PAGE_HDR_SIZE + c->pos,
			       size - c->pos);
		if (!kr_copy_ok(k, c, &s, slot, page, ts)) {
			c->st.retries++;
			continue;	/* the next snapshot tells what moved */
		}
		if (c->page_started && ts != c->page_ts) {
			/* Reused since we started it (we were lapped between
			 * two calls and the head came round again): what
			 * follows our page starts at the head. */
			kr_lost_pages(c, 1);
			c->started = false;
			c->bad = false;
			continue;
		}
		if (!valid || (c->page_started && size < c->pos)) {
			if (kr_skip_bad(k, c, is_commit))
				return 0;
			continue;
		}
		if (!c->page_started) {
			if (size == 0) {
				/* Nothing on it (yet). */
				if (is_commit)
					return 0;
				kr_next_page(k, c);
				continue;
			}
			c->page_started = true;
			c->page_ts = ts;
			c->slot = slot;
			c->pos = 0;
			c->pos_ts = ts;
		}
		ret = hvt_subbuf_take(c->copy + HVT_PAGE_HDR_SIZE, size,
				      k->data_size, c->pos, c->pos_ts,
				      c->pending_lost, out, &t);
		if (ret < 0) {
			if (kr_skip_bad(k, c, is_commit))
				return 0;
			continue;
		}
		if (ret == 0) {
			c->pos = t.end;
			c->pos_ts = t.end_ts;
			if (is_commit)
				return 0;
			kr_next_page(k, c);
			continue;
		}
		if (t.no_room)
			c->st.errors++;
		if (info) {
			info->lost_events = c->pending_lost;
			info->first_ts = c->pos_ts;
			info->entries = t.n;
			info->size = t.end - c->pos;
			info->seq = c->id;
			info->flags = is_commit ? HVTRACE_PAGE_TAIL : 0;
		}
		if (c->pending_lost != HVTRACE_LOST_UNKNOWN)
			c->st.lost_events += c->pending_lost;
		c->pending_lost = 0;
		c->st.read += t.n;
		c->st.bytes += t.end - c->pos;
		c->st.now_ts = t.end_ts;
		c->pos = t.end;
		c->pos_ts = t.end_ts;
		if (!is_commit && !t.cut)
			kr_next_page(k, c);
		return 1;
	}
	return 0;
}

HVTRACE_API int hvtrace_kring_read_page(struct hvtrace_kring *k, int cpu,
					void *page, size_t size,
					struct hvtrace_page_info *info)
{
	struct hvt_guard g;
	struct stat st;
	int ret;

	if (!k || !page)
		return hvt_err(-EINVAL,
			       "hvtrace_kring_read_page: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= k->info.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in the guest kernel ring of "
					"%s (it has %u)",
			       cpu, k->path, k->info.nr_cpus);
	if (size < k->info.subbuf_size)
		return hvt_err(-ENOSPC, "page buffer of %zu bytes is smaller "
					"than the sub-buffer size %u",
			       size, k->info.subbuf_size);
	if (!k->map) {
		/* A VMM's anonymous memory: gone with its process. */
		k->io_err = 0;
		ret = kr_read(k, &k->cpus[cpu], page, info);
		if (k->io_err)
			return hvt_err(k->io_err == ESRCH ? -ESRCH : -EIO,
				       "%s: cannot read it any more (%s): the "
				       "VMM process has exited or unmapped "
				       "this memory, and the ring went with "
				       "it; events not read by then are "
				       "lost (a memfd or file memory backend "
				       "keeps them readable)",
				       k->path, k->io_err == ESRCH ?
							"end of its memory" :
							strerror(k->io_err));
		return ret;
	}
	if (fstat(k->fd, &st) || (uint64_t)st.st_size < k->foff + k->size) {
		k->cpus[cpu].st.errors++;
		return hvt_err(-EIO, "%s shrank under the reader; reopen it",
			       k->path);
	}
	if (hvt_guard_enter(&g, k->map, k->size)) {
		k->cpus[cpu].st.errors++;
		return hvt_err(-EIO, "%s: the %s shrank under the reader "
				     "(SIGBUS while copying); reopen it",
			       k->path, k->unit);
	}
	ret = kr_read(k, &k->cpus[cpu], page, info);
	hvt_guard_leave(&g);
	return ret;
}

HVTRACE_API int hvtrace_kring_get_stats(const struct hvtrace_kring *k,
					int cpu,
					struct hvtrace_kring_stats *st)
{
	if (!k || !st)
		return hvt_err(-EINVAL,
			       "hvtrace_kring_get_stats: NULL argument");
	if (cpu < 0 || (uint32_t)cpu >= k->info.nr_cpus)
		return hvt_err(-EINVAL, "no CPU %d in the guest kernel ring of "
					"%s (it has %u)",
			       cpu, k->path, k->info.nr_cpus);
	*st = k->cpus[cpu].st;
	return 0;
}
