#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace mount --area NAME=AREA: the view owns areas itself, without
# hvtraced (--no-daemon), and next to the daemon's remotes.
#   - a loopback writer waiting for an enable starts when the view
#     attaches it; libtracefs reads every record; the view's enable file
#     stops the writer's event
#   - a writer that stopped ends trace_pipe (end of file)
#   - with hvtraced too, both kinds of remotes are listed
. "$(dirname "$0")/lib.sh"
fz_need_fuse
[ -x "$TRACEFS_READ" ] || fail "$TRACEFS_READ is missing (make tests)"

N=10000
fz_loopback own --cpus 2 --events $N --rate 20000 --pages 512 --wait-enable
OWN=$LB_AREA
fz_mount --no-daemon --area "own=$OWN"
expect_eq "remotes" "$(ls "$MNT/remotes")" own
R=$MNT/remotes/own
expect_eq "enabled by the view" "$(cat "$R/events/hvtrace/selftest/enable")" 1
wait_for 10 eval "! running $LB_PID" || fail "the writer did not finish"
"$TRACEFS_READ" "$MNT" own --cpus 2 --no-loss --seq hvtrace:selftest:id \
	--expect "hvtrace:selftest:*=$N" >"$TMP/read.txt" 2>&1 ||
	fail "libtracefs: $(cat "$TMP/read.txt")"
sed 's/^/    /' "$TMP/read.txt"
timeout 10 cat "$R/trace_pipe" >/dev/null
expect_eq "trace_pipe of a stopped writer ends" $? 0
echo "--area without hvtraced: $((2 * N)) records through libtracefs"

# The enable file reaches the writer through the control page.
fz_loopback ctl --cpus 1 --rate 500 --events 100000000 --pages 64
fz_umount
fz_mount --no-daemon --area "ctl=$LB_AREA"
C=$MNT/remotes/ctl
sleep 0.5
echo 0 > "$C/events/hvtrace/selftest/enable" || fail "disable"
sleep 0.3
echo > "$C/trace"
sleep 0.5
expect_eq "records while disabled" "$(grep -c selftest: "$C/trace")" 0
echo 1 > "$C/events/hvtrace/selftest/enable" || fail "enable"
sleep 0.5
[ "$(grep -c selftest: "$C/trace")" -gt 0 ] || fail "nothing after enabling"
echo "the view's enable file drives the writer"

# Both: hvtraced's remotes and our own.
CTL=$LB_AREA
fz_umount
fz_daemon
fz_loopback dmn --cpus 1 --events 100 --wait-enable
fz_attach dmn "$LB_AREA"
fz_mount --area "ctl=$CTL"
wait_for 5 test -e "$MNT/remotes/dmn/trace" || fail "the daemon's remote is missing"
expect_eq "remotes" "$(ls "$MNT/remotes" | tr '\n' ' ')" "ctl dmn "
"$TRACEFS_READ" "$MNT" dmn --cpus 1 --no-loss --seq hvtrace:selftest:id \
	--expect "hvtrace:selftest:0=100" >"$TMP/read2.txt" 2>&1 ||
	fail "libtracefs dmn: $(cat "$TMP/read2.txt")"
echo "hvtraced's remotes next to our own"
exit 0
