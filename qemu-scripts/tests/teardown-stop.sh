#!/bin/bash
# SPDX-License-Identifier: MIT
#
# "hvtrace-guest stop" of an idling guest (no --run: it never powers off by
# itself) ends QEMU and the supervisor and removes the runtime folder,
# sockets and area; a second stop is a harmless no-op.
. "$(dirname "$0")/lib.sh"
t_require

t_name n stop
initrd=$(t_initrd)
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" --wait-ready --timeout 60 >/dev/null ||
	fail "start --wait-ready failed"
# The line follows "guest ready" on the console: wait for it.
wait_line "$T_TMP/$n.log" 'idling until stopped' 20 || fail "guest without --run does not idle"
qpid=$(status_get "$n" qemu_pid)
spid=$(status_get "$n" supervisor_pid)
[ -n "$qpid" ] && [ -n "$spid" ] || fail "status lacks the QEMU or supervisor pid"
[ "$(status_get "$n" state)" = ready ] || fail "status does not say ready"

# Still running after a while: only stop ends it.
sleep 1
kill -0 "$qpid" || fail "idle guest ended by itself"

"$G" stop "$n" || fail "stop failed"
wait_pid_gone "$qpid" 10 || fail "QEMU $qpid survives stop"
wait_pid_gone "$spid" 10 || fail "supervisor $spid survives stop"
assert_gone "$n"
"$G" status "$n" >/dev/null 2>&1 && fail "status still finds '$n' after stop"
"$G" stop "$n" || fail "a second stop of '$n' failed"
echo "PASS"
