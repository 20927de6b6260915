#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Overwrites of the guest kernel's ring while the host reads it live: a
# small ring (--kernel-buffer 128K, 15 sub-buffers per CPU), a writer
# pinned to guest CPU 0 writing numbered trace_marker lines, and the
# host's "hvtrace stream RAMFILE" (the guest's RAM file by its path, read
# directly: hvtraced would hold the pages for a stopped tool) stopped
# (SIGSTOP) while the
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

# The guest: kring_lap_run (lib.sh).
t_name n lost
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print --kernel-buffer 128K --port go \
	--run "$(kring_lap_run)" \
	--wait-ready --timeout 120 >/dev/null || fail "start failed"
"$G" kformats "$n" "$T_TMP/fmt" >/dev/null || fail "kformats failed"
ram=$(status_get "$n" ram)
[ -n "$ram" ] || fail "status names no RAM file of $n"
"$HVTRACE" stream "$ram" --formats "$T_TMP/fmt" --summary \
	>"$T_TMP/out.txt" 2>"$T_TMP/err.txt" &
spid=$!
T_PIDS+=("$spid")
# The reader has started (it printed the first 100 lines): stop it,
# let the guest lap it, resume it.
kring_lap "$n" "$spid" "$T_TMP/out.txt" "$T_TMP/err.txt"

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
