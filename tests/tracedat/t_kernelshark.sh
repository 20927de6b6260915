#!/bin/bash
# SPDX-License-Identifier: MIT
#
# KernelShark opens a file hvtrace record wrote: a recording with remote
# buffers (and the host kernel when it can be recorded), checked by
# ks_check.sh (the window, no dialog, no error, a session whose streams are
# the file's buffers and whose time range covers its events).  The
# screenshot is kept as $HVT_OBJTREE/tracedat-kernelshark.png.  Then the
# same for a post-mortem recording of the stopped overwrite-mode area,
# whose pages the writer put straight into their rooms at the front of
# the file (tracedat-kernelshark-rooms.png).
. "$(dirname "$0")/lib.sh"
need_tools
command -v kernelshark >/dev/null ||
	skip "kernelshark is not installed (apt-get install kernelshark)"
# (ks_check.sh says what else it misses.)

# A recording: two remote buffers, plus the kernel's markers if possible.
area A ks-hyp
area B ks-loop
K=()
MK=()
if [ "$(id -u)" -eq 0 ] && [ -w "$TRACEFS/instances" ]; then
	instance I ks
	K=(-B "$I" -e sched:sched_switch -e hypervisor -e hvtrace)
	MK=(--marker "$TRACEFS/instances/$I/trace_marker")
fi
"$WRITER" --area "$A" --cpus 2 --subbufs 8 --mode consume --kind hyp \
	--clock tsc --name hyp0 "${MK[@]}" --log "$T/a.log" -- \
	wait-control markers 50 1 write 200 stop >"$T/a.out" 2>&1 &
WA=$!
"$WRITER" --area "$B" --cpus 2 --subbufs 8 --mode overwrite --kind loopback \
	--clock mono --name loop1 --log "$T/b.log" -- \
	wait-control write 200 sleep 100 write 200 stop >"$T/b.out" 2>&1 &
WB=$!
BGPIDS+=("$WA" "$WB")
wait_ready "$T/a.log"
wait_ready "$T/b.log"
if [ ${#MK[@]} -eq 0 ]; then
	# No kernel: the hyp writer's markers command needs a marker file.
	kill "$WA"
	"$WRITER" --area "$A" --cpus 2 --subbufs 8 --mode consume --kind hyp \
		--clock tsc --name hyp0 --log "$T/a.log" -- \
		wait-control write 300 stop >"$T/a.out" 2>&1 &
	WA=$!
	BGPIDS+=("$WA")
	wait_ready "$T/a.log"
fi
"$HVTRACE" record -o "$T/ks.dat" "${K[@]}" "$A" "$B" >"$T/rec.out" \
	2>"$T/rec.err" || fail "record failed: $(cat "$T/rec.err")"
wait_pid "$WA" 30
wait_pid "$WB" 30


# Its streams: the top-level buffer when the kernel was recorded, the areas.
streams=(hyp0 loop1)
[ ${#K[@]} -gt 0 ] && trace-cmd report "$T/ks.dat" 2>/dev/null | grep -q '^cpus=' &&
	streams+=("top buffer")
"$SRC/tests/tracedat/ks_check.sh" "$T/ks.dat" "$OBJ/tracedat-kernelshark.png" "${streams[@]}" ||
	exit $?

# The stopped area again, post-mortem: its buffer in its rooms.
"$HVTRACE" record -q --read-only -o "$T/rooms.dat" "$B" 2>"$T/rooms.err" ||
	fail "post-mortem record failed: $(cat "$T/rooms.err")"
trace-cmd dump --sections "$T/rooms.dat" >"$T/sections.txt" 2>&1 ||
	fail "trace-cmd dump --sections failed: $(head -3 "$T/sections.txt")"
grep -q 'Section  3 @ 32 .*"buffer flyrecord loop1"' "$T/sections.txt" ||
	fail "the post-mortem file does not start with its rooms: $(cat "$T/sections.txt")"
# KernelShark opens the top-level buffer too where trace-cmd names a
# CPU count (a file without rooms does the same).
streams=(loop1)
trace-cmd report "$T/rooms.dat" 2>/dev/null | grep -q '^cpus=' &&
	streams+=("top buffer")
"$SRC/tests/tracedat/ks_check.sh" "$T/rooms.dat" \
	"$OBJ/tracedat-kernelshark-rooms.png" "${streams[@]}"
exit $?
