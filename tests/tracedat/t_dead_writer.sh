#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Writers that never say STOPPED must not keep hvtrace record waiting:
#   - a local (loopback) writer that exits without marking its area
#     STOPPED: record notices the process is gone, drains, and finishes;
#   - a writer that is alive but hung (SIGSTOPped), and one killed with
#     SIGKILL, whose process is not known to be local: --duration ends the
#     recording.
# In every case all the events written before are in the file.
. "$(dirname "$0")/lib.sh"
need_tools

# 1. Local writer exits without STOPPED.
area A died
"$WRITER" --area "$A" --cpus 2 --subbufs 8 --mode consume --kind loopback \
	--clock mono --name died --log "$T/a.log" -- \
	wait-control write 200 sleep 300 die >"$T/a.out" 2>&1 &
WP=$!
BGPIDS+=("$WP")
wait_ready "$T/a.log"
"$HVTRACE" record -o "$T/a.dat" "$A" >"$T/a.rec" 2>&1 &
RP=$!
BGPIDS+=("$RP")
wait_pid "$WP" 30
wait_pid "$RP" 15 || fail "record did not finish after its writer died: $(cat "$T/a.rec")"
grep -q '^DIED' "$T/a.log" || fail "the writer did not die as planned"
trace-cmd report "$T/a.dat" >"$T/a.txt" 2>"$T/a.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/a.err")"
check_buffer "$T/a.log" "$T/a.txt" died exact

# 2. A hung writer (alive, stopped): --duration ends the recording.
area B hung
"$WRITER" --area "$B" --cpus 2 --subbufs 8 --mode consume --kind hyp \
	--clock mono --name hung --log "$T/b.log" -- \
	wait-control write 100 sleep 60000 >"$T/b.out" 2>&1 &
WP=$!
BGPIDS+=("$WP")
wait_ready "$T/b.log"
"$HVTRACE" record -o "$T/b.dat" -d 1.5 "$B" >"$T/b.rec" 2>&1 &
RP=$!
BGPIDS+=("$RP")
n=0
until [ "$(grep -c '^W' "$T/b.log")" -ge 200 ]; do
	n=$((n + 1))
	[ $n -gt 200 ] && fail "the writer did not write"
	sleep 0.05
done
kill -STOP "$WP"
wait_pid "$RP" 15 || fail "record did not stop at --duration: $(cat "$T/b.rec")"
trace-cmd report "$T/b.dat" >"$T/b.txt" 2>"$T/b.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/b.err")"
check_buffer "$T/b.log" "$T/b.txt" hung exact

# 3. A writer killed with SIGKILL mid-run, area left RUNNING.
area C killed
"$WRITER" --area "$C" --cpus 2 --subbufs 8 --mode consume --kind hyp \
	--clock mono --name killed --log "$T/c.log" -- \
	wait-control write 100 sleep 60000 >"$T/c.out" 2>&1 &
WP=$!
BGPIDS+=("$WP")
wait_ready "$T/c.log"
"$HVTRACE" record -o "$T/c.dat" -d 1.5 "$C" >"$T/c.rec" 2>&1 &
RP=$!
BGPIDS+=("$RP")
n=0
until [ "$(grep -c '^W' "$T/c.log")" -ge 200 ]; do
	n=$((n + 1))
	[ $n -gt 200 ] && fail "the writer did not write"
	sleep 0.05
done
kill -KILL "$WP"
wait_pid "$RP" 15 || fail "record did not stop at --duration: $(cat "$T/c.rec")"
trace-cmd report "$T/c.dat" >"$T/c.txt" 2>"$T/c.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/c.err")"
check_buffer "$T/c.log" "$T/c.txt" killed exact
same_report "$T/c.dat"
echo PASS
