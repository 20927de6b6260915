#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A hostile control page: random bytes and extreme values are written
# into it while the hypervisor runs (see hvt-hyp-test garbage-test).  The
# hypervisor must count them, keep running and, once the page is valid
# again, trace exactly as before; then it must still power off cleanly.
#
#   garbage.sh OBJTREE SRCTREE [SECONDS]
set -u
objtree=$1 srctree=$2 seconds=${3:-3}
. "$srctree/qemu-scripts/hyp-lib.sh"
HYP_SHOW_LOG=1
hyp_init "$objtree" driver

hyp_start garbage 2 "cpus=2 hcalls=0 mode=consume wait=30000" || exit 1
"$HYP_TOOL" garbage-test "$HYP_RAM" --pid "$HYP_PID" --seconds "$seconds" || exit 1
hyp_cmd q
hyp_wait_exit 30 || exit 1
hyp_check_clean_exit "host command" || exit 1
info=$("$HYP_HVTRACE" hyp info "$HYP_RAM") || exit 1
echo "$info"
grep -q "state STOPPED" <<<"$info" ||
	{ echo "FAIL: the area is not marked STOPPED after power-off"; exit 1; }
echo "PASS: hostile control page survived"
