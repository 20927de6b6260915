#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stat agrees with what the loopback writer says it wrote:
#   consume, ring large enough:  entries == committed == N, nothing dropped
#   consume, ring too small:     dropped == the writer's drops,
#                                committed == the writer's written
#   overwrite, ring too small:   entries + overrun == committed == N
#   after a stream consumed it:  read events + entries == committed
. "$(dirname "$0")/lib.sh"

N=10000
"$HVTRACE" loopback --area "$AREA" --cpus 2 --events $N --pages 256 \
	--quiet || fail "writer failed"
"$HVTRACE" stat "$AREA" >"$TMP/s1.txt" || fail "stat failed"
for cpu in 0 1; do
	expect_eq "committed $cpu" "$(stat_field "$TMP/s1.txt" $cpu committed)" $N
	expect_eq "entries $cpu" "$(stat_field "$TMP/s1.txt" $cpu entries)" $N
	expect_eq "written $cpu" "$(stat_field "$TMP/s1.txt" $cpu written)" $N
	expect_eq "dropped $cpu" "$(stat_field "$TMP/s1.txt" $cpu "dropped events")" 0
	expect_eq "overrun $cpu" "$(stat_field "$TMP/s1.txt" $cpu overrun)" 0
	expect_eq "read $cpu" "$(stat_field "$TMP/s1.txt" $cpu "read events")" 0
done
grep -q "loopback writer pid .*, stopped," "$TMP/s1.txt" ||
	fail "header: $(head -1 "$TMP/s1.txt")"
"$HVTRACE" stat "$AREA" --cpu 1 >"$TMP/s1b.txt" || fail "stat --cpu failed"
grep -q "^CPU 0:" "$TMP/s1b.txt" && fail "stat --cpu 1 printed CPU 0"
expect_eq "cpu 1 only" "$(stat_field "$TMP/s1b.txt" 1 committed)" $N

# Consume the whole area, then look again.
"$HVTRACE" stream "$AREA" >/dev/null || fail "stream failed"
"$HVTRACE" stat "$AREA" >"$TMP/s1c.txt" || fail "stat failed"
for cpu in 0 1; do
	r=$(stat_field "$TMP/s1c.txt" $cpu "read events")
	e=$(stat_field "$TMP/s1c.txt" $cpu entries)
	expect_eq "read + entries $cpu" $((r + e)) $N
	[ "$r" -gt 0 ] || fail "nothing counted as read on cpu $cpu"
done

rm -f "$AREA"
N=100000
"$HVTRACE" loopback --area "$AREA" --cpus 2 --events $N --pages 8 \
	2>"$TMP/w2.log" || fail "writer failed"
"$HVTRACE" stat "$AREA" >"$TMP/s2.txt" || fail "stat failed"
for cpu in 0 1; do
	expect_eq "dropped $cpu" "$(stat_field "$TMP/s2.txt" $cpu "dropped events")" \
		"$(writer_field "$TMP/w2.log" $cpu dropped)"
	expect_eq "committed $cpu" "$(stat_field "$TMP/s2.txt" $cpu committed)" \
		"$(writer_field "$TMP/w2.log" $cpu written)"
	expect_eq "written $cpu" "$(stat_field "$TMP/s2.txt" $cpu written)" $N
done

rm -f "$AREA"
"$HVTRACE" loopback --area "$AREA" --cpus 2 --events $N --pages 8 \
	--mode overwrite --quiet || fail "writer failed"
"$HVTRACE" stat "$AREA" >"$TMP/s3.txt" || fail "stat failed"
for cpu in 0 1; do
	e=$(stat_field "$TMP/s3.txt" $cpu entries)
	o=$(stat_field "$TMP/s3.txt" $cpu overrun)
	expect_eq "overwrite committed $cpu" "$(stat_field "$TMP/s3.txt" $cpu committed)" $N
	expect_eq "overwrite entries + overrun $cpu" $((e + o)) $N
	[ "$o" -gt 0 ] || fail "no overrun on cpu $cpu"
	expect_eq "overwrite dropped $cpu" "$(stat_field "$TMP/s3.txt" $cpu "dropped events")" 0
done
# What stat calls unread is exactly what a reader then gets.
"$HVTRACE" stream "$AREA" --drain --read-only >"$TMP/o.txt" || fail "stream failed"
for cpu in 0 1; do
	got=$(grep -c "\[00$cpu\]" "$TMP/o.txt")
	expect_eq "overwrite readable $cpu" $got "$(stat_field "$TMP/s3.txt" $cpu entries)"
done
echo "ok: stat matches the writer in consume and overwrite modes"
