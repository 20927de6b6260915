#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The launcher refuses bad requests with a message that says what is wrong,
# and leaves nothing behind: an area size that is not a power of two
# (QEMU's ivshmem would abort), bad names, fewer than 2 vCPUs, unknown
# options.  Needs no guest: validation comes before QEMU is started.
. "$(dirname "$0")/lib.sh"
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hvt-qemu-test.XXXXXX")
trap t_cleanup EXIT
trap 'exit 1' INT TERM HUP

t_name n refuse
checks=0

# refuse "WHAT THE MESSAGE MUST SAY" ARGS...
refuse() {
	local want=$1 out rc
	shift
	out=$("$G" "$@" 2>&1)
	rc=$?
	[ $rc -ne 0 ] || fail "'hvtrace-guest $*' was accepted"
	grep -qi -- "$want" <<<"$out" || fail "'hvtrace-guest $*' said '$out', expected it to mention '$want'"
	[ ! -e "$T_RUNDIR/$n" ] || fail "'hvtrace-guest $*' left $T_RUNDIR/$n"
	[ ! -e "$T_SHM/hvtrace-$n" ] || fail "'hvtrace-guest $*' left an area file"
	echo "ok: $* -> $out"
	checks=$((checks + 1))
}

# refuse_usage "FIRST LINE AFTER 'hvtrace-guest: '" ARGS...: a bad command
# line exits 2 with exactly two lines, as every hvtrace verb says it.
refuse_usage() {
	local want=$1 rc
	shift
	"$G" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	[ $rc -eq 2 ] || fail "'hvtrace-guest $*' exited $rc, expected 2 ($(cat "$T_TMP/err"))"
	printf '%s\n' "hvtrace-guest: $want" "Run 'hvtrace-guest --help' for usage." >"$T_TMP/want"
	cmp -s "$T_TMP/err" "$T_TMP/want" ||
		fail "'hvtrace-guest $*' said '$(cat "$T_TMP/err")', expected '$(cat "$T_TMP/want")'"
	[ ! -e "$T_RUNDIR/$n" ] || fail "'hvtrace-guest $*' left $T_RUNDIR/$n"
	# The same words as "hvtrace guest" when the hvtrace CLI runs it.
	HVT_GUEST_PROG="hvtrace guest" "$G" "$@" >/dev/null 2>"$T_TMP/err"
	grep -qx "hvtrace guest: $want" "$T_TMP/err" ||
		fail "'hvtrace-guest $*' run by hvtrace said '$(cat "$T_TMP/err")'"
	echo "ok: $* -> exit 2, $want"
	checks=$((checks + 1))
}

refuse "power of two" start --name "$n" --area-size 3M
refuse "power of two" start --name "$n" --area-size 100000
refuse "power of two" start --name "$n" --area-size 24M
refuse "not a size" start --name "$n" --area-size lots
refuse "smaller than one page" start --name "$n" --area-size 1K
refuse "invalid guest name" start --name "a/b"
refuse "invalid guest name" start --name "-x"
refuse "invalid guest name" start --name "$(printf 'n%.0s' {1..33})"
refuse "at least 2 vCPUs" start --name "$n" --cpus 1
refuse "--cpus" start --name "$n" --cpus two
refuse "--mem" start --name "$n" --mem 16
refuse_usage "start: unknown option '--bogus'" start --name "$n" --bogus
refuse_usage "start: unexpected 'extra'" start --name "$n" extra
refuse_usage "stop: unknown option '--bogus'" stop "$n" --bogus
refuse_usage "status: option '--name' needs a value" status --name
refuse_usage "unknown option '--bogus'" --bogus
refuse "auto, tcg, tcg1 or kvm" start --name "$n" --accel xen
refuse_usage "start: option '--name' needs a value" start --name
refuse "--log" start --name "$n" --log /nonexistent-dir/console.log
refuse "--kernel" start --name "$n" --kernel /nonexistent-kernel
refuse "cannot be combined" start --name "$n" --initrd "$0" --add /bin/true
refuse "is not a readable file" start --name "$n" --initrd /dev/null
refuse "no such file" start --name "$n" --add /nonexistent-file
refuse "use ring, copy or auto" start --name "$n" --kernel-events sched --kernel-mode both
refuse "--kernel-mode goes with --kernel-events" start --name "$n" --kernel-mode copy
refuse "--kernel-ram and --keep-ram do not apply" start --name "$n" --kernel-events sched --kernel-mode copy --kernel-ram memfd
refuse "--kernel-ram and --keep-ram do not apply" start --name "$n" --kernel-events sched --kernel-mode copy --keep-ram
refuse "no guest" status "$n"
refuse_usage "unknown command 'frobnicate'; commands: start stop list status wait cleanup kvm-probe kformats" frobnicate
refuse "--ready or --poweroff" wait "$n"
refuse "needs the guest names" cleanup --areas

# A folder in the runtime base that is not a guest's is never touched.
trap 't_cleanup; [ ! -f "$T_RUNDIR/$n/other-file" ] || rm -r "${T_RUNDIR:?}/$n"' EXIT
mkdir -p "$T_RUNDIR/$n"
touch "$T_RUNDIR/$n/other-file"
out=$("$G" start --name "$n" --run true 2>&1) && fail "start took over a foreign folder"
grep -q "not a guest's runtime folder" <<<"$out" || fail "start said '$out' for a foreign folder"
out=$("$G" stop "$n" 2>&1) && fail "stop accepted a foreign folder"
grep -q "not a guest's runtime folder" <<<"$out" || fail "stop said '$out' for a foreign folder"
"$G" cleanup >/dev/null 2>&1
"$G" cleanup "$n" >/dev/null 2>&1
[ -f "$T_RUNDIR/$n/other-file" ] || fail "stop or cleanup removed a foreign folder"
rm -r "${T_RUNDIR:?}/$n"
checks=$((checks + 1))

# Accepted spellings of power-of-two sizes do not trip the check.
for s in 64K 1M 16M 16MiB 1G 65536; do
	out=$("$G" start --name "$n" --area-size "$s" --cpus 1 2>&1) && fail "--cpus 1 was accepted"
	grep -q "vCPUs" <<<"$out" || fail "--area-size $s was refused: $out"
done
echo "$checks refusals checked"
echo "PASS"
