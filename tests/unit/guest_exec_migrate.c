// SPDX-License-Identifier: MIT
/*
 * Migration.  (1) A plan built on CPU 0, executed after the thread moved
 * to CPU 1 with sched_setaffinity(), is refused (HVTG_EXEC_CPU) and
 * changes nothing.  (2) A write whose critical section is interrupted by a
 * signal whose handler moves the thread to CPU 1 is aborted on CPU 0 and
 * committed on CPU 1: CPU 0's ring gains nothing, CPU 1's gets the event
 * intact.  (3) A thread hopping between CPUs after every write leaves
 * every event on the CPU it ran on, in order.
 */
#include <signal.h>

#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

static struct th_area ta;
static uint8_t *pages;
static volatile int faults;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	faults++;
	if (mprotect(pages + 4096, 4096, PROT_READ) || th_pin(1))
		_exit(2);
}

struct rec {
	uint64_t n;
	uint32_t last;
	int bad;
};

static void collect(const struct th_event *e, void *arg)
{
	struct rec *r = arg;
	uint32_t v;

	memcpy(&v, e->payload, 4);
	if (e->len == 4) {
		if (r->n && v <= r->last)
			r->bad = 1;
		r->last = v;
	}
	r->n++;
}

int main(void)
{
	static struct hvtg_event ev = HVTG_EVENT_INIT;
	struct hvtg_thread_stats s0, s1;
	struct hvt_common_fields c = { 4, 0, 0, 1 };
	struct hvt_rb_cpu cb0;
	struct hvt_rb_plan p;
	struct sigaction sa;
	struct iovec iov[2];
	struct rec r0 = { 0 }, r1 = { 0 };
	uint8_t *snap;
	uint32_t v, i;
	int ret;

	if (th_nr_cpus() < 2)
		t_skip("needs two online CPUs to migrate between");
	th_area_new(&ta, 2, 16, 4096, HVT_MODE_CONSUME, HVT_CLOCK_COUNTER);
	t_ok(hvtg_event_bind(ta.w, &ev, 4, 2));
	th_enable(&ta, 2, 1);
	t_ok(hvt_area_cpu(ta.mem, ta.size, 0, &cb0));
	snap = malloc(ta.size);
	t_assert(snap);

	/* 1. Plan on CPU 0, execute on CPU 1. */
	t_ok(th_pin(0));
	t_ok(hvtg_thread_init());
	v = 7;
	{
		struct hvt_iovec hv = { &v, 4 };

		t_ok(hvt_rb_plan_write(&cb0, &p, hvtg_counter_read(), &c, &hv,
				       1));
	}
	t_ok(th_pin(1));
	memcpy(snap, ta.mem, ta.size);
	do {
		ret = hvtg_rseq_exec(&p);
	} while (ret == HVTG_EXEC_ABORTED);
	t_eq(ret, HVTG_EXEC_CPU);
	t_assert(memcmp(snap, ta.mem, ta.size) == 0);

	/* 2. Moved to CPU 1 by a signal handler inside the section. */
	t_ok(th_pin(0));
	pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t_assert(pages != MAP_FAILED);
	memset(pages, 0x77, 8192);
	t_ok(mprotect(pages + 4096, 4096, PROT_NONE));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	t_ok(sigaction(SIGSEGV, &sa, NULL));
	iov[0] = (struct iovec){ pages, 8 };
	iov[1] = (struct iovec){ pages + 4096, 8 };
	t_ok(hvtg_get_thread_stats(&s0));
	t_ok(hvtg_writev(&ev, iov, 2));
	t_ok(hvtg_get_thread_stats(&s1));
	t_eq(faults, 1);
	t_assert(s1.aborted - s0.aborted >= 1);
	t_equ(sched_getcpu(), 1);
	t_equ(th_entries(&ta, 0), 0);
	t_equ(th_entries(&ta, 1), 1);

	/* 3. Hop after every write. */
	for (i = 1; i <= 2000; i++) {
		t_ok(th_pin((int)(i & 1)));
		t_ok(hvtg_write(&ev, &i, sizeof(i)));
	}
	th_walk(&ta, 0, collect, &r0, NULL);
	th_walk(&ta, 1, collect, &r1, NULL);
	t_equ(r0.n, 1000);
	t_equ(r1.n, 1001);
	t_assert(!r0.bad && !r1.bad);
	t_equ(r0.last, 2000);
	t_equ(r1.last, 1999);
	free(snap);
	th_area_free(&ta);
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
