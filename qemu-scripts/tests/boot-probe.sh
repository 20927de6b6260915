#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Boot one guest running hvt-probe: the launcher reports the paths it
# promises, the guest's userspace comes up, the pattern and counter the
# guest writes through its ivshmem mapping are in the host's /dev/shm file
# while it runs, a nonce the host writes is read back by the guest, lines
# echo over the control socket, and the guest powers off and leaves
# nothing behind.
. "$(dirname "$0")/lib.sh"
t_require

t_name n boot
seed=$((RANDOM * 65536 + RANDOM + 1))
count=250000
initrd=$(t_initrd)

info "start $n"
out=$("$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--run "hvt-probe --count $count --seed $seed --timeout 60") ||
	fail "start failed"
echo "$out"
rd=$T_RUNDIR/$n
[ "$(sed -n 's/^area=//p' <<<"$out")" = "$T_SHM/hvtrace-$n" ] || fail "start did not report area=$T_SHM/hvtrace-$n"
[ "$(sed -n 's/^control_sock=//p' <<<"$out")" = "$rd/control.sock" ] || fail "start did not report control_sock=$rd/control.sock"
[ "$(sed -n 's/^area_size=//p' <<<"$out")" = 16777216 ] || fail "default area size is not 16M"
[ "$(sed -n 's/^cpus=//p' <<<"$out")" -ge 2 ] || fail "fewer than 2 vCPUs"
[ -S "$rd/control.sock" ] || fail "no control socket at $rd/control.sock"
[ -S "$rd/qmp.sock" ] || fail "no QMP socket at $rd/qmp.sock"
size=$(stat -c %s "$T_SHM/hvtrace-$n") || fail "no area file"
[ "$size" -eq 16777216 ] || fail "area file has $size bytes, expected 16777216"
qpid=$(status_get "$n" qemu_pid)
[ -n "$qpid" ] && kill -0 "$qpid" || fail "status shows no live QEMU pid"
tr '\0' ' ' <"/proc/$qpid/cmdline" | grep -q 'ivshmem-plain' || fail "QEMU runs without ivshmem-plain"

t0=$EPOCHREALTIME
"$G" wait "$n" --ready --timeout 60 || fail "guest userspace did not come up"
info "userspace ready $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')s after start returned"
[ "$(status_get "$n" state)" = ready ] || [ ! -d "$rd" ] || fail "status does not say ready"

"$PROBE_HOST" --area "$T_SHM/hvtrace-$n" --sock "$rd/control.sock" \
	--seed "$seed" --count "$count" --echo 64 --timeout 60 ||
	fail "host-side probe failed"

"$G" wait "$n" --poweroff --timeout 60 || fail "guest did not power off"
grep -qa 'hvt-probe: host said BYE' "$T_TMP/$n.log" || fail "guest probe did not finish the protocol"
grep -qa 'hvtrace: run exited with status 0' "$T_TMP/$n.log" || fail "guest run command did not exit 0"
grep -qa 'hvtrace: powering off' "$T_TMP/$n.log" || fail "no poweroff marker on the console"
wait_pid_gone "$qpid" 10 || fail "QEMU $qpid still runs after poweroff"
assert_gone "$n"
echo "PASS"
