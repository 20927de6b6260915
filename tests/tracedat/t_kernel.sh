#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The host kernel alone (--kernel through a tracefs instance, read through
# the kernel ring: its mmap, or read() before 6.10): trace_marker writes
# come out of trace-cmd report in order with their text and the writer's
# process name, --events stops the recording, a created instance is
# removed afterwards, and an existing instance gets its trace clock,
# tracing_on and event enables back.
. "$(dirname "$0")/lib.sh"
need_tools
need_kernel

# 1. A new instance: created by record, removed afterwards.
instance I new
N=200
"$HVTRACE" record -o "$T/k.dat" -B "$I" -n $N >"$T/rec.out" 2>"$T/rec.err" &
RP=$!
BGPIDS+=("$RP")
n=0
# The clock first, then tracing_on: a new instance starts with tracing on,
# and record turns it off before it sets the clock and on again once its
# rings are open, so only tracing_on read after the clock is the final one.
until [ -e "$TRACEFS/instances/$I/trace_marker" ] &&
	grep -q '\[mono\]' "$TRACEFS/instances/$I/trace_clock" 2>/dev/null &&
	[ "$(cat "$TRACEFS/instances/$I/tracing_on" 2>/dev/null)" = 1 ]; do
	n=$((n + 1))
	[ $n -gt 200 ] && fail "record did not set up instance $I: $(cat "$T/rec.err")"
	sleep 0.05
done
for i in $(seq 1 $N); do
	echo "hvt-kmark $i" >"$TRACEFS/instances/$I/trace_marker"
done
wait_pid "$RP" 30 || fail "record failed: $(cat "$T/rec.err")"
[ -d "$TRACEFS/instances/$I" ] && fail "instance $I was left behind"

trace-cmd report "$T/k.dat" >"$T/report.txt" 2>"$T/report.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/report.err")"
grep 'tracing_mark_write: hvt-kmark' "$T/report.txt" >"$T/marks.txt"
[ "$(wc -l <"$T/marks.txt")" -eq $N ] ||
	fail "$(wc -l <"$T/marks.txt") markers in the report, $N written"
awk '{ sub(/.*hvt-kmark /, ""); if ($0 != NR) { print "marker " NR " is " $0; exit 1 } }' \
	"$T/marks.txt" || fail "markers out of order or changed"
# The shell that wrote them is named (not "<...>"), with its pid.
me=$(cat /proc/$$/comm)
grep -q "^ *$me-$$ " "$T/marks.txt" ||
	fail "the writing process ($me-$$) is not named: $(head -1 "$T/marks.txt")"
# The file says which clock the top-level buffer used.
trace-cmd dump --options "$T/k.dat" >"$T/dump.txt" 2>&1
grep -A2 '^"" \[name\]' "$T/dump.txt" | grep -q '^"mono" \[clock\]' ||
	fail "the top-level buffer is not marked with the mono clock"
grep -q '\[mono\]' "$T/dump.txt" || fail "TRACECLOCK does not select mono"
same_report "$T/k.dat"

# 2. An existing instance: settings come back.
instance J old
mkdir "$TRACEFS/instances/$J" || fail "cannot create instance $J"
echo local >"$TRACEFS/instances/$J/trace_clock"
echo 0 >"$TRACEFS/instances/$J/tracing_on"
echo 0 >"$TRACEFS/instances/$J/events/sched/sched_wakeup/enable"
"$HVTRACE" record -o "$T/k2.dat" -B "$J" -e sched:sched_wakeup -e sched_switch \
	-d 0.5 >"$T/rec2.out" 2>"$T/rec2.err" ||
	fail "record -B existing failed: $(cat "$T/rec2.err")"
[ -d "$TRACEFS/instances/$J" ] || fail "an existing instance was removed"
grep -q '\[local\]' "$TRACEFS/instances/$J/trace_clock" ||
	fail "trace_clock not restored: $(cat "$TRACEFS/instances/$J/trace_clock")"
[ "$(cat "$TRACEFS/instances/$J/tracing_on")" = 0 ] || fail "tracing_on not restored"
[ "$(cat "$TRACEFS/instances/$J/events/sched/sched_wakeup/enable")" = 0 ] ||
	fail "sched_wakeup enable not restored"
trace-cmd report "$T/k2.dat" >"$T/report2.txt" 2>"$T/report2.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/report2.err")"
grep -q 'sched_switch:' "$T/report2.txt" || fail "no sched_switch events recorded"
same_report "$T/k2.dat"

# 3. A pattern that matches nothing is an error, and leaves no file.
"$HVTRACE" record -o "$T/k3.dat" -B "$J" -e no_such_event_xyz -d 0.1 \
	>/dev/null 2>"$T/rec3.err" && fail "record accepted an unknown event"
grep -q "no event matches 'no_such_event_xyz'" "$T/rec3.err" ||
	fail "unclear error: $(cat "$T/rec3.err")"
[ -e "$T/k3.dat" ] && fail "a failed record left a file"
echo PASS
