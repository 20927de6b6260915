# SPDX-License-Identifier: MIT
#
# Helpers for the tests of the tracefs-style view and of area remotes.
# Source it; it sets
#   HVTRACE, HVTRACED, TRACEFS_READ   the programs under test
#   TMP       a scratch directory (removed on exit)
#   MNT       $TMP/mnt, the mount point of fz_mount
#   HVTRACED_SOCKET  a private daemon's socket (after fz_daemon)
# and on exit unmounts, stops every process it started and removes the
# /dev/shm files named in SHM_FILES.
#
#   fz_need_fuse              exit 77 (with SKIP:) without usable FUSE
#   fz_daemon [ARGS]          start a private hvtraced (and wait until it
#                             answers)
#   fz_loopback NAME ARGS     a background loopback writer on
#                             /dev/shm/hvt-fz-$$-NAME; sets LB_PID, LB_AREA
#   fz_attach NAME AREA       hvtrace daemon attach --area AREA --name NAME
#   fz_mount [ARGS]           hvtrace mount $MNT --background; sets MNT_PID
#   fz_umount                 SIGTERM the mount and wait for it
#   expect_errno ERRTEXT CMD  CMD must fail and say ERRTEXT (strerror)
#   wait_for SECONDS CMD      retry CMD every 50 ms until it succeeds
#   running PID               PID is alive (not a zombie)
#   fz_need_guest             exit 77 (with SKIP:) without QEMU; sets SRC,
#                             OBJ, LAUNCHER (the rig's hvtrace-guest) and
#                             IMAGE (its initramfs, which must be built)
#   fz_stop_guest             stop and clean up the rig guest $G, then
#                             fz_cleanup (an EXIT trap)

set -u
HVTRACE=${HVTRACE:-${HVT_OBJTREE:-build}/bin/hvtrace}
HVTRACED=${HVTRACED:-${HVT_OBJTREE:-build}/bin/hvtraced}
TRACEFS_READ=${TRACEFS_READ:-${HVT_OBJTREE:-build}/tests/fuse/tracefs_read}
for p in "$HVTRACE" "$HVTRACED"; do
	[ -x "$p" ] || { echo "FAIL: $p is missing (build first)"; exit 1; }
done
TMP=$(mktemp -d /tmp/hvt-fz.XXXXXX)
MNT=$TMP/mnt
mkdir -p "$MNT"
PIDS=
SHM_FILES=
MNT_PID=
D_PID=

# running PID: PID exists and is not a zombie (a detached process is
# reparented to PID 1, which may be slow to reap it; kill -0 succeeds on a
# zombie).
running() {
	local st
	kill -0 "$1" 2>/dev/null || return 1
	st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

fz_cleanup() {
	local p
	if [ -n "$MNT_PID" ] && running "$MNT_PID"; then
		kill -TERM "$MNT_PID" 2>/dev/null
		for _ in $(seq 1 100); do
			running "$MNT_PID" || break
			sleep 0.05
		done
	fi
	grep -q " $MNT fuse" /proc/mounts 2>/dev/null &&
		fusermount3 -uz "$MNT" 2>/dev/null
	for p in $PIDS $MNT_PID $D_PID; do
		{ kill -9 "$p"; wait "$p"; } 2>/dev/null
	done
	for p in $SHM_FILES; do
		rm -f "$p"
	done
	rm -rf "$TMP"
}
trap fz_cleanup EXIT

fail() {
	echo "FAIL: $*"
	[ -f "$TMP/d.log" ] && { echo "--- hvtraced log"; tail -n 60 "$TMP/d.log"; }
	[ -f "$TMP/mount.log" ] && { echo "--- mount log"; tail -n 20 "$TMP/mount.log"; }
	exit 1
}

# expect_eq WHAT GOT WANT
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

fz_need_fuse() {
	if [ ! -c /dev/fuse ] || ! [ -r /dev/fuse ] || ! [ -w /dev/fuse ]; then
		echo "SKIP: /dev/fuse is missing or not usable here"
		exit 77
	fi
	if ! command -v fusermount3 >/dev/null; then
		echo "SKIP: fusermount3 is not installed (Debian: fuse3)"
		exit 77
	fi
}

fz_daemon_up() {
	"$HVTRACE" daemon status >/dev/null
}

fz_daemon() {
	rm -f "$TMP/d.sock"	# a killed daemon's socket: not the new one
	"$HVTRACED" -f --socket "$TMP/d.sock" --run-dir "$TMP/run" \
		--shm-dir "$TMP" "$@" >"$TMP/d.log" 2>&1 &
	D_PID=$!
	disown $D_PID
	export HVTRACED_SOCKET=$TMP/d.sock
	wait_for 10 fz_daemon_up || fail "hvtraced did not start"
}

# fz_loopback NAME ARGS...: a background writer; LB_PID, LB_AREA.
fz_loopback() {
	local name=$1
	shift
	LB_AREA=/dev/shm/hvt-fz-$$-$name
	rm -f "$LB_AREA"
	SHM_FILES="$SHM_FILES $LB_AREA"
	LB_PID=$("$HVTRACE" loopback --area "$LB_AREA" --background \
		--log "$TMP/lb-$name.log" "$@") || fail "loopback $name did not start"
	PIDS="$PIDS $LB_PID"
}

fz_attach() {
	"$HVTRACE" daemon attach --area "$2" --name "$1" >/dev/null ||
		fail "cannot attach $2 as $1"
}

fz_mount() {
	MNT_PID=$("$HVTRACE" mount "$MNT" --background "$@" 2>"$TMP/mount.log")
	local rc=$?
	if [ $rc -ne 0 ]; then
		if grep -qiE "fuse: device not found|cannot mount|Operation not permitted" "$TMP/mount.log"; then
			echo "SKIP: FUSE cannot mount here: $(head -1 "$TMP/mount.log")"
			exit 77
		fi
		fail "hvtrace mount failed: $(cat "$TMP/mount.log")"
	fi
	grep -q " $MNT fuse.hvtrace " /proc/mounts || fail "$MNT is not mounted"
}

fz_umount() {
	kill -TERM "$MNT_PID" 2>/dev/null
	for _ in $(seq 1 200); do
		running "$MNT_PID" || break
		sleep 0.05
	done
	running "$MNT_PID" && fail "hvtrace mount did not stop on SIGTERM"
	grep -q " $MNT fuse" /proc/mounts && fail "$MNT is still mounted"
	MNT_PID=
}

# wait_for SECONDS CMD...
wait_for() {
	local t=$1 i
	shift
	for ((i = 0; i < t * 20; i++)); do
		"$@" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# expect_errno "Invalid argument" sh -c 'echo 2 > FILE'
expect_errno() {
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then
		fail "'$*' succeeded, expected '$want'"
	fi
	case $out in
	*"$want"*) ;;
	*) fail "'$*' said '$out', expected '$want'" ;;
	esac
}

# writer_field LOG CPU COLUMN (the loopback writer's summary table)
writer_field() {
	awk -v cpu="$2" -v col="$3" '
	$1 == "cpu" { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
	c && $1 == cpu { print $c; exit }' "$1"
}

# ids_exact FILE CPU N: trace_pipe lines of CPU hold selftest ids 0..N-1
# in order, with no loss line.
ids_exact() {
	awk -v cpu="$2" -v n="$3" '
	BEGIN { want = 0; tag = sprintf("[%03d]", cpu) }
	$0 ~ "^CPU:" cpu " \\[LOST" { print "lost line: " $0; bad = 1; exit }
	$2 == tag && /selftest:/ {
		split($NF, a, "=")
		if (a[2] != want) { print "line " NR ": id " a[2] ", expected " want; bad = 1; exit }
		want++
	}
	END {
		if (bad) exit 1
		if (want != n) { print "cpu " cpu ": " want " ids, expected " n; exit 1 }
	}' "$1"
}

fz_need_guest() {
	[ -x "$TRACEFS_READ" ] || fail "$TRACEFS_READ is missing (make tests)"
	if [ ! -x /usr/bin/qemu-system-x86_64 ]; then
		echo "SKIP: qemu-system-x86_64 is not installed (make deps)"
		exit 77
	fi
	SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	OBJ=${HVT_OBJTREE:-$SRC/build}
	LAUNCHER=$SRC/qemu-scripts/hvtrace-guest
	IMAGE=$OBJ/qemu-scripts/guest.cpio.gz
	[ -r "$IMAGE" ] || fail "$IMAGE is not built: make O=$OBJ guest-image"
}

fz_stop_guest() {
	"$LAUNCHER" stop "$G" --timeout 20 >/dev/null 2>&1
	"$LAUNCHER" cleanup "$G" >/dev/null 2>&1
	fz_cleanup
}
