#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The host kernel's ring read without the ring-buffer mmap ABI (as on
# kernels before 6.10): HVTRACE_KERNEL_RING=read forces the read() path of
# trace_pipe_raw on any kernel.  stream --kernel prints the kernel's own
# text for numbered trace_marker lines, reports overwritten events with
# the kernel's exact count, and says once on stderr which path it used
# (kring_leg in lib.sh).  Skips only without a writable tracefs.
. "$(dirname "$0")/lib.sh"
declare -F kring_leg >/dev/null || { echo "FAIL: lib.sh did not load"; exit 1; }

kring_setup
kring_leg read
echo "ok: the read() path prints what the kernel prints, losses exact"
