#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The CLI around a guest, as a user runs it: hvtrace guest start (which
# starts hvtraced when it is not running and attaches the guest), hvtrace
# list, hvtrace guest list/status, hvtrace events, hvtrace stream NAME,
# hvtrace guest stop, hvtrace daemon stop -- against a private socket and
# runtime folder, and checks that nothing is left behind.
set -u

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OBJ=${HVT_OBJTREE:-$SRC/build}
H=$OBJ/bin/hvtrace
T=$(mktemp -d /tmp/hvt-e2e-cli.XXXXXX)
NAME=c$$
export HVTRACED_SOCKET=$T/hvtraced.sock HVT_RUNDIR=$T/run HVT_OBJTREE=$OBJ

fail() {
	echo "FAIL: $*" >&2
	for f in "$T"/*.out "$T"/*.err "$HVT_RUNDIR"/hvtraced.log "$T/console.log"; do
		[ -f "$f" ] && { echo "---- $f" >&2; tail -n 25 "$f" >&2; }
	done
	exit 1
}

cleanup() {
	[ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null
	"$H" guest stop "$NAME" >/dev/null 2>&1
	"$H" daemon stop >/dev/null 2>&1
	"$SRC/qemu-scripts/hvtrace-guest" cleanup --areas "$NAME" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if ! command -v qemu-system-x86_64 >/dev/null; then
	echo "SKIP: qemu-system-x86_64 is not installed (make deps)"
	exit 77
fi
[ -x "$H" ] || fail "$H is not built (make O=$OBJ)"

# No daemon yet: list says so, --no-daemon refuses and leaves nothing.
"$H" list >"$T/list0.out" 2>"$T/list0.err" && fail "hvtrace list succeeded without hvtraced"
grep -q "hvtraced is not running" "$T/list0.err" || fail "hvtrace list does not say hvtraced is not running"
"$H" guest start "$NAME" --no-daemon >"$T/nod.out" 2>"$T/nod.err" && fail "--no-daemon started a guest without hvtraced"
grep -q "hvtrace daemon" "$T/nod.err" || fail "--no-daemon does not say how to start hvtraced"
[ ! -e "$HVT_RUNDIR/$NAME" ] || fail "--no-daemon left $HVT_RUNDIR/$NAME"
"$H" guest start -bad >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad guest name is not a usage error"

# Start: hvtraced comes up, the guest boots and its agent connects.
# The agent listens on a socket of its arguments; /init waits for it, so
# ue_writer, which does not retry, connects at once.
ASOCK=/run/hvtrace/custom.sock
"$H" guest start "$NAME" --agent-args "--socket $ASOCK" --log "$T/console.log" \
	--run "ue_writer --socket $ASOCK --def 'hvt_early u32 x' && ue_demo --socket $ASOCK --workers 3 --seconds 4 --rate 20 --wait-enable 60000; sleep 600" \
	>"$T/start.out" 2>"$T/start.err" || fail "hvtrace guest start failed"
grep -q "started hvtraced" "$T/start.out" || fail "guest start did not start hvtraced"
grep -q "'$NAME' is up" "$T/start.out" || fail "guest start did not wait for the agent"
[ -S "$HVTRACED_SOCKET" ] || fail "no hvtraced socket at $HVTRACED_SOCKET"

# A second guest of the same name is refused; the first stays.
"$H" guest start "$NAME" >"$T/dup.out" 2>"$T/dup.err" && fail "a second guest named $NAME started"
grep -q "already running" "$T/dup.err" || fail "the duplicate name is not explained"

"$H" list >"$T/list.out" 2>&1 || fail "hvtrace list failed"
grep -Eq "^$NAME +guest +chardev +ready +consume +2 " "$T/list.out" ||
	fail "hvtrace list does not show $NAME as a ready 2-CPU guest: $(cat "$T/list.out")"
"$H" guest list >"$T/glist.out" 2>&1 || fail "hvtrace guest list failed"
grep -Eq "^$NAME +ready +2 +512 +16384 +ready " "$T/glist.out" ||
	fail "hvtrace guest list: $(cat "$T/glist.out")"

# Its events, enabled from the host; the stream shows every event the
# workload wrote.
# ue_demo registers hvtrace_demo_request, then hvtrace_demo_msg: wait
# for both.
for _ in $(seq 200); do
	"$H" events status --remote "$NAME" >"$T/evs.out" 2>/dev/null
	grep -q '^hvtrace_demo_request' "$T/evs.out" &&
		grep -q '^hvtrace_demo_msg' "$T/evs.out" && break
	sleep 0.1
done
"$H" events enable --remote "$NAME" hvtrace_demo_request hvtrace_demo_msg ||
	fail "events enable failed"
"$H" stream "$NAME" --summary >"$T/stream.out" 2>"$T/stream.err" &
SPID=$!
log=$T/console.log
for _ in $(seq 600); do
	grep -q "^ue_demo: .* events written" "$log" && break
	sleep 0.1
done
line=$(grep "^ue_demo: .* events written" "$log") || fail "ue_demo did not finish"
grep -q "^registered id=" "$log" || fail "ue_writer could not connect to the agent at once"
written=$(echo "$line" | sed -n 's/.*requests, \([0-9]*\) events written.*/\1/p')
dropped=$(echo "$line" | sed -n 's/.*, \([0-9]*\) dropped.*/\1/p')
[ "${written:-0}" -gt 0 ] && [ "$dropped" = 0 ] || fail "ue_demo: $line"
for _ in $(seq 100); do
	[ "$(grep -c ' hvtrace_demo_' "$T/stream.out")" -ge "$written" ] && break
	sleep 0.1
done
kill -INT "$SPID"
wait "$SPID" || fail "hvtrace stream failed"
SPID=
got=$(grep -c ' hvtrace_demo_' "$T/stream.out")
[ "$got" = "$written" ] || fail "the stream printed $got events, ue_demo wrote $written"
grep -q "hvtrace_demo_request: worker=[0-9]* req=[0-9]* status=[0-9]* latency_us=[0-9]* path=/" "$T/stream.out" ||
	fail "no readable request line: $(head -3 "$T/stream.out")"
grep -Eq "^ +demo-w[0-9]-[0-9]+ +\[00[01]\] " "$T/stream.out" ||
	fail "the writers' comms are not shown: $(head -3 "$T/stream.out")"
grep -q "LOST" "$T/stream.out" && fail "events were lost"

"$H" guest status "$NAME" >"$T/status.out" 2>&1 || fail "guest status failed"
for k in state=ready cpus=2 remote_state=ready events=3; do
	grep -qx "$k" "$T/status.out" || fail "guest status lacks $k: $(cat "$T/status.out")"
done
grep -Eq "^clock_error_ns=[0-9]+$" "$T/status.out" || fail "no clock error bound in guest status"
echo "guest status: $(grep -E '^(state|remote_state|sync_samples|clock_error_ns)=' "$T/status.out" | tr '\n' ' ')"

# Stop: detached, stopped, nothing left.
"$H" guest stop "$NAME" >"$T/stop.out" 2>&1 || fail "guest stop failed"
grep -q "detached '$NAME'" "$T/stop.out" || fail "guest stop did not detach"
"$H" list >"$T/list2.out" 2>&1 || fail "hvtrace list failed after stop"
grep -q "no remotes" "$T/list2.out" || fail "hvtrace list after stop: $(cat "$T/list2.out")"
pgrep -f -- "$HVT_RUNDIR/$NAME/" >/dev/null && fail "QEMU of $NAME still runs"
[ ! -e "$HVT_RUNDIR/$NAME" ] || fail "$HVT_RUNDIR/$NAME remains"
[ ! -e "/dev/shm/hvtrace-$NAME" ] || fail "/dev/shm/hvtrace-$NAME remains"
"$H" daemon stop >"$T/dstop.out" 2>&1 || fail "daemon stop failed"
[ ! -e "$HVTRACED_SOCKET" ] || fail "the hvtraced socket remains"
"$H" daemon stop >/dev/null 2>&1 || fail "a second daemon stop is not harmless"
echo "cli: guest start/list/status/events/stream/stop and daemon stop work; $got events streamed; nothing left"
exit 0
