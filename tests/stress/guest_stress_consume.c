// SPDX-License-Identifier: MIT
/*
 * Oversubscribed consume-mode stress: 4 writer threads per CPU in two
 * processes plus victim processes SIGKILLed at random instants, a
 * concurrent consuming reader, CONFIG_HVT_TEST_STRESS_EVENTS events in
 * all, exact accounting.  See stress.h for what is checked.
 */
#include "guest_stress_main.h"

GUEST_STRESS_MAIN(.name = "consume", .mode = HVT_MODE_CONSUME,
		  .nr_subbufs = 32, .kills = 1)
