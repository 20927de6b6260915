#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The guest kernel's own ftrace ring read from the memory of its QEMU
# process (hvtrace stream --vm-pid PID; docs/guest-kernel.md), with no RAM
# file: guests started with --kernel-events and --kernel-ram anon (QEMU's
# plain anonymous RAM, read through /proc/PID/mem) and --kernel-ram memfd
# (memory-backend-memfd,share=on, mapped read-only through /proc/PID/fd),
# on the cached Debian 6.12 guest kernel.  For each:
#
#   the guest writes N numbered lines to its instance's trace_marker from
#   CPU 0; "hvtrace stream --vm-pid PID" (live, ending at N events) and
#   then "--drain" each show every line exactly once, in order, with no
#   loss; "hvtrace stat --vm-pid PID" counts N events on CPU 0 and none on
#   CPU 1.  Without --formats, a drain and "hvtrace record --vm-pid"
#   take the formats cache's folder of the kernel's version line, found
#   from its banner: every line once in the stream and in trace-cmd
#   report of the file.  No RAM file exists.  A live stream running when QEMU ends
#   reads a memfd to its end (all N lines, exit 0) and stops with an
#   error that says so for anonymous RAM.
#
# A user without ptrace read access to QEMU, a pid that is gone, and a
# process that is not a VMM are refused with messages that say so.
#
# Environment: HVT_KRING_LINES (N, default 3000).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
N=${HVT_KRING_LINES:-3000}
initrd=$(t_initrd)

# one KIND: a guest with --kernel-ram KIND, read by its QEMU's pid.
one() {
	local kind=$1 n qpid
	info "$kind: $N lines read from QEMU's memory by pid"
	t_name n "$kind"
	"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
		--kernel-events ftrace:print --kernel-ram "$kind" \
		--run "sleep 1; $(kring_marks "$N"); echo hvt-marks-done; sleep 600" \
		--wait-ready --timeout 120 >/dev/null || fail "start failed"
	[ -z "$(status_get "$n" ram)" ] || fail "$kind guest has a RAM file: $(status_get "$n" ram)"
	[ ! -e "$T_SHM/hvtrace-$n.ram" ] || fail "$kind guest has a RAM file"
	qpid=$(status_get "$n" qemu_pid)
	[ -n "$qpid" ] || fail "no QEMU pid for $n"
	if [ "$kind" = memfd ]; then
		grep -q ' rw-s .*/memfd:' "/proc/$qpid/maps" ||
			fail "QEMU $qpid has no shared memfd mapping"
	fi
	"$G" kformats "$n" "$T_TMP/fmt-$n" >/dev/null || fail "kformats failed"
	# Live: from the ring's head while the guest writes; ends at N events.
	timeout 200 "$HVTRACE" stream --vm-pid "$qpid" --formats "$T_TMP/fmt-$n" \
		--count "$N" --summary >"$T_TMP/$n-live.txt" 2>"$T_TMP/$n-live.err" ||
		{ cat "$T_TMP/$n-live.err"; fail "live stream --vm-pid $qpid failed"; }
	cat "$T_TMP/$n-live.err"
	kring_check_marks "$T_TMP/$n-live.txt" "$N"
	wait_line "$T_TMP/$n.log" '^hvt-marks-done' 300 ||
		fail "the guest did not finish writing"
	"$HVTRACE" stream --vm-pid "$qpid" --formats "$T_TMP/fmt-$n" --drain \
		>"$T_TMP/$n-drain.txt" 2>"$T_TMP/$n-drain.err" ||
		{ cat "$T_TMP/$n-drain.err"; fail "stream --vm-pid $qpid --drain failed"; }
	kring_check_marks "$T_TMP/$n-drain.txt" "$N"
	# No --formats: the cache's folder of the kernel's version line
	# (kformats filed it), found from the banner the kernel's own symbol
	# table points at, with no scan of guest RAM.
	HVT_CACHE=$T_TMP/cache-$n "$G" kformats --log "$T_TMP/$n.log" >/dev/null ||
		fail "kformats into the cache failed"
	HVT_CACHE=$T_TMP/cache-$n "$HVTRACE" stream --vm-pid "$qpid" --drain \
		>"$T_TMP/$n-cached.txt" 2>"$T_TMP/$n-cached.err" ||
		{ cat "$T_TMP/$n-cached.err"; fail "stream --vm-pid $qpid with cached formats failed"; }
	grep -q "formats from $T_TMP/cache-$n/kformats/Linux_version_" "$T_TMP/$n-cached.err" ||
		fail "stream --vm-pid did not take the cached formats: $(cat "$T_TMP/$n-cached.err")"
	kring_check_marks "$T_TMP/$n-cached.txt" "$N"
	HVT_CACHE=$T_TMP/cache-$n "$HVTRACE" record -o "$T_TMP/$n.dat" --vm-pid "$qpid" \
		2>"$T_TMP/$n-rec.err" ||
		{ cat "$T_TMP/$n-rec.err"; fail "record --vm-pid $qpid with cached formats failed"; }
	grep -q "formats from $T_TMP/cache-$n/kformats/Linux_version_" "$T_TMP/$n-rec.err" ||
		fail "record --vm-pid did not take the cached formats: $(cat "$T_TMP/$n-rec.err")"
	trace-cmd report "$T_TMP/$n.dat" >"$T_TMP/$n-report.txt" 2>"$T_TMP/$n-report.err" ||
		{ cat "$T_TMP/$n-report.err"; fail "trace-cmd report cannot read record --vm-pid's file"; }
	kring_check_marks "$T_TMP/$n-report.txt" "$N"
	"$HVTRACE" stat --vm-pid "$qpid" >"$T_TMP/$n-stat.txt" 2>&1 ||
		{ cat "$T_TMP/$n-stat.txt"; fail "stat --vm-pid $qpid failed"; }
	awk -v n="$N" '
		/^CPU 0:/ { c = 0 } /^CPU 1:/ { c = 1 }
		/^entries:/ { e[c] = $2 } /^errors:/ { err += $2 }
		END { exit !(e[0] == n && e[1] == 0 && err == 0) }' "$T_TMP/$n-stat.txt" ||
		{ cat "$T_TMP/$n-stat.txt"; fail "stat --vm-pid: not $N events on CPU 0 and none on CPU 1"; }
	# Without ptrace read access (another user): refused, saying why.
	if [ "$kind" != anon ]; then
		:
	elif [ "$(id -u)" = 0 ] &&
		setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$HVTRACE" 2>/dev/null; then
		if setpriv --reuid=65534 --regid=65534 --clear-groups "$HVTRACE" stat \
			--vm-pid "$qpid" >/dev/null 2>"$T_TMP/eperm.err"; then
			fail "stat --vm-pid as nobody succeeded"
		fi
		grep -q "needs ptrace read access" "$T_TMP/eperm.err" ||
			fail "as nobody: $(cat "$T_TMP/eperm.err")"
	else
		info "(not checked: the refusal without ptrace access; needs root and a build nobody can run)"
	fi
	# A live stream when QEMU ends: a memfd stays readable through the
	# stream's own mapping (read to the end, exit 0); anonymous RAM goes
	# with the process (the stream stops with an error saying so).
	"$HVTRACE" stream --vm-pid "$qpid" --formats "$T_TMP/fmt-$n" \
		>"$T_TMP/$n-end.txt" 2>"$T_TMP/$n-end.err" &
	local spid=$!
	T_PIDS+=("$spid")
	# Stop QEMU only once the stream has found the ring and is reading.
	wait_line "$T_TMP/$n-end.txt" 'hvt-mark' 60 ||
		fail "the live stream by pid printed nothing: $(cat "$T_TMP/$n-end.err")"
	"$G" stop "$n" >/dev/null || fail "stop failed"
	wait_pid_gone "$qpid" 60 || fail "QEMU $qpid did not end"
	kring_check_end "$kind" "$spid" "$T_TMP/$n-end.txt" "$T_TMP/$n-end.err" "$N"
	if "$HVTRACE" stream --vm-pid "$qpid" --drain >/dev/null 2>"$T_TMP/gone.err"; then
		fail "stream --vm-pid of a gone process succeeded"
	fi
	grep -q "no process $qpid" "$T_TMP/gone.err" ||
		fail "gone pid: $(cat "$T_TMP/gone.err")"
}

one anon
one memfd

info "a process that is not a VMM"
sleep 600 &
T_PIDS+=($!)
if "$HVTRACE" stream --vm-pid "$!" --drain >/dev/null 2>"$T_TMP/notvm.err"; then
	fail "stream --vm-pid of sleep succeeded"
fi
grep -q "no populated writable mapping of 64 MiB" "$T_TMP/notvm.err" ||
	fail "not a VMM: $(cat "$T_TMP/notvm.err")"
echo "PASS"
