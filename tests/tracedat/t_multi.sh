#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Several buffers in one file: the host kernel (top-level buffer, through
# a tracefs instance) and three areas -- a consume-mode hypervisor-style
# area on the TSC clock that writes kernel trace_marker lines between its
# events, an overwrite-mode loopback area on CLOCK_MONOTONIC, and a second
# hypervisor-style area (same formats: shared, not duplicated).
#
# trace-cmd report must show every buffer's events exactly as written,
# and, merging all buffers in time, each remote event between the kernel
# marker written just before it and the one written just after it (2 ms
# apart): the remote clocks are aligned with the kernel's.  --stat lists
# each buffer; hvtrace report prints the same.
. "$(dirname "$0")/lib.sh"
need_tools
need_kernel

instance I multi
area A hyp0
area B loop1
area C hyp1
"$WRITER" --area "$A" --cpus 2 --subbufs 8 --mode consume --kind hyp \
	--clock tsc --name hyp0 --marker "$TRACEFS/instances/$I/trace_marker" \
	--log "$T/a.log" -- wait-control markers 40 2 stop >"$T/a.out" 2>&1 &
WA=$!
"$WRITER" --area "$B" --cpus 3 --subbufs 8 --subbuf-size 8192 \
	--mode overwrite --kind loopback --clock mono --name loop1 \
	--log "$T/b.log" -- wait-control write 100 sleep 200 write 100 stop \
	>"$T/b.out" 2>&1 &
WB=$!
"$WRITER" --area "$C" --cpus 1 --subbufs 4 --mode consume --kind hyp \
	--clock mono --name hyp1 --log "$T/c.log" -- \
	wait-control write 150 stop >"$T/c.out" 2>&1 &
WC=$!
BGPIDS+=("$WA" "$WB" "$WC")
wait_ready "$T/a.log"
wait_ready "$T/b.log"
wait_ready "$T/c.log"

"$HVTRACE" record -o "$T/m.dat" -B "$I" "$A" "$B" "$C" \
	>"$T/rec.out" 2>"$T/rec.err" &
RP=$!
BGPIDS+=("$RP")
for p in $WA $WB $WC; do
	wait_pid "$p" 60 || fail "a writer failed: $(cat "$T"/?.out)"
done
wait_pid "$RP" 30 || fail "record failed: $(cat "$T/rec.err")"
[ -d "$TRACEFS/instances/$I" ] && fail "instance $I was left behind"

trace-cmd report "$T/m.dat" >"$T/report.txt" 2>"$T/report.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/report.err")"
check_buffer "$T/a.log" "$T/report.txt" hyp0 exact
check_buffer "$T/b.log" "$T/report.txt" loop1 exact
check_buffer "$T/c.log" "$T/report.txt" hyp1 exact

# Clock alignment: markers and hyp0's events in the merged order must be
# the order they were written in (marker i, event i, marker i+1, ...).
awk '$1 == "M" { print "M " $2 } $1 == "W" { $1 = ""; $2 = ""; sub(/^ +/, ""); print "E " $0 }' \
	"$T/a.log" >"$T/want.txt"
awk '
	/tracing_mark_write: tdat-marker / { sub(/.*tdat-marker /, ""); print "M " $0; next }
	{
		t = $0; sub(/^ +/, "", t)
		if (substr(t, 1, 6) != "hyp0: " || t ~ /EVENTS DROPPED/)
			next
		if (!match(t, / [0-9]+\.[0-9]+: /))
			next
		r = substr(t, RSTART + RLENGTH); c = index(r, ":")
		info = substr(r, c + 1); sub(/^ +/, "", info); sub(/ +$/, "", info)
		print "E " substr(r, 1, c - 1) " " info
	}' "$T/report.txt" >"$T/got.txt"
if ! cmp -s "$T/want.txt" "$T/got.txt"; then
	diff "$T/want.txt" "$T/got.txt" | head -10 >&2
	fail "remote events are not where their clock puts them among the kernel markers"
fi
[ "$(grep -c '^M' "$T/got.txt")" -eq 40 ] || fail "markers missing"

# One set of hypervisor formats for two hypervisor areas.
trace-cmd dump --events "$T/m.dat" 2>/dev/null | grep -c '^name: hyp_enter$' >"$T/n.txt"
[ "$(cat "$T/n.txt")" = 1 ] || fail "hyp_enter format saved $(cat "$T/n.txt") times"

for b in hyp0 loop1 hyp1; do
	grep -q "^Buffer: $b\$" "$T/tcs.txt" 2>/dev/null ||
		trace-cmd report --stat "$T/m.dat" | grep -q "^Buffer: $b\$" ||
		fail "--stat has no section for buffer $b"
done
same_report "$T/m.dat"
echo PASS
