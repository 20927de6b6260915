// SPDX-License-Identifier: MIT
/*
 * PSCI through SMC.  With virtualization=on and no EL3 firmware, QEMU's
 * virt machine implements PSCI itself and takes the calls from the SMC
 * conduit (HVC belongs to the hypervisor, i.e. to us).
 */
#include "hyp.h"

#define PSCI_VERSION		0x84000000ULL
#define PSCI_CPU_OFF		0x84000002ULL
#define PSCI_CPU_ON_64		0xc4000003ULL
#define PSCI_SYSTEM_OFF		0x84000008ULL

int64_t psci_call(uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2)
{
	register uint64_t x0 __asm__("x0") = fn;
	register uint64_t x1 __asm__("x1") = a0;
	register uint64_t x2 __asm__("x2") = a1;
	register uint64_t x3 __asm__("x3") = a2;

	__asm__ volatile("smc #0"
			 : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3)
			 :
			 : "memory");
	return (int64_t)x0;
}

int64_t psci_version(void)
{
	return psci_call(PSCI_VERSION, 0, 0, 0);
}

int64_t psci_cpu_on(uint64_t mpidr, uint64_t entry, uint64_t ctx)
{
	return psci_call(PSCI_CPU_ON_64, mpidr, entry, ctx);
}

void psci_cpu_off(void)
{
	psci_call(PSCI_CPU_OFF, 0, 0, 0);
	/* CPU_OFF only returns on failure: idle forever instead. */
	for (;;)
		wfi();
}

void psci_system_off(void)
{
	psci_call(PSCI_SYSTEM_OFF, 0, 0, 0);
	for (;;)
		wfi();
}
