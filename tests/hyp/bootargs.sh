#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Bad boot parameters are reported and ignored, never fatal: the image
# must name each one, fall back to its defaults and still complete a
# run (1 CPU asked for, QEMU given 2; a ring size that is no power of two;
# an unknown mode; garbage words).
#
#   bootargs.sh OBJTREE SRCTREE
set -u
objtree=$1 srctree=$2
. "$srctree/qemu-scripts/hyp-lib.sh"
HYP_SHOW_LOG=1
hyp_init "$objtree" driver

hyp_start bootargs 2 "cpus=1 hcalls=500 subbufs=3 mode=sideways cpus=99 hcalls=12x junk = wait=30000" || exit 1
"$HYP_TOOL" check "$HYP_RAM" --attach --pid "$HYP_PID" --hcalls 500 \
	--cpus 1 --timeout 60 || exit 1
hyp_wait_exit 30 || exit 1
hyp_check_clean_exit "run complete" || exit 1
fail=0
for word in "subbufs=3': value out of range" "mode=sideways': bad value" \
	"cpus=99': value out of range" "hcalls=12x': bad value" \
	"junk': expected key=value" "=': expected key=value"; do
	grep -qF "ignoring boot parameter '$word" "$HYP_LOG" ||
		{ echo "FAIL: no report of the bad parameter '$word'"; fail=1; }
done
[ $fail = 0 ] || exit 1
echo "PASS: bad boot parameters reported and ignored"
