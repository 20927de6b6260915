#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Teardown when things die hard:
#  1. kill -9 of QEMU: the supervisor notices and clears everything.
#  2. kill -9 of supervisor and QEMU: the leftovers show as "stale";
#     "hvtrace-guest stop NAME" clears them.
#  3. the same, cleared by "hvtrace-guest cleanup".
#  4. kill -9 of a foreground launcher: QEMU follows it (parent-death
#     signal); a new start with the same name clears the leftovers first.
. "$(dirname "$0")/lib.sh"
t_require

initrd=$(t_initrd)

# start returns once QEMU runs with its sockets; the guest may still be
# booting when it is killed, which teardown must not care about.
start_bg() {
	"$G" start --name "$1" --initrd "$initrd" --log "$T_TMP/$1.log" \
		>/dev/null || fail "start $1 failed"
	[ -n "$(status_get "$1" qemu_pid)" ] || fail "no QEMU pid for $1 after start"
}

# kill -9 both processes of guest $1; the leftovers must stay visible.
crash() {
	local n=$1 qpid spid
	qpid=$(status_get "$n" qemu_pid)
	spid=$(status_get "$n" supervisor_pid)
	[ -n "$qpid" ] && [ -n "$spid" ] || fail "no pids for $n"
	kill -9 "$spid" "$qpid"
	wait_pid_gone "$qpid" 10 || fail "QEMU $qpid survives kill -9"
	wait_pid_gone "$spid" 10 || fail "supervisor $spid survives kill -9"
	[ -d "$T_RUNDIR/$n" ] || fail "expected leftovers of $n after kill -9 of both"
	[ "$(status_get "$n" state)" = stale ] || fail "status of crashed $n is not 'stale'"
	"$G" list --no-header | grep -q "^$n  *stale " || fail "list does not show $n as stale"
}

info "1. kill -9 QEMU"
t_name n1 qemu
start_bg "$n1"
qpid=$(status_get "$n1" qemu_pid)
kill -9 "$qpid"
"$G" wait "$n1" --poweroff --timeout 20 || fail "supervisor did not clear up after QEMU was killed"
assert_gone "$n1"

info "2. kill -9 supervisor and QEMU, then stop"
t_name n2 stop
start_bg "$n2"
crash "$n2"
"$G" stop "$n2" || fail "stop of a crashed guest failed"
assert_gone "$n2"

info "3. kill -9 supervisor and QEMU, then cleanup"
t_name n3 cleanup
start_bg "$n3"
crash "$n3"
"$G" cleanup || fail "cleanup failed"
assert_gone "$n3"

info "4. kill -9 of a foreground launcher"
t_name n4 fg
set -m
"$G" start --name "$n4" --initrd "$initrd" --foreground --quiet >"$T_TMP/$n4.out" 2>&1 &
lpid=$!
set +m
tries=600
until qpid=$(status_get "$n4" qemu_pid) && [ -n "$qpid" ]; do
	tries=$((tries - 1))
	[ $tries -gt 0 ] || fail "foreground launcher did not start QEMU"
	sleep 0.05
done
kill -9 "$lpid"
wait "$lpid" 2>/dev/null
wait_pid_gone "$qpid" 10 || fail "QEMU $qpid outlives its killed foreground launcher"
[ "$(status_get "$n4" state)" = stale ] || fail "leftovers of $n4 are not 'stale'"
"$G" start --name "$n4" --initrd "$initrd" --log "$T_TMP/$n4.log" --run true \
	>/dev/null 2>"$T_TMP/$n4.err" || { cat "$T_TMP/$n4.err"; fail "restart over stale leftovers failed"; }
cat "$T_TMP/$n4.err"
grep -q 'clearing what a dead guest' "$T_TMP/$n4.err" || fail "restart did not say it cleared the leftovers"
"$G" wait "$n4" --poweroff --timeout 60 || fail "restarted $n4 did not power off"
grep -qa 'hvtrace: run exited with status 0' "$T_TMP/$n4.log" || fail "restarted $n4 did not run its command"
assert_gone "$n4"
echo "PASS"
