#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run-hyp.sh - run the EL2 hypervisor rig and stream its trace events.
#
# Builds what is missing (the EL2 image and the hvtrace CLI), boots the
# image at EL2 under QEMU (TCG) with guest RAM in a /dev/shm file, and
# prints its events with 'hvtrace stream' (trace_pipe lines, CPUs merged
# by time) from the trace area inside that file while the hypervisor runs,
# then powers it off and cleans up (no QEMU left behind, no /dev/shm file
# unless --keep).
#
#   qemu-scripts/run-hyp.sh [OPTIONS]
#
#   -O, --objtree DIR   build directory (default: $O, else build)
#   --cpus N            CPUs to bring up (default 2)
#   --hcalls N          hypercalls per CPU (default 2000; 0: until Ctrl-C
#                       or --seconds)
#   --mode MODE         consume (default) or overwrite
#   --subbufs N         sub-buffers per CPU (power of two; default: fill)
#   --delay N           payload spin loops between hypercalls
#   --events LIST       comma-separated events to enable (default all):
#                       hyp_enter,hyp_exit,host_hcall,selftest; enabled
#                       with 'hvtrace hyp attach', then read with
#                       'hvtrace stream --read-only' (which publishes no
#                       consumer progress: in consume mode a run longer
#                       than the ring drops, counted as lost events)
#   --seconds S         stop after S seconds
#   --quiet             no event lines, only the summary
#   --keep              keep the guest-RAM file (read it later with
#                       hvtrace stream FILE@0x1000000+16M --read-only)
#   --no-build          do not run make
#   -h, --help
#
# Ctrl-C (or SIGTERM) stops streaming; the hypervisor is then powered off
# cleanly and everything is removed.
set -u

srctree=$(cd "$(dirname "$0")/.." && pwd)
objtree=${O:-$srctree/build}
cpus=2 hcalls=2000 mode=consume subbufs=0 delay=0 events=all seconds=0
quiet= build=1

usage() {
	sed -n '3,/^set -u/p' "$0" | sed '/^set -u/d; s/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
	case $1 in
	-O | --objtree) objtree=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--hcalls) hcalls=$2; shift ;;
	--mode) mode=$2; shift ;;
	--subbufs) subbufs=$2; shift ;;
	--delay) delay=$2; shift ;;
	--events) events=$2; shift ;;
	--seconds) seconds=$2; shift ;;
	--quiet) quiet=--quiet ;;
	--keep) HYP_KEEP=1 ;;
	--no-build) build= ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run-hyp.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
case $mode in consume | overwrite) ;; *)
	echo "run-hyp.sh: --mode is consume or overwrite, not '$mode'" >&2; exit 2 ;;
esac
for n in "$cpus" "$hcalls" "$subbufs" "$delay"; do
	[[ $n =~ ^[0-9]+$ ]] || { echo "run-hyp.sh: '$n' is not a number" >&2; exit 2; }
done
[[ $seconds =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
	{ echo "run-hyp.sh: --seconds takes a number, not '$seconds'" >&2; exit 2; }
case $objtree in /*) ;; *) objtree=$PWD/$objtree ;; esac

if [ -n "$build" ]; then
	if ! command -v aarch64-linux-gnu-gcc >/dev/null ||
	   ! command -v qemu-system-aarch64 >/dev/null; then
		echo "run-hyp.sh: installing what is missing (make deps)"
		make -C "$srctree" --no-print-directory deps || exit 1
	fi
	make -C "$srctree" --no-print-directory O="$objtree" -j"$(nproc)" \
		"$objtree/hyp/hvtrace-el2.elf" "$objtree/bin/hvtrace" || {
		echo "run-hyp.sh: the build failed (see above)" >&2
		exit 1
	}
fi

. "$srctree/qemu-scripts/hyp-lib.sh"
hyp_init "$objtree"

# The reader runs in the background so that this script can pass a
# Ctrl-C or SIGTERM on to it (it then stops and drains), and still power
# the hypervisor off and clean up afterwards.
reader_pid=
trap '[ -n "$reader_pid" ] && kill -TERM "$reader_pid" 2>/dev/null' INT TERM
run_reader() {
	"$@" &
	reader_pid=$!
	while :; do
		wait "$reader_pid"
		status=$?
		kill -0 "$reader_pid" 2>/dev/null || break
	done
	reader_pid=
}

args="cpus=$cpus hcalls=$hcalls mode=$mode delay=$delay wait=30000"
[ "$subbufs" != 0 ] && args="$args subbufs=$subbufs"
hyp_start run "$cpus" "$args" || exit 1

status=0
stream_opt=(--summary)
[ "$seconds" != 0 ] && stream_opt+=(--timeout "$seconds")
# hvtrace stream attaches only to a formatted area: wait for the
# hypervisor to format it (it then waits for an enabled event).  As the
# area's owner, stream enables every event; a chosen set is enabled here
# and read beside it.
"$HYP_HVTRACE" hyp info "$HYP_RAM" --wait 30 >/dev/null || exit 1
if [ "$events" != all ]; then
	"$HYP_HVTRACE" hyp attach "$HYP_RAM" --events "$events" || exit 1
	stream_opt+=(--read-only)
fi
if [ -n "$quiet" ]; then
	run_reader "$HYP_HVTRACE" stream "$HYP_RAM@0x1000000+16M" \
		"${stream_opt[@]}" >/dev/null
else
	run_reader "$HYP_HVTRACE" stream "$HYP_RAM@0x1000000+16M" \
		"${stream_opt[@]}"
fi

if [ -n "$HYP_PID" ] && kill -0 "$HYP_PID" 2>/dev/null; then
	hyp_cmd q
	hyp_wait_exit 20 || status=1
else
	hyp_wait_exit 5 || status=1
fi
echo "--- hypervisor console"
sed 's/\r$//' "$HYP_LOG"
if grep -q PANIC "$HYP_LOG"; then
	status=1
fi
[ "$HYP_KEEP" = 1 ] &&
	echo "read it again: $HYP_HVTRACE stream $HYP_RAM@0x1000000+16M --read-only"
exit $status
