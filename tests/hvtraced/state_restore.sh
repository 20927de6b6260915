#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What hvtraced attaches again after a restart (RUN_DIR/hvtraced.state).
# A private hvtraced runs as root with --group nogroup; "nobody" with the
# supplementary group nogroup (setpriv) is a member, as in
# tests/fuse/privilege.sh.
#
# issue 22 point 1: a restart re-opened a member's attach as root.
#   The member attaches two areas of its own in a folder of its own
#   (/dev/shm/...): "keep" and "swapped".  While the daemon is down it
#   swaps a component of the swapped area's path for a symbolic link to a
#   folder holding root's 0600 area, and an older daemon's line (no
#   requester) naming root's area is added to the state file.  After the
#   restart "keep" is attached again (as the member); "swapped" is not
#   attached, and the log names the refusal (the member may not read and
#   write root's area); the old line is not attached, and the log says to
#   attach it again; a line whose uid is no user any more is not attached.
#   Before the fix the daemon attached both with its own
#   authority: root's area, read-write, for a member.
# issue 22 point 2: a restored area whose file is gone held its name.
#   Root attaches "gone"; while the daemon is down its writer stops and its
#   file is removed.  After the restart "gone" waits, and the log and
#   "hvtrace daemon info gone" say why (the file is missing, a new attach
#   of the name replaces it); an attach of "gone" that is refused leaves it
#   as it is; one that succeeds replaces it (before: "'gone' is attached
#   already") and the new area is read.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" state-restore
SHM=/dev/shm/hvt-state-restore-$$
STATE=$T/run/hvtraced.state
RM_WITH_T=$SHM
hvt_go_on_checks

hvt_need_bins
[ "$(id -u)" = 0 ] || skip "needs root (hvtraced as root, a member as nobody)"
command -v setpriv >/dev/null || skip "setpriv is missing (Debian: util-linux)"
getent passwd nobody >/dev/null && getent group nogroup >/dev/null &&
	getent group daemon >/dev/null ||
	skip "no user nobody or no groups nogroup/daemon here"
# nobody must be in nogroup by the user database too: a restart keeps
# only the groups the database still gives the member.
id -G nobody | tr ' ' '\n' | grep -qx "$(getent group nogroup | cut -d: -f3)" ||
	skip "nobody is not in the group nogroup by the user database"
MEMBER="setpriv --reuid=nobody --regid=daemon --groups=nogroup"
chmod 711 "$T"	# nobody reaches the socket
mkdir -m 755 "$T/run"

daemon_start() {	# LOG
	rm -f "$HVTRACED_SOCKET"
	"$OBJ/bin/hvtraced" --foreground --socket "$HVTRACED_SOCKET" \
		--run-dir "$T/run" --group nogroup >"$T/$1" 2>&1 &
	DPID=$!
	wait_for 10 "$H" daemon status || die "hvtraced did not start"
}

daemon_stop() {
	kill "$DPID"
	wait "$DPID"
	DPID=''
}

writer() {	# AREA [AS...]: a loopback writer, running 60 s
	local area=$1 pid
	shift
	pid=$("$@" "$H" loopback --area "$area" --cpus 1 --pages 4 --rate 100 \
		--duration 60 --background) || die "no loopback writer for $area"
	PIDS="$PIDS $pid"
	echo "$pid"
}

attach() {	# NAME AREA [AS...]
	local name=$1 area=$2
	shift 2
	"$@" "$H" daemon attach --area "$area" --name "$name" 2>&1
}

# --- the first daemon: what members and root attached ---------------------
mkdir -m 755 "$SHM" "$SHM/root"
mkdir -m 700 "$SHM/own" && chown nobody "$SHM/own"
$MEMBER mkdir "$SHM/own/d" || die "nobody cannot make a folder of its own"
writer "$SHM/own/d/area" $MEMBER >/dev/null
writer "$SHM/own/keep" $MEMBER >/dev/null
writer "$SHM/root/area" >/dev/null
GONE_PID=$(writer "$SHM/gone")
[ "$(stat -c '%a %U' "$SHM/root/area")" = "600 root" ] ||
	die "root's area is not root's 0600: $(stat -c '%a %U' "$SHM/root/area")"

daemon_start d1.log
out=$(attach swapped "$SHM/own/d/area" $MEMBER) || die "member's attach of swapped: $out"
out=$(attach keep "$SHM/own/keep" $MEMBER) || die "member's attach of keep: $out"
out=$(attach gone "$SHM/gone") || die "root's attach of gone: $out"
wait_for 10 sh -c "[ \$(grep -c '^area' '$STATE') = 3 ]" ||
	die "hvtraced.state does not list the 3 areas: $(cat "$STATE" 2>&1)"
echo "state file: $(tr '\t\n' ' |' <"$STATE")"
daemon_stop

# --- while it is down -----------------------------------------------------
# The member swaps a component of its path for a link to root's folder.
$MEMBER mv "$SHM/own/d" "$SHM/own/d.old" &&
	$MEMBER ln -s ../root "$SHM/own/d" || die "nobody cannot swap its folder"
[ "$(stat -L -c %i "$SHM/own/d/area")" = "$(stat -c %i "$SHM/root/area")" ] ||
	die "the swapped path does not lead to root's area"
# An older daemon's line: no requester.
printf 'area\told\t%s\n' "$SHM/root/area" >>"$STATE"
# A requester that is no user any more.
GHOST=3999999
getent passwd "$GHOST" >/dev/null && die "uid $GHOST exists here"
printf 'area\tghost\tuid=%s,gid=%s,groups=\t%s\n' "$GHOST" "$GHOST" "$SHM/own/keep" >>"$STATE"
kill "$GONE_PID"
rm -f "$SHM/gone"

# --- the second daemon ----------------------------------------------------
daemon_start d2.log
wait_for 20 "$H" stat keep || fail "the member's own area 'keep' was not attached again"
grep -q "attached area 'keep' again as uid 65534" "$T/d2.log" ||
	fail "no log line saying 'keep' was attached again as uid 65534"

# Point 1: root's area must not be attached for the member.
sleep 0.5
"$H" daemon info --remote keep | grep -qx "area: $SHM/own/keep" ||
	fail "daemon info --remote keep does not show its area"
names=$("$H" daemon status | awk 'NR > 1 { print $2 }' | sort | tr '\n' ' ')
echo "remotes after the restart: $names"
case " $names" in
*" swapped "* | *" old "* | *" ghost "*) fail "remotes after the restart: $names (swapped, old and ghost must not be there)" ;;
esac
if "$H" daemon info --remote swapped >"$T/swapped.info" 2>&1; then
	fail "root's 0600 area was attached as 'swapped' after the restart: $(grep '^area:' "$T/swapped.info")"
fi
line=$(grep "could not attach area 'swapped' again as uid 65534" "$T/d2.log")
case $line in
*"may not read and write $SHM/own/d/area"*) echo "refused: $line" ;;
*) fail "no log line names the refusal of 'swapped': '$line'" ;;
esac
if "$H" daemon info --remote old >/dev/null 2>&1; then
	fail "an old state line without a requester was attached with root's authority"
fi
grep -q "not attaching area 'old' .*does not say who attached it" "$T/d2.log" ||
	fail "no log line says the old line was not attached"
grep -q "not attaching area 'ghost' .*uid $GHOST, who attached it, is no user here any more" "$T/d2.log" ||
	fail "no log line says 'ghost' was not attached (its uid is gone)"

# Point 2: the gone file does not hold the name.
"$H" daemon info --remote gone >"$T/gone.info" 2>&1 || fail "the restored 'gone' is not listed"
grep -q "^problem: cannot open $SHM/gone: No such file or directory (attached again from hvtraced.state.*a new attach of 'gone' replaces it" "$T/gone.info" ||
	fail "daemon info gone does not say why it waits: $(grep -v '^wake\|^reader' "$T/gone.info" | tr '\n' '|')"
grep -q "remote 'gone': cannot open $SHM/gone: No such file or directory (attached again from hvtraced.state" "$T/d2.log" ||
	fail "no log line says why 'gone' waits"
out=$(attach gone "$SHM/own/missing" $MEMBER) &&
	fail "an attach of a missing file replaced 'gone': $out"
case $out in
*"cannot open $SHM/own/missing: No such file"*) echo "refused, 'gone' stays: $out" ;;
*) fail "a refused attach of 'gone' does not say why: '$out'" ;;
esac
"$H" daemon info --remote gone >/dev/null 2>&1 || fail "a refused attach dropped 'gone'"
writer "$SHM/own/new" $MEMBER >/dev/null
out=$(attach gone "$SHM/own/new" $MEMBER) ||
	fail "a new attach of 'gone' (its file missing) was refused: $out"
echo "new attach of gone: $out"
wait_for 20 "$H" stat gone || fail "the new area of 'gone' is not read"
"$H" daemon info --remote gone 2>/dev/null | grep -qx "area: $SHM/own/new" ||
	fail "'gone' is not the new area: $("$H" daemon info --remote gone 2>&1 | grep '^area')"
grep -q "remote 'gone': attached again from hvtraced.state, but its file is missing; replaced" "$T/d2.log" ||
	fail "no log line says 'gone' was replaced"

if [ "$bad" != 0 ]; then
	echo "---- d2.log" >&2
	tail -n 30 "$T/d2.log" >&2
	exit 1
fi
echo "ok: restored areas are attached as their requesters; a missing file frees its name"
