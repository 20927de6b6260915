#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Bad command lines exit 2 with a message naming the problem; operational
# failures exit 1 with a message saying what was wrong; --help exits 0.
. "$(dirname "$0")/lib.sh"

# expect_exit STATUS PATTERN ARGS...
expect_exit() {
	local want=$1 pat=$2 rc
	shift 2
	"$HVTRACE" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ $rc -eq "$want" ] || fail "hvtrace $*: exit $rc, expected $want ($(cat "$TMP/err"))"
	grep -q -- "$pat" "$TMP/err" || fail "hvtrace $*: message lacks '$pat': $(cat "$TMP/err")"
}

expect_exit 2 "no AREA given" stream
expect_exit 2 "needs a value" stream "$AREA" --count
expect_exit 2 "bad --count 'x'" stream "$AREA" --count x
expect_exit 2 "bad --timeout" stream "$AREA" --timeout -1
expect_exit 2 "not both" stream "$AREA" --kernel
expect_exit 2 "unknown option '--bogus'" stream --bogus
expect_exit 2 "goes with --kernel" stream "$AREA" --instance foo
expect_exit 2 "contradict" stream "$AREA" --drain --follow
expect_exit 2 "unexpected argument" stream "$AREA" extra
expect_exit 2 "no AREA given" stat
expect_exit 2 "unexpected argument" stat a b
expect_exit 2 "bad --cpu" stat "$AREA" --cpu -3
expect_exit 2 "--area FILE is required" loopback
expect_exit 2 "power of two" loopback --area "$AREA" --pages 3
expect_exit 2 "power of two" loopback --area "$AREA" --subbuf-size 5000
expect_exit 2 "consume or overwrite" loopback --area "$AREA" --mode sideways
expect_exit 2 "--cpus must be" loopback --area "$AREA" --cpus 0
expect_exit 2 "counter or mono" loopback --area "$AREA" --clock sundial
expect_exit 2 "unknown verb" no-such-verb

expect_exit 1 "cannot open /nonexistent/area" stream /nonexistent/area
expect_exit 1 "cannot open /nonexistent/area" stat /nonexistent/area
echo "not an area" >"$TMP/notarea"
expect_exit 1 "too small for a trace area" stream "$TMP/notarea"
expect_exit 1 "bad offset" stream "$AREA@12q"

# A writer never clobbers a file that is not an area ...
head -c 20000 /dev/urandom >"$TMP/data"
cp "$TMP/data" "$TMP/data.orig"
expect_exit 1 "is not an hvtrace area" loopback --area "$TMP/data" --events 1
cmp -s "$TMP/data" "$TMP/data.orig" || fail "the non-area file was modified"
# ... nor an area a live writer holds.
pid=$("$HVTRACE" loopback --area "$AREA" --rate 100 --background) ||
	fail "background writer did not start"
WRITERS=$pid
expect_exit 1 "in use by a live writer (pid $pid" loopback --area "$AREA" --events 1
kill "$pid"
wait_gone "$pid"
"$HVTRACE" loopback --area "$AREA" --events 1 --quiet ||
	fail "could not reuse the area after its writer stopped"

for verb in stream stat loopback; do
	"$HVTRACE" $verb --help >"$TMP/help" 2>&1 || fail "$verb --help failed"
	grep -q "^usage: hvtrace $verb" "$TMP/help" || fail "$verb --help text"
done
"$HVTRACE" --help | grep -q "stream" || fail "hvtrace --help lacks stream"
echo "ok: usage errors exit 2, failures exit 1, help exits 0"
