// SPDX-License-Identifier: MIT
/*
 * Boot flow of the EL2 image.
 *
 * CPU 0: identity map and MMU on, EL2 controls, boot parameters from the
 * DTB, PSCI CPU_ON for the other CPUs (which enable their own MMU and
 * check in), format the trace area, optionally wait for the host, then
 * release everyone into the EL1 payload.
 */
#include "hyp.h"

struct hyp_cpu hyp_cpus[HYP_NR_CPUS];
struct hyp_params hyp_params;
uint32_t hyp_nr_cpus;
uint64_t hyp_counter_freq;

uint8_t hyp_stacks[HVT_HYP_MAX_CPUS][HYP_STACK_SIZE] __aligned(16);
static uint8_t payload_stacks[HYP_NR_CPUS][8192] __aligned(16);
static uint32_t hyp_go;

void hyp_wrong_el(uint64_t el)
{
	hyp_printf("hyp: started at EL%u, not EL2: run QEMU with -M virt,virtualization=on\n",
		   (unsigned int)el);
	for (;;)
		wfi();
}

/* Per-CPU EL2 controls for running the payload at EL1. */
static void el2_setup_cpu(void)
{
	write_sysreg(hcr_el2, HCR_RW);
	/* EL1 may read the physical counter and timer. */
	write_sysreg(cnthctl_el2, 3);
	/* CNTVCT == CNTPCT on every CPU: one timeline for all buffers. */
	write_sysreg(cntvoff_el2, 0);
	write_sysreg(vmpidr_el2, read_sysreg(mpidr_el1));
	write_sysreg(vpidr_el2, read_sysreg(midr_el1));
	/* The new controls apply from here on (context synchronization). */
	isb();
}

void hyp_enter_payload(struct hyp_cpu *hc)
{
	struct hyp_regs f;

	memset(&f, 0, sizeof(f));
	f.x[0] = hc->cpu;
	f.x[1] = hyp_params.hcalls;
	f.x[2] = hyp_params.delay;
	f.elr = (uintptr_t)payload_entry;
	f.spsr = SPSR_EL1H_MASKED;
	write_sysreg(sp_el1, (uintptr_t)&payload_stacks[hc->cpu][8192]);
	write_sysreg(sctlr_el1, SCTLR_EL1_RES1);
	/* EL1 system registers in place before the eret (sync. only). */
	isb();
	hyp_eret_to(&f, (uintptr_t)&hyp_stacks[hc->cpu][HYP_STACK_SIZE]);
}

static void boot_secondary(uint32_t cpu)
{
	struct hyp_cpu *hc = &hyp_cpus[cpu];

	mmu_enable();
	el2_setup_cpu();
	if (arch_cpu_id() != cpu)
		hyp_panic("CPU started as %u has MPIDR CPU %u", cpu,
			  arch_cpu_id());
	/* Release: pairs with the acquire in boot_primary()'s wait. */
	__atomic_store_n(&hc->online, 1, __ATOMIC_RELEASE);
	/*
	 * Acquire: pairs with the release of hyp_go: the area, this CPU's
	 * buffer and shadow control page are initialized.
	 */
	while (!__atomic_load_n(&hyp_go, __ATOMIC_ACQUIRE))
		cpu_relax();
	hyp_enter_payload(hc);
}

/*
 * Boot parameter wait=MS: hold the payload until a host has attached and
 * enabled at least one event (so a host can trace the run from its first
 * hypercall), answering time syncs meanwhile.
 */
static void wait_for_host(uint32_t ms)
{
	uint64_t end = arch_counter() + hyp_counter_freq / 1000 * ms;
	int ready;

	hyp_printf("hyp: waiting up to %u ms for the host to attach and enable events\n",
		   ms);
	while (!(ready = ctrl_host_ready()) && arch_counter() < end) {
		ctrl_refresh_cpu(&hyp_cpus[0]);
		trace_sync_service();
	}
	hyp_printf("hyp: host %s\n", ready ? "ready" :
					     "not ready, going on");
}

static void boot_primary(void)
{
	const char *args;
	uint64_t deadline;
	int64_t ver;
	uint32_t cpu, nr;

	hyp_printf("\nhvtrace EL2 rig: cpu0 at EL%u\n", arch_current_el());
	mmu_init_tables();
	mmu_enable();
	hyp_console_locking(1);
	el2_setup_cpu();

	hyp_counter_freq = arch_counter_freq();
	if (!hyp_counter_freq)
		hyp_panic("CNTFRQ_EL0 is 0: no counter frequency");
	hyp_params.mode = HVT_DEFAULT_MODE;
	hyp_params.nr_cpus = HYP_NR_CPUS;
	hyp_params.hcalls = 10000;
	args = fdt_bootargs((const void *)(uintptr_t)HVT_HYP_DTB_BASE,
			    HVT_HYP_DTB_MAX);
	hyp_printf("hyp: bootargs \"%s\"\n", args ? args : "");
	if (args)
		params_parse(&hyp_params, args);
	if (hyp_params.bench)
		hyp_params.nr_cpus = 1;

	ver = psci_version();
	hyp_printf("hyp: PSCI %u.%u\n", (unsigned int)(ver >> 16) & 0xffff,
		   (unsigned int)ver & 0xffff);
	nr = 1;
	hyp_cpus[0].online = 1;
	for (cpu = 1; cpu < hyp_params.nr_cpus; cpu++) {
		uint64_t mpidr = ((uint64_t)(cpu / 8) << 8) | (cpu % 8);
		int64_t ret = psci_cpu_on(mpidr, (uintptr_t)hyp_secondary_entry,
					  cpu);

		if (ret) {
			hyp_printf("hyp: PSCI CPU_ON of cpu%u failed (%d): does QEMU have -smp %u?\n",
				   cpu, (int)ret, hyp_params.nr_cpus);
			break;
		}
		nr++;
	}
	deadline = arch_counter() + hyp_counter_freq * 2;
	for (cpu = 1; cpu < nr; cpu++)
		/* Acquire: pairs with the release in boot_secondary(). */
		while (!__atomic_load_n(&hyp_cpus[cpu].online,
					__ATOMIC_ACQUIRE))
			if (arch_counter() > deadline)
				hyp_panic("cpu%u did not check in after CPU_ON",
					  cpu);
	hyp_nr_cpus = nr;
	hyp_printf("hyp: %u CPUs online, %llu hypercalls per CPU%s, delay %llu\n",
		   nr, (unsigned long long)hyp_params.hcalls,
		   hyp_params.hcalls ? "" : " (until stopped)",
		   (unsigned long long)hyp_params.delay);

	if (trace_init())
		hyp_panic("cannot set up the trace area");
	if (hyp_params.bench)
		bench_run(hyp_params.bench);
	if (hyp_params.wait_ms)
		wait_for_host(hyp_params.wait_ms);
	hyp_printf("hyp: starting the payload\n");
	/* Release: publishes the formatted area and every CPU's state. */
	__atomic_store_n(&hyp_go, 1, __ATOMIC_RELEASE);
	hyp_enter_payload(&hyp_cpus[0]);
}

void hyp_main(uint32_t cpu)
{
	if (cpu == 0)
		boot_primary();
	else
		boot_secondary(cpu);
	for (;;)
		wfi();
}
