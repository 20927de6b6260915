#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The EL2 hypervisor (QEMU TCG, its trace area in its RAM file) as an
# area remote of hvtraced, exactly like a guest for every tool:
#   - attached disabled: events status lists its 4 events, none on, and
#     the hypervisor waits (its boot waits for an enabled event)
#   - hvtrace stream NAME and hvtrace record NAME started before the run
#     both get every record; enabling through the mount
#     (events/hypervisor/enable) starts the run
#   - libtracefs reads the mount: per CPU exactly HCALLS+1 hyp_enter,
#     host_hcall and hyp_exit with the hypervisor's ids
#   - the enable files: per event 0/1, per system X when mixed, as the
#     daemon's events status says
#   - stat NAME, and the remote ends (writer stopped) after power-off
. "$(dirname "$0")/lib.sh"
fz_need_fuse
[ -x "$TRACEFS_READ" ] || fail "$TRACEFS_READ is missing (make tests)"
srctree=$(cd "$(dirname "$0")/../.." && pwd)
objtree=${HVT_OBJTREE:-$srctree/build}
. "$srctree/qemu-scripts/hyp-lib.sh"
hyp_init "$objtree"
# hyp_init's trap replaced ours: do both.
trap 'hyp_cleanup; fz_cleanup' EXIT

H=1500
fz_daemon
fz_mount
hyp_start fz 2 "cpus=2 hcalls=$H mode=consume wait=60000" || fail "QEMU"
"$HYP_HVTRACE" hyp info "$HYP_RAM" --wait 60 >/dev/null || fail "the hypervisor did not format its area"
"$HVTRACE" daemon attach --area "$HYP_RAM@0x1000000+16M" --name hyp --disabled \
	>/dev/null || fail "attach the hypervisor"
wait_for 10 test -e "$MNT/remotes/hyp/events/hypervisor/enable" ||
	fail "the hypervisor's events did not appear in the view"
"$HVTRACE" events status --remote hyp >"$TMP/st0"
for e in hyp_enter hyp_exit host_hcall selftest; do
	grep -qx "hypervisor/$e" "$TMP/st0" || fail "status: $(cat "$TMP/st0")"
done
expect_eq "events/enable, all disabled" "$(cat "$MNT/remotes/hyp/events/enable")" 0
expect_eq "hyp_enter id" "$(cat "$MNT/remotes/hyp/events/hypervisor/hyp_enter/id")" $((0xf000))
expect_eq "trace_clock" "$(cat "$MNT/remotes/hyp/trace_clock")" "[mono] counter"
sleep 1
grep -q "hyp: starting the payload" "$HYP_LOG" &&
	fail "the hypervisor ran with every event disabled"

timeout 120 "$HVTRACE" stream hyp >"$TMP/stream.txt" 2>"$TMP/stream.err" &
SPID=$!
timeout 120 "$HVTRACE" record -o "$TMP/hyp.dat" hyp >/dev/null 2>"$TMP/rec.err" &
RPID=$!
sleep 1
echo 1 > "$MNT/remotes/hyp/events/hypervisor/enable" || fail "enable through the mount"
expect_eq "events/enable" "$(cat "$MNT/remotes/hyp/events/enable")" 1
hyp_wait_exit 120 || fail "the hypervisor did not finish"
hyp_check_clean_exit "run complete" || fail "unclean power-off"
wait $SPID || fail "stream hyp: $(cat "$TMP/stream.err")"
wait $RPID || fail "record hyp: $(cat "$TMP/rec.err")"
echo "the hypervisor ran $H hypercalls per CPU and powered off"

# stream by name: every record, ended by itself after power-off.
for cpu in 0 1; do
	for e in hyp_enter host_hcall hyp_exit; do
		n=$(awk -v t="[00$cpu]" -v e="$e:" '$2 == t && $5 == e' "$TMP/stream.txt" | wc -l)
		expect_eq "stream cpu $cpu $e" "$n" $((H + 1))
	done
done
echo "stream by name: $((H + 1)) of each event per CPU"

# record by name, read by trace-cmd.
if command -v trace-cmd >/dev/null; then
	trace-cmd report "$TMP/hyp.dat" >"$TMP/rep.txt" 2>/dev/null || fail "trace-cmd report"
	for cpu in 0 1; do
		n=$(awk -v t="[00$cpu]" '$3 == t && $5 == "hyp_enter:"' "$TMP/rep.txt" | wc -l)
		expect_eq "trace-cmd cpu $cpu hyp_enter" "$n" $((H + 1))
	done
	echo "record by name: trace-cmd report shows every hyp_enter"
fi

# libtracefs through the mount.
"$TRACEFS_READ" "$MNT" hyp --cpus 2 --no-loss \
	--expect "hypervisor:hyp_enter:*=$((H + 1))" \
	--expect "hypervisor:host_hcall:*=$((H + 1))" \
	--expect "hypervisor:hyp_exit:*=$((H + 1))" \
	--expect-id hypervisor:hyp_enter=$((0xf000)) \
	--expect-id hypervisor:host_hcall=$((0xf002)) >"$TMP/read.txt" 2>&1 ||
	fail "libtracefs: $(cat "$TMP/read.txt")"
sed 's/^/    /' "$TMP/read.txt"

# Enable files: mixed state shows X, as the daemon reports it.
R=$MNT/remotes/hyp/events
echo 0 > "$R/hypervisor/hyp_exit/enable" || fail "disable hyp_exit"
expect_eq "hyp_exit enable" "$(cat "$R/hypervisor/hyp_exit/enable")" 0
expect_eq "hypervisor enable (mixed)" "$(cat "$R/hypervisor/enable")" X
expect_eq "events/enable (mixed)" "$(cat "$R/enable")" X
"$HVTRACE" events status --remote hyp | grep -qx "hypervisor/hyp_exit" ||
	fail "daemon status: $("$HVTRACE" events status --remote hyp)"
"$HVTRACE" events status --remote hyp | grep -qx "hypervisor/hyp_enter # Used by ftrace" ||
	fail "daemon status: $("$HVTRACE" events status --remote hyp)"
"$HVTRACE" events disable '*' --remote hyp || fail "disable *"
expect_eq "hypervisor enable after disable *" "$(cat "$R/hypervisor/enable")" 0
echo "enable files: 0/1 per event, X when mixed, agree with hvtraced"

# stat by name.
"$HVTRACE" stat hyp --cpu 1 >"$TMP/stat.txt" || fail "stat hyp"
grep -q "^state: disconnected$" "$TMP/stat.txt" || fail "stat: $(head -5 "$TMP/stat.txt")"
r=$(awk '/^read events:/ { print $3 }' "$TMP/stat.txt")
[ "$r" -ge $((3 * (H + 1))) ] || fail "stat read events $r"
echo "stat by name: the daemon read $r records of CPU 1"
exit 0
