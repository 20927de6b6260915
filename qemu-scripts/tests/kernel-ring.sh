#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The guest kernel's own ftrace ring, read by the host from guest RAM with
# no agent (--kernel-events; docs/guest-kernel.md), on the cached Debian
# 6.12 guest kernel:
#
#   live      the guest writes N numbered lines to its instance's
#             trace_marker while "hvtrace stream RAMFILE" reads its RAM
#             file by path, with no hvtraced (with the formats the guest
#             printed at boot); the stream shows every line exactly once,
#             in order, with no loss, and ends by itself when the guest
#             powers off (its launcher removes the RAM file)
#   panic     the guest writes M numbered lines, then panics (sysrq c);
#             "hvtrace stream RAMFILE --drain" on the kept RAM file shows
#             them all, with the formats given (--formats) and with the
#             formats found in the cache from the kernel's banner; "hvtrace
#             record --guest-kernel RAMFILE" makes a trace.dat of it in
#             which trace-cmd report shows them all too
#             and names every task from the ring's own sched records:
#             no line of a pid that a sched_switch named (that line or an
#             earlier one; in the trace.dat, any) prints as <...>-PID
#   SIGKILL   the same after QEMU is killed with SIGKILL
#
# Every check reads the numbers back from the decoded text (the guest's
# own ftrace:print format, unpacked by hvtrace-guest kformats).
#
# Environment: HVT_KRING_LINES (N, default 10000), HVT_KRING_PM_LINES (M,
# default 2000).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
N=${HVT_KRING_LINES:-10000}
M=${HVT_KRING_PM_LINES:-2000}
initrd=$(t_initrd)

# kformats NAME LOG DIR: unpack the guest's formats from its console.
kformats() {
	"$G" kformats --log "$2" "$3" >/dev/null || fail "kformats of $1 failed"
	[ -f "$3/events/ftrace/print/format" ] || fail "no ftrace/print format in $3"
}

# drain NAME COUNT: read guest NAME's kept RAM file after it ended (its
# console's formats) and check its COUNT lines; the text stays in
# $T_TMP/NAME.txt.
drain() {
	kformats "$1" "$T_TMP/$1.log" "$T_TMP/fmt-$1"
	"$HVTRACE" stream "$T_SHM/hvtrace-$1.ram" --drain --formats "$T_TMP/fmt-$1" \
		--summary >"$T_TMP/$1.txt" 2>"$T_TMP/$1.err" ||
		{ cat "$T_TMP/$1.err"; fail "post-mortem stream of $1 failed"; }
	cat "$T_TMP/$1.err"
	kring_check_marks "$T_TMP/$1.txt" "$2"
}

# named_check FILE: no "<...>-PID" line for a pid that a sched_switch
# named before it (or on it), in stream's text (prev_pid=, next_pid=).
named_check() {
	awk '/ sched_switch: / {
		if (match($0, /prev_pid=[0-9]+/))
			named[substr($0, RSTART + 9, RLENGTH - 9)] = 1
		if (match($0, /next_pid=[0-9]+/))
			named[substr($0, RSTART + 9, RLENGTH - 9)] = 1
	}
	$1 ~ /^<\.\.\.>-[0-9]+$/ {
		p = substr($1, 7)
		if (p in named) { print "line " NR ": " $0; bad++ }
	}
	END { exit bad > 0 }' "$1" >"$1.unnamed" ||
		fail "lines of pids a sched_switch named print as <...> in $1: $(head -3 "$1.unnamed")"
}

info "live: $N lines through a running stream"
t_name n live
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print --port go --run "$(kring_gated "$(kring_marks "$N")")" \
	--wait-ready --timeout 120 >/dev/null || fail "start failed"
kformats "$n" "$T_TMP/$n.log" "$T_TMP/fmt"
ram=$(status_get "$n" ram)
[ "$ram" = "$T_SHM/hvtrace-$n.ram" ] || fail "status names RAM '$ram'"
[ "$(stat -c %a "$ram")" = 600 ] || fail "$ram has mode $(stat -c %a "$ram"), not 0600"
# The RAM file by its path, no hvtraced: the agentless read.
HVTRACED_SOCKET=$T_TMP/no-daemon.sock timeout 200 "$HVTRACE" stream "$ram" \
	--formats "$T_TMP/fmt" --summary >"$T_TMP/live.txt" 2>"$T_TMP/live.err" &
spid=$!
T_PIDS+=("$spid")
# The writer starts once the stream reads: a stream slowed by a loaded
# host must not find the guest already powered off.
kring_go "$n" "$T_TMP/live.err" "$spid" "guest kernel times"
wait "$spid" || { cat "$T_TMP/live.err"; fail "stream failed or did not end with the guest"; }
cat "$T_TMP/live.err"
grep -qa 'hvtrace: run exited with status 0' "$T_TMP/$n.log" || fail "the guest's writer failed"
kring_check_marks "$T_TMP/live.txt" "$N"
# The stream ends once the launcher removed the RAM file (QEMU exited),
# then the runtime folder goes as the last thing: wait for it.
for _ in $(seq 600); do
	[ -e "$T_RUNDIR/$n" ] || break
	sleep 0.05
done
[ ! -e "$T_RUNDIR/$n" ] || fail "the runtime folder $T_RUNDIR/$n remains 30 s after the guest powered off"
[ ! -e "$ram" ] || fail "$ram remains without --keep-ram"

info "panic: $M lines, then sysrq c; read the kept RAM file"
t_name p panic
"$G" start --name "$p" --initrd "$initrd" --log "$T_TMP/$p.log" \
	--kernel-events ftrace:print,sched --keep-ram \
	--run "$(kring_marks "$M"); echo c >/proc/sysrq-trigger" >/dev/null ||
	fail "start failed"
"$G" wait "$p" --poweroff --timeout 300 || fail "the guest did not end"
grep -qa 'Kernel panic' "$T_TMP/$p.log" || fail "the guest did not panic"
drain "$p" "$M"
grep -q 'sched_switch' "$T_TMP/$p.txt" || fail "no sched_switch event in the kept ring"
named_check "$T_TMP/$p.txt"
# The same ring into a trace.dat: trace-cmd reads every marker, in order,
# and the guest's sched_switch, its comms from the guest's saved_cmdlines.
"$HVTRACE" record -q -o "$T_TMP/$p.dat" --guest-kernel "$T_SHM/hvtrace-$p.ram" \
	--formats "$T_TMP/fmt-$p" 2>"$T_TMP/rec.err" ||
	{ cat "$T_TMP/rec.err"; fail "record --guest-kernel of the kept RAM file failed"; }
trace-cmd report "$T_TMP/$p.dat" >"$T_TMP/$p-report.txt" 2>"$T_TMP/report.err" ||
	{ cat "$T_TMP/report.err"; fail "trace-cmd report cannot read the guest kernel's trace.dat"; }
kring_check_marks "$T_TMP/$p-report.txt" "$M"
grep -q 'sched_switch:' "$T_TMP/$p-report.txt" || fail "no sched_switch in the trace.dat"
grep -q '^ *init-1 ' "$T_TMP/$p-report.txt" || fail "the guest's pid 1 is not named init in the trace.dat"
# trace-cmd prints sched_switch as "COMM:PID [PRIO] S ==> COMM:PID
# [PRIO]"; the file names each pid once, so any of them names it.
for pid in $(grep ' sched_switch: ' "$T_TMP/$p-report.txt" |
	grep -oE ':[0-9]+ \[' | tr -dc '0-9\n' | sort -un | grep -vx 0); do
	! grep -qE "^ *<\.\.\.>-$pid +\[" "$T_TMP/$p-report.txt" ||
		fail "pid $pid, named by a sched_switch, prints as <...> in the trace.dat: $(grep -m1 -E "^ *<\.\.\.>-$pid +\[" "$T_TMP/$p-report.txt")"
done
# The formats cache: kformats without DIR files them under the kernel's
# version line, and stream finds them from the banner in guest RAM.
HVT_CACHE=$T_TMP/cache "$G" kformats --log "$T_TMP/$p.log" >/dev/null ||
	fail "kformats into the cache failed"
HVT_CACHE=$T_TMP/cache "$HVTRACE" stream "$T_SHM/hvtrace-$p.ram" --drain \
	>"$T_TMP/cached.txt" 2>"$T_TMP/cached.err" ||
	{ cat "$T_TMP/cached.err"; fail "stream with cached formats failed"; }
grep -q "formats from $T_TMP/cache/kformats/Linux_version_" "$T_TMP/cached.err" ||
	fail "stream did not take the cached formats: $(cat "$T_TMP/cached.err")"
kring_check_marks "$T_TMP/cached.txt" "$M"

info "SIGKILL of QEMU: $M lines; read the kept RAM file"
t_name k kill
"$G" start --name "$k" --initrd "$initrd" --log "$T_TMP/$k.log" \
	--kernel-events ftrace:print --keep-ram \
	--run "$(kring_marks "$M"); echo hvt-marks-done; sleep 600" >/dev/null ||
	fail "start failed"
wait_line "$T_TMP/$k.log" '^hvt-marks-done' 300 ||
	fail "the guest did not finish writing"
qpid=$(status_get "$k" qemu_pid)
[ -n "$qpid" ] || fail "no QEMU pid for $k"
kill -KILL "$qpid"
wait_pid_gone "$qpid" 30 || fail "QEMU $qpid did not die"
tries=600
until [ "$("$G" list --no-header | awk -v n="$k" '$1 == n { print $2 }')" = crashed ]; do
	[ $tries -gt 0 ] || fail "the rig did not clean up after the killed guest (list: $("$G" list --no-header | grep "^$k "))"
	tries=$((tries - 1))
	sleep 0.1
done
drain "$k" "$M"

"$G" cleanup --areas "$p" "$k" >/dev/null 2>&1
[ ! -e "$T_SHM/hvtrace-$p.ram" ] && [ ! -e "$T_SHM/hvtrace-$k.ram" ] ||
	fail "cleanup --areas left a kept RAM file"
echo "PASS"
