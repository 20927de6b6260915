#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace record never labels a buffer with the host's clock when its
# times are not on it.  An area whose writer (on the raw TSC) has stopped,
# recorded --read-only, has no time sync and so no clock model: its buffer
# keeps the writer's own timestamps under the clock 'counter', never
# 'mono'; stderr says so in one line, even with -q; the CPU statistics in
# the file say it too; trace-cmd report and hvtrace report read the file
# alike, every event there.  A live loopback writer recorded --read-only
# runs on this host: its clock is read here (as hvtrace stream does), so
# its buffer is on the host's CLOCK_MONOTONIC, and the file's CPU
# statistics keep the clock model's error bound, which -q does not print.
. "$(dirname "$0")/lib.sh"
need_tools
[ "$(uname -m)" = x86_64 ] || skip "the writer's tsc clock needs x86_64"

# buffer_clock FILE BUFFER: the clock trace-cmd reads for BUFFER
buffer_clock() {
	trace-cmd dump --options "$1" 2>/dev/null | awk -v buf="\"$2\"" '
		/\[Option BUFFER/ { inbuf = 1; want = 0; next }
		/\[Option/ { inbuf = 0 }
		inbuf && $1 == buf && $2 == "[name]" { want = 1; next }
		inbuf && want && $2 == "[clock]" { gsub(/"/, "", $1); print $1; exit }'
}

# The stopped writer: post-mortem, no one to answer time sync.
area S stopped
"$WRITER" --area "$S" --cpus 2 --subbufs 8 --mode overwrite --kind loopback \
	--clock tsc --name stopped --log "$T/s.log" -- write 150 stop \
	>"$T/s.out" 2>&1 ||
	fail "the writer failed: $(cat "$T/s.out")"
"$HVTRACE" record -q --read-only -o "$T/own.dat" own="$S" 2>"$T/own.err" ||
	fail "record failed: $(cat "$T/own.err")"
grep -c . "$T/own.err" | grep -qx 1 ||
	fail "record -q: not one line on stderr: $(cat "$T/own.err")"
grep -q "^hvtrace record: 'own': times are the writer's own (buffer clock 'counter'), not the host's CLOCK_MONOTONIC (--read-only: no time sync" "$T/own.err" ||
	fail "record did not say the buffer is not on the host's clock: $(cat "$T/own.err")"
clk=$(buffer_clock "$T/own.dat" own)
[ "$clk" = counter ] ||
	fail "buffer 'own' is labelled with clock '$clk', not 'counter'"
"$HVTRACE" report --stat "$T/own.dat" >"$T/own.stat" ||
	fail "hvtrace report --stat failed"
grep -qx "clock: counter (the writer's own times, not the host's CLOCK_MONOTONIC: no time sync)" "$T/own.stat" ||
	fail "the file's statistics do not say the clock: $(head -8 "$T/own.stat")"
same_report "$T/own.dat"
n=$(awk '$1 == "own:" && $NF ~ /^id=/' "$T/tc.txt" | wc -l)
[ "$n" = 300 ] || fail "trace-cmd report shows $n of the 300 events"
echo "buffer 'own': clock counter, $n events, said once on stderr"

# A live loopback writer, read-only: on the host's clock, with its bound.
area L live
"$WRITER" --area "$L" --cpus 2 --subbufs 8 --mode overwrite --kind loopback \
	--clock tsc --name live --log "$T/l.log" -- \
	write 100 sleep 600 write 100 stop >"$T/l.out" 2>&1 &
WL=$!
BGPIDS+=("$WL")
wait_ready "$T/l.log"
"$HVTRACE" record -q --read-only -o "$T/live.dat" live="$L" 2>"$T/live.err" ||
	fail "record of the live writer failed: $(cat "$T/live.err")"
wait_pid "$WL" 30 || fail "the live writer failed: $(cat "$T/l.out")"
[ -s "$T/live.err" ] && fail "record -q printed: $(cat "$T/live.err")"
clk=$(buffer_clock "$T/live.dat" live)
[ "$clk" = mono ] || fail "buffer 'live' is labelled '$clk', not 'mono'"
"$HVTRACE" report --stat "$T/live.dat" >"$T/live.stat" ||
	fail "hvtrace report --stat failed"
grep -Eq "^clock: mono \(the host's CLOCK_MONOTONIC through a clock model, error bound \+-[0-9]+\.[0-9]{3} us\)$" "$T/live.stat" ||
	fail "the file's statistics have no error bound: $(head -8 "$T/live.stat")"
grep '^clock:' "$T/live.stat"
same_report "$T/live.dat"
echo "PASS"
