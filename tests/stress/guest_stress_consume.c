// SPDX-License-Identifier: MIT
/*
 * Oversubscribed consume-mode stress: 4 writer threads per CPU in two
 * processes plus victim processes SIGKILLed at random instants, a
 * concurrent consuming reader, CONFIG_HVT_TEST_STRESS_EVENTS events in
 * all, exact accounting.  See stress.h for what is checked.
 */
#include <hvtrace/config.h>

#if IS_ENABLED(CONFIG_HVT_GUEST) && IS_ENABLED(CONFIG_HVT_HOST)

#include "stress.h"

int main(void)
{
	static const struct st_cfg cfg = {
		.name = "consume",
		.mode = HVT_MODE_CONSUME,
		.nr_subbufs = 32,
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
