#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The writer API's corner cases checked with trace-cmd: the round-trip
# unit test's file (4 buffers of 2, 3, 1 and 2 CPUs with 4 KiB and 16 KiB
# pages, one buffer empty, ties across buffers, 27-bit delta overflows,
# records over 112 bytes, a __data_loc string, losses of known and unknown
# size) must read in trace-cmd exactly as in hvtrace report: same events,
# same order, same loss lines, same statistics.  In each of the writer's
# layouts: without rooms, with every buffer in its rooms, and with some
# in rooms while one outgrew them (an "unused room" section that
# trace-cmd's walk over the sections must step over).
. "$(dirname "$0")/lib.sh"
need_tools
RT=$OBJ/tests/unit/tracedat_roundtrip
[ -x "$RT" ] || fail "$RT not built"
for rooms in 0 1 2; do
	"$RT" --keep "$T/rt.dat" --rooms $rooms >"$T/rt.out" 2>&1 ||
		fail "round trip (rooms $rooms) failed: $(cat "$T/rt.out")"
	want=$(sed -n 's/^rooms [0-9]: \([0-9]*\) events, \([0-9]*\) + \([0-9]*\) lost.*/\1 \2 \3/p' "$T/rt.out")
	[ -n "$want" ] || fail "no summary from the round trip: $(cat "$T/rt.out")"
	set -- $want
	trace-cmd report "$T/rt.dat" >"$T/r.txt" 2>"$T/r.err" ||
		fail "trace-cmd report failed: $(head -3 "$T/r.err")"
	events=$(grep -c ' \(small\|big\|str\): ' "$T/r.txt")
	[ "$events" -eq "$1" ] || fail "trace-cmd shows $events events, $1 were written"
	known=$(sed -n 's/.*CPU:[0-9]* \[\([0-9]*\) EVENTS DROPPED\].*/\1/p' "$T/r.txt" |
		awk '{ s += $1 } END { print s + 0 }')
	[ "$known" -eq "$2" ] || fail "trace-cmd shows $known lost, $2 were recorded lost"
	unknown=$(grep -c 'CPU:[0-9]* \[EVENTS DROPPED\]' "$T/r.txt")
	[ "$unknown" -eq "$3" ] || fail "trace-cmd shows $unknown unknown losses, $3 were recorded"
	grep -q 'big-598 n=598' "$T/r.txt" || fail "a record over 112 bytes did not decode"
	grep -q 'msg 200595' "$T/r.txt" || fail "the __data_loc string did not decode"
	same_report "$T/rt.dat"
	if [ $rooms = 2 ]; then
		trace-cmd dump --sections "$T/rt.dat" >"$T/s.txt" 2>&1 ||
			fail "trace-cmd dump --sections failed: $(head -3 "$T/s.txt")"
		grep -q '"unused room"' "$T/s.txt" ||
			fail "trace-cmd does not list the unused room: $(cat "$T/s.txt")"
	fi
	echo "rooms $rooms: $1 events, $2 + $3 lost, identical in trace-cmd and hvtrace report"
done
echo "PASS: the three layouts read the same in trace-cmd and hvtrace report"
