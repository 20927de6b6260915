// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the recorder's reader threads -- a pool that runs passes
 * over a fixed list of jobs (one per CPU buffer of a source set).
 *
 * Job j is always run by thread j % nr, the calling thread being thread
 * 0: a CPU buffer is read by the same thread page after page, so what a
 * set writes does not depend on the number of threads.  A pass starts
 * every thread on its share and returns once all are done; between
 * passes only the calling thread runs, so the set may change what the
 * jobs see (clock models, counters) without locks.  The other threads
 * block every signal but the synchronous ones (SIGBUS goes to the thread
 * that faults, and its guard is per thread).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracedat-local.h"

#define RR_AUTO_THREADS 8u /* at most, when not asked */

struct rr_thread {
	struct hvt_tdat_readers *p;
	unsigned int idx;
	pthread_t th;
	uint8_t *page; /* read buffer */
};

struct hvt_tdat_readers {
	unsigned int nr_jobs;
	unsigned int nr; /* threads, with the calling thread */
	void (*work)(void *ctx, unsigned int job, uint8_t *page);
	void *ctx;
	struct rr_thread *th;
	unsigned int nr_started; /* threads created, beside the caller */
	pthread_mutex_t mu;
	pthread_cond_t go;   /* pairs with the wait in rr_main() */
	pthread_cond_t done; /* pairs with the wait in _pass() */
	unsigned int gen;    /* passes started */
	unsigned int busy;   /* threads still in this pass */
	bool quit;
};

/* Thread @t's share of the pass: every nr-th job. */
static void rr_work(struct hvt_tdat_readers *p, unsigned int t)
{
	unsigned int j;

	for (j = t; j < p->nr_jobs; j += p->nr)
		p->work(p->ctx, j, p->th[t].page);
}

static void *rr_main(void *arg)
{
	struct rr_thread *t = arg;
	struct hvt_tdat_readers *p = t->p;
	unsigned int seen = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		/* Pairs with the broadcasts in _pass() and _stop(). */
		while (!p->quit && p->gen == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		rr_work(p, t->idx);
		pthread_mutex_lock(&p->mu);
		/* Pairs with the wait in _pass(). */
		if (!--p->busy)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void hvt_tdat_readers_pass(struct hvt_tdat_readers *p)
{
	if (p->nr_started) {
		pthread_mutex_lock(&p->mu);
		p->gen++;
		p->busy = p->nr_started;
		pthread_cond_broadcast(&p->go);
		pthread_mutex_unlock(&p->mu);
	}
	rr_work(p, 0);
	if (p->nr_started) {
		pthread_mutex_lock(&p->mu);
		while (p->busy)
			pthread_cond_wait(&p->done, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
}

void hvt_tdat_readers_stop(struct hvt_tdat_readers *p)
{
	unsigned int i;

	if (!p)
		return;
	if (p->nr_started) {
		pthread_mutex_lock(&p->mu);
		p->quit = true;
		pthread_cond_broadcast(&p->go);
		pthread_mutex_unlock(&p->mu);
		for (i = 1; i <= p->nr_started; i++)
			pthread_join(p->th[i].th, NULL);
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	for (i = 0; i < p->nr; i++)
		free(p->th[i].page);
	free(p->th);
	free(p);
}

/* How many: as asked, else one per job up to the online CPUs and
 * RR_AUTO_THREADS. */
static unsigned int rr_count(unsigned int want, unsigned int nr_jobs)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int n = want;

	if (!n) {
		n = RR_AUTO_THREADS;
		if (online > 0 && (unsigned long)online < n)
			n = (unsigned int)online;
	}
	if (n > nr_jobs)
		n = nr_jobs;
	return n ? n : 1;
}

int hvt_tdat_readers_start(unsigned int want, unsigned int nr_jobs,
			   uint32_t page_size,
			   void (*work)(void *ctx, unsigned int job,
					uint8_t *page),
			   void *ctx, struct hvt_tdat_readers **out)
{
	struct hvt_tdat_readers *p;
	sigset_t all, old;
	unsigned int i;
	int ret = 0;

	p = calloc(1, sizeof(*p));
	if (!p)
		return hvt_err(-ENOMEM, "out of memory");
	p->nr_jobs = nr_jobs;
	p->nr = rr_count(want, nr_jobs);
	p->work = work;
	p->ctx = ctx;
	p->th = calloc(p->nr, sizeof(*p->th));
	if (!p->th) {
		free(p);
		return hvt_err(-ENOMEM, "out of memory");
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	*out = p;
	for (i = 0; i < p->nr; i++) {
		p->th[i].p = p;
		p->th[i].idx = i;
		p->th[i].page = malloc(page_size ? page_size : 1);
		if (!p->th[i].page)
			return hvt_err(-ENOMEM, "out of memory");
	}
	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 1; i < p->nr; i++) {
		ret = -pthread_create(&p->th[i].th, NULL, rr_main, &p->th[i]);
		if (ret)
			break;
		p->nr_started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return hvt_err(ret, "cannot start reader thread %u: %s", i,
			       strerror(-ret));
	return 0;
}

unsigned int hvt_tdat_readers_nr(const struct hvt_tdat_readers *p)
{
	return p ? p->nr : 1;
}
