/* SPDX-License-Identifier: MIT */
/*
 * Test harness for libhvtrace-guest (used by tests/unit/guest_*.c, the
 * stress tests and the benchmarks): an area in a memfd, mapped twice -
 * once by the library under test (through hvtg_area_open_fds(), with a
 * read-only control descriptor, as the agent hands it over) and once
 * read-write here, standing in for the host (enable bits, consumer
 * positions) - plus a post-mortem walker over what a CPU buffer holds.
 *
 * The walker is deliberately independent of the host library: it follows
 * the read protocol of shared/ring_buffer.c on a quiescent ring (no
 * concurrent writer), page by page from the ring's first page.
 */
#ifndef GUEST_HARNESS_H
#define GUEST_HARNESS_H

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hvtrace/config.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvtrace-guest.h"
#include "hvt_test.h"

struct th_area {
	int fd;			/* memfd holding the area */
	char path[64];		/* /proc/self/fd/N, for the host */
	uint8_t *mem;		/* host view, read-write */
	uint64_t size;
	struct hvt_control *ctrl;
	uint32_t nr_cpus, nr_subbufs, subbuf_size, mode;
	struct hvtg_area *w;	/* the library's handle */
};

/* Create, format (through the library) and open an area. */
static inline void th_area_new(struct th_area *ta, uint32_t nr_cpus,
			       uint32_t nr_subbufs, uint32_t subbuf_size,
			       uint32_t mode, uint32_t clock_id)
{
	struct hvtg_format f = { 0 };
	struct hvtg_area_fds fds = { 0 };
	char ro[64];
	int ret;

	memset(ta, 0, sizeof(*ta));
	ta->nr_cpus = nr_cpus;
	ta->nr_subbufs = nr_subbufs;
	ta->subbuf_size = subbuf_size;
	ta->mode = mode;
	ta->size = hvt_area_size(nr_cpus, nr_subbufs, subbuf_size);
	ta->fd = memfd_create("hvtg-test-area", MFD_CLOEXEC);
	if (ta->fd < 0)
		t_fail("memfd_create: %s", strerror(errno));
	if (ftruncate(ta->fd, (off_t)ta->size))
		t_fail("ftruncate: %s", strerror(errno));
	ta->mem = mmap(NULL, ta->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ta->fd, 0);
	if (ta->mem == MAP_FAILED)
		t_fail("mmap: %s", strerror(errno));
	ta->ctrl = (struct hvt_control *)(ta->mem + HVT_CONTROL_OFFSET);
	snprintf(ta->path, sizeof(ta->path), "/proc/self/fd/%d", ta->fd);

	f.nr_cpus = nr_cpus;
	f.nr_subbufs = nr_subbufs;
	f.subbuf_size = subbuf_size;
	f.mode = mode;
	f.clock_id = clock_id;
	f.name = "test";
	ret = hvtg_area_format(ta->mem, ta->size, &f);
	if (ret)
		t_fail("hvtg_area_format: %d (%s)", ret, hvtg_last_error());

	/* A read-only descriptor for the control page, as the agent gives. */
	snprintf(ro, sizeof(ro), "/proc/self/fd/%d", ta->fd);
	fds.area_fd = ta->fd;
	fds.ctrl_fd = open(ro, O_RDONLY | O_CLOEXEC);
	if (fds.ctrl_fd < 0)
		t_fail("open %s: %s", ro, strerror(errno));
	fds.ctrl_offset = HVT_CONTROL_OFFSET;
	ret = hvtg_area_open_fds(&fds, &ta->w);
	if (ret == -ENOSYS)
		t_skip("no restartable sequences here: %s", hvtg_last_error());
	if (ret)
		t_fail("hvtg_area_open_fds: %d (%s)", ret, hvtg_last_error());
	close(fds.ctrl_fd);
}

static inline void th_area_free(struct th_area *ta)
{
	hvtg_area_close(ta->w);
	munmap(ta->mem, ta->size);
	close(ta->fd);
}

/* Host side: set or clear enable bit @bit. */
static inline void th_enable(struct th_area *ta, uint32_t bit, int on)
{
	uint64_t m = 1ull << (bit & 63);

	if (on)
		__atomic_fetch_or(&ta->ctrl->enable[bit >> 6], m,
				  __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&ta->ctrl->enable[bit >> 6], ~m,
				   __ATOMIC_RELEASE);
}

static inline struct hvt_cpu_meta *th_meta(struct th_area *ta, uint32_t cpu)
{
	return (struct hvt_cpu_meta *)(ta->mem + HVT_CPU_OFFSET +
				       (uint64_t)cpu *
					       hvt_cpu_stride(ta->nr_subbufs,
							      ta->subbuf_size));
}

static inline uint8_t *th_page(struct th_area *ta, uint32_t cpu, uint32_t seq)
{
	return (uint8_t *)th_meta(ta, cpu) + hvt_meta_size(ta->nr_subbufs) +
	       (uint64_t)(seq & (ta->nr_subbufs - 1)) * ta->subbuf_size;
}

/* Events the ring reports: committed entries and dropped events. */
static inline uint64_t th_entries(struct th_area *ta, uint32_t cpu)
{
	struct hvt_cpu_meta *m = th_meta(ta, cpu);
	uint64_t w = __atomic_load_n(&m->write, __ATOMIC_ACQUIRE);

	return m->desc[HVT_WORD_SEQ(w) & (ta->nr_subbufs - 1)].entries_before +
	       HVT_WORD_ENTRIES(w);
}

static inline uint64_t th_lost(struct th_area *ta, uint32_t cpu)
{
	return __atomic_load_n(&th_meta(ta, cpu)->lost, __ATOMIC_ACQUIRE);
}

/* One decoded event, handed to a th_walk() callback. */
struct th_event {
	uint32_t cpu;
	uint32_t seq;		/* page */
	uint64_t ts;
	const struct hvt_common_fields *common;
	const uint8_t *payload;	/* after the common fields */
	uint32_t len;		/* payload bytes, 4-byte padded */
};

typedef void (*th_event_fn)(const struct th_event *e, void *arg);

/*
 * Walk every event still in CPU @cpu's ring, oldest first, on a quiescent
 * ring.  Checks the structure as it goes (page timestamps monotonic, page
 * sizes and descriptors consistent, missed counts adding up to the lost
 * counter) and fails the test on any inconsistency.  Returns the number of
 * data events; *missed_out gets the sum of the missed counts of the pages
 * (events dropped before each page began; the tail page's from its
 * descriptor).
 */
static inline uint64_t th_walk(struct th_area *ta, uint32_t cpu,
			       th_event_fn fn, void *arg,
			       uint64_t *missed_out)
{
	struct hvt_cpu_meta *m = th_meta(ta, cpu);
	uint64_t w = __atomic_load_n(&m->write, __ATOMIC_ACQUIRE);
	uint32_t tail = HVT_WORD_SEQ(w), first, seq;
	uint64_t n = 0, missed = 0, last_ts = 0, entries_seen = 0;
	int first_page = 1;

	/* Oldest page whose descriptor still names it. */
	first = tail - (ta->nr_subbufs - 1);
	if ((uint32_t)(tail - m->reset_seq) < ta->nr_subbufs - 1)
		first = m->reset_seq;
	/* Consume mode: pages below the host's consumer position are done
	 * with and may be reused. */
	if (ta->mode == HVT_MODE_CONSUME &&
	    (uint32_t)(tail - ta->ctrl->consumer[cpu]) <
		    (uint32_t)(tail - first))
		first = ta->ctrl->consumer[cpu];
	while (first != tail &&
	       m->desc[first & (ta->nr_subbufs - 1)].seq != first)
		first++;

	for (seq = first;; seq++) {
		struct hvt_subbuf_desc *d =
			&m->desc[seq & (ta->nr_subbufs - 1)];
		const uint8_t *page = th_page(ta, cpu, seq);
		uint64_t commit = *(const uint64_t *)(page + 8);
		uint32_t size = seq == tail ? HVT_WORD_OFFSET(w) :
					      (uint32_t)(commit &
							 HVT_COMMIT_SIZE_MASK);
		struct hvt_page_iter it;
		uint64_t page_entries = 0;
		int r;

		if (d->seq != seq)
			t_fail("cpu %u page %u: descriptor names page %u", cpu,
			       seq, d->seq);
		if (size > ta->subbuf_size - HVT_PAGE_HDR_SIZE)
			t_fail("cpu %u page %u: size %u too large", cpu, seq,
			       size);
		if (first_page)
			entries_seen = d->entries_before;
		else if (d->entries_before != entries_seen)
			t_fail("cpu %u page %u: entries_before %llu, %llu "
			       "events before it",
			       cpu, seq,
			       (unsigned long long)d->entries_before,
			       (unsigned long long)entries_seen);
		if (seq != tail && (commit & HVT_MISSED_EVENTS)) {
			if (!(commit & HVT_MISSED_STORED))
				t_fail("cpu %u page %u: missed not stored",
				       cpu, seq);
			missed += *(const uint64_t *)(page + HVT_PAGE_HDR_SIZE +
						      size);
			if (*(const uint64_t *)(page + HVT_PAGE_HDR_SIZE +
						size) != d->missed)
				t_fail("cpu %u page %u: stored missed count "
				       "differs from its descriptor",
				       cpu, seq);
		} else if (seq != tail && d->missed) {
			t_fail("cpu %u page %u: %llu missed but no flag", cpu,
			       seq, (unsigned long long)d->missed);
		}
		if (seq == tail)
			missed += d->missed;
		if (!first_page && size &&
		    *(const uint64_t *)page < last_ts)
			t_fail("cpu %u page %u: page time goes backwards", cpu,
			       seq);
		hvt_page_iter_init(&it, page + HVT_PAGE_HDR_SIZE, size,
				   *(const uint64_t *)page);
		while ((r = hvt_page_next(&it)) > 0) {
			struct th_event e;

			if (r != HVT_ITEM_DATA)
				continue;
			if (it.len < sizeof(struct hvt_common_fields))
				t_fail("cpu %u page %u: %u-byte record", cpu,
				       seq, it.len);
			if (it.ts < last_ts)
				t_fail("cpu %u page %u: time goes backwards",
				       cpu, seq);
			last_ts = it.ts;
			e.cpu = cpu;
			e.seq = seq;
			e.ts = it.ts;
			e.common = (const void *)it.payload;
			e.payload = it.payload + sizeof(*e.common);
			e.len = it.len - (uint32_t)sizeof(*e.common);
			if (fn)
				fn(&e, arg);
			n++;
			page_entries++;
		}
		if (r < 0)
			t_fail("cpu %u page %u: malformed at %u", cpu, seq,
			       it.evt_pos);
		entries_seen += page_entries;
		first_page = 0;
		if (seq == tail) {
			if (page_entries != HVT_WORD_ENTRIES(w))
				t_fail("cpu %u tail page %u: %llu events, the "
				       "word says %u",
				       cpu, seq,
				       (unsigned long long)page_entries,
				       HVT_WORD_ENTRIES(w));
			break;
		}
	}
	if (missed_out)
		*missed_out = missed;
	return n;
}

/* Pin the calling thread to one CPU. */
static inline int th_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static inline int th_nr_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : (int)n;
}

#endif /* GUEST_HARNESS_H */
