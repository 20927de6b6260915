// SPDX-License-Identifier: MIT
/*
 * Cross-check the generated user_events formats with the real
 * libtraceevent: every format parses with tep_parse_event(), records built
 * from the layout libtraceevent read out of the format (not from the
 * generator's own tables) print through tep_print_event() as the print fmt
 * says, for numbers of every width and sign, char[N], __data_loc and
 * __rel_loc strings and struct fields; and records written by a real Linux
 * 6.12 kernel (tests/golden/userevents/kernel/raw.cpu0, decoded with
 * kbuffer) print the same through our format as through the kernel's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <trace-seq.h>

#include "hvt_test.h"
#include "../../host/userevents/userevents-local.h"

enum vkind { V_END, V_NUM, V_STR, V_BYTES };

struct value {
	const char *field;
	enum vkind kind;
	unsigned long long num;
	const char *str;	/* V_STR: with its NUL; V_BYTES: len bytes */
	size_t len;
};

struct tcase {
	const char *def;
	struct value vals[16];
	const char *expect;
};

#define NUM(f, v) { f, V_NUM, (unsigned long long)(v), NULL, 0 }
#define STR(f, s) { f, V_STR, 0, s, 0 }
#define BYTES(f, s, n) { f, V_BYTES, 0, s, n }

static const struct tcase cases[] = {
	{ "ue_empty", { { 0 } }, "" },
	{ "ue_ints s64 a;u64 b;s32 c;u32 d;int e;unsigned int f;s16 g;u16 h;short i;unsigned short j;s8 k;u8 l;char m;unsigned char n",
	  { NUM("a", -1LL), NUM("b", 18446744073709551615ULL),
	    NUM("c", 0x80000000u), NUM("d", 4294967295u), NUM("e", -5),
	    NUM("f", 7), NUM("g", 0x8000), NUM("h", 65535), NUM("i", -1),
	    NUM("j", 2), NUM("k", 0x80), NUM("l", 255), NUM("m", -3),
	    NUM("n", 200) },
	  /*
	   * The kernel's print fmt says %d for s16/short/s8/char, and
	   * libtraceevent 1.7.1 reads fields narrower than 32 bits without
	   * sign extension, so -32768, -1, -128 and -3 print as their
	   * unsigned bit patterns (the kernel's own trace output shows them
	   * unsigned too); 32- and 64-bit fields print signed.
	   */
	  "a=-1 b=18446744073709551615 c=-2147483648 d=4294967295 e=-5 f=7 g=32768 h=65535 i=65535 j=2 k=128 l=255 m=253 n=200" },
	{ "ue_chars char[20] msg;unsigned char[4] raw;char[0x10] hex;char[010] oct;char[1] one",
	  { STR("msg", "hello, world"), STR("raw", "abc"),
	    STR("hex", "sixteen bytes.."), STR("oct", "octal"),
	    STR("one", "") },
	  "msg=hello, world raw=abc hex=sixteen bytes.. oct=octal one=" },
	{ "ue_locs __data_loc char[] dstr;__rel_loc char[] rstr;__data_loc unsigned char[] dustr;__rel_loc unsigned char[] rustr",
	  { STR("dstr", "data"), STR("rstr", "relative"),
	    STR("dustr", "unsigned data"), STR("rustr", "") },
	  "dstr=data rstr=relative dustr=unsigned data rustr=" },
	/* s16 -2 prints 65534: see ue_ints. */
	{ "ue_w u32 a;s16 b;char[6] c;__data_loc char[] d;__rel_loc char[] e;struct pt p 8",
	  { NUM("a", 0x01020304), NUM("b", -2), STR("c", "abc"),
	    STR("d", "hello"), STR("e", "world"),
	    NUM("p", 0x8877665544332211ULL) },
	  "a=16909060 b=65534 c=abc d=hello e=world p=9833440827789222417" },
	{ "ue_structs struct foo f 4;u32 after;struct bar b 2;struct baz z 1",
	  { NUM("f", 123456), NUM("after", 9), NUM("b", 65535),
	    NUM("z", 255) },
	  "f=123456 after=9 b=65535 z=255" },
	{ "ue_mixed u8 tag;__rel_loc char[] name;u64 ns;char[3] cc;s32 delta",
	  { NUM("tag", 1), STR("name", "rel after a u8"), NUM("ns", 1000000007ULL),
	    BYTES("cc", "xyz", 3), NUM("delta", -100) },
	  "tag=1 name=rel after a u8 ns=1000000007 cc=xyz delta=-100" },
};

/* Build a record from the layout libtraceevent parsed. */
static size_t build(struct tep_event *ev, int id, const struct value *vals,
		    unsigned char *rec, size_t cap)
{
	struct tep_format_field *f;
	size_t end = 0, i;

	memset(rec, 0, cap);
	for (f = ev->format.common_fields; f; f = f->next)
		if ((size_t)(f->offset + f->size) > end)
			end = (size_t)(f->offset + f->size);
	for (f = ev->format.fields; f; f = f->next)
		if ((size_t)(f->offset + f->size) > end)
			end = (size_t)(f->offset + f->size);
	rec[0] = (unsigned char)id;
	rec[1] = (unsigned char)(id >> 8);
	for (; vals->kind != V_END; vals++) {
		f = tep_find_field(ev, vals->field);
		if (!f)
			t_fail("%s: libtraceevent has no field %s", ev->name,
			       vals->field);
		if (vals->kind == V_NUM) {
			for (i = 0; i < (size_t)f->size && i < 8; i++)
				rec[f->offset + i] =
					(unsigned char)(vals->num >> (8 * i));
		} else if (!strncmp(f->type, "__data_loc", 10) ||
			   !strncmp(f->type, "__rel_loc", 9)) {
			size_t n = strlen(vals->str) + 1;
			uint32_t off = (uint32_t)end, loc;

			t_assert(end + n <= cap);
			memcpy(rec + end, vals->str, n);
			end += n;
			/* __rel_loc counts from the end of the loc field. */
			if (f->type[2] == 'r')
				off -= (uint32_t)(f->offset + 4);
			loc = (uint32_t)n << 16 | off;
			for (i = 0; i < 4; i++)
				rec[f->offset + i] =
					(unsigned char)(loc >> (8 * i));
		} else {
			size_t n = vals->kind == V_STR ? strlen(vals->str) + 1 :
							 vals->len;

			t_assert(n <= (size_t)f->size);
			memcpy(rec + f->offset, vals->str, n);
		}
	}
	return end;
}

static char *print_record(struct tep_handle *tep, void *data, size_t size)
{
	struct tep_record r;
	struct trace_seq s;
	char *out;

	memset(&r, 0, sizeof(r));
	r.data = data;
	r.size = (int)size;
	trace_seq_init(&s);
	tep_print_event(tep, &s, &r, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&s);
	out = strdup(s.buffer);
	trace_seq_destroy(&s);
	t_assert(out);
	return out;
}

static void parse(struct tep_handle *tep, const char *text)
{
	char buf[256];
	int ret;

	ret = tep_parse_event(tep, text, strlen(text), HVT_UE_SYSTEM);
	if (ret) {
		tep_strerror(tep, ret, buf, sizeof(buf));
		t_fail("libtraceevent cannot parse:\n%s\n(%s)", text, buf);
	}
}

static void check_case(const struct tcase *c, int id)
{
	struct tep_handle *tep = tep_alloc();
	const struct hvtrace_ue_field *uf;
	struct tep_format_field *f;
	struct hvtrace_ue_error err;
	struct hvtrace_ue_def *def;
	struct tep_event *ev;
	unsigned char rec[4096];
	char *text, *out;
	size_t n;
	uint32_t i;

	t_assert(tep);
	tep_set_long_size(tep, 8);
	if (hvt_ue_parse(c->def, &def, &err))
		t_fail("%s: %s", c->def, err.msg);
	text = hvt_ue_format_text(def, (unsigned int)id);
	t_assert(text);
	parse(tep, text);
	ev = tep_find_event(tep, id);
	if (!ev)
		t_fail("libtraceevent does not know id %d after parsing:\n%s",
		       id, text);
	t_assert(!strcmp(ev->name, def->name));
	t_eq(ev->format.nr_common, 4);
	t_eq(ev->format.nr_fields, def->nr_fields);
	/* libtraceevent reads the layout we meant. */
	for (i = 0, f = ev->format.fields; i < def->nr_fields;
	     i++, f = f->next) {
		uf = &def->fields[i];
		t_assert(f);
		if (strcmp(f->name, uf->name))
			t_fail("%s: field %u is %s for libtraceevent, %s here",
			       def->name, i, f->name, uf->name);
		t_eq(f->offset, uf->offset);
		t_eq(f->size, uf->size);
		t_eq(!!(f->flags & TEP_FIELD_IS_SIGNED), uf->is_signed);
		if (uf->kind == HVT_UE_KIND_DATA_LOC ||
		    uf->kind == HVT_UE_KIND_REL_LOC)
			t_assert(f->flags & TEP_FIELD_IS_DYNAMIC);
		if (uf->kind == HVT_UE_KIND_REL_LOC)
			t_assert(f->flags & TEP_FIELD_IS_RELATIVE);
		if (uf->kind == HVT_UE_KIND_ARRAY)
			t_assert(f->flags & TEP_FIELD_IS_STRING);
	}
	n = build(ev, id, c->vals, rec, sizeof(rec));
	/* The record is one the kernel would have accepted. */
	t_eq(hvt_ue_validate_record(def, rec, n), 0);
	out = print_record(tep, rec, n);
	if (strcmp(out, c->expect))
		t_fail("%s prints\n  \"%s\"\nexpected\n  \"%s\"\nformat:\n%s",
		       def->name, out, c->expect, text);
	free(out);
	free(text);
	hvt_ue_def_free(def);
	tep_free(tep);
}

static char golden[1024];

static char *read_golden(const char *name, size_t *len)
{
	char path[2048];
	size_t n;
	char *buf;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", golden, name);
	f = fopen(path, "rb");
	if (!f)
		t_fail("cannot open %s", path);
	buf = malloc(65537);
	t_assert(buf);
	n = fread(buf, 1, 65536, f);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void find_golden(void)
{
	const char *env = getenv("HVT_SRCTREE");
	char *p;

	if (env) {
		snprintf(golden, sizeof(golden),
			 "%s/tests/golden/userevents/kernel", env);
		return;
	}
	snprintf(golden, sizeof(golden), "%s", __FILE__);
	p = strstr(golden, "/tests/unit/");
	if (!p)
		t_fail("set HVT_SRCTREE to the source tree");
	strcpy(p, "/tests/golden/userevents/kernel");
}

/*
 * The kernel's own records of ue_w (commands.txt, "records"): decoded with
 * the kernel's format and with ours, the text must agree and say what the
 * payloads held.
 */
static void check_kernel_records(void)
{
	static const char *const expect[] = {
		"a=16909060 b=65534 c=abc d=hello e=world p=9833440827789222417",
		"a=7 b=32767 c=abcdef d=hi e= p=9223372036854775808",
		"a=4294967295 b=32768 c= d= e= p=18446744073709551615",
	};
	struct tep_handle *kt = tep_alloc(), *ht = tep_alloc();
	char *kformat, *page, *hformat, *idl;
	struct hvtrace_ue_error err;
	struct hvtrace_ue_def *def;
	struct kbuffer *kb;
	size_t plen;
	int id, n = 0;
	void *data;

	t_assert(kt && ht);
	kformat = read_golden("format.ue_w", NULL);
	page = read_golden("raw.cpu0", &plen);
	t_eq(plen, 4096);
	idl = strstr(kformat, "\nID: ");
	t_assert(idl);
	id = atoi(idl + 5);
	parse(kt, kformat);
	if (hvt_ue_parse("ue_w u32 a;s16 b;char[6] c;__data_loc char[] d;__rel_loc char[] e;struct pt p 8",
			 &def, &err))
		t_fail("%s", err.msg);
	hformat = hvt_ue_format_text(def, (unsigned int)id);
	t_assert(hformat);
	parse(ht, hformat);

	kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	t_assert(kb);
	t_eq(kbuffer_load_subbuffer(kb, page), 0);
	for (data = kbuffer_read_event(kb, NULL); data;
	     data = kbuffer_next_event(kb, NULL)) {
		unsigned int size = kbuffer_event_size(kb);
		char *kout, *hout;

		t_assert(n < 3);
		/* Every record the kernel let through passes our checks. */
		t_eq(hvt_ue_validate_record(def, data, size), 0);
		kout = print_record(kt, data, size);
		hout = print_record(ht, data, size);
		if (strcmp(kout, hout) || strcmp(hout, expect[n]))
			t_fail("kernel record %d: kernel format \"%s\", ours \"%s\", expected \"%s\"",
			       n, kout, hout, expect[n]);
		free(kout);
		free(hout);
		n++;
	}
	/* The kernel accepted three of the six writes (kernel/results.txt). */
	t_eq(n, 3);
	kbuffer_free(kb);
	hvt_ue_def_free(def);
	free(hformat);
	free(kformat);
	free(page);
	tep_free(kt);
	tep_free(ht);
}

int main(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(&cases[i], HVT_UE_ID_BASE + (int)i);
	find_golden();
	check_kernel_records();
	printf("%zu definitions parsed and printed by libtraceevent; 3 kernel records agree\n",
	       i);
	return 0;
}
