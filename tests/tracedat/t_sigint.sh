#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Interrupting hvtrace record (Ctrl-C = SIGINT, and SIGTERM) while a writer
# keeps writing: record exits 0 and leaves a complete file -- trace-cmd
# reads it without complaint, and what it shows is exactly the start of
# what was written (every event and loss up to where the recording ended).
# With --kernel, the kernel instance it created is gone afterwards.
. "$(dirname "$0")/lib.sh"
need_tools

run_one() {	# SIGNAL KERNEL(0/1)
	local sig=$1 kern=$2 A I=() P=$T/$1
	mkdir -p "$P"
	live_writer A "sig-$sig" "$P"
	local wp=$WP
	if [ "$kern" = 1 ]; then
		instance iname "sig-$sig"
		I=(-B "$iname")
	fi
	"$HVTRACE" record -o "$P/s.dat" "${I[@]}" "$A" >"$P/rec.out" \
		2>"$P/rec.err" &
	local rp=$!
	BGPIDS+=("$rp")
	# Let it record for a while (it has no limit of its own).
	local n=0
	until [ "$(grep -c '^W' "$P/w.log")" -gt 2000 ]; do
		n=$((n + 1))
		[ $n -gt 400 ] && fail "the writer is not writing: $(cat "$P/w.out")"
		sleep 0.05
	done
	sleep 0.5
	kill -"$sig" "$rp"
	wait_pid "$rp" 20 || fail "record exited $? after SIG$sig: $(cat "$P/rec.err")"
	kill -KILL "$wp" 2>/dev/null
	wait "$wp" 2>/dev/null

	trace-cmd report "$P/s.dat" >"$P/report.txt" 2>"$P/report.err" ||
		fail "SIG$sig: trace-cmd report failed: $(head -3 "$P/report.err")"
	grep -qi 'truncated\|error\|bad page' "$P/report.err" &&
		fail "SIG$sig: trace-cmd complains: $(head -3 "$P/report.err")"
	check_buffer "$P/w.log" "$P/report.txt" live prefix >"$P/check.txt"
	cat "$P/check.txt"
	if [ "$kern" = 1 ]; then
		[ -d "$TRACEFS/instances/${I[1]}" ] &&
			fail "SIG$sig: instance ${I[1]} left behind"
	fi
	same_report "$P/s.dat"
}

run_one INT 0
run_one TERM 0
if [ "$(id -u)" -eq 0 ] && [ -w "$TRACEFS/instances" ]; then
	run_one INT 1
else
	echo "note: the --kernel part needs root and tracefs; not run"
fi
echo PASS
