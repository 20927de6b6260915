#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest that scribbles over its own kernel trace ring while the host
# reads it live.  The guest kernel keeps its instance "hvt" in a memmap=
# reserved range (trace_instance=hvt@ADDR:SIZE, the address form of the
# persistent ring), which the guest's /dev/mem may map; the guest writes
# numbered trace_marker lines and, meanwhile, once the host's stream has
# printed one (the host sends "go" on the guest's port), area_scribble
# overwrites random ranges of that ring (metas, sub-buffers, everything)
# with random bytes for 20 s.  The host reads it from QEMU's memory by pid (hvtrace
# stream --vm-pid, anonymous guest RAM).
#
# The host must stay up and read on: the stream prints lines before the
# scribbling, is alive through all of it, ends by itself when QEMU exits
# (with an exit status, never a signal), counts errors for what did not
# validate, and its peak resident memory stays under a bound
# (HVT_SCRIBBLE_MAX_KB, default 32768: about 8 times what this stream
# needs here).  (What the scribbler leaves in a sub-buffer that still
# validates is printed as whatever it decodes to: the guest wrote it.)
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
MAX_KB=${HVT_SCRIBBLE_MAX_KB:-32768}
N=30000
ADDR=0x10000000
# The full guest image: it has area_scribble.
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
T=/sys/kernel/tracing/instances/hvt

t_name n scribble
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" --mem 512 \
	--append "memmap=2M\$$ADDR trace_instance=hvt@$ADDR:2M,ftrace:print,sched hvtrace.kformats=ftrace,sched" \
	--port go \
	--run "test -d $T || { echo hvt-no-instance; exit 1; }; (i=0; while [ \$i -lt $N ]; do echo \"hvt-mark \$i\" >$T/trace_marker; i=\$((i + 1)); done) & $(kring_gated "echo hvt-scribble-start; area_scribble --area /dev/mem --offset $ADDR --size 2M --seconds 20 --seed 11 --chunk 16384 --full-every 40; wait; echo hvt-scribble-done")" \
	--wait-ready --timeout 120 >/dev/null || fail "start failed"
qpid=$(status_get "$n" qemu_pid)
[ -n "$qpid" ] || fail "no QEMU pid for $n"
"$G" kformats "$n" "$T_TMP/fmt" >/dev/null || fail "kformats failed"

"$HVTRACE" stream --vm-pid "$qpid" --formats "$T_TMP/fmt" --summary \
	>"$T_TMP/out.txt" 2>"$T_TMP/err.txt" &
spid=$!
T_PIDS+=("$spid")
wait_line "$T_TMP/out.txt" 'hvt-mark' 120 || {
	cat "$T_TMP/err.txt"
	fail "the stream printed no marker line before the scribbling"
}
# Only now, with the stream reading, may the guest scribble: started at a
# fixed time after "ready", it could wreck the ring's meta page before a
# stream slowed by a loaded host had found it.
kring_go "$n" "$T_TMP/out.txt" "$spid" 'hvt-mark'
wait_line "$T_TMP/$n.log" '^area_scribble: scribbling over' 120 || {
	grep -a 'hvt-no-instance\|area_scribble' "$T_TMP/$n.log"
	fail "the guest did not start scribbling over its ring"
}

# Through the scribbling: alive (until QEMU goes), and its peak memory
# sampled.
peak=0
while kill -0 "$spid" 2>/dev/null; do
	kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$spid/status" 2>/dev/null)
	[ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
	grep -qa '^hvt-scribble-done' "$T_TMP/$n.log" && break
	sleep 0.5
done
grep -qa '^hvt-scribble-done' "$T_TMP/$n.log" || {
	cat "$T_TMP/err.txt"
	fail "the stream ended while the guest was still scribbling"
}
wait_pid_gone "$qpid" 120 || fail "QEMU $qpid did not end after the guest's run"
grep -qa '^area_scribble: [0-9]* rounds' "$T_TMP/$n.log" ||
	info "the guest did not finish scribbling (its kernel may have died of it): $(grep -a -m3 -i 'panic\|oops\|BUG' "$T_TMP/$n.log")"
st=0
timeout 60 tail --pid="$spid" -f /dev/null || fail "the stream did not end within 60 s of QEMU's exit"
wait "$spid" || st=$?
cat "$T_TMP/err.txt"
[ "$st" -lt 128 ] || fail "the stream died of signal $((st - 128))"
grep -q 'AddressSanitizer\|runtime error' "$T_TMP/err.txt" && fail "sanitizer report"
errors=$(sed -n 's/^hvtrace stream: .* lost, \([0-9]*\) errors in .*/\1/p' "$T_TMP/err.txt")
[ -n "$errors" ] || fail "the stream printed no summary"
[ "$errors" -gt 0 ] || fail "the stream counted no error while its ring was scribbled over"
info "stream exit status $st, $errors errors counted, peak resident $peak KiB (bound $MAX_KB)"
[ "$peak" -gt 0 ] || fail "no memory sample of the stream"
[ "$peak" -le "$MAX_KB" ] || fail "the stream's peak resident memory $peak KiB is over $MAX_KB KiB"
echo "PASS"
