// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the kernel's form of a symbol put into a decoder's text
 * (host/lib/ksyms.c, hvt_ksyms_expand()).  The text is libtraceevent's
 * print of a record, where a resolver's answers carry a tail (size,
 * module) and a record's own strings -- hostile, a guest's -- may hold
 * any byte, the tail's byte included.
 *
 * Beyond the sanitizers: a text without the tail's byte comes out as it
 * went in; the text out is never longer than the text in plus one byte
 * per tail byte (a tail taken adds "/0x", " [" and "]" and drops its
 * three tail bytes and its leading hex zeros); the bytes before the first
 * tail byte are kept as they are.
 *
 * Seeds: tests/fuzz/corpus/ksyms_expand/ (%ps and %pS with and without a
 * module and a size, broken tails, tail bytes in a record's string).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "ksyms-local.h"
#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	const char *first = memchr(in, HVT_KS_TAIL, size);
	struct trace_seq out;
	size_t i, tails = 0;

	if (size > 1u << 16)
		return 0;
	for (i = 0; i < size; i++)
		tails += data[i] == (uint8_t)HVT_KS_TAIL;
	trace_seq_init(&out);
	hvt_ksyms_expand(&out, in, size);
	fuzz_assert(out.state == TRACE_SEQ__GOOD);
	fuzz_assert((size_t)out.len <= size + tails);
	if (!first)
		fuzz_assert((size_t)out.len == size && !memcmp(out.buffer, in, size));
	else
		fuzz_assert((size_t)out.len >= (size_t)(first - in) &&
			    !memcmp(out.buffer, in, (size_t)(first - in)));
	trace_seq_destroy(&out);
	return 0;
}
