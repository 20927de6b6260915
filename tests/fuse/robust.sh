#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace mount never hangs: a read that waits in trace_pipe ends (end of
# file, or an error) when
#   1. its remote is detached from hvtraced,
#   2. its writer is SIGKILLed,
#   3. hvtraced itself is SIGKILLed (and the view comes back with it),
#   4. the reader is interrupted (SIGINT) or SIGKILLed: it dies at once
#      and the mount keeps serving,
#   5. the mount is lazily unmounted (fusermount3 -uz) -- a plain
#      fusermount3 -u is refused while the file is open, as for any
#      file system -- and hvtrace mount then exits,
#   6. hvtrace mount gets SIGTERM or SIGINT,
# and fusermount3 -u of an idle mount ends hvtrace mount cleanly.
. "$(dirname "$0")/lib.sh"
fz_need_fuse
fz_daemon
fz_mount

# A remote whose writer runs but writes nothing (its event disabled):
# a reader of trace_pipe waits.
quiet_remote() {	# quiet_remote NAME
	fz_loopback "$1" --cpus 1 --rate 100 --events 10000000 --pages 16
	fz_attach "$1" "$LB_AREA"
	wait_for 5 test -e "$MNT/remotes/$1/events/hvtrace/selftest/enable" ||
		fail "remote $1 did not appear"
	echo 0 > "$MNT/remotes/$1/events/hvtrace/selftest/enable" ||
		fail "disable on $1"
	sleep 0.3
	timeout 5 cat "$MNT/remotes/$1/trace_pipe" >/dev/null 2>&1 &
	local p=$!
	sleep 0.3
	kill $p 2>/dev/null
	wait $p 2>/dev/null
}

# blocked_reader FILE: start a reader (under timeout 20), check it waits.
blocked_reader() {
	timeout 20 cat "$1" >"$TMP/reader.out" 2>"$TMP/reader.err" &
	RPID=$!
	sleep 0.5
	kill -0 $RPID 2>/dev/null || fail "the reader of $1 did not wait"
}

# reader_ends WHAT: the reader ends within 10 s, not by timeout.
reader_ends() {
	local i rc
	for i in $(seq 1 200); do
		kill -0 $RPID 2>/dev/null || break
		sleep 0.05
	done
	kill -0 $RPID 2>/dev/null && fail "$1: the reader still waits"
	wait $RPID
	rc=$?
	[ $rc -ne 124 ] || fail "$1: the reader was ended by its timeout"
	echo "$1: the reader ended (status $rc$( [ -s "$TMP/reader.err" ] &&
		echo ", $(head -c 80 "$TMP/reader.err")"))"
}

# 1. Detached while read.
quiet_remote r1
blocked_reader "$MNT/remotes/r1/trace_pipe"
"$HVTRACE" daemon detach r1 >/dev/null || fail "detach r1"
reader_ends "detach"
wait_for 5 test ! -e "$MNT/remotes/r1" || fail "r1 is still in the view"

# 2. The writer is SIGKILLed while read.
quiet_remote r2
W2=$LB_PID
blocked_reader "$MNT/remotes/r2/per_cpu/cpu0/trace_pipe_raw"
kill -9 "$W2"
reader_ends "writer SIGKILLed"

# 3. hvtraced is SIGKILLed while read; the view comes back with it.
quiet_remote r3
blocked_reader "$MNT/remotes/r3/trace_pipe"
kill -9 "$D_PID"
reader_ends "hvtraced SIGKILLed"
wait_for 5 test -z "$(ls "$MNT/remotes")" || fail "remotes stayed without hvtraced"
fz_daemon
fz_attach r3 "$LB_AREA"
wait_for 10 test -e "$MNT/remotes/r3/trace" || fail "the view did not come back"
echo "the view reconnected to a new hvtraced"

# 4. The reader is interrupted or killed; the mount keeps serving.
echo 0 > "$MNT/remotes/r3/events/hvtrace/selftest/enable"
sleep 0.3
timeout -s INT 1 cat "$MNT/remotes/r3/trace_pipe" >/dev/null 2>&1
t0=$EPOCHREALTIME
timeout -s INT 1 cat "$MNT/remotes/r3/trace_pipe" >/dev/null 2>&1
rc=$?
dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
expect_eq "SIGINT to a waiting reader (timeout's status)" $rc 124
awk -v d="$dt" 'BEGIN { exit !(d < 4) }' || fail "the interrupted read took ${dt}s"
cat "$MNT/remotes/r3/tracing_on" >/dev/null || fail "the mount stopped serving"
blocked_reader "$MNT/remotes/r3/trace_pipe"
kill -9 $RPID
for i in $(seq 1 100); do
	kill -0 $RPID 2>/dev/null || break
	sleep 0.05
done
kill -0 $RPID 2>/dev/null && fail "a SIGKILLed reader did not die"
wait $RPID 2>/dev/null
expect_eq "tracing_on after the kills" "$(cat "$MNT/remotes/r3/tracing_on")" 1
echo "interrupted and killed readers: gone at once, the mount serves"

# 5. Unmounted while a reader waits.
blocked_reader "$MNT/remotes/r3/trace_pipe"
fusermount3 -u "$MNT" 2>"$TMP/umount.err" &&
	fail "fusermount3 -u succeeded with a file open"
grep -q "busy" "$TMP/umount.err" || fail "fusermount3 -u: $(cat "$TMP/umount.err")"
fusermount3 -uz "$MNT" || fail "fusermount3 -uz"
reader_ends "lazy unmount"
for i in $(seq 1 100); do
	running "$MNT_PID" || break
	sleep 0.05
done
running "$MNT_PID" && fail "hvtrace mount stayed after the unmount"
MNT_PID=
grep -q " $MNT fuse" /proc/mounts && fail "still mounted"
echo "lazy unmount with a waiting reader: the reader ends, hvtrace mount exits"

# 6. SIGTERM, then SIGINT, to hvtrace mount while a reader waits.
for sig in TERM INT; do
	fz_mount
	wait_for 5 test -e "$MNT/remotes/r3/trace_pipe" || fail "r3 in the new mount"
	blocked_reader "$MNT/remotes/r3/trace_pipe"
	kill -$sig "$MNT_PID"
	reader_ends "SIG$sig to hvtrace mount"
	for i in $(seq 1 100); do
		running "$MNT_PID" || break
		sleep 0.05
	done
	running "$MNT_PID" && fail "hvtrace mount survived SIG$sig"
	grep -q " $MNT fuse" /proc/mounts && fail "still mounted after SIG$sig"
	MNT_PID=
done

# 7. An idle mount unmounted from outside: hvtrace mount exits.
fz_mount
fusermount3 -u "$MNT" || fail "fusermount3 -u of an idle mount"
for i in $(seq 1 100); do
	running "$MNT_PID" || break
	sleep 0.05
done
running "$MNT_PID" && fail "hvtrace mount stayed after fusermount3 -u"
MNT_PID=
echo "fusermount3 -u: hvtrace mount exits"
exit 0
