#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Draining a full guest kernel ring from a kept RAM file, on one thread.
#
# A rig guest with a 64 MiB persistent ring (--kernel-buffer 64M: 32 MiB
# per CPU) records its own raw_syscalls while getppid_loop runs on each
# of its two CPUs, enough calls to lap the ring, then powers off; the
# launcher keeps its RAM file (--keep-ram).  The host then reads that
# file post mortem:
#
#   - 'hvtrace stream RAMFILE --drain --summary', text to /dev/null: the
#     events read per second of wall time;
#   - 'hvtrace record -o F --guest-kernel RAMFILE' (one reader):
#     the ring's bytes per second (the trace.dat's size over the wall
#     time; the file in /dev/shm).
#
#   BENCH kring_drain_data_mib            M MiB    (the trace.dat: the
#                                                   ring's pages and the
#                                                   formats, about 1 MiB)
#   BENCH kring_drain_stream_events_per_s E events/s
#   BENCH kring_drain_stream_mbps         M MB/s   (ring bytes, text out)
#   BENCH kring_drain_record_mbps         M MB/s
#
# Environment: HVT_BENCH_KRING_CALLS (getppid calls per CPU, default
# 400000).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
K=${HVT_BENCH_KRING_CALLS:-400000}
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
t_own_daemon

t_name n kdrain
"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events raw_syscalls --kernel-buffer 64M --keep-ram \
	--run "taskset 1 getppid_loop $K & taskset 2 getppid_loop $K; wait; echo hvt-fill-done" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
"$G" wait "$n" --poweroff --timeout 600 >/dev/null ||
	fail "the guest did not power off after its loops: $(tail -3 "$T_TMP/$n.log")"
grep -qa '^hvt-fill-done' "$T_TMP/$n.log" || fail "the guest's loops did not finish"
ram=$T_SHM/hvtrace-$n.ram
[ -f "$ram" ] || fail "no kept RAM file $ram"
"$G" kformats --log "$T_TMP/$n.log" "$T_TMP/fmt" >/dev/null || fail "kformats failed"

# timed CMD...: run it, stderr in $T_TMP/cmd.err; its wall time in $wall.
timed() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>"$T_TMP/cmd.err" || { cat "$T_TMP/cmd.err"; fail "$* failed"; }
	t1=$(date +%s.%N)
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
}

timed "$HVTRACE" stream "$ram" --drain --summary --formats "$T_TMP/fmt"
cat "$T_TMP/cmd.err"
events=$(awk '/^  cpu [0-9]+: [0-9]+ events/ { n += $3 } END { print n + 0 }' "$T_TMP/cmd.err")
[ "$events" -gt 0 ] || fail "the stream of $ram read no events"
stream_wall=$wall

dat=$T_SHM/hvt-kdrain-$$.dat
timed "$HVTRACE" record -o "$dat" --guest-kernel "$ram" --formats "$T_TMP/fmt" \
	-q
bytes=$(stat -c %s "$dat")
rm -f "$dat"
record_wall=$wall
# Both CPUs' halves lapped: the file holds (about) the whole ring.
[ "$bytes" -ge $((60 * 1048576)) ] ||
	fail "the recording of the ring has $bytes bytes: the ring was not full (raise HVT_BENCH_KRING_CALLS)"
info "stream: $events events in $stream_wall s; record: $bytes bytes in $record_wall s"
awk -v e="$events" -v sw="$stream_wall" -v b="$bytes" -v rw="$record_wall" 'BEGIN {
	printf "BENCH kring_drain_data_mib %.1f MiB\n", b / 1048576
	printf "BENCH kring_drain_stream_events_per_s %.0f events/s\n", (sw > 0 ? e / sw : 0)
	printf "BENCH kring_drain_stream_mbps %.1f MB/s\n", (sw > 0 ? b / sw / 1e6 : 0)
	printf "BENCH kring_drain_record_mbps %.1f MB/s\n", (rw > 0 ? b / rw / 1e6 : 0)
}'
"$G" cleanup --areas "$n" >/dev/null 2>&1
exit 0
