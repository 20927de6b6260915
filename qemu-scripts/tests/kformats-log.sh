#!/bin/bash
# SPDX-License-Identifier: MIT
#
# "hvtrace-guest kformats --log FILE DIR" unpacks the formats a guest
# printed on its console, whatever follows them: a console that went on
# for megabytes after "kformats end" (the guest ran for a while) must not
# make the unpacking fail (a reader that stops early gets its writer
# killed by SIGPIPE, and the launcher's pipefail saw that as damaged
# formats).  No guest is booted: the console is made here, in the format
# guest-init.sh prints.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
G=$SRC/qemu-scripts/hvtrace-guest
T=$(mktemp -d /tmp/hvt-kformats-log.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

mkdir -p "$T/src/events/ftrace/print"
printf 'name: print\nID: 5\nformat:\n\tfield:int buf;\n' >"$T/src/events/ftrace/print/format"
printf '[mono] local\n' >"$T/src/trace_clock"
echo "Linux version 6.12.0 (test)" >"$T/src/version"
{
	echo "[    1.000000] booting"
	echo "hvtrace: kformats begin"
	tar -C "$T/src" -czf - . | base64
	echo "hvtrace: kformats end"
	# Four MiB of console after the formats.
	yes "hvt-filler: the guest kept writing to its console for a while" |
		head -c $((4 << 20))
} >"$T/console.log"

"$G" kformats --log "$T/console.log" "$T/out" >"$T/out.txt" 2>&1 ||
	fail "kformats failed on a long console: $(cat "$T/out.txt")"
diff -r "$T/src" "$T/out" >/dev/null || fail "the unpacked formats differ from what was printed"
# A damaged block is still refused.
sed -i '3s/^./!/' "$T/console.log"
"$G" kformats --log "$T/console.log" "$T/bad" >"$T/bad.txt" 2>&1 &&
	fail "kformats took a damaged block"
grep -q 'damaged' "$T/bad.txt" || fail "a damaged block is not called damaged: $(cat "$T/bad.txt")"
echo "PASS"
