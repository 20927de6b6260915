/* SPDX-License-Identifier: MIT */
/*
 * The EL2 image: internal interfaces.
 */
#ifndef HYP_HYP_H
#define HYP_HYP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <hvtrace/config.h>
#include <hvtrace/ring_buffer.h>
#include <hvtrace/hyp_layout.h>

#if CONFIG_HVT_HYP_NR_CPUS > HVT_HYP_MAX_CPUS
#error "CONFIG_HVT_HYP_NR_CPUS is larger than the image supports (8): fix it with make menuconfig"
#endif

#define HYP_NR_CPUS	CONFIG_HVT_HYP_NR_CPUS
#define HYP_STACK_SIZE	16384

#define __aligned(x)	__attribute__((aligned(x)))
#define __noreturn	__attribute__((noreturn))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Saved EL1 context; the layout is shared with vectors.S. */
struct hyp_regs {
	uint64_t x[31];
	uint64_t elr;
	uint64_t spsr;
	uint64_t pad;
};
#define HYP_REGS_SIZE	272

/* Boot parameters (from /chosen/bootargs, see params.c). */
struct hyp_params {
	uint32_t mode;		/* HVT_MODE_* */
	uint32_t nr_cpus;
	uint64_t hcalls;	/* per CPU; 0 = until told to stop */
	uint32_t subbufs;	/* per CPU; 0 = as many as fit */
	uint32_t hold;		/* stay up after the payload, until 'q' */
	uint32_t wait_ms;	/* wait for the host to attach first */
	uint32_t pad;
	uint64_t bench;		/* events of the in-image benchmark */
	uint64_t delay;		/* payload spin loops between calls */
};

/* Control-page fields the validator tracks (one "last bad value" each). */
enum hyp_ctrl_field {
	CTRL_F_CONSUMER,
	CTRL_F_RESET,
	CTRL_F_MAGIC,
	CTRL_F_ABI,
	CTRL_F_TRACING_ON,
	CTRL_F_RESERVED,
	CTRL_F_CLOCK,
	CTRL_F_CLOCK_ODD,
	CTRL_F_CMD,
	CTRL_F_NR
};

/*
 * Per-CPU state.  'shadow' is the only control page the writer core and
 * the enable checks ever read: it holds values copied out of the host's
 * page and validated (see ctrl.c).
 */
struct hyp_cpu {
	struct hvt_control shadow;	/* first: page aligned */
	struct hvt_rb_cpu cb;
	uint32_t cpu;
	uint32_t online;		/* checked in at boot */
	uint32_t done;			/* payload sent HVT_HC_DONE */
	uint32_t parked;		/* stopped for power-off */
	uint64_t hcalls;		/* hypercalls handled */
	uint64_t payload_calls;		/* as reported by HVT_HC_DONE */
	uint64_t payload_bad;		/* mismatches the payload saw */
	uint64_t write_errors;		/* hvt_rb_write() failures */
	uint64_t last_slow;		/* counter at the last slow poll */
	uint32_t clock_odd_polls;
	uint32_t have_bad[CTRL_F_NR];
	uint64_t last_bad[CTRL_F_NR];
} __aligned(4096);

extern struct hyp_cpu hyp_cpus[HYP_NR_CPUS];
extern struct hyp_params hyp_params;
extern uint32_t hyp_nr_cpus;
extern uint64_t hyp_counter_freq;
extern uint32_t hyp_stopping;

#define hyp_area	((void *)(uintptr_t)HVT_HYP_AREA_BASE)
#define hyp_header	((struct hvt_area_header *)hyp_area)
#define hyp_host_ctrl							\
	((const struct hvt_control *)((uint8_t *)hyp_area +		\
				      HVT_CONTROL_OFFSET))

static inline struct hyp_cpu *hyp_this_cpu(void);

/* lib.c */
void *memset(void *s, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int hyp_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap);
int hyp_snprintf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* uart.c */
void uart_putc(char c);
int uart_getc(void);		/* -1 when nothing is waiting */
void hyp_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hyp_console_locking(int on);

/* fdt.c */
const char *fdt_bootargs(const void *dtb, uint32_t max);

/* params.c */
int params_parse(struct hyp_params *p, const char *args);

/* mmu.c */
void mmu_init_tables(void);
void mmu_enable(void);

/* psci.c */
int64_t psci_call(uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2);
int64_t psci_version(void);
int64_t psci_cpu_on(uint64_t mpidr, uint64_t entry, uint64_t ctx);
void psci_cpu_off(void) __noreturn;
void psci_system_off(void) __noreturn;

/* trace.c */
int trace_init(void);
void trace_attach_cpu(struct hyp_cpu *hc);
void trace_print_stats(void);
void trace_sync_service(void);

/* ctrl.c */
void ctrl_init_cpu(struct hyp_cpu *hc);
void ctrl_refresh_cpu(struct hyp_cpu *hc);
void ctrl_poll_global(struct hyp_cpu *hc);
int ctrl_host_ready(void);
int ctrl_clock_get(struct hvt_ctrl_clock *c);

/* hcall.c */
void hyp_handle_lower_sync(struct hyp_regs *regs);
void hyp_handle_unexpected(struct hyp_regs *regs, uint64_t kind);
void hyp_service(struct hyp_cpu *hc);
void hyp_idle(struct hyp_cpu *hc) __noreturn;
void hyp_poweroff(const char *why) __noreturn;
void hyp_panic(const char *fmt, ...) __noreturn
	__attribute__((format(printf, 1, 2)));

/* main.c, start.S, vectors.S */
extern uint8_t hyp_stacks[HVT_HYP_MAX_CPUS][HYP_STACK_SIZE];
void hyp_main(uint32_t cpu);
void hyp_wrong_el(uint64_t el) __noreturn;
void hyp_enter_payload(struct hyp_cpu *hc) __noreturn;
void hyp_eret_to(struct hyp_regs *frame, uint64_t sp_el2) __noreturn;
extern char hyp_vectors[];
void hyp_secondary_entry(void);

/* bench.c */
void bench_run(uint64_t events) __noreturn;

/* payload.c (runs at EL1) */
void payload_entry(uint64_t cpu, uint64_t hcalls, uint64_t delay);

#include "arch.h"

/* This CPU's state, from MPIDR (only CPUs the image started run here). */
static inline struct hyp_cpu *hyp_this_cpu(void)
{
	uint32_t id = arch_cpu_id();

	return &hyp_cpus[id < HYP_NR_CPUS ? id : 0];
}

#endif /* HYP_HYP_H */
