// SPDX-License-Identifier: MIT
/*
 * hvtrace stream: the ordering rule for times put on the host's clock
 * through a clock model.
 *
 * The stream converts a writer's times batch by batch with the model as
 * it stands (the clock model hvtraced sends in the page stream), and
 * each time-sync sample refits the model: its offset moves, by tens of
 * microseconds under TCG, always within its error bound.  An event
 * converted after a refit can so land before one converted before it,
 * even an event of the same CPU a few microseconds later: the merged
 * output would go back in time (qemu/kernel-ring-host saw a guest
 * sched_switch 48 us before the line above it).
 *
 * The rule: an event is printed no earlier than the latest time printed
 * so far while their error intervals overlap (the time printed last,
 * +- its bound, and the event's own, +- its bound): then the order of
 * the two is unknowable, and the time printed stays within the larger of
 * the two bounds of the event's true time.  An event whose interval lies
 * wholly before the latest time printed came later than the reorder
 * window allows (a source behind the others by more than --window): it
 * keeps its own time, and the line goes back in time, as the window's
 * limit says (docs/reading.md, section 3).
 */
#include "cli.h"

static uint64_t so_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t hvt_cli_order_time(struct hvt_cli_order *o, uint64_t ns,
			    uint64_t err_ns)
{
	/* Not on the host's clock (no model yet): nothing to order with. */
	if (err_ns == UINT64_MAX)
		return ns;
	if (ns < o->ns) {
		if (o->ns - ns <= so_add(err_ns, o->err_ns))
			return o->ns; /* the order is unknowable: keep it */
		return ns;	      /* came too late: its own time */
	}
	o->ns = ns;
	o->err_ns = err_ns;
	return ns;
}
