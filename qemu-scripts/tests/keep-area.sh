#!/bin/bash
# SPDX-License-Identifier: MIT
#
# --keep-area: after the guest ends (by poweroff, and by stop) only the
# area file remains, with what the guest wrote still in it; "cleanup
# --areas NAME" removes it, and a new guest of the same name starts from a
# fresh, zeroed area.
. "$(dirname "$0")/lib.sh"
t_require

t_name n keep
seed=$((RANDOM * 65536 + RANDOM + 1))
initrd=$(t_initrd)

info "poweroff with --keep-area"
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" --keep-area \
	--area-size 1M --run "hvt-probe --no-port --count 5000 --seed $seed" >/dev/null ||
	fail "start failed"
"$G" wait "$n" --poweroff --timeout 60 || fail "guest did not power off"
grep -qa 'hvtrace: run exited with status 0' "$T_TMP/$n.log" || fail "probe failed in the guest"
assert_gone "$n" keep
[ "$(stat -c %s "$T_SHM/hvtrace-$n")" -eq $((1 << 20)) ] || fail "kept area changed size"
"$PROBE_HOST" --area "$T_SHM/hvtrace-$n" --seed "$seed" --count 5000 ||
	fail "kept area does not hold what the guest wrote"

info "an area file someone holds open is not replaced"
sleep 600 5<"$T_SHM/hvtrace-$n" &
holder=$!
T_PIDS+=("$holder")
if out=$("$G" start --name "$n" --initrd "$initrd" --area-size 1M 2>&1); then
	fail "start replaced an area file that is in use"
fi
echo "$out"
grep -q "in use (pids $holder)" <<<"$out" || fail "refusal does not name the holder ($holder) as the user: $out"
"$G" cleanup --areas "$n" 2>&1 | grep -q "in use" || fail "cleanup --areas did not leave the in-use area alone"
[ -f "$T_SHM/hvtrace-$n" ] || fail "cleanup --areas removed an area in use"
kill "$holder"
wait "$holder" 2>/dev/null
assert_gone "$n" keep

info "a new guest of the same name gets a fresh area"
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n-2.log" --keep-area \
	--area-size 1M --wait-ready --timeout 60 >/dev/null 2>"$T_TMP/restart.err" ||
	{ cat "$T_TMP/restart.err"; fail "restart failed"; }
cat "$T_TMP/restart.err"
grep -q "replacing $T_SHM/hvtrace-$n" "$T_TMP/restart.err" || fail "restart did not say it replaced the kept area"
[ "$(head -c 8 "$T_SHM/hvtrace-$n" | od -An -tx1 | tr -d ' ')" = 0000000000000000 ] ||
	fail "the new guest's area still holds the old contents"

info "stop with --keep-area"
"$G" stop "$n" || fail "stop failed"
assert_gone "$n" keep

info "cleanup --areas"
"$G" cleanup --areas "$n" || fail "cleanup --areas failed"
assert_gone "$n"
echo "PASS"
