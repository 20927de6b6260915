#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Clock: CNTVCT timestamps converted with the host's sync model must fall
# between the host's stamps around each trigger: ROUNDS round trips, zero
# violations of the rig's own model and of libhvtrace's (see hvt-hyp-test
# causality), while the payload keeps CPU 0 busy.
#
#   causality.sh OBJTREE SRCTREE [ROUNDS]
set -u
objtree=$1 srctree=$2 rounds=${3:-1000}
. "$srctree/qemu-scripts/hyp-lib.sh"
HYP_SHOW_LOG=1
hyp_init "$objtree" driver

# The payload makes a few calls and parks; CPU 0 then answers from the
# hypervisor's idle loop, so the host is not starved of CPU time by two
# spinning vCPUs (the rig runs on small machines too).
hyp_start causality 2 "cpus=2 hcalls=1000 hold=1 mode=consume wait=30000" || exit 1
"$HYP_TOOL" causality "$HYP_RAM" --pid "$HYP_PID" --rounds "$rounds" || exit 1
hyp_cmd q
hyp_wait_exit 30 || exit 1
hyp_check_clean_exit "host command" || exit 1
echo "PASS: $rounds causality round trips"
