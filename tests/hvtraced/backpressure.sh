#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Reading a remote through hvtraced loses nothing that the area kept, and
# shows every loss at the CPU where it happened.
#
# 1. Pre-filled: a loopback writer fills a 2-CPU consume-mode area with N
#    events per CPU and stops; the area is attached to a private hvtraced
#    whose tool queue is the smallest it takes (--client-queue 64K), so the
#    daemon must wait for the tool again and again.  'hvtrace stream NAME
#    --drain --summary' must print every id of both CPUs in order, no
#    LOST line, and a summary of N events and 0 lost for each CPU.
# 2. A forced loss: a writer keeps writing M events per CPU into a ring of
#    8 sub-buffers while the stream's output goes to a reader that sleeps
#    before it reads.  The daemon leaves the pages in the area, so the
#    writer drops (consume mode) and the area counts it.  For each CPU
#    the printed ids must run on without a gap once the
#    'CPU:N [LOST n EVENTS]' lines of that CPU are added in where they
#    stand, read + lost must be M, and some loss must be shown; the
#    summary must agree.
set -u

# The CLI tests' helpers (ids_exact, ids_with_losses, stat_field) first:
# the daemon helpers' exit trap, which stops the daemon, must be the one
# in force.
. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" backpressure
hvt_need_bins
N=${HVT_BP_EVENTS:-100000}
M=20000
AREA1=/dev/shm/hvt-bp1-$$
AREA2=/dev/shm/hvt-bp2-$$
RM_ALWAYS="$AREA1 $AREA2 $TMP $AREA"

"$OBJ/bin/hvtraced" --foreground --socket "$HVTRACED_SOCKET" \
	--run-dir "$T/run" --shm-dir /dev/shm --client-queue 64K \
	>"$T/hvtraced.log" 2>&1 &
DPID=$!
hvt_listening

# summary_of FILE CPU: "EVENTS LOST" from the --summary line of CPU.
summary_of() {
	sed -n "s/^  cpu $2: \([0-9]*\) events, \([0-9]*\) lost.*/\1 \2/p" "$1"
}

# --- 1. pre-filled ----------------------------------------------------------
"$H" loopback --area "$AREA1" --cpus 2 --events "$N" --pages 4096 \
	--mode consume --quiet || fail "loopback writer failed"
"$H" daemon attach --area "$AREA1" --name bp1 >"$T/attach1.txt" 2>&1 ||
	fail "attach: $(cat "$T/attach1.txt")"
timeout 300 "$H" stream bp1 --drain --summary >"$T/s1.txt" 2>"$T/s1.err" ||
	fail "stream bp1 failed: $(tail -n 3 "$T/s1.err")"
for cpu in 0 1; do
	ids_exact "$T/s1.txt" $cpu "$N" ||
		fail "cpu $cpu of the pre-filled area through hvtraced"
	expect_eq "summary of cpu $cpu" "$(summary_of "$T/s1.err" $cpu)" \
		"$N 0"
done
echo "pre-filled: both CPUs' $N events, in order, 0 lost"

# --- 2. a forced loss -------------------------------------------------------
"$H" loopback --area "$AREA2" --cpus 2 --events "$M" --pages 8 \
	--subbuf-size 4096 --mode consume --rate 20000 --background \
	>"$T/writer.txt" 2>&1 || fail "background writer failed"
PIDS="$PIDS $(tail -n 1 "$T/writer.txt")"
"$H" daemon attach --area "$AREA2" --name bp2 >"$T/attach2.txt" 2>&1 ||
	fail "attach: $(cat "$T/attach2.txt")"
# The reader of the stream's output sleeps first: the pipe fills, the
# stream stops taking pages, hvtraced stops reading the area.
timeout 120 "$H" stream bp2 --summary 2>"$T/s2.err" |
	{ sleep 3; cat >"$T/s2.txt"; }
[ "${PIPESTATUS[0]}" = 0 ] || fail "stream bp2 failed: $(tail -n 3 "$T/s2.err")"
total_lost=0
for cpu in 0 1; do
	got=$(ids_with_losses "$T/s2.txt" $cpu) ||
		fail "cpu $cpu: $got (a loss not shown where it happened)"
	read -r n lost <<<"$got"
	echo "cpu $cpu: $n read + $lost lost (LOST lines)"
	expect_eq "cpu $cpu read + lost" $((n + lost)) $M
	expect_eq "summary of cpu $cpu" "$(summary_of "$T/s2.err" $cpu)" \
		"$n $lost"
	total_lost=$((total_lost + lost))
done
[ "$total_lost" -gt 0 ] ||
	fail "the stalled reader lost nothing: the test forced no loss"
"$H" stat "$AREA2" >"$T/stat2.txt" || fail "stat failed"
for cpu in 0 1; do
	dropped=$(stat_field "$T/stat2.txt" $cpu "dropped events")
	echo "cpu $cpu: the writer dropped $dropped"
done
echo "PASS"
