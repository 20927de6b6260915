#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Boot time of an hvtrace guest under TCG with 2 vCPUs, launched through
# hvtrace-guest (ivshmem area, virtio-serial control port, supervisor),
# against a plain QEMU boot of the same kernel and initramfs without the
# rig's devices, measured in the same run.  Prints the median of
# HVT_BENCH_BOOTS runs (default 5) for:
#   launch -> "hvtrace: guest ready" on the console (userspace up)
#   launch -> QEMU gone after the guest's poweroff
. "$(dirname "$0")/lib.sh"
t_require

runs=${HVT_BENCH_BOOTS:-5}
initrd=$(t_initrd)
kernel=$("$T_SRCTREE/qemu-scripts/fetch-kernel.sh") || fail "no guest kernel"

ms_since() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d\n", (b - a) * 1000 }'
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# Poll LOG until the ready marker shows; print ms since T0.
ready_ms() {
	local t0=$1 log=$2 tries=6000
	until grep -qa 'hvtrace: guest ready' "$log" 2>/dev/null; do
		tries=$((tries - 1))
		[ $tries -gt 0 ] || fail "no ready marker in $log"
		sleep 0.01
	done
	ms_since "$t0"
}

: >"$T_TMP/rig.ready"
: >"$T_TMP/rig.off"
: >"$T_TMP/plain.ready"
: >"$T_TMP/plain.off"
for i in $(seq "$runs"); do
	# Plain QEMU, same machine, kernel and initramfs.
	log=$T_TMP/plain-$i.log
	t0=$EPOCHREALTIME
	qemu-system-x86_64 -machine q35 -accel tcg,thread=multi -cpu max -smp 2 -m 512 \
		-nodefaults -no-user-config -display none -monitor none -no-reboot \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check hvtrace.run=true" \
		-chardev "file,id=con,path=$log" -serial chardev:con &
	qpid=$!
	ready_ms "$t0" "$log" >>"$T_TMP/plain.ready"
	wait $qpid || fail "plain QEMU failed"
	ms_since "$t0" >>"$T_TMP/plain.off"

	# The rig.
	t_name n "b$i"
	log=$T_TMP/$n.log
	t0=$EPOCHREALTIME
	"$G" start --name "$n" --initrd "$initrd" --kernel "$kernel" --accel tcg \
		--log "$log" --run true >/dev/null || fail "start failed"
	ready_ms "$t0" "$log" >>"$T_TMP/rig.ready"
	"$G" wait "$n" --poweroff --timeout 60 || fail "rig guest did not power off"
	ms_since "$t0" >>"$T_TMP/rig.off"
	echo "run $i: plain ready $(tail -n1 "$T_TMP/plain.ready") ms, off $(tail -n1 "$T_TMP/plain.off") ms;" \
		"rig ready $(tail -n1 "$T_TMP/rig.ready") ms, off $(tail -n1 "$T_TMP/rig.off") ms;" \
		"guest $(grep -ao 'uptime [0-9.]*s' "$log")"
done
echo "BENCH qemu_tcg_smp2_userspace_plain $(median <"$T_TMP/plain.ready") ms"
echo "BENCH qemu_tcg_smp2_userspace_rig $(median <"$T_TMP/rig.ready") ms"
echo "BENCH qemu_tcg_smp2_poweroff_plain $(median <"$T_TMP/plain.off") ms"
echo "BENCH qemu_tcg_smp2_poweroff_rig $(median <"$T_TMP/rig.off") ms"
