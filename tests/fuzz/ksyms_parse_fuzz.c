// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a guest kernel's /proc/kallsyms text (host/lib/ksyms.c),
 * hostile input that names a guest's functions in stream lines and goes
 * into trace.dat KALLSYMS sections.
 *
 * Beyond the sanitizers: a text taken gives back text that parses again
 * with nothing skipped to the same text and counts; every line of it is
 * "%016lx %c %s[\t[MOD]]" within the bounds; the count of kept and
 * skipped lines never exceeds the lines given; a lookup of each kept
 * symbol's address (and one byte past it) finds a symbol at or below it
 * whose offset lies inside its known size; its module symbols added to
 * a copy of it (hvtrace_ksyms_add_modules()) are counted as added.
 *
 * Seeds: tests/fuzz/corpus/ksyms_parse/ (core and module lines, aliases,
 * absolute symbols, hostile lines).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>

#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *p, size_t n)
{
	const char *tab;
	size_t i;

	fuzz_assert(n >= 20 && n <= HVTRACE_KSYMS_LINE_MAX);
	for (i = 0; i < 16; i++)
		fuzz_assert((p[i] >= '0' && p[i] <= '9') ||
			    (p[i] >= 'a' && p[i] <= 'f'));
	fuzz_assert(p[16] == ' ' && p[18] == ' ');
	tab = memchr(p, '\t', n);
	for (i = 19; i < (tab ? (size_t)(tab - p) : n); i++)
		fuzz_assert(p[i] > 0x20 && p[i] < 0x7f);
	if (tab)
		fuzz_assert(tab[1] == '[' && p[n - 1] == ']' &&
			    !memchr(tab + 2, ']', (size_t)(p + n - 1 - tab - 2)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvtrace_ksyms_info info, info2;
	struct hvtrace_ksyms *ks, *ks2;
	size_t len, len2, lines = 0, i;
	char *text, *text2;
	const char *p;

	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	lines += size && data[size - 1] != '\n';
	if (hvtrace_ksyms_parse((const char *)data, size, &ks))
		return 0;
	fuzz_assert(!hvtrace_ksyms_get_info(ks, &info));
	fuzz_assert(info.symbols && info.symbols + info.skipped == lines);
	fuzz_assert(!hvtrace_ksyms_text(ks, &text, &len));
	fuzz_assert(strlen(text) == len);
	for (p = text; p < text + len;) {
		const char *nl = memchr(p, '\n', (size_t)(text + len - p));
		uint64_t addr, off, sz;
		const char *name, *mod;
		int ret;

		fuzz_assert(nl);
		check_line(p, (size_t)(nl - p));
		addr = strtoull(p, NULL, 16);
		for (i = 0; i < 2; i++) {
			ret = hvtrace_ksyms_lookup(ks, addr + i, &name, &off,
						   &sz, &mod);
			fuzz_assert(ret == 0 || ret == -ENOENT);
			if (ret)
				continue;
			fuzz_assert(*name && off <= addr + i);
			fuzz_assert(sz ? off < sz : off == 0);
			fuzz_assert(!mod || *mod);
		}
		p = nl + 1;
	}
	fuzz_assert(!hvtrace_ksyms_parse(text, len, &ks2));
	fuzz_assert(!hvtrace_ksyms_get_info(ks2, &info2));
	fuzz_assert(!info2.skipped && info2.symbols == info.symbols &&
		    info2.modules == info.modules);
	fuzz_assert(!hvtrace_ksyms_text(ks2, &text2, &len2));
	fuzz_assert(len2 == len && !memcmp(text, text2, len));
	/* The table's modules added to its copy: each module symbol once
	 * more, the count said; or refused, the copy as it was. */
	{
		uint32_t mod_syms = 0;
		int added;

		for (p = text; p < text + len; p = strchr(p, '\n') + 1)
			mod_syms += !!memchr(p, '\t',
					     (size_t)(strchr(p, '\n') - p));
		added = hvtrace_ksyms_add_modules(ks2, ks);
		fuzz_assert(!hvtrace_ksyms_get_info(ks2, &info2));
		if (added >= 0)
			fuzz_assert((uint32_t)added == mod_syms &&
				    info2.symbols == info.symbols + mod_syms &&
				    info2.modules == info.modules);
		else
			fuzz_assert(info2.symbols == info.symbols);
	}
	free(text);
	free(text2);
	hvtrace_ksyms_free(ks2);
	hvtrace_ksyms_free(ks);
	return 0;
}
