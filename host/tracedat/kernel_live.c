// SPDX-License-Identifier: MIT
/*
 * libhvtrace-tracedat: the host kernel's tracefs instance, owned for a
 * live reader (hvtrace stream NAME --kernel).
 *
 * The recorder's kernel source (kernel.c) does the owning, so a live
 * reader sets up and puts back an instance exactly as a recording does:
 * the instance is created when missing (and removed at close), its trace
 * clock set to mono (the host's CLOCK_MONOTONIC), its buffer cleared, the
 * selected events enabled and tracing turned on; close puts back the
 * clock, the events and tracing_on of an instance that was there before.
 * The caller reads each CPU through the ring it is handed
 * (hvtrace_ring_peek() and _consume()), as every hvtrace reader does.
 */
#include <errno.h>
#include <stdlib.h>

#include "tracedat-local.h"

struct hvtrace_tracedat_kernel {
	struct hvt_tdat_kernel *k;
};

HVTRACE_API int
hvtrace_tracedat_kernel_open(const char *instance, const char *const *events,
			     struct hvtrace_tracedat_kernel **out)
{
	struct hvt_tdat_kernel_opts ko = {
		.instance = instance,
		.clock = "mono",
	};
	struct hvtrace_tracedat_kernel *lk;
	unsigned int i;
	int ret;

	if (!out)
		return hvt_err(-EINVAL, "kernel: no handle to fill");
	*out = NULL;
	lk = calloc(1, sizeof(*lk));
	if (!lk)
		return hvt_err(-ENOMEM, "out of memory");
	ret = hvt_tdat_kernel_open(&ko, &lk->k);
	for (i = 0; !ret && events && events[i]; i++) {
		ret = hvt_tdat_kernel_enable(lk->k, events[i]);
		if (!ret)
			ret = hvt_err(-ENOENT,
				      "no kernel event matches '%s' (see "
				      "available_events in tracefs)",
				      events[i]);
		else if (ret > 0)
			ret = 0;
	}
	if (!ret)
		ret = hvt_tdat_kernel_start(lk->k);
	if (ret) {
		/* Half set up or not, close puts back what was changed. */
		hvtrace_tracedat_kernel_close(lk);
		return ret;
	}
	*out = lk;
	return 0;
}

HVTRACE_API unsigned int
hvtrace_tracedat_kernel_nr_cpus(const struct hvtrace_tracedat_kernel *k)
{
	return k ? hvt_tdat_kernel_nr_cpus(k->k) : 0;
}

HVTRACE_API struct hvtrace_ring *
hvtrace_tracedat_kernel_ring(struct hvtrace_tracedat_kernel *k,
			     unsigned int cpu)
{
	return k ? hvt_tdat_kernel_ring(k->k, cpu) : NULL;
}

HVTRACE_API void hvtrace_tracedat_kernel_stop(struct hvtrace_tracedat_kernel *k)
{
	if (k)
		hvt_tdat_kernel_stop(k->k);
}

HVTRACE_API void
hvtrace_tracedat_kernel_close(struct hvtrace_tracedat_kernel *k)
{
	if (!k)
		return;
	hvt_tdat_kernel_close(k->k);
	free(k);
}
