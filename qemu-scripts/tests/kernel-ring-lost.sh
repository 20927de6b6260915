#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Overwrites of the guest kernel's ring while the host reads it live: a
# small ring (--kernel-buffer 128K, 15 sub-buffers per CPU), a writer
# pinned to guest CPU 0 writing numbered trace_marker lines, and the
# host's "hvtrace stream NAME --guest-kernel" stopped (SIGSTOP) while the
# guest writes far more than the ring holds, then resumed.  The guest
# laps the reader; the stream must never print a torn, repeated or
# out-of-order line, and every gap in the numbering must come right after
# a "CPU:0 [LOST EVENTS]" line (the ring records no count, so the lost
# number is unknown).  After the lap, a second burst is read whole.  The
# guest starts its big burst only once the host has stopped the reader
# (a byte on a virtio-serial port), so the lap does not depend on timing.
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
initrd=$(t_initrd)
T=/sys/kernel/tracing/instances/hvt

# marks FROM TO: the guest writes "hvt-mark FROM" .. "hvt-mark TO-1".
marks() {
	echo "i=$1; while [ \$i -lt $2 ]; do echo \"hvt-mark \$i\" >$T/trace_marker; i=\$((i + 1)); done"
}

# The guest (pinned to CPU 0): 100 lines, then waits for a "g" on its
# port "go" (the host's signal that the reader is stopped; a read before
# the host connects sees end of file), 19900 more, a console line, a
# pause, 1000 more.
t_name n lost
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print --kernel-buffer 128K --port go \
	--run "taskset 1 sh -c '$(marks 0 100); until head -c 1 /dev/virtio-ports/go | grep -q g; do sleep 0.1; done; echo hvt-go-seen; $(marks 100 20000); echo hvt-burst1-done; sleep 3; $(marks 20000 21000)'" \
	--wait-ready --timeout 120 >/dev/null || fail "start failed"
"$G" kformats "$n" "$T_TMP/fmt" >/dev/null || fail "kformats failed"
HVT_SHM_DIR=$T_SHM HVT_RUNDIR=$T_RUNDIR "$HVTRACE" stream "$n" --guest-kernel \
	--formats "$T_TMP/fmt" --summary >"$T_TMP/out.txt" 2>"$T_TMP/err.txt" &
spid=$!
T_PIDS+=("$spid")
# The reader has started (it printed the first 100 lines): stop it.
wait_line "$T_TMP/out.txt" 'hvt-mark 99$' 120 ||
	fail "the stream did not print the first lines"
kill -STOP "$spid" || fail "cannot stop the stream"
# From here a failure must let the stream run again, or it never ends.
resume_fail() {
	kill -CONT "$spid" 2>/dev/null
	fail "$@"
}
# Stay connected and repeat the byte until the guest says it saw one: a
# byte sent while the guest has the port closed may be dropped.
"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" g "$T_TMP/$n.log" \
	$'\nhvt-go-seen' 120 ||
	resume_fail "the guest did not take the signal on its port"
wait_line "$T_TMP/$n.log" '^hvt-burst1-done' 120 ||
	resume_fail "the guest did not finish its first burst"
kill -CONT "$spid"
wait "$spid" || { cat "$T_TMP/err.txt"; fail "stream failed"; }
cat "$T_TMP/err.txt"
grep -qa 'hvtrace: run exited with status 0' "$T_TMP/$n.log" || fail "the guest's writer failed"

# Every marker line is on CPU 0; numbers strictly increase; a gap only
# right after a LOST line; the last 1000 (the second burst) all there.
verdict=$(awk '
	/CPU:0 \[LOST/ { lost = 1; nlost++; next }
	/hvt-mark/ {
		if ($0 !~ /\[000\]/) { print "a marker on another CPU: " $0; exit }
		v = $NF + 0
		if (seen && v <= last) { print "line " NR ": " v " after " last; exit }
		if (seen && v != last + 1 && !lost) { print "gap " last " -> " v " without a LOST line (line " NR ")"; exit }
		if (seen && v != last + 1) gaps++
		lost = 0; last = v; seen = 1; if (v >= 20000) tail++
	}
	END { printf "ok %d %d %d %d\n", nlost, gaps, tail, last }' "$T_TMP/out.txt")
case $verdict in
ok*) ;;
*) fail "$verdict" ;;
esac
read -r _ nlost gaps tail last <<<"$verdict"
info "LOST lines $nlost, gaps $gaps, second burst $tail of 1000, last $last"
[ "$nlost" -ge 1 ] && [ "$gaps" -ge 1 ] ||
	fail "the guest never lapped the stopped reader (LOST lines $nlost, gaps $gaps): the test proved nothing"
[ "$tail" -eq 1000 ] && [ "$last" -eq 20999 ] ||
	fail "the second burst was not read whole ($tail of 1000, last $last)"
grep -q 'pages overwritten before they were read' "$T_TMP/err.txt" ||
	fail "the summary does not count the lost pages"
echo "PASS"
