#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A hypervisor's events belong to no task, and never read as the idle
# task.  Its writer stamps pid 0, which trace_pipe and libtraceevent
# print as '<idle>'.  hvtrace stream prints them as '<hyp>-0'; a recorded
# file gives them pid 4194304 (no task has it: PID_MAX_LIMIT), which its
# saved_cmdlines names '<hyp>', so trace-cmd report and hvtrace report
# both print '<hyp>-4194304', every event, and no '<idle>'; the same
# through hvtraced: 'stream NAME' and 'record NAME' of the area attached.
. "$(dirname "$0")/lib.sh"
need_tools

area H hyp
"$WRITER" --area "$H" --cpus 2 --subbufs 8 --mode overwrite --kind hyp \
	--clock mono --name hyp --log "$T/h.log" -- write 40 stop \
	>"$T/h.out" 2>&1 || fail "the writer failed: $(cat "$T/h.out")"

"$HVTRACE" stream "$H" --drain >"$T/s.txt" 2>"$T/s.err" ||
	fail "stream failed: $(cat "$T/s.err")"
n=$(wc -l <"$T/s.txt")
[ "$n" = 80 ] || fail "stream printed $n lines, not 80: $(head -3 "$T/s.txt")"
grep -q '<idle>' "$T/s.txt" && fail "stream printed hyp events as <idle>: $(grep -m1 '<idle>' "$T/s.txt")"
k=$(grep -Ec '^ +<hyp>-0 +\[00[01]\] ' "$T/s.txt")
[ "$k" = 80 ] || fail "stream: $k of 80 lines are '<hyp>-0': $(head -3 "$T/s.txt")"
echo "stream: $(head -1 "$T/s.txt")"

"$HVTRACE" record -q -o "$T/h.dat" hyp="$H" 2>"$T/r.err" ||
	fail "record failed: $(cat "$T/r.err")"
same_report "$T/h.dat"
grep -q '<idle>' "$T/tc.txt" &&
	fail "trace-cmd report printed hyp events as <idle>: $(grep -m1 '<idle>' "$T/tc.txt")"
k=$(grep -Ec '^ *hyp: +<hyp>-4194304 +\[00[01]\] ' "$T/tc.txt")
[ "$k" = 80 ] || fail "trace-cmd report: $k of 80 lines are '<hyp>-4194304': $(head -5 "$T/tc.txt")"
echo "trace-cmd report: $(grep -m1 '<hyp>' "$T/tc.txt")"

# Through hvtraced: the remote's decoder and its recording alike.
D=$OBJ/bin/hvtraced
[ -x "$D" ] || fail "$D not built"
"$D" --foreground --socket "$T/d.sock" --run-dir "$T/run" \
	--shm-dir /dev/shm >"$T/hvtraced.log" 2>&1 &
BGPIDS+=("$!")
for _ in $(seq 200); do [ -S "$T/d.sock" ] && break; sleep 0.05; done
[ -S "$T/d.sock" ] || fail "hvtraced did not listen: $(tail -3 "$T/hvtraced.log")"
"$HVTRACE" daemon attach --area "$H" --name "$TAG" --socket "$T/d.sock" \
	>"$T/attach.out" 2>&1 || fail "attach failed: $(cat "$T/attach.out")"
timeout 60 "$HVTRACE" stream "$TAG" --socket "$T/d.sock" --drain \
	>"$T/rs.txt" 2>"$T/rs.err" || fail "stream NAME failed: $(cat "$T/rs.err")"
k=$(grep -Ec '^ +<hyp>-0 +\[00[01]\] ' "$T/rs.txt")
[ "$k" = 80 ] || fail "stream NAME: $k of 80 lines are '<hyp>-0': $(head -3 "$T/rs.txt")"
# A second run of the writer: hvtraced gave the first one's pages away.
area H2 hyp2
"$WRITER" --area "$H2" --cpus 2 --subbufs 8 --mode overwrite --kind hyp \
	--clock mono --name hyp2 --log "$T/h2.log" -- write 40 stop \
	>"$T/h2.out" 2>&1 || fail "the writer failed: $(cat "$T/h2.out")"
"$HVTRACE" daemon attach --area "$H2" --name "$TAG-2" --socket "$T/d.sock" \
	>"$T/attach.out" 2>&1 || fail "attach failed: $(cat "$T/attach.out")"
timeout 60 "$HVTRACE" record -q -o "$T/r.dat" --socket "$T/d.sock" "$TAG-2" \
	2>"$T/rr.err" || fail "record NAME failed: $(cat "$T/rr.err")"
same_report "$T/r.dat"
grep -q '<idle>' "$T/tc.txt" &&
	fail "trace-cmd report of record NAME printed <idle>: $(grep -m1 '<idle>' "$T/tc.txt")"
k=$(grep -Ec '^ *'"$TAG-2"': +<hyp>-4194304 +\[00[01]\] ' "$T/tc.txt")
[ "$k" = 80 ] || fail "trace-cmd report of record NAME: $k of 80 lines are '<hyp>-4194304': $(head -5 "$T/tc.txt")"
echo "through hvtraced: $(grep -m1 '<hyp>' "$T/tc.txt")"
echo "PASS"
