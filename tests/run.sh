#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace test runner.  Reads a list of "name|command" lines and runs each
# command as one test.  Exit codes: 0 pass, 77 skip, anything else fail.
# Prints one line per test and ends with "N passed, N failed, N skipped".
# Exits non-zero if any test failed.
#
#   tests/run.sh LIST [FILTER-REGEX]
#
# HVT_TEST_TIMEOUT (seconds, default 300) bounds each test; logs go to
# $HVT_OBJTREE/test-logs/NAME.log.
set -u

list=${1:?usage: run.sh LIST [FILTER]}
filter=${2:-}
objtree=${HVT_OBJTREE:-build}
logdir=$objtree/test-logs
timeout_s=${HVT_TEST_TIMEOUT:-300}
mkdir -p "$logdir"

pass=0 fail=0 skip=0
failed=()
start_all=$EPOCHREALTIME
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

while IFS='|' read -r name cmd; do
	name=${name#"${name%%[![:space:]]*}"}
	[ -z "$name" ] && continue
	case $name in \#*) continue ;; esac
	if [ -n "$filter" ] && ! [[ $name =~ $filter ]]; then
		continue
	fi
	log=$logdir/${name//\//_}.log
	t0=$EPOCHREALTIME
	# Each test gets its own process group so a timeout kills it whole.
	timeout -k 10 "$timeout_s" setsid bash -c "$cmd" </dev/null >"$log" 2>&1
	rc=$?
	dt=$(elapsed "$t0")
	case $rc in
	0)
		pass=$((pass + 1))
		printf 'PASS  %-40s %6ss\n' "$name" "$dt"
		;;
	77)
		skip=$((skip + 1))
		printf 'SKIP  %-40s %6ss  %s\n' "$name" "$dt" \
			"$(grep -m1 -i 'skip' "$log" | cut -c1-100)"
		;;
	*)
		fail=$((fail + 1))
		failed+=("$name")
		[ $rc -eq 124 ] && echo "runner: timed out after ${timeout_s}s" >>"$log"
		printf 'FAIL  %-40s %6ss  (exit %d, log %s)\n' "$name" "$dt" "$rc" "$log"
		# The reason first (a test's "FAIL: ..." lines can sit above
		# the consoles it dumps), then the end of its log.
		grep -a -m 3 '^FAIL' "$log" | cut -c1-400 | sed 's/^/      > /'
		tail -n 15 "$log" | sed 's/^/      | /'
		;;
	esac
done <"$list"

total=$(elapsed "$start_all")
if [ $fail -ne 0 ]; then
	echo "failed tests: ${failed[*]}"
fi
echo "total time ${total}s"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
