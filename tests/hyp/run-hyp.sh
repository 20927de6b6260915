#!/bin/bash
# SPDX-License-Identifier: MIT
#
# qemu-scripts/run-hyp.sh end to end: one command runs the rig and streams
# the events as text (hvtrace stream: decoded by libtraceevent from the
# generated formats), with every event or (events) with hyp_enter and
# hyp_exit only; afterwards no QEMU of this run and no guest-RAM file may
# be left behind.
#
#   run-hyp.sh OBJTREE SRCTREE all|events
set -u
objtree=$1 srctree=$2 which=$3 hcalls=300
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

if ! command -v qemu-system-aarch64 >/dev/null; then
	echo "SKIP: qemu-system-aarch64 not installed (make deps)"
	exit 77
fi
before=$(ls /dev/shm | grep -c '^hvt-hyp-run-' || true)
events=all
[ "$which" = events ] && events=hyp_enter,hyp_exit
"$srctree/qemu-scripts/run-hyp.sh" -O "$objtree" --no-build --cpus 2 \
	--hcalls "$hcalls" --events "$events" >"$out" 2>"$err"
rc=$?
# Separate files: the readers' summaries (stderr) must not split lines.
cat "$out" "$err"
[ $rc = 0 ] || { echo "FAIL: run-hyp.sh exited with $rc"; exit 1; }

# One line per event: "COMM-PID [CPU] FLAGS SEC.USEC: EVENT: FIELDS"
# (trace_pipe style).
line() { echo "^ *[^ ]*-0 *\[$1\] \.\.\.\.\. *[0-9]*\.[0-9]\{6\}: $2: "; }
fail=0
for cpu in 000 001; do
	for ev in hyp_enter host_hcall hyp_exit; do
		want=$((hcalls + 1))
		[ "$which" = events ] && [ $ev = host_hcall ] && want=0
		n=$(grep -c "$(line $cpu $ev)" "$out")
		if [ "$n" != $want ]; then
			echo "FAIL: cpu $cpu printed $n $ev lines, expected $want"
			fail=1
		fi
	done
done
if [ "$which" = all ]; then
	grep -q "$(line 001 host_hcall)func=0xc6000004 a0=0x3 a1=0x100000009 a2=0xfffffffffffffffc ret=1$" "$out" ||
		{ echo "FAIL: cpu 1's fourth call (HVT_HC_CPU) is not printed as expected"; fail=1; }
fi
grep -q "hyp: system off" "$out" || { echo "FAIL: no clean power-off"; fail=1; }
after=$(ls /dev/shm | grep -c '^hvt-hyp-run-' || true)
[ "$after" = "$before" ] || { echo "FAIL: run-hyp.sh left a guest-RAM file in /dev/shm"; fail=1; }
for f in /proc/[0-9]*/cmdline; do
	if tr '\0' ' ' 2>/dev/null <"$f" | grep -q "mem-path=/dev/shm/hvt-hyp-run-"; then
		echo "FAIL: a QEMU of run-hyp.sh is still running (${f%/cmdline})"
		fail=1
	fi
done
[ $fail = 0 ] || exit 1
echo "PASS: run-hyp.sh ($which) streamed every enabled event and cleaned up"
