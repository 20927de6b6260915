// SPDX-License-Identifier: MIT
/*
 * issue 22 point 7: the guest kernel ring walk costs one read call
 * O(pages it looks at + nr), with a hard cap per call.
 *
 * A guest kernel (hostile, or any guest: the meta is guest memory) lays
 * out a ring of nr = 2^20 sub-buffers of 4 KiB (a 4 GiB block, the most
 * the reader takes; the sparse memfd holds it) with every page between
 * the head (id 1) and the commit (id nr - 1) empty.  Before the fix each
 * pass of a read call took a new snapshot (buffers[] copied and checked,
 * O(nr)) and a call could make 2 * nr + 4 passes: hours for one call, on
 * hvtraced's main thread.  Now one call takes at most KR_SNAPS_MAX
 * snapshots and looks at most at KR_WALK_MAX pages (the counters of
 * kring-local.h say what the last call did), and the walk goes on from
 * where it stopped: with nr = 4096 the one event behind 4094 empty pages
 * comes after a few calls, each inside the caps.  An alarm fails the
 * test when one call does not return in 60 s (the original tree).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hvtrace.h>

#include "hvt_test.h"
#include "kring_img.h"
#include "kring-local.h"

#define R	0x3000ull		/* CPU 0's meta */
#define FIRST	(VA_BASE + 0x100000)

static void too_slow(int sig)
{
	static const char m[] = "FAIL issue 22 point 7: one read call of the "
				"guest kernel ring did not return in 60 s\n";

	(void)sig;
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(T_EXIT_FAIL);
	_exit(T_EXIT_FAIL);
}

static void pw(uint64_t off, const void *p, size_t len)
{
	t_assert(pwrite(mfd, p, len, (off_t)off) == (ssize_t)len);
}

static void pw32(uint64_t off, uint32_t v) { pw(off, &v, 4); }
static void pw64(uint64_t off, uint64_t v) { pw(off, &v, 8); }

/*
 * One CPU, @nr sub-buffers, buffers[] the identity, head id 1, commit
 * id nr - 1 holding one marker (seq 77, ts 5000), every page between
 * them empty; written sparse into the memfd.  Returns the file size.
 */
static uint64_t build(uint32_t nr)
{
	uint64_t hdr = (56 + 4ull * nr + SB - 1) & ~(uint64_t)(SB - 1);
	uint64_t size = R + hdr + (uint64_t)nr * SB, page;
	uint32_t *bufs = malloc(4ull * nr), i;
	uint8_t ev[32] = { 0 };

	t_assert(bufs);
	t_assert(ftruncate(mfd, 0) == 0);
	t_assert(ftruncate(mfd, (off_t)size) == 0);
	pw32(R + 0, MAGIC);
	pw32(R + 4, 56);
	pw64(R + 8, 0xffffffff81000000ull);		/* text_addr */
	pw64(R + 16, 0xffffffff82000000ull);		/* data_addr */
	pw64(R + 24, FIRST);				/* first_buffer */
	pw64(R + 32, FIRST + SB);			/* head: id 1 */
	pw64(R + 40, FIRST + (uint64_t)(nr - 1) * SB);	/* commit */
	pw32(R + 48, SB);
	pw32(R + 52, nr);
	for (i = 0; i < nr; i++)
		bufs[i] = i;
	pw(R + 56, bufs, 4ull * nr);
	free(bufs);
	/* the commit page (slot nr - 1): ts 5000, one 16-byte marker */
	page = R + hdr + (uint64_t)(nr - 1) * SB;
	memcpy(ev, &(uint64_t){ 5000 }, 8);
	memcpy(ev + 8, &(uint64_t){ 16 }, 8);
	memcpy(ev + 16, &(uint32_t){ 3 }, 4);		/* type_len 3 */
	memcpy(ev + 20, &(uint32_t){ 7 }, 4);
	memcpy(ev + 24, &(uint32_t){ 42 }, 4);
	memcpy(ev + 28, &(uint32_t){ 77 }, 4);		/* seq */
	pw(page, ev, sizeof(ev));
	return size;
}

/* One read call, inside the caps; returns what it returned. */
static int one_call(struct hvtrace_kring *k, uint8_t *page,
		    struct hvtrace_page_info *info)
{
	int r;

	alarm(60);
	r = hvtrace_kring_read_page(k, 0, page, SB, info);
	alarm(0);
	if (r < 0)
		t_fail("read_page: %d (%s)", r, hvtrace_last_error());
	if (k->cpus[0].call_snaps > KR_SNAPS_MAX ||
	    k->cpus[0].call_pages > KR_WALK_MAX)
		t_fail("issue 22 point 7: one read call took %u snapshots "
		       "(at most %u) and looked at %u pages (at most %u)",
		       k->cpus[0].call_snaps, KR_SNAPS_MAX,
		       k->cpus[0].call_pages, KR_WALK_MAX);
	return r;
}

int main(void)
{
	struct hvtrace_page_info info;
	struct hvtrace_kring_info ki;
	struct hvtrace_kring *k;
	uint8_t page[SB];
	unsigned int calls;
	int r;

	if (sizeof(void *) < 8)
		t_skip("a 4 GiB ring image needs a 64-bit address space");
	mfd = memfd_create("kring_walk", MFD_CLOEXEC);
	if (mfd < 0)
		t_skip("memfd_create: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	signal(SIGALRM, too_slow);

	/* nr = 2^20: each call inside the caps, the cursor moving on.  Only
	 * a few calls: every page looked at gets a page of the memfd. */
	build(1u << 20);
	t_ok(hvtrace_kring_open(path, 0, &k));
	t_ok(hvtrace_kring_get_info(k, &ki));
	t_equ(ki.nr_subbufs, 1u << 20);
	for (calls = 0; calls < 3; calls++) {
		t_eq(one_call(k, page, &info), 0);
		/* The first call's snapshot serves the later ones: the walk
		 * has not reached its commit page. */
		t_equ(k->cpus[0].call_snaps, calls ? 0u : 1u);
		t_equ(k->cpus[0].call_pages, KR_WALK_MAX);
		t_equ(k->cpus[0].id, 1 + (calls + 1) * KR_WALK_MAX);
	}
	hvtrace_kring_close(k);

	/* nr = 4096: the event behind 4094 empty pages comes, each call
	 * inside the caps, after about nr / KR_WALK_MAX calls. */
	build(4096);
	t_ok(hvtrace_kring_open(path, 0, &k));
	for (calls = 0; calls < 4096 / KR_WALK_MAX + 2; calls++) {
		r = one_call(k, page, &info);
		if (r == 1)
			break;
	}
	t_eq(r, 1);
	t_equ(info.entries, 1);
	t_equ(info.first_ts, 5000);
	t_assert(calls >= 4094 / KR_WALK_MAX);
	t_eq(one_call(k, page, &info), 0);
	hvtrace_kring_close(k);
	free(img);
	printf("PASS kring_walk\n");
	return 0;
}
