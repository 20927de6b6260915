// SPDX-License-Identifier: MIT
/*
 * A guest kernel's ring found in the memory of another process
 * (hvtrace_kring_open_pid()), as in a VMM: a child process holds the
 * golden 6.12 image (tests/include/kring_img.h) inside 64 MiB of memory,
 * either private anonymous (read through /proc/PID/mem) or a shared memfd
 * (mapped PROT_READ through /proc/PID/fd/N).  The events read must equal
 * those read from the same image as a file, page for page.  Hostile
 * cases: a ring that crosses the end of its mapping (CPU 0's block, or
 * only CPU 1's, or a 6.15+ ring's total size) is refused with a message
 * naming the mapping; metas of
 * garbage at every 4 KiB boundary of the populated part cost a refusal,
 * never a crash or a hang (alarm); a process that exits under the reader
 * gives -ESRCH.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hvtrace.h>

#include "hvt_test.h"
#include "kring_img.h"

#define FIRST0	(VA_BASE + 0x100000)
#define FIRST1	(VA_BASE + 0x200000)
#define VM_LEN	(64ull << 20)	/* the smallest mapping scanned */

struct child {
	pid_t pid;
	int go;			/* closing it ends the child */
	uint64_t base;		/* the child's mapping */
};

/*
 * A child with VM_LEN bytes of memory (a shared memfd when @shared, else
 * private anonymous) holding img[0..@len) at @at.  A PROT_NONE page after
 * the mapping keeps the kernel from merging it with a neighbour, so its
 * end is where the test says.
 */
static struct child spawn(bool shared, uint64_t at, size_t len)
{
	struct child c;
	int up[2], down[2];

	t_assert(pipe(up) == 0 && pipe(down) == 0);
	c.pid = fork();
	t_assert(c.pid >= 0);
	if (c.pid == 0) {
		uint8_t *m;
		char b;

		close(up[0]);
		close(down[1]);
		m = mmap(NULL, VM_LEN + 4096, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(2);
		if (shared) {
			int fd = memfd_create("kring_vm", 0);

			if (fd < 0 || ftruncate(fd, (off_t)VM_LEN) ||
			    mmap(m, VM_LEN, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
				_exit(2);
		} else if (mprotect(m, VM_LEN, PROT_READ | PROT_WRITE)) {
			_exit(2);
		}
		memcpy(m + at, img, len);
		c.base = (uint64_t)(uintptr_t)m;
		if (write(up[1], &c.base, sizeof(c.base)) != sizeof(c.base))
			_exit(2);
		while (read(down[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	t_assert(read(up[0], &c.base, sizeof(c.base)) == sizeof(c.base));
	close(up[0]);
	c.go = down[1];
	return c;
}

static void reap(struct child *c)
{
	int st;

	close(c->go);
	t_assert(waitpid(c->pid, &st, 0) == c->pid);
	t_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Every page of @cpu of @a and @b, compared; returns the events. */
static uint64_t same_pages(struct hvtrace_kring *a, struct hvtrace_kring *b,
			   int cpu)
{
	uint8_t pa[SB], pb[SB];
	struct hvtrace_page_info ia, ib;
	uint64_t n = 0;
	unsigned int i;
	int ra, rb;

	for (i = 0; i < 64; i++) {
		memset(pa, 0, SB);
		memset(pb, 0, SB);
		ra = hvtrace_kring_read_page(a, cpu, pa, sizeof(pa), &ia);
		rb = hvtrace_kring_read_page(b, cpu, pb, sizeof(pb), &ib);
		t_eq(ra, rb);
		t_assert(ra >= 0);
		if (ra == 0)
			return n;
		t_equ(ia.entries, ib.entries);
		t_equ(ia.seq, ib.seq);
		t_memeq(pa, pb, SB);
		n += ia.entries;
	}
	t_fail("CPU %d never ran dry", cpu);
	return 0;
}

/* The golden ring in a child's memory reads as it reads from a file. */
static void good_case(bool shared)
{
	struct hvtrace_kring *f, *p;
	struct hvtrace_kring_info fi, pi;
	const uint64_t at = 5ull << 20;
	struct child c = spawn(shared, at, img_size);

	img_sync();
	t_ok(hvtrace_kring_open(path, 0, &f));
	alarm(20);
	if (hvtrace_kring_open_pid(c.pid, &p))
		t_fail("%s: open_pid: %s", shared ? "memfd" : "anonymous",
		       hvtrace_last_error());
	alarm(0);
	t_ok(hvtrace_kring_get_info(f, &fi));
	t_ok(hvtrace_kring_get_info(p, &pi));
	t_equ(pi.nr_cpus, 2);
	t_equ(pi.offset, at + R612);
	t_equ(pi.addr, c.base + at + R612);
	t_equ(pi.size, fi.size);
	t_equ(same_pages(f, p, 0), 7);	/* seq 1..7 */
	t_equ(same_pages(f, p, 1), 1);	/* seq 100 */
	hvtrace_kring_close(f);
	if (!shared) {
		/* The VMM is gone: its memory with it. */
		uint8_t page[SB];
		int st;

		kill(c.pid, SIGKILL);
		t_assert(waitpid(c.pid, &st, 0) == c.pid);
		close(c.go);
		t_eq(hvtrace_kring_read_page(p, 0, page, sizeof(page), NULL),
		     -ESRCH);
		hvtrace_kring_close(p);
		return;
	}
	hvtrace_kring_close(p);
	reap(&c);
}

static void refused(const char *what, bool shared, uint64_t at, size_t len,
		    int err, const char *needle)
{
	struct hvtrace_kring *k = NULL;
	struct child c = spawn(shared, at, len);
	int r;

	alarm(20);
	r = hvtrace_kring_open_pid(c.pid, &k);
	alarm(0);
	if (r != err)
		t_fail("%s: open_pid returned %d (%s), expected %d", what, r,
		       r ? hvtrace_last_error() : "ok", err);
	if (needle && !strstr(hvtrace_last_error(), needle))
		t_fail("%s: message '%s' does not name '%s'", what,
		       hvtrace_last_error(), needle);
	t_assert(!k);
	reap(&c);
}

int main(void)
{
	unsigned int i;

	mfd = memfd_create("kring_vmpid", MFD_CLOEXEC);
	if (mfd < 0)
		t_skip("memfd_create: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	kimg_612(FIRST0, FIRST1);

	good_case(false);
	good_case(true);

	/* CPU 1's block (image 0x8000..0xd000) crosses the mapping's end:
	 * refused, not read as a one-CPU ring. */
	refused("CPU 1 crosses", false, VM_LEN - 0xc000, 0xc000, -EINVAL,
		"crosses the end of the mapping");
	refused("CPU 1 crosses (memfd)", true, VM_LEN - 0xc000, 0xc000,
		-EINVAL, "crosses the end of the mapping");
	/* CPU 0's block (0x3000..0x8000) does not fit either. */
	refused("CPU 0 crosses", false, VM_LEN - 0x6000, 0x6000, -EINVAL,
		"runs past the end of the mapping");

	/* A 6.15+ global meta whose 0xa000-byte ring would run 0x4000 past
	 * the mapping's end. */
	img_new(SB);
	w32(0, MAGIC);
	w32(4, 32u | 24u << 16);	/* struct_sizes: 32-byte CPU metas */
	w64(8, 0xa000);			/* total_size */
	w64(16, 88);			/* buffers_offset */
	refused("6.15 crosses", false, VM_LEN - 0x6000, img_size, -EINVAL,
		"several mappings");

	/* Garbage: a magic at every 4 KiB of 1 MiB, random words after it. */
	img_new(1u << 20);
	srand(7);
	for (i = 0; i < img_size / 4; i++)
		w32(4ull * i, (uint32_t)rand());
	for (i = 0; i < img_size / SB; i++) {
		w32((uint64_t)i * SB, MAGIC);
		if (i % 3 == 0)
			w32((uint64_t)i * SB + 4, 56);	/* a 6.12 size word */
		if (i % 3 == 1)
			w32((uint64_t)i * SB + 4, 24u << 16 | 40);
	}
	refused("garbage metas", false, 3ull << 20, img_size, -EINVAL, NULL);

	/* Nothing at all: -ENODATA naming the process. */
	img_new(SB);
	refused("no ring", false, 0, img_size, -ENODATA, "process");

	t_eq(hvtrace_kring_open_pid(-1, NULL), -EINVAL);
	printf("PASS kring_vmpid\n");
	return 0;
}
