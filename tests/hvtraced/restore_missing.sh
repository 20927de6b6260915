#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A restored area whose file is gone is "missing", said once, and
# looked for again with back-off, not every second for ever.
#
# A private hvtraced attaches two loopback areas, "gone" and "back", and
# stops; their writers stop and both files are removed.  After a restart
# with the same run folder:
#   - the log names each missing file once (counted over 5 s or more: no
#     line a retry), with what to do, and the file is looked for again with
#     back-off, not every second (its opens counted with strace, when
#     there is one);
#   - "hvtrace list" shows STATE "missing" and a line
#     "gone: missing (file gone: PATH)";
#   - "hvtrace stream gone" fails and names the missing file;
#   - a remote name that is not there lists "gone" as missing, not as
#     if it could be read;
#   - a mount (when FUSE mounts here) has no remotes/gone;
#   - "back"'s file, created again at its path by a new writer, is
#     attached again by itself (within the back-off);
#   - "hvtrace daemon detach gone" removes it for good: not listed, not
#     in hvtraced.state, not there after a further restart.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" restore-missing
SHM=/dev/shm/hvt-restore-missing-$$
STATE=$T/run/hvtraced.state
RM_WITH_T=$SHM
hvt_go_on_checks

hvt_need_bins
mkdir -m 700 "$T/run" "$SHM"

daemon_start() {	# LOG
	rm -f "$HVTRACED_SOCKET"
	"$OBJ/bin/hvtraced" --foreground --socket "$HVTRACED_SOCKET" \
		--run-dir "$T/run" >"$T/$1" 2>&1 &
	DPID=$!
	wait_for 10 "$H" daemon status || die "hvtraced did not start"
}

daemon_stop() {
	kill "$DPID"
	wait "$DPID"
	DPID=''
}

writer() {	# AREA: a loopback writer, running 60 s; its pid
	local pid
	pid=$("$H" loopback --area "$1" --cpus 1 --pages 4 --rate 100 \
		--duration 60 --background) || die "no loopback writer for $1"
	PIDS="$PIDS $pid"
	echo "$pid"
}

# --- the first daemon ------------------------------------------------------
GONE_PID=$(writer "$SHM/gone")
BACK_PID=$(writer "$SHM/back")
daemon_start d1.log
for n in gone back; do
	out=$("$H" daemon attach --area "$SHM/$n" --name "$n" 2>&1) ||
		die "attach of $n: $out"
done
wait_for 10 sh -c "[ \$(grep -c '^area' '$STATE') = 2 ]" ||
	die "hvtraced.state does not list the 2 areas: $(cat "$STATE" 2>&1)"
daemon_stop

# --- while it is down: the writers stop, their files go -------------------
kill "$GONE_PID" "$BACK_PID"
wait "$GONE_PID" "$BACK_PID" 2>/dev/null
rm -f "$SHM/gone" "$SHM/back"

# --- the second daemon -----------------------------------------------------
daemon_start d2.log
# How often the missing file is looked for, over 8 s (with strace): every
# second would be 8 times, a back-off of 1, 2, 4 ... s at most 4.
if command -v strace >/dev/null; then
	timeout 8 strace -f -p "$DPID" -o "$T/opens.trace" \
		-e trace=open,openat,stat,lstat,newfstatat,statx 2>/dev/null
	n_open=$(grep -c "$SHM/gone" "$T/opens.trace")
	echo "the missing file looked for $n_open times in 8 s"
	[ "$n_open" -le 4 ] ||
		fail "the missing file is looked for $n_open times in 8 s (every second, not backing off)"
else
	echo "strace is missing: how often the file is looked for is not checked"
	sleep 5
fi
n_gone=$(grep -c "'gone'" "$T/d2.log")
n_back=$(grep -c "'back'" "$T/d2.log")
echo "log lines since the restart: gone $n_gone, back $n_back"
[ "$n_gone" = 1 ] && [ "$n_back" = 1 ] ||
	fail "the log names a missing area $n_gone / $n_back times, not once: $(grep "'gone'" "$T/d2.log" | tail -n 3)"
line=$(grep "'gone'" "$T/d2.log" | head -n 1)
case $line in
*"$SHM/gone"*"hvtrace daemon detach gone"*) echo "said once: $line" ;;
*) fail "the log line does not say which file is gone and what to do: '$line'" ;;
esac

"$H" list >"$T/list.out" 2>&1 || fail "hvtrace list failed: $(cat "$T/list.out")"
cat "$T/list.out"
awk '$1 == "gone" && NF > 3 { print $4 }' "$T/list.out" | grep -qx missing ||
	fail "hvtrace list does not show 'gone' as missing"
grep -qF "gone: missing (file gone: $SHM/gone)" "$T/list.out" ||
	fail "hvtrace list does not name the file of 'gone'"

if timeout 20 "$H" stream gone --timeout 2 >"$T/stream.out" 2>"$T/stream.err"; then
	fail "hvtrace stream of a missing remote succeeded"
fi
grep -qF "$SHM/gone" "$T/stream.err" ||
	fail "hvtrace stream gone does not name the missing file: $(cat "$T/stream.err")"
echo "stream: $(head -n 1 "$T/stream.err")"

timeout 20 "$H" stream nosuch-$$ --timeout 2 >/dev/null 2>"$T/nosuch.err"
grep -q "gone (missing" "$T/nosuch.err" ||
	fail "an unknown name lists 'gone' as if it were usable: $(cat "$T/nosuch.err")"

# A mount (when FUSE can mount here) has no remotes/gone.
MNT=$T/mnt
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null && mkdir "$MNT" &&
	MNT_PID=$("$H" mount "$MNT" --background 2>"$T/mount.err"); then
	PIDS="$PIDS $MNT_PID"
	wait_for 10 test -d "$MNT/remotes" || fail "the mount has no remotes/"
	sleep 1	# its first look at the daemon's remotes
	echo "mount: remotes/ holds: $(ls "$MNT/remotes" | tr '\n' ' ')"
	[ -e "$MNT/remotes/gone" ] &&
		fail "the mount shows the missing 'gone' as a remote: $(ls "$MNT/remotes/gone" | tr '\n' ' ')"
	kill "$MNT_PID"
	wait_for 10 sh -c "! grep -q ' $MNT fuse' /proc/mounts" ||
		fail "the mount did not go"
else
	echo "FUSE cannot mount here: the mount is not checked ($(head -n 1 "$T/mount.err" 2>/dev/null))"
fi

# The file comes back at its path: attached again by itself.
writer "$SHM/back" >/dev/null
wait_for 40 "$H" stat back || fail "'back' was not attached again when its file came back"
"$H" list 2>&1 | awk '$1 == "back" { print $4 }' | grep -qx missing &&
	fail "'back' is still missing with its file there"

out=$("$H" daemon detach gone 2>&1) || fail "detach of the missing 'gone': $out"
"$H" list 2>&1 | grep -q '^gone ' && fail "'gone' is listed after its detach"
wait_for 5 sh -c "! grep -q '	gone	' '$STATE'" ||
	fail "hvtraced.state still has 'gone' after its detach"
daemon_stop
daemon_start d3.log
"$H" daemon info --remote gone >/dev/null 2>&1 &&
	fail "'gone' came back after a restart following its detach"
grep -q "'gone'" "$T/d3.log" && fail "the third daemon speaks of 'gone': $(grep "'gone'" "$T/d3.log")"

if [ "$bad" != 0 ]; then
	hvt_dump_logs 30
	exit 1
fi
echo "ok: a restored area whose file is gone is missing, said once, and goes with its detach"
