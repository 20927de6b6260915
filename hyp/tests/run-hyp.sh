#!/bin/bash
# SPDX-License-Identifier: MIT
#
# qemu-scripts/run-hyp.sh end to end: one command runs the rig and streams
# the events as text (decoded by libtraceevent from the generated
# formats), with either reader; afterwards no QEMU of this run and no
# guest-RAM file may be left behind.
#
#   run-hyp.sh OBJTREE SRCTREE hvt-hyp|hvtrace
set -u
objtree=$1 srctree=$2 reader=$3 hcalls=300
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

if ! command -v qemu-system-aarch64 >/dev/null; then
	echo "SKIP: qemu-system-aarch64 not installed (make deps)"
	exit 77
fi
before=$(ls /dev/shm | grep -c '^hvt-hyp-run-' || true)
"$srctree/qemu-scripts/run-hyp.sh" -O "$objtree" --no-build --cpus 2 \
	--hcalls "$hcalls" --reader "$reader" >"$out" 2>"$err"
rc=$?
# Separate files: the readers' summaries (stderr) must not split lines.
cat "$out" "$err"
[ $rc = 0 ] || { echo "FAIL: run-hyp.sh exited with $rc"; exit 1; }

# One line per event: "[CPU]\t SEC.USEC: EVENT FIELDS" (trace remotes
# style, hvt-hyp) or "COMM-PID [CPU] FLAGS SEC.USEC: EVENT: FIELDS"
# (trace_pipe style, hvtrace).
if [ "$reader" = hvt-hyp ]; then
	line() { echo "^\[$1\]	 *[0-9]*\.[0-9]\{6\}: $2 "; }
else
	line() { echo "^ *[^ ]*-0 *\[$1\] \.\.\.\.\. *[0-9]*\.[0-9]\{6\}: $2: "; }
fi
fail=0
for cpu in 000 001; do
	for ev in hyp_enter host_hcall hyp_exit; do
		n=$(grep -c "$(line $cpu $ev)" "$out")
		if [ "$n" != $((hcalls + 1)) ]; then
			echo "FAIL: cpu $cpu printed $n $ev lines, expected $((hcalls + 1))"
			fail=1
		fi
	done
done
grep -q "$(line 001 host_hcall)func=0xc6000004 a0=0x3 a1=0x100000009 a2=0xfffffffffffffffc ret=1$" "$out" ||
	{ echo "FAIL: cpu 1's fourth call (HVT_HC_CPU) is not printed as expected"; fail=1; }
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
echo "PASS: run-hyp.sh ($reader) streamed every event and cleaned up"
