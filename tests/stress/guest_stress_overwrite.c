// SPDX-License-Identifier: MIT
/*
 * Oversubscribed overwrite-mode (flight recorder) stress: the same writers
 * and kills as the consume test, on a ring of 4 sub-buffers per CPU that
 * the writers lap continuously while a reader copies pages out of it.  The
 * reader must never see a torn, duplicated, invented or out-of-order
 * event, and per CPU read + overwritten == committed.  See stress.h.
 */
#include <hvtrace/config.h>

#if IS_ENABLED(CONFIG_HVT_GUEST) && IS_ENABLED(CONFIG_HVT_HOST)

#include "stress.h"

int main(void)
{
	static const struct st_cfg cfg = {
		.name = "overwrite",
		.mode = HVT_MODE_OVERWRITE,
		.nr_subbufs = 4,
		.kills = 1,
	};

	return st_run(&cfg);
}

#else
#include "hvt_test.h"

int main(void)
{
	t_skip("needs the guest library and the host reader "
	       "(CONFIG_HVT_GUEST, CONFIG_HVT_HOST)");
}
#endif
