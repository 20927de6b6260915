// SPDX-License-Identifier: MIT
/*
 * Text a kernel prints for a user event: the format file, the print fmt
 * and the dynamic_events line.
 *
 * The format file is what kernel/trace/trace_events.c f_show() prints:
 * "name:", "ID:", the four common fields, a blank line, the user fields
 * packed from offset 8, a blank line and "print fmt:".  A field whose type
 * contains '[' (and does not start with "__data_loc") is printed as
 * "TYPE NAME[LEN]" with the text before '[' as TYPE; user_events never
 * sets LEN, which a kernel built with init_on_alloc (Debian's default)
 * leaves at 0, so the line reads "char msg[];" with the real size in
 * "size:".  tests/golden/userevents/kernel/ holds captures from Linux 6.12
 * that this output is compared with byte for byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userevents-local.h"

static int ue_starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* user_field_format() */
static const char *ue_field_conv(const char *type)
{
	static const struct {
		const char *type;
		const char *conv;
	} map[] = {
		{ "s64", "%lld" }, { "u64", "%llu" }, { "s32", "%d" },
		{ "u32", "%u" }, { "int", "%d" }, { "unsigned int", "%u" },
		{ "s16", "%d" }, { "u16", "%u" }, { "short", "%d" },
		{ "unsigned short", "%u" }, { "s8", "%d" }, { "u8", "%u" },
		{ "char", "%d" }, { "unsigned char", "%u" },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(type, map[i].type))
			return map[i].conv;
	if (strstr(type, "char["))
		return "%s";
	/* struct and loc types other than strings: shown as a u64 */
	return "%llu";
}

/* user_field_is_dyn_string() */
static const char *ue_str_func(const char *type)
{
	const char *fn;

	if (ue_starts(type, "__data_loc "))
		fn = "__get_str";
	else if (ue_starts(type, "__rel_loc "))
		fn = "__get_rel_str";
	else
		return NULL;
	return strstr(type, "char") ? fn : NULL;
}

static void ue_print_fmt_into(struct ue_buf *b, const struct hvtrace_ue_def *def)
{
	const struct hvtrace_ue_field *f;
	uint32_t i;

	ue_buf_put(b, "\"", 1);
	for (i = 0; i < def->nr_fields; i++) {
		f = &def->fields[i];
		ue_buf_printf(b, "%s%s=%s", i ? " " : "", f->name,
			      ue_field_conv(f->type));
	}
	ue_buf_put(b, "\"", 1);
	for (i = 0; i < def->nr_fields; i++) {
		const char *fn;

		f = &def->fields[i];
		fn = ue_str_func(f->type);
		if (fn)
			ue_buf_printf(b, ", %s(%s)", fn, f->name);
		else
			ue_buf_printf(b, ", REC->%s", f->name);
	}
}

char *hvtrace_ue_print_fmt(const struct hvtrace_ue_def *def)
{
	struct ue_buf b = { 0 };

	ue_print_fmt_into(&b, def);
	return ue_buf_finish(&b);
}

char *hvt_ue_format_text(const struct hvtrace_ue_def *def, unsigned int id)
{
	struct ue_buf b = { 0 };
	uint32_t i;

	ue_buf_printf(&b, "name: %s\nID: %d\nformat:\n", def->name, (int)id);
	ue_buf_printf(&b,
		      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		      "\n");
	for (i = 0; i < def->nr_fields; i++) {
		const struct hvtrace_ue_field *f = &def->fields[i];
		const char *arr = strchr(f->type, '[');

		if (ue_starts(f->type, "__data_loc"))
			arr = NULL;
		if (!arr)
			ue_buf_printf(&b, "\tfield:%s %s;", f->type, f->name);
		else
			ue_buf_printf(&b, "\tfield:%.*s %s[];",
				      (int)(arr - f->type), f->type, f->name);
		ue_buf_printf(&b, "\toffset:%u;\tsize:%u;\tsigned:%d;\n",
			      f->offset, f->size, f->is_signed ? 1 : 0);
	}
	ue_buf_put(&b, "\nprint fmt: ", 12);
	ue_print_fmt_into(&b, def);
	ue_buf_put(&b, "\n", 1);
	return ue_buf_finish(&b);
}

void ue_dyn_line_into(struct ue_buf *b, const struct hvtrace_ue_def *def)
{
	uint32_t i;

	ue_buf_printf(b, "%s%s", HVT_UE_PREFIX, def->name);
	for (i = 0; i < def->nr_fields; i++) {
		const struct hvtrace_ue_field *f = &def->fields[i];

		ue_buf_printf(b, "%s%s %s", i ? "; " : " ", f->type, f->name);
		if (ue_starts(f->type, "struct "))
			ue_buf_printf(b, " %d", (int)f->size);
	}
}

char *hvtrace_ue_dyn_line(const struct hvtrace_ue_def *def)
{
	struct ue_buf b = { 0 };

	ue_dyn_line_into(&b, def);
	return ue_buf_finish(&b);
}

int hvt_ue_validate_record(const struct hvtrace_ue_def *def, const void *rec,
			   size_t len)
{
	const uint8_t *data = rec;
	uint32_t i;

	if (len < def->record_size)
		return -EINVAL;
	/* user_event_validate(), in field order. */
	for (i = 0; i < def->nr_fields; i++) {
		const struct hvtrace_ue_field *f = &def->fields[i];
		uint32_t loc, off, size;
		uint64_t pos;

		if (f->kind != HVT_UE_KIND_DATA_LOC &&
		    f->kind != HVT_UE_KIND_REL_LOC)
			continue;
		/* Records are little-endian (HVT_AREA_LITTLE_ENDIAN). */
		loc = (uint32_t)data[f->offset] |
		      (uint32_t)data[f->offset + 1] << 8 |
		      (uint32_t)data[f->offset + 2] << 16 |
		      (uint32_t)data[f->offset + 3] << 24;
		off = loc & 0xffff;
		size = loc >> 16;
		if (f->kind == HVT_UE_KIND_REL_LOC)
			pos = (uint64_t)f->offset + sizeof(loc) + off;
		else
			pos = off;
		pos += size;
		if (pos > len)
			return -EFAULT;
		/* The kernel reads the byte before pos; at 0 there is none. */
		if (strstr(f->type, "char") && (pos == 0 || data[pos - 1]))
			return -EFAULT;
	}
	return 0;
}
