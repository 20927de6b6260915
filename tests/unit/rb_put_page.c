// SPDX-License-Identifier: MIT
/*
 * hvt_rb_put_page(): whole ftrace sub-buffers from another ring (the
 * agent's kernel copy mode) committed into an area's ring and read back by
 * the host's page reader.
 *
 *   - pages built the way a kernel's trace_pipe_raw returns them (numbered
 *     events, some pages padded to the end, some with RB_MISSED_* flags
 *     that hvt_rb_put_page() must not look at) come back in order, every
 *     event once;
 *   - the losses passed in come back exactly: the page read after a gap
 *     carries RB_MISSED_STORED with the count, and the count equals the
 *     gap in the numbering;
 *   - consume mode: a full ring refuses the page (-HVT_ENOSPC) and nothing
 *     changes; after the host read, the same page goes in;
 *   - a malformed page (-HVT_EBADMSG) or one without a data event
 *     (-HVT_ENODATA) changes nothing;
 *   - written == read + lost + discarded + entries + trailing throughout.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

#define NR_SUBBUFS 4
#define SUBBUF	   4096
#define DATA	   (SUBBUF - 16)

struct ctx {
	char path[64];
	void *area;
	uint64_t size;
	struct hvt_rb_cpu cb;
	struct hvtrace_area *a;
	uint32_t next;	 /* next event number to build */
	uint32_t expect; /* next event number the reader must give */
	uint64_t written, lost_in, lost_out;
	uint64_t ts;
	uint8_t page[SUBBUF];
};

/*
 * A kernel-style page of @n events numbered from x->next (12 bytes each:
 * header, common_type 7, pid = number), padded to the end when @pad, with
 * the source ring's own MISSED flags when @flags (ignored by the writer).
 */
static void build(struct ctx *x, uint32_t n, int pad, int flags)
{
	uint64_t commit;
	uint32_t off = 0, i;

	memset(x->page, 0xee, sizeof(x->page));
	memcpy(x->page, &x->ts, 8);
	for (i = 0; i < n; i++) {
		uint32_t hdr = 2u | (i ? 5u : 0u) << HVT_TYPE_LEN_BITS;
		struct hvt_common_fields c = {.common_type = 7,
					      .common_pid = (int32_t)x->next++};

		memcpy(x->page + 16 + off, &hdr, 4);
		memcpy(x->page + 16 + off + 4, &c, 8);
		off += 12;
		x->ts += 5;
	}
	if (pad && DATA - off >= 8) {
		/* Padding to the end, counted in commit, as rb_reset_tail(). */
		uint32_t hdr = HVT_TYPE_PADDING | 1u << HVT_TYPE_LEN_BITS;
		uint32_t len = DATA - off - 4;

		memcpy(x->page + 16 + off, &hdr, 4);
		memcpy(x->page + 16 + off + 4, &len, 4);
		off = DATA;
	}
	commit = off;
	if (flags)
		commit |= HVT_MISSED_EVENTS;
	memcpy(x->page + 8, &commit, 8);
	x->ts += 1000;
}

static void check_invariant(struct ctx *x)
{
	struct hvtrace_cpu_stats st;

	t_ok(hvtrace_cpu_get_stats(x->a, 0, &st));
	if (st.written !=
	    st.read + st.lost + st.discarded + st.entries + st.trailing)
		t_fail("written %llu != read %llu + lost %llu + discarded "
		       "%llu + entries %llu + trailing %llu",
		       (unsigned long long)st.written,
		       (unsigned long long)st.read, (unsigned long long)st.lost,
		       (unsigned long long)st.discarded,
		       (unsigned long long)st.entries,
		       (unsigned long long)st.trailing);
	t_equ(st.written, x->written + x->lost_in);
	t_equ(st.errors, 0);
}

/* Read everything; every event in order, gaps exactly as reported. */
static void drain(struct ctx *x)
{
	uint8_t out[SUBBUF];
	int ret;

	while ((ret = hvtrace_cpu_read_page(x->a, 0, out, sizeof(out), NULL)) >
	       0) {
		struct hvt_page_iter it;
		uint64_t commit, ts, missed = 0;
		uint32_t size;
		int r;

		memcpy(&ts, out, 8);
		memcpy(&commit, out + 8, 8);
		size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
		t_assert(size <= DATA);
		if (commit & HVT_MISSED_EVENTS) {
			t_assert(commit & HVT_MISSED_STORED);
			memcpy(&missed, out + 16 + size, 8);
			x->lost_out += missed;
			x->expect += (uint32_t)missed;
		}
		hvt_page_iter_init(&it, out + 16, size, ts);
		while ((r = hvt_page_next(&it)) != HVT_ITEM_END) {
			struct hvt_common_fields c;

			t_assert(r >= 0);
			if (r != HVT_ITEM_DATA)
				continue;
			memcpy(&c, it.payload, 8);
			if ((uint32_t)c.common_pid != x->expect)
				t_fail("event %d where %u was due",
				       c.common_pid, x->expect);
			x->expect++;
		}
	}
	t_assert(ret == 0);
	check_invariant(x);
}

/* Put the page built last; the lost events before it skip numbers. */
static int put(struct ctx *x, uint32_t n, uint64_t lost)
{
	int ret;

	ret = hvt_rb_put_page(&x->cb, x->page, sizeof(x->page), lost);
	if (!ret) {
		x->written += n;
		x->lost_in += lost;
	}
	return ret;
}

int main(void)
{
	struct hvt_area_params p = {
		.nr_cpus = 1,
		.nr_subbufs = NR_SUBBUFS,
		.subbuf_size = SUBBUF,
		.mode = HVT_MODE_CONSUME,
		.writer_kind = HVT_WRITER_GUEST_KERNEL,
		.clock_id = HVT_CLOCK_MONO_NS,
		.name = "put-page",
	};
	struct ctx x;
	uint8_t before[SUBBUF * NR_SUBBUFS];
	uint32_t i;
	int fd;

	memset(&x, 0, sizeof(x));
	x.ts = 1000000;
	snprintf(x.path, sizeof(x.path), "/dev/shm/hvt-putpage-%d", getpid());
	x.size = hvt_area_size(1, NR_SUBBUFS, SUBBUF);
	p.area_size = x.size;
	fd = open(x.path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)x.size) ? -errno : 0);
	x.area = mmap(NULL, x.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	t_assert(x.area != MAP_FAILED);
	close(fd);
	t_ok(hvt_area_format(x.area, &p));
	t_ok(hvt_area_cpu(x.area, x.size, 0, &x.cb));
	if (hvtrace_area_open(x.path, 0, 0, HVTRACE_OPEN_CONTROL, &x.a))
		t_fail("open: %s", hvtrace_last_error());

	/* A first page into the fresh ring, read while it is the tail. */
	build(&x, 10, 0, 0);
	t_ok(put(&x, 10, 0));
	drain(&x);
	/* Full pages, padded, with the source's own flags; a loss of 17. */
	build(&x, 300, 1, 1);
	t_ok(put(&x, 300, 0));
	x.next += 17;
	build(&x, 339, 0, 1);
	t_ok(put(&x, 339, 17));
	drain(&x);
	t_equ(x.lost_out, 17);

	/* Consume mode: NR_SUBBUFS - 1 more pages fill it (the tail page
	 * read last stays until the next one exists); the next is refused
	 * and changes nothing. */
	for (i = 0; i < NR_SUBBUFS - 1; i++) {
		build(&x, 50, 1, 0);
		t_ok(put(&x, 50, 0));
	}
	x.next += 3;
	build(&x, 20, 0, 1);
	memcpy(before,
	       (uint8_t *)x.area + HVT_CPU_OFFSET + hvt_meta_size(NR_SUBBUFS),
	       sizeof(before));
	t_equ(put(&x, 20, 3), -HVT_ENOSPC);
	t_assert(!memcmp(before,
			 (uint8_t *)x.area + HVT_CPU_OFFSET +
				 hvt_meta_size(NR_SUBBUFS),
			 sizeof(before)));
	drain(&x);
	t_ok(put(&x, 20, 3));
	drain(&x);
	t_equ(x.lost_out, 20);

	/* Malformed (commit past the page, a zero-length event) and empty
	 * pages are refused without a trace. */
	build(&x, 5, 0, 0);
	{
		uint64_t bad = DATA + 8;

		memcpy(x.page + 8, &bad, 8);
		t_equ(hvt_rb_put_page(&x.cb, x.page, sizeof(x.page), 0),
		      -HVT_EBADMSG);
		bad = 12;
		memcpy(x.page + 8, &bad, 8);
		memset(x.page + 16, 0, 4); /* type_len 0, length 0 */
		memset(x.page + 20, 0, 4);
		t_equ(hvt_rb_put_page(&x.cb, x.page, sizeof(x.page), 0),
		      -HVT_EBADMSG);
	}
	x.next -= 5;
	build(&x, 0, 1, 0);
	t_equ(hvt_rb_put_page(&x.cb, x.page, sizeof(x.page), 9), -HVT_ENODATA);
	t_equ(hvt_rb_put_page(&x.cb, x.page, 8, 0), -HVT_EINVAL);
	/* The loss a refused page carried goes with the next one. */
	x.next += 9;
	build(&x, 40, 0, 0);
	t_ok(put(&x, 40, 9));
	drain(&x);
	t_equ(x.lost_out, 29);
	t_equ(x.expect, x.next);

	hvtrace_area_close(x.a);
	munmap(x.area, x.size);
	unlink(x.path);
	printf("PASS\n");
	return 0;
}
