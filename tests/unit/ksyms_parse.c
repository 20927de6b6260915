// SPDX-License-Identifier: MIT
/*
 * A guest kernel's /proc/kallsyms text, parsed as hostile input
 * (host/lib/ksyms.c):
 *
 * 1. A valid text (core symbols, absolute per-CPU ones, aliases, module
 *    symbols) comes back byte for byte from hvtrace_ksyms_text(); lookups:
 *    an exact address, an offset inside, an address before the first
 *    symbol and past the last one (none), the last symbol of the image
 *    before the modules (only its own address), a module's symbol with its
 *    module, the first of two aliases, absolute symbols never matched.
 * 2. Hostile lines, each skipped and counted with the line's number and
 *    why, the valid lines around them kept: overlong, NUL byte, bad hex
 *    (short, 17 digits, a non-hex digit), a type that is no letter,
 *    missing fields, control characters or an overlong name, bad module
 *    fields (no brackets, empty, overlong, trailing text, a ']' inside).
 * 3. Texts refused as a whole: all addresses zero (-ENODATA, the message
 *    says why), no valid line (-ENOENT), more lines than the bound
 *    (-E2BIG), NULL arguments (-EINVAL); more modules than the bound:
 *    the lines of the extra ones skipped.
 * 4. hvtrace_ksyms_add_modules(): an image's table with a guest's module
 *    lines added (an image line among them left out): a module's symbol
 *    found with its module, offset and size, the image's as before; a
 *    table without modules adds 0, NULL is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvtrace.h>

#include "hvt_test.h"

static const char valid[] =
	"0000000000000000 A fixed_percpu_data\n"
	"0000000000001000 A cpu_number\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81000100 t secondary_startup_64\n"
	"ffffffff81200000 T tracing_mark_write\n"
	"ffffffff81200400 t tracing_mark_raw_write\n"
	"ffffffff82000000 D init_uts_ns\n"
	"ffffffff83000000 B _end\n"
	"ffffffffc0100000 t virtio_init\t[virtio_net]\n"
	"ffffffffc0100080 t virtio_probe\t[virtio_net]\n"
	"ffffffffc0100200 d virtio_data\t[virtio_net]\n"
	"ffffffffc0200000 T e1000_probe\t[e1000]\n"
	"ffffffffc0200040 t e1000_remove\t[e1000]\n";

static void lookup_is(const struct hvtrace_ksyms *ks, uint64_t addr,
		      const char *name, uint64_t off, uint64_t size,
		      const char *mod)
{
	const char *n = NULL, *m = "unset";
	uint64_t o = 99, s = 99;
	int ret = hvtrace_ksyms_lookup(ks, addr, &n, &o, &s, &m);

	if (!name) {
		if (ret != -ENOENT)
			t_fail("0x%llx: expected no symbol, got %d %s",
			       (unsigned long long)addr, ret, n ? n : "");
		return;
	}
	if (ret)
		t_fail("0x%llx: expected %s, got %d",
		       (unsigned long long)addr, name, ret);
	if (strcmp(n, name))
		t_fail("0x%llx: expected %s, got %s",
		       (unsigned long long)addr, name, n);
	t_equ(o, off);
	t_equ(s, size);
	if (mod ? !m || strcmp(m, mod) : m != NULL)
		t_fail("0x%llx: module %s, expected %s",
		       (unsigned long long)addr, m ? m : "(none)",
		       mod ? mod : "(none)");
}

static void test_valid(void)
{
	struct hvtrace_ksyms_info info;
	struct hvtrace_ksyms *ks;
	size_t len;
	char *text;

	t_ok(hvtrace_ksyms_parse(valid, strlen(valid), &ks));
	t_ok(hvtrace_ksyms_get_info(ks, &info));
	t_eq(info.symbols, 14);
	t_eq(info.modules, 2);
	t_eq(info.skipped, 0);
	t_eq(info.first_skipped, 0);
	t_ok(hvtrace_ksyms_text(ks, &text, &len));
	t_eq(len, strlen(valid));
	t_assert(!strcmp(text, valid));
	free(text);

	/* Aliases: the first one names the address. */
	lookup_is(ks, 0xffffffff81000000ull, "_text", 0, 0x100, NULL);
	lookup_is(ks, 0xffffffff810000ffull, "_text", 0xff, 0x100, NULL);
	lookup_is(ks, 0xffffffff81000100ull, "secondary_startup_64", 0,
		  0x1fff00, NULL);
	lookup_is(ks, 0xffffffff812003ffull, "tracing_mark_write", 0x3ff,
		  0x400, NULL);
	lookup_is(ks, 0xffffffff81200400ull, "tracing_mark_raw_write", 0,
		  0xdffc00, NULL);
	/* Before the first: per-CPU offsets (A) are no addresses. */
	lookup_is(ks, 0x1000, NULL, 0, 0, NULL);
	lookup_is(ks, 0x0, NULL, 0, 0, NULL);
	lookup_is(ks, 0xffffffff80ffffffull, NULL, 0, 0, NULL);
	/* The image's last symbol: only its own address. */
	lookup_is(ks, 0xffffffff83000000ull, "_end", 0, 0, NULL);
	lookup_is(ks, 0xffffffff83000001ull, NULL, 0, 0, NULL);
	lookup_is(ks, 0xffffffffc00fffffull, NULL, 0, 0, NULL);
	/* Modules. */
	lookup_is(ks, 0xffffffffc0100000ull, "virtio_init", 0, 0x80,
		  "virtio_net");
	lookup_is(ks, 0xffffffffc0100090ull, "virtio_probe", 0x10, 0x180,
		  "virtio_net");
	lookup_is(ks, 0xffffffffc0100200ull, "virtio_data", 0, 0,
		  "virtio_net");
	lookup_is(ks, 0xffffffffc0100201ull, NULL, 0, 0, NULL);
	lookup_is(ks, 0xffffffffc0200010ull, "e1000_probe", 0x10, 0x40,
		  "e1000");
	/* Past the last symbol. */
	lookup_is(ks, 0xffffffffc0200040ull, "e1000_remove", 0, 0, "e1000");
	lookup_is(ks, 0xffffffffc0200041ull, NULL, 0, 0, NULL);
	lookup_is(ks, ~0ull, NULL, 0, 0, NULL);
	/* Only the name wanted. */
	t_ok(hvtrace_ksyms_lookup(ks, 0xffffffff81200010ull, NULL, NULL, NULL,
				  NULL));
	hvtrace_ksyms_free(ks);

	/* No trailing newline: the last line counts all the same. */
	t_ok(hvtrace_ksyms_parse(valid, strlen(valid) - 1, &ks));
	t_ok(hvtrace_ksyms_get_info(ks, &info));
	t_eq(info.symbols, 14);
	t_eq(info.skipped, 0);
	hvtrace_ksyms_free(ks);
}

struct bad {
	const char *line;	/* without its newline */
	const char *why;	/* a word of the reason */
};

static void test_hostile_lines(void)
{
	static char longline[700], longname[600], longmod[100], text[8192];
	static const struct bad bad[] = {
		{ longline, "longer than 600" },
		{ "ffffffff81000000 T na\0me", "NUL" },
		{ "ffffffff8100000 T short_hex", "ADDRESS TYPE NAME" },
		{ "fffffffff81000000 T long_hex", "ADDRESS TYPE NAME" },
		{ "ffffffff8100000g T bad_hex", "hex" },
		{ "0xffffffff810000 T prefixed", "hex" },
		{ "ffffffff81000000 1 digit_type", "letter" },
		{ "ffffffff81000000 T", "ADDRESS TYPE NAME" },
		{ "ffffffff81000000 T ", "ADDRESS TYPE NAME" },
		{ "ffffffff81000000  T two_spaces", "ADDRESS TYPE NAME" },
		{ "ffffffff81000000 T ctl\x01name", "printable" },
		{ "ffffffff81000000 T sp ace", "printable" },
		{ "ffffffff81000000 T del\x7f", "printable" },
		{ "ffffffff81000000 T \xc3\xa9t\xc3\xa9", "printable" },
		{ longname, "511" },
		{ "ffffffff81000000 T m1\tmod", "module" },
		{ "ffffffff81000000 T m2\t[]", "module" },
		{ "ffffffff81000000 T m3\t[mod", "module" },
		{ "ffffffff81000000 T m4\t[mod] x", "module" },
		{ "ffffffff81000000 T m5\t[mo]d]", "module" },
		{ "ffffffff81000000 T m6\t[m d]", "module" },
		{ "ffffffff81000000 T m7\t\t[mod]", "module" },
		{ longmod, "module" },
		{ "", "ADDRESS TYPE NAME" },
	};
	const size_t nbad = sizeof(bad) / sizeof(bad[0]);
	struct hvtrace_ksyms_info info;
	struct hvtrace_ksyms *ks;
	size_t i, len = 0, l;
	const char *n;
	char *back;

	memset(longline, 'a', sizeof(longline) - 1);
	memcpy(longline, "ffffffff81000000 T ", 19);
	snprintf(longname, sizeof(longname), "ffffffff81000000 T ");
	memset(longname + 19, 'n', 512);
	snprintf(longmod, sizeof(longmod), "ffffffff81000000 T m\t[");
	memset(longmod + strlen(longmod), 'm', 56);
	strcat(longmod, "]");

	/* Each bad line between two good ones, on its own. */
	for (i = 0; i < nbad; i++) {
		l = i == 1 ? 24 : strlen(bad[i].line);
		len = (size_t)snprintf(text, sizeof(text),
				       "ffffffff81000000 T good1\n");
		memcpy(text + len, bad[i].line, l);
		len += l;
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"\nffffffff81000010 t good2\n");
		t_ok(hvtrace_ksyms_parse(text, len, &ks));
		t_ok(hvtrace_ksyms_get_info(ks, &info));
		if (info.skipped != 1 || info.symbols != 2 ||
		    info.first_skipped != 2 ||
		    !strstr(info.first_skipped_why, bad[i].why))
			t_fail("bad line %zu: skipped %u kept %u line %u "
			       "why \"%s\", expected 1, 2, 2, \"%s\"",
			       i, info.skipped, info.symbols,
			       info.first_skipped, info.first_skipped_why,
			       bad[i].why);
		t_ok(hvtrace_ksyms_text(ks, &back, &l));
		t_assert(!strcmp(back, "ffffffff81000000 T good1\n"
				       "ffffffff81000010 t good2\n"));
		free(back);
		t_ok(hvtrace_ksyms_lookup(ks, 0xffffffff81000010ull, &n, NULL,
					  NULL, NULL));
		t_assert(!strcmp(n, "good2"));
		hvtrace_ksyms_free(ks);
	}

	/* The largest fields that are still valid. */
	len = (size_t)snprintf(text, sizeof(text), "ffffffff81000000 T ");
	memset(text + len, 'n', 511);
	len += 511;
	len += (size_t)snprintf(text + len, sizeof(text) - len, "\t[");
	memset(text + len, 'm', 55);
	len += 55;
	len += (size_t)snprintf(text + len, sizeof(text) - len, "]\n");
	t_ok(hvtrace_ksyms_parse(text, len, &ks));
	t_ok(hvtrace_ksyms_get_info(ks, &info));
	t_eq(info.symbols, 1);
	t_eq(info.skipped, 0);
	t_ok(hvtrace_ksyms_text(ks, &back, &l));
	t_eq(l, len);
	t_assert(!memcmp(back, text, len));
	free(back);
	hvtrace_ksyms_free(ks);
}

static void test_refused(void)
{
	static const char zeros[] =
		"0000000000000000 T _text\n"
		"0000000000000000 T startup_64\n"
		"0000000000000000 t x\t[mod]\n";
	static const char junk[] = "hello\nworld\n\0\0\0\n";
	struct hvtrace_ksyms_info info;
	struct hvtrace_ksyms *ks = NULL;
	size_t i, n, len;
	char *text, *p;

	t_eq(hvtrace_ksyms_parse(zeros, strlen(zeros), &ks), -ENODATA);
	t_assert(strstr(hvtrace_last_error(), "kptr_restrict"));
	t_assert(!ks);
	t_eq(hvtrace_ksyms_parse(junk, sizeof(junk) - 1, &ks), -ENOENT);
	t_assert(strstr(hvtrace_last_error(), "line 1"));
	t_eq(hvtrace_ksyms_parse("", 0, &ks), -ENOENT);
	t_eq(hvtrace_ksyms_parse(NULL, 0, &ks), -EINVAL);
	t_eq(hvtrace_ksyms_parse(zeros, 1, NULL), -EINVAL);
	t_eq(hvtrace_ksyms_parse(zeros, (size_t)HVTRACE_KSYMS_TEXT_MAX + 1,
				 &ks),
	     -E2BIG);
	t_eq(hvtrace_ksyms_lookup(NULL, 1, NULL, NULL, NULL, NULL), -EINVAL);
	t_eq(hvtrace_ksyms_text(NULL, &text, &len), -EINVAL);
	t_eq(hvtrace_ksyms_get_info(NULL, &info), -EINVAL);
	hvtrace_ksyms_free(NULL);

	/* One line more than the bound: refused before any more work. */
	n = HVTRACE_KSYMS_LINES_MAX + 1;
	text = malloc(n + 64);
	t_assert(text);
	memset(text, '\n', n + 64);
	t_eq(hvtrace_ksyms_parse(text, n, &ks), -E2BIG);
	t_assert(strstr(hvtrace_last_error(), "lines"));
	/* Exactly the bound, one symbol and empty lines: taken. */
	memcpy(text, "ffffffff81000000 T a\n", 21);
	t_ok(hvtrace_ksyms_parse(text, 21 + HVTRACE_KSYMS_LINES_MAX - 1, &ks));
	t_ok(hvtrace_ksyms_get_info(ks, &info));
	t_eq(info.symbols, 1);
	t_eq(info.skipped, HVTRACE_KSYMS_LINES_MAX - 1);
	t_eq(info.first_skipped, 2);
	hvtrace_ksyms_free(ks);
	t_eq(hvtrace_ksyms_parse(text, 21 + HVTRACE_KSYMS_LINES_MAX, &ks),
	     -E2BIG);
	free(text);

	/* More modules than the bound: the extra ones' lines skipped. */
	n = (HVTRACE_KSYMS_MODULES_MAX + 10) * 40;
	text = malloc(n);
	t_assert(text);
	for (i = 0, p = text; i < HVTRACE_KSYMS_MODULES_MAX + 10; i++)
		p += sprintf(p, "ffffffffc%07zx t f\t[m%zu]\n", i * 16, i);
	t_ok(hvtrace_ksyms_parse(text, (size_t)(p - text), &ks));
	t_ok(hvtrace_ksyms_get_info(ks, &info));
	t_eq(info.modules, HVTRACE_KSYMS_MODULES_MAX);
	t_eq(info.symbols, HVTRACE_KSYMS_MODULES_MAX);
	t_eq(info.skipped, 10);
	t_assert(strstr(info.first_skipped_why, "modules"));
	hvtrace_ksyms_free(ks);
	free(text);
}

/* 4. A RAM table of the image with a guest's module lines added. */
static void test_add_modules(void)
{
	static const char image[] = "ffffffff81000000 T _text\n"
				    "ffffffff81000100 T do_one\n"
				    "ffffffff81000200 T do_two\n";
	/* The guest's lines: its modules, and an image line of another
	 * boot that must not be taken. */
	static const char mods[] =
		"ffffffff90000000 T stale_image_symbol\n"
		"ffffffffc0400000 t softdog_stop\t[softdog]\n"
		"ffffffffc0400140 t softdog_fire\t[softdog]\n"
		"ffffffffc0400200 t softdog_ping\t[softdog]\n"
		"ffffffffc0500000 t dummy_init\t[dummy]\n";
	struct hvtrace_ksyms_info info;
	struct hvtrace_ksyms *ks, *m, *none;
	const char *name, *mod;
	uint64_t off, size;
	char *text;
	size_t len;

	t_ok(hvtrace_ksyms_parse(image, strlen(image), &ks));
	t_ok(hvtrace_ksyms_parse(mods, strlen(mods), &m));
	t_eq(hvtrace_ksyms_add_modules(ks, m), 4);
	t_ok(hvtrace_ksyms_lookup(ks, 0xffffffffc0400150ull, &name, &off, &size,
				  &mod));
	t_assert(!strcmp(name, "softdog_fire") && !strcmp(mod, "softdog"));
	t_equ(off, 0x10);
	t_equ(size, 0xc0);
	t_ok(hvtrace_ksyms_lookup(ks, 0xffffffff81000180ull, &name, &off, &size,
				  &mod));
	t_assert(!strcmp(name, "do_one") && !mod);
	t_equ(size, 0x100);
	t_eq(hvtrace_ksyms_lookup(ks, 0xffffffff90000000ull, &name, NULL, NULL,
				  NULL),
	     -ENOENT);
	t_ok(hvtrace_ksyms_get_info(ks, &info));
	t_eq(info.symbols, 7);
	t_eq(info.modules, 2);
	/* The text: the image, then the modules, as a KALLSYMS section. */
	t_ok(hvtrace_ksyms_text(ks, &text, &len));
	t_assert(strstr(text, "ffffffffc0400140 t softdog_fire\t[softdog]\n"));
	t_assert(!strstr(text, "stale_image_symbol"));
	free(text);
	/* A table with no module adds nothing; NULL is refused. */
	t_ok(hvtrace_ksyms_parse(image, strlen(image), &none));
	t_eq(hvtrace_ksyms_add_modules(ks, none), 0);
	t_eq(hvtrace_ksyms_add_modules(ks, NULL), -EINVAL);
	t_eq(hvtrace_ksyms_add_modules(NULL, m), -EINVAL);
	t_ok(hvtrace_ksyms_get_info(ks, &info));
	t_eq(info.symbols, 7);
	hvtrace_ksyms_free(none);
	hvtrace_ksyms_free(m);
	hvtrace_ksyms_free(ks);
}

int main(void)
{
	test_valid();
	test_hostile_lines();
	test_refused();
	test_add_modules();
	printf("PASS\n");
	return 0;
}
