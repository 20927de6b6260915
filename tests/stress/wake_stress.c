// SPDX-License-Identifier: MIT
/*
 * Armed wakeups (shared/ring_wake.c): a reader that sleeps and is woken
 * HVT_WAKE_SLEEPS times (20000 in make check; HVT_WAKE_SLEEPS=1000000 for
 * the long run: its time depends on how fast the machine wakes an idle
 * CPU, 20 s on a busy 2-CPU VM here, minutes on an idle one) without a
 * lost wakeup.
 *
 * Two writer threads, one CPU buffer each (the core's direct writer),
 * and one reader thread, in one process.  The reader plays the host:
 *
 *   1 takes every CPU's commit word (all it has "read"), starts a cycle
 *   2 samples the doorbell counter, arms every CPU (hvt_wake_word(): A2)
 *   3 membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): the writers' CPUs pass
 *     a full barrier (A3)
 *   4 loads the commit words again (A4): data, back to 1
 *   5 FUTEX_WAIT on the doorbell counter (A5), back to 1
 *
 * Each writer, once per cycle, waits a random number of spins (from none
 * to longer than the reader's steps 2..5 take, so its commit lands before,
 * inside and after every step) and then writes one event when the
 * watermark is the next commit (odd cycles), or 8 events with random gaps
 * when it is 64 bytes (even cycles); after each commit, hvt_rb_wake_due()
 * says whether it rings (a futex wake on the counter).  Nothing written
 * later can make up for a missed doorbell: the writer waits for the next
 * cycle, so a lost wakeup is a stall.
 *
 * Fails on:
 *   - a stall: the reader slept 2 s although a CPU had committed up to its
 *     armed position and nobody rang (the lost wakeup this protocol
 *     exists to prevent; without step 3 this test fails within seconds);
 *   - a doorbell before the watermark was reached;
 *   - more doorbells than armings of a CPU (one per arming at most).
 */
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "guest_harness.h"

#define NR_W 2u

static struct th_area ta;
static struct hvt_rb_cpu cb[NR_W];
static uint32_t doorbell; /* futex word: rings so far */
static uint32_t cycle;	  /* the reader's cycle, for the writers' pacing */
static int stop;
static uint64_t rings[NR_W], arms[NR_W], early[NR_W];
static int no_barrier; /* HVT_WAKE_NO_BARRIER=1: show the race */
/* The at of each CPU's recent gens, kept by the reader before it arms: a
 * writer may still ring for an arming the reader has moved past. */
#define AT_KEEP 1024u
static uint64_t armed_at[NR_W][AT_KEEP]; /* wake words, by gen */

static long sys_membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, -1);
}

static long futex(uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void spin(uint64_t n)
{
	while (n--)
		__asm__ volatile("" ::: "memory");
}

static void *writer(void *arg)
{
	uint32_t w = (uint32_t)(uintptr_t)arg, seen = 0, k, idle = 0;
	struct hvt_common_fields c = {1, 0, 0, 1234};
	uint64_t s = 0x9e3779b97f4a7c15ull * (w + 1), v[2] = {0, 0};
	struct hvt_iovec iov = {v, sizeof(v)};

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint32_t cy = __atomic_load_n(&cycle, __ATOMIC_ACQUIRE);

		if (cy == seen) {
			/* A short spin, then sleep on the cycle word: writers
			 * that spin for long starve the reader of the two
			 * CPUs, and a cycle then takes a scheduler tick. */
			struct timespec to = {0, 100000000};

			if (++idle < 2000) {
				__builtin_ia32_pause();
				continue;
			}
			futex(&cycle, FUTEX_WAIT, seen, &to);
			continue;
		}
		idle = 0;
		seen = cy;
		/* Mostly close to the reader's arming, where the race is. */
		spin(rnd(&s) % ((cy & 6) ? 400 : 6000));
		/* One event when the watermark is the next commit (a missed
		 * doorbell is then a stall: no later write heals it), else
		 * enough to pass it. */
		for (k = 0; k < ((cy & 1) ? 1u : 8u); k++) {
			v[0]++;
			if (hvt_rb_write(&cb[w], v[0], &c, &iov, 1))
				t_fail("hvt_rb_write failed");
			if (hvt_rb_wake_due(&cb[w])) {
				uint64_t word = __atomic_load_n(
					&cb[w].meta->write, __ATOMIC_RELAXED);
				uint32_t ack;
				uint64_t armed;

				/* Pairs with the reader's fence before it
				 * stored the wake word this writer claimed. */
				__atomic_thread_fence(__ATOMIC_ACQUIRE);
				ack = __atomic_load_n(&cb[w].meta->wake_ack,
						      __ATOMIC_RELAXED);
				armed = __atomic_load_n(
					&armed_at[w][ack % AT_KEEP],
					__ATOMIC_RELAXED);
				/* The at of the gen this writer claimed,
				 * unless a preempted writer let the reader
				 * re-use the entry. */
				if (HVT_WAKE_GEN(armed) == ack &&
				    (int32_t)(HVT_WAKE_POS(word) -
					      HVT_WAKE_AT(armed)) < 0)
					early[w]++;
				rings[w]++;
				__atomic_fetch_add(&doorbell, 1,
						   __ATOMIC_RELEASE);
				futex(&doorbell, FUTEX_WAKE, 1, NULL);
			}
			spin(rnd(&s) % 300);
		}
	}
	return NULL;
}

static uint64_t word_of(uint32_t w)
{
	/* A4 / step 1: pairs with the writer's commit store (W1). */
	return __atomic_load_n(&cb[w].meta->write, __ATOMIC_ACQUIRE);
}

int main(void)
{
	uint64_t want = 20000, sleeps = 0, cycles = 0, found = 0, r[NR_W];
	const char *env = getenv("HVT_WAKE_SLEEPS");
	uint32_t mark, w, gen[NR_W] = {0}, at[NR_W];
	uint32_t data_size = 4096 - HVT_PAGE_HDR_SIZE;
	pthread_t th[NR_W];
	time_t t0 = time(NULL);

	if (env && atol(env) > 0)
		want = (uint64_t)atol(env);
	no_barrier = getenv("HVT_WAKE_NO_BARRIER") != NULL;
	if (sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		t_skip("membarrier(REGISTER_PRIVATE_EXPEDITED): %s",
		       strerror(errno));
	th_area_new(&ta, NR_W, 16, 4096, HVT_MODE_OVERWRITE, HVT_CLOCK_COUNTER);
	for (w = 0; w < NR_W; w++)
		if (hvt_area_cpu(ta.mem, ta.size, w, &cb[w]))
			t_fail("hvt_area_cpu %u", w);
	for (w = 0; w < NR_W; w++)
		if (pthread_create(&th[w], NULL, writer, (void *)(uintptr_t)w))
			t_fail("pthread_create");

	while (sleeps < want) {
		struct timespec to = {2, 0};
		uint32_t db;
		bool data = false;

		/* 1: everything committed so far counts as read. */
		for (w = 0; w < NR_W; w++)
			r[w] = word_of(w);
		__atomic_fetch_add(&cycle, 1, __ATOMIC_RELEASE);
		futex(&cycle, FUTEX_WAKE, NR_W, NULL);
		cycles++;
		/* Odd cycles: the next commit; even: 64 bytes (the writers
		 * write 8 events of 32 bytes then). */
		mark = (cycles & 1) ? 1 : 64;
		/* 2: the doorbell first, so a ring after it ends the wait. */
		db = __atomic_load_n(&doorbell, __ATOMIC_ACQUIRE);
		for (w = 0; w < NR_W; w++) {
			uint64_t next = hvt_wake_word(gen[w] + 1, r[w], mark,
						      data_size);

			/* Note the at first, then arm (A2). */
			__atomic_store_n(
				&armed_at[w][HVT_WAKE_GEN(next) % AT_KEEP],
				next, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_RELEASE);
			__atomic_store_n(&ta.ctrl->wake[w].word, next,
					 __ATOMIC_RELAXED);
			gen[w] = HVT_WAKE_GEN(next);
			at[w] = HVT_WAKE_AT(next);
			arms[w]++;
		}
		/* 3 (A3): every writer CPU passes a full barrier. */
		if (!no_barrier &&
		    sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
			t_fail("membarrier: %s", strerror(errno));
		/* 4 (A4): committed since 1?  Then read it (next cycle). */
		for (w = 0; w < NR_W; w++)
			if ((int32_t)(HVT_WAKE_POS(word_of(w)) - at[w]) >= 0)
				data = true;
		if (data) {
			found++;
			continue;
		}
		/* 5 (A5): sleep until a doorbell. */
		for (;;) {
			long ret = futex(&doorbell, FUTEX_WAIT, db, &to);

			if (!ret || errno == EAGAIN)
				break;
			if (errno == EINTR)
				continue;
			if (errno != ETIMEDOUT)
				t_fail("futex wait: %s", strerror(errno));
			for (w = 0; w < NR_W; w++) {
				uint64_t now = word_of(w);
				uint32_t ack =
					__atomic_load_n(&cb[w].meta->wake_ack,
							__ATOMIC_RELAXED);

				if ((int32_t)(HVT_WAKE_POS(now) - at[w]) >= 0 &&
				    ack != gen[w])
					t_fail("lost wakeup after %llu sleeps: "
					       "CPU %u committed past its "
					       "armed position (gen %u, ack "
					       "%u) and nobody rang",
					       (unsigned long long)sleeps, w,
					       gen[w], ack);
			}
			t_fail("stalled: no commit for 2 s while armed");
		}
		sleeps++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&cycle, 1, __ATOMIC_RELEASE);
	futex(&cycle, FUTEX_WAKE, NR_W, NULL);
	for (w = 0; w < NR_W; w++)
		pthread_join(th[w], NULL);
	for (w = 0; w < NR_W; w++) {
		if (early[w])
			t_fail("CPU %u rang %llu times before its watermark", w,
			       (unsigned long long)early[w]);
		if (rings[w] > arms[w])
			t_fail("CPU %u rang %llu times for %llu armings", w,
			       (unsigned long long)rings[w],
			       (unsigned long long)arms[w]);
		printf("CPU %u: %llu armings, %llu doorbells\n", w,
		       (unsigned long long)arms[w],
		       (unsigned long long)rings[w]);
	}
	printf("%llu cycles: %llu sleeps woken by a doorbell, %llu found data "
	       "after arming; no lost wakeup (%lld s)\n",
	       (unsigned long long)cycles, (unsigned long long)sleeps,
	       (unsigned long long)found, (long long)(time(NULL) - t0));
	th_area_free(&ta);
	printf("PASS\n");
	return 0;
}
