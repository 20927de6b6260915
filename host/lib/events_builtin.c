// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the tracefs texts hvtrace generates itself.
 *
 *   events/header_page and events/header_event, as the kernel prints them
 *   for a 64-bit writer (kernel/trace/ring_buffer.c
 *   ring_buffer_print_page_header() and ring_buffer_print_entry_header());
 *
 *   the format files of the built-in "hvtrace" events written by the
 *   loopback writer.  selftest mirrors upstream's test remote: a u64 id,
 *   printed "id=%llu".
 */
#include <errno.h>
#include <stdio.h>

#include "hvtrace-local.h"

HVTRACE_API int hvtrace_header_page_text(uint32_t subbuf_size, char *buf,
					 size_t size)
{
	if (subbuf_size <= HVT_PAGE_HDR_SIZE)
		return hvt_err(-EINVAL, "sub-buffer size %u too small",
			       subbuf_size);
	/* 'overwrite' shares commit's offset and is signed like a long,
	 * exactly as the kernel prints it. */
	return snprintf(buf, size,
			"\tfield: u64 timestamp;\toffset:0;\tsize:8;\t"
			"signed:0;\n"
			"\tfield: local_t commit;\toffset:8;\tsize:8;\t"
			"signed:1;\n"
			"\tfield: int overwrite;\toffset:8;\tsize:1;\t"
			"signed:1;\n"
			"\tfield: char data;\toffset:16;\tsize:%u;\t"
			"signed:0;\n",
			subbuf_size - HVT_PAGE_HDR_SIZE);
}

HVTRACE_API int hvtrace_header_event_text(char *buf, size_t size)
{
	return snprintf(buf, size,
			"# compressed entry header\n"
			"\ttype_len    :    5 bits\n"
			"\ttime_delta  :   27 bits\n"
			"\tarray       :   32 bits\n"
			"\n"
			"\tpadding     : type == %u\n"
			"\ttime_extend : type == %u\n"
			"\ttime_stamp : type == %u\n"
			"\tdata max type_len  == %u\n",
			HVT_TYPE_PADDING, HVT_TYPE_TIME_EXTEND,
			HVT_TYPE_TIME_STAMP, HVT_TYPE_DATA_MAX);
}

/* The four common fields every format starts with (Linux 6.x). */
#define BUILTIN_COMMON							\
	"format:\n"							\
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\t"	\
	"signed:0;\n"							\
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\t"	\
	"signed:0;\n"							\
	"\tfield:unsigned char common_preempt_count;\toffset:3;\t"	\
	"size:1;\tsigned:0;\n"						\
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"	\
	"\n"

#define STR_(x) #x
#define STR(x) STR_(x)

struct builtin_event {
	const char *name;
	unsigned int id;
	const char *format;
};

static const struct builtin_event builtin_events[] = {
	{
		.name = "selftest",
		.id = HVTRACE_EVENT_SELFTEST_ID,
		.format = "name: selftest\n"
			  "ID: " STR(57344) "\n" BUILTIN_COMMON
			  "\tfield:u64 id;\toffset:8;\tsize:8;\tsigned:0;\n"
			  "\n"
			  "print fmt: \"id=%llu\", REC->id\n",
	},
};

_Static_assert(HVTRACE_EVENT_SELFTEST_ID == 57344,
	       "the selftest format text spells its id");
_Static_assert(HVTRACE_EVENT_SELFTEST_BIT == 0,
	       "builtin_events[] is indexed by enable bit");

HVTRACE_API const char *hvtrace_builtin_format(unsigned int index,
					       const char **name,
					       unsigned int *id)
{
	if (index >= sizeof(builtin_events) / sizeof(builtin_events[0]))
		return NULL;
	if (name)
		*name = builtin_events[index].name;
	if (id)
		*id = builtin_events[index].id;
	return builtin_events[index].format;
}
