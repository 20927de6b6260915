// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the TIME_SHIFT option of a guest trace.dat file
 * (host/tracedat/read_tsync.c), hostile input that hvtrace report reads to
 * put a guest file's times on its host's clock.
 *
 * The input is the option's payload; its last 8 bytes (when there are
 * more than 16) are also a guest time to convert on every CPU.  Beyond
 * the sanitizers: a payload taken has CPUs within its size, each with
 * samples sorted and no time twice; one sample moves a time by its
 * offset; with INTERPOLATE, scaling 1 and no fraction, a sample's own
 * time (all but the last) lands on its time plus its offset exactly.
 *
 * Seeds: tests/fuzz/corpus/tdat_tsync/ (with and without fractions, one
 * sample, an unsorted table, counts beyond the size).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../host/tracedat/rw-local.h"
#include "hvt_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reader's little-endian helpers (read_meta.c), for this target. */
uint32_t rd_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

uint64_t rd_le64(const uint8_t *p)
{
	return (uint64_t)rd_le32(p) | (uint64_t)rd_le32(p + 4) << 32;
}

static void check_cpu(const struct hvtrace_tracedat_file *f, uint32_t c,
		      uint64_t ts)
{
	const struct rd_tsync_cpu *t = &f->tsync[c];
	uint32_t i;

	fuzz_assert(t->n == 0 || t->s);
	for (i = 1; i < t->n; i++)
		fuzz_assert(t->s[i - 1].time < t->s[i].time);
	(void)rd_tsync_calc(f, c, ts);
	if (t->n == 1)
		fuzz_assert(rd_tsync_calc(f, c, ts) ==
			    ts + (uint64_t)t->s[0].offset);
	for (i = 0; t->n > 1 && i + 1 < t->n; i++) {
		const struct rd_tsync_sample *s = &t->s[i];

		if (!(f->tsync_flags & 1) || s->scaling != 1 || s->frac)
			continue;
		fuzz_assert(rd_tsync_calc(f, c, (uint64_t)s->time) ==
			    (uint64_t)s->time + (uint64_t)s->offset);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvtrace_tracedat_file *f = calloc(1, sizeof(*f));
	uint8_t *p;
	uint64_t ts = 0;
	uint32_t c;

	if (!f || size > (1u << 20)) {
		free(f);
		return 0;
	}
	/* An exact copy, so that a read past the option is caught. */
	p = malloc(size ? size : 1);
	if (!p) {
		free(f);
		return 0;
	}
	memcpy(p, data, size);
	if (size > 16)
		ts = rd_le64(p + size - 8);
	if (!rd_time_shift(f, p, (uint32_t)size) && f->tsync) {
		fuzz_assert(f->tsync_cpus >= 1 && f->tsync_cpus <= RD_MAX_CPUS);
		fuzz_assert(16 + 4 * (size_t)f->tsync_cpus <= size);
		for (c = 0; c < f->tsync_cpus; c++)
			check_cpu(f, c, ts);
		/* A CPU beyond the table keeps its time. */
		fuzz_assert(rd_tsync_calc(f, f->tsync_cpus, ts) == ts);
	}
	rd_tsync_free(f);
	free(p);
	free(f);
	return 0;
}
