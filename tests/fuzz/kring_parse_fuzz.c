// SPDX-License-Identifier: MIT
/*
 * Fuzz target: finding and reading a guest kernel's persistent ftrace ring
 * (host/lib/kring.c) in a guest RAM image.  The input is the RAM file:
 * written to a memfd, opened by path with a scan for the ring, every CPU
 * read until it runs dry; then the image changes under the open handle
 * (a window of it inverted, chosen by the input) and every CPU is read
 * again, as a guest that keeps writing would make it.
 *
 * Beyond the sanitizers: the reader terminates (a bounded number of pages
 * per pass on a static image), and every page it returns is a well-formed
 * sub-buffer whose events walk cleanly with the page walker, whose size
 * and count match the page info, and whose missed-events flags match the
 * reported loss (always "unknown count" from this reader).
 *
 * Seeds: tests/fuzz/corpus/kring_parse/, written by
 * build/tests/unit/kring_golden DIR (the golden 6.12 and 6.15+ images).
 */
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

/* What a returned page must look like. */
static void kr_check(const uint8_t *page, uint32_t subbuf,
		     const struct hvtrace_page_info *pi)
{
	struct hvt_page_iter it;
	uint64_t hdr[2];
	uint32_t events = 0;
	int item;

	memcpy(hdr, page, sizeof(hdr));
	fuzz_assert(pi->first_ts == hdr[0]);
	fuzz_assert(pi->size == (hdr[1] & HVT_COMMIT_SIZE_MASK));
	fuzz_assert(pi->size + HVT_PAGE_HDR_SIZE <= subbuf);
	fuzz_assert(pi->lost_events == 0 ||
		    pi->lost_events == HVTRACE_LOST_UNKNOWN);
	fuzz_assert((hdr[1] & ~HVT_COMMIT_SIZE_MASK) ==
		    (pi->lost_events ? HVT_MISSED_EVENTS : 0));
	hvt_page_iter_init(&it, page + HVT_PAGE_HDR_SIZE, pi->size, hdr[0]);
	do {
		item = hvt_page_next(&it);
		if (item == HVT_ITEM_DATA)
			events++;
	} while (item > 0);
	fuzz_assert(item == HVT_ITEM_END && it.pos == pi->size);
	fuzz_assert(events && events == pi->entries);
}

static void kr_pass(struct hvtrace_kring *k,
		    const struct hvtrace_kring_info *ki, uint8_t *page)
{
	struct hvtrace_page_info pi;
	struct hvtrace_kring_stats st;
	uint32_t cpu, pages;
	int r;

	for (cpu = 0; cpu < ki->nr_cpus; cpu++) {
		for (pages = 0;; pages++) {
			r = hvtrace_kring_read_page(k, (int)cpu, page,
						    ki->subbuf_size, &pi);
			if (r != 1)
				break;
			kr_check(page, ki->subbuf_size, &pi);
			/* A static image: each ring page at most once. */
			fuzz_assert(pages <= ki->nr_subbufs + 4);
		}
		fuzz_assert(r == 0);
		fuzz_assert(hvtrace_kring_get_stats(k, (int)cpu, &st) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvtrace_kring_info ki;
	struct hvtrace_kring *k;
	uint8_t *page, *flip;
	uint32_t at, len, i;
	const char *path;
	int fd;

	path = fuzz_memfd("hvt-fuzz-kring", data, size, &fd);
	if (hvtrace_kring_open(path, 0, &k))
		return 0;
	fuzz_assert(hvtrace_kring_get_info(k, &ki) == 0);
	fuzz_assert(ki.nr_cpus >= 1 && ki.offset + ki.size <= size);
	page = malloc(ki.subbuf_size);
	fuzz_assert(page);
	kr_pass(k, &ki, page);

	/* The guest writes on: invert a window of the image (place and
	 * length from the input's first bytes) and read again. */
	memcpy(&at, data, 4);
	memcpy(&len, data + 4, 4);
	at %= (uint32_t)size;
	len %= 8192;
	if (len > size - at)
		len = (uint32_t)(size - at);
	flip = malloc(len + 1);
	fuzz_assert(flip);
	for (i = 0; i < len; i++)
		flip[i] = (uint8_t)~data[at + i];
	fuzz_assert(pwrite(fd, flip, len, at) == (ssize_t)len);
	free(flip);
	kr_pass(k, &ki, page);
	free(page);
	hvtrace_kring_close(k);
	return 0;
}
