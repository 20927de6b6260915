#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream NAME --kernel: a remote of hvtraced (a loopback writer)
# and the host kernel on one timeline:
#   - the markers written to the stream's instance's trace_marker while
#     the writer runs are all there, exactly once, in order, with the
#     "host: " prefix; the writer's events are there without it; every
#     line is in time order (both on host CLOCK_MONOTONIC: the instance's
#     mono trace clock, the daemon's clock model of the area); the
#     stream ends by itself once the writer stopped, and the instance it
#     created is gone;
#   - an instance that was there before: -e enables a host event there
#     (its lines show up), and at exit its trace clock and the event's
#     enable are put back and the instance kept;
#   - nothing lost silently: with the stream stopped (SIGSTOP) and a tiny
#     instance buffer, 3000 host markers overflow it; the markers printed
#     plus the "host: CPU:N [LOST n EVENTS]" counts are exactly 3000, the
#     printed ones in order;
#   - -e that matches nothing, -e without --kernel, --cpu with --kernel:
#     errors that change nothing.
. "$(dirname "$0")/lib.sh"

TRACEFS=/sys/kernel/tracing
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: reading the host kernel needs root"
	exit 77
fi
if [ ! -w $TRACEFS/instances ]; then
	echo "SKIP: no writable tracefs at $TRACEFS"
	exit 77
fi
INST=hvt-sk-$$
INST2=hvt-sk2-$$
INST3=hvt-sk3-$$
sk_cleanup() {
	fz_cleanup
	[ -d $TRACEFS/instances/$INST ] && rmdir $TRACEFS/instances/$INST
	[ -d $TRACEFS/instances/$INST2 ] && rmdir $TRACEFS/instances/$INST2
	[ -d $TRACEFS/instances/$INST3 ] && rmdir $TRACEFS/instances/$INST3
}
trap sk_cleanup EXIT

fz_daemon
fz_loopback a --cpus 2 --rate 2000 --events 100000000 --pages 256 --wait-enable
fz_attach a "$LB_AREA"

"$HVTRACE" stream a --kernel --instance $INST -e ftrace:print --window 1000 \
	--summary >"$TMP/a.txt" 2>"$TMP/a.err" &
S_PID=$!
PIDS="$PIDS $S_PID"
wait_for 20 grep -q "the host kernel's events (instance $INST" "$TMP/a.err" ||
	fail "stream --kernel did not start: $(cat "$TMP/a.err")"
grep -q "\[mono\]" $TRACEFS/instances/$INST/trace_clock ||
	fail "instance clock: $(cat $TRACEFS/instances/$INST/trace_clock)"
M=40
for ((i = 0; i < M; i++)); do
	echo "hvt-sk $i" >$TRACEFS/instances/$INST/trace_marker ||
		fail "cannot write marker $i"
	sleep 0.02
done
sleep 0.3
kill "$LB_PID"
for ((i = 0; i < 600; i++)); do
	running "$S_PID" || break
	sleep 0.05
done
running "$S_PID" && fail "stream did not end after the writer stopped"
wait "$S_PID"
expect_eq "stream a --kernel status" $? 0
cat "$TMP/a.err"
awk -v m=$M '
	/hvt-sk [0-9]+$/ {
		if ($1 != "host:") { print "no host: prefix: " $0; bad = 1; exit }
		if ($NF != want) { print "marker " $NF ", expected " want; bad = 1; exit }
		want++
	}
	END { if (!bad && want != m) { print want " markers, expected " m; bad = 1 }
	      exit bad }' "$TMP/a.txt" || fail "host markers"
grep -q "^host: .*\[LOST\|^host: CPU:" "$TMP/a.txt" && fail "host events lost"
grep -q "LOST" "$TMP/a.txt" && fail "events lost: $(grep LOST "$TMP/a.txt" | head -3)"
nu=$(grep -c " selftest: " "$TMP/a.txt")
[ "$nu" -gt 0 ] || fail "no events of the writer: $(head -3 "$TMP/a.txt")"
grep -q "^host: .* selftest: " "$TMP/a.txt" && fail "a writer event with the host prefix"
# Time order over every line, and the writer's events between markers.
verdict=$(awk '
	{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i + 0; break }
	  if (ts < last) { print "line " NR " goes back in time"; exit } last = ts }
	/hvt-sk [0-9]+$/ { if (u) gaps++; u = 0; next }
	/ selftest: / { u = 1 }
	END { print "ok " gaps + 0 }' "$TMP/a.txt")
case $verdict in
ok*) ;;
*) fail "stream a --kernel: $verdict" ;;
esac
[ "${verdict#ok }" -gt 0 ] || fail "no writer event between two host markers"
grep -q "^  host kernel cpu 0: " "$TMP/a.err" || fail "summary: $(cat "$TMP/a.err")"
[ -d $TRACEFS/instances/$INST ] && fail "instance $INST left behind"
echo "stream NAME --kernel: $M host markers and $nu writer events on one" \
	"timeline (${verdict#ok } markers follow writer events), instance removed"

# An instance that was there: put back as it was.
mkdir $TRACEFS/instances/$INST2 || fail "cannot make instance $INST2"
echo local >$TRACEFS/instances/$INST2/trace_clock
echo 0 >$TRACEFS/instances/$INST2/events/sched/sched_switch/enable
fz_loopback b --cpus 1 --rate 1000 --events 100000000 --pages 64 --wait-enable
fz_attach b "$LB_AREA"
"$HVTRACE" stream b --kernel --instance $INST2 -e sched:sched_switch \
	--timeout 1 >"$TMP/b.txt" 2>"$TMP/b.err" || fail "stream b: $(cat "$TMP/b.err")"
grep -q "^host: .* sched_switch: prev_comm=" "$TMP/b.txt" ||
	fail "no host sched_switch: $(head -3 "$TMP/b.txt")"
[ -d $TRACEFS/instances/$INST2 ] || fail "instance $INST2 was removed"
grep -q "\[local\]" $TRACEFS/instances/$INST2/trace_clock ||
	fail "clock not put back: $(cat $TRACEFS/instances/$INST2/trace_clock)"
expect_eq "sched_switch enable put back" \
	"$(cat $TRACEFS/instances/$INST2/events/sched/sched_switch/enable)" 0
echo "an existing instance: host sched_switch shown, clock and enable put back"

# Losses: the host ring overflows while the stream is stopped.
mkdir $TRACEFS/instances/$INST3 || fail "cannot make instance $INST3"
echo 8 >$TRACEFS/instances/$INST3/buffer_size_kb
"$HVTRACE" stream b --kernel --instance $INST3 -e ftrace:print --summary \
	>"$TMP/c.txt" 2>"$TMP/c.err" &
S_PID=$!
PIDS="$PIDS $S_PID"
wait_for 20 grep -q "the host kernel's events (instance $INST3" "$TMP/c.err" ||
	fail "stream c did not start: $(cat "$TMP/c.err")"
kill -STOP "$S_PID"
W=3000
for ((i = 0; i < W; i++)); do
	echo "hvt-sl $i" >$TRACEFS/instances/$INST3/trace_marker ||
		fail "cannot write marker $i"
done
kill -CONT "$S_PID"
# Everything after the losses is printed once read: the last marker.
wait_for 30 grep -q "hvt-sl $((W - 1))\$" "$TMP/c.txt" ||
	fail "the last marker never came: $(tail -3 "$TMP/c.txt")"
kill -INT "$S_PID"
wait "$S_PID"
expect_eq "stream c status" $? 0
verdict=$(awk -v w=$W '
	/^host: CPU:[0-9]+ \[LOST [0-9]+ EVENTS\]$/ { lost += $4; next }
	/^host: CPU:/ { print "a loss with no count: " $0; bad = 1; exit }
	/hvt-sl [0-9]+$/ { if (n && $NF <= last) { print "marker " $NF " after " last; bad = 1; exit }
		last = $NF; n++ }
	END { if (!bad) print n + lost, lost }' "$TMP/c.txt")
case $verdict in
"$W 0") fail "no host event was lost: the step checks nothing (buffer_size_kb?)" ;;
"$W "*) ;;
*) fail "host markers printed + lost: $verdict, expected $W" ;;
esac
grep -q "host kernel cpu [0-9]*: [0-9]* events, [1-9][0-9]* lost" "$TMP/c.err" ||
	fail "summary: $(cat "$TMP/c.err")"
echo "losses: $W host markers written, printed + lost = $W (${verdict#* } lost)"

# Errors.
expect_errno "no kernel event matches 'no_such_event_xyz'" \
	"$HVTRACE" stream b --kernel --instance $INST -e no_such_event_xyz
[ -d $TRACEFS/instances/$INST ] && fail "instance $INST left after an error"
expect_errno "-e goes with a remote NAME and --kernel" "$HVTRACE" stream b -e sched
expect_errno "not with NAME --kernel" "$HVTRACE" stream b --kernel --cpu 0
echo "PASS"
