#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream --guest-kernel names a guest's tasks from the ring's own
# sched records where the boot's saved_cmdlines does not: the real
# Debian 6.12 guest's ring of the kring_parse seed real-612-128k, with
# that guest's sched_switch and ftrace:print formats (the kmap seed
# guest-612-formats) and a saved_cmdlines made here that names pid 19
# only (stale: "rcu-table").  Expected, from what the ring holds:
#   - no line of a pid a sched_switch named, on that line or before it,
#     prints as <...>-PID; pid 1's first sched_switch (17.937345) prints
#     as init-1, its five lines before it as <...>-1 (nothing named it
#     yet), and pid 270's ten lines before its only sched_switch as
#     <...>-270;
#   - pid 298 (forked by init, then exec'd into sh): its first 41
#     markers print as init-298, the other 259, after the sched_switch
#     whose prev_comm is sh, as sh-298;
#   - the table's stale name of pid 19 shows nowhere: its first line is
#     after the sched_switch that switched it in as rcu_preempt.
. "$(dirname "$0")/lib.sh"

SRC=${HVT_SRCTREE:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/include/guest612_formats.sh"
F=$TMP/fmt
guest612_formats "$F"
printf '19 rcu-table\n' >"$F/saved_cmdlines"

cp "$SEED" "$TMP/guest.ram"
"$HVTRACE" stream "$TMP/guest.ram" --guest-kernel --drain --formats "$F" \
	>"$TMP/out.txt" 2>"$TMP/err.txt" ||
	fail "stream failed: $(cat "$TMP/err.txt")"
grep -q ' sched_switch: ' "$TMP/out.txt" ||
	fail "no sched_switch decoded: $(head -3 "$TMP/out.txt")"

awk '/ sched_switch: / {
		if (match($0, /prev_pid=[0-9]+/))
			named[substr($0, RSTART + 9, RLENGTH - 9)] = 1
		if (match($0, /next_pid=[0-9]+/))
			named[substr($0, RSTART + 9, RLENGTH - 9)] = 1
	}
	$1 ~ /^<\.\.\.>-[0-9]+$/ && (substr($1, 7) in named) {
		print "line " NR ": " $0; bad = 1; exit
	}
	END { exit bad }' "$TMP/out.txt" >"$TMP/bad.txt" ||
	fail "a pid a sched_switch named prints as <...>: $(cat "$TMP/bad.txt")"
grep -qE '^ +init-1 +\[001\] d\.\.2\. +17\.937345: sched_switch: prev_comm=init prev_pid=1 ' "$TMP/out.txt" ||
	fail "pid 1's first sched_switch: $(grep -m1 '17.937345' "$TMP/out.txt")"
count() { grep -cE "$1" "$TMP/out.txt"; }
[ "$(count '^ +<\.\.\.>-1 +\[')" = 5 ] || fail "$(count '^ +<\.\.\.>-1 +\[') lines of <...>-1, want 5"
[ "$(count '^ +<\.\.\.>-270 +\[')" = 10 ] || fail "$(count '^ +<\.\.\.>-270 +\[') lines of <...>-270, want 10"
[ "$(count '^ +<\.\.\.>-')" = 15 ] || fail "$(count '^ +<\.\.\.>-') <...> lines, want 15: $(grep -m3 '<\.\.\.>-' "$TMP/out.txt")"
[ "$(count '^ +init-298 .*hvt-mark')" = 41 ] ||
	fail "$(count '^ +init-298 .*hvt-mark') markers of init-298, want 41"
[ "$(count '^ +sh-298 .*hvt-mark')" = 259 ] ||
	fail "$(count '^ +sh-298 .*hvt-mark') markers of sh-298, want 259"
! grep -q 'rcu-table' "$TMP/out.txt" ||
	fail "the table's stale name shows: $(grep -m1 'rcu-table' "$TMP/out.txt")"
echo "ok: a real 6.12 guest's tasks named from its ring's sched_switch"
