// SPDX-License-Identifier: MIT
/*
 * A pool of worker threads that runs passes over a list of jobs: the
 * reader threads of hvtrace record (one job per CPU buffer) and of
 * hvtraced (one job per CPU of an area).
 *
 *   caller (thread 0)        thread 1 .. nr-1
 *   _pass(n, work, ctx) --go--> run jobs t, t+nr, t+2nr, ... < n
 *   runs jobs 0, nr, 2nr...     |
 *   waits for busy == 0 <-done--+  (the last one done signals)
 *
 * Job j is always run by thread j % nr, the calling thread being thread
 * 0: a CPU buffer is read by the same thread pass after pass, so what a
 * caller produces does not depend on the number of threads, and a CPU's
 * pages stay in one thread's cache.  A pass returns once every job is
 * done; between passes only the calling thread runs, so the caller may
 * change what the jobs see (clock models, counters, subscriptions)
 * without locks.  The pool's threads block every signal but the
 * synchronous ones (a SIGBUS goes to the thread that faults; the
 * readers' guard against it is per thread).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "hvt_util.h"

struct wk_thread {
	struct hvt_util_workers *p;
	unsigned int idx;
	pthread_t th;
	void *scratch;
};

struct hvt_util_workers {
	unsigned int nr;	 /* threads, with the calling thread */
	unsigned int nr_started; /* threads created, beside the caller */
	struct wk_thread *th;
	pthread_mutex_t mu;
	pthread_cond_t go;   /* pairs with the wait in wk_main() */
	pthread_cond_t done; /* pairs with the wait in _pass() */
	unsigned int gen;    /* passes started */
	unsigned int busy;   /* threads still in this pass */
	bool quit;
	/* This pass's jobs: written by _pass() before the broadcast, read
	 * by the threads after they saw the new gen (both under mu). */
	unsigned int nr_jobs;
	void (*work)(void *ctx, unsigned int job, void *scratch);
	void *ctx;
};

/* Thread @t's share of the pass: every nr-th job. */
static void wk_run(struct hvt_util_workers *p, unsigned int t)
{
	unsigned int j;

	for (j = t; j < p->nr_jobs; j += p->nr)
		p->work(p->ctx, j, p->th[t].scratch);
}

static void *wk_main(void *arg)
{
	struct wk_thread *t = arg;
	struct hvt_util_workers *p = t->p;
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
		wk_run(p, t->idx);
		pthread_mutex_lock(&p->mu);
		/* Pairs with the wait in _pass(). */
		if (!--p->busy)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void hvt_util_workers_pass(struct hvt_util_workers *p, unsigned int nr_jobs,
			   void (*work)(void *ctx, unsigned int job,
					void *scratch),
			   void *ctx)
{
	bool others = p->nr_started && nr_jobs > 1;

	if (others) {
		pthread_mutex_lock(&p->mu);
		p->nr_jobs = nr_jobs;
		p->work = work;
		p->ctx = ctx;
		p->gen++;
		p->busy = p->nr_started;
		pthread_cond_broadcast(&p->go);
		pthread_mutex_unlock(&p->mu);
	} else {
		p->nr_jobs = nr_jobs;
		p->work = work;
		p->ctx = ctx;
	}
	wk_run(p, 0);
	if (others) {
		pthread_mutex_lock(&p->mu);
		while (p->busy)
			pthread_cond_wait(&p->done, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
}

void hvt_util_workers_stop(struct hvt_util_workers *p)
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
		free(p->th[i].scratch);
	free(p->th);
	free(p);
}

/* How many: as asked, else one per job up to the online CPUs and
 * @auto_max; never more than jobs. */
static unsigned int wk_count(unsigned int want, unsigned int auto_max,
			     unsigned int max_jobs)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int n = want;

	if (!n) {
		n = auto_max;
		if (online > 0 && (unsigned long)online < n)
			n = (unsigned int)online;
	}
	if (n > max_jobs)
		n = max_jobs;
	return n ? n : 1;
}

int hvt_util_workers_start(unsigned int want, unsigned int auto_max,
			   unsigned int max_jobs, size_t scratch,
			   struct hvt_util_workers **out)
{
	struct hvt_util_workers *p;
	sigset_t all, old;
	unsigned int i;
	int ret = 0;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->nr = wk_count(want, auto_max, max_jobs);
	p->th = calloc(p->nr, sizeof(*p->th));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	if (!p->th) {
		p->nr = 0;
		hvt_util_workers_stop(p);
		return -ENOMEM;
	}
	for (i = 0; i < p->nr; i++) {
		p->th[i].p = p;
		p->th[i].idx = i;
		p->th[i].scratch = malloc(scratch ? scratch : 1);
		if (!p->th[i].scratch) {
			hvt_util_workers_stop(p);
			return -ENOMEM;
		}
	}
	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 1; i < p->nr; i++) {
		ret = -pthread_create(&p->th[i].th, NULL, wk_main, &p->th[i]);
		if (ret)
			break;
		p->nr_started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		hvt_util_workers_stop(p);
		return ret;
	}
	*out = p;
	return 0;
}

unsigned int hvt_util_workers_nr(const struct hvt_util_workers *p)
{
	return p ? p->nr : 1;
}
