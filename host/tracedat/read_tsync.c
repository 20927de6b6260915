// SPDX-License-Identifier: MIT
/*
 * libhvtrace trace.dat reader: a guest file's TIME_SHIFT option, which
 * puts the times of its top-level buffer on its host's clock, the way
 * trace-cmd 3.x reads it (trace-input.c, timestamp_host_sync()), so that
 * hvtrace report prints the times trace-cmd report prints.
 *
 * The option: the host's trace id (u64, not needed here), flags (u32, bit
 * 0 INTERPOLATE), the guest's CPU count (u32); per CPU a sample count
 * (u32) and that many times, offsets and scalings (s64 each); then, since
 * trace-cmd 3.0 and only when present, per CPU that many fractions.
 *
 * A time of a CPU with one sample moves by its offset.  With more, the
 * pair of samples around it (the first two before the first sample, the
 * last two after the last) gives the offset: interpolated between them
 * with INTERPOLATE, else the earlier one's; the time itself is multiplied
 * by the earlier one's scaling and shifted right by its fraction.  A CPU
 * beyond the option's count, or without samples, keeps its times.
 *
 * The option is hostile input like the rest of the file: counts are
 * checked against its length, times sorted with the duplicates dropped
 * (as trace-cmd does), the fraction bounded to a shift C can do, and the
 * arithmetic done in 128 bits, so a damaged option gives wrong times,
 * never undefined behaviour.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rw-local.h"

#define RD_TSYNC_INTERPOLATE 1u

void rd_tsync_free(struct hvtrace_tracedat_file *f)
{
	uint32_t c;

	for (c = 0; f->tsync && c < f->tsync_cpus; c++)
		free(f->tsync[c].s);
	free(f->tsync);
	f->tsync = NULL;
	f->tsync_cpus = 0;
}

static int rd_tsync_cmp(const void *a, const void *b)
{
	const struct rd_tsync_sample *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

int rd_time_shift(struct hvtrace_tracedat_file *f, const uint8_t *p,
		  uint32_t len)
{
	uint32_t cpus, c, i, n, pos = 16, k;
	struct rd_tsync_cpu *t;

	/* trace-cmd ignores one too short to hold its header. */
	if (len < 16)
		return 0;
	cpus = rd_le32(p + 12);
	/* Every CPU takes 4 bytes at least. */
	if (!cpus || cpus > RD_MAX_CPUS || cpus > (len - 16) / 4)
		return -EBADMSG;
	t = calloc(cpus, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (c = 0; c < cpus; c++) {
		if (len - pos < 4)
			goto bad;
		n = rd_le32(p + pos);
		pos += 4;
		if (n > (len - pos) / 24)
			goto bad;
		t[c].n = n;
		t[c].s = n ? calloc(n, sizeof(*t[c].s)) : NULL;
		if (n && !t[c].s)
			goto nomem;
		for (i = 0; i < n; i++)
			t[c].s[i].time = (int64_t)rd_le64(p + pos + 8 * i);
		pos += 8 * n;
		for (i = 0; i < n; i++)
			t[c].s[i].offset = (int64_t)rd_le64(p + pos + 8 * i);
		pos += 8 * n;
		for (i = 0; i < n; i++)
			t[c].s[i].scaling = (int64_t)rd_le64(p + pos + 8 * i);
		pos += 8 * n;
	}
	/* The fractions, when the writer had them (trace-cmd 3.0+). */
	for (c = 0; c < cpus && pos < len; c++) {
		if (t[c].n > (len - pos) / 8)
			goto bad;
		for (i = 0; i < t[c].n; i++) {
			int64_t fr = (int64_t)rd_le64(p + pos + 8 * i);

			t[c].s[i].frac = fr < 0 || fr > 63 ? 0 : fr;
		}
		pos += 8 * t[c].n;
	}
	/* Sorted by time; a time given twice counts once. */
	for (c = 0; c < cpus; c++) {
		if (t[c].n < 2)
			continue;
		qsort(t[c].s, t[c].n, sizeof(*t[c].s), rd_tsync_cmp);
		for (i = 1, k = 1; i < t[c].n; i++)
			if (t[c].s[i].time != t[c].s[k - 1].time)
				t[c].s[k++] = t[c].s[i];
		t[c].n = k;
	}
	rd_tsync_free(f);
	f->tsync = t;
	f->tsync_cpus = cpus;
	f->tsync_flags = rd_le32(p + 8);
	return 0;
bad:
	for (i = 0; i < cpus; i++)
		free(t[i].s);
	free(t);
	return -EBADMSG;
nomem:
	for (i = 0; i < cpus; i++)
		free(t[i].s);
	free(t);
	return -ENOMEM;
}

/* @ts with the pair (@lo, @hi) around it. */
static uint64_t rd_tsync_pair(uint32_t flags, uint64_t ts,
			      const struct rd_tsync_sample *lo,
			      const struct rd_tsync_sample *hi)
{
	__int128 cor = lo->offset, v;

	if (flags & RD_TSYNC_INTERPOLATE) {
		__int128 delta = (__int128)hi->time - lo->time;
		__int128 num = ((__int128)(int64_t)ts - lo->time) *
			       ((__int128)hi->offset - lo->offset);

		/* Rounded to nearest as trace-cmd does (delta > 0: times
		 * are distinct and sorted). */
		cor = lo->offset + (num + delta / 2) / delta;
	}
	v = ((unsigned __int128)ts * (uint64_t)lo->scaling) >> lo->frac;
	return (uint64_t)(v + cor);
}

uint64_t rd_tsync_calc(const struct hvtrace_tracedat_file *f, uint32_t cpu,
		       uint64_t ts)
{
	const struct rd_tsync_cpu *t;
	uint32_t lo, hi, mid;

	if (cpu >= f->tsync_cpus)
		return ts;
	t = &f->tsync[cpu];
	if (!t->n)
		return ts;
	if (t->n == 1)
		return ts + (uint64_t)t->s[0].offset;
	if ((int64_t)ts <= t->s[0].time)
		return rd_tsync_pair(f->tsync_flags, ts, &t->s[0], &t->s[1]);
	if ((int64_t)ts >= t->s[t->n - 1].time)
		return rd_tsync_pair(f->tsync_flags, ts, &t->s[t->n - 2],
				     &t->s[t->n - 1]);
	/* s[lo].time < ts < s[hi].time: the last sample at or before ts. */
	lo = 0;
	hi = t->n - 1;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (t->s[mid].time <= (int64_t)ts)
			lo = mid;
		else
			hi = mid;
	}
	return rd_tsync_pair(f->tsync_flags, ts, &t->s[lo], &t->s[lo + 1]);
}
