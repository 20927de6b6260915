// SPDX-License-Identifier: MIT
/*
 * Hypervisor entry from EL1: hypercall dispatch and tracing, host control
 * service, the idle loop and power-off.
 *
 * Every hypercall is traced as hyp_enter, host_hcall, hyp_exit on the
 * calling CPU's buffer.  Interrupts stay masked at EL2, so each CPU is the
 * only writer of its buffer (the direct executor's requirement).
 */
#include <hvt_hyp/hcall.h>

#include "trace.h"

uint32_t hyp_stopping;

/* CPU 0 polls the console and the slow control fields this often. */
#define SLOW_POLL_HZ	1000

static void console_poll(void)
{
	int c, n;

	for (n = 0; n < 16 && (c = uart_getc()) >= 0; n++) {
		if (c == 'q')
			hyp_poweroff("host command");
		if (c == 's')
			trace_print_stats();
	}
}

void hyp_service(struct hyp_cpu *hc)
{
	uint64_t now;

	ctrl_refresh_cpu(hc);
	if (hc->cpu != 0)
		return;
	trace_sync_service();
	now = arch_counter();
	if (now - hc->last_slow >= hyp_counter_freq / SLOW_POLL_HZ) {
		hc->last_slow = now;
		ctrl_poll_global(hc);
		console_poll();
	}
}

static void hyp_park(struct hyp_cpu *hc) __noreturn;
static void hyp_park(struct hyp_cpu *hc)
{
	/* Release: every event this CPU wrote is visible before the flag;
	 * pairs with the acquire in hyp_poweroff(). */
	__atomic_store_n(&hc->parked, 1, __ATOMIC_RELEASE);
	psci_cpu_off();
}

static int all_done(void)
{
	uint32_t cpu;

	for (cpu = 0; cpu < hyp_nr_cpus; cpu++)
		/* Acquire: pairs with the release in hyp_payload_done(). */
		if (!__atomic_load_n(&hyp_cpus[cpu].done, __ATOMIC_ACQUIRE))
			return 0;
	return 1;
}

void hyp_poweroff(const char *why)
{
	struct hyp_cpu *self = hyp_this_cpu();
	uint64_t deadline;
	uint32_t cpu;

	/* Release: pairs with the acquire at every hypervisor entry. */
	__atomic_store_n(&hyp_stopping, 1, __ATOMIC_RELEASE);
	deadline = arch_counter() + hyp_counter_freq / 5;
	for (cpu = 0; cpu < hyp_nr_cpus; cpu++) {
		struct hyp_cpu *hc = &hyp_cpus[cpu];

		if (hc == self)
			continue;
		/* Acquire: pairs with the release in hyp_park() and
		 * hyp_payload_done(): that CPU writes nothing more. */
		while (!__atomic_load_n(&hc->parked, __ATOMIC_ACQUIRE) &&
		       !__atomic_load_n(&hc->done, __ATOMIC_ACQUIRE) &&
		       arch_counter() < deadline)
			cpu_relax();
	}
	hyp_printf("hyp: powering off (%s)\n", why);
	trace_print_stats();
	/*
	 * Release: every event committed above is visible to a host that
	 * sees STOPPED (pairs with the host's acquire load of state).
	 */
	__atomic_store_n(&hyp_header->state, HVT_STATE_STOPPED,
			 __ATOMIC_RELEASE);
	hyp_printf("hyp: system off\n");
	psci_system_off();
}

void hyp_panic(const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	va_start(ap, fmt);
	hyp_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	hyp_printf("hyp: PANIC on cpu%u: %s\n", arch_cpu_id(), buf);
	/* The area stays in state RUNNING: the host sees an unclean end. */
	psci_system_off();
}

void hyp_idle(struct hyp_cpu *hc)
{
	for (;;) {
		uint64_t until;

		hyp_service(hc);
		if (!hyp_params.hold && all_done())
			hyp_poweroff("run complete");
		/* ~2 us between polls: sync answers stay quick. */
		until = arch_counter() + hyp_counter_freq / 500000 + 1;
		while (arch_counter() < until)
			cpu_relax();
	}
}

static void hyp_payload_done(struct hyp_cpu *hc) __noreturn;
static void hyp_payload_done(struct hyp_cpu *hc)
{
	/* Release: pairs with the acquire in all_done()/hyp_poweroff(). */
	__atomic_store_n(&hc->done, 1, __ATOMIC_RELEASE);
	if (hc->cpu == 0)
		hyp_idle(hc);
	psci_cpu_off();
}

static uint64_t hcall_dispatch(struct hyp_cpu *hc, const struct hyp_regs *r)
{
	uint64_t a0 = r->x[1], a1 = r->x[2], a2 = r->x[3];

	switch (r->x[0]) {
	case HVT_HC_NOP:
		return 0;
	case HVT_HC_ADD:
		return a0 + a1 + a2;
	case HVT_HC_MIX:
		return (a0 * 0x9e3779b97f4a7c15ULL) ^ (a1 >> 7) ^ (a2 << 3);
	case HVT_HC_CPU:
		return hc->cpu;
	case HVT_HC_DONE:
		hc->payload_calls = a0;
		hc->payload_bad = a1;
		return 0;
	default:
		return (uint64_t)HVT_HC_NOT_SUPPORTED;
	}
}

void hyp_handle_lower_sync(struct hyp_regs *regs)
{
	struct hyp_cpu *hc = hyp_this_cpu();
	uint64_t esr = read_sysreg(esr_el2);
	uint32_t ec = (uint32_t)(esr >> ESR_EC_SHIFT) & 0x3f;
	uint64_t func = regs->x[0], ret;

	/* Acquire: pairs with the release in hyp_poweroff(). */
	if (__atomic_load_n(&hyp_stopping, __ATOMIC_ACQUIRE))
		hyp_park(hc);
	hyp_service(hc);
	hyp_trace(hc, hvt_hyp_trace_hyp_enter(ec, (uint32_t)esr & ESR_ISS_MASK,
					      regs->elr));
	if (ec != ESR_EC_HVC64)
		hyp_panic("unexpected exception from EL1: esr=0x%llx elr=0x%llx far=0x%llx",
			  (unsigned long long)esr,
			  (unsigned long long)regs->elr,
			  (unsigned long long)read_sysreg(far_el2));
	hc->hcalls++;
	ret = hcall_dispatch(hc, regs);
	hyp_trace(hc, hvt_hyp_trace_host_hcall(func, regs->x[1], regs->x[2],
					       regs->x[3], (int64_t)ret));
	regs->x[0] = ret;
	hyp_trace(hc, hvt_hyp_trace_hyp_exit(regs->elr));
	if (func == HVT_HC_DONE)
		hyp_payload_done(hc);
}

void hyp_handle_unexpected(struct hyp_regs *regs, uint64_t kind)
{
	hyp_panic("unexpected exception, vector %llu: esr=0x%llx elr=0x%llx far=0x%llx spsr=0x%llx",
		  (unsigned long long)kind,
		  (unsigned long long)read_sysreg(esr_el2),
		  (unsigned long long)regs->elr,
		  (unsigned long long)read_sysreg(far_el2),
		  (unsigned long long)regs->spsr);
}
