#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream --kernel shows what was written to trace_marker, byte
# for byte as the kernel's own "trace" file shows it, through the
# trace_pipe_raw mmap (a private tracefs instance, so nothing else on the
# machine is disturbed).  Skips only without a writable tracefs.
. "$(dirname "$0")/lib.sh"

root=/sys/kernel/tracing
if [ ! -d $root/instances ]; then
	mount -t tracefs nodev $root 2>/dev/null
fi
[ -d $root/instances ] || { echo "SKIP: no tracefs at $root"; exit 77; }
inst=hvt-cli-$$
mkdir $root/instances/$inst 2>/dev/null ||
	{ echo "SKIP: cannot create a tracefs instance (not root?)"; exit 77; }
trap 'rmdir $root/instances/$inst 2>/dev/null; cleanup' EXIT

ncpu=$(nproc)
[ "$ncpu" -gt 2 ] && ncpu=2
for i in $(seq 1 40); do
	c=$((i % ncpu))
	taskset -c $c sh -c "echo 'marker $i from cpu $c' > $root/instances/$inst/trace_marker" ||
		fail "cannot write trace_marker"
done
grep -v '^#' $root/instances/$inst/trace >"$TMP/kernel.txt"
expect_eq "kernel lines" "$(wc -l <"$TMP/kernel.txt")" 40

"$HVTRACE" stream --kernel --instance $inst --count 40 --timeout 20 \
	>"$TMP/ours.txt" || fail "stream --kernel failed"
if ! cmp -s "$TMP/kernel.txt" "$TMP/ours.txt"; then
	diff "$TMP/kernel.txt" "$TMP/ours.txt" | head -10
	fail "stream --kernel differs from the kernel's own text"
fi
# Consumed: the buffer is empty now, and stat says so.
"$HVTRACE" stat --kernel --instance $inst >"$TMP/stat.txt" || fail "stat --kernel"
read_total=0
for cpu in $(seq 0 $((ncpu - 1))); do
	expect_eq "kernel entries cpu $cpu" "$(stat_field "$TMP/stat.txt" $cpu entries)" 0
	read_total=$((read_total + $(stat_field "$TMP/stat.txt" $cpu "read events")))
done
expect_eq "kernel read events" $read_total 40
echo "ok: 40 markers, identical to the kernel's text"
