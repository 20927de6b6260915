#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Areas attached to hvtraced by name (loopback writers here; the
# hypervisor in hyp_remote.sh), read with the CLI by name:
#   daemon attach --area: status, retries until the file is there
#   events status/enable/disable --remote NAME: the writer obeys
#   stream NAME: every id exactly once, ends by itself once the writer
#     stopped; --drain; --count
#   stat NAME: the daemon reader's counters
#   record -o FILE NAME: trace-cmd report shows every record; -e
#     enables for the recording only
#   usage errors: a name next to an area path, --read-only with a name
. "$(dirname "$0")/lib.sh"
fz_daemon

# Attach before the file exists: retried until it does.
AREA=/dev/shm/hvt-fz-$$-late
SHM_FILES="$SHM_FILES $AREA"
out=$("$HVTRACE" daemon attach --area "$AREA" --name late) ||
	fail "attach of a missing file should be accepted and retried"
echo "$out" | grep -q "retrying" || fail "attach said: $out"
"$HVTRACE" daemon status | grep -q "^[0-9]* *late *waiting *area " ||
	fail "status: $("$HVTRACE" daemon status)"
"$HVTRACE" loopback --area "$AREA" --cpus 1 --events 100 --wait-enable \
	--background --log "$TMP/late.log" >/dev/null || fail "late writer"
wait_for 5 grep -q "remote 'late': writer stopped" "$TMP/d.log" ||
	fail "the late area was not attached"
"$HVTRACE" stream late --drain >"$TMP/late.txt" || fail "stream late"
ids_exact "$TMP/late.txt" 0 100 || fail "late ids"
echo "attach --area: retried until the writer formatted the file"

# Events by name: a disabled event is not written.
fz_loopback a --cpus 2 --rate 2000 --events 100000000 --pages 256 --wait-enable
fz_attach a "$LB_AREA"
"$HVTRACE" events status --remote a | grep -q "^hvtrace/selftest # Used by ftrace$" ||
	fail "status: $("$HVTRACE" events status --remote a)"
"$HVTRACE" events disable selftest --remote a || fail "disable"
"$HVTRACE" events status --remote a | grep -q "^hvtrace/selftest$" ||
	fail "status after disable: $("$HVTRACE" events status --remote a)"
expect_errno "has no event" "$HVTRACE" events enable nosuch --remote a
expect_errno "no user events" "$HVTRACE" events define 'u:x u32 y' --remote a
sleep 0.5
n1=$(awk '/^total:/ { print $2 }' "$TMP/lb-a.log")
"$HVTRACE" stat a | grep -q "^written: " || fail "stat a"
w1=$("$HVTRACE" stat a --cpu 0 | awk '/^written:/ { print $2 }')
sleep 0.5
w2=$("$HVTRACE" stat a --cpu 0 | awk '/^written:/ { print $2 }')
expect_eq "events written while disabled" "$w2" "$w1"
"$HVTRACE" events enable 'hvtrace/*' --remote a || fail "enable by glob"
sleep 0.5
w3=$("$HVTRACE" stat a --cpu 0 | awk '/^written:/ { print $2 }')
[ "$w3" -gt "$w2" ] || fail "nothing written after enabling ($w2 -> $w3)"
kill "$LB_PID"
wait_for 10 grep -q "remote 'a': writer stopped" "$TMP/d.log" ||
	fail "writer a did not stop"
echo "events: disabled means not written, enable by glob"

# stream by name: exact, ends by itself.
N=30000
fz_loopback b --cpus 2 --events $N --rate 30000 --pages 512 --wait-enable
fz_attach b "$LB_AREA"
timeout 60 "$HVTRACE" stream b --summary >"$TMP/b.txt" 2>"$TMP/b.err"
expect_eq "stream b status" $? 0
for cpu in 0 1; do
	ids_exact "$TMP/b.txt" $cpu $N || fail "stream b ids, cpu $cpu"
	expect_eq "writer b cpu $cpu" "$(writer_field "$TMP/lb-b.log" $cpu written)" $N
done
grep -q "b: $((2 * N)) events, 0 lost" "$TMP/b.err" || fail "summary: $(cat "$TMP/b.err")"
# Time order across CPUs (the reorder window).
awk '/selftest:/ { t = $4; sub(":", "", t); if (t + 0 < prev) { print NR; exit 1 } prev = t + 0 }' \
	"$TMP/b.txt" || fail "stream b goes back in time"
echo "stream by name: $((2 * N)) records exact, in time order, ends by itself"

# stat by name after the stream consumed everything.
"$HVTRACE" stat b --cpu 1 >"$TMP/b.stat" || fail "stat b"
expect_eq "stat read events" "$(awk '/^read events:/ { print $3 }' "$TMP/b.stat")" $N
expect_eq "stat entries" "$(awk '/^entries:/ { print $2 }' "$TMP/b.stat")" 0
grep -q "^transport: area$" "$TMP/b.stat" || fail "stat header: $(head "$TMP/b.stat")"

# --count and --drain (a reader takes whole pages from hvtraced: what
# --count leaves of them is consumed, as with head on trace_pipe).
fz_loopback c --cpus 1 --events 5000 --pages 256 --wait-enable
fz_attach c "$LB_AREA"
wait_for 10 grep -q "remote 'c': writer stopped" "$TMP/d.log" || fail "writer c"
expect_eq "stream --count" "$("$HVTRACE" stream c --count 100 | wc -l)" 100
fz_loopback c2 --cpus 2 --events 5000 --pages 256 --wait-enable
fz_attach c2 "$LB_AREA"
wait_for 10 grep -q "remote 'c2': writer stopped" "$TMP/d.log" || fail "writer c2"
"$HVTRACE" stream c2 --drain >"$TMP/c2.txt" || fail "stream --drain"
for cpu in 0 1; do
	ids_exact "$TMP/c2.txt" $cpu 5000 || fail "stream --drain ids, cpu $cpu"
done
echo "stream --count, --drain"

# record by name.
fz_loopback d --cpus 2 --events 20000 --rate 20000 --pages 512 --wait-enable
fz_attach d "$LB_AREA"
"$HVTRACE" events disable '*' --remote d || fail "disable all on d"
timeout 60 "$HVTRACE" record -o "$TMP/d.dat" -e 'hvtrace:*' d || fail "record d"
"$HVTRACE" events status --remote d | grep -q "^hvtrace/selftest$" ||
	fail "record did not put the enable state back"
if command -v trace-cmd >/dev/null; then
	trace-cmd report "$TMP/d.dat" >"$TMP/d.rep" 2>/dev/null || fail "trace-cmd report"
	for cpu in 0 1; do
		n=$(awk -v t="[00$cpu]" '$3 == t && /selftest:/' "$TMP/d.rep" | wc -l)
		expect_eq "trace-cmd report cpu $cpu" "$n" 20000
	done
	awk '/selftest:/ { split($NF, a, "="); c = $3; if (a[2] != want[c] + 0) { print; exit 1 } want[c]++ }' \
		"$TMP/d.rep" || fail "trace-cmd report ids"
	echo "record by name: trace-cmd report shows 40000 records, ids in order"
else
	"$HVTRACE" report "$TMP/d.dat" >"$TMP/d.rep" || fail "hvtrace report"
	expect_eq "hvtrace report" "$(grep -c selftest: "$TMP/d.rep")" 40000
fi

# Usage errors.
"$HVTRACE" record -o "$TMP/x.dat" d "$LB_AREA" 2>/dev/null
expect_eq "record NAME AREA" $? 2
"$HVTRACE" stream d --read-only 2>/dev/null
expect_eq "stream NAME --read-only" $? 2
"$HVTRACE" daemon attach --area "$LB_AREA" --name 'bad/name' 2>/dev/null
expect_eq "attach with a bad name" $? 2
"$HVTRACE" stream nosuch 2>"$TMP/err"
expect_eq "stream of an unknown name" $? 1
grep -q "no remote named 'nosuch'" "$TMP/err" || fail "unknown name: $(cat "$TMP/err")"
echo "usage errors: exit 2; unknown remote: exit 1 with the list"
exit 0
