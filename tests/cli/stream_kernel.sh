#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream --kernel shows what was written to trace_marker, byte
# for byte as the kernel's own "trace" file shows it, through whichever
# path this kernel has: the trace_pipe_raw mmap (6.10+), or read() of
# trace_pipe_raw before that (private tracefs instances, so nothing else
# on the machine is disturbed); overwritten events are reported with the
# kernel's exact count (kring_leg in lib.sh), and stat --kernel then shows
# the buffer consumed.  Skips only without a writable tracefs.
. "$(dirname "$0")/lib.sh"
declare -F kring_leg >/dev/null || { echo "FAIL: lib.sh did not load"; exit 1; }

kring_setup
kring_leg auto
inst=$KRING_INST
ncpu=$(nproc)
[ "$ncpu" -gt 2 ] && ncpu=2
# Consumed: the buffer is empty now, and stat says so.
"$HVTRACE" stat --kernel --instance $inst >"$TMP/stat.txt" || fail "stat --kernel"
read_total=0
for cpu in $(seq 0 $((ncpu - 1))); do
	expect_eq "kernel entries cpu $cpu" "$(stat_field "$TMP/stat.txt" $cpu entries)" 0
	read_total=$((read_total + $(stat_field "$TMP/stat.txt" $cpu "read events")))
done
expect_eq "kernel read events" $read_total 40
echo "ok: 40 markers, identical to the kernel's text; losses exact"
