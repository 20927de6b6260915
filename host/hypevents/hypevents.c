// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the hypervisor's event table.
 *
 * Expands HVT_HYP_EVENTS() from <hvtrace/hyp_events.h> (the one place the
 * events are declared) into the host's view of them: for each event its
 * name, id, enable bit, fields, and the text of its tracefs-style
 * events/hypervisor/<name>/{format,id} files, in exactly the syntax a
 * Linux kernel uses, so libtraceevent's tep_parse_event() reads them as it
 * reads the kernel's own.
 *
 * The texts are generated once, on first use, from offsetof()/sizeof() of
 * the same record structs the writer fills.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <hvtrace/hyp_events.h>

/* Per-event field tables. */
#define HYPEV_FIELD_(rec, t, n)						\
	{ #t, #n, offsetof(struct rec, n),				\
	  sizeof(((struct rec *)0)->n), HVT_HYP_IS_SIGNED(t) },
#define HYPEV_FIELDS_(ev, print, ...)					\
	static const struct hvt_hypevent_field hypev_fields_##ev[] = {	\
		HVT_PP_EACH_ARG(HYPEV_FIELD_, hvt_hyp_rec_##ev, __VA_ARGS__) \
	};
HVT_HYP_EVENTS(HYPEV_FIELDS_)
#undef HYPEV_FIELDS_

/* The table, without the generated texts. */
#define HYPEV_ENTRY_(ev, print, ...)					\
	{								\
		.name = #ev,						\
		.system = HVT_HYP_SYSTEM,				\
		.index = HVT_HYP_EVENT_##ev,				\
		.id = HVT_HYP_ID_##ev,					\
		.rec_size = sizeof(struct hvt_hyp_rec_##ev),		\
		.nr_fields = sizeof(hypev_fields_##ev) /		\
			     sizeof(hypev_fields_##ev[0]),		\
		.fields = hypev_fields_##ev,				\
		.print_fmt = HVT_PP_STR print,				\
	},
static struct hvt_hypevent hypev_table[HVT_HYP_NR_EVENTS] = {
	HVT_HYP_EVENTS(HYPEV_ENTRY_)
};
#undef HYPEV_ENTRY_

/*
 * Text buffers.  The largest format is the common block (~300 bytes) plus
 * at most eight ~70-byte field lines plus the print fmt line.
 */
#define HYPEV_FORMAT_MAX	2048
static char hypev_format[HVT_HYP_NR_EVENTS][HYPEV_FORMAT_MAX];
static char hypev_id[HVT_HYP_NR_EVENTS][16];
static pthread_once_t hypev_once = PTHREAD_ONCE_INIT;

/* The common fields, as every kernel format file lists them. */
static const char hypev_common[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

#define HYPEV_COMMON_AT(f, off)	(offsetof(struct hvt_common_fields, f) == (off))
HVT_STATIC_ASSERT(HYPEV_COMMON_AT(common_type, 0) &&
			  HYPEV_COMMON_AT(common_flags, 2) &&
			  HYPEV_COMMON_AT(common_preempt_count, 3) &&
			  HYPEV_COMMON_AT(common_pid, 4),
		  "the common block text matches struct hvt_common_fields");

static size_t hypev_append(char *buf, size_t len, size_t pos, const char *fmt,
			   ...) __attribute__((format(printf, 4, 5)));

static size_t hypev_append(char *buf, size_t len, size_t pos, const char *fmt,
			   ...)
{
	va_list ap;
	int n;

	if (pos >= len)
		return pos;
	va_start(ap, fmt);
	n = vsnprintf(buf + pos, len - pos, fmt, ap);
	va_end(ap);
	return n < 0 ? len : pos + (size_t)n;
}

static void hypev_build(void)
{
	unsigned int i, f;

	for (i = 0; i < HVT_HYP_NR_EVENTS; i++) {
		struct hvt_hypevent *ev = &hypev_table[i];
		char *buf = hypev_format[i];
		size_t pos = 0;

		pos = hypev_append(buf, HYPEV_FORMAT_MAX, pos,
				   "name: %s\nID: %u\nformat:\n%s\n", ev->name,
				   ev->id, hypev_common);
		for (f = 0; f < ev->nr_fields; f++) {
			const struct hvt_hypevent_field *fl = &ev->fields[f];

			pos = hypev_append(buf, HYPEV_FORMAT_MAX, pos,
					   "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%d;\n",
					   fl->type, fl->name, fl->offset,
					   fl->size, fl->is_signed);
		}
		pos = hypev_append(buf, HYPEV_FORMAT_MAX, pos,
				   "\nprint fmt: %s\n", ev->print_fmt);
		/* A truncated format would be a build bug: make it loud. */
		if (pos >= HYPEV_FORMAT_MAX)
			snprintf(buf, HYPEV_FORMAT_MAX,
				 "name: %s\nID: %u\nformat:\n(format text too long: raise HYPEV_FORMAT_MAX)\n",
				 ev->name, ev->id);
		ev->format = buf;
		snprintf(hypev_id[i], sizeof(hypev_id[i]), "%u\n", ev->id);
		ev->id_text = hypev_id[i];
	}
}

static const struct hvt_hypevent *hypev_entry(unsigned int index)
{
	pthread_once(&hypev_once, hypev_build);
	return index < HVT_HYP_NR_EVENTS ? &hypev_table[index] : NULL;
}

unsigned int hvt_hypevents_count(void)
{
	return HVT_HYP_NR_EVENTS;
}

const struct hvt_hypevent *hvt_hypevents_get(unsigned int index)
{
	return hypev_entry(index);
}

const struct hvt_hypevent *hvt_hypevents_by_id(unsigned int id)
{
	if (id < HVT_HYP_ID_BASE)
		return NULL;
	return hypev_entry(id - HVT_HYP_ID_BASE);
}

const struct hvt_hypevent *hvt_hypevents_by_name(const char *name)
{
	unsigned int i;

	if (!name)
		return NULL;
	for (i = 0; i < HVT_HYP_NR_EVENTS; i++)
		if (!strcmp(hypev_table[i].name, name))
			return hypev_entry(i);
	return NULL;
}
