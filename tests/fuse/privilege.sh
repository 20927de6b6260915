#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Least privilege, tried as an unprivileged user (nobody, through
# setpriv).  A private hvtraced runs as root with --group nogroup, so
# "nobody" with the supplementary group nogroup is a member and "nobody"
# with only the group daemon is not.
#   0. A group that does not exist is reported once in the daemon's log,
#      and the socket stays 0660 root's.
#   1. The socket is 0660, owned by the group; a non-member's connect is
#      refused by the file mode.
#   2. With the socket opened to everyone (--socket-mode 0666) the daemon
#      itself refuses a non-member (SO_PEERCRED) with a message; a member
#      gets in.
#   3. ATTACH_AREA from a member: its own area in /dev/shm (a loopback
#      file, created 0600) is attached; a file outside the allowed
#      directories, a symbolic link, a file it may not write (root's
#      0600 area) and a FIFO are refused, each with its reason.
#   4. hvtrace mount --allow-other: the kernel enforces the files' modes
#      (default_permissions): nobody's reads and writes of 0640 and 0440
#      files fail with EACCES; root's work.
. "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || {
	echo "SKIP: setpriv is missing (Debian: util-linux)"
	exit 77
}
getent passwd nobody >/dev/null && getent group nogroup >/dev/null &&
	getent group daemon >/dev/null || {
	echo "SKIP: no user nobody or no groups nogroup/daemon here"
	exit 77
}
[ "$(id -u)" = 0 ] || {
	echo "SKIP: needs root (starts hvtraced as root and switches to nobody)"
	exit 77
}
MEMBER="setpriv --reuid=nobody --regid=daemon --groups=nogroup"
OTHER="setpriv --reuid=nobody --regid=daemon --clear-groups"
chmod 755 "$TMP"	# nobody reaches the socket and the mount in it
OUT=/tmp/hvt-priv-$$
mkdir -p "$OUT" && chown nobody "$OUT" && chmod 700 "$OUT"
cleanup_out() { rm -rf "$OUT"; rm -f /dev/shm/hvt-priv-$$-*; }
trap 'cleanup_out; fz_cleanup' EXIT
skipped=

# --- 0. a missing group is reported, once --------------------------------
fz_daemon --group "hvt-no-such-group-$$"
"$HVTRACE" list >/dev/null 2>&1	# a client: nothing more is logged about it
expect_eq "reports of the missing group" \
	"$(grep -c "group 'hvt-no-such-group-$$' does not exist" "$TMP/d.log")" 1
expect_eq "socket mode without the group" "$(stat -c '%a %G' "$TMP/d.sock")" "660 root"
# A user who may not connect is told why and how to get in: the group
# did not exist, so it must be made and the daemon restarted.
out=$(HVTRACED_SOCKET=$TMP/d.sock $OTHER "$HVTRACE" list 2>&1) &&
	fail "a non-root user connected to a 0660 root-group socket: $out"
case $out in
*"as the group hvtrace did not exist when hvtraced started"*"groupadd --system hvtrace"*"restart hvtraced"*) ;;
*) fail "refused user without the group was told: '$out'" ;;
esac
kill "$D_PID"
wait_for 10 sh -c "! kill -0 $D_PID" || fail "hvtraced did not stop"

# --- 1. the socket's mode --------------------------------------------------
fz_daemon --group nogroup
mode=$(stat -c '%a %G' "$TMP/d.sock")
expect_eq "socket mode and group" "$mode" "660 nogroup"
out=$(HVTRACED_SOCKET=$TMP/d.sock $OTHER "$HVTRACE" list 2>&1) &&
	fail "a non-member connected to a 0660 socket: $out"
case $out in
*"no permission to use hvtraced's socket $TMP/d.sock: join its group nogroup ('usermod -aG nogroup USER'"*) ;;
*) fail "non-member's connect: '$out'" ;;
esac
HVTRACED_SOCKET=$TMP/d.sock $MEMBER "$HVTRACE" list >/dev/null ||
	fail "a member of the socket's group cannot connect"
echo "socket 0660 nogroup: non-member refused ($out)"
kill "$D_PID"
wait_for 10 sh -c "! kill -0 $D_PID" || fail "hvtraced did not stop"

# --- 2. SO_PEERCRED --------------------------------------------------------
fz_daemon --group nogroup --socket-mode 0666
out=$(HVTRACED_SOCKET=$TMP/d.sock $OTHER "$HVTRACE" list 2>&1) &&
	fail "hvtraced served a non-member: $out"
case $out in
*"refused the connection: uid 65534 may not use hvtraced"*) ;;
*) fail "non-member on a 0666 socket: '$out'" ;;
esac
grep -q "refusing connection .*uid 65534 may not use" "$TMP/d.log" ||
	fail "the refusal is not in the daemon log"
HVTRACED_SOCKET=$TMP/d.sock $MEMBER "$HVTRACE" list >/dev/null ||
	fail "a member (supplementary group) was refused"
echo "socket 0666: hvtraced refused the non-member itself ($out)"

# --- 3. ATTACH_AREA --------------------------------------------------------
mine=/dev/shm/hvt-priv-$$-mine
$MEMBER "$HVTRACE" loopback --area "$mine" --cpus 1 --pages 4 \
	--rate 100 --duration 60 --background >"$TMP/mine.pid" ||
	fail "nobody cannot run a loopback writer"
PIDS="$PIDS $(cat "$TMP/mine.pid")"
expect_eq "loopback area mode" "$(stat -c '%a %U' "$mine")" "600 nobody"
attach() {	# NAME AREA: attach as the member
	HVTRACED_SOCKET=$TMP/d.sock $MEMBER "$HVTRACE" daemon attach \
		--area "$2" --name "$1" 2>&1
}
refused() {	# NAME AREA REASON: the member's attach fails, saying REASON
	local out
	out=$(attach "$1" "$2") && fail "$1: the member attached $2"
	case $out in
	*"$3"*) ;;
	*) fail "$1: '$out', expected '$3'" ;;
	esac
	echo "$1: $out"
}
out=$(attach mine "$mine") || fail "a member cannot attach its own area: $out"
wait_for 20 "$HVTRACE" stat mine >/dev/null ||
	fail "hvtraced did not read the member's area"

outside=$OUT/area
$MEMBER "$HVTRACE" loopback --area "$outside" --cpus 1 --pages 4 \
	--duration 60 --background >"$TMP/out.pid" ||
	fail "nobody cannot run a loopback writer in $OUT"
PIDS="$PIDS $(cat "$TMP/out.pid")"
refused outside "$outside" "outside the directories hvtraced attaches areas from"

roots=/dev/shm/hvt-priv-$$-root
"$HVTRACE" loopback --area "$roots" --cpus 1 --pages 4 --duration 60 \
	--background >"$TMP/root.pid" || fail "root's loopback writer did not start"
PIDS="$PIDS $(cat "$TMP/root.pid")"
refused roots "$roots" "may not read and write"

link=/dev/shm/hvt-priv-$$-link
$MEMBER ln -s "$roots" "$link" || fail "nobody cannot make a link in /dev/shm"
refused link "$link" "symbolic link"

fifo=/dev/shm/hvt-priv-$$-fifo
$MEMBER mkfifo -m 0600 "$fifo" || fail "nobody cannot make a FIFO in /dev/shm"
refused fifo "$fifo" "not a regular file"
for n in outside roots link fifo; do
	"$HVTRACE" stat "$n" >/dev/null 2>&1 && fail "remote $n exists after a refusal"
done
out=$("$HVTRACE" daemon attach --area "$outside" --name rootattach 2>&1) ||
	fail "root cannot attach a file outside the directories: $out"

# --- 4. the FUSE view with --allow-other ------------------------------------
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: step 4: /dev/fuse or fusermount3 is missing here"
	skipped=1
else
	fz_mount --allow-other
	grep " $MNT fuse.hvtrace " /proc/mounts | grep -q default_permissions ||
		fail "mounted without default_permissions: $(grep " $MNT " /proc/mounts)"
	wait_for 20 test -e "$MNT/remotes/mine/tracing_on" ||
		fail "the remote 'mine' is not in the view"
	for f in remotes/mine/tracing_on remotes/mine/trace_pipe \
		remotes/mine/events/enable remotes/mine/per_cpu/cpu0/stats; do
		m=$(stat -c %a "$MNT/$f")
		case $m in 640 | 440) ;; *) fail "$f has mode $m" ;; esac
		out=$($MEMBER sh -c "echo 0 > '$MNT/$f'" 2>&1) &&
			fail "nobody wrote $f (mode $m)"
		case $out in
		*"Permission denied"*) ;;
		*) fail "nobody's write to $f: '$out'" ;;
		esac
		out=$($MEMBER cat "$MNT/$f" 2>&1 </dev/null) &&
			fail "nobody read $f (mode $m)"
		case $out in
		*"Permission denied"*) ;;
		*) fail "nobody's read of $f: '$out'" ;;
		esac
		echo "$f ($m): nobody's read and write: Permission denied"
	done
	ls "$MNT/remotes" >/dev/null || fail "root cannot list the view"
	expect_eq "root reads tracing_on" "$(cat "$MNT/remotes/mine/tracing_on")" 1
	fz_umount
fi
if [ -n "$skipped" ]; then
	exit 77
fi
echo "ok: socket, peer check, attach rules and mount modes hold for nobody"
