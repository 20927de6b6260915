/* SPDX-License-Identifier: MIT */
/*
 * The main() of a guest_stress_*.c program: each program is one st_cfg
 * (see stress.h), run by st_run(), or a SKIP where the tree is built
 * without the guest library or the host reader.
 *
 *   GUEST_STRESS_MAIN(.name = "consume", .mode = HVT_MODE_CONSUME, ...)
 */
#ifndef GUEST_STRESS_MAIN_H
#define GUEST_STRESS_MAIN_H

#include <hvtrace/config.h>

#if IS_ENABLED(CONFIG_HVT_GUEST) && IS_ENABLED(CONFIG_HVT_HOST)

#include "stress.h"

#define GUEST_STRESS_MAIN(...)					\
	int main(void)						\
	{							\
		static const struct st_cfg cfg = { __VA_ARGS__ };	\
								\
		return st_run(&cfg);				\
	}

#else
#include "hvt_test.h"

#define GUEST_STRESS_MAIN(...)					\
	int main(void)						\
	{							\
		t_skip("needs the guest library and the host reader "	\
		       "(CONFIG_HVT_GUEST, CONFIG_HVT_HOST)");	\
	}
#endif

#endif /* GUEST_STRESS_MAIN_H */
