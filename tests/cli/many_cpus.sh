#!/bin/bash
# SPDX-License-Identifier: MIT
#
# More CPU buffers than host CPUs: a loopback area with 32 CPU buffers,
# written by 32 threads on however many CPUs this machine has (each thread
# is the single writer of its buffer), read by hvtrace stream.
#   1. post-mortem: every id 0..N-1 on each of the 32 CPUs, no losses;
#   2. live, unthrottled, small rings: losses happen, and on every CPU the
#      ids shown plus the LOST counts make exactly the writer's count, and
#      the LOST counts equal the writer's own drops (read + lost ==
#      written);
#   3. hvtrace stat on the area lists all 32 CPUs, with written equal to
#      what the writer wrote.
. "$(dirname "$0")/lib.sh"

CPUS=32
N=3000
"$HVTRACE" loopback --area "$AREA" --cpus $CPUS --events $N --pages 64 \
	--quiet || fail "loopback writer with $CPUS CPU buffers failed"
"$HVTRACE" stream "$AREA" --drain >"$TMP/pm.txt" ||
	fail "stream --drain failed"
for cpu in $(seq 0 $((CPUS - 1))); do
	ids_exact "$TMP/pm.txt" $cpu $N || fail "post-mortem ids, cpu $cpu"
done
expect_eq "post-mortem line count" "$(wc -l <"$TMP/pm.txt")" $((CPUS * N))
lines_well_formed "$TMP/pm.txt"
echo "post-mortem: $CPUS CPUs x $N events exact"

rm -f "$AREA"
M=40000
pid=$("$HVTRACE" loopback --area "$AREA" --cpus $CPUS --events $M \
	--pages 4 --background --log "$TMP/fast.log") ||
	fail "background writer did not start"
WRITERS="$pid"
"$HVTRACE" stream "$AREA" --summary >"$TMP/fast.txt" 2>"$TMP/fast.err" ||
	fail "fast stream failed: $(cat "$TMP/fast.err")"
wait_gone "$pid"
total_lost=0
total_shown=0
for cpu in $(seq 0 $((CPUS - 1))); do
	read -r n lost < <(ids_with_losses "$TMP/fast.txt" $cpu) ||
		fail "ids with losses, cpu $cpu: $n"
	expect_eq "cpu $cpu shown + lost" $((n + lost)) $M
	expect_eq "cpu $cpu written" \
		"$(writer_field "$TMP/fast.log" $cpu written)" $n
	expect_eq "cpu $cpu dropped" \
		"$(writer_field "$TMP/fast.log" $cpu dropped)" $lost
	total_lost=$((total_lost + lost))
	total_shown=$((total_shown + n))
done
[ "$total_lost" -gt 0 ] || echo "note: no losses in this run"
grep -q "hvtrace stream: $CPUS CPUs, $total_shown events, $total_lost lost" \
	"$TMP/fast.err" || fail "summary: $(tail -1 "$TMP/fast.err")"
lines_well_formed "$TMP/fast.txt"
echo "live: $CPUS CPUs, read $total_shown + lost $total_lost == written $((CPUS * M))"

"$HVTRACE" stat "$AREA" >"$TMP/stat.txt" || fail "stat failed"
expect_eq "stat CPU blocks" "$(grep -c '^CPU [0-9]*:$' "$TMP/stat.txt")" $CPUS
for cpu in 0 $((CPUS - 1)); do
	expect_eq "stat cpu $cpu written" \
		"$(stat_field "$TMP/stat.txt" $cpu written)" $M
	expect_eq "stat cpu $cpu unplaced" \
		"$(stat_field "$TMP/stat.txt" $cpu unplaced)" 0
done
echo "stat: $CPUS CPUs listed"
