// SPDX-License-Identifier: MIT
/*
 * The user_events definition grammar.
 *
 *   name[:FLAGS] [field[;field...]]
 *   field := TYPE NAME | struct TYPE NAME SIZE
 *
 * The rules are the kernel's (kernel/trace/trace_events_user.c, Linux
 * 6.4 to 6.12): the name ends at the first space, fields are split at ';',
 * a field's leading white space is skipped and an empty field is ignored,
 * the words of a field are split at single spaces, and the multi-word type
 * prefixes "unsigned ", "struct ", "__data_loc [unsigned ]" and
 * "__rel_loc [unsigned ]" keep their first space inside the type.  Numbers
 * follow kstrtouint(): an optional '+', then decimal, 0x hex or 0 octal
 * for array lengths and decimal for struct sizes, and one trailing newline
 * is tolerated.
 *
 * Where the kernel accepts text that cannot be served safely (an empty
 * event, field or struct type name, '/' in an event name, bytes other than
 * printable ASCII in names and types), the definition is refused;
 * docs/userevents.md lists these differences.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userevents-local.h"

#define UE_EXCERPT_MAX	48

/* --- messages ------------------------------------------------------- */

int ue_err(struct hvtrace_ue_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void ue_excerpt(char *dst, size_t dstlen, const char *s, size_t n)
{
	size_t o = 0, i;

	if (!dstlen)
		return;
	for (i = 0; i < n && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[8];
		size_t tl;

		if (c == '\t')
			tl = (size_t)snprintf(tmp, sizeof(tmp), "\\t");
		else if (c == '\n')
			tl = (size_t)snprintf(tmp, sizeof(tmp), "\\n");
		else if (c == '"' || c == '\\')
			tl = (size_t)snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			tl = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		else
			tl = (size_t)snprintf(tmp, sizeof(tmp), "%c", c);
		/* Leave room for "..." and the NUL. */
		if (o + tl + 4 > dstlen || o >= UE_EXCERPT_MAX) {
			if (o + 4 <= dstlen) {
				memcpy(dst + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(dst + o, tmp, tl);
		o += tl;
	}
	dst[o] = '\0';
}

const char *hvtrace_ue_errno_name(int err)
{
	switch (err < 0 ? -err : err) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case E2BIG: return "E2BIG";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case EMFILE: return "EMFILE";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case EADDRINUSE: return "EADDRINUSE";
	case ECANCELED: return "ECANCELED";
	}
	return "EUNKNOWN";
}

/* --- growing strings -------------------------------------------------- */

static int ue_buf_grow(struct ue_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->failed)
		return -1;
	if (b->len + more + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1) {
		if (cap > SIZE_MAX / 2) {
			b->failed = 1;
			return -1;
		}
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p) {
		b->failed = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void ue_buf_put(struct ue_buf *b, const char *s, size_t n)
{
	if (ue_buf_grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void ue_buf_printf(struct ue_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
		return;
	}
	if (ue_buf_grow(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *ue_buf_finish(struct ue_buf *b)
{
	if (b->failed) {
		free(b->p);
		b->p = NULL;
		return NULL;
	}
	if (!b->p)
		return strdup("");
	return b->p;
}

/* --- kernel number and word helpers ----------------------------------- */

/*
 * kstrtouint(): optional '+', base 0 picks 0x hex / 0 octal / decimal, at
 * least one digit, one optional trailing '\n', nothing else, fits 32 bits.
 */
static int ue_kstrtouint(const char *s, unsigned int base, uint32_t *res)
{
	unsigned long long v = 0;
	int overflow = 0;
	size_t digits = 0;

	if (s[0] == '+')
		s++;
	if (base == 0) {
		if (s[0] == '0') {
			unsigned char c2 = (unsigned char)s[2];
			int xd = (c2 >= '0' && c2 <= '9') ||
				 ((c2 | 0x20) >= 'a' && (c2 | 0x20) <= 'f');

			base = ((s[1] | 0x20) == 'x' && xd) ? 16 : 8;
		} else {
			base = 10;
		}
	}
	if (base == 16 && s[0] == '0' && (s[1] | 0x20) == 'x')
		s += 2;
	for (;; s++, digits++) {
		unsigned char c = (unsigned char)*s, lc = c | 0x20;
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (lc >= 'a' && lc <= 'f')
			d = lc - 'a' + 10;
		else
			break;
		if (d >= base)
			break;
		if (v > (ULLONG_MAX - d) / base)
			overflow = 1;
		v = v * base + d;
	}
	if (overflow)
		return -ERANGE;
	if (!digits)
		return -EINVAL;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	if (v > UINT32_MAX)
		return -ERANGE;
	*res = (uint32_t)v;
	return 0;
}

static size_t ue_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) ? 0 : n;
}

/*
 * Names and types are printable ASCII here.  The kernel takes any byte but
 * space, ';' and NUL; libtraceevent cannot read formats with control or
 * non-ASCII bytes in them (and 1.7.1 crashes on "__data_loc char[" followed
 * by a byte >= 0x80), the kernel's isspace() splits names at 0xa0, and a
 * newline would break the line-oriented dynamic_events file.
 */
static int ue_bad_char(unsigned char c)
{
	return c < 0x20 || c >= 0x7f;
}

static int ue_has_ctrl(const char *s)
{
	for (; *s; s++)
		if (ue_bad_char((unsigned char)*s))
			return 1;
	return 0;
}

char **ue_argv_split(const char *s, int *argc)
{
	size_t len = strlen(s), words = 0, i;
	const char *p = s;
	char **argv, *copy, *q;

	/* Count like the kernel's count_argc(). */
	while (*p) {
		p = ue_skip_spaces(p);
		if (*p) {
			words++;
			while (*p && !ue_isspace((unsigned char)*p))
				p++;
		}
	}
	argv = malloc((words + 1) * sizeof(*argv) + len + 1);
	if (!argv)
		return NULL;
	copy = (char *)(argv + words + 1);
	memcpy(copy, s, len + 1);
	q = copy;
	for (i = 0; i < words; i++) {
		while (ue_isspace((unsigned char)*q))
			q++;
		argv[i] = q;
		while (*q && !ue_isspace((unsigned char)*q))
			q++;
		if (*q)
			*q++ = '\0';
	}
	argv[words] = NULL;
	*argc = (int)words;
	return argv;
}

/* --- the event name ------------------------------------------------- */

/*
 * The name runs to the first space; a ':' in it starts text flags, which
 * Linux 6.4+ rejects whatever they say.  Returns the name's length.
 */
static int ue_name_span(const char *def, size_t *name_len, const char **args,
			struct hvtrace_ue_error *err)
{
	const char *sp = strchr(def, ' ');
	size_t len = sp ? (size_t)(sp - def) : strlen(def);
	const char *colon = memchr(def, ':', len);
	char ex[UE_EXCERPT_MAX + 8], fl[UE_EXCERPT_MAX + 8];
	size_t i;

	ue_excerpt(ex, sizeof(ex), def, len);
	if (colon) {
		ue_excerpt(fl, sizeof(fl), colon, len - (size_t)(colon - def));
		return ue_err(err, -EINVAL,
			      "event name \"%s\": flags \"%s\" are not accepted: user_events takes no text flags (Linux 6.4 and later); remove the ':' part",
			      ex, fl);
	}
	if (len == 0)
		return ue_err(err, -EINVAL,
			      "the event name is empty: a definition starts with the name, e.g. \"my_event u32 count\"");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)def[i];

		if (c == '/')
			return ue_err(err, -EINVAL,
				      "event name \"%s\": '/' is not allowed in event names (it cannot name a tracefs directory)",
				      ex);
		if (ue_bad_char(c))
			return ue_err(err, -EINVAL,
				      "event name \"%s\": only printable ASCII characters are allowed in event names",
				      ex);
	}
	*name_len = len;
	*args = sp ? sp + 1 : NULL;
	return 0;
}

int hvtrace_ue_split_name(const char *def, char *name, size_t namelen,
		      const char **args, struct hvtrace_ue_error *err)
{
	size_t len;
	int ret;

	ret = ue_name_span(def, &len, args, err);
	if (ret)
		return ret;
	if (len >= namelen)
		return ue_err(err, -E2BIG, "event name is %zu bytes: too long",
			      len);
	memcpy(name, def, len);
	name[len] = '\0';
	return 0;
}

/* --- fields --------------------------------------------------------- */

struct ue_field_ctx {
	const char *orig;	/* the definition as given */
	const char *buf;	/* the working copy fields point into */
	unsigned int no;	/* field number, 1-based, empty ones counted */
	const char *start;	/* start of the field in buf */
	size_t len;		/* its length before splitting */
	struct hvtrace_ue_error *err;
};

__attribute__((format(printf, 3, 4)))
static int ue_field_err(struct ue_field_ctx *c, int code, const char *fmt, ...)
{
	char ex[UE_EXCERPT_MAX + 8], why[HVT_UE_MSG_MAX];
	va_list ap;

	if (!c->err)
		return code;
	/* The field as written: the same bytes in the original text. */
	ue_excerpt(ex, sizeof(ex), c->orig + (c->start - c->buf), c->len);
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return ue_err(c->err, code, "field %u \"%s\": %s", c->no, ex, why);
}

#define UE_TYPES_HINT							\
	"types: s8..s64, u8..u64, char, short, int (and unsigned forms), " \
	"char[N], __data_loc T, __rel_loc T, struct T NAME SIZE"

/* user_field_array_size(): the text after '[' is at most 7 characters. */
static int ue_array_size(struct ue_field_ctx *c, const char *type,
			 uint32_t *size)
{
	const char *start = strchr(type, '[');
	char val[8], ex[UE_EXCERPT_MAX + 8], *bracket;
	size_t n;
	int ret;

	if (!start)
		return ue_field_err(c, -EINVAL, "missing array length");
	n = strlen(start + 1);
	ue_excerpt(ex, sizeof(ex), start + 1, n);
	if (n == 0)
		return ue_field_err(c, -EINVAL,
				    "missing array length and ']' after '['");
	if (n > sizeof(val) - 1)
		return ue_field_err(c, -EINVAL,
				    "array length text \"%s\" is too long: at most 7 characters may follow '[' (like the kernel)",
				    ex);
	memcpy(val, start + 1, n + 1);
	bracket = strchr(val, ']');
	if (!bracket)
		return ue_field_err(c, -EINVAL, "missing ']' after \"[%s\"",
				    ex);
	*bracket = '\0';
	ue_excerpt(ex, sizeof(ex), val, strlen(val));
	ret = ue_kstrtouint(val, 0, size);
	if (ret)
		return ue_field_err(c, -EINVAL,
				    "array length \"%s\" is not a number (decimal, 0x hex or 0 octal)",
				    ex);
	if (*size > HVT_UE_MAX_ARRAY || *size == 0)
		return ue_field_err(c, -EINVAL,
				    "array length %u is out of range: 1..%u",
				    *size, HVT_UE_MAX_ARRAY);
	return 0;
}

/* user_field_size(): the size of a non-struct type. */
static int ue_type_size(struct ue_field_ctx *c, const char *type,
			uint32_t *size, uint8_t *kind)
{
	static const struct {
		const char *name;
		uint32_t size;
	} basic[] = {
		{ "s64", 8 }, { "u64", 8 }, { "s32", 4 }, { "u32", 4 },
		{ "int", 4 }, { "unsigned int", 4 }, { "s16", 2 },
		{ "u16", 2 }, { "short", 2 }, { "unsigned short", 2 },
		{ "s8", 1 }, { "u8", 1 }, { "char", 1 },
		{ "unsigned char", 1 },
	};
	char ex[UE_EXCERPT_MAX + 8];
	size_t i;

	for (i = 0; i < sizeof(basic) / sizeof(basic[0]); i++) {
		if (!strcmp(type, basic[i].name)) {
			*size = basic[i].size;
			*kind = HVT_UE_KIND_INT;
			return 0;
		}
	}
	if (ue_prefix(type, "char[") || ue_prefix(type, "unsigned char[")) {
		*kind = HVT_UE_KIND_ARRAY;
		return ue_array_size(c, type, size);
	}
	if (ue_prefix(type, "__data_loc ")) {
		*size = 4;
		*kind = HVT_UE_KIND_DATA_LOC;
		return 0;
	}
	if (ue_prefix(type, "__rel_loc ")) {
		*size = 4;
		*kind = HVT_UE_KIND_REL_LOC;
		return 0;
	}
	ue_excerpt(ex, sizeof(ex), type, strlen(type));
	if (ue_prefix(type, "struct "))
		return ue_field_err(c, -EINVAL,
				    "struct fields need a size: struct TYPE NAME SIZE");
	return ue_field_err(c, -EINVAL, "unknown type \"%s\" (" UE_TYPES_HINT
				    ")", ex);
}

/*
 * user_event_parse_field().  Returns 1 with *f filled in, 0 for an empty
 * field, or -EINVAL.
 */
static int ue_parse_field(struct ue_field_ctx *c, char *field,
			  uint64_t *offset, struct hvtrace_ue_field *f)
{
	static const char *const prefixes[] = {
		"unsigned ", "struct ", "__data_loc unsigned ",
		"__data_loc ", "__rel_loc unsigned ", "__rel_loc ",
	};
	char *part, *type = NULL, *name = NULL, *sizetext = NULL, *sp;
	unsigned int depth = 0;
	uint32_t size = 0;
	uint8_t kind = HVT_UE_KIND_INT;
	bool is_struct = false;
	size_t i, len = 0;
	int ret;

	field = (char *)ue_skip_spaces(field);
	if (*field == '\0')
		return 0;
	c->start = field;
	c->len = strlen(field);

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		len = ue_prefix(field, prefixes[i]);
		if (len) {
			is_struct = i == 1;
			break;
		}
	}
	if (len) {
		type = field;
		/* The kernel takes "struct  x 4" as type "struct " (empty). */
		if (field[len] == ' ')
			return ue_field_err(c, -EINVAL,
					    "two spaces in a row after \"%.*s\"",
					    (int)(len - 1), field);
		sp = strchr(field + len, ' ');
		if (!sp) {
			/* "unsigned", "struct foo", "__data_loc x": no name */
			return ue_field_err(c, -EINVAL,
					    "incomplete field: expected %s after \"%.*s\"",
					    is_struct ? "TYPE NAME SIZE" :
							"TYPE NAME",
					    (int)(len - 1), field);
		}
		*sp = '\0';
		field = sp + 1;
		depth = 1;
	}

	while ((part = strsep(&field, " ")) != NULL) {
		switch (depth++) {
		case 0:
			type = part;
			break;
		case 1:
			name = part;
			break;
		case 2:
			if (!is_struct) {
				if (!*name)
					return ue_field_err(c, -EINVAL,
							    "two spaces in a row: separate type and name with one space");
				if (!*part)
					return ue_field_err(c, -EINVAL,
							    "space after the field name");
				return ue_field_err(c, -EINVAL,
						    "unexpected \"%s\" after the name: only struct fields take a size",
						    part);
			}
			sizetext = part;
			break;
		default:
			if (!*part)
				return ue_field_err(c, -EINVAL,
						    "space after the struct size");
			return ue_field_err(c, -EINVAL,
					    "too many words: expected TYPE NAME, or struct TYPE NAME SIZE");
		}
	}

	if (depth < 2 || !name)
		return ue_field_err(c, -EINVAL,
				    "missing field name: expected TYPE NAME");

	if (depth == 2) {
		ret = ue_type_size(c, type, &size, &kind);
		if (ret)
			return ret;
	} else {
		char ex[UE_EXCERPT_MAX + 8];

		ue_excerpt(ex, sizeof(ex), sizetext, strlen(sizetext));
		if (!*name)
			return ue_field_err(c, -EINVAL,
					    "two spaces in a row: use struct TYPE NAME SIZE with single spaces");
		if (!*sizetext)
			return ue_field_err(c, -EINVAL,
					    "missing struct size after the name");
		ret = ue_kstrtouint(sizetext, 10, &size);
		if (ret == -ERANGE)
			return ue_field_err(c, -EINVAL,
					    "struct size \"%s\" is too large (at most %d)",
					    ex, INT32_MAX);
		if (ret)
			return ue_field_err(c, -EINVAL,
					    "struct size \"%s\" is not a decimal number",
					    ex);
		/* The kernel keeps the size in an int. */
		if (size > INT32_MAX)
			return ue_field_err(c, -EINVAL,
					    "struct size %u is too large (at most %d)",
					    size, INT32_MAX);
		kind = HVT_UE_KIND_STRUCT;
	}
	if (size == 0)
		return ue_field_err(c, -EINVAL, "struct size must not be 0");

	/* Accepted by the kernel, refused here (docs/userevents.md). */
	if (!*name)
		return ue_field_err(c, -EINVAL,
				    "missing field name (a trailing space after the type?)");
	if (ue_has_ctrl(type) || ue_has_ctrl(name))
		return ue_field_err(c, -EINVAL,
				    "only printable ASCII characters are allowed in field types and names (no tabs, newlines or bytes >= 0x7f)");
	if (*offset + size > INT32_MAX)
		return ue_field_err(c, -EINVAL,
				    "the record would exceed %d bytes", INT32_MAX);

	f->type = type;
	f->name = name;
	f->offset = (uint32_t)*offset;
	f->size = size;
	f->kind = kind;
	f->is_signed = type[0] != 'u';
	*offset += size;
	return 1;
}

/* One allocation: the def, its fields, then the working copy of the text. */
struct ue_def_mem {
	struct hvtrace_ue_def def;
	struct hvtrace_ue_field fields[];
};

int hvt_ue_parse(const char *text, struct hvtrace_ue_def **out,
		 struct hvtrace_ue_error *err)
{
	struct ue_field_ctx c = { .orig = text, .err = err };
	size_t len = strlen(text), nmax = 1, name_len;
	struct ue_def_mem *m;
	const char *args_in;
	char *buf, *args, *piece;
	uint64_t offset = HVT_UE_COMMON_SIZE;
	uint32_t n = 0;
	int ret;
	size_t i;

	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
	ret = ue_name_span(text, &name_len, &args_in, err);
	if (ret)
		return ret;
	for (i = 0; i < len; i++)
		nmax += text[i] == ';';
	if (nmax > (SIZE_MAX - sizeof(*m) - len - 1) / sizeof(m->fields[0]))
		return ue_err(err, -ENOMEM, "out of memory");
	m = malloc(sizeof(*m) + nmax * sizeof(m->fields[0]) + len + 1);
	if (!m)
		return ue_err(err, -ENOMEM, "out of memory");
	buf = (char *)(m->fields + nmax);
	memcpy(buf, text, len + 1);
	c.buf = buf;
	buf[name_len] = '\0';
	args = args_in ? buf + (args_in - text) : NULL;

	while (args && (piece = strsep(&args, ";")) != NULL) {
		c.no++;
		ret = ue_parse_field(&c, piece, &offset, &m->fields[n]);
		if (ret < 0) {
			free(m);
			return ret;
		}
		n += (uint32_t)ret;
	}
	m->def.name = buf;
	m->def.nr_fields = n;
	m->def.fields = m->fields;
	m->def.record_size = (uint32_t)offset;
	*out = &m->def;
	return 0;
}

void hvt_ue_def_free(struct hvtrace_ue_def *def)
{
	/* def is the first member of its allocation. */
	free(def);
}

/* --- matching --------------------------------------------------------- */

/* user_dyn_field_set_string(): words up to and including one with ';'. */
static void ue_join_words(struct ue_buf *b, int argc, char *const *argv,
			  int *iout, bool *colon)
{
	int i = *iout;

	*colon = false;
	for (; i < argc; i++) {
		if (i != *iout)
			ue_buf_put(b, " ", 1);
		ue_buf_put(b, argv[i], strlen(argv[i]));
		if (strchr(argv[i], ';')) {
			i++;
			*colon = true;
			break;
		}
	}
	*iout = i;
}

/* user_field_set_string(): "type name[ size][;]". */
static void ue_field_words(struct ue_buf *b, const struct hvtrace_ue_field *f,
			   bool colon)
{
	ue_buf_printf(b, "%s %s", f->type, f->name);
	if (!strncmp(f->type, "struct ", 7))
		ue_buf_printf(b, " %d", (int)f->size);
	if (colon)
		ue_buf_put(b, ";", 1);
}

bool hvt_ue_match_argv(const struct hvtrace_ue_def *def, int argc,
		       char *const *argv)
{
	struct ue_buf want = { 0 }, have = { 0 };
	bool colon, match = true;
	uint32_t k;
	int i = 0;

	if (argc == 0)
		return def->nr_fields == 0;
	for (k = 0; k < def->nr_fields && match; k++) {
		if (i >= argc) {
			match = false;
			break;
		}
		have.len = want.len = 0;
		if (have.p)
			have.p[0] = '\0';
		if (want.p)
			want.p[0] = '\0';
		ue_join_words(&have, argc, argv, &i, &colon);
		ue_field_words(&want, &def->fields[k], colon);
		if (have.failed || want.failed || !have.p || !want.p ||
		    strcmp(have.p, want.p))
			match = false;
	}
	free(have.p);
	free(want.p);
	return match && i == argc;
}

bool hvtrace_ue_match_args(const struct hvtrace_ue_def *def, const char *args)
{
	struct ue_buf fixed = { 0 };
	char **argv;
	bool match;
	int argc = 0;
	const char *p;

	if (!args)
		return def->nr_fields == 0;
	/* Make "a;b" read "a; b", as user_event_argv_split() does. */
	for (p = args; *p; p++) {
		ue_buf_put(&fixed, p, 1);
		if (*p == ';' && !ue_isspace((unsigned char)p[1]))
			ue_buf_put(&fixed, " ", 1);
	}
	if (fixed.failed) {
		free(fixed.p);
		return false;
	}
	argv = ue_argv_split(fixed.p ? fixed.p : "", &argc);
	free(fixed.p);
	if (!argv)
		return false;
	match = hvt_ue_match_argv(def, argc, argv);
	free(argv);
	return match;
}
