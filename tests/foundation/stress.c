// SPDX-License-Identifier: MIT
/*
 * Producer-consumer and overwrite stress of the writer core and the host
 * reader, across processes.
 *
 * One writer process per CPU buffer, pinned with sched_setaffinity() to a
 * CPU of its own, writes self-checking records (tests/foundation/fnd.h:
 * per-CPU sequence number, exact timestamp, checksum) with the direct API
 * hvt_rb_write() into an area file in /dev/shm.  The parent process is the
 * reader: it owns the area (HVTRACE_OPEN_CONTROL, so it publishes consumer
 * progress) and reads every CPU concurrently with the writers.
 *
 * Invariants checked:
 *   - every returned record is intact (checksum, length, timestamp) and
 *     per-CPU sequence numbers only grow;
 *   - losses are reported exactly where they happened: after a page that
 *     reports N lost events, the next record is exactly N further on;
 *   - per CPU, read + lost == written, where written is what the writer
 *     counted (successful + dropped writes) and what the ring reports;
 *   - while the writers run, the reader's stats keep written == read +
 *     lost + discarded + entries + trailing, and the ring's written count
 *     stays between the writer's own counts before and after the call.
 *
 * Modes:
 *   consume-paced    writers wait while the ring is full, so nothing may
 *                    be lost: lost == 0, dropped == 0
 *   consume-lossy    writers never wait and the reader pauses now and
 *                    then: drops happen, accounting stays exact
 *   consume-preempt  as consume-lossy, plus two busy processes pinned to
 *                    every CPU, so writers are preempted mid-write all the
 *                    time: direct single-writer use does not care
 *   overwrite        overwrite mode; the reader races the writers and is
 *                    lapped: read + overrun == written, never a torn or
 *                    out-of-order record
 *
 *   stress MODE [EVENTS]     EVENTS in total (default: the configured
 *                            CONFIG_HVT_TEST_STRESS_EVENTS, or the
 *                            HVT_STRESS_EVENTS environment variable)
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kbuffer.h>

#include <hvtrace.h>
#include <hvtrace/config.h>
#include <hvtrace/page.h>
#include <hvtrace/ring_buffer.h>

#include "hvt_test.h"
#include "fnd.h"

#define SUBBUF		4096u
#define MAX_WRITERS	16

enum mode { PACED, LOSSY, PREEMPT, OVERWRITE };

/* Shared between the writers and the reader (anonymous shared memory). */
struct wstat {
	uint64_t ok;		/* committed */
	uint64_t dropped;	/* -ENOSPC */
	uint64_t waits;		/* paced: times it found the ring full */
	uint64_t preempted;	/* involuntary context switches */
	uint32_t done;
	uint32_t failed;
	char why[128];
} __attribute__((aligned(64)));

struct shared {
	uint32_t go;
	uint32_t stop_busy;
	struct wstat w[MAX_WRITERS];
};

struct rstate {
	uint64_t next;		/* next seq expected */
	uint64_t read, lost, pages, kb_pages;
};

static enum mode mode;
static uint32_t nr_writers, nr_subbufs;
static uint64_t per_writer;
static int cpus[MAX_WRITERS], nr_cpus_allowed;
static uint8_t *area;
static uint64_t area_size;
static struct shared *sh;
static char path[64];
static pid_t pids[MAX_WRITERS * 3];
static int nr_pids;
static pid_t parent;

/* On any exit of the parent (t_fail() included), no child survives. */
static void cleanup(void)
{
	if (getpid() != parent)
		return;
	for (int i = 0; i < nr_pids; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	if (path[0])
		unlink(path);
}

static pid_t spawn(void)
{
	pid_t p = fork();

	if (p < 0)
		t_fail("fork: %s", strerror(errno));
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
	}
	return p;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		t_fail("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

static void writer(uint32_t cpu)
{
	struct wstat *ws = &sh->w[cpu];
	const struct hvt_control *ctrl =
		(const void *)(area + HVT_CONTROL_OFFSET);
	struct hvt_rb_cpu cb;
	uint64_t seq;
	int ret;

	pin(cpus[cpu % nr_cpus_allowed]);
	ret = hvt_area_cpu(area, area_size, cpu, &cb);
	if (ret) {
		snprintf(ws->why, sizeof(ws->why), "hvt_area_cpu: %d", ret);
		__atomic_store_n(&ws->failed, 1, __ATOMIC_RELEASE);
		_exit(1);
	}
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (seq = 0; seq < per_writer; seq++) {
		if (mode == PACED) {
			/* Wait while no slot is free for the next page: then
			 * a write can never be refused.  Acquire pairs with
			 * the reader's release of its progress. */
			for (;;) {
				uint32_t cons = __atomic_load_n(
					&ctrl->consumer[cpu], __ATOMIC_ACQUIRE);
				uint32_t tail = HVT_WORD_SEQ(
					__atomic_load_n(&cb.meta->write,
							__ATOMIC_RELAXED));

				if ((uint32_t)(tail + 1 - cons) < nr_subbufs)
					break;
				ws->waits++;
				/* Sleep, not yield: a spinning waiter keeps its
				 * CPU looking busy and the reader away. */
				usleep(20);
			}
		}
		/* Write in bursts of several rings' worth, so the reader
		 * also gets CPU time to race with the writers.  Not when
		 * preempted: a writer that sleeps is rarely preempted. */
		if ((mode == LOSSY || mode == OVERWRITE) && seq % 4096 == 4095)
			usleep(100);
		ret = fnd_write(&cb, seq);
		/* Counted after the write returns: the ring's count can be
		 * one ahead of these, never behind. */
		if (ret == 0) {
			__atomic_store_n(&ws->ok, ws->ok + 1, __ATOMIC_RELEASE);
		} else if (ret == -HVT_ENOSPC) {
			__atomic_store_n(&ws->dropped, ws->dropped + 1,
					 __ATOMIC_RELEASE);
		} else {
			snprintf(ws->why, sizeof(ws->why),
				 "hvt_rb_write(seq %llu) returned %d",
				 (unsigned long long)seq, ret);
			__atomic_store_n(&ws->failed, 1, __ATOMIC_RELEASE);
			_exit(1);
		}
	}
	{
		struct rusage ru;

		if (!getrusage(RUSAGE_SELF, &ru))
			ws->preempted = (uint64_t)ru.ru_nivcsw;
	}
	__atomic_store_n(&ws->done, 1, __ATOMIC_RELEASE);
	_exit(0);
}

static void busy(int cpu)
{
	pin(cpu);
	while (!__atomic_load_n(&sh->stop_busy, __ATOMIC_RELAXED))
		;
	_exit(0);
}

/* Check one page the reader returned; updates @r. */
static void check_page(uint32_t cpu, struct rstate *r, uint8_t *page,
		       const struct hvtrace_page_info *info,
		       struct kbuffer *kb)
{
	uint64_t commit = hvt_rd64(page + 8), first = r->next, n = 0;
	uint32_t size = (uint32_t)(commit & HVT_COMMIT_SIZE_MASK);
	struct hvt_page_iter it;
	int item;

	if (size > SUBBUF - 16)
		t_fail("cpu %u: returned page with commit 0x%llx", cpu,
		       (unsigned long long)commit);
	if (info->lost_events) {
		if (!(commit & HVT_MISSED_EVENTS) ||
		    !(commit & HVT_MISSED_STORED) ||
		    hvt_rd64(page + 16 + size) != info->lost_events)
			t_fail("cpu %u: %llu lost but the page says 0x%llx",
			       cpu, (unsigned long long)info->lost_events,
			       (unsigned long long)commit);
		r->lost += info->lost_events;
		r->next += info->lost_events;
		first = r->next;
	} else if (commit & HVT_COMMIT_FLAGS) {
		t_fail("cpu %u: missed flags without a loss", cpu);
	}
	hvt_page_iter_init(&it, page + 16, size, hvt_rd64(page));
	while ((item = hvt_page_next(&it)) > 0) {
		const char *why;
		uint64_t seq;

		if (item != HVT_ITEM_DATA)
			continue;
		if (fnd_check(it.payload, it.len, cpu, &seq, &why))
			t_fail("cpu %u: record after seq %llu: %s", cpu,
			       (unsigned long long)r->next, why);
		if (seq != r->next)
			t_fail("cpu %u: seq %llu, expected %llu (page seq %u, "
			       "%llu lost reported)",
			       cpu, (unsigned long long)seq,
			       (unsigned long long)r->next, info->seq,
			       (unsigned long long)info->lost_events);
		if (it.ts != fnd_ts(seq))
			t_fail("cpu %u: seq %llu has ts %llu, written %llu",
			       cpu, (unsigned long long)seq,
			       (unsigned long long)it.ts,
			       (unsigned long long)fnd_ts(seq));
		r->next++;
		n++;
	}
	if (item != HVT_ITEM_END)
		t_fail("cpu %u: the reader returned a malformed page", cpu);
	if (n != info->entries || n == 0)
		t_fail("cpu %u: page has %llu events, info says %u", cpu,
		       (unsigned long long)n, info->entries);
	r->read += n;
	r->pages++;

	/* Every 64th page, libtraceevent must agree too. */
	if (r->pages % 64 == 0) {
		unsigned long long ts;
		uint64_t seq = first;
		void *d;

		if (kbuffer_load_subbuffer(kb, page))
			t_fail("kbuffer cannot load a returned page");
		if ((uint64_t)kbuffer_missed_events(kb) != info->lost_events)
			t_fail("kbuffer: missed %d, reader %llu",
			       kbuffer_missed_events(kb),
			       (unsigned long long)info->lost_events);
		for (d = kbuffer_read_event(kb, &ts); d;
		     d = kbuffer_next_event(kb, &ts), seq++) {
			uint64_t s;
			const char *why;

			if (fnd_check(d, (uint32_t)kbuffer_event_size(kb), cpu,
				      &s, &why) || s != seq || ts != fnd_ts(s))
				t_fail("kbuffer disagrees at seq %llu",
				       (unsigned long long)seq);
		}
		if (seq != r->next)
			t_fail("kbuffer saw %llu events, the walker %llu",
			       (unsigned long long)(seq - first),
			       (unsigned long long)n);
		r->kb_pages++;
	}
}

/* Mid-run accounting: stats against the writer's own counters. */
static void check_live_stats(struct hvtrace_area *a, uint32_t cpu)
{
	struct wstat *ws = &sh->w[cpu];
	struct hvtrace_cpu_stats st;
	uint64_t before, after;

	before = __atomic_load_n(&ws->ok, __ATOMIC_ACQUIRE) +
		 __atomic_load_n(&ws->dropped, __ATOMIC_ACQUIRE);
	t_ok(hvtrace_cpu_get_stats(a, (int)cpu, &st));
	after = __atomic_load_n(&ws->ok, __ATOMIC_ACQUIRE) +
		__atomic_load_n(&ws->dropped, __ATOMIC_ACQUIRE);
	if (st.written < before || st.written > after + 1)
		t_fail("cpu %u: ring says %llu written, the writer counted "
		       "%llu..%llu",
		       cpu, (unsigned long long)st.written,
		       (unsigned long long)before, (unsigned long long)after);
	if (st.written != st.read + st.lost + st.discarded + st.entries +
				  st.trailing)
		t_fail("cpu %u: written %llu != read %llu + lost %llu + "
		       "discarded %llu + entries %llu + trailing %llu",
		       cpu, (unsigned long long)st.written,
		       (unsigned long long)st.read, (unsigned long long)st.lost,
		       (unsigned long long)st.discarded,
		       (unsigned long long)st.entries,
		       (unsigned long long)st.trailing);
	if (st.errors)
		t_fail("cpu %u: %llu errors", cpu,
		       (unsigned long long)st.errors);
}

static bool writers_done(void)
{
	for (uint32_t i = 0; i < nr_writers; i++) {
		if (__atomic_load_n(&sh->w[i].failed, __ATOMIC_ACQUIRE))
			t_fail("writer %u: %s", i, sh->w[i].why);
		if (!__atomic_load_n(&sh->w[i].done, __ATOMIC_ACQUIRE))
			return false;
	}
	return true;
}

static const char *const mode_names[] = { "consume-paced", "consume-lossy",
					  "consume-preempt", "overwrite" };

int main(int argc, char **argv)
{
	static uint8_t page[SUBBUF];
	struct rstate rs[MAX_WRITERS];
	uint64_t total = CONFIG_HVT_TEST_STRESS_EVENTS, sum_lost = 0;
	uint64_t sum_preempted = 0;
	uint64_t rounds = 0, pauses = 0, empty = 0;
	int status, i;
	struct hvtrace_area *a;
	struct kbuffer *kb;
	cpu_set_t set;
	double t0, t1;
	bool done;

	if (argc < 2)
		t_fail("usage: stress consume-paced|consume-lossy|"
		       "consume-preempt|overwrite [EVENTS]");
	for (i = 0; i < 4; i++)
		if (!strcmp(argv[1], mode_names[i]))
			break;
	if (i == 4)
		t_fail("unknown mode '%s'", argv[1]);
	mode = (enum mode)i;
	if (getenv("HVT_STRESS_EVENTS"))
		total = strtoull(getenv("HVT_STRESS_EVENTS"), NULL, 0);
	if (argc > 2)
		total = strtoull(argv[2], NULL, 0);

	if (sched_getaffinity(0, sizeof(set), &set))
		t_fail("sched_getaffinity: %s", strerror(errno));
	for (i = 0; i < CPU_SETSIZE && nr_cpus_allowed < MAX_WRITERS; i++)
		if (CPU_ISSET(i, &set))
			cpus[nr_cpus_allowed++] = i;
	/* A writer on every CPU; at least two buffers even on one CPU. */
	nr_writers = (uint32_t)(nr_cpus_allowed < 2 ? 2 : nr_cpus_allowed);
	per_writer = total / nr_writers;
	nr_subbufs = mode == OVERWRITE || mode == LOSSY ? 8 : 16;

	fnd_need_shm();
	parent = getpid();
	atexit(cleanup);
	snprintf(path, sizeof(path), "/dev/shm/hvt-stress-%d", getpid());
	area = fnd_area_create(path, nr_writers, nr_subbufs, SUBBUF,
			       mode == OVERWRITE ? HVT_MODE_OVERWRITE :
						   HVT_MODE_CONSUME,
			       &area_size);
	if (!area)
		t_fail("cannot create %s: %s", path, strerror(errno));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	t_assert(sh != MAP_FAILED);
	if (hvtrace_area_open(path, 0, 0, HVTRACE_OPEN_CONTROL, &a))
		t_fail("open %s: %s", path, hvtrace_last_error());
	kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	t_assert(kb);
	memset(rs, 0, sizeof(rs));

	fflush(stdout);
	for (uint32_t w = 0; w < nr_writers; w++) {
		pid_t p = spawn();

		if (p == 0)
			writer(w);
		pids[nr_pids++] = p;
	}
	if (mode == PREEMPT) {
		for (i = 0; i < 2 * nr_cpus_allowed; i++) {
			pid_t p = spawn();

			if (p == 0)
				busy(cpus[i % nr_cpus_allowed]);
			pids[nr_pids++] = p;
		}
	}

	t0 = now_s();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	do {
		bool any = false;

		/* Decide before reading: once the writers are done, a pass
		 * that finds nothing on any CPU ends the run. */
		done = writers_done();
		for (uint32_t c = 0; c < nr_writers; c++) {
			struct hvtrace_page_info info;
			int ret, k;

			for (k = 0; k < 16; k++) {
				ret = hvtrace_cpu_read_page(a, (int)c, page,
							    sizeof(page),
							    &info);
				if (ret < 0)
					t_fail("read cpu %u: %s", c,
					       hvtrace_last_error());
				if (ret == 0) {
					empty++;
					break;
				}
				check_page(c, &rs[c], page, &info, kb);
				any = true;
				/* Lossy modes: pause now and then so the
				 * writers overrun the ring. */
				if (mode != PACED && rs[c].pages % 256 == 0) {
					usleep(200);
					pauses++;
				}
			}
			if (++rounds % 512 == 0)
				check_live_stats(a, c);
		}
		if (any)
			done = false;
		else if (!done)
			sched_yield();
	} while (!done);
	t1 = now_s();

	__atomic_store_n(&sh->stop_busy, 1, __ATOMIC_RELAXED);
	for (i = 0; i < nr_pids; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i])
			t_fail("waitpid: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			t_fail("child %d failed (status 0x%x)", i, status);
		pids[i] = 0;
	}

	for (uint32_t c = 0; c < nr_writers; c++) {
		struct wstat *ws = &sh->w[c];
		struct hvtrace_cpu_stats st;
		uint64_t trailing = hvtrace_cpu_take_trailing_lost(a, (int)c);

		rs[c].lost += trailing;
		rs[c].next += trailing;
		t_ok(hvtrace_cpu_get_stats(a, (int)c, &st));
		printf("cpu %u: written %llu (ok %llu, dropped %llu), read "
		       "%llu, lost %llu (overrun %llu, dropped %llu, trailing "
		       "%llu), pages %llu (%llu via kbuffer), writer waits "
		       "%llu, preempted %llu times\n",
		       c, (unsigned long long)(ws->ok + ws->dropped),
		       (unsigned long long)ws->ok,
		       (unsigned long long)ws->dropped,
		       (unsigned long long)rs[c].read,
		       (unsigned long long)rs[c].lost,
		       (unsigned long long)st.overrun,
		       (unsigned long long)st.dropped,
		       (unsigned long long)trailing,
		       (unsigned long long)rs[c].pages,
		       (unsigned long long)rs[c].kb_pages,
		       (unsigned long long)ws->waits,
		       (unsigned long long)ws->preempted);
		t_equ(ws->ok + ws->dropped, per_writer);
		t_equ(rs[c].read + rs[c].lost, per_writer);
		t_equ(rs[c].next, per_writer);
		t_equ(st.written, per_writer);
		t_equ(st.read, rs[c].read);
		t_equ(st.lost, rs[c].lost);
		t_equ(st.entries, 0);
		t_equ(st.trailing, 0);
		t_equ(st.discarded, 0);
		t_equ(st.skipped, 0);
		t_equ(st.errors, 0);
		t_equ(st.writer_lost, ws->dropped);
		if (mode == OVERWRITE) {
			t_equ(ws->dropped, 0);
			t_equ(st.dropped, 0);
			t_equ(st.overrun, rs[c].lost);
		} else {
			t_equ(st.overrun, 0);
			t_equ(st.dropped, ws->dropped);
		}
		if (mode == PACED) {
			t_equ(ws->dropped, 0);
			t_equ(rs[c].lost, 0);
		}
		sum_lost += rs[c].lost;
		sum_preempted += ws->preempted;
	}
	if (mode == PREEMPT && sum_preempted < 10)
		t_fail("the writers were preempted only %llu times: the busy "
		       "processes did not compete with them",
		       (unsigned long long)sum_preempted);
	/* The lossy modes must actually have lost something, or they did
	 * not test what they claim to. */
	if (mode != PACED && sum_lost == 0)
		t_fail("no event was lost in %s mode after %llu reader pauses",
		       mode_names[mode], (unsigned long long)pauses);

	printf("ok: %s: %u writers x %llu events in %.2f s, %llu lost, "
	       "%llu reader pauses, %llu empty reads\n",
	       mode_names[mode], nr_writers, (unsigned long long)per_writer,
	       t1 - t0, (unsigned long long)sum_lost,
	       (unsigned long long)pauses, (unsigned long long)empty);
	hvtrace_area_close(a);
	kbuffer_free(kb);
	munmap(area, area_size);
	return 0;
}
