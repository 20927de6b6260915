#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Post-mortem reads: the trace area stays readable in the guest-RAM file
# after QEMU is gone.
#
#   poweroff: the host enables the events and detaches; the hypervisor
#             runs to the end and powers off (state STOPPED); a fresh,
#             read-only reader then finds every event of the run.
#   sigkill:  an open-ended run is killed with SIGKILL in the middle
#             (state stays RUNNING); a fresh reader finds every event that
#             was committed, in an unbroken sequence from the first call.
#
#   postmortem.sh OBJTREE SRCTREE poweroff|sigkill
set -u
objtree=$1 srctree=$2 how=$3 hcalls=20000
. "$srctree/qemu-scripts/hyp-lib.sh"
HYP_SHOW_LOG=1
hyp_init "$objtree" driver

case $how in
poweroff)
	hyp_start pm-off 2 "cpus=2 hcalls=$hcalls mode=consume wait=30000" || exit 1
	"$HYP_HVTRACE" hyp attach "$HYP_RAM" --events all || exit 1
	hyp_wait_exit 60 || exit 1
	hyp_check_clean_exit "run complete" || exit 1
	"$HYP_TOOL" check "$HYP_RAM" --hcalls "$hcalls" --cpus 2 \
		--mode consume --expect stopped || exit 1
	;;
sigkill)
	hyp_start pm-kill 2 "cpus=2 hcalls=0 mode=consume wait=30000" || exit 1
	"$HYP_HVTRACE" hyp attach "$HYP_RAM" --events all || exit 1
	"$HYP_TOOL" check "$HYP_RAM" --pid "$HYP_PID" --until-written 30000 \
		--timeout 60 || exit 1
	hyp_kill9
	echo "QEMU killed with SIGKILL (status $HYP_RC)"
	"$HYP_TOOL" check "$HYP_RAM" --cpus 2 --mode consume --expect killed || exit 1
	;;
*)
	echo "usage: postmortem.sh OBJTREE SRCTREE poweroff|sigkill" >&2
	exit 2
	;;
esac
echo "PASS: post-mortem read after $how"
