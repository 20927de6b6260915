// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the guest sched_switch parser of the recorder
 * (host/tracedat/rkring_switch.c), which reads a guest's format text and
 * then its records to name guest pids in a trace.dat.  The input is the
 * format text, a NUL, then one record.
 *
 * Beyond the sanitizers: learned offsets fit in 16 bits; a format that
 * is not learned leaves the state unknown and names nothing; every comm
 * handed out is non-empty, shorter than 16 bytes and NUL-terminated, every
 * pid positive, and at most two per record.
 *
 * Seeds: tests/fuzz/corpus/tracedat_switch/ (the Debian 6.12 guest's
 * sched_switch format with records of it, and variants of the format).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/tracedat/tracedat-local.h"
#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int named;

static int sw_check(void *arg, int pid, const char *comm)
{
	size_t n = strnlen(comm, HVT_TDAT_COMM_LEN);

	(void)arg;
	fuzz_assert(pid > 0);
	fuzz_assert(n > 0 && n < HVT_TDAT_COMM_LEN);
	named++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvt_tdat_switch sw = {0};
	const uint8_t *nul = memchr(data, 0, size);
	size_t tlen = nul ? (size_t)(nul - data) : size;
	char *text = malloc(tlen + 1);
	uint8_t *rec;
	uint32_t rlen;

	if (!text)
		return 0;
	memcpy(text, data, tlen);
	text[tlen] = '\0';
	/* The record in a buffer of its own size: reads past it are found. */
	rlen = nul ? (uint32_t)(size - tlen - 1) : 0;
	rec = malloc(rlen ? rlen : 1);
	if (!rec) {
		free(text);
		return 0;
	}
	if (rlen)
		memcpy(rec, nul + 1, rlen);
	if (hvt_tdat_switch_learn(&sw, text)) {
		fuzz_assert(sw.known);
		fuzz_assert(sw.prev_comm < 0xffff && sw.next_comm < 0xffff);
		fuzz_assert(sw.prev_pid < 0xffff && sw.next_pid < 0xffff);
	} else {
		fuzz_assert(!sw.known);
	}
	named = 0;
	fuzz_assert(!hvt_tdat_switch_comms(&sw, rec, rlen, sw_check, NULL));
	fuzz_assert(named <= 2 && (sw.known || !named));
	free(rec);
	free(text);
	return 0;
}
