/* SPDX-License-Identifier: MIT */
/*
 * The common fields of a kernel event's format file, as tracefs prints
 * them (8 bytes: type, flags, preempt count, pid), for tests that build
 * format text of their own.
 */
#ifndef HVT_TEST_KFMT_COMMON_H
#define HVT_TEST_KFMT_COMMON_H

#define KFMT_COMMON                                                            \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\t"    \
	"signed:0;\n"                                                          \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

#endif
