#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream on loopback areas shows every event exactly once:
#   1. post-mortem: a finished writer's area, read with --drain: every id
#      0..N-1 on each CPU, in order, well-formed trace_pipe lines, time
#      ordered across CPUs, no losses;
#   2. live, rate-limited, ring large enough: the same, while the writer
#      runs, and stream exits by itself once the writer has stopped;
#   3. live, unthrottled, small ring: losses happen, and the LOST lines
#      account exactly for every id not shown, matching the writer's own
#      drop counts.
. "$(dirname "$0")/lib.sh"

N=30000
"$HVTRACE" loopback --area "$AREA" --cpus 2 --events $N --pages 512 \
	--quiet || fail "loopback writer failed"
"$HVTRACE" stream "$AREA" --drain >"$TMP/pm.txt" || fail "stream --drain failed"
for cpu in 0 1; do
	ids_exact "$TMP/pm.txt" $cpu $N || fail "post-mortem ids, cpu $cpu"
done
expect_eq "post-mortem line count" "$(wc -l <"$TMP/pm.txt")" $((2 * N))
lines_well_formed "$TMP/pm.txt"
time_ordered "$TMP/pm.txt" || fail "post-mortem merge order"
echo "post-mortem: $((2 * N)) events exact"

rm -f "$AREA"
pid=$("$HVTRACE" loopback --area "$AREA" --cpus 2 --events 40000 \
	--rate 40000 --pages 1024 --background --log "$TMP/live.log") ||
	fail "background writer did not start"
WRITERS="$pid"
"$HVTRACE" stream "$AREA" --summary >"$TMP/live.txt" 2>"$TMP/live.err" ||
	fail "live stream failed: $(cat "$TMP/live.err")"
wait_gone "$pid"
for cpu in 0 1; do
	ids_exact "$TMP/live.txt" $cpu 40000 || fail "live ids, cpu $cpu"
	expect_eq "writer written cpu $cpu" \
		"$(writer_field "$TMP/live.log" $cpu written)" 40000
done
lines_well_formed "$TMP/live.txt"
time_ordered "$TMP/live.txt" || fail "live merge order"
grep -q "hvtrace stream: 2 CPUs, 80000 events, 0 lost, 0 errors" \
	"$TMP/live.err" || fail "summary: $(cat "$TMP/live.err")"
echo "live, rate-limited: 80000 events exact"

rm -f "$AREA"
pid=$("$HVTRACE" loopback --area "$AREA" --cpus 2 --events 400000 \
	--pages 16 --background --log "$TMP/fast.log") ||
	fail "background writer did not start"
WRITERS="$pid"
"$HVTRACE" stream "$AREA" >"$TMP/fast.txt" || fail "fast stream failed"
wait_gone "$pid"
total_lost=0
for cpu in 0 1; do
	read -r n lost < <(ids_with_losses "$TMP/fast.txt" $cpu) ||
		fail "ids with losses, cpu $cpu: $n"
	expect_eq "cpu $cpu shown + lost" $((n + lost)) 400000
	expect_eq "cpu $cpu written" "$(writer_field "$TMP/fast.log" $cpu written)" $n
	expect_eq "cpu $cpu dropped" "$(writer_field "$TMP/fast.log" $cpu dropped)" $lost
	total_lost=$((total_lost + lost))
done
lines_well_formed "$TMP/fast.txt"
echo "live, unthrottled: losses accounted exactly ($total_lost lost)"
