#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace report reads files it did not write: trace-cmd converts one of
# ours to file version 6 (one section layout older) and to a compressed
# version 7.  The v6 file must print exactly as trace-cmd prints it; the
# compressed one must be refused with a message that says how to convert
# it (hvtrace reads uncompressed files); a truncated file and a file that
# is not a trace.dat are refused, not misread.
. "$(dirname "$0")/lib.sh"
need_tools

area A ver
"$WRITER" --area "$A" --cpus 2 --subbufs 8 --mode consume --kind hyp \
	--clock mono --name ver --log "$T/w.log" -- \
	wait-control write 300 stop >"$T/w.out" 2>&1 &
WP=$!
BGPIDS+=("$WP")
wait_ready "$T/w.log"
"$HVTRACE" record -o "$T/v7.dat" "$A" >"$T/rec.out" 2>"$T/rec.err" ||
	fail "record failed: $(cat "$T/rec.err")"
wait_pid "$WP" 30

trace-cmd convert --file-version 6 --compression none -i "$T/v7.dat" \
	-o "$T/v6.dat" >"$T/conv.out" 2>&1 ||
	fail "trace-cmd convert to v6 failed: $(tail -3 "$T/conv.out")"
head -c 12 "$T/v6.dat" | tail -c 2 | od -An -c | grep -q '6  \\0' ||
	fail "the converted file is not version 6"
trace-cmd report "$T/v6.dat" >"$T/r6.txt" 2>/dev/null
check_buffer "$T/w.log" "$T/r6.txt" ver exact
same_report "$T/v6.dat"

if trace-cmd convert --compression any -i "$T/v7.dat" -o "$T/z.dat" \
	>"$T/convz.out" 2>&1; then
	"$HVTRACE" report "$T/z.dat" >/dev/null 2>"$T/z.err" &&
		fail "hvtrace report printed a compressed file"
	grep -q 'compressed' "$T/z.err" && grep -q 'trace-cmd convert' "$T/z.err" ||
		fail "unclear message for a compressed file: $(cat "$T/z.err")"
else
	echo "note: this trace-cmd cannot compress; that part was not run"
fi

size=$(stat -c %s "$T/v7.dat")
head -c $((size - 5000)) "$T/v7.dat" >"$T/cut.dat"
"$HVTRACE" report "$T/cut.dat" >/dev/null 2>"$T/cut.err" &&
	fail "hvtrace report printed a truncated file"
[ -s "$T/cut.err" ] || fail "no message for a truncated file"
head -c 4096 /dev/urandom >"$T/rand.dat"
"$HVTRACE" report "$T/rand.dat" >/dev/null 2>"$T/rand.err" &&
	fail "hvtrace report accepted random bytes"
grep -q 'not a trace.dat' "$T/rand.err" ||
	fail "unclear message for random bytes: $(cat "$T/rand.err")"
echo PASS
