#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The EL2 rig traces every hypercall, read while it runs: each CPU's
# payload makes HCALLS calls (plus HVT_HC_DONE), so every CPU must show
# exactly HCALLS+1 each of hyp_enter, host_hcall and hyp_exit, with the
# arguments and results the payload's schedule predicts, in order, with
# non-decreasing timestamps and nothing lost; time syncs run concurrently
# (selftest events on CPU 0).  Then the hypervisor powers off by itself.
#
#   counts.sh OBJTREE SRCTREE [CPUS] [HCALLS]
set -u
objtree=$1 srctree=$2 cpus=${3:-2} hcalls=${4:-20000}
. "$srctree/qemu-scripts/hyp-lib.sh"
HYP_SHOW_LOG=1
hyp_init "$objtree" driver

hyp_start counts "$cpus" "cpus=$cpus hcalls=$hcalls mode=consume wait=30000" || exit 1
"$HYP_TOOL" check "$HYP_RAM" --attach --pid "$HYP_PID" --hcalls "$hcalls" \
	--cpus "$cpus" --mode consume --sync-ms 20 --timeout 80 || exit 1
hyp_wait_exit 30 || exit 1
hyp_check_clean_exit "run complete" || exit 1
grep -q "payload_bad=0" "$HYP_LOG" || { echo "FAIL: the payload saw wrong results"; exit 1; }
echo "PASS: $cpus CPUs x $hcalls hypercalls traced exactly"
