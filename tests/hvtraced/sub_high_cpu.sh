#!/bin/bash
# SPDX-License-Identifier: MIT
#
# issue 22 point 10: subscribing through hvtraced to a CPU at or above 64.
# A loopback area of 72 CPU buffers (an area may have up to 256), every
# CPU written N events by a writer that then stops, is attached to a
# private hvtraced; 'hvtrace stream NAME --cpu 70 --drain' subscribes to
# CPU 70 alone.  It must print exactly CPU 70's N events (ids 0..N-1, no
# loss), the area must show CPU 70 consumed (read + unread == written,
# the tail sub-buffer is read, not consumed) and no other CPU consumed: CPU 6 (70 % 64, what a 64-bit mask
# shifted by 70 gives) and CPU 71 keep all their events unread.  A
# subscription to CPU 72 (the area has 0..71) is refused, naming the
# range.
set -u

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OBJ=${HVT_OBJTREE:-$SRC/build}
HVTRACE=$OBJ/bin/hvtrace
. "$SRC/tests/cli/lib.sh"
SOCK=$TMP/hvtraced.sock
NAME=hc$$
CPUS=72
N=300
DPID=''

stop_daemon() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	DPID=''
}
trap 'stop_daemon; cleanup' EXIT

dfail() {
	echo "---- hvtraced.log" >&2
	tail -n 20 "$TMP/hvtraced.log" >&2
	fail "$@"
}

[ -x "$OBJ/bin/hvtraced" ] || fail "$OBJ/bin/hvtraced is not built"
"$HVTRACE" loopback --area "$AREA" --cpus $CPUS --events $N --pages 64 \
	--quiet || fail "loopback writer with $CPUS CPU buffers failed"

"$OBJ/bin/hvtraced" --foreground --socket "$SOCK" --run-dir "$TMP/run" \
	--shm-dir /dev/shm >"$TMP/hvtraced.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || dfail "hvtraced did not listen"
"$HVTRACE" daemon attach --area "$AREA" --name "$NAME" --socket "$SOCK" \
	>"$TMP/attach.txt" 2>&1 || dfail "attach: $(cat "$TMP/attach.txt")"

timeout 60 "$HVTRACE" stream "$NAME" --socket "$SOCK" --cpu 70 --drain \
	>"$TMP/s70.txt" 2>"$TMP/s70.err" ||
	dfail "stream --cpu 70 failed: $(cat "$TMP/s70.err")"
ids_exact "$TMP/s70.txt" 70 $N || dfail "CPU 70's events through hvtraced"
expect_eq "lines of CPU 70" "$(grep -c '^.* \[070\] ' "$TMP/s70.txt")" $N
expect_eq "lines of other CPUs" \
	"$(grep -v '^.* \[070\] ' "$TMP/s70.txt" | grep -c .)" 0
echo "stream --cpu 70: exactly CPU 70's $N events"

# The other CPUs were not consumed for nobody.
"$HVTRACE" stat "$AREA" >"$TMP/stat.txt" || fail "stat failed"
for cpu in 70 6 71 0; do
	read_ev=$(stat_field "$TMP/stat.txt" $cpu "read events")
	entries=$(stat_field "$TMP/stat.txt" $cpu entries)
	dropped=$(stat_field "$TMP/stat.txt" $cpu "dropped events")
	written=$(stat_field "$TMP/stat.txt" $cpu written)
	echo "cpu $cpu: read $read_ev + unread $entries + dropped" \
		"$dropped, written $written"
	expect_eq "cpu $cpu written" "$written" $N
	expect_eq "cpu $cpu dropped" "$dropped" 0
	expect_eq "cpu $cpu read + unread" $((read_ev + entries)) $N
	# (the tail sub-buffer, read but not consumed, stays in entries)
	if [ $cpu = 70 ]; then
		[ "$read_ev" -gt 0 ] || fail "cpu 70: nothing consumed"
	else
		expect_eq "cpu $cpu read (not subscribed)" "$read_ev" 0
	fi
done

# A CPU the remote has not: refused, with the range.
if timeout 30 "$HVTRACE" stream "$NAME" --socket "$SOCK" --cpu 72 --drain \
	>"$TMP/s72.txt" 2>"$TMP/s72.err"; then
	fail "stream --cpu 72 of a 72-CPU remote succeeded"
fi
grep -q "72" "$TMP/s72.err" || fail "refusal of CPU 72: $(cat "$TMP/s72.err")"
echo "cpu 72 refused: $(head -n1 "$TMP/s72.err")"
echo "PASS"
