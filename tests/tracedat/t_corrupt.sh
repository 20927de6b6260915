#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Corrupt writer data costs errors, not a bad file:
#   - events of an id the writer's formats do not describe: recorded as
#     hvtrace:unknown_event (so they still count, in place) and reported;
#   - a finished page damaged before the recorder reads it (an event header
#     whose length runs past the page): record reports the malformed data,
#     the file stays valid, and the damaged page's events show up as a loss
#     of exactly their number, with everything else intact;
#   - a file that is not an area at all: record refuses it with a message
#     and leaves no output file behind.
. "$(dirname "$0")/lib.sh"
need_tools

area A corrupt
"$WRITER" --area "$A" --cpus 2 --subbufs 8 --mode consume --kind hyp \
	--clock mono --name bad --log "$T/w.log" -- \
	wait-control write 50 unknown 1 5 wait-consumed sigstop @"$T/rec.pid" \
	write 400 corrupt 0 sigcont @"$T/rec.pid" wait-consumed write 50 stop \
	>"$T/w.out" 2>&1 &
WP=$!
BGPIDS+=("$WP")
wait_ready "$T/w.log"
"$HVTRACE" record -o "$T/x.dat" "$A" >"$T/rec.out" 2>"$T/rec.err" &
RP=$!
BGPIDS+=("$RP")
echo "$RP" >"$T/rec.pid"
wait_pid "$WP" 60 || fail "writer failed: $(cat "$T/w.out")"
wait_pid "$RP" 30 || fail "record failed on corrupt data: $(cat "$T/rec.err")"
grep -q '^C 0' "$T/w.log" || fail "the writer did not corrupt a page"
grep -q 'malformed' "$T/rec.err" ||
	fail "record did not report the malformed page: $(cat "$T/rec.err")"
grep -q '5 event(s) of ids with no known format' "$T/rec.err" ||
	fail "record did not report the 5 unknown events: $(cat "$T/rec.err")"

trace-cmd report "$T/x.dat" >"$T/report.txt" 2>"$T/report.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/report.err")"
# Missing events only where a loss line says exactly how many.
check_buffer "$T/w.log" "$T/report.txt" bad overwrite >"$T/check.txt"
cat "$T/check.txt"
lost0=$(awk '$2 == 0 { print $6 }' "$T/check.txt")
lost1=$(awk '$2 == 1 { print $6 }' "$T/check.txt")
[ "$lost0" -gt 0 ] || fail "cpu 0: the damaged page's events are not reported lost"
[ "$lost1" -eq 0 ] || fail "cpu 1 was not damaged but lost $lost1"
same_report "$T/x.dat"

# Not an area: random bytes.
area G garbage
head -c 65536 /dev/urandom >"$G"
"$HVTRACE" record -o "$T/g.dat" "$G" >/dev/null 2>"$T/g.err" &&
	fail "record accepted a file that is not an area"
[ -s "$T/g.err" ] || fail "no error message for a file that is not an area"
[ -e "$T/g.dat" ] && fail "a failed record left an output file"
echo "record said: $(head -1 "$T/g.err")"
echo PASS
