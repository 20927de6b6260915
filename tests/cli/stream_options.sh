#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream options: --count prints exactly that many events,
# --cpu only that CPU's events (all of them), --timeout ends a stream that
# would otherwise wait for ever (--follow), --read-only leaves the
# consumer position alone so a later reader sees everything again.
. "$(dirname "$0")/lib.sh"

N=5000
"$HVTRACE" loopback --area "$AREA" --cpus 2 --events $N --pages 256 \
	--quiet || fail "loopback writer failed"

"$HVTRACE" stream "$AREA" --read-only --drain --count 123 >"$TMP/count.txt" ||
	fail "--count run failed"
expect_eq "--count 123 lines" "$(wc -l <"$TMP/count.txt")" 123
lines_well_formed "$TMP/count.txt"

"$HVTRACE" stream "$AREA" --read-only --drain --cpu 1 >"$TMP/cpu1.txt" ||
	fail "--cpu run failed"
ids_exact "$TMP/cpu1.txt" 1 $N || fail "--cpu 1 ids"
expect_eq "--cpu 1 lines" "$(wc -l <"$TMP/cpu1.txt")" $N
grep -q '\[000\]' "$TMP/cpu1.txt" && fail "--cpu 1 printed CPU 0 events"

"$HVTRACE" stream "$AREA" --read-only --follow --timeout 0.3 >"$TMP/to.txt"
rc=$?
expect_eq "--timeout exit status" $rc 0
expect_eq "--follow --timeout lines" "$(wc -l <"$TMP/to.txt")" $((2 * N))

"$HVTRACE" stream "$AREA" --cpu 2 >/dev/null 2>"$TMP/err.txt"
expect_eq "--cpu 2 on a 2-CPU area" $? 2
grep -q "has CPUs 0..1" "$TMP/err.txt" || fail "message: $(cat "$TMP/err.txt")"
echo "ok: --count, --cpu, --timeout, --read-only"
