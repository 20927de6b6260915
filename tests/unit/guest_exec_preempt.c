// SPDX-License-Identifier: MIT
/*
 * Preemption inside the critical section, without any signal.  A payload
 * piece lives on a userfaultfd-registered page that is not populated yet,
 * so the writer blocks in the kernel in the middle of its copies (after
 * storing the ts cache, header and first piece).  While it is switched
 * out, a sibling thread on the same CPU commits its own event into the
 * same buffer; only then is the fault resolved.  On its way back to user
 * space the blocked writer must be aborted (it was switched out inside
 * the section), re-plan on top of the sibling's event and commit: the
 * ring holds the sibling's event, then the writer's, both intact, and the
 * partial stores of the aborted attempt are nowhere to be seen.
 */
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST)

#include "hvtg_internal.h"

static struct th_area ta;
static struct hvtg_event ev = HVTG_EVENT_INIT;
static uint8_t *lazy;			/* userfaultfd-backed page */
static uint8_t fill[4096];
static int uffd;
static volatile int sib_go, sib_done, sib_ret = -1, faulted;
static volatile uint64_t ts_key_at_fault, write_at_fault, write_before;

static void *sibling(void *arg)
{
	uint32_t v = 0x5151;

	if (th_pin(0))
		return NULL;
	while (!sib_go)
		sched_yield();
	sib_ret = hvtg_write(&ev, &v, sizeof(v));
	sib_done = 1;
	return NULL;
}

static void *resolver(void *arg)
{
	struct uffd_msg msg;
	struct uffdio_copy cp;
	struct pollfd pfd = { uffd, POLLIN, 0 };
	struct hvt_cpu_meta *m = th_meta(&ta, 0);

	if (poll(&pfd, 1, 30000) != 1 ||
	    read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return NULL;
	faulted = 1;
	/* The writer sleeps inside its section: look at what it left. */
	ts_key_at_fault = m->ts_key;
	write_at_fault = m->write;
	sib_go = 1;
	while (!sib_done)
		sched_yield();
	cp.dst = (uintptr_t)lazy;
	cp.src = (uintptr_t)fill;
	cp.len = 4096;
	cp.mode = 0;
	cp.copy = 0;
	ioctl(uffd, UFFDIO_COPY, &cp);
	return NULL;
}

struct rec {
	int n;
	uint32_t len[4];
	int32_t pid[4];
	uint8_t p[4][32];
};

static void collect(const struct th_event *e, void *arg)
{
	struct rec *r = arg;

	if (r->n >= 4)
		t_fail("too many events");
	r->len[r->n] = e->len;
	r->pid[r->n] = e->common->common_pid;
	memcpy(r->p[r->n], e->payload, e->len < 32 ? e->len : 32);
	r->n++;
}

int main(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	struct hvtg_thread_stats s0, s1;
	uint8_t head[16];
	struct iovec iov[2];
	pthread_t ts, tr;
	struct rec r = { 0 };
	uint32_t v = 1;
	int i;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0)
		t_skip("userfaultfd unavailable (%s): needed to block a "
		       "writer inside its critical section",
		       strerror(errno));
	if (ioctl(uffd, UFFDIO_API, &api))
		t_skip("UFFDIO_API failed: %s", strerror(errno));
	lazy = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t_assert(lazy != MAP_FAILED);
	reg.range.start = (uintptr_t)lazy;
	reg.range.len = 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		t_skip("UFFDIO_REGISTER failed: %s", strerror(errno));
	for (i = 0; i < 4096; i++)
		fill[i] = (uint8_t)(i ^ 0xa5);
	for (i = 0; i < 16; i++)
		head[i] = (uint8_t)(0x30 + i);

	th_area_new(&ta, 1, 8, 4096, HVT_MODE_CONSUME, HVT_CLOCK_COUNTER);
	t_ok(th_pin(0));
	t_ok(hvtg_event_bind(ta.w, &ev, 12, 4));
	th_enable(&ta, 4, 1);
	t_ok(hvtg_write(&ev, &v, sizeof(v)));
	write_before = th_meta(&ta, 0)->write;

	t_assert(pthread_create(&ts, NULL, sibling, NULL) == 0);
	t_assert(pthread_create(&tr, NULL, resolver, NULL) == 0);
	iov[0] = (struct iovec){ head, 16 };
	iov[1] = (struct iovec){ lazy, 16 };
	t_ok(hvtg_get_thread_stats(&s0));
	t_ok(hvtg_writev(&ev, iov, 2));
	t_ok(hvtg_get_thread_stats(&s1));
	pthread_join(tr, NULL);
	pthread_join(ts, NULL);

	t_assert(faulted);
	t_eq(sib_ret, 0);
	/* Blocked after its first stores, before its commit. */
	t_equ(write_at_fault, write_before);
	t_assert(ts_key_at_fault != write_at_fault);
	t_assert(s1.aborted - s0.aborted >= 1);
	t_equ(s1.committed - s0.committed, 1);

	t_equ(th_walk(&ta, 0, collect, &r, NULL), 3);
	t_equ(r.len[1], 4);
	v = 0x5151;
	t_memeq(r.p[1], &v, 4);
	t_equ(r.len[2], 32);
	t_memeq(r.p[2], head, 16);
	t_memeq(r.p[2] + 16, fill, 16);
	t_assert(r.pid[1] != r.pid[2]);
	th_area_free(&ta);
	printf("aborted %llu, stale %llu, cpu moved %llu\n",
	       (unsigned long long)(s1.aborted - s0.aborted),
	       (unsigned long long)(s1.stale - s0.stale),
	       (unsigned long long)(s1.cpu_moved - s0.cpu_moved));
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("the guest library is not configured (CONFIG_HVT_GUEST)");
}
#endif
