// SPDX-License-Identifier: MIT
/*
 * libhvtrace: a guest kernel's ftrace ring found in a running VMM's memory
 * (hvtrace_kring_open_pid()).
 *
 * One job: find the guest RAM among a VMM's mappings (/proc/PID/maps),
 * map a shared memfd or file of it read-only through /proc/PID/fd/N, or
 * fall back to pread() of /proc/PID/mem for anonymous memory, and hand
 * each candidate to kring.c's scan.  Mappings smaller than KR_VM_MIN or
 * larger than KR_VM_MAX are not guest RAM.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kring-local.h"

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
 * The ring in the mapping @k describes (base, size, pid), read through the
 * descriptor it holds: k->fd (a shared file of the mapping, mapped
 * PROT_READ at @foff) when set, else k->mem (/proc/PID/mem, k->pagemap
 * optional).  Offsets are relative to the mapping's start and bounded by
 * its length: the ring must lie inside one mapping.  Frees @k on error.
 */
static int kr_pid_scan(struct hvtrace_kring *k, unsigned long long foff,
		       int fdnum, const char *name, struct hvtrace_kring **out)
{
	int ret;

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
			 "process %d: fd %d (%s) mapped at 0x%llx", k->pid,
			 fdnum, name, (unsigned long long)k->base);
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
		 "process %d: memory 0x%llx-0x%llx (%s)", k->pid,
		 (unsigned long long)k->base,
		 (unsigned long long)(k->base + k->size),
		 *name ? name : "anonymous");
	if (k->mem < 0) {
		ret = hvt_err(-EBADF, "%s: no descriptor of the memory",
			      k->path);
		goto out;
	}
	ret = kr_find(k, 0);
out:
	if (ret) {
		hvtrace_kring_close(k);
		return ret;
	}
	k->ring = k->info.nr_subbufs - 1;
	k->data_size = k->info.subbuf_size - HVT_PAGE_HDR_SIZE;
	k->info.addr = k->base + k->info.offset;
	*out = k;
	return 0;
}

static struct hvtrace_kring *kr_pid_new(int pid, uint64_t start, uint64_t end)
{
	struct hvtrace_kring *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->fd = -1;
	k->mem = -1;
	k->pagemap = -1;
	k->pid = pid;
	k->unit = "mapping";
	k->base = start;
	k->size = end - start;
	return k;
}

/*
 * Look for the ring in one mapping of @pid.  A shared file mapping (a
 * memory-backend-file or memfd) whose descriptor the VMM holds is mapped
 * PROT_READ from that descriptor; any other mapping is read through
 * /proc/PID/mem.
 */
static int kr_pid_try(int pid, uint64_t start, uint64_t end, bool shared,
		      unsigned long long foff, unsigned int maj,
		      unsigned int min, unsigned long long ino,
		      const char *name, struct hvtrace_kring **out)
{
	struct hvtrace_kring *k = kr_pid_new(pid, start, end);
	char p[64];
	int fdnum = -1;

	if (!k)
		return hvt_err(-ENOMEM, "out of memory");
	if (shared && ino)
		k->fd = kr_pid_fd(pid, maj, min, ino, &fdnum);
	if (k->fd < 0) {
		snprintf(p, sizeof(p), "/proc/%d/mem", pid);
		k->mem = open(p, O_RDONLY | O_CLOEXEC);
		if (k->mem < 0) {
			int err = errno;

			hvtrace_kring_close(k);
			return kr_pid_err(pid, "the memory", err);
		}
		snprintf(p, sizeof(p), "/proc/%d/pagemap", pid);
		k->pagemap = open(p, O_RDONLY | O_CLOEXEC);
	}
	return kr_pid_scan(k, foff, fdnum, name, out);
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
	struct hvtrace_kring *found = NULL;
	struct kr_vma *v = NULL;

	if (pid <= 0 || !out)
		return hvt_err(-EINVAL, "hvtrace_kring_open_pid: bad pid %d or "
					"NULL argument",
			       pid);
	ret = kr_pid_vmas(pid, &v, &nr, &big);
	if (ret)
		return ret;
	ret = -ENODATA;
	/* Every mapping: a ring in two of them is refused as two in one
	 * (a guest user can plant a fake). */
	for (i = 0; i < nr; i++) {
		struct hvtrace_kring *k = NULL;

		ret = kr_pid_try(pid, v[i].start, v[i].end, v[i].shared,
				 v[i].foff, v[i].maj, v[i].min, v[i].ino,
				 v[i].name, &k);
		if (ret == 0 && found) {
			ret = hvt_err(-ENOTUNIQ,
				      "process %d: a guest kernel ring in two "
				      "mappings, at 0x%llx and 0x%llx: a guest "
				      "user can write a fake one into its own "
				      "memory, so none is taken; give the "
				      "ring's offset in its mapping with "
				      "HVTRACE_KRING_OFFSET=0xOFFSET",
				      pid, (unsigned long long)found->info.addr,
				      (unsigned long long)k->info.addr);
			hvtrace_kring_close(k);
			hvtrace_kring_close(found);
			found = NULL;
			break;
		}
		if (ret == 0) {
			found = k;
			continue;
		}
		if (ret == -ENOMEM || ret == -EACCES || ret == -ESRCH ||
		    ret == -ENOTUNIQ)
			break;
		if (ret != -ENODATA && !first_ret) {
			first_ret = ret;
			snprintf(first_err, sizeof(first_err), "%s",
				 hvtrace_last_error());
		}
	}
	free(v);
	if (i < nr) {
		/* stopped: out of memory, no access, gone, or two rings */
		hvtrace_kring_close(found);
		return ret;
	}
	if (found) {
		*out = found;
		return 0;
	}
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

HVTRACE_API int hvtrace_kring_pid_source(const struct hvtrace_kring *k,
					 struct hvtrace_kring_source *src)
{
	if (!k || !src || k->pid <= 0 || (!k->map && k->mem < 0))
		return hvt_err(-EINVAL, "hvtrace_kring_pid_source: not a ring "
					"found in a process's memory");
	memset(src, 0, sizeof(*src));
	src->mapped = k->map != NULL;
	src->fd = k->map ? k->fd : k->mem;
	src->pagemap = k->map ? -1 : k->pagemap;
	src->base = k->base;
	src->size = k->size;
	src->foff = k->map ? k->foff : 0;
	return 0;
}

HVTRACE_API int hvtrace_kring_open_source(int pid,
					  const struct hvtrace_kring_source *src,
					  struct hvtrace_kring **out)
{
	struct hvtrace_kring *k;
	int ret;

	if (pid <= 0 || !src || !out || src->fd < 0)
		return hvt_err(-EINVAL, "hvtrace_kring_open_source: bad pid %d "
					"or no descriptor",
			       pid);
	if (src->size < KR_VM_MIN || src->size > KR_VM_MAX ||
	    src->base + src->size < src->base || src->base % 4096 ||
	    src->size % 4096 || src->foff % 4096 ||
	    src->foff + src->size < src->foff ||
	    src->foff > (uint64_t)INT64_MAX - src->size ||
	    (!src->mapped && src->foff))
		return hvt_err(-EINVAL, "process %d: a mapping of 0x%llx bytes "
					"at 0x%llx (file offset 0x%llx) is not "
					"guest RAM: 64 MiB to 1 TiB, page "
					"aligned",
			       pid, (unsigned long long)src->size,
			       (unsigned long long)src->base,
			       (unsigned long long)src->foff);
	k = kr_pid_new(pid, src->base, src->base + src->size);
	if (!k)
		return hvt_err(-ENOMEM, "out of memory");
	/* The handle owns copies: the caller keeps its own. */
	if (src->mapped) {
		k->fd = fcntl(src->fd, F_DUPFD_CLOEXEC, 3);
	} else {
		k->mem = fcntl(src->fd, F_DUPFD_CLOEXEC, 3);
		if (src->pagemap >= 0)
			k->pagemap = fcntl(src->pagemap, F_DUPFD_CLOEXEC, 3);
	}
	if (k->fd < 0 && k->mem < 0) {
		ret = hvt_err(-errno, "cannot copy a descriptor: %s",
			      strerror(errno));
		hvtrace_kring_close(k);
		return ret;
	}
	ret = kr_pid_scan(k, src->foff, src->fd, "passed", out);
	if (!ret && src->mapped && !(*out)->map) {
		hvtrace_kring_close(*out);
		*out = NULL;
		return hvt_err(-EINVAL, "process %d: the passed file cannot be "
					"mapped",
			       pid);
	}
	return ret;
}
