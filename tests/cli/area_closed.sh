#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A user who may not read an area file is told so in one message, with
# what is true (the file's owner, group and mode, and that this user may
# not read it) and what to do (run as root, or read it through hvtraced
# by name, as the rig's areas are in the group of the user who started
# the guest): 'hvtrace stream AREA' as user nobody exits 1 with that
# message alone, not a note that it reads the area read-only followed by
# "Permission denied".
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (to run as user nobody)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
"$HVTRACE" loopback --area "$AREA" --cpus 1 --events 10 --pages 8 \
	--quiet || fail "loopback writer failed"
chown root:root "$AREA" && chmod 0660 "$AREA" || fail "cannot chmod $AREA"
if setpriv --reuid=nobody --regid=nogroup --clear-groups test -r "$AREA"; then
	echo "SKIP: $AREA is readable by user nobody here"
	exit 77
fi
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$HVTRACE" stream "$AREA" --drain >"$TMP/out" 2>"$TMP/err" </dev/null
rc=$?
[ $rc -eq 1 ] || fail "stream as nobody: exit $rc, expected 1 ($(cat "$TMP/err"))"
[ "$(grep -c . "$TMP/err")" = 1 ] ||
	fail "stream as nobody: not one message: $(cat "$TMP/err")"
grep -q "read-only" "$TMP/err" &&
	fail "stream as nobody said it reads the area read-only: $(cat "$TMP/err")"
nobody=$(id -u nobody)
grep -q "^hvtrace stream: area file $AREA (owner root, group root, mode 0660): this user (uid $nobody) may not read it (Permission denied).  Run as root, or read it through hvtraced by its name" "$TMP/err" ||
	fail "stream as nobody said: $(cat "$TMP/err")"
[ -s "$TMP/out" ] && fail "stream as nobody printed events: $(head -3 "$TMP/out")"

# A group that may read: it is named, with how to join it.
g=$(getent group adm >/dev/null && echo adm || echo daemon)
chgrp "$g" "$AREA" && chmod 0600 "$AREA" || fail "cannot chgrp $AREA"
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$HVTRACE" stream "$AREA" --drain >"$TMP/out" 2>"$TMP/err" </dev/null
rc=$?
[ $rc -eq 1 ] || fail "stream as nobody (group $g): exit $rc"
grep -q "(owner root, group $g, mode 0600): this user (uid $nobody) may not read it (Permission denied).  Run as root, or join its group $g ('usermod -aG $g USER' as root, then log in again, and give the group read access: 'chmod g+r FILE')" "$TMP/err" ||
	fail "stream as nobody (group $g) said: $(cat "$TMP/err")"
echo "ok: $(cat "$TMP/err")"
