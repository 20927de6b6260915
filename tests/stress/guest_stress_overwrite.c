// SPDX-License-Identifier: MIT
/*
 * Oversubscribed overwrite-mode (flight recorder) stress: the same writers
 * and kills as the consume test, on a ring of 4 sub-buffers per CPU that
 * the writers lap continuously while a reader copies pages out of it.  The
 * reader must never see a torn, duplicated, invented or out-of-order
 * event, and per CPU read + overwritten == committed.  See stress.h.
 */
#include "guest_stress_main.h"

GUEST_STRESS_MAIN(.name = "overwrite", .mode = HVT_MODE_OVERWRITE,
		  .nr_subbufs = 4, .kills = 1)
