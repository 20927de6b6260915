#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest whose QEMU goes away on its own ends the streams that follow it
# (docs/proxy.md, section 7): the guest writes M hvt_e2e user events and
# then panics (sysrq c).  "hvtrace stream NAME", started before it wrote
# and with no --count or --timeout, must end by itself (exit 0) once
# hvtraced finds the guest's chardev socket refusing connections, after
# printing all M events with no loss, and say that the remote stopped;
# "hvtrace daemon status" then lists the guest as panicked, the word of
# "hvtrace guest status", whose summary gives the panic's line.  A guest
# started again under the same name is taken up as before (ready).
#
# Environment: HVT_GONE_EVENTS (M, default 200).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
M=${HVT_GONE_EVENTS:-200}
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
t_own_daemon

# remote_state NAME: the state column of NAME in "hvtrace daemon status".
remote_state() {
	"$HVTRACE" daemon status 2>/dev/null | awk -v n="$1" '$2 == n { print $3 }'
}

t_name n gone
# ue_writer --hold keeps hvt_e2e registered so the host can enable it;
# once the host sends "g", M events, then the panic.
"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n.log" --port go \
	--run "ue_writer --hold & until head -c 1 /dev/virtio-ports/go | grep -q g; do sleep 0.01; done; ue_writer --count $M --wait-enable 60000 >/dev/null && echo hvt-written; echo c >/proc/sysrq-trigger" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
wait_line "$T_TMP/$n.log" '^registered id=' 120 || fail "ue_writer did not register hvt_e2e"
"$HVTRACE" events enable --remote "$n" hvt_e2e >/dev/null || fail "cannot enable hvt_e2e"
[ "$(remote_state "$n")" = ready ] || fail "'$n' is not ready: $("$HVTRACE" daemon status)"

timeout 200 "$HVTRACE" stream "$n" --summary >"$T_TMP/out.txt" 2>"$T_TMP/err.txt" &
spid=$!
T_PIDS+=("$spid")
"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" g "$T_TMP/$n.log" \
	"hvt-written" 300 || fail "the guest did not write its events"
"$G" wait "$n" --poweroff --timeout 120 >/dev/null || fail "the guest did not end"
grep -qa 'Kernel panic' "$T_TMP/$n.log" || fail "the guest did not panic"
start=$SECONDS
wait "$spid"
rc=$?
cat "$T_TMP/err.txt"
[ $rc -eq 0 ] || fail "the stream exited with $rc (124: it did not end with the guest)"
info "the stream ended $((SECONDS - start)) s after QEMU"
grep -q "^hvtrace stream: '$n' stopped" "$T_TMP/err.txt" || fail "the stream did not say that '$n' stopped"
got=$(grep -c 'hvt_e2e' "$T_TMP/out.txt")
[ "$got" -eq "$M" ] || fail "$got hvt_e2e events streamed, not $M"
grep -q '^hvtrace stream: .*, 0 lost,' "$T_TMP/err.txt" || fail "the summary reports losses"
# The launcher's record of the panic reaches hvtraced within a
# reconnect period or two.
for _ in $(seq 100); do
	[ "$(remote_state "$n")" = panicked ] && break
	sleep 0.1
done
st=$(remote_state "$n")
[ "$st" = panicked ] || fail "'$n' is $st after its kernel panicked, not panicked"
"$HVTRACE" guest status "$n" >"$T_TMP/status.out" 2>&1 || fail "guest status of a panicked guest failed: $(cat "$T_TMP/status.out")"
grep -qx 'state=panicked' "$T_TMP/status.out" || fail "guest status does not say state=panicked: $(cat "$T_TMP/status.out")"
grep -q '^summary=panicked (Kernel panic - not syncing: ' "$T_TMP/status.out" ||
	fail "guest status does not give the panic's line: $(grep summary= "$T_TMP/status.out")"
info "$M events, then '$n' panicked: $(grep summary= "$T_TMP/status.out")"

# The same name again: hvtraced takes the new guest up.
"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n-2.log" \
	--run "ue_writer --hold" >"$T_TMP/start2.out" 2>&1 ||
	{ cat "$T_TMP/start2.out"; fail "hvtrace guest start (again) failed"; }
wait_line "$T_TMP/$n-2.log" '^registered id=' 120 || fail "ue_writer did not register hvt_e2e (again)"
for _ in $(seq 100); do
	[ "$(remote_state "$n")" = ready ] && break
	sleep 0.1
done
st=$(remote_state "$n")
[ "$st" = ready ] || fail "'$n' started again is $st, not ready"
info "'$n' started again: ready"
echo "PASS"
