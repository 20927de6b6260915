// SPDX-License-Identifier: MIT
/*
 * libhvtrace: a guest kernel's symbols read from its RAM
 * (hvtrace_ksyms_from_kring()), with no help from the guest: live, or
 * after it panicked or its VMM was killed.
 *
 * At boot, a kernel with CONFIG_VMCORE_INFO writes one ELF note into a
 * page of its own (kernel/vmcore_info.c):
 *
 *   u32 n_namesz 11, u32 n_descsz (the text's bytes), u32 n_type 0,
 *   "VMCOREINFO\0" padded to 12, then the text: "KEY=VALUE\n" lines
 *   (OSRELEASE=, PAGESIZE=, SYMBOL(name)=hex, NUMBER(name)=decimal,
 *   OFFSET(type.field)=decimal, KERNELOFFSET=hex, ...)
 *
 * and, with CONFIG_KALLSYMS (6.0+), SYMBOL()s of its own compressed
 * symbol table (kernel/kallsyms.c, made by scripts/kallsyms.c):
 *
 *   kallsyms_num_syms      u32
 *   kallsyms_names         per symbol: a length (one byte; bit 7 set:
 *                          (b0 & 0x7f) | b1 << 7), then that many token
 *                          numbers; the tokens' texts joined are the type
 *                          letter and the name
 *   kallsyms_token_table   256 NUL-ended token texts
 *   kallsyms_token_index   u16[256]: each token's offset in the table
 *   kallsyms_offsets       s32 per symbol: with ABSOLUTE_PERCPU, >= 0 is
 *                          the address itself, < 0 is relative_base - 1 -
 *                          offset; else relative_base + (u32)offset
 *   kallsyms_relative_base u64
 *
 * The addresses are the kernel's virtual ones.  x86-64 maps the image
 * at __START_KERNEL_map: pa = va - 0xffffffff80000000 + phys_base (mod
 * 2^64: phys_base is negative when KASLR moved the image further in
 * virtual than in physical memory).  A physical address is the RAM
 * file's offset below QEMU's low-RAM split; above 4 GiB it is pa - 4 GiB
 * + the split (q35: 2 GiB; pc: 3 or 3.5 GiB).  The split is chosen by
 * validation: the first of none, 2, 3 and 3.5 GiB at which init_uts_ns
 * holds the note's OSRELEASE.
 *
 * Everything here is hostile input (a guest user can write a fake note
 * into its own pages; the kernel can be corrupt): the note's text is
 * printable "KEY=VALUE" lines with each used key once and PAGESIZE=4096;
 * every table lies in [_stext, _stext + KERNEL_IMAGE_SIZE) and inside the
 * RAM; num_syms <= 4 Mi; tokens non-empty, printable and NUL-ended
 * inside a 64 KiB table; names <= 511 bytes; addresses non-decreasing;
 * the table's own _stext equals SYMBOL(_stext).  Equal notes count as
 * one; of notes that differ, the one whose tables validate is taken,
 * and when not exactly one does, none is (-ENOTUNIQ, naming them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "kring-local.h"
#include "ksyms-local.h"

#define KSR_PAGE	4096u
/* namesz, descsz, type, "VMCOREINFO\0\0" */
#define KSR_HDR		24u
#define KSR_DESC_MIN	64u
/* Different notes the scan keeps; one more is refused. */
#define KSR_NOTES_MAX	8u
/* __START_KERNEL_map */
#define KSR_START_MAP	0xffffffff80000000ull
#define KSR_PA_MAX	(1ull << 52)
#define KSR_GIB		(1ull << 30)
/* x86-64 KERNEL_IMAGE_SIZE with KASLR */
#define KSR_IMAGE_MAX	KSR_GIB
#define KSR_SYMS_MAX	(4u << 20)
#define KSR_TOKTAB_MAX	65536u
#define KSR_NAME_MAX	512u	/* KSYM_NAME_LEN: type letter + 511 */
#define KSR_CHUNK	65536u
#define KSR_MEM_CHUNK	(2u << 20)

struct ksr_note {
	uint64_t off;		/* RAM offset of the note */
	uint32_t len;		/* bytes of text */
	char text[KSR_PAGE];
};

enum {
	V_OSRELEASE, V_PAGESIZE, V_STEXT, V_NAMES, V_NUM, V_TOKTAB, V_TOKIDX,
	V_OFFSETS, V_RELBASE, V_PHYSBASE, V_KASLR, V_UTS, V_UTSNAME,
	V_IMGSIZE, V_BUILDID, V_NR
};

enum ksr_kind { K_STR, K_HEX, K_DEC, K_ID };

static const struct {
	const char *key;
	enum ksr_kind kind;
	bool required;
} ksr_keys[V_NR] = {
	[V_OSRELEASE] = { "OSRELEASE", K_STR, true },
	[V_PAGESIZE] = { "PAGESIZE", K_DEC, true },
	[V_STEXT] = { "SYMBOL(_stext)", K_HEX, true },
	[V_NAMES] = { "SYMBOL(kallsyms_names)", K_HEX, true },
	[V_NUM] = { "SYMBOL(kallsyms_num_syms)", K_HEX, true },
	[V_TOKTAB] = { "SYMBOL(kallsyms_token_table)", K_HEX, true },
	[V_TOKIDX] = { "SYMBOL(kallsyms_token_index)", K_HEX, true },
	[V_OFFSETS] = { "SYMBOL(kallsyms_offsets)", K_HEX, true },
	[V_RELBASE] = { "SYMBOL(kallsyms_relative_base)", K_HEX, true },
	[V_PHYSBASE] = { "NUMBER(phys_base)", K_DEC, true },
	[V_KASLR] = { "KERNELOFFSET", K_HEX, true },
	[V_UTS] = { "SYMBOL(init_uts_ns)", K_HEX, true },
	[V_UTSNAME] = { "OFFSET(uts_namespace.name)", K_DEC, true },
	[V_IMGSIZE] = { "NUMBER(KERNEL_IMAGE_SIZE)", K_DEC, false },
	[V_BUILDID] = { "BUILD-ID", K_ID, false },
};

struct ksr_vmci {
	char osrelease[65];
	char build_id[129];	/* lower-case hex, even length */
	uint64_t v[V_NR];
	uint32_t have;		/* bit per V_* */
};

struct ksr {
	struct hvtrace_kring *k;
	const struct ksr_note *note;
	struct ksr_vmci vi;
	uint64_t lowmem;
	uint64_t img_lo, img_hi;	/* [_stext, + KERNEL_IMAGE_SIZE) */
	/* allocations, freed by the caller even after a SIGBUS */
	int32_t *offs;
	uint8_t *chunk;
	struct hvtrace_ksyms *ks;
};

/* --- the note's text ------------------------------------------------------ */

static int ksr_value(const char *v, size_t n, enum ksr_kind kind,
		     uint64_t *out)
{
	uint64_t x = 0;
	bool neg = false;
	size_t i = 0;

	if (kind == K_HEX) {
		if (!n || n > 16)
			return -EINVAL;
		for (; i < n; i++) {
			char c = v[i];
			int d = c >= '0' && c <= '9' ? c - '0' :
				c >= 'a' && c <= 'f' ? c - 'a' + 10 :
				c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

			if (d < 0)
				return -EINVAL;
			x = x << 4 | (uint64_t)d;
		}
		*out = x;
		return 0;
	}
	if (n && v[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i == n || n - i > 19)
		return -EINVAL;
	for (; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (x > (uint64_t)INT64_MAX)
		return -EINVAL;
	*out = neg ? (uint64_t)-(int64_t)x : x;
	return 0;
}

/* A BUILD-ID value: 2 to 128 hex digits, an even number; lower case into
 * @out (129 bytes). */
static int ksr_build_id(const char *v, size_t n, char *out)
{
	size_t i;

	if (n < 2 || n > 128 || n % 2)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		char c = v[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -EINVAL;
		out[i] = c;
	}
	out[n] = '\0';
	return 0;
}

/* Parse and check the note's text; -EINVAL with the reason said. */
static int ksr_parse_note(const struct ksr_note *no, struct ksr_vmci *vi)
{
	const char *p = no->text, *end = no->text + no->len;
	unsigned int i;

	memset(vi, 0, sizeof(*vi));
	while (p < end && *p) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eq, *c;
		size_t kl;

		if (!nl)
			return hvt_err(-EINVAL, "a line without its newline");
		for (c = p; c < nl; c++)
			if ((unsigned char)*c < 0x20 ||
			    (unsigned char)*c > 0x7e)
				return hvt_err(-EINVAL, "a control character "
							"at text offset %zu",
					       (size_t)(c - no->text));
		eq = memchr(p, '=', (size_t)(nl - p));
		if (!eq)
			return hvt_err(-EINVAL, "a line without '=' at text "
						"offset %zu",
				       (size_t)(p - no->text));
		kl = (size_t)(eq - p);
		for (i = 0; i < V_NR; i++) {
			if (strlen(ksr_keys[i].key) != kl ||
			    memcmp(ksr_keys[i].key, p, kl))
				continue;
			if (vi->have & (1u << i))
				return hvt_err(-EINVAL, "%s twice",
					       ksr_keys[i].key);
			vi->have |= 1u << i;
			if (ksr_keys[i].kind == K_STR) {
				size_t vl = (size_t)(nl - eq - 1);

				if (!vl || vl >= sizeof(vi->osrelease))
					return hvt_err(-EINVAL, "bad %s",
						       ksr_keys[i].key);
				memcpy(vi->osrelease, eq + 1, vl);
				vi->osrelease[vl] = '\0';
			} else if (ksr_keys[i].kind == K_ID) {
				if (ksr_build_id(eq + 1, (size_t)(nl - eq - 1),
						 vi->build_id))
					return hvt_err(-EINVAL, "bad %s",
						       ksr_keys[i].key);
			} else if (ksr_value(eq + 1, (size_t)(nl - eq - 1),
					     ksr_keys[i].kind, &vi->v[i])) {
				return hvt_err(-EINVAL, "bad value of %s",
					       ksr_keys[i].key);
			}
			break;
		}
		p = nl + 1;
	}
	for (i = 0; i < V_NR; i++)
		if (ksr_keys[i].required && !(vi->have & (1u << i)))
			return hvt_err(-EINVAL, "no %s (%s)", ksr_keys[i].key,
				       i == V_PHYSBASE || i == V_KASLR ?
					       "not an x86-64 kernel's" :
				       i >= V_NAMES && i <= V_RELBASE ?
					       "a kernel without CONFIG_KALLSYMS "
					       "or older than 6.0" :
					       "not a kernel's vmcoreinfo");
	if (vi->v[V_PAGESIZE] != KSR_PAGE)
		return hvt_err(-EINVAL, "PAGESIZE=%llu, not 4096",
			       (unsigned long long)vi->v[V_PAGESIZE]);
	if (!(vi->have & (1u << V_IMGSIZE)))
		vi->v[V_IMGSIZE] = KSR_IMAGE_MAX;
	if (!vi->v[V_IMGSIZE] || vi->v[V_IMGSIZE] > KSR_IMAGE_MAX)
		return hvt_err(-EINVAL, "KERNEL_IMAGE_SIZE %llu: not an x86-64 "
					"kernel's",
			       (unsigned long long)vi->v[V_IMGSIZE]);
	if (vi->v[V_STEXT] < KSR_START_MAP ||
	    vi->v[V_STEXT] - KSR_START_MAP >= KSR_IMAGE_MAX)
		return hvt_err(-EINVAL, "_stext 0x%llx is not in the kernel "
					"image's mapping",
			       (unsigned long long)vi->v[V_STEXT]);
	if (vi->v[V_UTSNAME] > 4096)
		return hvt_err(-EINVAL, "OFFSET(uts_namespace.name) %llu",
			       (unsigned long long)vi->v[V_UTSNAME]);
	return 0;
}

/* --- kernel addresses to RAM offsets ------------------------------------ */

/*
 * The RAM offset of [va, va + n), which must lie in the kernel image's
 * range and in the RAM.  0 or -ERANGE (nothing said: the caller names
 * what).
 */
static int ksr_at(const struct ksr *r, uint64_t va, uint64_t n,
		  uint64_t *off)
{
	uint64_t pa, o;

	if (va < r->img_lo || va > r->img_hi || n > r->img_hi - va)
		return -ERANGE;
	pa = va - KSR_START_MAP + r->vi.v[V_PHYSBASE];
	if (pa >= KSR_PA_MAX || pa + n > KSR_PA_MAX)
		return -ERANGE;
	if (!r->lowmem || pa + n <= r->lowmem)
		o = pa;
	else if (pa >= 4 * KSR_GIB)
		o = pa - 4 * KSR_GIB + r->lowmem;
	else
		return -ERANGE;	/* in the hole, or across the split */
	if (o > r->k->size || n > r->k->size - o)
		return -ERANGE;
	*off = o;
	return 0;
}

static int ksr_table(const struct ksr *r, uint64_t va, uint64_t n,
		     const char *what, uint64_t *off)
{
	if (ksr_at(r, va, n, off))
		return hvt_err(-EINVAL, "%s at 0x%llx (%llu bytes) is outside "
					"the kernel image [0x%llx, 0x%llx) or "
					"the RAM",
			       what, (unsigned long long)va,
			       (unsigned long long)n,
			       (unsigned long long)r->img_lo,
			       (unsigned long long)r->img_hi);
	return 0;
}

/* Whether init_uts_ns holds OSRELEASE at the layout r->lowmem. */
static bool ksr_layout_ok(struct ksr *r)
{
	uint64_t off;
	char rel[65];

	if (ksr_at(r, r->vi.v[V_UTS] + r->vi.v[V_UTSNAME] + 130, sizeof(rel),
		   &off))
		return false;
	kr_get(r->k, off, rel, sizeof(rel));
	return !memcmp(rel, r->vi.osrelease, strlen(r->vi.osrelease) + 1);
}

/*
 * Which kernel the table is of, for its event formats: the note's
 * OSRELEASE and BUILD-ID, and the banner the kernel printed at boot
 * (linux_banner, at @banner: its first line if it is printable and says
 * "Linux version RELEASE "; else none).
 */
static void ksr_kernel_id(struct ksr *r, uint64_t banner)
{
	struct hvtrace_ksyms_info *in = &r->ks->info;
	char line[sizeof(in->banner)], *nl;
	size_t rl = strlen(r->vi.osrelease);
	uint64_t off;

	snprintf(in->release, sizeof(in->release), "%s", r->vi.osrelease);
	snprintf(in->build_id, sizeof(in->build_id), "%s", r->vi.build_id);
	if (!banner || ksr_at(r, banner, sizeof(line) - 1, &off))
		return;
	kr_get(r->k, off, line, sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	nl = memchr(line, '\n', sizeof(line) - 1);
	if (!nl)
		return;	/* longer than we keep: none */
	*nl = '\0';
	for (nl = line; *nl; nl++)
		if ((unsigned char)*nl < 0x20 || (unsigned char)*nl > 0x7e)
			return;
	if (strncmp(line, "Linux version ", 14) ||
	    strncmp(line + 14, r->vi.osrelease, rl) || line[14 + rl] != ' ')
		return;
	memcpy(in->banner, line, sizeof(line));
}

/* --- the compressed table ----------------------------------------------- */

struct ksr_stream {
	struct hvtrace_kring *k;
	uint8_t *buf;
	uint64_t off, end;	/* RAM offsets: next byte, end of the range */
	uint64_t boff;
	uint32_t blen;
};

static int ksr_byte(struct ksr_stream *s, uint8_t *b)
{
	if (s->off >= s->end)
		return -1;
	if (s->off < s->boff || s->off >= s->boff + s->blen) {
		uint64_t n = s->end - s->off;

		s->blen = n < KSR_CHUNK ? (uint32_t)n : KSR_CHUNK;
		s->boff = s->off;
		kr_get(s->k, s->off, s->buf, s->blen);
	}
	*b = s->buf[s->off++ - s->boff];
	return 0;
}

static int ksr_decode(struct ksr *r)
{
	uint16_t tidx[256], tlen[256];
	char *toks, name[KSR_NAME_MAX + 1];
	uint64_t off, off2, rb, prev = 0, tt_n, banner = 0;
	struct ksr_stream s = { .k = r->k };
	uint32_t num, i, j, t;
	bool absolute = false, stext = false;
	const char *why = NULL;
	int ret;

	if ((ret = ksr_table(r, r->vi.v[V_NUM], 4, "kallsyms_num_syms",
			     &off)))
		return ret;
	kr_get(r->k, off, &num, 4);
	if (!num || num > KSR_SYMS_MAX)
		return hvt_err(-EINVAL, "kallsyms_num_syms %u: not in 1..%u",
			       num, KSR_SYMS_MAX);
	if ((ret = ksr_table(r, r->vi.v[V_TOKIDX], sizeof(tidx),
			     "kallsyms_token_index", &off)) ||
	    (ret = ksr_table(r, r->vi.v[V_RELBASE], 8,
			     "kallsyms_relative_base", &off2)))
		return ret;
	kr_get(r->k, off, tidx, sizeof(tidx));
	kr_get(r->k, off2, &rb, 8);
	/* The token table: up to 64 KiB, less at the image's or RAM's end. */
	for (tt_n = KSR_TOKTAB_MAX; tt_n; tt_n /= 2)
		if (!ksr_at(r, r->vi.v[V_TOKTAB], tt_n, &off))
			break;
	if (!tt_n)
		return ksr_table(r, r->vi.v[V_TOKTAB], 1,
				 "kallsyms_token_table", &off);
	r->chunk = malloc(KSR_TOKTAB_MAX + KSR_CHUNK);
	r->offs = malloc((size_t)num * 4);
	r->ks = hvt_ks_new();
	if (!r->chunk || !r->offs || !r->ks)
		return hvt_err(-ENOMEM, "out of memory");
	toks = (char *)r->chunk + KSR_CHUNK;
	kr_get(r->k, off, toks, tt_n);
	for (t = 0; t < 256; t++) {
		const char *z = tidx[t] < tt_n ?
			memchr(toks + tidx[t], '\0', tt_n - tidx[t]) : NULL;
		size_t n = z ? (size_t)(z - toks - tidx[t]) : 0;

		if (!n || n > KSR_NAME_MAX ||
		    !hvt_ks_printable(toks + tidx[t], n))
			return hvt_err(-EINVAL, "kallsyms token %u (index %u): "
						"empty, too long, not "
						"printable or not NUL-ended "
						"inside the token table (%llu "
						"bytes): token index out of "
						"range or a bad table",
				       t, tidx[t], (unsigned long long)tt_n);
		tlen[t] = (uint16_t)n;
	}
	if ((ret = ksr_table(r, r->vi.v[V_OFFSETS], (uint64_t)num * 4,
			     "kallsyms_offsets", &off)))
		return ret;
	kr_get(r->k, off, r->offs, (size_t)num * 4);
	for (i = 0; i < num && !absolute; i++)
		absolute = r->offs[i] < 0;

	/* The names stream: from kallsyms_names to the image's end. */
	if ((ret = ksr_table(r, r->vi.v[V_NAMES], 1, "kallsyms_names", &off)))
		return ret;
	s.buf = r->chunk;
	s.off = off;
	s.end = off + (r->img_hi - r->vi.v[V_NAMES]);
	if (s.end > r->k->size)
		s.end = r->k->size;
	s.boff = s.end;
	for (i = 0; i < num; i++) {
		uint64_t addr;
		uint32_t len, n = 0;
		uint8_t b, b2;

		if (ksr_byte(&s, &b))
			goto cut;
		len = b;
		if (b & 0x80) {
			if (ksr_byte(&s, &b2))
				goto cut;
			len = (b & 0x7fu) | (uint32_t)b2 << 7;
		}
		if (!len)	/* one token may hold the type and the name */
			return hvt_err(-EINVAL, "kallsyms symbol %u: length %u",
				       i, len);
		for (j = 0; j < len; j++) {
			if (ksr_byte(&s, &b))
				goto cut;
			if (n + tlen[b] > KSR_NAME_MAX)
				return hvt_err(-EINVAL, "kallsyms symbol %u: "
							"name longer than 511 "
							"bytes",
					       i);
			memcpy(name + n, toks + tidx[b], tlen[b]);
			n += tlen[b];
		}
		if (n < 2)
			return hvt_err(-EINVAL, "kallsyms symbol %u: empty "
						"name", i);
		name[n] = '\0';
		if (absolute && r->offs[i] >= 0)
			addr = (uint64_t)r->offs[i];
		else if (absolute)
			addr = rb - 1 - (uint64_t)(int64_t)r->offs[i];
		else
			addr = rb + (uint32_t)r->offs[i];
		if (addr < prev)
			return hvt_err(-EINVAL, "kallsyms symbol %u (%s): "
						"address 0x%llx below the one "
						"before (0x%llx): the offsets "
						"are not sorted",
				       i, name + 1, (unsigned long long)addr,
				       (unsigned long long)prev);
		prev = addr;
		ret = hvt_ks_add(r->ks, addr, name[0], name + 1, n - 1, NULL,
				 0, &why);
		if (ret)
			return hvt_err(ret == -ENOMEM ? ret : -EINVAL,
				       "kallsyms symbol %u: %s", i, why);
		if (!strcmp(name + 1, "linux_banner"))
			banner = addr;
		if (!strcmp(name + 1, "_stext")) {
			uint64_t want = r->vi.v[V_STEXT];

			if (addr != want)
				return hvt_err(-EINVAL, "the table's _stext "
							"0x%llx is not the "
							"note's 0x%llx",
					       (unsigned long long)addr,
					       (unsigned long long)want);
			stext = true;
		}
	}
	if (!stext)
		return hvt_err(-EINVAL, "the table has no _stext");
	r->ks->info.percpu_absolute = absolute;
	r->ks->info.lowmem = r->lowmem;
	ksr_kernel_id(r, banner);
	return hvt_ks_finish(r->ks, "guest RAM's kallsyms");
cut:
	return hvt_err(-EINVAL, "kallsyms_names ends at symbol %u of %u, at the "
				"end of the kernel image or the RAM",
		       i, num);
}

/* Decode the tables a note points at: 0 and r->ks, or an error said. */
static int ksr_try(struct ksr *r)
{
	static const uint64_t splits[] = { 0, 2 * KSR_GIB, 3 * KSR_GIB,
					   3 * KSR_GIB + KSR_GIB / 2 };
	unsigned int i;
	int ret;

	ret = ksr_parse_note(r->note, &r->vi);
	if (ret)
		return ret;
	r->img_lo = r->vi.v[V_STEXT];
	r->img_hi = r->img_lo + r->vi.v[V_IMGSIZE];
	if (r->img_hi < r->img_lo)
		r->img_hi = UINT64_MAX;
	for (i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
		r->lowmem = splits[i];
		if (r->lowmem && r->lowmem >= r->k->size)
			continue;
		if (ksr_layout_ok(r))
			break;
	}
	if (i == sizeof(splits) / sizeof(splits[0]))
		return hvt_err(-EINVAL, "init_uts_ns (0x%llx) does not hold "
					"OSRELEASE=%s at any RAM layout tried "
					"(identity; a low-RAM split of 2, 3 or "
					"3.5 GiB): not this RAM's kernel, or its "
					"image lies elsewhere",
			       (unsigned long long)r->vi.v[V_UTS],
			       r->vi.osrelease);
	return ksr_decode(r);
}

static void ksr_fini(struct ksr *r)
{
	free(r->offs);
	free(r->chunk);
	hvtrace_ksyms_free(r->ks);
	r->offs = NULL;
	r->chunk = NULL;
	r->ks = NULL;
}

/* --- finding the notes -------------------------------------------------- */

struct ksr_scan {
	struct ksr_note *notes;	/* KSR_NOTES_MAX + 1 */
	uint32_t n;
	/* the table chosen; in memory, not a register, as a SIGBUS in the
	 * mapping returns through the guard's longjmp */
	struct hvtrace_ksyms *out;
};

/* The page at @off holds the header of a VMCOREINFO note: keep it. */
static void ksr_consider(struct hvtrace_kring *k, uint64_t off,
			 const uint8_t *page, struct ksr_scan *sc)
{
	uint32_t h[3], i;
	struct ksr_note *no;

	memcpy(h, page, sizeof(h));
	if (h[0] != 11 || h[2] != 0 || h[1] < KSR_DESC_MIN ||
	    h[1] > KSR_PAGE - KSR_HDR ||
	    memcmp(page + 12, "VMCOREINFO\0\0", 12) ||
	    memcmp(page + KSR_HDR, "OSRELEASE=", 10))
		return;
	no = &sc->notes[sc->n];
	no->off = off;
	no->len = h[1];
	memcpy(no->text, page + KSR_HDR, h[1]);
	/* Equal to one kept: the same note (a copy). */
	for (i = 0; i < sc->n; i++)
		if (sc->notes[i].len == no->len &&
		    !memcmp(sc->notes[i].text, no->text, no->len))
			return;
	sc->n++;
	(void)k;
}

static void ksr_scan_map(struct hvtrace_kring *k, struct ksr_scan *sc)
{
	uint64_t off = 0, end = 0;

	while (off <= k->size - KSR_PAGE && sc->n <= KSR_NOTES_MAX) {
		if (off >= end) {
			off_t d = lseek(k->fd, (off_t)(k->foff + off),
					SEEK_DATA);
			off_t h;

			if (d < 0 && errno == ENXIO)
				break;
			if (d < 0) {
				end = k->size;
			} else {
				if ((uint64_t)d < k->foff)
					d = (off_t)k->foff;
				off = ((uint64_t)d - k->foff) &
				      ~(uint64_t)(KSR_PAGE - 1);
				h = lseek(k->fd, d, SEEK_HOLE);
				end = h < 0 ? k->size : (uint64_t)h - k->foff;
				if (end <= off)
					end = off + KSR_PAGE;
			}
			continue;
		}
		if (kr_rd32(k, off) == 11 && kr_rd32(k, off + 8) == 0)
			ksr_consider(k, off, k->map + off, sc);
		off += KSR_PAGE;
	}
}

/*
 * A VMM's memory through /proc/PID/mem, 2 MiB at a time; a chunk that
 * /proc/PID/pagemap says has no page present or swapped is not read
 * (untouched guest RAM), as the ring's scan does.
 */
static int ksr_scan_mem(struct hvtrace_kring *k, struct ksr_scan *sc)
{
	uint64_t pm[KSR_MEM_CHUNK / KSR_PAGE];
	uint8_t *buf = malloc(KSR_MEM_CHUNK);
	uint64_t off, n, i;

	if (!buf)
		return hvt_err(-ENOMEM, "out of memory");
	for (off = 0; off < k->size && sc->n <= KSR_NOTES_MAX;
	     off += KSR_MEM_CHUNK) {
		bool any = k->pagemap < 0;

		n = k->size - off < KSR_MEM_CHUNK ? k->size - off :
						    KSR_MEM_CHUNK;
		if (k->pagemap >= 0) {
			ssize_t got = pread(k->pagemap, pm, n / KSR_PAGE * 8,
					    (off_t)((k->base + off) /
						    KSR_PAGE * 8));

			if (got != (ssize_t)(n / KSR_PAGE * 8))
				any = true;	/* no answer: read it */
			for (i = 0; !any && i < n / KSR_PAGE; i++)
				any = pm[i] >> 62;	/* present, swapped */
		}
		if (!any)
			continue;
		if (pread(k->mem, buf, n, (off_t)(k->base + off)) !=
		    (ssize_t)n)
			continue;
		for (i = 0; i + KSR_PAGE <= n && sc->n <= KSR_NOTES_MAX;
		     i += KSR_PAGE) {
			uint32_t w[3];

			memcpy(w, buf + i, sizeof(w));
			if (w[0] == 11 && w[2] == 0)
				ksr_consider(k, off + i, buf + i, sc);
		}
	}
	free(buf);
	return 0;
}

static int ksr_list(const struct ksr_scan *sc, char *list, size_t size)
{
	size_t len = 0;
	uint32_t i;

	list[0] = '\0';
	for (i = 0; i < sc->n && len < size; i++)
		len += (size_t)snprintf(list + len, size - len, "%s0x%llx",
					i ? ", " : "",
					(unsigned long long)sc->notes[i].off);
	return 0;
}

/* Scan and choose, under the caller's SIGBUS guard. */
static int ksr_run(struct hvtrace_kring *k, struct ksr_scan *sc,
		   struct ksr *r, struct hvtrace_ksyms **out)
{
	char list[256], first[256] = "";
	uint32_t i, good = 0, chosen = 0;
	int ret, first_ret = 0;

	if (k->map)
		ksr_scan_map(k, sc);
	else if ((ret = ksr_scan_mem(k, sc)))
		return ret;
	if (!sc->n)
		return hvt_err(-ENOENT, "%s: no VMCOREINFO note in this %s "
					"(a kernel without CONFIG_VMCORE_INFO, or "
					"not booted yet)",
			       k->path, k->unit);
	ksr_list(sc, list, sizeof(list));
	if (sc->n > KSR_NOTES_MAX)
		return hvt_err(-ENOTUNIQ, "%s: more than %u different "
					  "VMCOREINFO notes in this %s (at %s, "
					  "...): a guest user can write fake "
					  "ones, so none is taken",
			       k->path, KSR_NOTES_MAX, k->unit, list);
	for (i = 0; i < sc->n; i++) {
		memset(r, 0, sizeof(*r));
		r->k = k;
		r->note = &sc->notes[i];
		ret = ksr_try(r);
		if (!ret) {
			if (good++)
				hvtrace_ksyms_free(*out);
			*out = r->ks;
			r->ks = NULL;
			chosen = i;
		} else if (!first_ret) {
			first_ret = ret;
			snprintf(first, sizeof(first), "%s",
				 hvtrace_last_error());
		}
		ksr_fini(r);
	}
	if (good == 1) {
		struct hvtrace_ksyms_info *in = &(*out)->info;

		memset(r, 0, sizeof(*r));
		ksr_parse_note(&sc->notes[chosen], &r->vi);
		in->note_offset = sc->notes[chosen].off;
		in->kaslr_offset = r->vi.v[V_KASLR];
		in->phys_base = r->vi.v[V_PHYSBASE];
		return 0;
	}
	if (good) {
		hvtrace_ksyms_free(*out);
		*out = NULL;
	}
	if (sc->n == 1)
		return hvt_err(first_ret, "%s: the VMCOREINFO note at 0x%llx: "
					  "%s",
			       k->path, (unsigned long long)sc->notes[0].off,
			       first);
	return hvt_err(-ENOTUNIQ, "%s: %u different VMCOREINFO notes in this "
				  "%s, at %s, and %u of them point at valid "
				  "symbol tables (%s%s): a guest user can write "
				  "a fake one, so none is taken",
		       k->path, sc->n, k->unit, list, good,
		       good ? "not exactly one" : "the first refused: ",
		       good ? "" : first);
}

HVTRACE_API int hvtrace_ksyms_from_kring(struct hvtrace_kring *k,
					 struct hvtrace_ksyms **out,
					 struct hvtrace_ksyms_info *info)
{
	struct ksr_scan sc = { 0 };
	struct ksr r = { 0 };
	struct hvt_guard g;
	int ret;

	if (!k || !out)
		return hvt_err(-EINVAL, "hvtrace_ksyms_from_kring: NULL "
					"argument");
	sc.notes = calloc(KSR_NOTES_MAX + 1, sizeof(*sc.notes));
	if (!sc.notes)
		return hvt_err(-ENOMEM, "out of memory");
	if (k->map) {
		hvt_guard_init();
		if (hvt_guard_enter(&g, k->map, k->size)) {
			ksr_fini(&r);
			hvtrace_ksyms_free(sc.out);
			free(sc.notes);
			return hvt_err(-EIO, "%s shrank while its symbols were "
					     "read",
				       k->path);
		}
	}
	ret = ksr_run(k, &sc, &r, &sc.out);
	if (k->map)
		hvt_guard_leave(&g);
	free(sc.notes);
	if (ret)
		return ret;
	if (info)
		*info = sc.out->info;
	*out = sc.out;
	return 0;
}

HVTRACE_API int hvtrace_decoder_ksyms_from_kring(struct hvtrace_decoder *d,
						 struct hvtrace_kring *k,
						 struct hvtrace_ksyms_info *info)
{
	struct hvtrace_ksyms *ks = NULL;
	int ret;

	if (!d || !d->tep || !k)
		return hvt_err(-EINVAL, "hvtrace_decoder_ksyms_from_kring: "
					"NULL argument");
	/* This boot's image from its RAM, and the modules of the table the
	 * decoder had (its formats folder's kallsyms, which a rig guest
	 * prints on its console with the modules it loaded).  Without a
	 * RAM table, that table as it is. */
	ret = hvtrace_ksyms_from_kring(k, &ks, info);
	if (ret)
		return d->ksyms ? 1 : ret;
	return hvtrace_decoder_set_image_ksyms(d, ks);
}
