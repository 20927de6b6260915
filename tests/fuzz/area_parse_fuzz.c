// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the host's area attach and per-CPU reader on a whole area
 * image.  The input is written to a memfd and opened by path, exactly as a
 * writer's file would be; then every CPU is read until the reader runs dry,
 * its stats are taken, and it is rewound and read again.
 *
 * Besides the sanitizers, the target checks what the reader promises about
 * its output whatever the input: it terminates (a bounded number of pages
 * per pass), and every page it returns is a well-formed sub-buffer whose
 * events walk cleanly, whose count matches the page info, and whose
 * missed-events flags and stored count match the reported loss; and where
 * it counted no error, written == read + lost + discarded + entries +
 * trailing.
 *
 * Seeds: tests/fuzz/corpus/area_parse/, written by area_seedgen.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/page.h>

#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_page(const uint8_t *page, uint32_t subbuf,
		       const struct hvtrace_page_info *info)
{
	uint64_t commit, ts;
	uint32_t len, n = 0;
	struct hvt_page_iter it;
	int ret;

	memcpy(&ts, page, 8);
	memcpy(&commit, page + 8, 8);
	len = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	fuzz_assert(len <= subbuf - HVT_PAGE_HDR_SIZE);
	fuzz_assert(len == info->size);
	fuzz_assert(ts == info->first_ts);
	fuzz_assert(!(commit & ~(HVT_COMMIT_SIZE_MASK | HVT_COMMIT_FLAGS)));
	if (info->lost_events) {
		uint64_t stored;

		fuzz_assert(commit & HVT_MISSED_EVENTS);
		if (commit & HVT_MISSED_STORED) {
			fuzz_assert(len + 8 <= subbuf - HVT_PAGE_HDR_SIZE);
			memcpy(&stored, page + HVT_PAGE_HDR_SIZE + len, 8);
			fuzz_assert(stored == info->lost_events);
		}
	} else {
		fuzz_assert(!(commit & HVT_COMMIT_FLAGS));
	}
	hvt_page_iter_init(&it, page + HVT_PAGE_HDR_SIZE, len, ts);
	while ((ret = hvt_page_next(&it)) > 0)
		n += ret == HVT_ITEM_DATA;
	fuzz_assert(ret == HVT_ITEM_END);
	fuzz_assert(n == info->entries && n > 0);
}

/* Read @cpu until it returns 0; the reader must run dry. */
static void read_pass(struct hvtrace_area *a, int cpu, uint8_t *page,
		      uint32_t subbuf, uint32_t nr_subbufs)
{
	struct hvtrace_page_info info;
	uint32_t calls = 0;
	int ret;

	/* Every page yields at most one call per distinct event boundary
	 * cut, so a bounded number per sub-buffer; the data is static. */
	while ((ret = hvtrace_cpu_read_page(a, cpu, page, subbuf, &info)) ==
	       1) {
		check_page(page, subbuf, &info);
		fuzz_assert(++calls <= 2 * nr_subbufs + 8);
	}
	fuzz_assert(ret == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_memfd("hvt-fuzz-area", data, size, NULL);
	struct hvtrace_area_info ai;
	struct hvtrace_area *a;
	uint8_t *page;
	uint32_t cpu;

	/* Odd sizes attach as the owner (control page mapped, resuming
	 * from a read position in it), even ones read-only: both attach
	 * paths get fuzzed. */
	if (hvtrace_area_open(path, 0, 0,
			      (size & 1) ? HVTRACE_OPEN_CONTROL |
						   HVTRACE_OPEN_RESUME :
					   0,
			      &a))
		return 0;
	fuzz_assert(hvtrace_area_get_info(a, &ai) == 0);
	page = malloc(ai.subbuf_size);
	fuzz_assert(page);
	for (cpu = 0; cpu < ai.nr_cpus; cpu++) {
		struct hvtrace_cpu_stats st;

		read_pass(a, (int)cpu, page, ai.subbuf_size, ai.nr_subbufs);
		fuzz_assert(hvtrace_cpu_get_stats(a, (int)cpu, &st) == 0);
		/* Where the reader saw nothing wrong, its accounting must
		 * add up exactly. */
		if (!st.errors)
			fuzz_assert(st.written == st.read + st.lost +
						  st.discarded + st.entries +
						  st.trailing);
		hvtrace_cpu_take_trailing_lost(a, (int)cpu);
		fuzz_assert(hvtrace_cpu_get_stats(a, (int)cpu, &st) == 0);
		if (!st.errors)
			fuzz_assert(st.trailing == 0);
		if (hvtrace_cpu_seek(a, (int)cpu, true) == 0)
			read_pass(a, (int)cpu, page, ai.subbuf_size,
				  ai.nr_subbufs);
		if (hvtrace_cpu_seek(a, (int)cpu, false) == 0)
			read_pass(a, (int)cpu, page, ai.subbuf_size,
				  ai.nr_subbufs);
		fuzz_assert(hvtrace_cpu_get_stats(a, (int)cpu, &st) == 0);
	}
	free(page);
	hvtrace_area_close(a);
	return 0;
}
