// SPDX-License-Identifier: MIT
/*
 * A hostile guest's time-sync answers cost rejected samples, never a bad
 * model: the clock truth test (clock_truth.c) while a guest thread keeps
 * overwriting the agent's answers on the area's header with garbage clock
 * values (guest/workloads/clock_truth --garbage).  Every event must still
 * lie within the stated bound of its host bracket, and hvtraced must say
 * it rejected answers.  (The bound's size is not checked here: the
 * scribbling thread takes CPU time from the agent.)
 */
#define TRUTH_GARBAGE 1
#include "clock_truth.c"
