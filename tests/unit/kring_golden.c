// SPDX-License-Identifier: MIT
/*
 * Golden guest kernel rings: guest RAM images built by hand in a memfd
 * from the kernel's documented persistent ring layouts, every field
 * spelled out below, read with hvtrace_kring_*.  The expected events
 * (sequence numbers, timestamps, lost marks) are computed by hand from
 * the bytes written here, never taken from the code under test.
 *
 * 6.12 (kernel/trace/ring_buffer.c, v6.12): per CPU a struct
 * ring_buffer_meta of 56 bytes
 *   +0  int   magic 0xBADFEED      +4  int   struct_size 56
 *   +8  ulong text_addr            +16 ulong data_addr
 *   +24 ulong first_buffer         +32 ulong head_buffer
 *   +40 ulong commit_buffer        +48 u32   subbuf_size
 *   +52 u32   nr_subbufs           +56 int   buffers[nr_subbufs]
 * then the sub-buffers from the next subbuf_size boundary; the next CPU's
 * meta follows the last sub-buffer.
 *
 * 6.15+: a global struct ring_buffer_meta of 24 bytes
 *   +0 int magic  +4 int struct_sizes (cpu meta size | 24 << 16)
 *   +8 ulong total_size  +16 ulong buffers_offset
 * then a scratch area, CPU 0's struct ring_buffer_cpu_meta at
 * buffers_offset
 *   +0 first_buffer +8 head_buffer +16 commit_buffer +24 u32 subbuf_size
 *   +28 u32 nr_subbufs [+32 u32 nr_invalid +36 u32 entry_bytes, newer]
 *   +size: int buffers[nr_subbufs]
 * its sub-buffers from the next subbuf_size boundary (relative to the
 * range start), and each later CPU's meta right after the previous CPU's
 * sub-buffers.
 *
 * Every event here is a "marker": type_len 3 (12 bytes of payload):
 * common_type u16 = 7, flags u8 = 0, preempt u8 = 0, pid i32 = 42, then a
 * u32 sequence number.  Its header word is time_delta << 5 | 3.
 *
 * Also checked: the mapping is read-only (a child that writes through it
 * takes a SIGSEGV).
 */
#include <fcntl.h>
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

#define SEGV_EXIT 42

static void segv_exit(int sig)
{
	(void)sig;
	_exit(SEGV_EXIT);
}

/* With a directory argument, the images are also written there as seeds
 * of the kring_parse fuzz target (tests/fuzz/corpus/kring_parse). */
static const char *seed_dir;

static void seed_dump(const char *name)
{
	char p[512];
	FILE *f;

	if (!seed_dir)
		return;
	snprintf(p, sizeof(p), "%s/%s", seed_dir, name);
	f = fopen(p, "w");
	t_assert(f);
	t_assert(fwrite(img, 1, img_size, f) == img_size);
	t_assert(fclose(f) == 0);
}

struct ev {
	uint32_t seq;
	uint64_t ts;
};

/*
 * Read one page of @cpu and compare its events with @want (@n of them);
 * @lost: the lost mark expected on it.
 */
static void expect_page(struct hvtrace_kring *k, int cpu,
			const struct ev *want, unsigned int n, uint64_t lost)
{
	uint8_t page[SB];
	struct hvtrace_page_info info;
	struct hvtrace_subbuf_iter it;
	struct hvtrace_record rec;
	unsigned int i = 0;
	int r;

	r = hvtrace_kring_read_page(k, cpu, page, sizeof(page), &info);
	if (r != 1)
		t_fail("CPU %d: read_page returned %d, expected a page with "
		       "seq %u (%s)",
		       cpu, r, want[0].seq, hvtrace_last_error());
	t_equ(info.lost_events, lost);
	t_equ(info.entries, n);
	t_ok(hvtrace_subbuf_iter_init(&it, page, sizeof(page), cpu));
	while ((r = hvtrace_subbuf_next(&it, &rec)) == 1) {
		uint32_t seq;

		t_assert(i < n);
		t_equ(rec.size, 12);
		memcpy(&seq, (const uint8_t *)rec.data + 8, 4);
		t_equ(seq, want[i].seq);
		t_equ(rec.ts, want[i].ts);
		t_equ(rec.lost_before, i == 0 ? lost : 0);
		i++;
	}
	t_eq(r, 0);
	t_equ(i, n);
}

static void expect_none(struct hvtrace_kring *k, int cpu)
{
	uint8_t page[SB];
	int r = hvtrace_kring_read_page(k, cpu, page, sizeof(page), NULL);

	if (r != 0)
		t_fail("CPU %d: read_page returned %d, expected nothing new",
		       cpu, r);
}

static void test_612(void)
{
	struct hvtrace_kring_info info;
	struct hvtrace_kring_stats st;
	struct hvtrace_kring *k;
	uint64_t first0 = VA_BASE + 0x100000, first1 = VA_BASE + 0x200000;

	kimg_612(first0, first1);
	img_sync();
	seed_dump("612-golden");
	t_ok(hvtrace_kring_open(path, 0, &k));
	t_ok(hvtrace_kring_get_info(k, &info));
	t_equ(info.layout, HVTRACE_KRING_LAYOUT_6_12);
	t_equ(info.nr_cpus, 2);
	t_equ(info.subbuf_size, SB);
	t_equ(info.nr_subbufs, 4);
	t_equ(info.cpu_meta_size, 56);
	t_equ(info.offset, R612);
	t_equ(info.size, 2 * BLK612);

	{
		const struct ev p1[] = { { 1, 1000 }, { 2, 1010 }, { 3, 1020 } };
		const struct ev p2[] = { { 4, 2000 },
					 { 5, 2000 + (1ull << 27) + 5 } };
		const struct ev p3[] = { { 6, 3000 }, { 7, 3001 } };
		const struct ev c1[] = { { 100, 50 } };

		expect_page(k, 0, p1, 3, 0);
		expect_page(k, 0, p2, 2, 0);
		expect_page(k, 0, p3, 2, 0);
		expect_none(k, 0);
		expect_page(k, 1, c1, 1, 0);
		expect_none(k, 1);
	}

	/* The guest commits seq 8 on the commit page: only it comes. */
	page_hdr(slot612(0, 3), 3000, 48);
	img_sync();
	seed_dump("612-commit-grew");
	{
		const struct ev p[] = { { 8, 3003 } };

		expect_page(k, 0, p, 1, 0);
		expect_none(k, 0);
	}

	/* The writer moves on: id 3 is final (48 B), the next page is id 1,
	 * the head, so the head moves to id 2 and id 1 is rewritten:
	 * ts 4000, seq 9.  Nothing was lost for this reader. */
	w64(m612(0) + 32, first0 + 2 * SB);	/* head: id 2 */
	w64(m612(0) + 40, first0 + 1 * SB);	/* commit: id 1 */
	page_one(slot612(0, 1), 4000, 9);
	img_sync();
	{
		const struct ev p[] = { { 9, 4000 } };

		expect_page(k, 0, p, 1, 0);
		expect_none(k, 0);
	}

	/* Lapped: the writer fills id 1, id 2 and id 3 and comes back to
	 * id 1 (head now id 2), rewriting every page: ts 5000 (seq 10),
	 * 6000 (seq 11), 7000 (seq 12 on id 1).  Our page (id 1, ts 4000)
	 * was reused: its rest is lost and reading restarts at the head. */
	w64(m612(0) + 32, first0 + 2 * SB);	/* head: id 2 */
	w64(m612(0) + 40, first0 + 1 * SB);	/* commit: id 1 */
	page_one(slot612(0, 2), 5000, 10);
	page_one(slot612(0, 3), 6000, 11);
	page_one(slot612(0, 1), 7000, 12);
	img_sync();
	seed_dump("612-lapped");
	{
		const struct ev a[] = { { 10, 5000 } };
		const struct ev b[] = { { 11, 6000 } };
		const struct ev c[] = { { 12, 7000 } };

		expect_page(k, 0, a, 1, HVTRACE_LOST_UNKNOWN);
		expect_page(k, 0, b, 1, 0);
		expect_page(k, 0, c, 1, 0);
		expect_none(k, 0);
	}
	t_ok(hvtrace_kring_get_stats(k, 0, &st));
	t_equ(st.read, 12);
	t_equ(st.lost_pages, 1);
	t_equ(st.errors, 0);
	t_equ(st.now_ts, 7000);

	/* The mapping is read-only: a child writing through it dies of
	 * SIGSEGV.  Find it in /proc/self/maps by the memfd's name. */
	{
		char line[512];
		FILE *f = fopen("/proc/self/maps", "r");
		unsigned long lo = 0, hi;
		char perms[8];
		int status;
		pid_t pid;

		t_assert(f);
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "memfd:kring_golden") &&
			    sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3)
				break;
		fclose(f);
		t_assert(lo);
		t_assert(!strcmp(perms, "r--s"));
		pid = fork();
		t_assert(pid >= 0);
		if (pid == 0) {
			struct sigaction sa;

			/* Our own handler, so that a sanitizer's does not
			 * turn the fault into an abort. */
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = segv_exit;
			sigaction(SIGSEGV, &sa, NULL);
			*(volatile uint8_t *)lo = 1;
			_exit(0);
		}
		t_assert(waitpid(pid, &status, 0) == pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != SEGV_EXIT)
			t_fail("writing through the mapping did not fault "
			       "(status 0x%x)", status);
	}
	hvtrace_kring_close(k);
}

/*
 * 6.15+ image: the range at 0x2000, 64 KiB of RAM, 2 CPUs x 4 sub-buffers.
 *   global meta 24 B, scratch 64 B -> buffers_offset 88
 *   CPU meta @cpu_size bytes, buffers[4] after it
 *   CPU 0 meta at 0x2000 + 88, its sub-buffers at 0x2000 +
 *     align(88 + cpu_size + 16, 4096) = 0x3000
 *   CPU 1 meta at 0x3000 + 4 * 4096 = 0x7000, sub-buffers at 0x8000
 *   total_size = 0x8000 + 0x4000 - 0x2000 = 0xa000
 */
#define R615		0x2000ull

static uint64_t m615(int cpu) { return cpu ? 0x7000 : R615 + 88; }
static uint64_t slot615(int cpu, int slot)
{
	return (cpu ? 0x8000ull : 0x3000ull) + (uint64_t)slot * SB;
}

static void test_615(uint32_t cpu_size)
{
	/* ring order by id: id0 = reader (slot 2), id1 = slot 0,
	 * id2 = slot 3, id3 = slot 1 */
	static const int perm[4] = { 2, 0, 3, 1 };
	static const int ident[4] = { 0, 1, 2, 3 };
	struct hvtrace_kring_info info;
	struct hvtrace_kring *k;
	uint64_t first0 = VA_BASE + 0x3000, first1 = VA_BASE + 0x8000;
	uint32_t off;
	int i;

	img_new(0x10000);
	w32(R615 + 0, MAGIC);				/* magic */
	w32(R615 + 4, cpu_size | 24u << 16);		/* struct_sizes */
	w64(R615 + 8, 0xa000);				/* total_size */
	w64(R615 + 16, 88);				/* buffers_offset */
	w64(R615 + 24, 0xffffffff00000000ull);		/* scratch: kaslr */
	/* CPU 0: head on id 2 (slot 3), commit on id 1 (slot 0): the ring
	 * from the head is id 2 -> id 3 -> id 1 */
	w64(m615(0) + 0, first0);			/* first_buffer */
	w64(m615(0) + 8, first0 + 3 * SB);		/* head_buffer */
	w64(m615(0) + 16, first0 + 0 * SB);		/* commit_buffer */
	w32(m615(0) + 24, SB);				/* subbuf_size */
	w32(m615(0) + 28, 4);				/* nr_subbufs */
	for (i = 0; i < 4; i++)
		w32(m615(0) + cpu_size + 4 * i, (uint32_t)perm[i]);
	off = 0;					/* id 2: ts 100 */
	put_marker(slot615(0, 3), &off, 0, 1);
	put_marker(slot615(0, 3), &off, 3, 2);
	page_hdr(slot615(0, 3), 100, off);
	off = 0;					/* id 3: ts 200 */
	put_marker(slot615(0, 1), &off, 0, 3);
	page_hdr(slot615(0, 1), 200, off);
	off = 0;					/* id 1: ts 300 */
	put_marker(slot615(0, 0), &off, 0, 4);
	page_hdr(slot615(0, 0), 300, off);
	off = 0;					/* reader: stale */
	put_marker(slot615(0, 2), &off, 0, 999);
	page_hdr(slot615(0, 2), 50, off);
	/* CPU 1: empty ring, head = commit = id 1 (slot 1) */
	w64(m615(1) + 0, first1);
	w64(m615(1) + 8, first1 + 1 * SB);
	w64(m615(1) + 16, first1 + 1 * SB);
	w32(m615(1) + 24, SB);
	w32(m615(1) + 28, 4);
	for (i = 0; i < 4; i++)
		w32(m615(1) + cpu_size + 4 * i, (uint32_t)ident[i]);
	img_sync();
	seed_dump(cpu_size == 32 ? "615-cpu32" : "615-cpu40");

	t_ok(hvtrace_kring_open(path, 0, &k));
	t_ok(hvtrace_kring_get_info(k, &info));
	t_equ(info.layout, HVTRACE_KRING_LAYOUT_6_15);
	t_equ(info.nr_cpus, 2);
	t_equ(info.nr_subbufs, 4);
	t_equ(info.cpu_meta_size, cpu_size);
	t_equ(info.offset, R615);
	t_equ(info.size, 0xa000);
	{
		const struct ev a[] = { { 1, 100 }, { 2, 103 } };
		const struct ev b[] = { { 3, 200 } };
		const struct ev c[] = { { 4, 300 } };

		expect_page(k, 0, a, 2, 0);
		expect_page(k, 0, b, 1, 0);
		expect_page(k, 0, c, 1, 0);
		expect_none(k, 0);
		expect_none(k, 1);
	}
	hvtrace_kring_close(k);

	/* The same ring opened at its explicit offset. */
	t_ok(hvtrace_kring_open(path, R615, &k));
	hvtrace_kring_close(k);
}

/* Seq of the record @rec (a marker). */
static uint32_t rec_seq(const struct hvtrace_record *rec)
{
	uint32_t seq;

	t_equ(rec->size, 12);
	memcpy(&seq, (const uint8_t *)rec->data + 8, 4);
	return seq;
}

/*
 * The same ring through the mmap-ABI view (hvtrace_ring_open_kring) and a
 * merge: records of both CPUs in time order, host_ns == ts (guest
 * relative), and events the guest commits later on its current page
 * appended to the same reader page (same reader.id, larger reader.read).
 */
static void test_ring_view(void)
{
	static const uint32_t want[] = { 100, 1, 2, 3, 4, 5, 6, 7 };
	struct hvtrace_ring *rings[2];
	struct hvtrace_record rec;
	struct hvtrace_merge *m;
	struct hvtrace_kring *k;
	uint32_t id, read;
	unsigned int i;

	kimg_612(VA_BASE + 0x100000, VA_BASE + 0x200000);
	t_ok(hvtrace_kring_open(path, 0, &k));
	t_ok(hvtrace_ring_open_kring(k, 0, &rings[0]));
	t_ok(hvtrace_ring_open_kring(k, 1, &rings[1]));
	t_eq(hvtrace_ring_open_kring(k, 2, &rings[1]), -EINVAL);
	t_equ(hvtrace_ring_now_ns(rings[0]), 0);
	t_ok(hvtrace_merge_new(rings, 2, 0, &m));
	t_eq(hvtrace_merge_last_ring(m), -1);
	t_eq(hvtrace_merge_last_ring(NULL), -1);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		t_eq(hvtrace_merge_next(m, &rec, true), 1);
		t_equ(rec_seq(&rec), want[i]);
		t_equ(rec.host_ns, rec.ts);
		t_equ(rec.lost_before, 0);
		/* Which ring it came from: ring i reads CPU i. */
		t_eq(hvtrace_merge_last_ring(m), rec.cpu);
	}
	t_eq(hvtrace_merge_next(m, &rec, true), 0);
	t_eq(hvtrace_merge_last_ring(m), -1);
	id = hvtrace_ring_meta(rings[0])->reader.id;
	read = hvtrace_ring_meta(rings[0])->reader.read;
	t_equ(read, 32);		/* seq 6 and 7 of the commit page */

	page_hdr(slot612(0, 3), 3000, 48);	/* seq 8 committed */
	img_sync();
	t_eq(hvtrace_merge_next(m, &rec, true), 1);
	t_equ(rec_seq(&rec), 8);
	t_equ(rec.ts, 3003);
	t_equ(hvtrace_ring_meta(rings[0])->reader.id, id);
	t_equ(hvtrace_ring_meta(rings[0])->reader.read, 48);
	t_equ(hvtrace_ring_meta(rings[0])->read, 8);
	hvtrace_merge_free(m);
	/* Closing the views leaves descriptors they do not own alone
	 * (descriptor 0 made sure to be open first). */
	if (fcntl(0, F_GETFD) < 0)
		t_assert(open("/dev/null", O_RDONLY) == 0);
	hvtrace_ring_close(rings[0]);
	hvtrace_ring_close(rings[1]);
	t_assert(fcntl(0, F_GETFD) >= 0);
	hvtrace_kring_close(k);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seed_dir = argv[1];
	mfd = memfd_create("kring_golden", MFD_CLOEXEC);
	if (mfd < 0)
		t_skip("memfd_create: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	test_612();
	test_615(32);	/* 6.15 .. : first/head/commit, subbuf_size, nr */
	test_615(40);	/* later: + nr_invalid, entry_bytes */
	test_ring_view();
	free(img);
	printf("PASS kring_golden\n");
	return 0;
}
