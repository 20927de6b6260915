#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A recording killed at any instant is not lost.  hvtrace record runs on
# an area a writer keeps writing to and is killed with SIGKILL at a
# random moment (0.3 to 3 s), 20 times.  Each time:
#   - the output is not a finished file yet: hvtrace report says the
#     recording was not finished and gives the command that recovers it
#     (never "not a trace.dat file"), and FILE.unfinished is mode 0600;
#   - hvtrace record --recover FILE writes FILE and removes the journal;
#   - trace-cmd report and hvtrace report read FILE and print the same;
#   - per CPU, FILE holds exactly the start of what the writer wrote, in
#     order, nothing twice, and every event the writer had logged BOUND_MS
#     before the kill (the writer's own log, taken then): the bound
#     docs/tracedat.md states, with slack for a loaded machine.
# A journal cut short (a torn last write) is recovered with the cut
# record counted.  A clean SIGINT run leaves FILE and nothing beside it.
. "$(dirname "$0")/lib.sh"
need_tools

RUNS=${RUNS:-20}
BOUND_MS=${BOUND_MS:-500}

# W lines per CPU of a writer log: "cpu count" lines
per_cpu() {
	awk '$1 == "W" { n[$2]++ } END { for (c in n) print c, n[c] }' "$1"
}

gaps=()
one_run() {	# N
	local n=$1 A P=$T/run$1 t0 pre
	mkdir -p "$P"
	live_writer A "k$n" "$P"
	local wp=$WP
	"$HVTRACE" record -q -o "$P/s.dat" "$A" >"$P/rec.out" 2>"$P/rec.err" &
	local rp=$!
	BGPIDS+=("$rp")
	# Killed 0.3 to 3 s after it started; the writer's log BOUND_MS
	# before that is what the file must hold at least.
	t0=$((300 + RANDOM % 2701))
	pre=$((t0 - BOUND_MS))
	[ $pre -lt 0 ] && pre=0
	sleep "$((pre / 1000)).$(printf '%03d' $((pre % 1000)))"
	cp "$P/w.log" "$P/before.log"
	local rest=$((t0 - pre))
	sleep "$((rest / 1000)).$(printf '%03d' $((rest % 1000)))"
	if [ -e "$P/s.dat.unfinished" ]; then
		[ "$(stat -c %a "$P/s.dat.unfinished")" = 600 ] ||
			fail "run $n: $P/s.dat.unfinished is mode $(stat -c %a "$P/s.dat.unfinished"), not 600"
	fi
	kill -KILL "$rp" 2>/dev/null
	wait "$rp" 2>/dev/null
	cp "$P/w.log" "$P/after.log"
	kill -KILL "$wp" 2>/dev/null
	wait "$wp" 2>/dev/null

	# Unfinished: report says so and how to recover, never "not a
	# trace.dat file".
	if "$HVTRACE" report "$P/s.dat" >/dev/null 2>"$P/unf.err"; then
		fail "run $n: hvtrace report read the file of a killed recording before recovery"
	fi
	grep -q 'not a trace.dat' "$P/unf.err" &&
		fail "run $n (killed after ${t0} ms): $(cat "$P/unf.err")"
	grep -q "not finished.*hvtrace record --recover $P/s.dat" "$P/unf.err" ||
		fail "run $n: hvtrace report does not say how to recover: $(cat "$P/unf.err")"

	"$HVTRACE" record --recover "$P/s.dat" 2>"$P/recover.err" ||
		fail "run $n (killed after ${t0} ms): recovery failed: $(cat "$P/recover.err")"
	[ -e "$P/s.dat.unfinished" ] &&
		fail "run $n: the journal stayed after recovery"

	trace-cmd report "$P/s.dat" >"$P/report.txt" 2>"$P/report.err" ||
		fail "run $n: trace-cmd report failed: $(head -3 "$P/report.err")"
	grep -qi 'truncated\|error\|bad page' "$P/report.err" &&
		fail "run $n: trace-cmd complains: $(head -3 "$P/report.err")"
	awk -v buf=live -v mode=prefix -v allow_empty=1 -f "$CHECK_AWK" \
		"$P/after.log" "$P/report.txt" >"$P/check.txt" ||
		fail "run $n: the recovered file is not the start of what was written, in order (log $P/after.log, report $P/report.txt)"
	same_report "$P/s.dat"

	# The bound: each CPU holds every event logged BOUND_MS before the
	# kill.  The gap is what it lacks of what was logged at the kill, in
	# ms at the writer's rate over the last BOUND_MS.
	per_cpu "$P/before.log" >"$P/before.n"
	per_cpu "$P/after.log" >"$P/after.n"
	awk -v run="$n" -v bound="$BOUND_MS" '
		FILENAME ~ /before.n$/ { b[$1] = $2; next }
		FILENAME ~ /after.n$/ { a[$1] = $2; next }
		$1 == "cpu" { got[$2] = $4 }
		END {
			worst = 0
			for (c in b) {
				if (got[c] + 0 < b[c]) {
					printf "run %d cpu %d: %d events, but %d " \
					       "were written %d ms before the kill\n",
					       run, c, got[c], b[c], bound
					exit 1
				}
				rate = (a[c] - b[c]) / bound
				if (rate > 0 && (a[c] - got[c]) / rate > worst)
					worst = (a[c] - got[c]) / rate
			}
			printf "%d\n", worst
		}' "$P/before.n" "$P/after.n" "$P/check.txt" >"$P/gap" ||
		fail "$(cat "$P/gap")"
	gaps+=("$(cat "$P/gap")")
	echo "run $n: killed after ${t0} ms, $(awk '$1 == "cpu" { e += $4 } END { print e + 0 }' "$P/check.txt") events recovered, missing the last $(cat "$P/gap") ms"
	rm -f "$A"
	# Keep the last run's journal-less directory small.
	[ "$n" -lt "$RUNS" ] && rm -f "$P/w.log" "$P/after.log" "$P/before.log"
	return 0
}

for i in $(seq 1 "$RUNS"); do
	one_run "$i"
done
printf '%s\n' "${gaps[@]}" | sort -n | awk '{ v[NR] = $1 }
	END { printf "gap after the last recorded event: median %d ms, max %d ms (bound %d ms)\n",
		v[int((NR + 1) / 2)], v[NR], '"$BOUND_MS"' }'

# A torn journal: one killed run's journal cut in its last record.
P=$T/torn
mkdir -p "$P"
live_writer A torn "$P"
wp=$WP
"$HVTRACE" record -q -o "$P/s.dat" "$A" 2>"$P/rec.err" &
rp=$!
BGPIDS+=("$rp")
sleep 1
kill -KILL "$rp"
wait "$rp" 2>/dev/null
kill -KILL "$wp"
wait "$wp" 2>/dev/null
sz=$(stat -c %s "$P/s.dat.unfinished")
truncate -s $((sz - 1000)) "$P/s.dat.unfinished"
"$HVTRACE" record --recover "$P/s.dat" 2>"$P/recover.err" ||
	fail "a torn journal: recovery failed: $(cat "$P/recover.err")"
grep -q 'damaged record.*cut off' "$P/recover.err" ||
	fail "a torn journal: the cut record is not reported: $(cat "$P/recover.err")"
trace-cmd report "$P/s.dat" >"$P/report.txt" 2>"$P/report.err" ||
	fail "a torn journal: trace-cmd report failed: $(head -3 "$P/report.err")"
awk -v buf=live -v mode=prefix -v allow_empty=1 -f "$CHECK_AWK" \
	"$P/w.log" "$P/report.txt" >/dev/null ||
	fail "a torn journal: the file is not the start of what was written"
echo "torn journal: $(head -1 "$P/recover.err")"

# A clean SIGINT run: the file, and nothing beside it.
P=$T/clean
mkdir -p "$P"
live_writer A clean "$P"
wp=$WP
mkdir "$P/out"
"$HVTRACE" record -q -o "$P/out/s.dat" "$A" 2>"$P/rec.err" &
rp=$!
BGPIDS+=("$rp")
sleep 1
[ "$(stat -c %a "$P/out/s.dat.unfinished" 2>/dev/null)" = 600 ] ||
	fail "no journal of mode 0600 beside the output while recording: $(ls -la "$P/out")"
kill -INT "$rp"
wait_pid "$rp" 20 || fail "record exited $? after SIGINT: $(cat "$P/rec.err")"
kill -KILL "$wp"
wait "$wp" 2>/dev/null
left=$(ls -A "$P/out")
[ "$left" = s.dat ] || fail "a clean SIGINT run left: $left"
trace-cmd report "$P/out/s.dat" >/dev/null 2>&1 ||
	fail "the SIGINT run's file does not read"
echo "clean SIGINT run: $P/out holds only s.dat"
echo PASS
