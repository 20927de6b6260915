#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A consume-mode area (hypervisor events, TSC clock) recorded while the
# recorder is held stopped so the ring fills and the writer drops events:
# trace-cmd report must show every committed event with its field values,
# in order per CPU, and "[k EVENTS DROPPED]" exactly where the writer
# dropped k events; trace-cmd report --stat must count the same drops; the
# recorder must finish by itself once the writer stopped; hvtrace report
# must print what trace-cmd prints.
. "$(dirname "$0")/lib.sh"
need_tools

area A consume
LOG=$T/w.log
"$WRITER" --area "$A" --cpus 2 --subbufs 4 --mode consume --kind hyp \
	--clock tsc --name guest0 --log "$LOG" -- \
	wait-control write 100 wait-consumed \
	sigstop @"$T/rec.pid" write 1500 sigcont @"$T/rec.pid" \
	wait-consumed write 100 stop >"$T/writer.out" 2>&1 &
WP=$!
BGPIDS+=("$WP")
wait_ready "$LOG"

"$HVTRACE" record -o "$T/c.dat" "$A" >"$T/rec.out" 2>"$T/rec.err" &
RP=$!
BGPIDS+=("$RP")
echo "$RP" >"$T/rec.pid"

wait_pid "$WP" 60 || fail "writer failed: $(cat "$T/writer.out")"
wait_pid "$RP" 30 || fail "record failed: $(cat "$T/rec.err")"
[ -s "$T/rec.out" ] && fail "record wrote to stdout: $(head -3 "$T/rec.out")"

drops=$(grep -c '^D' "$LOG")
[ "$drops" -gt 0 ] || fail "the writer dropped nothing: the test did not fill the ring"

trace-cmd report "$T/c.dat" >"$T/report.txt" 2>"$T/report.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/report.err")"
check_buffer "$LOG" "$T/report.txt" guest0 exact >"$T/check.txt"
cat "$T/check.txt"

for cpu in 0 1; do
	want_d=$(grep -c "^D $cpu " "$LOG")
	want_w=$(grep -c "^W $cpu " "$LOG")
	got_lost=$(awk -v c=$cpu '$2 == c { print $6 + $8 }' "$T/check.txt")
	[ "$got_lost" = "$want_d" ] ||
		fail "cpu $cpu: report shows $got_lost lost, writer dropped $want_d"
	got=$(stat_of "$T/c.dat" guest0 $cpu "dropped events")
	[ "$got" = "$want_d" ] ||
		fail "cpu $cpu: --stat dropped events $got, writer dropped $want_d"
	got=$(stat_of "$T/c.dat" guest0 $cpu "read events")
	[ "$got" = "$want_w" ] ||
		fail "cpu $cpu: --stat read events $got, writer wrote $want_w"
done

same_report "$T/c.dat"
echo "PASS: $(grep -c '^W' "$LOG") events, $drops dropped, all accounted for"
