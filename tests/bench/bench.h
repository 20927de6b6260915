/* SPDX-License-Identifier: MIT */
/*
 * Peer measurement for the writer benchmarks.  Every peer is a function
 * that performs n operations; a run measures all peers in turn, and 9 runs
 * are made, so every peer sees the same machine conditions.  The figure
 * reported is the best run (on a shared machine, interference only ever
 * adds time); the median is printed alongside for context.
 */
#ifndef HVT_BENCH_H
#define HVT_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BENCH_RUNS	9

struct bench_peer {
	const char *name;	/* BENCH name */
	const char *unit;	/* "ns/event", "ns" */
	/* Performs @n operations; returns 0, or -1 if the peer failed. */
	int (*fn)(void *arg, long n);
	void *arg;
	long n;			/* operations per run */
	int skip;		/* set to leave the peer out */
	double ns[BENCH_RUNS];	/* per operation */
	double best, median;
};

#define BENCH_PEER(name_, unit_, fn_, arg_, n_)			\
	((struct bench_peer){ .name = (name_), .unit = (unit_),	\
			      .fn = (fn_), .arg = (arg_), .n = (n_) })

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Warm every peer up, then measure them all, interleaved. */
static inline int bench_run(struct bench_peer *p, int np)
{
	double s[BENCH_RUNS];
	uint64_t t0;
	int r, i;

	for (i = 0; i < np; i++)
		if (!p[i].skip && p[i].fn(p[i].arg, p[i].n / 10 + 1))
			p[i].skip = 1;
	for (r = 0; r < BENCH_RUNS; r++) {
		for (i = 0; i < np; i++) {
			if (p[i].skip)
				continue;
			t0 = bench_now_ns();
			if (p[i].fn(p[i].arg, p[i].n)) {
				fprintf(stderr, "peer %s failed\n", p[i].name);
				return -1;
			}
			p[i].ns[r] = (double)(bench_now_ns() - t0) /
				     (double)p[i].n;
		}
	}
	for (i = 0; i < np; i++) {
		if (p[i].skip)
			continue;
		for (r = 0; r < BENCH_RUNS; r++)
			s[r] = p[i].ns[r];
		qsort(s, BENCH_RUNS, sizeof(s[0]), bench_cmp);
		p[i].best = s[0];
		p[i].median = s[BENCH_RUNS / 2];
	}
	return 0;
}

static inline void bench_print(const struct bench_peer *p, int np)
{
	int i;

	for (i = 0; i < np; i++)
		if (!p[i].skip)
			printf("BENCH %s %.2f %s\n", p[i].name, p[i].best,
			       p[i].unit);
	for (i = 0; i < np; i++)
		if (!p[i].skip)
			printf("  %-36s best %8.2f  median %8.2f %s\n",
			       p[i].name, p[i].best, p[i].median, p[i].unit);
}

#endif /* HVT_BENCH_H */
