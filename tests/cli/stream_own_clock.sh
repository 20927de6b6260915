#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream never passes a writer's own times off as the host's
# clock.  An area whose writer has stopped has no time sync: stream says
# once on stderr that its times are the writer's own (clock 'counter'),
# not the host's CLOCK_MONOTONIC, and why.  A live loopback writer read
# --read-only is on the host's clock through a clock model (its clock is
# read here): stderr states the model's error bound.  Through hvtraced,
# a remote with no clock model is said the same way, once (clock
# 'writer'), and 'stream NAME --kernel' refuses to merge it by time with
# the host kernel's events, naming --kernel as what to leave out,
# before it touches tracefs.
. "$(dirname "$0")/lib.sh"
HVTRACED=$(dirname "$HVTRACE")/hvtraced
[ -x "$HVTRACED" ] || fail "no hvtraced at $HVTRACED (build it first)"
N=200
name=$(basename "$AREA")

# --- a stopped writer, read directly -----------------------------------
"$HVTRACE" loopback --area "$AREA" --cpus 2 --events $N --pages 16 \
	--clock counter --quiet || fail "loopback writer failed"
"$HVTRACE" stream "$AREA" --drain >"$TMP/s.out" 2>"$TMP/s.err" ||
	fail "stream failed: $(cat "$TMP/s.err")"
expect_eq "events of the stopped writer" "$(wc -l <"$TMP/s.out")" $((2 * N))
[ "$(grep -c . "$TMP/s.err")" = 1 ] ||
	fail "stream of a stopped writer: not one line on stderr: $(cat "$TMP/s.err")"
grep -qx "hvtrace stream: '$name': times are the writer's own (clock 'counter'), not the host's CLOCK_MONOTONIC (its writer had stopped: no time sync)" "$TMP/s.err" ||
	fail "stream did not say the times are the writer's own: $(cat "$TMP/s.err")"
echo "ok: stopped writer: $(cat "$TMP/s.err")"

# --- a live writer, --read-only: on the host's clock, with its bound ----
LIVE=$AREA.live
"$HVTRACE" loopback --area "$LIVE" --cpus 1 --rate 1000 --duration 30 \
	--pages 16 --clock counter --quiet &
WRITERS="$!"
for i in $(seq 1 100); do
	"$HVTRACE" stat "$LIVE" >/dev/null 2>&1 && break
	sleep 0.05
done
"$HVTRACE" stream "$LIVE" --read-only --count 20 --timeout 10 \
	>"$TMP/l.out" 2>"$TMP/l.err" || fail "stream of the live writer failed: $(cat "$TMP/l.err")"
grep -Eqx "hvtrace stream: '$(basename "$LIVE")': times on the host's CLOCK_MONOTONIC through a clock model of the writer's clock \(error bound \+-[0-9]+\.[0-9]{3} us\)" "$TMP/l.err" ||
	fail "stream of a live writer did not state its bound: $(cat "$TMP/l.err")"
grep -q "writer's own" "$TMP/l.err" && fail "a live writer's times called its own: $(cat "$TMP/l.err")"
echo "ok: live writer: $(cat "$TMP/l.err")"

# --- the stopped writer through hvtraced --------------------------------
export HVTRACED_SOCKET=$TMP/hvtraced.sock
"$HVTRACED" --foreground --socket "$HVTRACED_SOCKET" --run-dir "$TMP/run" \
	--shm-dir /dev/shm >"$TMP/hvtraced.log" 2>&1 &
WRITERS="$WRITERS $!"
for i in $(seq 1 100); do
	[ -S "$HVTRACED_SOCKET" ] && break
	sleep 0.05
done
[ -S "$HVTRACED_SOCKET" ] || fail "hvtraced did not listen: $(cat "$TMP/hvtraced.log")"
"$HVTRACE" daemon attach --area "$AREA" --name oc >"$TMP/attach.out" 2>&1 ||
	fail "attach: $(cat "$TMP/attach.out")"
timeout 60 "$HVTRACE" stream oc --drain >"$TMP/r.out" 2>"$TMP/r.err" ||
	fail "stream oc failed: $(cat "$TMP/r.err")"
expect_eq "events through hvtraced" "$(wc -l <"$TMP/r.out")" $((2 * N))
[ "$(grep -c "writer's own" "$TMP/r.err")" = 1 ] ||
	fail "stream oc: not said once: $(cat "$TMP/r.err")"
grep -qx "hvtrace stream: 'oc': times are the writer's own (clock 'writer'), not the host's CLOCK_MONOTONIC (hvtraced has no clock model of it: no time sync)" "$TMP/r.err" ||
	fail "stream oc did not say the times are the writer's own: $(cat "$TMP/r.err")"
echo "ok: through hvtraced: $(cat "$TMP/r.err")"

timeout 60 "$HVTRACE" stream oc --kernel --drain >"$TMP/k.out" 2>"$TMP/k.err"
rc=$?
[ $rc = 1 ] || fail "stream oc --kernel: exit $rc, expected 1 ($(cat "$TMP/k.err"))"
[ -s "$TMP/k.out" ] && fail "stream oc --kernel printed events: $(head -3 "$TMP/k.out")"
grep -q "^hvtrace stream: 'oc': its times are the writer's own, not the host's CLOCK_MONOTONIC (hvtraced has no clock model of it: no time sync), so they cannot be merged by time with the host kernel's: leave out --kernel" "$TMP/k.err" ||
	fail "stream oc --kernel said: $(cat "$TMP/k.err")"
echo "ok: refused: $(cat "$TMP/k.err")"
echo PASS
