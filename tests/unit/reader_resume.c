// SPDX-License-Identifier: MIT
/*
 * A restarted owner resumes where its predecessor stopped: the owner's
 * reader posts its position (page, offset, events accounted) in the
 * control page after every page it returns, and a new owner of the same
 * area continues from there.  Every event is returned exactly once across
 * the restart, in order, and read + lost == written over both owners:
 *
 *   consume:   the first owner stops in the middle of the tail page, the
 *              writer goes on (also across pages) before the second owner
 *              opens the area: it returns the rest of that page first,
 *              then everything after;
 *   overwrite: the first owner stops, the writer laps the ring several
 *              times: the second owner reports exactly the overwritten
 *              events as lost with its first page and returns nothing
 *              the first owner returned;
 *   hostile:   a torn or forged position (bad check, offset inside an
 *              event, counts that disagree with the page) is ignored,
 *              and the second owner falls back to the consumer position
 *              without a crash or an error;
 *   post later: an owner that posts its position itself
 *              (HVTRACE_OPEN_POST_LATER) reads past what it posts; the
 *              second owner returns those events again, or counts them
 *              lost exactly where the writer reused their pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

#define NR_SUBBUFS	8
#define SUBBUF		4096

struct ctx {
	char path[64];
	uint8_t *area;
	uint64_t size;
	struct hvt_rb_cpu cb;
	uint64_t written, ts;
	uint64_t next;		/* next id expected by the readers */
	uint64_t read, lost;	/* over every owner */
};

static void setup(struct ctx *x, uint32_t mode)
{
	struct hvt_area_params p = {
		.nr_cpus = 1, .nr_subbufs = NR_SUBBUFS,
		.subbuf_size = SUBBUF, .mode = mode,
		.writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_MONO_NS, .name = "resume",
	};
	int fd;

	memset(x, 0, sizeof(*x));
	snprintf(x->path, sizeof(x->path), "/dev/shm/hvt-resume-%d",
		 getpid());
	x->size = hvt_area_size(1, NR_SUBBUFS, SUBBUF);
	p.area_size = x->size;
	fd = open(x->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)x->size) ? -1 : 0);
	x->area = mmap(NULL, x->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0);
	t_assert(x->area != MAP_FAILED);
	close(fd);
	t_ok(hvt_area_format(x->area, &p));
	t_ok(hvt_area_cpu(x->area, x->size, 0, &x->cb));
}

static void teardown(struct ctx *x)
{
	munmap(x->area, x->size);
	unlink(x->path);
}

static void write_n(struct ctx *x, unsigned int n)
{
	struct hvt_common_fields c = { .common_type = 42 };

	while (n--) {
		uint64_t id = x->written++;
		struct hvt_iovec iov = { &id, 8 };

		t_assert(hvt_rb_write(&x->cb, x->ts += 11, &c, &iov, 1) >= 0);
	}
}

static struct hvtrace_area *owner(struct ctx *x)
{
	struct hvtrace_area *a;

	if (hvtrace_area_open(x->path, 0, 0,
			      HVTRACE_OPEN_CONTROL | HVTRACE_OPEN_RESUME, &a))
		t_fail("open: %s", hvtrace_last_error());
	return a;
}

/* Read up to @max pages; every id must be the next one once the page's
 * loss is added.  Returns the pages read. */
static unsigned int read_pages(struct ctx *x, struct hvtrace_area *a,
			       unsigned int max)
{
	static uint8_t page[SUBBUF];
	struct hvtrace_page_info info;
	struct hvtrace_subbuf_iter it;
	struct hvtrace_record rec;
	unsigned int pages = 0;

	while (pages < max &&
	       hvtrace_cpu_read_page(a, 0, page, sizeof(page), &info) == 1) {
		pages++;
		x->lost += info.lost_events;
		x->next += info.lost_events;
		t_ok(hvtrace_subbuf_iter_init(&it, page, sizeof(page), 0));
		while (hvtrace_subbuf_next(&it, &rec) == 1) {
			uint64_t id;

			t_assert(rec.size >= 16);
			memcpy(&id, (const uint8_t *)rec.data + 8, 8);
			if (id != x->next)
				t_fail("id %llu, expected %llu (a duplicate "
				       "or a gap not reported)",
				       (unsigned long long)id,
				       (unsigned long long)x->next);
			x->next++;
			x->read++;
		}
	}
	return pages;
}

static void test_consume(void)
{
	struct hvtrace_cpu_stats st;
	struct hvtrace_area *a;
	struct ctx x;

	setup(&x, HVT_MODE_CONSUME);
	a = owner(&x);
	write_n(&x, 500);		/* a few pages, the tail half full */
	read_pages(&x, a, 100);
	t_equ(x.read, 500);
	write_n(&x, 7);			/* more on the same tail page */
	read_pages(&x, a, 100);
	hvtrace_area_close(a);		/* the owner stops */

	write_n(&x, 300);		/* the writer goes on meanwhile */
	a = owner(&x);
	read_pages(&x, a, 100);
	t_equ(x.read, x.written);
	t_equ(x.lost, 0);
	t_ok(hvtrace_cpu_get_stats(a, 0, &st));
	t_equ(st.written, 300);		/* since this owner attached */
	t_equ(st.read, 300);
	t_equ(st.errors, 0);
	hvtrace_area_close(a);
	teardown(&x);
	printf("consume: 807 events over two owners, none twice\n");
}

static void test_overwrite(void)
{
	struct hvtrace_cpu_stats st;
	struct hvtrace_area *a;
	struct ctx x;

	setup(&x, HVT_MODE_OVERWRITE);
	a = owner(&x);
	write_n(&x, 300);
	read_pages(&x, a, 100);
	t_equ(x.read, 300);
	hvtrace_area_close(a);

	write_n(&x, 5000);		/* laps the 8-page ring many times */
	a = owner(&x);
	read_pages(&x, a, 100);
	t_ok(hvtrace_cpu_get_stats(a, 0, &st));
	printf("overwrite: %llu read, %llu lost over two owners, %llu "
	       "written\n",
	       (unsigned long long)x.read, (unsigned long long)x.lost,
	       (unsigned long long)x.written);
	if (!x.lost)
		t_fail("the writer lapped the ring: something was lost");
	t_equ(x.read + x.lost, x.written);
	t_equ(st.read + st.lost, 5000);
	t_equ(st.written, 5000);
	t_equ(st.errors, 0);

	/* Once more, resuming in the middle of the ring (no lap). */
	write_n(&x, 40);
	read_pages(&x, a, 100);
	hvtrace_area_close(a);
	write_n(&x, 20);
	a = owner(&x);
	read_pages(&x, a, 100);
	t_equ(x.read + x.lost, x.written);
	hvtrace_area_close(a);
	teardown(&x);
}

/* A hostile or torn position is ignored: the second owner starts at the
 * consumer position (the page the first one was reading) instead. */
static void test_hostile(void)
{
	static const struct {
		const char *what;
		int field;	/* 0 check, 1 pos, 2 accounted, 3 seq */
		uint64_t delta;
	} cases[] = {
		{ "torn check", 0, 1 },
		{ "offset inside an event", 1, 4 },
		{ "offset past the page", 1, 8000 },
		{ "counts that disagree", 2, 1 },
		{ "page ahead of the writer", 3, 5 },
	};
	struct hvtrace_cpu_stats st;
	struct hvtrace_area *a;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hvt_control *ctrl;
		struct hvt_ctrl_pos *p;
		struct ctx x;

		setup(&x, HVT_MODE_CONSUME);
		ctrl = (struct hvt_control *)(x.area + HVT_CONTROL_OFFSET);
		p = &ctrl->read_pos[0];
		a = owner(&x);
		write_n(&x, 100);
		read_pages(&x, a, 100);
		hvtrace_area_close(a);
		switch (cases[i].field) {
		case 0:
			p->check ^= (uint16_t)cases[i].delta;
			break;
		case 1:
			p->pos += (uint16_t)cases[i].delta;
			break;
		case 2:
			p->accounted += cases[i].delta;
			break;
		default:
			p->seq += (uint32_t)cases[i].delta;
			break;
		}
		if (cases[i].field)	/* a forged entry with a valid check */
			p->check = hvt_ctrl_pos_check(p->accounted,
						      p->unplaced, p->seq,
						      p->pos);
		/* Ignored: the page being read comes again. */
		x.next = 0;
		x.read = 0;
		a = owner(&x);
		read_pages(&x, a, 100);
		t_equ(x.read, 100);
		t_ok(hvtrace_cpu_get_stats(a, 0, &st));
		t_equ(st.errors, 0);
		hvtrace_area_close(a);
		teardown(&x);
		printf("hostile position (%s): ignored\n", cases[i].what);
	}
}

/*
 * An owner that posts later (HVTRACE_OPEN_POST_LATER) reads past the
 * position it posts, as hvtraced does while pages wait in its tools'
 * queues; its successor resumes at the posted position: the events read
 * after it come again, once; where the writer has since reused their
 * consume-mode pages (released by the first owner's reads), the successor
 * counts exactly those events lost.
 */
static void test_post_later(bool lap)
{
	struct hvtrace_read_pos p1, p;
	struct hvtrace_area *a;
	uint64_t r1, r2;
	struct ctx x;

	setup(&x, HVT_MODE_CONSUME);
	if (hvtrace_area_open(x.path, 0, 0,
			      HVTRACE_OPEN_CONTROL | HVTRACE_OPEN_RESUME |
				      HVTRACE_OPEN_POST_LATER,
			      &a))
		t_fail("open: %s", hvtrace_last_error());
	t_eq(hvtrace_cpu_read_pos(a, 0, &p), -ENODATA);
	write_n(&x, 500);		/* pages 0 and 1 full, 2 the tail */
	t_equ(read_pages(&x, a, 1), 1);
	t_ok(hvtrace_cpu_read_pos(a, 0, &p1));
	r1 = x.read;
	t_equ(p1.accounted, r1);
	t_equ(read_pages(&x, a, 1), 1);
	r2 = x.read;
	read_pages(&x, a, 100);
	t_equ(x.read, 500);
	t_ok(hvtrace_cpu_read_pos(a, 0, &p));
	t_equ(p.accounted, 500);
	/* Nothing was posted by the reads: only what the owner posts. */
	t_ok(hvtrace_cpu_post_pos(a, 0, &p1));
	hvtrace_area_close(a);

	/* Without a lap, pages 1 and 2 come again; with one, the writer
	 * reuses the slots of pages 0 and 1 (the consumer is at 2). */
	write_n(&x, lap ? 1400 : 50);
	x.next = r1;
	x.read = r1;
	a = owner(&x);
	read_pages(&x, a, 100);
	printf("post later%s: resumed after %llu of 500 events; %llu read, "
	       "%llu lost of %llu written\n",
	       lap ? ", the ring reused" : "", (unsigned long long)r1,
	       (unsigned long long)x.read, (unsigned long long)x.lost,
	       (unsigned long long)x.written);
	t_equ(x.read + x.lost, x.written);
	t_equ(x.lost, lap ? r2 - r1 : 0);
	hvtrace_area_close(a);
	teardown(&x);
}

/* What the flag takes: RESUME (and so CONTROL); posting needs RESUME. */
static void test_post_later_args(void)
{
	struct hvtrace_read_pos p = { 0 };
	struct hvtrace_area *a;
	struct ctx x;

	setup(&x, HVT_MODE_CONSUME);
	t_eq(hvtrace_area_open(x.path, 0, 0,
			       HVTRACE_OPEN_CONTROL | HVTRACE_OPEN_POST_LATER,
			       &a),
	     -EINVAL);
	if (!strstr(hvtrace_last_error(), "POST_LATER with RESUME"))
		t_fail("error: %s", hvtrace_last_error());
	t_ok(hvtrace_area_open(x.path, 0, 0, 0, &a));
	t_eq(hvtrace_cpu_read_pos(a, 0, &p), -EINVAL);
	t_eq(hvtrace_cpu_post_pos(a, 0, &p), -EPERM);
	hvtrace_area_close(a);
	a = owner(&x);
	t_eq(hvtrace_cpu_post_pos(a, 1, &p), -EINVAL);
	p.pos = 70000;
	t_eq(hvtrace_cpu_post_pos(a, 0, &p), -EINVAL);
	hvtrace_area_close(a);
	teardown(&x);
}

int main(void)
{
	test_consume();
	test_overwrite();
	test_hostile();
	test_post_later(false);
	test_post_later(true);
	test_post_later_args();
	return 0;
}
