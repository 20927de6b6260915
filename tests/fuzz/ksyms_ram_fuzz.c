// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a guest kernel's symbols read from its RAM
 * (host/lib/ksyms_ram.c): the input is the RAM (a memfd, mapped as a RAM
 * file is), holding VMCOREINFO notes and the kallsyms tables they point
 * at, all hostile.
 *
 * Beyond the sanitizers: a table taken has its note at a page of the
 * input, a RAM split among none, 2, 3, 3.5 GiB, and gives back text that
 * parses again (hvtrace_ksyms_parse) with nothing skipped, to the same
 * text, its addresses in order; a refusal leaves no table.
 *
 * Seeds: tests/fuzz/corpus/ksyms_ram/, written by build/tests/unit/
 * ksyms_ram DIR (compact images: absolute per-CPU and relative
 * offsets, two different valid notes).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hvt_fuzz.h"
#include "kring-local.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvtrace_kring k = { .mem = -1, .pagemap = -1, .unit = "file" };
	struct hvtrace_ksyms *ks = NULL, *ks2;
	struct hvtrace_ksyms_info info, info2;
	uint64_t prev = 0;
	char *text, *text2;
	size_t len, len2;
	const char *p;
	void *map;
	int fd, ret;

	if (size < 4096)
		return 0;
	fuzz_memfd("ksyms_ram", data, size, &fd);
	k.fd = fd;
	k.size = size & ~(size_t)4095;
	snprintf(k.path, sizeof(k.path), "fuzz");
	map = mmap(NULL, k.size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		abort();
	k.map = map;
	ret = hvtrace_ksyms_from_kring(&k, &ks, &info);
	if (getenv("HVT_FUZZ_VERBOSE"))
		fprintf(stderr, "ksyms_from_kring: %d %s\n", ret,
			ret ? hvtrace_last_error() : "");
	if (ret) {
		fuzz_assert(!ks);
		munmap(map, k.size);
		return 0;
	}
	fuzz_assert(info.note_offset % 4096 == 0 &&
		    info.note_offset < k.size);
	fuzz_assert(!info.lowmem || info.lowmem == 2ull << 30 ||
		    info.lowmem == 3ull << 30 || info.lowmem == 7ull << 29);
	fuzz_assert(!hvtrace_ksyms_text(ks, &text, &len));
	for (p = text; p < text + len; p = strchr(p, '\n') + 1) {
		uint64_t a = strtoull(p, NULL, 16);

		fuzz_assert(a >= prev);
		prev = a;
	}
	fuzz_assert(!hvtrace_ksyms_parse(text, len, &ks2));
	fuzz_assert(!hvtrace_ksyms_get_info(ks2, &info2));
	fuzz_assert(!info2.skipped && info2.symbols == info.symbols);
	fuzz_assert(!hvtrace_ksyms_text(ks2, &text2, &len2));
	fuzz_assert(len == len2 && !memcmp(text, text2, len));
	if (getenv("HVT_FUZZ_VERBOSE"))
		fprintf(stderr, "%s", text);
	free(text);
	free(text2);
	hvtrace_ksyms_free(ks2);
	hvtrace_ksyms_free(ks);
	munmap(map, k.size);
	return 0;
}
