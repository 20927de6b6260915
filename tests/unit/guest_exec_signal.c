// SPDX-License-Identifier: MIT
/*
 * Signals inside the critical section.  A payload piece on a PROT_NONE
 * page makes the executor fault in the middle of its copies, after it has
 * already stored the ts cache, the event header and the first piece.  The
 * kernel must abort the section before delivering SIGSEGV (the handler
 * sees the abort handler's address as the interrupted IP, and the
 * section disarmed), the partial stores must not be committed, and the
 * retry must commit the event intact.  Variants, with the handler:
 *
 *   - only unprotecting the page (executor level, then API level);
 *   - yielding the CPU to a sibling thread on the same CPU, which commits
 *     its own event into the same buffer before the retry;
 *   - writing an event itself (a nested writer in the signal handler);
 *
 * and once more through hvtg_write() with one piece that runs into the
 * protected page, which on x86_64 takes the compact plan's executor
 * (hvtg_rseq_append_asm()): its abort handler must be the interrupted IP.
 */
#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

enum action { ACT_NONE, ACT_YIELD, ACT_NESTED };

static struct th_area ta;
static struct hvtg_event ev = HVTG_EVENT_INIT;
static uint8_t *pages;			/* [0] readable, [1] PROT_NONE */
static volatile enum action act;
static volatile int faults;
static volatile uintptr_t fault_ip;
static volatile uintptr_t fault_addr;
static volatile uint64_t fault_rseq_cs;
static volatile int fault_committed;	/* write word moved at the fault */
static volatile int fault_ts_key_stale;
static uint64_t word_before;
static volatile int sib_go, sib_done, sib_ret;

static uintptr_t ctx_ip(void *uc)
{
	ucontext_t *u = uc;

#if defined(__x86_64__)
	return (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)u->uc_mcontext.pc;
#else
	return 0;
#endif
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	struct hvt_cpu_meta *m = th_meta(&ta, 0);

	faults++;
	fault_ip = ctx_ip(uc);
	fault_addr = (uintptr_t)si->si_addr;
	fault_rseq_cs = __atomic_load_n(&hvtg_tls.rs->rseq_cs,
					__ATOMIC_RELAXED);
	fault_committed = m->write != word_before;
	fault_ts_key_stale = m->ts_key != m->write;
	if (mprotect(pages + 4096, 4096, PROT_READ))
		_exit(2);
	if (act == ACT_YIELD) {
		sib_go = 1;
		while (!sib_done)
			sched_yield();
	} else if (act == ACT_NESTED) {
		uint32_t v = 0xfeedface;

		sib_ret = hvtg_write(&ev, &v, sizeof(v));
	}
}

static void *sibling(void *arg)
{
	uint32_t v = 0x51b11;

	if (th_pin(0))
		return NULL;
	while (!sib_go)
		sched_yield();
	sib_ret = hvtg_write(&ev, &v, sizeof(v));
	sib_done = 1;
	return NULL;
}

static void arm(void)
{
	uint32_t i;

	t_ok(mprotect(pages + 4096, 4096, PROT_READ | PROT_WRITE));
	for (i = 0; i < 4096; i++)
		pages[4096 + i] = (uint8_t)(i * 7);
	t_ok(mprotect(pages + 4096, 4096, PROT_NONE));
	faults = 0;
	fault_ip = fault_addr = 0;
	fault_rseq_cs = 1;
	word_before = th_meta(&ta, 0)->write;
}

static void check_fault_at(const char *abort_ip)
{
	t_eq(faults, 1);
	if (fault_ip != (uintptr_t)abort_ip)
		t_fail("SIGSEGV handler saw IP %#lx, expected the abort "
		       "handler %p (the kernel did not abort the section)",
		       (unsigned long)fault_ip, (const void *)abort_ip);
	t_equ(fault_addr, (uintptr_t)(pages + 4096));
	t_equ(fault_rseq_cs, 0);
	t_assert(!fault_committed);
	/* The section was stopped after storing, not before. */
	t_assert(fault_ts_key_stale);
}

static void check_fault(void)
{
	check_fault_at(hvtg_rseq_abort_ip);
}

struct rec {
	int n;
	struct {
		uint32_t len;
		int32_t pid;
		uint8_t p[64];
	} e[8];
};

static void collect(const struct th_event *e, void *arg)
{
	struct rec *r = arg;

	if (r->n >= 8)
		t_fail("too many events");
	r->e[r->n].len = e->len;
	r->e[r->n].pid = e->common->common_pid;
	memcpy(r->e[r->n].p, e->payload, e->len < 64 ? e->len : 64);
	r->n++;
}

/* The faulting event: 16 bytes at pages[0], 16 at the protected page. */
static void expect_event(struct rec *r, int i)
{
	t_equ(r->e[i].len, 32);
	t_memeq(r->e[i].p, pages, 16);
	t_memeq(r->e[i].p + 16, pages + 4096, 16);
}

int main(void)
{
	struct sigaction sa;
	struct hvtg_thread_stats s0, s1;
	struct iovec iov[2];
	struct hvt_rb_plan p;
	struct rec r;
	pthread_t th;
	uint32_t v;
	int ret, i;

	th_area_new(&ta, 1, 8, 4096, HVT_MODE_CONSUME, HVT_CLOCK_COUNTER);
	t_ok(th_pin(0));
	t_ok(hvtg_event_bind(ta.w, &ev, 11, 3));
	th_enable(&ta, 3, 1);
	pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t_assert(pages != MAP_FAILED);
	for (i = 0; i < 16; i++) {
		pages[i] = (uint8_t)(0xc0 + i);
		pages[4080 + i] = (uint8_t)(0xd0 + i);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	t_ok(sigaction(SIGSEGV, &sa, NULL));
	/* A first event so the faulting one is an append with a ts cache. */
	v = 1;
	t_ok(hvtg_write(&ev, &v, sizeof(v)));

	/* 1. Executor level. */
	{
		struct hvt_rb_cpu cb;
		struct hvt_common_fields c = { 11, 0, 0, 5 };
		struct hvt_iovec hv[2] = { { pages, 16 },
					   { pages + 4096, 16 } };

		t_ok(hvt_area_cpu(ta.mem, ta.size, 0, &cb));
		act = ACT_NONE;
		arm();
		t_ok(hvt_rb_plan_write(&cb, &p, hvtg_counter_read(), &c, hv,
				       2));
		ret = hvtg_rseq_exec(&p);
		t_eq(ret, HVTG_EXEC_ABORTED);
		check_fault();
		t_equ(th_meta(&ta, 0)->write, word_before);
		/* Nothing else wrote: the same plan is still valid. */
		do {
			ret = hvtg_rseq_exec(&p);
		} while (ret == HVTG_EXEC_ABORTED);
		t_eq(ret, HVTG_EXEC_COMMITTED);
	}

	/* 2. API level: hvtg_writev() retries by itself. */
	iov[0] = (struct iovec){ pages, 16 };
	iov[1] = (struct iovec){ pages + 4096, 16 };
	act = ACT_NONE;
	arm();
	t_ok(hvtg_get_thread_stats(&s0));
	t_ok(hvtg_writev(&ev, iov, 2));
	t_ok(hvtg_get_thread_stats(&s1));
	check_fault();
	t_assert(s1.aborted - s0.aborted >= 1);
	t_equ(s1.committed - s0.committed, 1);

	/* 3. The handler yields to a sibling on the same CPU, which commits
	 * into the same buffer while this write is aborted. */
	sib_go = sib_done = 0;
	sib_ret = -1;
	t_assert(pthread_create(&th, NULL, sibling, NULL) == 0);
	act = ACT_YIELD;
	arm();
	t_ok(hvtg_writev(&ev, iov, 2));
	pthread_join(th, NULL);
	check_fault();
	t_eq(sib_ret, 0);

	/* 4. The handler writes an event itself. */
	act = ACT_NESTED;
	sib_ret = -1;
	arm();
	t_ok(hvtg_writev(&ev, iov, 2));
	check_fault();
	t_eq(sib_ret, 0);

	/* 5. One piece, the last 16 bytes of the readable page and the
	 * first 16 of the protected one, through hvtg_write(). */
	act = ACT_NONE;
	arm();
	t_ok(hvtg_get_thread_stats(&s0));
	t_ok(hvtg_write(&ev, pages + 4080, 32));
	t_ok(hvtg_get_thread_stats(&s1));
#if HVTG_HAVE_APPEND_EXEC
	check_fault_at(hvtg_rseq_append_abort_ip);
#else
	check_fault();
#endif
	t_assert(s1.aborted - s0.aborted >= 1);
	t_equ(s1.committed - s0.committed, 1);

	memset(&r, 0, sizeof(r));
	t_equ(th_walk(&ta, 0, collect, &r, NULL), 8);
	t_equ(r.e[0].len, 4);
	expect_event(&r, 1);			/* 1 */
	expect_event(&r, 2);			/* 2 */
	t_equ(r.e[3].len, 4);			/* 3: sibling first */
	v = 0x51b11;
	t_memeq(r.e[3].p, &v, 4);
	t_assert(r.e[3].pid != r.e[4].pid);
	expect_event(&r, 4);
	t_equ(r.e[5].len, 4);			/* 4: handler first */
	v = 0xfeedface;
	t_memeq(r.e[5].p, &v, 4);
	expect_event(&r, 6);
	t_equ(r.e[7].len, 32);			/* 5 */
	t_memeq(r.e[7].p, pages + 4080, 32);
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
