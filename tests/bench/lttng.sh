#!/bin/bash
# SPDX-License-Identifier: MIT
#
# LTTng-UST peer benchmark: run lttng_bench without a session (disabled
# tracepoint) and inside a session with the event enabled on an overwrite
# channel.  Starts its own lttng-sessiond if none runs, and stops only
# that one.  Exits 77 with a SKIP line when LTTng is not usable here.
set -u
bin=${1:?usage: lttng.sh LTTNG_BENCH_BINARY}
if [ ! -x "$bin" ]; then
	echo "SKIP: $bin not built (liblttng-ust-dev missing at build time)"
	exit 77
fi
if ! command -v lttng >/dev/null || ! command -v lttng-sessiond >/dev/null; then
	echo "SKIP: lttng-tools not installed (lttng, lttng-sessiond)"
	exit 77
fi

"$bin" disabled || exit $?

own_pid=
if ! pgrep -x lttng-sessiond >/dev/null; then
	# Our own daemon, in the foreground of a background job, so that its
	# process id is known and only it is stopped at the end.
	lttng-sessiond --no-kernel >/dev/null 2>&1 &
	own_pid=$!
	for _ in $(seq 100); do
		lttng --no-sessiond list >/dev/null 2>&1 && break
		kill -0 "$own_pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! lttng --no-sessiond list >/dev/null 2>&1; then
		echo "SKIP: cannot start lttng-sessiond"
		exit 77
	fi
fi
out=$(mktemp -d /tmp/hvtrace-lttng.XXXXXX)
session=hvtrace-bench-$$
cleanup() {
	lttng destroy "$session" >/dev/null 2>&1
	rm -rf "$out"
	if [ -n "$own_pid" ]; then
		kill "$own_pid" 2>/dev/null
		wait "$own_pid" 2>/dev/null
	fi
}
trap cleanup EXIT
lttng create "$session" --output="$out" >/dev/null &&
	lttng enable-channel -u --overwrite -s "$session" ch >/dev/null &&
	lttng enable-event -u -s "$session" -c ch 'hvt_bench:ev32' >/dev/null &&
	lttng start "$session" >/dev/null || {
	echo "SKIP: could not set up an LTTng session"
	exit 77
}
"$bin" enabled
