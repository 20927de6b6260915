#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Overwrite mode keeps the newest events and counts the overrun exactly:
# a ring of 8 sub-buffers per CPU, far too small for the run, read only
# after the hypervisor powered off.  What is read must be an unbroken run
# of the newest calls ending with HVT_HC_DONE, and read + overrun must
# equal every event the payload caused.
#
#   overwrite.sh OBJTREE SRCTREE
set -u
objtree=$1 srctree=$2 hcalls=20000
. "$srctree/qemu-scripts/hyp-lib.sh"
HYP_SHOW_LOG=1
hyp_init "$objtree" driver

hyp_start overwrite 2 "cpus=2 hcalls=$hcalls mode=overwrite subbufs=8 wait=30000" || exit 1
"$HYP_TOOL" check "$HYP_RAM" --attach --no-read --pid "$HYP_PID" \
	--hcalls "$hcalls" --cpus 2 --mode overwrite --timeout 80 || exit 1
hyp_wait_exit 30 || exit 1
hyp_check_clean_exit "run complete" || exit 1
echo "PASS: overwrite mode kept the newest events, overrun counted exactly"
