/* SPDX-License-Identifier: MIT */
/*
 * The platform hooks of the generated emit functions, for the EL2 image:
 * the calling CPU's buffer (found from MPIDR) and CNTVCT as the clock.
 * Include this, not <hvtrace/hyp_events.h>, to write events.
 */
#ifndef HYP_TRACE_H
#define HYP_TRACE_H

#define HVT_HYP_WRITER
#include <hvtrace/hyp_events.h>

#include "hyp.h"

static inline struct hvt_rb_cpu *hvt_hyp_writer_cpu(void)
{
	return &hyp_this_cpu()->cb;
}

static inline uint64_t hvt_hyp_writer_clock(void)
{
	return arch_counter();
}

/* Emit and count failures other than "ring full" (counted as lost). */
#define hyp_trace(hc, call)						\
	do {								\
		int ret_ = (call);					\
		if (ret_ < 0 && ret_ != -HVT_ENOSPC)			\
			(hc)->write_errors++;				\
	} while (0)

#endif /* HYP_TRACE_H */
