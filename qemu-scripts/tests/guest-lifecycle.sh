#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One account of a guest that powered itself off, the same everywhere: a
# guest started with "hvtrace guest start NAME --run 'sleep 1'" (and the
# test's own hvtraced) powers off when its command ends; then
#   - "hvtrace guest status NAME" exits 0 with state=powered-off, the
#     command's exit status (run_status=0), whether its area was kept,
#     a one-line summary= and remote_state=powered-off;
#   - "hvtrace list" shows the remote as powered-off (not disconnected);
#   - "hvtrace guest list" (and the launcher's list) still lists it, as
#     powered-off, with hvtraced's word beside it: powered-off;
#   - the mount's remotes/NAME/state says powered-off (where FUSE can
#     mount here);
#   - "hvtrace guest stop NAME" says once that the guest had already
#     powered off, and nothing else of the guest, and exits 0; afterwards
#     status says "no guest" in one line (exit 1), and a second stop says
#     once that there is nothing to stop (exit 0).
# A guest whose QEMU is killed (kill -9) is "crashed" in the same places
# (status says "QEMU was killed by signal 9"), and stop says so once.
# While it runs, "hvtrace list" and "hvtrace guest list" say "ready",
# the launcher's word, not hvtraced's own "connected".
# --run's power-off is in "hvtrace guest --help" and the launcher's.
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
t_own_daemon
export HVT_GUEST_LAUNCHER=$G
MNT=
t_umount() {
	[ -n "$MNT" ] || return 0
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	MNT=
}
trap 't_umount; "$HVTRACE" daemon stop >/dev/null 2>&1; t_cleanup' EXIT

info "--run's power-off is documented"
"$HVTRACE" guest --help 2>&1 | grep -A3 -- "--run 'CMD'" | grep -q 'power' ||
	fail "'hvtrace guest --help' does not say that --run powers the guest off"
"$G" --help 2>&1 | grep -A2 -- "--run 'CMD'" | grep -q 'power' ||
	fail "'hvtrace-guest --help' does not say that --run powers the guest off"

t_name n life
# --no-wait: the agent may not connect before the guest powers off (the
# daemon says HELLO every 2 s), which is not what this test is about.
"$HVTRACE" guest start "$n" --no-wait --initrd "$initrd" --log "$T_TMP/$n.log" --run 'sleep 1' \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
"$G" wait "$n" --poweroff --timeout 120 || fail "the guest did not power off"
grep -qa 'hvtrace: run exited with status 0' "$T_TMP/$n.log" || fail "the guest's command did not end well"
info "powered off after its command"

# status
"$HVTRACE" guest status "$n" >"$T_TMP/status.out" 2>"$T_TMP/status.err"
rc=$?
cat "$T_TMP/status.out" "$T_TMP/status.err"
[ $rc -eq 0 ] || fail "'hvtrace guest status $n' exits $rc for a guest that powered off"
[ ! -s "$T_TMP/status.err" ] || fail "status says on stderr: $(cat "$T_TMP/status.err")"
for kv in state=powered-off run_status=0 area_kept=0 "area=$T_SHM/hvtrace-$n"; do
	grep -qx -- "$kv" "$T_TMP/status.out" || fail "status lacks the line $kv"
done
grep -q '^summary=powered off (its command exited with status 0; area .* removed)$' "$T_TMP/status.out" ||
	fail "status lacks the one-line summary"

# hvtrace list: hvtraced learns it from the rig's record within a
# reconnect period or two.
list_state() {
	"$HVTRACE" list 2>/dev/null | awk -v n="$1" '$1 == n { print $4 }'
}
tries=100
until [ "$(list_state "$n")" = powered-off ] || [ $tries -eq 0 ]; do
	tries=$((tries - 1))
	sleep 0.1
done
"$HVTRACE" list
[ "$(list_state "$n")" = powered-off ] || fail "'hvtrace list' says '$(list_state "$n")' for '$n', not powered-off"
grep -qx 'remote_state=powered-off' <("$HVTRACE" guest status "$n" 2>&1) ||
	fail "'hvtrace guest status' does not say remote_state=powered-off"

# hvtrace guest list: the guest is still listed, in the same words.
"$HVTRACE" guest list >"$T_TMP/glist.out" 2>&1 || fail "hvtrace guest list failed: $(cat "$T_TMP/glist.out")"
cat "$T_TMP/glist.out"
grep -Eq "^$n +powered-off +- +- +- +powered-off " "$T_TMP/glist.out" ||
	fail "'hvtrace guest list' does not list '$n' as powered-off"
"$G" list --json | python3 -c '
import json, sys
g = [x for x in json.load(sys.stdin) if x["name"] == sys.argv[1]]
assert len(g) == 1 and g[0]["state"] == "powered-off" and g[0]["run_status"] == 0, g
' "$n" || fail "the launcher's list --json does not list '$n' as powered-off"

# the mount, where FUSE works here
if [ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ] && command -v fusermount3 >/dev/null; then
	MNT=$T_TMP/mnt
	mkdir -p "$MNT"
	if "$HVTRACE" mount "$MNT" --background >/dev/null 2>"$T_TMP/mount.err"; then
		tries=100
		until [ -e "$MNT/remotes/$n" ] || [ $tries -eq 0 ]; do
			tries=$((tries - 1))
			sleep 0.1
		done
		ls "$MNT/remotes/$n"
		got=$(cat "$MNT/remotes/$n/state" 2>&1)
		[ "$got" = powered-off ] || fail "the mount's remotes/$n/state says '$got', not powered-off"
		info "remotes/$n/state: $got"
		t_umount
	else
		info "FUSE does not mount here ($(head -1 "$T_TMP/mount.err")): the mount's state is not checked"
		MNT=
	fi
else
	info "no usable /dev/fuse or fusermount3: the mount's state is not checked"
fi

# stop
"$HVTRACE" guest stop "$n" >"$T_TMP/stop.out" 2>&1
rc=$?
cat "$T_TMP/stop.out"
[ $rc -eq 0 ] || fail "stop of a guest that powered off exits $rc, not 0"
[ "$(grep -c "'$n' had already powered off" "$T_TMP/stop.out")" -eq 1 ] ||
	fail "stop does not say once that '$n' had already powered off"
grep -q "stopped$\|no guest" "$T_TMP/stop.out" &&
	fail "stop says more than that it had powered off: $(grep "stopped$\|no guest" "$T_TMP/stop.out")"

"$HVTRACE" guest status "$n" >"$T_TMP/status2.out" 2>&1
rc=$?
cat "$T_TMP/status2.out"
[ $rc -eq 1 ] || fail "status after stop exits $rc, not 1"
[ "$(wc -l <"$T_TMP/status2.out")" -eq 1 ] || fail "status after stop says more than one line"
grep -q "no guest '$n'" "$T_TMP/status2.out" || fail "status after stop does not say 'no guest'"

"$HVTRACE" guest stop "$n" >"$T_TMP/stop2.out" 2>&1
rc=$?
cat "$T_TMP/stop2.out"
[ $rc -eq 0 ] || fail "a second stop exits $rc, not 0"
[ "$(grep -c "no guest '$n'" "$T_TMP/stop2.out")" -eq 1 ] && ! grep -q "stopped$" "$T_TMP/stop2.out" ||
	fail "a second stop does not say once, and only, that there is no guest"

# A guest whose QEMU is killed: crashed, everywhere.
t_name c crash
"$HVTRACE" guest start "$c" --initrd "$initrd" --log "$T_TMP/$c.log" \
	>"$T_TMP/start-c.out" 2>&1 || { cat "$T_TMP/start-c.out"; fail "hvtrace guest start $c failed"; }
[ "$(list_state "$c")" = ready ] || fail "'hvtrace list' says '$(list_state "$c")' for a running guest, not ready"
"$HVTRACE" guest list >"$T_TMP/glist-c.out" 2>&1
grep -Eq "^$c +ready +2 +512 +[0-9]+ +ready " "$T_TMP/glist-c.out" ||
	fail "'hvtrace guest list' does not say ready twice: $(cat "$T_TMP/glist-c.out")
hvtraced's log: $(tail -n 30 "$T_RUNDIR/hvtraced.log" 2>&1)"
qpid=$("$G" status "$c" | sed -n 's/^qemu_pid=//p')
[ -n "$qpid" ] || fail "no qemu_pid for '$c'"
kill -KILL "$qpid"
"$G" wait "$c" --poweroff --timeout 60 || fail "the launcher did not see QEMU of '$c' end"
"$HVTRACE" guest status "$c" >"$T_TMP/status-c.out" 2>&1 || fail "status of a crashed guest failed: $(cat "$T_TMP/status-c.out")"
grep -qx 'state=crashed' "$T_TMP/status-c.out" || fail "status does not say state=crashed: $(cat "$T_TMP/status-c.out")"
grep -q '^summary=crashed (QEMU was killed by signal 9; area .* removed)$' "$T_TMP/status-c.out" ||
	fail "status's summary: $(grep summary= "$T_TMP/status-c.out")"
tries=100
until [ "$(list_state "$c")" = crashed ] || [ $tries -eq 0 ]; do
	tries=$((tries - 1))
	sleep 0.1
done
[ "$(list_state "$c")" = crashed ] || fail "'hvtrace list' says '$(list_state "$c")' for '$c', not crashed"
"$HVTRACE" guest list 2>&1 | grep -Eq "^$c +crashed +- +- +- +crashed " ||
	fail "'hvtrace guest list' does not list '$c' as crashed: $("$HVTRACE" guest list 2>&1)"
"$HVTRACE" guest stop "$c" >"$T_TMP/stop-c.out" 2>&1 || fail "stop of a crashed guest failed"
[ "$(grep -c "'$c' had already crashed (QEMU was killed by signal 9" "$T_TMP/stop-c.out")" -eq 1 ] ||
	fail "stop does not say once that '$c' had crashed: $(cat "$T_TMP/stop-c.out")"
info "$(cat "$T_TMP/stop-c.out")"
echo "PASS"
