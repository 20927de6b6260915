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
#
# HVT_TEST_REPEAT=N runs each chosen test N times in a row (make
# check-repeat): each run counts as one test, a failed run keeps its log as
# NAME.runK.log, and a closing table says how many runs of each test
# failed.  HVT_TEST_LOAD=K keeps K busy loops running meanwhile, so a test
# that passes only on an idle machine shows it.
set -u

list=${1:?usage: run.sh LIST [FILTER]}
filter=${2:-}
objtree=${HVT_OBJTREE:-build}
logdir=$objtree/test-logs
timeout_s=${HVT_TEST_TIMEOUT:-300}
repeat=${HVT_TEST_REPEAT:-1}
load=${HVT_TEST_LOAD:-0}
[[ $repeat =~ ^[1-9][0-9]*$ ]] || {
	echo "run.sh: HVT_TEST_REPEAT must be a count of runs (1 or more), not '$repeat'" >&2
	exit 2
}
[[ $load =~ ^[0-9]+$ ]] || {
	echo "run.sh: HVT_TEST_LOAD must be a number of busy loops, not '$load'" >&2
	exit 2
}
mkdir -p "$logdir"

loaders=()
stop_load() {
	[ ${#loaders[@]} -gt 0 ] && kill "${loaders[@]}" 2>/dev/null
	loaders=()
}
trap stop_load EXIT
for ((i = 0; i < load; i++)); do
	(trap 'exit 0' TERM; while :; do :; done) &
	loaders+=($!)
done
[ "$load" -gt 0 ] && echo "runner: busy loops beside the tests: $load"
declare -A runs_failed=()

# Tests that compare with the host kernel's own ftrace need tracefs at
# /sys/kernel/tracing, as a booted Debian has it; a fresh root may not
# have mounted it yet.  As root the runner mounts it (tests/cli/lib.sh and
# tests/tracedat/lib.sh do the same for themselves), so no test skips for
# want of it; without root those tests skip and say why.
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing ] &&
	! [ -e /sys/kernel/tracing/instances ]; then
	if mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
		echo "runner: mounted tracefs at /sys/kernel/tracing"
	else
		echo "runner: cannot mount tracefs at /sys/kernel/tracing; tests of the host kernel's ftrace will skip"
	fi
fi

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
	for ((run = 1; run <= repeat; run++)); do
		label=$name
		[ "$repeat" -gt 1 ] && label="$name#$run"
		log=$logdir/${name//\//_}.log
		t0=$EPOCHREALTIME
		# Each test gets its own process group so a timeout kills it whole.
		timeout -k 10 "$timeout_s" setsid bash -c "$cmd" </dev/null >"$log" 2>&1
		rc=$?
		dt=$(elapsed "$t0")
		case $rc in
		0)
			pass=$((pass + 1))
			printf 'PASS  %-40s %6ss\n' "$label" "$dt"
			;;
		77)
			skip=$((skip + 1))
			printf 'SKIP  %-40s %6ss  %s\n' "$label" "$dt" \
				"$(grep -m1 -i 'skip' "$log" | cut -c1-100)"
			;;
		*)
			fail=$((fail + 1))
			failed+=("$label")
			runs_failed[$name]=$((${runs_failed[$name]:-0} + 1))
			if [ "$repeat" -gt 1 ]; then
				mv "$log" "${log%.log}.run$run.log"
				log=${log%.log}.run$run.log
			fi
			[ $rc -eq 124 ] && echo "runner: timed out after ${timeout_s}s" >>"$log"
			printf 'FAIL  %-40s %6ss  (exit %d, log %s)\n' "$label" "$dt" "$rc" "$log"
			# The reason first (a test's "FAIL: ..." lines can sit above
			# the consoles it dumps), then the end of its log.
			grep -a -m 3 '^FAIL' "$log" | cut -c1-400 | sed 's/^/      > /'
			tail -n 15 "$log" | sed 's/^/      | /'
			;;
		esac
	done
done <"$list"
stop_load

total=$(elapsed "$start_all")
if [ $fail -ne 0 ]; then
	echo "failed tests: ${failed[*]}"
fi
if [ "$repeat" -gt 1 ]; then
	echo "each test ran $repeat times"
	for n in "${!runs_failed[@]}"; do
		echo "  $n: ${runs_failed[$n]} of $repeat runs failed"
	done | sort
fi
echo "total time ${total}s"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
