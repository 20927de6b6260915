// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the names a ring's own records give their pids
 * (host/lib/comm.c), which reads a guest's format (through
 * libtraceevent's parse of it) and then its records, both hostile, to
 * name guest pids in stream lines and trace.dat files.  The input is a
 * format text (parsed as an event of the "sched" system, so that its
 * comm/pid field pairs are looked up), a NUL, then one record.
 *
 * Beyond the sanitizers: a record gives 0, 1 or 2 names, the same when
 * given again (the per-id lookup cached); every name in the table is
 * non-empty, shorter than 16 bytes, without control characters, for a
 * pid in 1..4194304; the table never holds more than its bound.
 *
 * The format passes the checks of hvtrace_decoder_add_format() first, as
 * every reader's does (host/lib/format_text.c: its bytes, then a parse in
 * a forked child).
 *
 * Seeds: tests/fuzz/corpus/decoder_comms/ (the Debian 6.12 guest's
 * sched_switch format with records of it, and variants of the format).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * libtraceevent 1.7.1 leaks a little on some of its own parse errors of
 * a hostile format (as fuzz/ue_parse found); those leaks are not ours to
 * find.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

static int check(void *arg, int pid, const char *comm)
{
	size_t n = strnlen(comm, 16), i;

	(*(unsigned int *)arg)++;
	fuzz_assert(pid > 0 && pid <= 4194304);
	fuzz_assert(n > 0 && n < 16);
	for (i = 0; i < n; i++)
		fuzz_assert((unsigned char)comm[i] >= 0x20 && comm[i] != 0x7f);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t tlen = nul ? (size_t)(nul - data) : size;
	struct hvtrace_decoder d = { 0 };
	struct hvtrace_comm_stats st;
	struct hvtrace_record rec = { .ts = 1 };
	unsigned int walked = 0;
	uint8_t *r;
	uint32_t rlen;
	int n;

	d.tep = tep_alloc();
	if (!d.tep || hvt_dec_comm_init(&d)) {
		if (d.tep)
			tep_free(d.tep);
		return 0;
	}
	tep_set_long_size(d.tep, 8);
	tep_set_file_bigendian(d.tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(d.tep, TEP_LITTLE_ENDIAN);
	/* As hvtrace_decoder_add_format() does: a format that is not ASCII
	 * text, or that crashes libtraceevent's parser in a forked child,
	 * never reaches the decoder's own handle. */
	{
		struct hvt_tep_text t = {
			.kind = HVT_TEP_FORMAT,
			.system = "sched",
			.text = (const char *)data,
			.len = tlen,
		};

		if (hvt_tep_sandbox(&t, 1, 8) == 0)
			hvt_tep_apply(d.tep, &t, 8);
	}
	/* The record in a buffer of its own size: reads past it are found. */
	rlen = nul ? (uint32_t)(size - tlen - 1) : 0;
	r = malloc(rlen ? rlen : 1);
	if (r) {
		if (rlen)
			memcpy(r, nul + 1, rlen);
		rec.data = r;
		rec.size = rlen;
		n = hvtrace_decoder_learn_comms(&d, &rec);
		fuzz_assert(n >= 0 && n <= 2);
		fuzz_assert(hvtrace_decoder_learn_comms(&d, &rec) == n);
		fuzz_assert(!hvtrace_decoder_comm_each(&d, 0, check, &walked));
		fuzz_assert(!hvtrace_decoder_comm_stats(&d, &st));
		fuzz_assert(st.entries == walked && st.learned <= st.entries);
		fuzz_assert(st.entries <= st.max_entries && walked <= 2);
		free(r);
	}
	hvt_dec_comm_fini(&d);
	tep_free(d.tep);
	return 0;
}
