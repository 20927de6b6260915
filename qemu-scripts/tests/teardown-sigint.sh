#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A foreground launcher stops its guest and cleans up on Ctrl-C (SIGINT to
# its whole process group, as a terminal sends it) and on SIGTERM to the
# launcher alone; it shows the console and exits 130 / 143.
. "$(dirname "$0")/lib.sh"
t_require

initrd=$(t_initrd)

# Job control gives the launcher its own process group and keeps SIGINT
# deliverable to it (non-interactive background jobs ignore SIGINT).
set -m

run_fg() {
	local n=$1 sig=$2 expect pid rc qpid
	"$G" start --name "$n" --initrd "$initrd" --foreground \
		>"$T_TMP/$n.out" 2>&1 &
	pid=$!
	"$G" wait "$n" --ready --timeout 60 || fail "foreground guest $n did not come up"
	qpid=$(status_get "$n" qemu_pid)
	[ -n "$qpid" ] || fail "no QEMU pid for $n"
	[ "$(status_get "$n" supervisor_pid)" = "$pid" ] || fail "the foreground launcher is not $n's supervisor"
	if [ "$sig" = INT ]; then
		kill -INT -- "-$pid" # the whole foreground group
		expect=130
	else
		kill -TERM "$pid"
		expect=143
	fi
	wait "$pid"
	rc=$?
	cat "$T_TMP/$n.out"
	[ $rc -eq $expect ] || fail "foreground launcher exited $rc after SIG$sig, expected $expect"
	grep -qa 'hvtrace: guest ready' "$T_TMP/$n.out" || fail "foreground launcher did not show the console"
	wait_pid_gone "$qpid" 10 || fail "QEMU $qpid survives SIG$sig of the launcher"
	assert_gone "$n"
}

t_name n_int int
t_name n_term term
info "Ctrl-C"
run_fg "$n_int" INT
info "SIGTERM"
run_fg "$n_term" TERM
echo "PASS"
