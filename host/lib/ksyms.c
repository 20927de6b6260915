// SPDX-License-Identifier: MIT
/*
 * libhvtrace: a kernel's symbol table (struct hvtrace_ksyms), from
 * /proc/kallsyms text (hvtrace_ksyms_parse()) or from guest RAM
 * (ksyms_ram.c), and the function resolver a decoder prints %ps and
 * ftrace:print's ip with (hvtrace_decoder_set_ksyms()).
 *
 * The text is hostile (a guest's): its size, its line count and every
 * line are bounded; a line that is not "%016lx %c %s[\t[MOD]]" is
 * skipped and counted, never half taken.  libtraceevent's own
 * tep_parse_kallsyms() stops at the first bad line and strdup()s every
 * name; here the names sit in one buffer and a lookup is a binary search
 * of an index sorted by address, without a copy per record.
 *
 * Symbols keep the order they were added in (hvtrace_ksyms_text() gives
 * the text back as it came, less the skipped lines); the index holds
 * every symbol but the absolute ones (A, a: per-CPU offsets, not
 * addresses) and '$' names (mapping symbols), sorted by address and,
 * among aliases, by that order, so that the first alias names an
 * address, as in the kernel's own lookup.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "decode.h"
#include "ksyms-local.h"

/* Slots of the module name hash: twice HVTRACE_KSYMS_MODULES_MAX. */
#define KS_MOD_HASH	8192u

struct hvtrace_ksyms *hvt_ks_new(void)
{
	return calloc(1, sizeof(struct hvtrace_ksyms));
}

HVTRACE_API void hvtrace_ksyms_free(struct hvtrace_ksyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->idx);
	free(ks->strs);
	free(ks->mods);
	free(ks->mod_hash);
	free(ks);
}

static bool ks_printable(const char *s, size_t n, bool brackets)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f)
			return false;
		if (!brackets && (c == '[' || c == ']'))
			return false;
	}
	return true;
}

bool hvt_ks_printable(const char *s, size_t n)
{
	return ks_printable(s, n, true);
}

/* Copy @n bytes and a NUL into the string buffer; its offset or -1. */
static int64_t ks_str(struct hvtrace_ksyms *ks, const char *s, size_t n)
{
	size_t off = ks->strs_len;

	if (ks->strs_len + n + 1 > ks->strs_cap) {
		size_t cap = ks->strs_cap ? ks->strs_cap * 2 : 65536;
		char *p;

		while (cap < ks->strs_len + n + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -1;
		p = realloc(ks->strs, cap);
		if (!p)
			return -1;
		ks->strs = p;
		ks->strs_cap = cap;
	}
	memcpy(ks->strs + off, s, n);
	ks->strs[off + n] = '\0';
	ks->strs_len += n + 1;
	return (int64_t)off;
}

static uint32_t ks_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* The module number (1..) of @mod, added when new; 0 on error (@why). */
static uint32_t ks_mod(struct hvtrace_ksyms *ks, const char *mod, size_t n,
		       const char **why)
{
	uint32_t h, slot, m;
	int64_t off;

	if (!ks->mod_hash) {
		ks->mod_hash = calloc(KS_MOD_HASH, sizeof(*ks->mod_hash));
		ks->mods = calloc(HVTRACE_KSYMS_MODULES_MAX,
				  sizeof(*ks->mods));
		if (!ks->mod_hash || !ks->mods) {
			*why = "out of memory";
			return 0;
		}
	}
	h = ks_hash(mod, n);
	for (slot = h % KS_MOD_HASH;; slot = (slot + 1) % KS_MOD_HASH) {
		m = ks->mod_hash[slot];
		if (!m)
			break;
		if (!strncmp(ks->strs + ks->mods[m - 1], mod, n) &&
		    !ks->strs[ks->mods[m - 1] + n])
			return m;
	}
	if (ks->info.modules >= HVTRACE_KSYMS_MODULES_MAX) {
		*why = "more than 4096 modules";
		return 0;
	}
	off = ks_str(ks, mod, n);
	if (off < 0) {
		*why = "out of memory";
		return 0;
	}
	ks->mods[ks->info.modules++] = (uint32_t)off;
	ks->mod_hash[slot] = ks->info.modules;
	return ks->info.modules;
}

int hvt_ks_add(struct hvtrace_ksyms *ks, uint64_t addr, char type,
	       const char *name, size_t nlen, const char *mod, size_t mlen,
	       const char **why)
{
	struct ks_sym *s;
	uint32_t m = 0;
	int64_t off;

	if (!((type >= 'a' && type <= 'z') || (type >= 'A' && type <= 'Z'))) {
		*why = "the type is not a letter";
		return -EINVAL;
	}
	if (!nlen || nlen > HVTRACE_KSYMS_NAME_MAX ||
	    !ks_printable(name, nlen, true)) {
		*why = nlen > HVTRACE_KSYMS_NAME_MAX ?
			       "name longer than 511 bytes" :
			       "empty name or not printable";
		return -EINVAL;
	}
	if (mod && (!mlen || mlen > HVTRACE_KSYMS_MODULE_MAX ||
		    !ks_printable(mod, mlen, false))) {
		*why = "bad module name";
		return -EINVAL;
	}
	if (ks->nr >= HVTRACE_KSYMS_LINES_MAX) {
		*why = "too many symbols";
		return -E2BIG;
	}
	if (mod) {
		m = ks_mod(ks, mod, mlen, why);
		if (!m)
			return -EINVAL;
	}
	if (ks->nr == ks->cap) {
		uint32_t cap = ks->cap ? ks->cap * 2 : 4096;
		struct ks_sym *p = realloc(ks->syms, cap * sizeof(*p));

		if (!p) {
			*why = "out of memory";
			return -ENOMEM;
		}
		ks->syms = p;
		ks->cap = cap;
	}
	off = ks_str(ks, name, nlen);
	if (off < 0) {
		*why = "out of memory";
		return -ENOMEM;
	}
	s = &ks->syms[ks->nr++];
	s->addr = addr;
	s->name = (uint32_t)off;
	s->mod = (uint16_t)m;
	s->type = type;
	ks->info.symbols = ks->nr;
	return 0;
}

struct ks_key {
	uint64_t addr;
	uint32_t i;
};

static int ks_key_cmp(const void *a, const void *b)
{
	const struct ks_key *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int hvt_ks_finish(struct hvtrace_ksyms *ks, const char *what)
{
	struct ks_key *keys;
	uint32_t i, n = 0;
	bool any = false;

	if (!ks->nr)
		return hvt_err(-ENOENT, "%s: no symbol%s", what,
			       ks->info.skipped ? " line is valid" : "s");
	for (i = 0; i < ks->nr && !any; i++)
		any = ks->syms[i].addr != 0;
	if (!any)
		return hvt_err(-ENODATA,
			       "%s: every symbol address is 0: the kernel "
			       "hid them from its reader (kptr_restrict; "
			       "read /proc/kallsyms as root)",
			       what);
	keys = malloc(ks->nr * sizeof(*keys));
	ks->idx = malloc(ks->nr * sizeof(*ks->idx));
	if (!keys || !ks->idx) {
		free(keys);
		return hvt_err(-ENOMEM, "out of memory");
	}
	for (i = 0; i < ks->nr; i++) {
		const struct ks_sym *s = &ks->syms[i];

		if (s->type == 'A' || s->type == 'a' ||
		    ks->strs[s->name] == '$')
			continue;
		keys[n].addr = s->addr;
		keys[n++].i = i;
	}
	qsort(keys, n, sizeof(*keys), ks_key_cmp);
	for (i = 0; i < n; i++)
		ks->idx[i] = keys[i].i;
	ks->nr_idx = n;
	free(keys);
	return 0;
}

static void ks_skip(struct hvtrace_ksyms *ks, uint32_t line, const char *why)
{
	if (!ks->info.skipped++) {
		ks->info.first_skipped = line;
		snprintf(ks->info.first_skipped_why,
			 sizeof(ks->info.first_skipped_why), "%s", why);
	}
}

static int ks_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One line (no newline): 0 kept, -EINVAL skipped (@why), or -ENOMEM. */
static int ks_line(struct hvtrace_ksyms *ks, const char *p, size_t n,
		   const char **why)
{
	const char *name, *tab, *mod = NULL;
	size_t nlen, mlen = 0;
	uint64_t addr = 0;
	int i, h;

	if (n > HVTRACE_KSYMS_LINE_MAX) {
		*why = "line longer than 600 bytes";
		return -EINVAL;
	}
	if (memchr(p, '\0', n)) {
		*why = "NUL byte";
		return -EINVAL;
	}
	if (n < 20 || p[16] != ' ' || p[18] != ' ') {
		*why = "not \"ADDRESS TYPE NAME\"";
		return -EINVAL;
	}
	for (i = 0; i < 16; i++) {
		h = ks_hex(p[i]);
		if (h < 0) {
			*why = "address is not 16 hex digits";
			return -EINVAL;
		}
		addr = addr << 4 | (uint64_t)h;
	}
	name = p + 19;
	tab = memchr(name, '\t', n - 19);
	nlen = tab ? (size_t)(tab - name) : n - 19;
	if (tab) {
		const char *end = p + n;

		if (end - tab < 4 || tab[1] != '[' || end[-1] != ']') {
			*why = "bad module field";
			return -EINVAL;
		}
		mod = tab + 2;
		mlen = (size_t)(end - 1 - mod);
	}
	i = hvt_ks_add(ks, addr, p[17], name, nlen, mod, mlen, why);
	return i == -ENOMEM ? i : i ? -EINVAL : 0;
}

HVTRACE_API int hvtrace_ksyms_parse(const char *text, size_t len,
				    struct hvtrace_ksyms **out)
{
	const char *p, *end, *why = NULL;
	struct hvtrace_ksyms *ks;
	uint32_t line = 0;
	int ret;

	if (!text || !out)
		return hvt_err(-EINVAL, "hvtrace_ksyms_parse: NULL argument");
	if (len > HVTRACE_KSYMS_TEXT_MAX)
		return hvt_err(-E2BIG, "kallsyms text of %zu bytes: more than "
				       "the %u bytes taken",
			       len, HVTRACE_KSYMS_TEXT_MAX);
	ks = hvt_ks_new();
	if (!ks)
		return hvt_err(-ENOMEM, "out of memory");
	for (p = text, end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (++line > HVTRACE_KSYMS_LINES_MAX) {
			hvtrace_ksyms_free(ks);
			return hvt_err(-E2BIG, "kallsyms text of more than %u "
					       "lines: refused",
				       HVTRACE_KSYMS_LINES_MAX);
		}
		ret = ks_line(ks, p, n, &why);
		if (ret == -ENOMEM) {
			hvtrace_ksyms_free(ks);
			return hvt_err(-ENOMEM, "out of memory");
		}
		if (ret)
			ks_skip(ks, line, why);
		p += n + (nl != NULL);
	}
	ret = hvt_ks_finish(ks, "kallsyms text");
	if (ret) {
		if (ret == -ENOENT && ks->info.skipped)
			hvt_err(-ENOENT, "kallsyms text: none of its %u lines "
					 "is a symbol (line %u: %s)",
				ks->info.skipped, ks->info.first_skipped,
				ks->info.first_skipped_why);
		hvtrace_ksyms_free(ks);
		return ret;
	}
	*out = ks;
	return 0;
}

HVTRACE_API int hvtrace_ksyms_add_modules(struct hvtrace_ksyms *ks,
					  const struct hvtrace_ksyms *from)
{
	uint32_t nr, i, added = 0;
	const char *why = NULL;
	int ret = 0;

	if (!ks || !from || !ks->idx)
		return hvt_err(-EINVAL, "hvtrace_ksyms_add_modules: NULL or "
					"unfinished table");
	nr = ks->nr;
	for (i = 0; i < from->nr && !ret; i++) {
		const struct ks_sym *s = &from->syms[i];
		const char *mod;

		if (!s->mod)
			continue; /* the image: @ks's own */
		mod = from->strs + from->mods[s->mod - 1];
		ret = hvt_ks_add(ks, s->addr, s->type, from->strs + s->name,
				 strlen(from->strs + s->name), mod, strlen(mod),
				 &why);
		added += !ret;
	}
	if (!ret && added) {
		/* A new index; the old one stays until it is made. */
		uint32_t *old = ks->idx;

		ks->idx = NULL;
		ret = hvt_ks_finish(ks, "the modules' symbols");
		if (ret) {
			free(ks->idx);
			ks->idx = old;
		} else {
			free(old);
		}
		why = "out of memory";
	}
	if (ret) {
		/* As it was (a module name it learned stays unused). */
		ks->nr = nr;
		ks->info.symbols = nr;
		return hvt_err(ret, "the modules' symbols: %s", why);
	}
	return (int)added;
}

HVTRACE_API int hvtrace_ksyms_get_info(const struct hvtrace_ksyms *ks,
				       struct hvtrace_ksyms_info *info)
{
	if (!ks || !info)
		return hvt_err(-EINVAL, "hvtrace_ksyms_get_info: NULL "
					"argument");
	*info = ks->info;
	return 0;
}

HVTRACE_API int hvtrace_ksyms_text(const struct hvtrace_ksyms *ks,
				   char **text, size_t *len)
{
	size_t size = 1, off = 0;
	uint32_t i;
	char *buf;

	if (!ks || !text || !len)
		return hvt_err(-EINVAL, "hvtrace_ksyms_text: NULL argument");
	for (i = 0; i < ks->nr; i++) {
		const struct ks_sym *s = &ks->syms[i];

		size += 20 + strlen(ks->strs + s->name) + 1;
		if (s->mod)
			size += 3 + strlen(ks->strs + ks->mods[s->mod - 1]);
	}
	buf = malloc(size);
	if (!buf)
		return hvt_err(-ENOMEM, "out of memory");
	for (i = 0; i < ks->nr; i++) {
		const struct ks_sym *s = &ks->syms[i];

		off += (size_t)snprintf(buf + off, size - off, "%016llx %c %s",
					(unsigned long long)s->addr, s->type,
					ks->strs + s->name);
		if (s->mod) {
			const char *m = ks->strs + ks->mods[s->mod - 1];

			off += (size_t)snprintf(buf + off, size - off,
						"\t[%s]", m);
		}
		buf[off++] = '\n';
	}
	buf[off] = '\0';
	*text = buf;
	*len = off;
	return 0;
}

/* Index of the first entry of idx above @addr (0..nr_idx). */
static uint32_t ks_upper(const struct hvtrace_ksyms *ks, uint64_t addr)
{
	uint32_t lo = 0, hi = ks->nr_idx;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ks->syms[ks->idx[mid]].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first entry of idx at or above @addr. */
static uint32_t ks_lower(const struct hvtrace_ksyms *ks, uint64_t addr)
{
	uint32_t lo = 0, hi = ks->nr_idx;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ks->syms[ks->idx[mid]].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The symbol @addr lies in, or NULL; @size: 0 when its end is unknown. */
static const struct ks_sym *ks_find(const struct hvtrace_ksyms *ks,
				    uint64_t addr, uint64_t *size)
{
	const struct ks_sym *s, *next;
	uint32_t ub = ks_upper(ks, addr), first;

	if (!ub)
		return NULL;
	s = &ks->syms[ks->idx[ub - 1]];
	first = ks_lower(ks, s->addr);
	s = &ks->syms[ks->idx[first]];
	next = ub < ks->nr_idx ? &ks->syms[ks->idx[ub]] : NULL;
	*size = next && next->mod == s->mod ? next->addr - s->addr : 0;
	if (!*size && addr != s->addr)
		return NULL;
	return s;
}

HVTRACE_API int hvtrace_ksyms_lookup(const struct hvtrace_ksyms *ks,
				     uint64_t addr, const char **name,
				     uint64_t *offset, uint64_t *size,
				     const char **module)
{
	const struct ks_sym *s;
	uint64_t sz;

	if (!ks)
		return hvt_err(-EINVAL, "hvtrace_ksyms_lookup: NULL table");
	s = ks_find(ks, addr, &sz);
	if (!s)
		return -ENOENT;
	if (name)
		*name = ks->strs + s->name;
	if (offset)
		*offset = addr - s->addr;
	if (size)
		*size = sz;
	if (module)
		*module = s->mod ? ks->strs + ks->mods[s->mod - 1] : NULL;
	return 0;
}

/*
 * libtraceevent's function resolver; NULL prints hex.
 *
 * The kernel prints %ps as "name [mod]" and %pS as "name+0xoff/0xsize
 * [mod]" (its vsprintf's sprint_symbol()); libtraceevent prints the
 * name a resolver gives, then "+0xoff" for %pS, and has no place for the
 * size or the module.  So the name comes with a tail that says them,
 * HVT_KS_TAIL SIZE-HEX HVT_KS_TAIL MODULE HVT_KS_TAIL, and the decoder's
 * text goes through hvt_ksyms_expand(), which puts them where the kernel
 * does.  The answer is kept in the table (one at a time: libtraceevent
 * prints it before it asks again).
 */
static char *ks_resolve(void *priv, unsigned long long *addrp, char **modp)
{
	struct hvtrace_ksyms *ks = priv;
	const struct ks_sym *s;
	const char *mod;
	uint64_t sz;

	s = ks_find(ks, *addrp, &sz);
	if (!s)
		return NULL;
	*addrp = s->addr;
	mod = s->mod ? ks->strs + ks->mods[s->mod - 1] : NULL;
	*modp = (char *)mod;
	snprintf(ks->resolved, sizeof(ks->resolved), "%s%c%llx%c%s%c",
		 ks->strs + s->name, HVT_KS_TAIL, (unsigned long long)sz,
		 HVT_KS_TAIL, mod ? mod : "", HVT_KS_TAIL);
	return ks->resolved;
}

/* @n bytes as they are (a NUL among them too). */
static void ks_put(struct trace_seq *out, const char *p, size_t n)
{
	while (n--)
		trace_seq_putc(out, (unsigned char)*p++);
}

/* Hex digits at @p (at most 16), before @end; 0 when none. */
static size_t ks_hex_len(const char *p, const char *end)
{
	size_t n = 0;

	while (p + n < end && n < 16 &&
	       ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f')))
		n++;
	return n;
}

/*
 * One tail at @p (its first HVT_KS_TAIL), and the "+0xOFF" libtraceevent
 * printed after it for %pS, in the kernel's form into @out (a plugin's
 * "/0xDIFF" after it is kept, the module after that).  Returns the
 * bytes of @p taken, or 0 when @p is not a well-formed tail (left as it
 * is: a record's own string may hold the byte).
 */
static size_t ks_expand_one(struct trace_seq *out, const char *p,
			    const char *end)
{
	const char *q = p + 1, *mod, *mod_end;
	size_t nsize, noff;
	unsigned long long size;

	nsize = ks_hex_len(q, end);
	if (!nsize || q + nsize >= end || q[nsize] != HVT_KS_TAIL)
		return 0;
	size = strtoull(q, NULL, 16);
	mod = q + nsize + 1;
	mod_end = memchr(mod, HVT_KS_TAIL,
			 (size_t)(end - mod) < HVTRACE_KSYMS_MODULE_MAX + 1
				 ? (size_t)(end - mod)
				 : HVTRACE_KSYMS_MODULE_MAX + 1);
	if (!mod_end)
		return 0;
	q = mod_end + 1;
	/* %pS's "+0xOFF" gets the size; a plugin's "/0xDIFF"
	 * (libtraceevent's tep_print_func_field()) is kept as it is. */
	if (end - q > 3 && (*q == '+' || *q == '/') &&
	    !memcmp(q + 1, "0x", 2) && (noff = ks_hex_len(q + 3, end))) {
		ks_put(out, q, 3 + noff);
		if (*q == '+' && size)
			trace_seq_printf(out, "/0x%llx", size);
		q += 3 + noff;
	}
	if (mod_end > mod) {
		trace_seq_puts(out, " [");
		ks_put(out, mod, (size_t)(mod_end - mod));
		trace_seq_putc(out, ']');
	}
	return (size_t)(q - p);
}

void hvt_ksyms_expand(struct trace_seq *out, const char *in, size_t n)
{
	const char *p = in, *end = in + n;

	while (p < end) {
		const char *m = memchr(p, HVT_KS_TAIL, (size_t)(end - p));
		size_t took;

		if (!m) {
			ks_put(out, p, (size_t)(end - p));
			break;
		}
		ks_put(out, p, (size_t)(m - p));
		took = ks_expand_one(out, m, end);
		if (!took) {
			trace_seq_putc(out, *m);
			took = 1;
		}
		p = m + took;
	}
	trace_seq_terminate(out);
}

/* @ks (NULL: none) as @tep's resolver, owned by *@owner (freed on
 * failure; the table *@owner had is freed). */
static int ks_install(struct tep_handle *tep, struct hvtrace_ksyms **owner,
		      struct hvtrace_ksyms *ks)
{
	tep_reset_function_resolver(tep);
	hvtrace_ksyms_free(*owner);
	*owner = NULL;
	if (ks && tep_set_function_resolver(tep, ks_resolve, ks)) {
		hvtrace_ksyms_free(ks);
		return hvt_err(-ENOMEM, "out of memory");
	}
	*owner = ks;
	return 0;
}

int hvt_tep_set_ksyms(struct tep_handle *tep, const char *text, size_t len,
		      struct hvtrace_ksyms **owner)
{
	struct hvtrace_ksyms *ks = NULL;
	int ret = hvtrace_ksyms_parse(text, len, &ks);

	return ks_install(tep, owner, ret ? NULL : ks) ?: ret;
}

HVTRACE_API int hvtrace_decoder_set_ksyms(struct hvtrace_decoder *d,
					  struct hvtrace_ksyms *ks)
{
	if (!d || !d->tep) {
		hvtrace_ksyms_free(ks);
		return hvt_err(-EINVAL, "hvtrace_decoder_set_ksyms: NULL "
					"decoder");
	}
	return ks_install(d->tep, &d->ksyms, ks);
}

HVTRACE_API int hvtrace_decoder_set_image_ksyms(struct hvtrace_decoder *d,
						struct hvtrace_ksyms *ks)
{
	if (!d || !d->tep || !ks) {
		hvtrace_ksyms_free(ks);
		return hvt_err(-EINVAL, "hvtrace_decoder_set_image_ksyms: "
					"NULL argument");
	}
	/* The modules of the table it had (a formats folder's kallsyms,
	 * which a rig guest prints with the modules it loaded). */
	if (d->ksyms && hvtrace_ksyms_add_modules(ks, d->ksyms) < 0) {
		hvtrace_ksyms_free(ks);
		return 1;
	}
	return hvtrace_decoder_set_ksyms(d, ks);
}
