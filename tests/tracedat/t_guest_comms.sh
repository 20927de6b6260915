#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace record --guest-kernel: the trace.dat's saved_cmdlines holds the
# names the ring's own sched records give, one line per pid, the newest
# in time, so trace-cmd report prints them.  The RAM file is the real
# Debian 6.12 guest's ring of the kring_parse seed real-612-128k, the
# formats that guest's sched_switch and ftrace:print (the kmap seed
# guest-612-formats); its saved_cmdlines, made here, is stale:
#   1    init-table   the ring's sched_switch says "init": the ring wins
#   298  stale-298    the ring says "init" (forked by init), then "sh"
#                     after its exec: "sh", the newest
#   4000 not-in-ring  no record names it: kept
# and pids 289 and 291 (tar, gzip after their exec), which the table
# lacks, come from the ring alone.  Expected: exactly one "PID COMM" line
# per pid in the file; trace-cmd report prints the 300 markers of pid
# 298 as sh-298 and no line of a pid the ring named as <...>.
. "$(dirname "$0")/lib.sh"

command -v trace-cmd >/dev/null ||
	skip "trace-cmd is not installed (apt-get install trace-cmd)"
[ -x "$HVTRACE" ] || fail "$HVTRACE not built"
. "$SRC/tests/include/guest612_formats.sh"
# The formats folder, laid out like the guest's tracefs.
F=$T/fmt
guest612_formats "$F"
echo 1 >"$F/events/sched/enable"
echo 1 >"$F/events/ftrace/enable"
echo mono >"$F/trace_clock"
printf '1 init-table\n298 stale-298\n4000 not-in-ring\n' >"$F/saved_cmdlines"

cp "$SEED" "$T/guest.ram"
"$HVTRACE" record -q -o "$T/g.dat" --guest-kernel "$T/guest.ram" \
	--formats "$F" >"$T/rec.out" 2>"$T/rec.err" ||
	fail "record failed: $(cat "$T/rec.err")"

trace-cmd dump --cmd-lines "$T/g.dat" 2>/dev/null |
	grep -E '^[0-9]+ ' >"$T/cmdlines" ||
	fail "no saved_cmdlines in the file: $(trace-cmd dump --cmd-lines "$T/g.dat" 2>&1)"
line_of() { grep -E "^$1 " "$T/cmdlines"; }
[ "$(line_of 1)" = "1 init" ] || fail "pid 1: '$(line_of 1)' (want '1 init')"
[ "$(line_of 298)" = "298 sh" ] ||
	fail "pid 298: '$(line_of 298)' (want '298 sh', its newest name)"
[ "$(line_of 289)" = "289 tar" ] || fail "pid 289: '$(line_of 289)'"
[ "$(line_of 291)" = "291 gzip" ] || fail "pid 291: '$(line_of 291)'"
[ "$(line_of 4000)" = "4000 not-in-ring" ] ||
	fail "pid 4000 of the table: '$(line_of 4000)'"
dups=$(cut -d' ' -f1 "$T/cmdlines" | sort | uniq -d | tr '\n' ' ')
[ -z "$dups" ] || fail "pids named more than once: $dups"

trace-cmd report "$T/g.dat" >"$T/report" 2>"$T/report.err" ||
	fail "trace-cmd report failed: $(cat "$T/report.err")"
n=$(grep -c '^ *sh-298 .*hvt-mark' "$T/report")
[ "$n" = 300 ] || fail "$n markers of pid 298 as sh-298 (want 300): $(grep -m3 'hvt-mark' "$T/report")"
# Every pid a sched_switch of the ring names (prev or next) has its name.
named=$(grep ' sched_switch: ' "$T/report" | grep -o -E ':[0-9]+ \[' |
	tr -dc '0-9\n' | sort -un | grep -vx 0)
[ -n "$named" ] || fail "no sched_switch in the report: $(head -3 "$T/report")"
for p in $named; do
	if grep -qE "<\.\.\.>-$p +\[" "$T/report"; then
		fail "pid $p, named by a sched_switch, prints as <...>: $(grep -m1 -E "<\.\.\.>-$p +\[" "$T/report")"
	fi
done
grep -qE '^ +init-1 +\[001\] +17\.937345: sched_switch' "$T/report" ||
	fail "pid 1's first sched_switch: $(grep -m1 '17.937345' "$T/report")"
echo "ok: the ring's names in the trace.dat's saved_cmdlines ($(wc -l <"$T/cmdlines") pids)"
