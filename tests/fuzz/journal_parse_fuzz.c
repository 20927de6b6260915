// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the reader of a killed recording's journal
 * (host/tracedat/journal_parse.c), which hvtrace record --recover runs
 * over whatever a killed recorder left in FILE.unfinished.  The input is
 * the journal's bytes.
 *
 * Beyond the sanitizers: every record handed out lies inside the input,
 * after the previous one, has a known type and a length within the
 * limit, and carries the checksum of its header and payload; the pass
 * ends, and what it skipped is counted (at most the whole input).
 *
 * Seeds: tests/fuzz/corpus/journal_parse/ (a journal with a buffer, a
 * metadata snapshot and pages; the same cut in its last record).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/tracedat/tracedat-local.h"
#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvt_tdat_jparse j;
	struct hvt_tdat_jrec r;
	uint64_t last = 0, good = 0;
	unsigned int n = 0;

	if (hvt_tdat_jparse_init(&j, data, size))
		return 0;
	fuzz_assert(j.page_size >= 4096 && j.page_size <= 65536);
	while (hvt_tdat_jparse_next(&j, &r) > 0) {
		fuzz_assert(r.off >= HVT_TDAT_JOURNAL_HDR && r.off >= last);
		fuzz_assert(r.data == data + r.off + HVT_TDAT_JREC_HDR);
		fuzz_assert(r.len <= HVT_TDAT_JREC_MAX);
		fuzz_assert(r.off + HVT_TDAT_JREC_HDR + r.len <= size);
		fuzz_assert(r.type && r.type < HVT_TDAT_J_MAX);
		fuzz_assert(hvt_tdat_jrec_sum(r.type, r.a, r.b, r.data,
					      r.len) ==
			    ((uint32_t)data[r.off + 16] |
			     (uint32_t)data[r.off + 17] << 8 |
			     (uint32_t)data[r.off + 18] << 16 |
			     (uint32_t)data[r.off + 19] << 24));
		last = r.off + HVT_TDAT_JREC_HDR + r.len;
		good += HVT_TDAT_JREC_HDR + r.len;
		fuzz_assert(++n <= size / HVT_TDAT_JREC_HDR);
	}
	fuzz_assert(j.pos == size);
	fuzz_assert(j.bad_bytes + good + HVT_TDAT_JOURNAL_HDR <= size);
	fuzz_assert(hvt_tdat_jparse_next(&j, &r) == 0);
	return 0;
}
