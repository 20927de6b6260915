#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run the benchmarks of a list ("name|command" per line) one after the
# other on an otherwise idle machine, echo everything they print, and end
# with a summary of all "BENCH <name> <value> <unit>" lines.
#   scripts/bench.sh LIST [FILTER-REGEX]
set -u
list=${1:?usage: bench.sh LIST [FILTER]}
filter=${2:-}
objtree=${HVT_OBJTREE:-build}
out=$objtree/bench-results.txt
: >"$out"
status=0
while IFS='|' read -r name cmd; do
	name=${name#"${name%%[![:space:]]*}"}
	[ -z "$name" ] && continue
	if [ -n "$filter" ] && ! [[ $name =~ $filter ]]; then continue; fi
	echo "== $name"
	if ! bash -c "$cmd" 2>&1 | tee -a "$out.log" | tee /dev/stderr | grep '^BENCH ' >>"$out"; then
		:
	fi
	rc=${PIPESTATUS[0]}
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		echo "bench $name failed (exit $rc)"
		status=1
	fi
done <"$list" 2>/dev/null
echo
echo "== summary ($out)"
column -t "$out" 2>/dev/null || cat "$out"
exit $status
