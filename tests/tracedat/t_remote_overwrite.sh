#!/bin/bash
# SPDX-License-Identifier: MIT
#
# An overwrite-mode (flight recorder) area written by a local loopback-style
# writer (the built-in hvtrace:selftest event, CLOCK_MONOTONIC) that laps
# the recorder while it is held stopped: events may only be missing where
# trace-cmd report says "[k EVENTS DROPPED]" with exactly the number that
# is missing; nothing is duplicated or reordered; the newest events are all
# there; the loss is real (k > 0) and matches the overrun in --stat; the
# writer's process name is in the file; hvtrace report prints the same.
. "$(dirname "$0")/lib.sh"
need_tools

area A overwrite
LOG=$T/w.log
"$WRITER" --area "$A" --cpus 2 --subbufs 4 --mode overwrite --kind loopback \
	--clock mono --name flight --log "$LOG" -- \
	wait-control write 50 sleep 500 \
	sigstop @"$T/rec.pid" write 3000 sigcont @"$T/rec.pid" \
	sleep 500 write 50 sleep 300 stop >"$T/writer.out" 2>&1 &
WP=$!
BGPIDS+=("$WP")
wait_ready "$LOG"

"$HVTRACE" record -o "$T/o.dat" "$A" >"$T/rec.out" 2>"$T/rec.err" &
RP=$!
BGPIDS+=("$RP")
echo "$RP" >"$T/rec.pid"

wait_pid "$WP" 60 || fail "writer failed: $(cat "$T/writer.out")"
wait_pid "$RP" 30 || fail "record failed: $(cat "$T/rec.err")"

trace-cmd report "$T/o.dat" >"$T/report.txt" 2>"$T/report.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/report.err")"
check_buffer "$LOG" "$T/report.txt" flight overwrite >"$T/check.txt"
cat "$T/check.txt"

for cpu in 0 1; do
	lost=$(awk -v c=$cpu '$2 == c { print $6 }' "$T/check.txt")
	events=$(awk -v c=$cpu '$2 == c { print $4 }' "$T/check.txt")
	written=$(grep -c "^W $cpu " "$LOG")
	[ "$lost" -gt 0 ] || fail "cpu $cpu: no loss reported though the writer lapped the ring"
	[ $((events + lost)) -eq "$written" ] ||
		fail "cpu $cpu: $events events + $lost lost != $written written"
	got=$(stat_of "$T/o.dat" flight $cpu overrun)
	[ "$got" = "$lost" ] || fail "cpu $cpu: --stat overrun $got, report lost $lost"
done

# The local writer's pid is named in the file (saved cmdlines).
grep -q 'tdat_writer-' "$T/report.txt" ||
	fail "the writer's process name is missing from the report"

same_report "$T/o.dat"
echo PASS
