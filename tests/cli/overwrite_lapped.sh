#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A flight-recorder (overwrite-mode) area that the writer lapped many
# times, read afterwards: the events overwritten before the oldest page
# are reported as lost on each CPU's first page (a LOST line before its
# first event), so read + lost equals what the writer wrote, for a
# read-only reader, an owner, and record.
. "$(dirname "$0")/lib.sh"

N=50000
"$HVTRACE" loopback --area "$AREA" --cpus 2 --events $N --mode overwrite \
	--pages 8 >"$TMP/w.out" 2>&1 || fail "loopback writer failed: $(cat "$TMP/w.out")"

check_summary() { # WHAT FILE
	local cpu r l
	for cpu in 0 1; do
		r=$(sed -n "s/^  cpu $cpu: \([0-9]*\) events, \([0-9]*\) lost.*/\1/p" "$2")
		l=$(sed -n "s/^  cpu $cpu: \([0-9]*\) events, \([0-9]*\) lost.*/\2/p" "$2")
		[ -n "$r" ] && [ -n "$l" ] || fail "$1: no summary for CPU $cpu: $(cat "$2")"
		[ "$l" -gt 0 ] || fail "$1: CPU $cpu reports no loss although the ring was lapped"
		expect_eq "$1: CPU $cpu read + lost" $((r + l)) $N
	done
}

for mode in --read-only ""; do
	"$HVTRACE" stream "$AREA" $mode --drain --summary >"$TMP/s.out" 2>"$TMP/s.err" ||
		fail "stream $mode failed: $(cat "$TMP/s.err")"
	check_summary "stream ${mode:-(owner)}" "$TMP/s.err"
	# The loss comes first on each CPU, and the first event after it has
	# the id that the loss count says (ids count from 0 per CPU).
	for cpu in 0 1; do
		first=$(grep -m1 -E "^CPU:$cpu \[LOST|\[00$cpu\]" "$TMP/s.out")
		case $first in
		"CPU:$cpu [LOST "*) ;;
		*) fail "stream ${mode:-(owner)}: CPU $cpu does not start with a LOST line: '$first'" ;;
		esac
		lost=${first#*LOST }
		lost=${lost%% *}
		id=$(grep -m1 "\[00$cpu\]" "$TMP/s.out" | sed -n 's/.*id=\([0-9]*\).*/\1/p')
		expect_eq "stream ${mode:-(owner)}: CPU $cpu first id after the loss" "$id" "$lost"
	done
done
echo "PASS: a lapped flight recorder reads as $N = read + lost per CPU"
