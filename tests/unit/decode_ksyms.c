// SPDX-License-Identifier: MIT
/*
 * A guest kernel's function names come from that guest's symbols only:
 * the real Debian 6.12 guest ring tests/fuzz/corpus/kring_parse/
 * real-612-128k, whose ftrace:print records ("%ps: %s", REC->ip) carry
 * ip 0xffffffff8f8377ff, decoded through hvtrace_decoder_new_kernel() of
 * a guest formats folder (that guest's print and sched_switch formats,
 * tests/fuzz/corpus/kmap/guest-612-formats):
 *
 *  - with a kallsyms file naming the ip (that kernel's own lines around
 *    tracing_mark_write, read from another boot's RAM by
 *    hvtrace_ksyms_from_kring() and moved to this boot's KASLR base,
 *    after a malformed line that libtraceevent's own parser would have
 *    stopped at): every print line reads "tracing_mark_write: hvt-mark
 *    N", and the ip is tracing_mark_write+0x11f;
 *  - without it, or with one whose addresses are all 0 (kptr_restrict),
 *    or one whose last symbol lies below the ip: the ip in hex, never a
 *    name from the host's /proc/kallsyms;
 *  - the folder's saved_cmdlines names pid 298 "CPU 0/TCG" (a name
 *    with spaces, as QEMU's vCPU threads have): the whole name prints;
 *  - the kernel's forms: "%pS" prints tracing_mark_write+0x11f/0x280,
 *    a module's symbol adds " [MOD]" (for "%ps" too);
 *  - hvtrace_decoder_set_ksyms(): a table given later names it
 *    (tracing_mark_write), NULL takes the names away again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace.h>

#include "hvt_test.h"
#include "hvt_src.h"

#define IP_HEX	"0xffffffff8f8377ff: hvt-mark "

static char dir[256];
static unsigned int named_298;

static void put(const char *rel, const char *text, size_t len)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "wb");
	t_assert(f);
	t_eq(fwrite(text, 1, len, f), len);
	t_eq(fclose(f), 0);
}

/* events/SYS/NAME/format from the seed: "name: NAME" .. its print fmt. */
static void put_format(const char *blob, size_t len, const char *sys,
		       const char *name)
{
	char rel[128], path[512];
	size_t n;
	const char *s = t_format_in(blob, len, name, &n);

	snprintf(path, sizeof(path), "%s/events/%s", dir, sys);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/%s/%s", dir, sys, name);
	t_ok(mkdir(path, 0700));
	snprintf(rel, sizeof(rel), "events/%s/%s/format", sys, name);
	put(rel, s, n);
}

static void make_dir(void)
{
	static const char header_page[] =
		"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
		"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
		"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
		"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
	char p[4200], *fmts;
	size_t len;

	snprintf(dir, sizeof(dir), "/tmp/hvt-decode-ksyms.XXXXXX");
	t_assert(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/events", dir);
	t_ok(mkdir(p, 0700));
	put("events/header_page", header_page, sizeof(header_page) - 1);
	put("saved_cmdlines", "1 init\n298 CPU 0/TCG\n",
	    strlen("1 init\n298 CPU 0/TCG\n"));
	fmts = t_src_slurp("tests/fuzz/corpus/kmap/guest-612-formats", &len);
	put_format(fmts, len, "sched", "sched_switch");
	put_format(fmts, len, "ftrace", "print");
	free(fmts);
}

/*
 * Decode the whole ring with @d; every print line must hold @want
 * followed by its mark number.  Returns the lines checked.
 */
static unsigned int check_prints(struct hvtrace_decoder *d, const char *want)
{
	static char line[4096];
	struct hvtrace_ring *rings[2];
	struct hvtrace_record rec;
	struct hvtrace_merge *m;
	struct hvtrace_kring *k;
	unsigned int n = 0;
	char p[4200];
	int ret;

	snprintf(p, sizeof(p), "%s/tests/fuzz/corpus/kring_parse/real-612-128k",
		 t_srctree());
	t_ok(hvtrace_kring_open(p, 0, &k));
	t_ok(hvtrace_ring_open_kring(k, 0, &rings[0]));
	t_ok(hvtrace_ring_open_kring(k, 1, &rings[1]));
	t_ok(hvtrace_merge_new(rings, 2, 0, &m));
	while ((ret = hvtrace_merge_next(m, &rec, true)) == 1) {
		uint16_t id;

		memcpy(&id, rec.data, 2);
		if (id != 5)
			continue;
		t_ok(hvtrace_decoder_format(d, &rec, rec.ts, 0, line,
					    sizeof(line)));
		if (!strstr(line, want))
			t_fail("print %u: expected \"%s\" in: %s", n, want,
			       line);
		/* saved_cmdlines' name of 298 has spaces, as a QEMU
		 * vCPU thread's "CPU 0/TCG": all of it is the name. */
		if (strstr(line, "-298 ")) {
			if (!strstr(line, " CPU 0/TCG-298 "))
				t_fail("print %u: pid 298 is not named "
				       "\"CPU 0/TCG\": %s",
				       n, line);
			named_298++;
		}
		n++;
	}
	t_eq(ret, 0);
	t_assert(n >= 10);
	hvtrace_merge_free(m);
	hvtrace_ring_close(rings[0]);
	hvtrace_ring_close(rings[1]);
	hvtrace_kring_close(k);
	return n;
}

/* The print format's conversion of the ip: %ps as the kernel has it,
 * or another (%pS). */
static void print_conv(const char *conv)
{
	static char f[65536];
	char p[512], *at;
	size_t len;
	FILE *o;

	snprintf(p, sizeof(p), "%s/events/ftrace/print/format", dir);
	o = fopen(p, "rb");
	t_assert(o);
	len = fread(f, 1, sizeof(f) - 1, o);
	t_assert(len > 0 && len < sizeof(f) - 1);
	f[len] = '\0';
	t_eq(fclose(o), 0);
	at = strstr(f, "\"%ps: %s\"");
	if (!at)
		at = strstr(f, "\"%pS: %s\"");
	t_assert(at);
	memcpy(at + 1, conv, 3);
	o = fopen(p, "wb");
	t_assert(o);
	t_eq(fwrite(f, 1, len, o), len);
	t_eq(fclose(o), 0);
}

static unsigned int with_kallsyms(const char *text, const char *want)
{
	struct hvtrace_decoder *d;
	unsigned int n;

	if (text)
		put("kallsyms", text, strlen(text));
	t_ok(hvtrace_decoder_new_kernel(dir, &d));
	n = check_prints(d, want);
	hvtrace_decoder_free(d);
	return n;
}

int main(void)
{
	/* The real 6.12 kernel's lines around tracing_mark_write (from
	 * another boot of it, moved to this ring's KASLR base), after a
	 * line libtraceevent's parser would stop at. */
	static const char named[] =
		"this line is not a symbol\n"
		"0000000000000000 A fixed_percpu_data\n"
		"ffffffff8f600000 T _stext\n"
		"ffffffff8f600000 T _text\n"
		"ffffffff8f837550 t __pfx_tracing_mark_raw_write\n"
		"ffffffff8f837560 t tracing_mark_raw_write\n"
		"ffffffff8f8376d0 t __pfx_tracing_mark_write\n"
		"ffffffff8f8376e0 t tracing_mark_write\n"
		"ffffffff8f837960 T __pfx___trace_array_puts\n"
		"ffffffff8f837970 T __trace_array_puts\n";
	/* The same code as a module's (the image's _text stays). */
	static const char modded[] =
		"ffffffff8f600000 T _text\n"
		"ffffffff8f8376d0 t __pfx_tracing_mark_write\t[hvt_mod]\n"
		"ffffffff8f8376e0 t tracing_mark_write\t[hvt_mod]\n"
		"ffffffff8f837960 T __pfx___trace_array_puts\t[hvt_mod]\n"
		"ffffffff8f837970 T __trace_array_puts\t[hvt_mod]\n";
	static const char zeros[] =
		"0000000000000000 T _text\n"
		"0000000000000000 t tracing_mark_write\n"
		"0000000000000000 t tracing_mark_raw_write\n";
	static const char below[] =
		"ffffffff8f600000 T _text\n"
		"ffffffff8f8376e0 t tracing_mark_write\n";
	struct hvtrace_decoder *d;
	struct hvtrace_ksyms *ks;
	char p[300];
	unsigned int n;

	make_dir();
	n = with_kallsyms(NULL, IP_HEX);
	t_eq(with_kallsyms(named, "tracing_mark_write: hvt-mark "), n);
	t_eq(with_kallsyms(zeros, IP_HEX), n);
	t_eq(with_kallsyms(below, IP_HEX), n);

	/* The kernel's forms (vsprintf's sprint_symbol()): %pS adds the
	 * offset and the size, a module's symbol its module, for %ps too;
	 * the last symbol of a table (size unknown) only at its address. */
	print_conv("%pS");
	t_eq(with_kallsyms(named, "tracing_mark_write+0x11f/0x280: hvt-mark "),
	     n);
	snprintf(p, sizeof(p), "%s/kallsyms", dir);
	t_ok(unlink(p));
	t_eq(with_kallsyms(NULL, IP_HEX), n);
	t_eq(with_kallsyms(modded, "tracing_mark_write+0x11f/0x280 [hvt_mod]: "
				   "hvt-mark "),
	     n);
	print_conv("%ps");
	t_eq(with_kallsyms(modded, "tracing_mark_write [hvt_mod]: hvt-mark "),
	     n);

	/* A table given to the decoder later, then taken away. */
	snprintf(p, sizeof(p), "%s/kallsyms", dir);
	t_ok(unlink(p));
	t_ok(hvtrace_decoder_new_kernel(dir, &d));
	t_ok(hvtrace_ksyms_parse(named, strlen(named), &ks));
	t_ok(hvtrace_decoder_set_ksyms(d, ks));
	t_eq(check_prints(d, "tracing_mark_write: hvt-mark "), n);
	t_ok(hvtrace_decoder_set_ksyms(d, NULL));
	t_eq(check_prints(d, IP_HEX), n);
	hvtrace_decoder_free(d);
	t_ok(hvtrace_ksyms_parse(named, strlen(named), &ks));
	{
		const char *name;
		uint64_t off, size;

		t_ok(hvtrace_ksyms_lookup(ks, 0xffffffff8f8377ffull, &name,
					  &off, &size, NULL));
		t_assert(!strcmp(name, "tracing_mark_write"));
		t_equ(off, 0x11f);
		t_equ(size, 0x280);
	}
	t_eq(hvtrace_decoder_set_ksyms(NULL, ks), -EINVAL);	/* freed */

	t_assert(named_298 > 0);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	t_eq(system(p), 0);
	printf("PASS (%u print lines each)\n", n);
	return 0;
}
