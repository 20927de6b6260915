#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Enable and disable take effect while the hypervisor runs: host_hcall
# off and on again, then all tracing off and on again (see hvt-hyp-test
# enable-test), then the host powers the hypervisor off with a console
# command.
#
#   enable.sh OBJTREE SRCTREE
set -u
objtree=$1 srctree=$2
. "$srctree/qemu-scripts/hyp-lib.sh"
HYP_SHOW_LOG=1
hyp_init "$objtree" driver

hyp_start enable 2 "cpus=2 hcalls=0 mode=consume wait=30000" || exit 1
"$HYP_TOOL" enable-test "$HYP_RAM" --pid "$HYP_PID" || exit 1
hyp_cmd q
hyp_wait_exit 30 || exit 1
hyp_check_clean_exit "host command" || exit 1
"$HYP_HVTRACE" hyp info "$HYP_RAM" | grep -q "state STOPPED" ||
	{ echo "FAIL: the area is not marked STOPPED after power-off"; exit 1; }
echo "PASS: enable/disable took effect while running"
