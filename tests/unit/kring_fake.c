// SPDX-License-Identifier: MIT
/*
 * issue 22 point 8: a fake guest kernel ring planted by a guest user.
 *
 * An unprivileged process in the guest can write a valid-looking ring
 * meta (magic, sizes, a ring of 4 sub-buffers with its own events) into
 * its own memory, e.g. at the start of a 2 MiB huge page.  Before the
 * fix the scan took the first meta that validated at any 4 KiB boundary
 * upward: the fake, when it lay below the real ring, and the host read
 * the user's "kernel" events.  Here the golden 6.12 ring
 * (tests/include/kring_img.h) sits at 0x403000 of 8 MiB of guest RAM and
 * a fake at 0x200000 (a huge page):
 *   - a fake with kernel-looking addresses: the scan refuses (-ENOTUNIQ)
 *     with a message naming both offsets, never the fake's events;
 *     so does a fake that claims a range covering the real ring;
 *   - the real ring's offset, given as the offset argument or as
 *     HVTRACE_KRING_OFFSET, opens the real ring;
 *   - a fake whose text/data or first_buffer are user addresses is not
 *     the kernel's: the scan takes the real ring alone, and an explicit
 *     offset at the fake is refused naming the address;
 *   - 4 MiB of metas, one at every 4 KiB: the scan stops at the second
 *     ring that validates (0x0, 0x1000); with user first_buffers each
 *     refusal costs O(1);
 *   - a VMM (a child process) with a ring in each of two 64 MiB mappings
 *     (the fake in another mapping a guest user can write): the pid scan
 *     refuses (-ENOTUNIQ) naming both addresses, where it took the first.
 */
#include <signal.h>
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
#define RAM	(8ull << 20)
#define REAL_AT	0x400000ull		/* where the golden image goes */
#define REAL	(REAL_AT + R612)	/* the real ring's first meta */
#define FAKE	0x200000ull		/* a huge page of a guest process */
#define FAKE_SEQ 666u

/*
 * A fake 6.12 ring of one CPU at FAKE: @nr sub-buffers, @text as its
 * text and data addresses, @first as its first_buffer; head = commit =
 * id 1 holding one marker FAKE_SEQ.
 */
static void plant(uint32_t nr, uint64_t text, uint64_t first)
{
	uint64_t hdr = (56 + 4ull * nr + SB - 1) & ~(uint64_t)(SB - 1);
	uint32_t i, off = 0;

	w32(FAKE, MAGIC);
	w32(FAKE + 4, 56);
	w64(FAKE + 8, text);
	w64(FAKE + 16, text + 0x1000000);
	w64(FAKE + 24, first);
	w64(FAKE + 32, first + SB);
	w64(FAKE + 40, first + SB);
	w32(FAKE + 48, SB);
	w32(FAKE + 52, nr);
	for (i = 0; i < nr; i++)
		w32(FAKE + 56 + 4 * i, i);
	put_marker(FAKE + hdr + SB, &off, 0, FAKE_SEQ);
	page_hdr(FAKE + hdr + SB, 10, off);
}

/* 8 MiB of RAM: the golden ring at REAL, nothing else. */
static void ram(void)
{
	uint8_t *golden;

	kimg_612(FIRST0, FIRST1);
	golden = img;
	img = NULL;
	img_new(RAM);
	memcpy(img + REAL_AT, golden, 0x10000);
	free(golden);
}

/* The first event of CPU 0 is the golden ring's seq 1, never the fake. */
static void expect_real(struct hvtrace_kring *k)
{
	struct hvtrace_kring_info ki;
	struct hvtrace_page_info pi;
	uint8_t page[SB];
	uint32_t seq;

	t_ok(hvtrace_kring_get_info(k, &ki));
	if (ki.offset != REAL)
		t_fail("issue 22 point 8: took the ring at 0x%llx, the real "
		       "one is at 0x%llx",
		       (unsigned long long)ki.offset, (unsigned long long)REAL);
	t_equ(ki.nr_cpus, 2);
	t_eq(hvtrace_kring_read_page(k, 0, page, sizeof(page), &pi), 1);
	memcpy(&seq, page + 16 + 12, 4);
	t_equ(seq, 1);
}

static void expect_refused(const char *what)
{
	struct hvtrace_kring *k = NULL;
	struct hvtrace_page_info pi;
	uint8_t page[SB];
	uint32_t seq = 0;
	int r;

	img_sync();
	r = hvtrace_kring_open(path, 0, &k);
	if (r == 0) {
		if (hvtrace_kring_read_page(k, 0, page, sizeof(page), &pi) == 1)
			memcpy(&seq, page + 16 + 12, 4);
		t_fail("issue 22 point 8: %s: the scan took a ring (first "
		       "event seq %u%s) instead of refusing two candidates",
		       what, seq, seq == FAKE_SEQ ? ": the fake's" : "");
	}
	if (r != -ENOTUNIQ)
		t_fail("%s: open returned %d (%s), expected -ENOTUNIQ", what,
		       r, hvtrace_last_error());
	if (!strstr(hvtrace_last_error(), "0x200000") ||
	    !strstr(hvtrace_last_error(), "0x403000"))
		t_fail("%s: message '%s' does not name both candidates "
		       "0x200000 and 0x403000",
		       what, hvtrace_last_error());
	t_assert(!k);
}

#define VM_LEN	(64ull << 20)	/* the smallest mapping a pid scan reads */

/* A child holding img[0..0x10000) at 1 MiB of each of two mappings. */
static void two_mappings(void)
{
	struct hvtrace_kring *k = NULL;
	uint64_t base[2];
	int up[2], down[2], st, r;
	char msg[512], want[2][32];
	pid_t pid;

	t_assert(pipe(up) == 0 && pipe(down) == 0);
	pid = fork();
	t_assert(pid >= 0);
	if (pid == 0) {
		uint8_t *m;
		char b;
		int i;

		close(up[0]);
		close(down[1]);
		/* PROT_NONE around them: two mappings, not one merged */
		m = mmap(NULL, 2 * VM_LEN + 3 * 4096, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(2);
		for (i = 0; i < 2; i++) {
			uint8_t *at = m + 4096 + i * (VM_LEN + 4096);

			if (mprotect(at, VM_LEN, PROT_READ | PROT_WRITE))
				_exit(2);
			memcpy(at + (1 << 20), img, 0x10000);
			base[i] = (uint64_t)(uintptr_t)at;
		}
		if (write(up[1], base, sizeof(base)) != sizeof(base))
			_exit(2);
		while (read(down[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	t_assert(read(up[0], base, sizeof(base)) == sizeof(base));
	close(up[0]);
	r = hvtrace_kring_open_pid(pid, &k);
	snprintf(msg, sizeof(msg), "%s", r ? hvtrace_last_error() : "");
	if (r == 0)
		hvtrace_kring_close(k);
	close(down[1]);
	t_assert(waitpid(pid, &st, 0) == pid);
	t_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (r == 0)
		t_fail("issue 22 point 8: a ring in each of two mappings of "
		       "a VMM: the pid scan took one");
	t_eq(r, -ENOTUNIQ);
	snprintf(want[0], sizeof(want[0]), "0x%llx",
		 (unsigned long long)(base[0] + (1 << 20) + R612));
	snprintf(want[1], sizeof(want[1]), "0x%llx",
		 (unsigned long long)(base[1] + (1 << 20) + R612));
	if (!strstr(msg, want[0]) || !strstr(msg, want[1]))
		t_fail("message '%s' does not name %s and %s", msg, want[0],
		       want[1]);
}

int main(void)
{
	struct hvtrace_kring *k;

	mfd = memfd_create("kring_fake", MFD_CLOEXEC);
	if (mfd < 0)
		t_skip("memfd_create: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	unsetenv("HVTRACE_KRING_OFFSET");

	/* The real ring alone: found. */
	ram();
	img_sync();
	t_ok(hvtrace_kring_open(path, 0, &k));
	expect_real(k);
	hvtrace_kring_close(k);

	/* A fake with kernel-looking addresses below it: refused, both
	 * named; a fake whose range covers the real ring too. */
	ram();
	plant(4, 0xffffffff81000000ull, VA_BASE + 0x900000);
	expect_refused("a kernel-looking fake");
	ram();
	plant(1024, 0xffffffff81000000ull, VA_BASE + 0x900000);
	t_assert(FAKE + 0x2000 + 1024ull * SB > REAL);
	expect_refused("a fake whose range covers the real ring");

	/* The real ring's place, given: taken. */
	t_ok(hvtrace_kring_open(path, REAL, &k));
	expect_real(k);
	hvtrace_kring_close(k);
	t_assert(setenv("HVTRACE_KRING_OFFSET", "0x403000", 1) == 0);
	t_ok(hvtrace_kring_open(path, 0, &k));
	expect_real(k);
	hvtrace_kring_close(k);
	t_assert(setenv("HVTRACE_KRING_OFFSET", "0x40300x", 1) == 0);
	t_eq(hvtrace_kring_open(path, 0, &k), -EINVAL);
	t_assert(strstr(hvtrace_last_error(), "HVTRACE_KRING_OFFSET"));
	unsetenv("HVTRACE_KRING_OFFSET");

	/* Fakes with user addresses are not the kernel's: the real ring
	 * is taken alone; the fake's offset given is refused by name. */
	ram();
	plant(4, 0x0000555555554000ull, VA_BASE + 0x900000);
	img_sync();
	t_ok(hvtrace_kring_open(path, 0, &k));
	expect_real(k);
	hvtrace_kring_close(k);
	t_eq(hvtrace_kring_open(path, FAKE, &k), -EINVAL);
	t_assert(strstr(hvtrace_last_error(), "0x555555554000"));
	ram();
	plant(4, 0xffffffff81000000ull, 0x00007f0000000000ull);
	img_sync();
	t_ok(hvtrace_kring_open(path, 0, &k));
	expect_real(k);
	hvtrace_kring_close(k);
	t_eq(hvtrace_kring_open(path, FAKE, &k), -EINVAL);
	t_assert(strstr(hvtrace_last_error(), "0x7f0000000000"));

	/* Metas at every 4 KiB of half the RAM: the scan stops at the second
	 * ring that validates; with user addresses, none is a candidate
	 * and each refusal costs O(1) (alarm: no quadratic scan). */
	{
		uint64_t at;

		alarm(20);
		img_new(RAM);
		for (at = 0; at < RAM / 2; at += SB) {
			w32(at, MAGIC);
			w32(at + 4, 56);
			w64(at + 8, 0xffffffff81000000ull);
			w64(at + 16, 0xffffffff82000000ull);
			w64(at + 24, VA_BASE);
			w32(at + 48, SB);
			w32(at + 52, 3);
		}
		img_sync();
		t_eq(hvtrace_kring_open(path, 0, &k), -ENOTUNIQ);
		t_assert(strstr(hvtrace_last_error(), "0x0, 0x1000"));
		for (at = 0; at < RAM / 2; at += SB)
			w64(at + 24, 0x7f0000000000ull);
		img_sync();
		t_eq(hvtrace_kring_open(path, 0, &k), -EINVAL);
		t_assert(strstr(hvtrace_last_error(), "not a kernel address"));
		alarm(0);
	}

	/* Two mappings of a VMM, a ring in each. */
	kimg_612(FIRST0, FIRST1);
	two_mappings();

	free(img);
	printf("PASS kring_fake\n");
	return 0;
}
