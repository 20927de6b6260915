// SPDX-License-Identifier: MIT
/*
 * A guest kernel's symbols from its RAM (host/lib/ksyms_ram.c): a
 * generator here writes a sparse guest RAM file (a memfd) holding a
 * 6.12 ring (tests/include/kring_img.h, so that hvtrace_kring_open()
 * finds a source), a VMCOREINFO note and the kallsyms tables compressed
 * as scripts/kallsyms.c does (a small token table: the printable
 * characters, four longer tokens, one of them a whole symbol), at chosen
 * physical addresses.  The expected /proc/kallsyms text is made from
 * the same symbol list.
 *
 * Taken, the exact text and info: identity RAM with a negative
 * phys_base (KASLR moved the image further in virtual than in physical
 * memory), absolute per-CPU and relative offsets; the image above 4 GiB
 * with QEMU's 2 GiB low-RAM split; a name of more than 127 tokens (a
 * two-byte length); two equal notes (one); a forged note whose tables do
 * not validate beside the real one (the real one wins).
 *
 * Refused, each with its reason: two different notes whose tables both
 * validate (-ENOTUNIQ naming both offsets), a table outside the image, a
 * token index out of range, unsorted offsets, a table _stext other than
 * the note's, the file truncated inside kallsyms_names, no note
 * (-ENOENT), PAGESIZE other than 4096, a key twice, no phys_base.
 *
 * The same RAM in a VMM process's anonymous memory (/proc/PID/mem)
 * gives the same text.
 *
 * With a directory argument, it also writes the fuzz seeds of
 * tests/fuzz/corpus/ksyms_ram/ (compact images, no ring); with
 * "--onto SEED OUT", a guest RAM file OUT holding the ring image SEED and
 * tables that name its ftrace:print ip (tests/cli/stream_guest_ksyms.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kring_img.h"

#define START_MAP	0xffffffff80000000ull
#define START_KERNEL	0xffffffff81000000ull
#define GIB		(1ull << 30)
#define RELEASE		"6.12.0-hvt-test"
#define BANNER		"Linux version " RELEASE " (test@hvtrace) (gcc 12) #1 SMP"
#define BUILD_ID	"0123456789abcdef0123456789abcdef01234567"

struct sym {
	uint64_t rel;		/* from _text; an 'A' one's value */
	char type;
	const char *name;
};

static char longname[201];

static struct sym syms[] = {
	{ 0x0, 'A', "fixed_percpu_data" },
	{ 0x1000, 'A', "cpu_number" },
	{ 0x0, 'T', "_text" },
	{ 0x0, 'T', "_stext" },
	{ 0x0, 'T', "startup_64" },
	{ 0x10, 't', "secondary_startup_64" },
	/* Where the real 6.12 guest of the kring_parse seed real-612-128k
	 * has them (--onto). */
	{ 0x2376e0, 't', "tracing_mark_write" },
	{ 0x237960, 't', "tracing_mark_raw_write" },
	{ 0x300000, 'T', longname },
	{ 0x700000, 'D', "init_uts_ns" },
	{ 0x710000, 'D', "linux_banner" },
	{ 0x1400000, 'B', "_end" },
};
#define NSYMS (sizeof(syms) / sizeof(syms[0]))

/* Longer tokens; the last is a whole symbol: a name of one token. */
static const char *const multi[] = { "tracing_", "mark_", "write",
				     "Dinit_uts_ns" };
#define NMULTI (sizeof(multi) / sizeof(multi[0]))

struct gen {
	uint64_t ram;		/* bytes of the file */
	uint64_t lowmem;	/* 0: identity; else QEMU's low-RAM split */
	uint64_t load_pa;	/* _text's physical address */
	uint64_t kaslr;		/* _text - START_KERNEL */
	bool absolute;		/* CONFIG_KALLSYMS_ABSOLUTE_PERCPU */
	bool compact;		/* a small image (fuzz seeds), no ring */
	uint64_t note;		/* RAM offset of the note */
	/* layout, from _text */
	uint64_t uts, num, rb, tidx, ttab, offs, names;
	/* faults */
	int swap;		/* swap offsets swap, swap + 1 */
	uint16_t bad_tidx;	/* token 'A''s index, when not 0 */
	uint64_t stext_delta;	/* added to the note's SYMBOL(_stext) */
	uint64_t names_va;	/* the note's kallsyms_names, when not 0 */
	const char *extra;	/* added to the note's text */
	const char *pagesize;
	bool no_physbase;
	const char *banner;	/* at linux_banner (then "\n"), when not NULL */
};

static uint8_t *ram;	/* the compact image */

static uint64_t text_va(const struct gen *g)
{
	return START_KERNEL + g->kaslr;
}

static uint64_t phys_base(const struct gen *g)
{
	return g->load_pa - (text_va(g) - START_MAP);	/* mod 2^64 */
}

static uint64_t va_off(const struct gen *g, uint64_t va)
{
	uint64_t pa = va - START_MAP + phys_base(g);

	return g->lowmem && pa >= 4 * GIB ? pa - 4 * GIB + g->lowmem : pa;
}

static void put(const struct gen *g, uint64_t off, const void *p, size_t n)
{
	if (g->compact) {
		t_assert(off + n <= g->ram);
		memcpy(ram + off, p, n);
		return;
	}
	t_assert(pwrite(mfd, p, n, (off_t)off) == (ssize_t)n);
}

static void put_va(const struct gen *g, uint64_t rel, const void *p,
		   size_t n)
{
	put(g, va_off(g, text_va(g) + rel), p, n);
}

static uint64_t sym_addr(const struct gen *g, const struct sym *s)
{
	return s->type == 'A' ? s->rel : text_va(g) + s->rel;
}

/* The symbols a configuration has: relative offsets have no small
 * absolute ones. */
static bool sym_in(const struct gen *g, const struct sym *s)
{
	return g->absolute || s->type != 'A';
}

static char *note_text(const struct gen *g, uint64_t names_va)
{
	static char t[4096];
	uint64_t tv = text_va(g);
	size_t n;

	n = (size_t)snprintf(t, sizeof(t),
		"OSRELEASE=%s\n"
		"BUILD-ID=" BUILD_ID "\n"
		"PAGESIZE=%s\n"
		"SYMBOL(init_uts_ns)=%llx\n"
		"OFFSET(uts_namespace.name)=0\n"
		"SYMBOL(_stext)=%llx\n"
		"SYMBOL(kallsyms_names)=%llx\n"
		"SYMBOL(kallsyms_num_syms)=%llx\n"
		"SYMBOL(kallsyms_token_table)=%llx\n"
		"SYMBOL(kallsyms_token_index)=%llx\n"
		"SYMBOL(kallsyms_offsets)=%llx\n"
		"SYMBOL(kallsyms_relative_base)=%llx\n"
		"%s%lld\n"
		"KERNELOFFSET=%llx\n"
		"NUMBER(KERNEL_IMAGE_SIZE)=1073741824\n%s",
		RELEASE, g->pagesize ? g->pagesize : "4096",
		(unsigned long long)(tv + g->uts),
		(unsigned long long)(tv + g->stext_delta),
		(unsigned long long)names_va,
		(unsigned long long)(tv + g->num),
		(unsigned long long)(tv + g->ttab),
		(unsigned long long)(tv + g->tidx),
		(unsigned long long)(tv + g->offs),
		(unsigned long long)(tv + g->rb),
		g->no_physbase ? "NUMBER(phys_bass)=" : "NUMBER(phys_base)=",
		(long long)phys_base(g), (unsigned long long)g->kaslr,
		g->extra ? g->extra : "");
	t_assert(n < sizeof(t) - 64);
	return t;
}

static void put_note(const struct gen *g, uint64_t off, const char *text)
{
	uint8_t page[4096] = { 0 };
	uint32_t h[3] = { 11, (uint32_t)strlen(text), 0 };

	memcpy(page, h, 12);
	memcpy(page + 12, "VMCOREINFO\0\0", 12);
	memcpy(page + 24, text, h[1]);	/* then an all-zero note */
	put(g, off, page, sizeof(page));
}

/* Token numbers of "type name", greedy: the long tokens first. */
static size_t compress(const char *s, uint8_t *tok)
{
	size_t n = 0, i, m;

	while (*s) {
		for (m = 0; m < NMULTI; m++)
			if (!strncmp(s, multi[m], strlen(multi[m])))
				break;
		if (m < NMULTI) {
			tok[n++] = (uint8_t)(m + 1);
			s += strlen(multi[m]);
			continue;
		}
		tok[n++] = (uint8_t)*s++;
	}
	for (i = 0; i < n; i++)
		t_assert(tok[i] <= NMULTI || (tok[i] > 0x20 && tok[i] < 0x7f));
	return n;
}

/* Write the image of @g; the expected text into @want. */
static void generate(const struct gen *g, char *want, size_t wsize)
{
	uint8_t names[8192], ttab[1024], tok[600];
	uint16_t tidx[256];
	int32_t offs[NSYMS];
	char full[600], rel[65] = { 0 };
	uint64_t rb = text_va(g);
	uint32_t num = 0;
	size_t nn = 0, tn = 0, w = 0, i, n;

	/* The token table: the long tokens, then each printable character;
	 * the other slots share '?'. */
	for (i = 0; i < NMULTI; i++) {
		tidx[i + 1] = (uint16_t)tn;
		memcpy(ttab + tn, multi[i], strlen(multi[i]) + 1);
		tn += strlen(multi[i]) + 1;
	}
	for (i = 0x21; i < 0x7f; i++) {
		tidx[i] = (uint16_t)tn;
		ttab[tn++] = (uint8_t)i;
		ttab[tn++] = 0;
	}
	for (i = 0; i < 256; i++)
		if (!(i >= 1 && i <= NMULTI) && !(i >= 0x21 && i < 0x7f))
			tidx[i] = tidx['?'];
	if (g->bad_tidx)
		tidx['A'] = g->bad_tidx;

	for (i = 0; i < NSYMS; i++) {
		const struct sym *s = &syms[i];
		uint64_t a = sym_addr(g, s);

		if (!sym_in(g, s))
			continue;
		snprintf(full, sizeof(full), "%c%s", s->type, s->name);
		n = compress(full, tok);
		if (n > 127) {
			names[nn++] = (uint8_t)(0x80 | (n & 0x7f));
			names[nn++] = (uint8_t)(n >> 7);
		} else {
			names[nn++] = (uint8_t)n;
		}
		memcpy(names + nn, tok, n);
		nn += n;
		if (g->absolute)
			offs[num] = s->type == 'A' ? (int32_t)a :
						    (int32_t)(rb - 1 - a);
		else
			offs[num] = (int32_t)(uint32_t)(a - rb);
		num++;
		w += (size_t)snprintf(want + w, wsize - w, "%016llx %c %s\n",
				      (unsigned long long)a, s->type,
				      s->name);
	}
	if (g->swap) {
		int32_t x = offs[g->swap];

		offs[g->swap] = offs[g->swap + 1];
		offs[g->swap + 1] = x;
	}
	t_assert(nn < sizeof(names) && tn < sizeof(ttab));
	put_va(g, g->num, &num, 4);
	put_va(g, g->rb, &rb, 8);
	put_va(g, g->tidx, tidx, sizeof(tidx));
	put_va(g, g->ttab, ttab, tn);
	put_va(g, g->offs, offs, num * 4);
	put_va(g, g->names, names, nn);
	snprintf(rel, sizeof(rel), "%s", RELEASE);
	put_va(g, g->uts + 130, rel, sizeof(rel));
	if (g->banner) {
		char b[300];

		n = (size_t)snprintf(b, sizeof(b), "%s\n", g->banner);
		put_va(g, 0x710000, b, n + 1);
	}
	put_note(g, g->note, note_text(g, g->names_va ? g->names_va :
						      text_va(g) + g->names));
}

/* A RAM file: the ring in the first 64 KiB, then sparse. */
static void file_new(const struct gen *g)
{
	kimg_612(0xff7afe2e80000000ull, 0xff7afe2e80100000ull);
	t_assert(ftruncate(mfd, 0) == 0);
	img_sync();
	t_assert(ftruncate(mfd, (off_t)g->ram) == 0);
}

static struct gen base(void)
{
	struct gen g = {
		.ram = 64ull << 20,
		.load_pa = 0x2000000,
		.kaslr = 0x1c000000,	/* > load_pa: phys_base < 0 */
		.absolute = true,
		.note = 0x20000,
		.uts = 0x700000,
		.num = 0x800000,
		.rb = 0x800008,
		.tidx = 0x800010,
		.ttab = 0x800400,
		.offs = 0x801000,
		.names = 0x80ff00,	/* crosses a page: the truncation */
		.banner = BANNER,
	};
	return g;
}

static char want[16384];

static struct hvtrace_ksyms *take(const struct gen *g,
				  struct hvtrace_ksyms_info *info)
{
	struct hvtrace_ksyms *ks = NULL;
	struct hvtrace_kring *k;
	size_t len;
	char *text;

	t_ok(hvtrace_kring_open(path, 0, &k));
	t_ok(hvtrace_ksyms_from_kring(k, &ks, info));
	hvtrace_kring_close(k);
	t_ok(hvtrace_ksyms_text(ks, &text, &len));
	if (strcmp(text, want))
		t_fail("decoded:\n%s\nexpected:\n%s", text, want);
	t_eq(len, strlen(want));
	free(text);
	t_equ(info->phys_base, phys_base(g));
	t_equ(info->kaslr_offset, g->kaslr);
	t_equ(info->lowmem, g->lowmem);
	t_eq(info->percpu_absolute, g->absolute);
	/* which kernel: the note's release and build id, the banner when
	 * it names that release */
	t_assert(!strcmp(info->release, RELEASE));
	t_assert(!strcmp(info->build_id, BUILD_ID));
	if (g->banner && !strncmp(g->banner, "Linux version " RELEASE " ",
				  sizeof("Linux version " RELEASE " ") - 1))
		t_assert(!strcmp(info->banner, g->banner));
	else
		t_assert(!strcmp(info->banner, ""));
	return ks;
}

static void refused(const struct gen *g, int err, const char *what)
{
	struct hvtrace_ksyms *ks = NULL;
	struct hvtrace_kring *k;
	int ret;

	t_ok(hvtrace_kring_open(path, 0, &k));
	ret = hvtrace_ksyms_from_kring(k, &ks, NULL);
	hvtrace_kring_close(k);
	if (ret != err || ks)
		t_fail("expected %d (%s), got %d: %s", err, what, ret,
		       hvtrace_last_error());
	if (!strstr(hvtrace_last_error(), what))
		t_fail("expected \"%s\" in: %s", what, hvtrace_last_error());
	(void)g;
}

static void test_taken(void)
{
	struct hvtrace_ksyms_info info;
	struct hvtrace_ksyms *ks;
	struct gen g = base();
	const char *name, *mod;
	uint64_t off, size;

	/* Identity, absolute per-CPU, phys_base negative. */
	file_new(&g);
	generate(&g, want, sizeof(want));
	t_assert((int64_t)phys_base(&g) < 0);
	ks = take(&g, &info);
	t_equ(info.note_offset, g.note);
	t_eq(info.symbols, NSYMS);
	t_eq(info.modules, 0);
	t_ok(hvtrace_ksyms_lookup(ks, text_va(&g) + 0x2376e0 + 0x15f, &name,
				  &off, &size, &mod));
	t_assert(!strcmp(name, "tracing_mark_write") && !mod);
	t_equ(off, 0x15f);
	t_equ(size, 0x280);
	t_ok(hvtrace_ksyms_lookup(ks, text_va(&g) + 0x300001, &name, NULL,
				  NULL, NULL));
	t_assert(!strcmp(name, longname));
	t_eq(hvtrace_ksyms_lookup(ks, 0x1000, NULL, NULL, NULL, NULL),
	     -ENOENT);
	hvtrace_ksyms_free(ks);

	/* Relative offsets; a banner of another release is no banner of
	 * this kernel. */
	g.absolute = false;
	g.banner = "Linux version 6.1.0-other (test@hvtrace) #1 SMP";
	file_new(&g);
	generate(&g, want, sizeof(want));
	ks = take(&g, &info);
	t_eq(info.symbols, NSYMS - 2);
	hvtrace_ksyms_free(ks);

	/* Above 4 GiB, q35's 2 GiB split; an identity read would be out of
	 * the file. */
	g = base();
	g.ram = 2 * GIB + (64ull << 20);
	g.lowmem = 2 * GIB;
	g.load_pa = 4 * GIB + 0x1000000;
	file_new(&g);
	generate(&g, want, sizeof(want));
	ks = take(&g, &info);
	hvtrace_ksyms_free(ks);
	/* ... and the identity layout also inside it: the split still wins
	 * (init_uts_ns reads the release only there). */
	g.ram = 8 * GIB;
	file_new(&g);
	generate(&g, want, sizeof(want));
	ks = take(&g, &info);
	hvtrace_ksyms_free(ks);

	/* Two equal notes: one. */
	g = base();
	file_new(&g);
	generate(&g, want, sizeof(want));
	put_note(&g, 0x30000, note_text(&g, text_va(&g) + g.names));
	ks = take(&g, &info);
	t_equ(info.note_offset, 0x20000);
	hvtrace_ksyms_free(ks);

	/* A forged note (its names elsewhere in the image) first: the
	 * real one wins. */
	file_new(&g);
	g.note = 0x40000;
	generate(&g, want, sizeof(want));
	put_note(&g, 0x10000, note_text(&g, text_va(&g) + 0x900000));
	ks = take(&g, &info);
	t_equ(info.note_offset, 0x40000);
	hvtrace_ksyms_free(ks);
}

static void test_refused(void)
{
	struct gen g = base();

	/* Two different notes, both pointing at the valid tables. */
	file_new(&g);
	generate(&g, want, sizeof(want));
	g.extra = "CRASHTIME=1\n";
	put_note(&g, 0x21000, note_text(&g, text_va(&g) + g.names));
	refused(&g, -ENOTUNIQ, "at 0x20000, 0x21000");

	g = base();
	g.names_va = text_va(&g) + GIB + 0x1000;
	file_new(&g);
	generate(&g, want, sizeof(want));
	refused(&g, -EINVAL, "kallsyms_names at 0x");
	refused(&g, -EINVAL, "outside the kernel image");

	g = base();
	g.bad_tidx = 0xfff0;
	file_new(&g);
	generate(&g, want, sizeof(want));
	refused(&g, -EINVAL, "token 65 (index 65520)");

	g = base();
	g.swap = 5;
	file_new(&g);
	generate(&g, want, sizeof(want));
	refused(&g, -EINVAL, "not sorted");

	g = base();
	g.stext_delta = 0x1000;
	file_new(&g);
	generate(&g, want, sizeof(want));
	refused(&g, -EINVAL, "_stext");

	/* The file ends inside kallsyms_names (page 0x810000 of the image
	 * and the rest gone). */
	g = base();
	file_new(&g);
	generate(&g, want, sizeof(want));
	t_assert(ftruncate(mfd, (off_t)va_off(&g, text_va(&g) + 0x810000)) ==
		 0);
	refused(&g, -EINVAL, "kallsyms_names ends at symbol");

	g = base();
	file_new(&g);
	refused(&g, -ENOENT, "no VMCOREINFO note");

	g = base();
	g.pagesize = "8192";
	file_new(&g);
	generate(&g, want, sizeof(want));
	refused(&g, -EINVAL, "PAGESIZE");

	g = base();
	g.extra = "SYMBOL(_stext)=ffffffff81000000\n";
	file_new(&g);
	generate(&g, want, sizeof(want));
	refused(&g, -EINVAL, "SYMBOL(_stext) twice");

	g = base();
	g.no_physbase = true;
	file_new(&g);
	generate(&g, want, sizeof(want));
	refused(&g, -EINVAL, "x86-64");
}

/*
 * The same RAM in a VMM's private anonymous memory (read through
 * /proc/PID/mem, hvtrace_kring_open_pid()): the same text.
 */
static void test_vmpid(void)
{
	struct hvtrace_ksyms_info info;
	struct hvtrace_ksyms *ks = NULL;
	struct hvtrace_kring *k;
	struct gen g = base();
	int up[2], down[2], st;
	size_t len;
	char *text, b;
	pid_t pid;

	file_new(&g);
	generate(&g, want, sizeof(want));
	t_assert(pipe(up) == 0 && pipe(down) == 0);
	pid = fork();
	t_assert(pid >= 0);
	if (pid == 0) {
		uint8_t *m = mmap(NULL, g.ram + 4096, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		close(up[0]);
		close(down[1]);
		if (m == MAP_FAILED ||
		    mprotect(m, g.ram, PROT_READ | PROT_WRITE) ||
		    pread(mfd, m, g.ram, 0) != (ssize_t)g.ram ||
		    write(up[1], "r", 1) != 1)
			_exit(2);
		while (read(down[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	t_assert(read(up[0], &b, 1) == 1);
	t_ok(hvtrace_kring_open_pid(pid, &k));
	t_ok(hvtrace_ksyms_from_kring(k, &ks, &info));
	hvtrace_kring_close(k);
	t_ok(hvtrace_ksyms_text(ks, &text, &len));
	if (strcmp(text, want))
		t_fail("decoded from the VMM:\n%s\nexpected:\n%s", text,
		       want);
	t_equ(info.note_offset, g.note);
	free(text);
	hvtrace_ksyms_free(ks);
	close(down[1]);
	close(up[0]);
	t_assert(waitpid(pid, &st, 0) == pid);
	t_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Compact images for the fuzz target (no ring: it reads them as RAM). */
static void write_seeds(const char *dir)
{
	static const char *const names[] = { "seed-absolute", "seed-relative",
					      "seed-two-notes", "seed-forged" };
	char p[4200];
	unsigned int i;
	FILE *f;

	for (i = 0; i < 4; i++) {
		struct gen g = {
			.ram = 0x8000, .load_pa = 0x4000, .kaslr = 0x3e000000,
			.absolute = i != 1, .compact = true, .note = 0x1000,
			.uts = 0x1000, .num = 0x2000, .rb = 0x2008,
			.tidx = 0x2010, .ttab = 0x2400, .offs = 0x3000,
			.names = 0x3800,
		};

		ram = calloc(1, g.ram);
		t_assert(ram);
		generate(&g, want, sizeof(want));
		if (i >= 2) {	/* valid and different; forged */
			g.extra = "CRASHTIME=1\n";
			put_note(&g, 0x2000, note_text(&g, text_va(&g) +
				 (i == 2 ? g.names : g.offs)));
		}
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		f = fopen(p, "wb");
		t_assert(f);
		t_eq(fwrite(ram, 1, g.ram, f), g.ram);
		t_eq(fclose(f), 0);
		free(ram);
	}
}

/*
 * A guest RAM file @out: the ring image @seed (a real guest's), then,
 * past it, a VMCOREINFO note and the tables of syms[] with that guest's
 * KASLR base (_text 0xffffffff8f600000): its ftrace:print ip
 * 0xffffffff8f8377ff lies in tracing_mark_write.
 */
static void write_onto(const char *seed, const char *out)
{
	struct gen g = base();
	size_t len;
	uint8_t *buf;
	FILE *f = fopen(seed, "rb");

	t_assert(f);
	buf = malloc(1u << 20);
	t_assert(buf);
	len = fread(buf, 1, 1u << 20, f);
	fclose(f);
	t_assert(len > 0 && len < (1u << 20));
	g.note = (len + 0xfff) & ~0xfffull;	/* the page after the ring */
	g.kaslr = 0xffffffff8f600000ull - START_KERNEL;
	close(mfd);
	mfd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	t_assert(mfd >= 0);
	t_assert(pwrite(mfd, buf, len, 0) == (ssize_t)len);
	t_assert(ftruncate(mfd, (off_t)g.ram) == 0);
	generate(&g, want, sizeof(want));
	t_eq(close(mfd), 0);
	free(buf);
}

int main(int argc, char **argv)
{
	memset(longname, 'x', 200);
	memcpy(longname, "a_name_of_200_tokens_", 21);
	mfd = memfd_create("ksyms_ram", MFD_CLOEXEC);
	t_assert(mfd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	if (argc == 4 && !strcmp(argv[1], "--onto")) {
		write_onto(argv[2], argv[3]);
		return 0;
	}
	if (argc > 1) {
		write_seeds(argv[1]);
		return 0;
	}
	test_taken();
	test_refused();
	test_vmpid();
	close(mfd);
	free(img);
	printf("PASS\n");
	return 0;
}
