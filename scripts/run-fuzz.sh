#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run one libFuzzer target from its committed seed corpus:
#   run-fuzz.sh BINARY CORPUS-DIR SECONDS
# or every target named, one after another (make fuzz-run):
#   run-fuzz.sh --all BIN-DIR CORPUS-ROOT SECONDS TARGET...
# New inputs go to a scratch directory; a crash leaves its reproducer there
# and the path is printed.  Exit 0 when the run found nothing.
set -uo pipefail
if [ "${1:-}" = --all ]; then
	[ $# -ge 5 ] || { echo "usage: run-fuzz.sh --all BIN-DIR CORPUS-ROOT SECONDS TARGET..." >&2; exit 2; }
	bindir=$2 root=$3 secs=$4
	shift 4
	pass=0 fail=0 failed=()
	for t in "$@"; do
		echo "==> fuzz/$t for ${secs}s"
		if "$0" "$bindir/$t" "$root/$t" "$secs"; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			failed+=("$t")
		fi
	done
	[ $fail -eq 0 ] || echo "failed targets: ${failed[*]}"
	echo "$pass passed, $fail failed"
	[ $fail -eq 0 ]
	exit
fi
bin=$1 corpus=$2 secs=$3
[ -x "$bin" ] || { echo "error: $bin not built (make fuzz)" >&2; exit 1; }
if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
	echo "error: empty seed corpus $corpus: add seed inputs" >&2
	exit 1
fi
scratch=$(mktemp -d /tmp/hvtrace-fuzz.XXXXXX)
mkdir -p "$scratch/new"
cd "$scratch" || exit 1
# libFuzzer's default error exit code is 77, which the runner reads as
# "skipped": make every finding exit 1.
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
	"$scratch/new" "$corpus" >"$scratch/log" 2>&1
rc=$?
tail -n 20 "$scratch/log"
found=$(ls "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* \
	"$scratch"/oom-* 2>/dev/null | head -1)
if [ $rc -ne 0 ] || [ -n "$found" ]; then
	echo "error: fuzzer failed (exit $rc) ${found:+on input $found}; kept in $scratch" >&2
	exit 1
fi
echo "ok: no finding in ${secs}s from $(ls "$corpus" | wc -l) seeds; $(ls "$scratch/new" | wc -l) new inputs discarded"
rm -rf "$scratch"
exit 0
