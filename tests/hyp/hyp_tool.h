/* SPDX-License-Identifier: MIT */
/*
 * hvt-hyp-test: the EL2 rig's test driver.  Reads the trace area inside
 * the QEMU guest-RAM file through libhvtrace's public API, decodes each
 * record into the hypervisor event's own struct and checks what the
 * payload must have written (the user's side of the rig is 'hvtrace hyp'
 * and 'hvtrace stream').
 */
#ifndef HVT_HYP_TOOL_H
#define HVT_HYP_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <hvtrace.h>
#include <hvtrace/hyp_events.h>
#include <hvtrace/hyp_layout.h>

/* One decoded hypervisor event. */
struct hyp_ev {
	int cpu;
	int type;		/* enum hvt_hyp_event_index, or -1: unknown */
	uint64_t ts;		/* writer clock (CNTVCT) */
	const uint8_t *rec;	/* the record (common fields first) */
	uint32_t len;		/* bytes at rec */
	union hvt_hyp_rec_any u;	/* decoded copy, member by event */
};

/* Called for each event (lost == 0) and for each loss report (ev NULL). */
typedef int (*hyp_ev_fn)(void *ctx, const struct hyp_ev *ev, int cpu,
			 uint64_t lost);

/* An attached rig: the area plus what the tool knows about the run. */
struct hyp_rig {
	const char *path;
	struct hvtrace_area *a;		/* owner or read-only */
	struct hvtrace_area_info info;
	bool owner;
	pid_t pid;			/* QEMU, 0 if unknown */
	uint8_t *page;			/* one sub-buffer */
	const uint8_t *ro;		/* the area: own read-only map */
	uint64_t events[HVT_ABI_MAX_CPUS];
	uint64_t lost[HVT_ABI_MAX_CPUS];
	uint64_t bad_records;		/* records that do not decode */
};

/* rig.c */
int rig_open(struct hyp_rig *r, const char *path, bool owner,
	     double wait_s);
void rig_close(struct hyp_rig *r);
int rig_enable(struct hyp_rig *r, const char *list);
int rig_poll(struct hyp_rig *r, hyp_ev_fn fn, void *ctx);
int rig_drain(struct hyp_rig *r, hyp_ev_fn fn, void *ctx);
int rig_follow(struct hyp_rig *r, hyp_ev_fn fn, void *ctx, double timeout_s,
	       int (*stop)(void *ctx), int (*tick)(void *ctx));
bool rig_writer_alive(struct hyp_rig *r);
uint32_t rig_writer_state(struct hyp_rig *r);
const struct hvt_cpu_meta *rig_meta(struct hyp_rig *r, int cpu);
uint64_t rig_ctrl_errors(struct hyp_rig *r);
uint64_t rig_now_ns(void);
void rig_sleep_us(unsigned int us);

/* check.c, enable_test.c, garbage_test.c, causality.c */
int cmd_check(int argc, char **argv);
int cmd_enable_test(int argc, char **argv);
int cmd_garbage_test(int argc, char **argv);
int cmd_causality(int argc, char **argv);

/*
 * Command lines: "--NAME VALUE" and "--NAME" (flags) in any order around
 * one FILE.  drv_parse() stores each value in *val (bool, uint64_t,
 * const char *, double seconds or pid_t by kind), returns FILE, and dies
 * naming the option and the bad value, or with @usage.
 */
enum drv_kind { DRV_FLAG, DRV_U64, DRV_STR, DRV_SECONDS, DRV_PID };

struct drv_opt {
	const char *name;
	enum drv_kind kind;
	void *val;
};

const char *drv_parse(int argc, char **argv, const struct drv_opt *opts,
		      const char *usage);

#define die(...)							\
	do {								\
		fprintf(stderr, "hvt-hyp-test: " __VA_ARGS__);		\
		fputc('\n', stderr);					\
		exit(1);						\
	} while (0)

#endif /* HVT_HYP_TOOL_H */
