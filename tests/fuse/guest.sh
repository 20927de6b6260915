#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A real guest (QEMU TCG, the rig's initramfs) through hvtrace mount: its
# agent registers the e2e workload's user event over virtio-serial, the
# event appears in the view and is enabled there, the workload writes
# into the ivshmem BAR, and
#   - trace shows every record once, each field decoded right
#     (seq, val = seq * 7 + 3, a __rel_loc string "m<seq>x...")
#   - libtracefs then reads every record from trace_pipe_raw
. "$(dirname "$0")/lib.sh"
fz_need_fuse
fz_need_guest

N=1000
G=fzg$$
fz_daemon
fz_mount
export HVT_RUNDIR=$TMP/run HVT_SHM_DIR=$TMP HVT_OBJTREE=$OBJ
trap fz_stop_guest EXIT
"$LAUNCHER" start --name "$G" --initrd "$IMAGE" \
	--run "ue_writer --wait-agent 30000 --count $N --wait-enable 120000 && sleep 300" \
	--log "$TMP/console.log" --wait-ready --timeout 120 >"$TMP/launcher.log" 2>&1 ||
	fail "the guest did not start: $(tail -5 "$TMP/launcher.log")"
"$HVTRACE" daemon attach "$G" >/dev/null || fail "attach $G"
R=$MNT/remotes/$G
wait_for 120 test -e "$R/events/user_events/hvt_e2e/enable" ||
	fail "the guest's event did not appear (console: $(tail -3 "$TMP/console.log"))"
echo "the guest's agent registered hvt_e2e; it is in the view"
echo 1 > "$R/events/user_events/hvt_e2e/enable" || fail "enable"
wait_for 60 bash -c "[ \$(grep -c ' hvt_e2e: ' '$R/trace') -ge $N ]" ||
	fail "$(grep -c ' hvt_e2e: ' "$R/trace") of $N records in trace"
grep ' hvt_e2e: ' "$R/trace" >"$TMP/trace.txt"
awk -v n=$N '
	{
		seq = val = msg = ""
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^seq=/) seq = substr($i, 5)
			if ($i ~ /^val=/) val = substr($i, 5)
			if ($i ~ /^msg=/) msg = substr($i, 5)
		}
		want = "m" seq
		for (k = 0; k < seq % 13; k++) want = want "x"
		if (seq == "" || val != seq * 7 + 3 || msg != want || seen[seq]++) {
			print "bad record: " $0; exit 1
		}
	}
	END { if (length(seen) != n) { print length(seen) " of " n; exit 1 } }' \
	"$TMP/trace.txt" || fail "trace records"
echo "trace: $N guest records, every field right"
"$TRACEFS_READ" "$MNT" "$G" --no-loss --unique user_events:hvt_e2e:seq \
	--total $N >"$TMP/read.txt" 2>&1 || fail "libtracefs: $(cat "$TMP/read.txt")"
sed 's/^/    /' "$TMP/read.txt"
echo "libtracefs: every guest record through trace_pipe_raw"
exit 0
