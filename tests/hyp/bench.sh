#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Writer cost inside the EL2 image against the same code built natively,
# measured in the same run.  The EL2 figure is taken with the counter
# inside the image (boot parameter bench=N) under QEMU TCG, so it means
# something only as a ratio against the native twin
# (hvt-hyp-bench-native: same loop, same generated emit code, same
# freestanding core object, 48-byte host_hcall records, overwrite mode).
#
#   bench.sh OBJTREE SRCTREE [EL2_EVENTS] [NATIVE_EVENTS]
set -u
objtree=$1 srctree=$2 n_el2=${3:-500000} n_native=${4:-5000000}
. "$srctree/qemu-scripts/hyp-lib.sh"
hyp_init "$objtree"

native=$("$objtree/tests/hyp/hvt-hyp-bench-native" "$n_native") || {
	echo "error: the native benchmark failed: $native" >&2
	exit 1
}
echo "$native"

hyp_start bench 1 "cpus=1 bench=$n_el2 mode=overwrite" || exit 1
hyp_wait_exit 300 || exit 1
el2=$(grep -a '^BENCH-EL2 ' "$HYP_LOG" | tr -d '\r')
if [ -z "$el2" ]; then
	echo "error: the EL2 image printed no benchmark line; console:" >&2
	cat "$HYP_LOG" >&2
	exit 1
fi
echo "$el2"

field() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" <<<"$1"; }
for f in failed; do
	if [ "$(field "$native" $f)" != 0 ] || [ "$(field "$el2" $f)" != 0 ]; then
		echo "error: writes failed during the benchmark" >&2
		exit 1
	fi
done
awk -v ew="$(field "$el2" write_ps)" -v nw="$(field "$native" write_ps)" \
    -v ed="$(field "$el2" disabled_ps)" -v nd="$(field "$native" disabled_ps)" '
BEGIN {
	printf "BENCH hyp-el2-write %.1f ns/event\n", ew / 1000
	printf "BENCH hyp-native-write %.1f ns/event\n", nw / 1000
	printf "BENCH hyp-el2-vs-native-write %.1f x\n", nw ? ew / nw : 0
	printf "BENCH hyp-el2-disabled %.2f ns/event\n", ed / 1000
	printf "BENCH hyp-native-disabled %.2f ns/event\n", nd / 1000
	printf "BENCH hyp-el2-vs-native-disabled %.1f x\n", nd ? ed / nd : 0
}'
