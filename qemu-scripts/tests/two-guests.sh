#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Two guests at once: distinct names get distinct runtime folders, sockets
# and areas (of different sizes here); each area holds only its own
# guest's pattern; a third start with a running guest's name is refused
# without disturbing it; both power off and leave nothing behind.
. "$(dirname "$0")/lib.sh"
t_require

t_name a a
t_name b b
seed_a=$((RANDOM * 65536 + RANDOM + 1))
seed_b=$((seed_a + 7919))
initrd=$(t_initrd)

info "start $a (16M area) and $b (4M area)"
"$G" start --name "$a" --initrd "$initrd" --log "$T_TMP/$a.log" --area-size 16M \
	--run "hvt-probe --count 10000 --seed $seed_a --timeout 60" >/dev/null || fail "start $a failed"
"$G" start --name "$b" --initrd "$initrd" --log "$T_TMP/$b.log" --area-size 4M \
	--run "hvt-probe --count 20000 --seed $seed_b --timeout 60" >/dev/null || fail "start $b failed"

json=$("$G" list --json) || fail "list --json failed"
echo "$json"
grep -q "\"name\":\"$a\"" <<<"$json" || fail "$a missing from list --json"
grep -q "\"name\":\"$b\"" <<<"$json" || fail "$b missing from list --json"
qa=$(status_get "$a" qemu_pid)
qb=$(status_get "$b" qemu_pid)
[ -n "$qa" ] && [ -n "$qb" ] && [ "$qa" != "$qb" ] || fail "expected two QEMU processes, got '$qa' and '$qb'"
[ "$(stat -c %s "$T_SHM/hvtrace-$a")" -eq $((16 << 20)) ] || fail "$a's area is not 16M"
[ "$(stat -c %s "$T_SHM/hvtrace-$b")" -eq $((4 << 20)) ] || fail "$b's area is not 4M"

info "a second '$a' must be refused"
if err=$("$G" start --name "$a" --initrd "$initrd" --run true 2>&1); then
	fail "a second guest named $a was started"
fi
echo "$err"
grep -q "already" <<<"$err" || fail "refusal does not say the name is taken: $err"
[ "$(status_get "$a" qemu_pid)" = "$qa" ] || fail "the refused start disturbed $a"
[ "$(stat -c %s "$T_SHM/hvtrace-$a")" -eq $((16 << 20)) ] || fail "the refused start touched $a's area"

"$G" wait "$a" --ready --timeout 60 || fail "$a did not come up"
"$G" wait "$b" --ready --timeout 60 || fail "$b did not come up"

# Each area holds its own guest's seed (hvt-probe-host checks the seed in
# the header, the pattern derived from it and the size seen by the guest).
"$PROBE_HOST" --area "$T_SHM/hvtrace-$a" --sock "$T_RUNDIR/$a/control.sock" \
	--seed "$seed_a" --count 10000 --echo 8 --timeout 60 >"$T_TMP/host-a.out" 2>&1 &
ha=$!
"$PROBE_HOST" --area "$T_SHM/hvtrace-$b" --sock "$T_RUNDIR/$b/control.sock" \
	--seed "$seed_b" --count 20000 --echo 8 --timeout 60 >"$T_TMP/host-b.out" 2>&1 &
hb=$!
wait $ha
ra=$?
wait $hb
rb=$?
cat "$T_TMP/host-a.out" "$T_TMP/host-b.out"
[ $ra -eq 0 ] || fail "host-side probe of $a failed"
[ $rb -eq 0 ] || fail "host-side probe of $b failed"

"$G" wait "$a" --poweroff --timeout 60 || fail "$a did not power off"
"$G" wait "$b" --poweroff --timeout 60 || fail "$b did not power off"
assert_gone "$a"
assert_gone "$b"
echo "PASS"
