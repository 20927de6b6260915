// SPDX-License-Identifier: MIT
/*
 * Post-mortem: a writer process is killed with SIGKILL at a random moment
 * while it writes, several times, in both ring modes.  Afterwards a fresh
 * read-only hvtrace_area_open() of the area file must return every event
 * the dead writer committed exactly once, in order and intact; the count
 * must equal what its commit word says (entries_before of the tail page +
 * the word's entries), and the writer's own progress counter, which it
 * updated after each successful write, must be within one of it (the kill
 * can land between the commit store and the counter update).
 *
 *   consume    the ring is large enough not to fill: the kill lands while
 *              the writer commits; nothing may be missing
 *   overwrite  a small ring lapped many times: every event of the oldest
 *              page still whole (its descriptor names it) up to the last
 *              one committed comes back, and everything before that
 *              page is reported lost (overwritten unread), so read +
 *              lost == committed
 *
 * HVT_TEST_SEED=N repeats a run.
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"
#include "../foundation/fnd.h"

#define NR_CPUS		2
#define SUBBUF		4096
#define TRIALS		6	/* per mode */

struct progress {
	uint64_t done[NR_CPUS];		/* seq + 1 of the last committed */
	uint64_t dropped[NR_CPUS];
	uint32_t started;
};

static uint64_t rng;

static uint64_t rnd(void)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return rng >> 33;
}

static void writer(uint8_t *area, uint64_t size, struct progress *pr)
{
	struct hvt_rb_cpu cb[NR_CPUS];
	uint64_t seq;
	int cpu, ret;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (cpu = 0; cpu < NR_CPUS; cpu++)
		if (hvt_area_cpu(area, size, (uint32_t)cpu, &cb[cpu]))
			_exit(2);
	__atomic_store_n(&pr->started, 1, __ATOMIC_RELEASE);
	for (seq = 0;; seq++) {
		for (cpu = 0; cpu < NR_CPUS; cpu++) {
			ret = fnd_write(&cb[cpu], seq);
			if (ret == 0)
				/* After the commit: may lag it by one. */
				__atomic_store_n(&pr->done[cpu], seq + 1,
						 __ATOMIC_RELEASE);
			else if (ret == -HVT_ENOSPC)
				__atomic_store_n(&pr->dropped[cpu],
						 pr->dropped[cpu] + 1,
						 __ATOMIC_RELEASE);
			else
				_exit(3);
		}
	}
}

struct pm_result {
	uint64_t read, lost, first, last;
	uint64_t trailing;	/* drops after the last page (in lost too) */
};


/* Read everything of @cpu with a fresh read-only open.  The first event
 * may be any (checked by the caller); from there on there are no gaps
 * other than those the pages report. */
static struct pm_result pm_read(const char *path, int cpu)
{
	static uint8_t page[SUBBUF];
	struct pm_result r = { 0, 0, UINT64_MAX, 0, 0 };
	struct hvtrace_page_info info;
	struct hvtrace_cpu_stats st;
	struct hvtrace_area *a;
	uint64_t next = 0;
	int ret, calls = 0;

	if (hvtrace_area_open(path, 0, 0, 0, &a))
		t_fail("post-mortem open: %s", hvtrace_last_error());
	while ((ret = hvtrace_cpu_read_page(a, cpu, page, sizeof(page),
					    &info)) == 1) {
		struct hvt_page_iter it;
		int item;

		if (++calls > 1000000)
			t_fail("cpu %d: the reader never runs dry", cpu);
		r.lost += info.lost_events;
		next += info.lost_events;
		hvt_page_iter_init(&it, page + 16,
				   (uint32_t)(hvt_rd64(page + 8) &
					      HVT_COMMIT_SIZE_MASK),
				   hvt_rd64(page));
		while ((item = hvt_page_next(&it)) > 0) {
			const char *why;
			uint64_t seq;

			if (item != HVT_ITEM_DATA)
				continue;
			if (fnd_check(it.payload, it.len, (uint32_t)cpu, &seq,
				      &why))
				t_fail("cpu %d: record after seq %llu: %s", cpu,
				       (unsigned long long)next, why);
			if (r.first == UINT64_MAX)
				next = seq;
			if (seq != next)
				t_fail("cpu %d: seq %llu, expected %llu", cpu,
				       (unsigned long long)seq,
				       (unsigned long long)next);
			if (it.ts != fnd_ts(seq))
				t_fail("cpu %d: seq %llu: ts %llu", cpu,
				       (unsigned long long)seq,
				       (unsigned long long)it.ts);
			if (r.first == UINT64_MAX)
				r.first = seq;
			r.last = seq;
			next = seq + 1;
			r.read++;
		}
		t_eq(item, HVT_ITEM_END);
	}
	if (ret < 0)
		t_fail("cpu %d: read: %s", cpu, hvtrace_last_error());
	t_ok(hvtrace_cpu_get_stats(a, cpu, &st));
	t_equ(st.errors, 0);
	t_equ(st.entries, 0);
	t_equ(st.read, r.read);
	/* Drops after the last page are claimed at the end. */
	r.trailing = hvtrace_cpu_take_trailing_lost(a, cpu);
	r.lost += r.trailing;
	t_ok(hvtrace_cpu_get_stats(a, cpu, &st));
	t_equ(st.written, r.read + r.lost);
	t_equ(st.trailing, 0);
	hvtrace_area_close(a);
	return r;
}

static int trial(int n, uint32_t mode)
{
	uint32_t nr_subbufs = mode == HVT_MODE_CONSUME ? 2048 : 16;
	struct progress *pr;
	uint64_t size, target = 0;
	char path[64];
	uint8_t *area;
	int status, cpu, mid_write = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "/dev/shm/hvt-postmortem-%d", getpid());
	area = fnd_area_create(path, NR_CPUS, nr_subbufs, SUBBUF, mode, &size);
	if (!area)
		t_fail("cannot create %s: %s", path, strerror(errno));
	pr = mmap(NULL, sizeof(*pr), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	t_assert(pr != MAP_FAILED);

	fflush(stdout);
	pid = fork();
	t_assert(pid >= 0);
	if (pid == 0)
		writer(area, size, pr);
	while (!__atomic_load_n(&pr->started, __ATOMIC_ACQUIRE))
		sched_yield();
	if (mode == HVT_MODE_CONSUME) {
		/* Kill somewhere in the first quarter of the ring's
		 * capacity (at least ~60 bytes per event), while it commits.
		 * Should this process be descheduled long enough for the
		 * ring to fill, drops are accounted all the same. */
		uint64_t cap = (uint64_t)nr_subbufs * (SUBBUF - 16) / 60;

		target = 1 + rnd() % (cap / 4);
		while (__atomic_load_n(&pr->done[0], __ATOMIC_ACQUIRE) < target)
			;
	} else {
		struct timespec ts = { 0, (long)(rnd() % 20000000) };

		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	t_assert(waitpid(pid, &status, 0) == pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		t_fail("the writer ended with status 0x%x before the kill",
		       status);

	for (cpu = 0; cpu < NR_CPUS; cpu++) {
		struct hvt_cpu_meta *m = fnd_meta(area, (uint32_t)cpu);
		uint64_t w = m->write, committed = fnd_committed(area,
							       (uint32_t)cpu);
		uint64_t done = pr->done[cpu], dropped = m->lost;
		struct pm_result r = pm_read(path, cpu), again;
		const uint8_t *tail = fnd_page(area, (uint32_t)cpu,
					       HVT_WORD_SEQ(w));

		/* Bytes after the commit offset: a write the kill cut off
		 * (fresh pages are zero in consume mode). */
		if (mode == HVT_MODE_CONSUME &&
		    HVT_WORD_OFFSET(w) + 24 <= SUBBUF - 16 &&
		    hvt_rd64(tail + 16 + HVT_WORD_OFFSET(w)))
			mid_write++;
		if (committed != done && committed != done + 1)
			t_fail("trial %d cpu %d: commit word says %llu events, "
			       "the writer counted %llu",
			       n, cpu, (unsigned long long)committed,
			       (unsigned long long)done);
		if (committed == 0)
			continue;	/* killed before its first commit */
		/* The last event returned is the last one committed: its
		 * seq counts every commit and drop before it. */
		t_equ(r.last, committed - 1 + dropped - r.trailing);
		if (mode == HVT_MODE_CONSUME) {
			t_equ(r.read, committed);
			t_equ(r.lost, dropped);
			t_equ(r.first, 0);
		} else {
			/* The oldest page still whole: the first whose
			 * descriptor names it (a kill during a page switch
			 * has already claimed the oldest slot). */
			uint32_t tseq = HVT_WORD_SEQ(w), s;
			uint64_t first = 0;

			s = tseq < nr_subbufs - 1 ? 0 : tseq - (nr_subbufs - 1);
			for (; s != tseq + 1; s++) {
				const struct hvt_subbuf_desc *d =
					&m->desc[s & (nr_subbufs - 1)];

				if (d->seq == s) {
					first = d->entries_before;
					break;
				}
			}
			t_equ(dropped, 0);
			t_equ(r.first, first);
			/* Everything before the oldest page was overwritten
			 * unread: reported lost, so read + lost == written. */
			t_equ(r.lost, first);
			t_equ(r.read, committed - first);
		}
		/* A second post-mortem reader sees the same. */
		again = pm_read(path, cpu);
		t_equ(again.read, r.read);
		t_equ(again.last, r.last);
		printf("trial %d %s cpu %d: committed %llu (writer counted "
		       "%llu), read %llu, lost %llu%s\n",
		       n, mode == HVT_MODE_CONSUME ? "consume" : "overwrite",
		       cpu, (unsigned long long)committed,
		       (unsigned long long)done, (unsigned long long)r.read,
		       (unsigned long long)r.lost,
		       r.first ? " (older ones overwritten)" : "");
	}
	munmap(pr, sizeof(*pr));
	munmap(area, size);
	unlink(path);
	return mid_write;
}

int main(void)
{
	int i, mid = 0;

	fnd_need_shm();
	rng = getenv("HVT_TEST_SEED") ?
		      strtoull(getenv("HVT_TEST_SEED"), NULL, 0) :
		      (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
	printf("seed %llu (HVT_TEST_SEED to repeat)\n",
	       (unsigned long long)rng);
	for (i = 0; i < TRIALS; i++) {
		mid += trial(i, HVT_MODE_CONSUME);
		trial(i, HVT_MODE_OVERWRITE);
	}
	printf("ok: %d SIGKILLed writers read back exactly; %d kills cut a "
	       "write short\n",
	       2 * TRIALS, mid);
	return 0;
}
