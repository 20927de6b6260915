// SPDX-License-Identifier: MIT
/*
 * hvtrace_merge's reorder window over rings whose pages come through a
 * transport (hvtrace_ring_open_source(), as a remote read through
 * hvtraced) beside rings on the host clock:
 *
 *   - a source ring's window counts from when its page arrived (the
 *     page's arrived_ns, the record's fetched_ns), not from when the ring
 *     took it out of its queue: a page that waited there longer than the
 *     window goes at once, while an empty ring beside could still hand
 *     over an older one;
 *   - a source ring whose writer has no clock model (its time stamps
 *     mapped to themselves, with no error bound, far ahead of the host's
 *     clock) is judged by that rule too, never by its time against the
 *     host's: its record goes a window after it arrived, not after the
 *     merge's one-second limit;
 *   - an empty ring on the host clock (an area whose writer uses it, as a
 *     host kernel CPU with nothing to say beside a remote) holds a
 *     source ring's record only until it is a window old on the host
 *     clock: a backlog long received is not held a window per page;
 *     while a record is younger than the window, it waits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace-ring.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"

#define SUBBUF	4096
#define WINDOW	300000000ULL	/* 300 ms */

struct src {
	uint8_t buf[SUBBUF];
	uint32_t len;
	bool have;		/* a page waits */
	uint32_t seq;
	uint64_t arrived_ns;
	bool no_model;		/* host_ns = ts, no error bound */
	int64_t off;		/* host_ns = ts + off */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int s_next(void *ctx, int cpu, struct hvtrace_ring_page *pg)
{
	struct src *s = ctx;

	(void)cpu;
	if (!s->have)
		return 0;
	s->have = false;
	pg->data = s->buf;
	pg->len = s->len;
	pg->seq = s->seq;
	pg->arrived_ns = s->arrived_ns;
	return 1;
}

static int s_to_host(void *ctx, int cpu, uint64_t ts, uint64_t *ns,
		     uint64_t *err_ns)
{
	struct src *s = ctx;

	(void)cpu;
	if (s->no_model) {
		*ns = ts;
		if (err_ns)
			*err_ns = UINT64_MAX;
		return 0;
	}
	*ns = ts + (uint64_t)s->off;
	if (err_ns)
		*err_ns = 1000;
	return 0;
}

static const struct hvtrace_ring_source_ops ops = {
	.next_page = s_next,
	.to_host = s_to_host,
};

/* One page of one event (u64 @id) at writer time @ts. */
static void put_page(struct src *s, uint64_t ts, uint64_t id,
		     uint64_t arrived_ns)
{
	uint32_t hdr = 2;	/* type_len 2: 8 bytes of payload, delta 0 */
	uint64_t commit = 12;

	memset(s->buf, 0, sizeof(s->buf));
	memcpy(s->buf, &ts, 8);
	memcpy(s->buf + HVT_PAGE_COMMIT_OFF, &commit, 8);
	memcpy(s->buf + HVT_PAGE_HDR_SIZE, &hdr, 4);
	memcpy(s->buf + HVT_PAGE_HDR_SIZE + 4, &id, 8);
	s->len = HVT_PAGE_HDR_SIZE + 12;
	s->seq++;
	s->arrived_ns = arrived_ns;
	s->have = true;
}

/* The merge's next record within @max_ns: its id, the time it took in
 * *@took_ns; -1 when none came. */
static int64_t next_within(struct hvtrace_merge *m, uint64_t max_ns,
			   uint64_t *took_ns)
{
	struct hvtrace_record rec;
	uint64_t t0 = now_ns(), id;
	int ret;

	for (;;) {
		ret = hvtrace_merge_next(m, &rec, false);
		t_assert(ret >= 0);
		*took_ns = now_ns() - t0;
		if (ret == 1) {
			t_equ(rec.size, 8);
			memcpy(&id, rec.data, 8);
			return (int64_t)id;
		}
		if (*took_ns > max_ns)
			return -1;
		usleep(1000);
	}
}

static char area_path[64];

static void remove_area(void)
{
	if (area_path[0])
		unlink(area_path);
}

/* An area of one CPU on the host clock, never written: a ring whose
 * hvtrace_ring_now_ns() is the host's now. */
static struct hvtrace_area *host_clock_area(void)
{
	struct hvt_area_params p = {
		.nr_cpus = 1, .nr_subbufs = 4, .subbuf_size = SUBBUF,
		.mode = HVT_MODE_CONSUME, .writer_kind = HVT_WRITER_LOOPBACK,
		.clock_id = HVT_CLOCK_HOST_NS, .name = "merge",
	};
	struct hvtrace_area *a;
	uint8_t *mem;
	int fd;

	snprintf(area_path, sizeof(area_path), "/dev/shm/hvt-merge-%d",
		 getpid());
	atexit(remove_area);
	p.area_size = hvt_area_size(1, 4, SUBBUF);
	fd = open(area_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)p.area_size) ? -errno : 0);
	mem = mmap(NULL, p.area_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	t_assert(mem != MAP_FAILED);
	close(fd);
	t_ok(hvt_area_format(mem, &p));
	munmap(mem, p.area_size);
	if (hvtrace_area_open(area_path, 0, 0, HVTRACE_OPEN_CONTROL, &a))
		t_fail("open: %s", hvtrace_last_error());
	return a;
}

int main(void)
{
	static struct src a, b;
	struct hvtrace_ring *r[2], *hr[2];
	struct hvtrace_merge *m;
	struct hvtrace_area *area;
	uint64_t took, now;
	int64_t id;

	/* 1. Arrival: a page that arrived two windows ago, beside an empty
	 * source ring, goes at once; one that just arrived waits. */
	t_ok(hvtrace_ring_open_source(&ops, &a, 0, SUBBUF, &r[0]));
	t_ok(hvtrace_ring_open_source(&ops, &b, 1, SUBBUF, &r[1]));
	t_ok(hvtrace_merge_new(r, 2, WINDOW, &m));
	now = now_ns();
	put_page(&a, 1000, 1, now - 2 * WINDOW);
	id = next_within(m, WINDOW / 2, &took);
	if (id != 1)
		t_fail("a page that arrived 2 windows ago was held %llu ms "
		       "(its window counted from when the ring took it)",
		       (unsigned long long)(took / 1000000));
	put_page(&a, 2000, 2, now_ns());
	id = next_within(m, 0, &took);
	t_eq(id, -1);	/* younger than the window: an older one may come */
	id = next_within(m, 3 * WINDOW, &took);
	t_eq(id, 2);
	t_assert(took >= WINDOW / 2);
	printf("merge: a page received a window ago goes at once, a fresh "
	       "one after %llu ms\n", (unsigned long long)(took / 1000000));

	/* 2. No clock model: time stamps far ahead of the host's clock,
	 * mapped to themselves; the record goes a window after it
	 * arrived (before: held until the one-second limit). */
	a.no_model = true;
	put_page(&a, now_ns() + 3600ULL * 1000000000ULL, 3, now_ns());
	t_equ(hvtrace_ring_now_ns(r[0]), 0);
	id = next_within(m, 900000000ULL, &took);
	if (id != 3)
		t_fail("no clock model: the record was held %llu ms (window "
		       "%llu ms)",
		       (unsigned long long)(took / 1000000),
		       (unsigned long long)(WINDOW / 1000000));
	t_equ(hvtrace_ring_now_ns(r[0]), 0);
	printf("merge: a writer with no clock model: its record after %llu "
	       "ms\n", (unsigned long long)(took / 1000000));
	hvtrace_ring_consume(r[0]);	/* returned last: not yet consumed */
	hvtrace_merge_free(m);

	/* 3. An empty ring on the host clock beside: a record written 5 s
	 * ago (host time) that arrived just now goes at once; one written
	 * now waits the window. */
	area = host_clock_area();
	t_ok(hvtrace_ring_open_area(area, 0, &hr[1]));
	t_assert(hvtrace_ring_now_ns(hr[1]) != 0);
	hr[0] = r[0];
	a.no_model = false;
	a.off = 0;
	t_ok(hvtrace_merge_new(hr, 2, WINDOW, &m));
	put_page(&a, now_ns() - 5000000000ULL, 4, now_ns());
	id = next_within(m, WINDOW / 2, &took);
	if (id != 4)
		t_fail("an idle host-clock ring held a record 5 s old (on the "
		       "host clock) %llu ms",
		       (unsigned long long)(took / 1000000));
	put_page(&a, now_ns(), 5, now_ns());
	id = next_within(m, 0, &took);
	t_eq(id, -1);
	id = next_within(m, 3 * WINDOW, &took);
	t_eq(id, 5);
	printf("merge: beside an idle host-clock ring, a record 5 s old goes "
	       "at once, a fresh one after %llu ms\n",
	       (unsigned long long)(took / 1000000));
	hvtrace_merge_free(m);
	hvtrace_ring_close(hr[1]);
	hvtrace_area_close(area);
	hvtrace_ring_close(r[0]);
	hvtrace_ring_close(r[1]);
	return 0;
}
