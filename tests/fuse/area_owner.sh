#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One owner per area.  An owner (hvtrace stream AREA, record AREA, the
# FUSE view of an area, hvtraced) writes the area's control page: enable
# bits, consumer progress, time-sync requests.  While one lives:
#   1. a second owner (stream, record) is refused, and the message names
#      the holder (pid and program) and says to use --read-only;
#   2. read-only readers (stream --read-only, stat --read-only, record
#      --read-only) read everything and never write: the control page,
#      marked with a pattern no owner would write, is byte for byte the
#      same afterwards;
#   3. once the owner is SIGKILLed, a new owner gets the area with no
#      manual step, and it does write (the pattern is gone: the check in
#      2 sees writes);
#   4. an area hvtraced owns is refused to 'hvtrace stream FILE' with a
#      message naming hvtraced, the refused stream leaves the page alone,
#      and a read-only stream of the file still works.
. "$(dirname "$0")/lib.sh"

CTRL=4096	# HVT_CONTROL_OFFSET: the control page's offset in an area

ctrl_page() {
	dd if="$1" of="$2" bs=4096 skip=$((CTRL / 4096)) count=1 status=none
}

# mark_ctrl AREA: 64 bytes of 0xa5 in the control page's reserved bytes
# (0x400) and in its enable bitmap (0x800).  An owner that takes the page
# zeroes the first and rewrites the second.
mark_ctrl() {
	local off
	for off in 0x400 0x800; do
		head -c 64 /dev/zero | tr '\0' '\245' |
			dd of="$1" bs=1 seek=$((CTRL + off)) conv=notrunc \
				status=none || fail "cannot mark $1"
	done
}

marked() {
	[ "$(dd if="$1" bs=1 skip=$((CTRL + 0x400)) count=64 status=none |
		od -v -An -tx1 | tr -d ' \n')" = "$(printf 'a5%.0s' $(seq 64))" ]
}

# wait_stable AREA: the control page stays the same for 1.5 s (the owner
# is idle: its writer stopped and its time-sync gave up).
wait_stable() {
	local i
	ctrl_page "$1" "$TMP/s0"
	for i in $(seq 1 20); do
		sleep 1.5
		ctrl_page "$1" "$TMP/s1"
		cmp -s "$TMP/s0" "$TMP/s1" && return 0
		mv "$TMP/s1" "$TMP/s0"
	done
	fail "the owner keeps writing the control page of an idle area"
}

# --- 1. two owners --------------------------------------------------------
fz_loopback own --cpus 2 --pages 64 --rate 2000 --duration 60
"$HVTRACE" stream "$LB_AREA" --follow --timeout 120 >"$TMP/a.txt" \
	2>"$TMP/a.err" &
A_PID=$!
PIDS="$PIDS $A_PID"
wait_for 20 test -s "$TMP/a.txt" || fail "the first owner printed nothing"

"$HVTRACE" stream "$LB_AREA" --count 1 >"$TMP/b.txt" 2>"$TMP/b.err"
expect_eq "second owner's stream exit status" $? 1
[ -s "$TMP/b.txt" ] && fail "the refused stream printed events"
grep -q "owned by pid $A_PID (hvtrace)" "$TMP/b.err" ||
	fail "the refusal does not name pid $A_PID (hvtrace): $(cat "$TMP/b.err")"
grep -q -- "--read-only" "$TMP/b.err" ||
	fail "the refusal does not point at --read-only: $(cat "$TMP/b.err")"
echo "second stream refused: $(cat "$TMP/b.err")"

"$HVTRACE" record -q -o "$TMP/r.dat" -d 1 "$LB_AREA" 2>"$TMP/r.err" &&
	fail "a second owner's record succeeded"
grep -q "owned by pid $A_PID (hvtrace)" "$TMP/r.err" ||
	fail "record's refusal does not name the owner: $(cat "$TMP/r.err")"
running "$A_PID" || fail "the first owner died: $(cat "$TMP/a.err")"

# --- 2. read-only readers beside the owner never write --------------------
kill -INT "$LB_PID"
for _ in $(seq 1 200); do
	running "$LB_PID" || break
	sleep 0.05
done
running "$LB_PID" && fail "the loopback writer did not stop on SIGINT"
wait_stable "$LB_AREA"
mark_ctrl "$LB_AREA"
ctrl_page "$LB_AREA" "$TMP/before"
"$HVTRACE" stream "$LB_AREA" --read-only --drain >"$TMP/ro.txt" \
	2>"$TMP/ro.err" || fail "read-only stream failed: $(cat "$TMP/ro.err")"
"$HVTRACE" stat "$LB_AREA" --read-only >"$TMP/stat.txt" ||
	fail "stat --read-only failed"
"$HVTRACE" record -q -o "$TMP/ro.dat" -d 1 --read-only "$LB_AREA" \
	2>"$TMP/rr.err" || fail "record --read-only failed: $(cat "$TMP/rr.err")"
ctrl_page "$LB_AREA" "$TMP/after"
cmp "$TMP/before" "$TMP/after" ||
	fail "a read-only reader changed the control page"
n=$(grep -c 'selftest: id=' "$TMP/ro.txt")
[ "$n" -gt 0 ] || fail "the read-only stream read nothing"
running "$A_PID" || fail "the owner died beside the read-only readers"
echo "read-only stream ($n events), stat and record left the control page as it was"

# --- 3. the owner dies; a new owner takes the area ------------------------
{ kill -9 "$A_PID"; wait "$A_PID"; } 2>/dev/null
for _ in $(seq 1 200); do
	running "$A_PID" || break
	sleep 0.05
done
"$HVTRACE" stream "$LB_AREA" --drain >"$TMP/pm.txt" 2>"$TMP/pm.err" ||
	fail "no new owner after the first died: $(cat "$TMP/pm.err")"
marked "$LB_AREA" && fail "the new owner did not take the control page"
[ "$(grep -c 'selftest: id=' "$TMP/pm.txt")" -gt 0 ] ||
	fail "the new owner read nothing"
echo "owner SIGKILLed: the next owner took the area"

# --- 4. an area hvtraced owns ---------------------------------------------
fz_daemon --sync-interval 0
fz_loopback dmn --cpus 2 --pages 16 --rate 500 --duration 60
fz_attach lbd "$LB_AREA"
wait_for 20 "$HVTRACE" stat lbd >/dev/null ||
	fail "hvtraced did not attach the area"
mark_ctrl "$LB_AREA"
"$HVTRACE" stream "$LB_AREA" --count 1 >"$TMP/d.txt" 2>"$TMP/d.err"
expect_eq "stream of an area hvtraced owns" $? 1
grep -q "owned by hvtraced (pid $D_PID)" "$TMP/d.err" ||
	fail "the refusal does not name hvtraced (pid $D_PID): $(cat "$TMP/d.err")"
grep -q "hvtrace stream NAME" "$TMP/d.err" ||
	fail "the refusal does not say how to read it: $(cat "$TMP/d.err")"
marked "$LB_AREA" || fail "the refused stream wrote the control page"
"$HVTRACE" stream "$LB_AREA" --read-only --count 1 --timeout 20 \
	>"$TMP/dro.txt" || fail "a read-only stream beside hvtraced failed"
grep -q 'selftest: id=' "$TMP/dro.txt" ||
	fail "the read-only stream beside hvtraced read nothing"
"$HVTRACE" stream lbd --count 1 --timeout 20 >"$TMP/dn.txt" ||
	fail "stream through hvtraced failed"
grep -q 'selftest: id=' "$TMP/dn.txt" || fail "stream lbd read nothing"
echo "hvtraced's area refused to stream FILE: $(cat "$TMP/d.err")"
echo "ok: one owner per area"
