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

# A writer of kind hyp (not known to be local) that SIGNAL stops once its
# log shows 200 writes: --duration ends the recording, and
# every event written before is in the file.
#   stopped_writer FILE_LETTER NAME SIGNAL
stopped_writer() {
	local x=$1 name=$2 sig=$3 a n
	area a "$name"
	"$WRITER" --area "$a" --cpus 2 --subbufs 8 --mode consume \
		--kind hyp --clock mono --name "$name" --log "$T/$x.log" -- \
		wait-control write 100 sleep 60000 >"$T/$x.out" 2>&1 &
	WP=$!
	BGPIDS+=("$WP")
	wait_ready "$T/$x.log"
	"$HVTRACE" record -o "$T/$x.dat" -d 1.5 "$a" >"$T/$x.rec" 2>&1 &
	RP=$!
	BGPIDS+=("$RP")
	n=0
	until [ "$(grep -c '^W' "$T/$x.log")" -ge 200 ]; do
		n=$((n + 1))
		[ $n -gt 200 ] && fail "the $name writer did not write"
		sleep 0.05
	done
	kill -"$sig" "$WP"
	wait_pid "$RP" 15 ||
		fail "record did not stop at --duration: $(cat "$T/$x.rec")"
	trace-cmd report "$T/$x.dat" >"$T/$x.txt" 2>"$T/$x.err" ||
		fail "trace-cmd report failed: $(head -3 "$T/$x.err")"
	check_buffer "$T/$x.log" "$T/$x.txt" "$name" exact
}

# 2. A hung writer (alive, stopped).
stopped_writer b hung STOP

# 3. A writer killed with SIGKILL mid-run, area left RUNNING.
stopped_writer c killed KILL
same_report "$T/c.dat"
echo PASS
