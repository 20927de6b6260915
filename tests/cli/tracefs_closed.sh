#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A user whom the mounted tracefs is closed to (tracefs is mode 0700,
# root's, by default) is told exactly that, with what to do, and not that
# tracefs "could not be mounted": 'hvtrace stream --kernel' and 'hvtrace
# stat --kernel' as user nobody exit 1 with that message.
. "$(dirname "$0")/lib.sh"
T=/sys/kernel/tracing
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (to run as user nobody)"; exit 77; }
[ -e $T/per_cpu ] || mount -t tracefs nodev $T 2>/dev/null
[ -e $T/per_cpu ] || { echo "SKIP: no tracefs at $T"; exit 77; }
if setpriv --reuid=nobody --regid=nogroup --clear-groups test -r $T/per_cpu; then
	echo "SKIP: tracefs at $T is open to user nobody on this machine (mode $(stat -c %a $T))"
	exit 77
fi
chmod 755 "$TMP"
for verb in stream stat; do
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$HVTRACE" $verb --kernel >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	[ $rc -eq 1 ] || fail "$verb --kernel as nobody: exit $rc, expected 1 ($(cat "$TMP/err"))"
	grep -q "tracefs is mounted at $T, but this user may not read it (Permission denied): run as root" "$TMP/err" ||
		fail "$verb --kernel as nobody said: $(cat "$TMP/err")"
	grep -q "could not be mounted" "$TMP/err" && fail "$verb --kernel as nobody blamed the mount: $(cat "$TMP/err")"
	echo "ok: $verb --kernel as nobody: $(head -1 "$TMP/err")"
done
