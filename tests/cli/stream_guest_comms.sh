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
SEED=$SRC/tests/fuzz/corpus/kring_parse/real-612-128k
FMTS=$SRC/tests/fuzz/corpus/kmap/guest-612-formats
[ -r "$SEED" ] && [ -r "$FMTS" ] || fail "no seeds $SEED, $FMTS"

F=$TMP/fmt
mkdir -p "$F/events/sched/sched_switch" "$F/events/ftrace/print"
printf '\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n' \
	>"$F/events/header_page"
# Each format: from its "name:" line to the end of its "print fmt:" line
# (the seed frames the texts with binary lengths).
fmt_of() {
	tr -d '\000' <"$FMTS" | awk -v n="name: $1" '
		!on && (i = index($0, n)) { on = 1; $0 = substr($0, i) }
		on { print }
		on && /^print fmt:/ { exit }'
}
fmt_of sched_switch >"$F/events/sched/sched_switch/format"
fmt_of print >"$F/events/ftrace/print/format"
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
