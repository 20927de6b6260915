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
 *             (see kr_copy_ok(), kring_read.c); a failed check throws
 *             the copy away
 *   validate  hvt_subbuf_take(): the page walker over every new event
 *
 * The guest reuses a page only after moving head past it (it moves the
 * head off the next page before its writer touches it), so an unmoved
 * head after the copy proves the copy saw no byte of a new lap; see
 * docs/design.md, "Reading a guest kernel's ring".
 *
 * This file finds the ring in a source and opens it; kring_pid.c finds
 * the source in a running VMM; kring_read.c is the read loop above.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kring-local.h"
#include "subbuf.h"

/*
 * The one page reader of the parser: a mapped source (a RAM file, or a
 * VMM's memfd) is loaded from in place; a VMM's anonymous RAM is copied
 * with pread() of /proc/PID/mem (one system call, so one ordered copy per
 * call).  A failed read yields zeros, which no check accepts, and is
 * noted in io_err for the caller.
 */
void kr_get(struct hvtrace_kring *k, uint64_t off, void *dst,
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

static bool kr_geometry_ok(uint32_t subbuf, uint32_t nr)
{
	return subbuf >= 4096 && subbuf <= 65536 && !(subbuf & (subbuf - 1)) &&
	       nr >= 3 && nr <= KR_NR_MAX;
}

/* --- finding the ring ----------------------------------------------------- */

/*
 * CPU 0's first_buffer must be a kernel address; a
 * later CPU whose first_buffer is not ends the ring (its CPUs are the
 * consecutive blocks that carry the same geometry and kernel addresses),
 * so a refused candidate costs O(1) loads.
 */
static int kr_first_ok(struct hvtrace_kring *k, uint64_t off, uint64_t at)
{
	uint64_t first = kr_rd64(k, at + KR_F_FIRST);

	if (first >= KR_KERNEL_VA_MIN)
		return 0;
	return hvt_err(-EINVAL, "%s: ring meta at 0x%llx: CPU 0's "
				"first_buffer 0x%llx is not a kernel address "
				"(below 0x%llx): not the guest kernel's ring "
				"(one planted in guest user memory?)",
		       k->path, (unsigned long long)off,
		       (unsigned long long)first, KR_KERNEL_VA_MIN);
}

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

	k->info.nr_cpus = nr_cpus;
	if (k->probe)
		return 0;	/* the scan: validated, nothing to keep */
	k->cpus = calloc(nr_cpus, sizeof(*k->cpus));
	if (!k->cpus)
		return hvt_err(-ENOMEM, "out of memory");
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
	uint64_t hdr, block, m, text, data;
	uint32_t n = 0;

	if (!kr_geometry_ok(subbuf, nr))
		return hvt_err(-EINVAL, "%s: 6.12 ring meta at 0x%llx has "
					"sub-buffers of %u bytes x %u: out of "
					"range",
			       k->path, (unsigned long long)off, subbuf, nr);
	text = kr_rd64(k, off + 8);
	data = kr_rd64(k, off + 16);
	if (text < KR_KERNEL_VA_MIN || data < KR_KERNEL_VA_MIN)
		return hvt_err(-EINVAL, "%s: 6.12 ring meta at 0x%llx: its "
					"kernel text 0x%llx or data 0x%llx is "
					"not a kernel address (below 0x%llx): "
					"not the guest kernel's ring (one "
					"planted in guest user memory?)",
			       k->path, (unsigned long long)off,
			       (unsigned long long)text,
			       (unsigned long long)data, KR_KERNEL_VA_MIN);
	if (kr_first_ok(k, off, off + KR_612_FIELDS))
		return -EINVAL;
	hdr = kr_align(KR_612_META_SIZE + 4ull * nr, subbuf);
	block = hdr + (uint64_t)subbuf * nr;
	for (m = off; n < KR_CPUS_MAX && m + block <= k->size; m += block, n++)
		if (kr_rd32(k, m) != KR_MAGIC ||
		    kr_rd32(k, m + 4) != KR_612_META_SIZE ||
		    kr_rd32(k, m + KR_612_FIELDS + KR_F_SUBBUF) != subbuf ||
		    kr_rd32(k, m + KR_612_FIELDS + KR_F_NR) != nr ||
		    kr_rd64(k, m + KR_612_FIELDS + KR_F_FIRST) <
			    KR_KERNEL_VA_MIN)
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
	/* total < KR_615_CPU_MIN first: total - KR_615_CPU_MIN would wrap
	 * and let any buffers offset through. */
	if (total > k->size - off || total < KR_615_CPU_MIN ||
	    bo < KR_615_GLOBAL_SIZE || bo % 8 || bo > total - KR_615_CPU_MIN)
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
	if (kr_geometry_ok(subbuf, nr) && kr_first_ok(k, off, m0))
		return -EINVAL;
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
		    kr_rd32(k, m + KR_F_NR) != nr ||
		    kr_rd64(k, m + KR_F_FIRST) < KR_KERNEL_VA_MIN)
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
 * What a scan found: the first refusal (to report when no ring
 * validates) and the rings that validated.  A guest user can write a
 * valid-looking meta into its own memory, so the scan
 * reads the whole source and takes a ring only when it is the one there;
 * it stops at the second (KR_CANDS_MAX): a validation costs up to
 * KR_CPUS_MAX loads, a refused candidate O(1).
 */
struct kr_scan {
	int first_ret;
	char first_err[512];
	uint32_t n;			/* rings that validated */
	struct {
		uint64_t off, block;	/* block: 6.12 CPU stride, or 0 */
		uint32_t cpus;
	} c[KR_CANDS_MAX];
};

/* Whether @off is a later CPU's meta of a ring the scan already took. */
static bool kr_seen(const struct kr_scan *sc, uint64_t off)
{
	uint32_t i;

	for (i = 0; i < sc->n && i < KR_CANDS_MAX; i++)
		if (sc->c[i].block && off > sc->c[i].off &&
		    (off - sc->c[i].off) % sc->c[i].block == 0 &&
		    (off - sc->c[i].off) / sc->c[i].block < sc->c[i].cpus)
			return true;
	return false;
}

/*
 * A candidate meta at @off, validated without allocating (k->probe):
 * a ring is noted in @sc, the first refusal kept to report.  Every 4 KiB
 * boundary is looked at, those inside a ring found before too (a fake
 * meta may claim a range that covers the real ring), except the metas of
 * that ring's later CPUs.
 */
static void kr_consider(struct hvtrace_kring *k, uint64_t off,
			struct kr_scan *sc)
{
	int ret;

	if (kr_seen(sc, off))
		return;
	memset(&k->info, 0, offsetof(struct hvtrace_kring_info, nr_magic));
	ret = kr_try(k, off);
	if (ret == 0) {
		if (sc->n < KR_CANDS_MAX) {
			sc->c[sc->n].off = off;
			sc->c[sc->n].cpus = k->info.nr_cpus;
			sc->c[sc->n].block =
				k->info.layout == HVTRACE_KRING_LAYOUT_6_12 ?
					k->info.size / k->info.nr_cpus :
					0;
		}
		sc->n++;
		return;
	}
	if (ret != -ENODATA && !sc->first_ret) {
		sc->first_ret = ret;
		snprintf(sc->first_err, sizeof(sc->first_err), "%s",
			 hvtrace_last_error());
	}
}

/*
 * Scan a mapped source, skipping its holes (SEEK_DATA/SEEK_HOLE): a
 * sparse tmpfs file or memfd would otherwise get a page allocated for
 * every hole the scan touches.  Where the file system does not report
 * holes, lseek() calls all of it data.
 */
static void kr_scan_map(struct hvtrace_kring *k, struct kr_scan *sc)
{
	uint64_t off = 0, end = 0;

	while (off <= k->size - KR_SCAN_STEP && sc->n < KR_CANDS_MAX) {
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
		if (kr_rd32(k, off) == KR_MAGIC)
			kr_consider(k, off, sc);
		off += KR_SCAN_STEP;
	}
}

#define KR_CHUNK	(2u << 20)	/* pread size of the memory scan */

/*
 * Scan a VMM mapping through /proc/PID/mem in 2 MiB reads, looking at
 * the first 4 bytes of each 4 KiB.  /proc/PID/pagemap tells which pages
 * are populated (present or swapped): a chunk without any is not read
 * (untouched guest RAM is most of a large idle guest).  Without pagemap,
 * every chunk is read.
 */
static int kr_scan_mem(struct hvtrace_kring *k, struct kr_scan *sc)
{
	uint64_t pm[KR_CHUNK / KR_SCAN_STEP];
	uint8_t *buf = malloc(KR_CHUNK);
	uint64_t off, n, i;

	if (!buf)
		return hvt_err(-ENOMEM, "out of memory");
	for (off = 0; off < k->size && sc->n < KR_CANDS_MAX; off += KR_CHUNK) {
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
		for (i = 0; i + KR_SCAN_STEP <= n && sc->n < KR_CANDS_MAX;
		     i += KR_SCAN_STEP) {
			uint32_t w;

			memcpy(&w, buf + i, sizeof(w));
			if (w == KR_MAGIC)
				kr_consider(k, off + i, sc);
		}
	}
	free(buf);
	return 0;
}

/* More than one ring validated: name them, say how to pick. */
static int kr_ambiguous(struct hvtrace_kring *k, const struct kr_scan *sc)
{
	char list[256] = "";
	size_t len = 0;
	uint32_t i;

	for (i = 0; i < sc->n && i < KR_CANDS_MAX && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len,
					"%s0x%llx", i ? ", " : "",
					(unsigned long long)sc->c[i].off);
	return hvt_err(-ENOTUNIQ,
		       "%s: %u guest kernel ring metas validate in this %s, "
		       "at offsets %s (the scan stops at the second): a guest "
		       "user can write a fake one into its own memory, so "
		       "none is taken; give the "
		       "offset of the guest kernel's ring (its physical "
		       "address; the guest's log says \"mapped boot "
		       "instance ... at physical memory\") with "
		       "HVTRACE_KRING_OFFSET=0xOFFSET, or pin it with "
		       "memmap= and trace_instance=NAME@ADDR:SIZE",
		       k->path, sc->n, k->unit, list);
}

/* HVTRACE_KRING_OFFSET: where the ring is, when the caller gave 0. */
static int kr_env_offset(uint64_t *offset)
{
	const char *e = getenv("HVTRACE_KRING_OFFSET");
	char *end;

	if (!e || !*e)
		return 0;
	errno = 0;
	*offset = strtoull(e, &end, 0);
	if (errno || *end || !*offset)
		return hvt_err(-EINVAL, "HVTRACE_KRING_OFFSET='%s': not an "
					"offset (e.g. 0x1e800000)",
			       e);
	return 0;
}

int kr_find(struct hvtrace_kring *k, uint64_t offset)
{
	struct kr_scan sc;
	int ret;

	if (!offset) {
		ret = kr_env_offset(&offset);
		if (ret)
			return ret;
	}
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
	memset(&sc, 0, sizeof(sc));
	k->probe = true;
	ret = k->map ? (kr_scan_map(k, &sc), 0) : kr_scan_mem(k, &sc);
	k->probe = false;
	if (ret)
		return ret;
	if (sc.n > 1)
		return kr_ambiguous(k, &sc);
	if (sc.n == 1) {
		uint32_t nr_magic = k->info.nr_magic;

		memset(&k->info, 0, sizeof(k->info));
		ret = kr_try(k, sc.c[0].off);	/* now keep it */
		k->info.nr_magic = nr_magic;
		return ret;
	}
	if (sc.first_ret)
		return hvt_err(sc.first_ret, "%s", sc.first_err);
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

