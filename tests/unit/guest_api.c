// SPDX-License-Identifier: MIT
/*
 * libhvtrace-guest API: the enable bit is honoured by hvtg_enabled() and
 * by the writes themselves; common fields (id, flags, preempt count, the
 * writing thread's id, also after fork); payload bytes from hvtg_write()
 * and from hvtg_writev() pieces; argument errors; timestamps taken from
 * the area's clock (counter and CLOCK_MONOTONIC areas); consume-mode
 * losses returned as -ENOSPC and counted once each in the ring; the
 * per-thread statistics.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

#define EV_ID	42
#define EV_BIT	5
#define EV2_ID	7
#define EV2_BIT	69

struct collected {
	int n;
	struct {
		uint32_t cpu;
		uint64_t ts;
		struct hvt_common_fields c;
		uint32_t len;
		uint8_t p[64];
	} e[64];
};

static void collect(const struct th_event *e, void *arg)
{
	struct collected *c = arg;

	if (c->n >= 64)
		t_fail("more events than expected");
	c->e[c->n].cpu = e->cpu;
	c->e[c->n].ts = e->ts;
	c->e[c->n].c = *e->common;
	c->e[c->n].len = e->len;
	memcpy(c->e[c->n].p, e->payload, e->len < 64 ? e->len : 64);
	c->n++;
}

static void collect_all(struct th_area *ta, struct collected *c)
{
	uint32_t cpu;

	memset(c, 0, sizeof(*c));
	for (cpu = 0; cpu < ta->nr_cpus; cpu++)
		th_walk(ta, cpu, collect, c, NULL);
}

static uint64_t entries_all(struct th_area *ta)
{
	uint64_t n = 0;
	uint32_t cpu;

	for (cpu = 0; cpu < ta->nr_cpus; cpu++)
		n += th_entries(ta, cpu);
	return n;
}

static int32_t my_tid(void)
{
	return (int32_t)syscall(SYS_gettid);
}

struct thread_arg {
	struct hvtg_event *ev;
	int32_t tid;
	int ret;
};

static void *thread_write(void *p)
{
	struct thread_arg *a = p;
	uint32_t v = 0xabcdef01;

	th_pin(0);
	a->tid = my_tid();
	a->ret = hvtg_write(a->ev, &v, sizeof(v));
	return NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_enable_and_fields(void)
{
	static struct hvtg_event ev = HVTG_EVENT_INIT, ev2 = HVTG_EVENT_INIT;
	struct hvtg_thread_stats st0, st1;
	struct th_area ta;
	struct collected c;
	uint8_t pay[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	uint8_t a3[3] = { 0xa1, 0xa2, 0xa3 }, b5[5] = { 0xb1, 0xb2, 0xb3, 0xb4,
							0xb5 };
	struct iovec iov[HVTG_MAX_IOV + 1];
	struct thread_arg targ;
	pthread_t th;
	uint64_t t0, t1;
	int i, status;
	pid_t pid;

	th_area_new(&ta, 2, 8, 4096, HVT_MODE_CONSUME, HVT_CLOCK_COUNTER);
	t_ok(th_pin(0));

	/* Unbound: never enabled, writes refused. */
	t_assert(!hvtg_enabled(&ev));
	t_eq(hvtg_write(&ev, pay, sizeof(pay)), -EBADF);

	t_ok(hvtg_event_bind(ta.w, &ev, EV_ID, EV_BIT));
	t_ok(hvtg_event_bind(ta.w, &ev2, EV2_ID, EV2_BIT));
	t_eq(hvtg_event_bind(ta.w, &ev2, 70000, 1), -EINVAL);
	t_eq(hvtg_event_bind(ta.w, &ev2, 1, HVT_ABI_MAX_EVENTS), -EINVAL);

	/* Bound but disabled by the host. */
	t_assert(!hvtg_enabled(&ev));
	t_eq(hvtg_write(&ev, pay, sizeof(pay)), -ENODATA);
	t_eq(hvtg_writev(&ev, iov, 0), -ENODATA);
	t_equ(entries_all(&ta), 0);

	/* The host enables bit 5 only: the other event stays off. */
	th_enable(&ta, EV_BIT, 1);
	t_assert(hvtg_enabled(&ev));
	t_assert(!hvtg_enabled(&ev2));
	t_eq(hvtg_write(&ev2, pay, 4), -ENODATA);
	th_enable(&ta, EV2_BIT, 1);
	t_assert(hvtg_enabled(&ev2));
	th_enable(&ta, EV2_BIT, 0);
	t_assert(!hvtg_enabled(&ev2));
	t_assert(hvtg_enabled(&ev));

	t_ok(hvtg_get_thread_stats(&st0));
	t0 = hvtg_counter_read();
	t_ok(hvtg_write(&ev, pay, sizeof(pay)));
	t1 = hvtg_counter_read();

	/* writev: pieces concatenated, empty pieces (even NULL) skipped. */
	iov[0] = (struct iovec){ a3, sizeof(a3) };
	iov[1] = (struct iovec){ NULL, 0 };
	iov[2] = (struct iovec){ b5, sizeof(b5) };
	t_ok(hvtg_writev(&ev, iov, 3));

	/* Zero-length payload: only the common fields. */
	t_ok(hvtg_write(&ev, NULL, 0));

	/* Argument errors write nothing. */
	for (i = 0; i <= HVTG_MAX_IOV; i++)
		iov[i] = (struct iovec){ a3, 1 };
	t_eq(hvtg_writev(&ev, iov, HVTG_MAX_IOV + 1), -EINVAL);
	t_eq(hvtg_writev(&ev, iov, -1), -EINVAL);
	iov[1] = (struct iovec){ NULL, 4 };
	t_eq(hvtg_writev(&ev, iov, 2), -EINVAL);
	t_eq(hvtg_write(&ev, NULL, 4), -EINVAL);
	{
		struct hvtg_area_info info;
		static uint8_t big[8192];

		t_ok(hvtg_area_get_info(ta.w, &info));
		t_equ(info.nr_cpus, 2);
		t_equ(info.subbuf_size, 4096);
		t_equ(info.mode, HVT_MODE_CONSUME);
		t_equ(info.clock_id, HVT_CLOCK_COUNTER);
		t_assert(info.clock_freq_hz > 0);
		t_eq(hvtg_write(&ev, big, info.max_payload + 1), -E2BIG);
		/* The largest payload fits, on a fresh page. */
		memset(big, 0x5a, sizeof(big));
		t_ok(hvtg_write(&ev, big, info.max_payload));
	}
	t_ok(hvtg_get_thread_stats(&st1));
	t_equ(st1.committed - st0.committed, 4);

	/* Another thread: its own thread id. */
	targ.ev = &ev;
	t_assert(pthread_create(&th, NULL, thread_write, &targ) == 0);
	pthread_join(th, NULL);
	t_eq(targ.ret, 0);
	t_assert(targ.tid != my_tid());

	/* A forked child: its own id (the cached one is refreshed). */
	pid = fork();
	if (pid == 0) {
		uint32_t v = 0x11223344;

		_exit(hvtg_write(&ev, &v, sizeof(v)) ? 3 : 0);
	}
	t_assert(pid > 0);
	t_assert(waitpid(pid, &status, 0) == pid);
	t_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	collect_all(&ta, &c);
	t_eq(c.n, 6);
	for (i = 0; i < c.n; i++) {
		t_equ(c.e[i].cpu, 0);
		t_equ(c.e[i].c.common_type, EV_ID);
		t_equ(c.e[i].c.common_flags, 0);
		t_equ(c.e[i].c.common_preempt_count, 0);
	}
	t_eq(c.e[0].c.common_pid, my_tid());
	t_equ(c.e[0].len, 12);
	t_memeq(c.e[0].p, pay, 12);
	t_assert(c.e[0].ts >= t0 && c.e[0].ts <= t1);
	t_equ(c.e[1].len, 8);
	t_memeq(c.e[1].p, a3, 3);
	t_memeq(c.e[1].p + 3, b5, 5);
	t_equ(c.e[2].len, 0);
	{
		struct hvtg_area_info info;
		uint8_t want[64];

		hvtg_area_get_info(ta.w, &info);
		t_equ(c.e[3].len, info.max_payload);
		memset(want, 0x5a, sizeof(want));
		t_memeq(c.e[3].p, want, 64);
	}
	t_eq(c.e[4].c.common_pid, targ.tid);
	t_equ(c.e[4].len, 4);
	t_eq(c.e[5].c.common_pid, pid);
	for (i = 1; i < c.n; i++)
		t_assert(c.e[i].ts >= c.e[i - 1].ts);

	hvtg_event_unbind(&ev);
	t_assert(!hvtg_enabled(&ev));
	t_eq(hvtg_write(&ev, pay, 4), -EBADF);
	th_area_free(&ta);
}

/* A CLOCK_MONOTONIC area: timestamps are nanoseconds of that clock. */
static void test_mono_clock(void)
{
	static struct hvtg_event ev = HVTG_EVENT_INIT;
	struct th_area ta;
	struct collected c;
	uint64_t t0, t1;
	uint32_t v = 1;

	th_area_new(&ta, 2, 4, 4096, HVT_MODE_OVERWRITE, HVT_CLOCK_MONO_NS);
	t_ok(th_pin(0));
	t_ok(hvtg_event_bind(ta.w, &ev, 3, 0));
	th_enable(&ta, 0, 1);
	t0 = mono_ns();
	t_ok(hvtg_write(&ev, &v, sizeof(v)));
	t1 = mono_ns();
	collect_all(&ta, &c);
	t_eq(c.n, 1);
	t_assert(c.e[0].ts >= t0 && c.e[0].ts <= t1);
	th_area_free(&ta);
}

/* Consume mode with no reader: every event either commits or is
 * returned as -ENOSPC and counted once in meta->lost. */
static void test_full_ring(void)
{
	static struct hvtg_event ev = HVTG_EVENT_INIT;
	struct hvtg_thread_stats st0, st1;
	struct th_area ta;
	uint64_t ok = 0, nospc = 0, missed, n;
	uint8_t pay[40];
	int i, ret;

	th_area_new(&ta, 1, 4, 4096, HVT_MODE_CONSUME, HVT_CLOCK_COUNTER);
	t_ok(th_pin(0));
	t_ok(hvtg_event_bind(ta.w, &ev, 9, 1));
	th_enable(&ta, 1, 1);
	t_ok(hvtg_get_thread_stats(&st0));
	for (i = 0; i < 2000; i++) {
		memset(pay, i, sizeof(pay));
		ret = hvtg_write(&ev, pay, 8 + (i % 33));
		if (ret == 0)
			ok++;
		else if (ret == -ENOSPC)
			nospc++;
		else
			t_fail("write %d returned %d", i, ret);
	}
	t_ok(hvtg_get_thread_stats(&st1));
	t_assert(ok > 0 && nospc > 0);
	t_equ(th_entries(&ta, 0), ok);
	t_equ(th_lost(&ta, 0), nospc);
	t_equ(st1.committed - st0.committed, ok);
	t_equ(st1.dropped - st0.dropped, nospc);
	/* The last page was sealed once the ring filled. */
	t_assert(st1.sealed - st0.sealed >= 1);
	n = th_walk(&ta, 0, NULL, NULL, &missed);
	t_equ(n, ok);
	/* No page began after the drops: none is reported on a page. */
	t_equ(missed, 0);
	printf("full ring: %llu committed, %llu dropped\n",
	       (unsigned long long)ok, (unsigned long long)nospc);
	th_area_free(&ta);
}

/* With glibc's rseq registration switched off, the library registers
 * its own area (checked in a re-executed copy of this program). */
static void test_own_registration(const char *self)
{
	static struct hvtg_event ev = HVTG_EVENT_INIT;
	struct th_area ta;
	uint32_t v = 5;

	if (!getenv("HVTG_TEST_CHILD")) {
		char *argv[] = { (char *)self, NULL };
		char *envp[] = { "HVTG_TEST_CHILD=1",
				 "GLIBC_TUNABLES=glibc.pthread.rseq=0", NULL };
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			execve("/proc/self/exe", argv, envp);
			_exit(127);
		}
		t_assert(waitpid(pid, &status, 0) == pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			t_fail("own-registration child failed (status 0x%x)",
			       status);
		return;
	}
	th_area_new(&ta, 1, 4, 4096, HVT_MODE_CONSUME, HVT_CLOCK_COUNTER);
	t_ok(th_pin(0));
	t_ok(hvtg_event_bind(ta.w, &ev, 1, 1));
	th_enable(&ta, 1, 1);
	t_ok(hvtg_write(&ev, &v, sizeof(v)));
	if (strcmp(hvtg_rseq_owner(), "own"))
		t_fail("rseq area owner %s, expected own (glibc registration "
		       "disabled)",
		       hvtg_rseq_owner());
	t_equ(th_entries(&ta, 0), 1);
	th_area_free(&ta);
	exit(0);
}

int main(int argc, char **argv)
{
	if (getenv("HVTG_TEST_CHILD")) {
		test_own_registration(argv[0]);
		return 1;
	}
	test_enable_and_fields();
	test_mono_clock();
	test_full_ring();
	printf("rseq area registered by %s\n", hvtg_rseq_owner());
	test_own_registration(argv[0]);
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
