#!/bin/bash
# SPDX-License-Identifier: MIT
#
# 'make demo': trace a Linux guest's workload from the host.
#
# Boots a QEMU guest (TCG unless KVM proved usable, 2 vCPUs, the Debian
# 6.12 kernel, this build's initramfs) whose workload serves "requests"
# from four threads and records each as a user event; the host enables
# the events, streams them as ftrace text while they happen, and ends with
# a summary.  The guest kernel also keeps its own ftrace ring (the
# workers' sched_switch) in guest RAM; the finale panics the guest on
# purpose and prints that kernel's last events from its RAM, read by the
# host with no help from the dead guest.  Uses its own hvtraced (socket and runtime folder in a
# temporary folder), so an hvtraced already running is not disturbed, and
# leaves nothing behind: no QEMU, socket, /dev/shm file or folder.
#
# Environment (set by 'make demo'): HVT_SRCTREE, HVT_OBJTREE.
# DEMO_SECONDS (default 8) sets how long the workload runs.
set -u

SRC=${HVT_SRCTREE:-$(cd "$(dirname "$0")/.." && pwd)}
OBJ=${HVT_OBJTREE:-$SRC/build}
H=hvtrace
export PATH=$OBJ/bin:$PATH
SECONDS_RUN=${DEMO_SECONDS:-8}
NAME=demo$$
T0=$EPOCHREALTIME

if [ -t 1 ]; then
	B=$'\e[1m' N=$'\e[0m'
else
	B='' N=''
fi

say() {
	printf '\n%s==> %s%s\n' "$B" "$*" "$N"
}

# Show a command (words with blanks or shell characters quoted), then run
# it.
run() {
	local a shown=
	for a in "$@"; do
		if [[ $a =~ [^A-Za-z0-9_./=:,+-] ]]; then
			shown+=" '${a//\'/\'\\\'\'}'"
		else
			shown+=" $a"
		fi
	done
	printf '%s$%s%s\n' "$B" "$shown" "$N"
	"$@"
}

since() {
	awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

die() {
	echo "demo: error: $*" >&2
	exit 1
}

# --- what the demo needs ------------------------------------------------

[ -x "$OBJ/bin/hvtrace" ] || die "$OBJ/bin/hvtrace is not built; run 'make demo' (or make all first)"
command -v qemu-system-x86_64 >/dev/null ||
	die "qemu-system-x86_64 is missing; run 'make deps' (or apt-get install qemu-system-x86)"
make -C "$SRC" --no-print-directory O="$OBJ" guest-image >/dev/null ||
	die "could not build the guest image (make O=$OBJ guest-image)"
KERNEL=$("$SRC/qemu-scripts/fetch-kernel.sh") ||
	die "could not get the guest kernel (qemu-scripts/fetch-kernel.sh)"

TMP=$(mktemp -d /tmp/hvtrace-demo.XXXXXX) || die "mktemp failed"
export HVTRACED_SOCKET=$TMP/hvtraced.sock HVT_RUNDIR=$TMP/run HVT_OBJTREE=$OBJ
SPID=

cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
	"$H" guest stop "$NAME" >/dev/null 2>&1
	"$H" daemon stop >/dev/null 2>&1
	"$SRC/qemu-scripts/hvtrace-guest" cleanup --areas "$NAME" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat <<EOF
${B}hvtrace demo${N}: a guest's workload traced from the host.

The guest runs ue_demo: 4 worker threads serve "requests" for ${SECONDS_RUN} s and
record each one as a user event ("hvtrace_demo_request u32 worker; u64 req;
u32 status; u32 latency_us; __rel_loc char[] path").  The guest kernel has
no user_events: registration goes through hvtrace-agent to hvtraced on the
host, which assigns ids, formats and enable bits; the writers check one bit
of a shared control page and write straight into per-CPU ftrace ring
buffers in shared memory (an ivshmem BAR), which hvtraced reads.
Guest kernel: $(basename "$KERNEL")
EOF

# --- 1. boot ---------------------------------------------------------------

say "1. Boot the guest; hvtraced is started and attaches it"
tboot=$EPOCHREALTIME
KT=/sys/kernel/tracing/instances/hvt
run "$H" guest start "$NAME" \
	--kernel-events sched:sched_switch,ftrace:print --keep-ram --port panic \
	--log "$TMP/console.log" \
	--run "ue_demo --workers 4 --seconds $SECONDS_RUN --rate 5 --wait-enable 60000; until head -c 1 /dev/virtio-ports/panic | grep -q p; do sleep 0.1; done; echo 'hvt-demo: panicking on purpose' >$KT/trace_marker; echo c >/proc/sysrq-trigger" ||
	die "the guest did not start"
BOOT=$(since "$tboot")
run "$H" list

# --- 2. the events it registered -------------------------------------------

say "2. The workload registered its events with the host"
LOG=$TMP/console.log
# Registered, and its workers named (the host shows their comms).
for _ in $(seq 300); do
	grep -aq '^ue_demo: workers named' "$LOG" 2>/dev/null && break
	sleep 0.1
done
run "$H" events status --remote "$NAME"
printf '%s$ %s%s\n' "$B" "$H events format --remote $NAME hvtrace_demo_request | grep -v '^\$'" "$N"
"$H" events format --remote "$NAME" hvtrace_demo_request | grep -v '^$'

# --- 3. enable, 4. stream ----------------------------------------------------

say "3. Enable them from the host; 4. stream them while they happen (with the guest kernel's sched_switch)"
run "$H" events enable --remote "$NAME" hvtrace_demo_msg hvtrace_demo_request ||
	die "could not enable the events"
printf '%s$ %s%s\n' "$B" "$H stream $NAME --summary" "$N"
twork=$EPOCHREALTIME
# $! is the stream itself (a process substitution, not a pipeline), so
# that SIGINT reaches it: it prints what it holds and its summary.
"$H" stream "$NAME" --summary 2>"$TMP/stream.err" > >(tee "$TMP/stream.out") &
SPID=$!
line=
for _ in $(seq $(((SECONDS_RUN + 30) * 10))); do
	line=$(grep -a '^ue_demo: .* events written' "$LOG" 2>/dev/null) && break
	sleep 0.1
done
sleep 0.5	# hvtraced reads the rings every 10 ms or less: the last pages
kill -INT "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
SPID=
sleep 0.2	# tee's last lines
WORK=$(since "$twork")
[ -n "$line" ] || die "the workload did not finish (console: $LOG)"

# --- 5. summary -------------------------------------------------------------------

say "5. Summary"
cat "$TMP/stream.err"
"$H" stat "$NAME" >"$TMP/stat.out" 2>&1
"$H" guest status "$NAME" >"$TMP/status.out" 2>&1
written=$(echo "$line" | sed -n 's/.*requests, \([0-9]*\) events written.*/\1/p')
streamed=$(grep -c ' hvtrace_demo_' "$TMP/stream.out")
lost=$(grep -c 'LOST' "$TMP/stream.out")
awk -v streamed="$streamed" -v written="$written" '
	/^CPU [0-9]+:/ { cpu = $2; sub(":", "", cpu) }
	/^written:/ { w[cpu] = $2 }
	/^read events:/ { r[cpu] = $3 }
	/^lost:/ { l[cpu] = $2 }
	/^errors:/ { e[cpu] = $2; n++; order[n] = cpu }
	END {
		for (i = 1; i <= n; i++) {
			c = order[i]
			printf "  cpu %s: %d written, %d read, %d lost, %d errors (hvtraced)\n", c, w[c], r[c], l[c], e[c]
			tl += l[c]; te += e[c]
		}
		printf "  events: the guest wrote %d, the stream printed %d; lost %d, errors %d\n", written, streamed, tl, te
	}' "$TMP/stat.out"
err_ns=$(sed -n 's/^clock_error_ns=//p' "$TMP/status.out")
samples=$(sed -n 's/^sync_samples=//p' "$TMP/status.out")
accel=$(sed -n 's/^accel=//p' "$TMP/status.out")
cpus=$(sed -n 's/^cpus=//p' "$TMP/status.out")
case $(sed -n 's/^clock: //p' "$TMP/stat.out") in
mono) clock="the guest's CLOCK_MONOTONIC" ;;
counter) clock="the guest's TSC" ;;
*) clock="the guest's clock" ;;
esac
if [[ $err_ns =~ ^[0-9]+$ ]]; then
	printf '  time: %s placed on the host CLOCK_MONOTONIC by ping-pong\n' "$clock"
	printf '        over the control channel, error bound +-%s us (%s samples)\n' \
		"$(awk -v n="$err_ns" 'BEGIN { printf "%.1f", n / 1000 }')" "$samples"
else
	printf '  time: not synchronised (%s)\n' "$err_ns"
fi
printf '  wall time: %s s so far (boot and attach %s s, workload and stream %s s;\n' \
	"$(since "$T0")" "$BOOT" "$WORK"
printf '             the guest has %s vCPUs under %s)\n' "$cpus" "$accel"

# --- 6. the guest kernel's own trace, after a panic --------------------------------

say "6. The guest kernel panics on purpose; the host reads its last events from guest RAM"
# The guest panics once it reads a byte on its port "panic" (sent until it
# takes it: a byte sent while the port is closed may be dropped).
"$SRC/qemu-scripts/port-send" "$HVT_RUNDIR/$NAME/port-panic.sock" p "$LOG" 'Kernel panic' 60 ||
	die "the guest did not panic"
grep -a -m1 'Kernel panic' "$LOG"
"$SRC/qemu-scripts/hvtrace-guest" wait "$NAME" --poweroff --timeout 60 >/dev/null ||
	die "QEMU did not end after the panic"
# The rig and hvtraced say the same of it: panicked, its RAM kept
# (hvtraced learns it from the rig's record within moments).
for _ in $(seq 50); do
	"$H" list 2>/dev/null | grep -q "^$NAME .* panicked " && break
	sleep 0.1
done
run "$H" guest list
RAM=${HVT_SHM_DIR:-/dev/shm}/hvtrace-$NAME.ram
# The formats the guest printed on its console at boot.
"$SRC/qemu-scripts/hvtrace-guest" kformats --log "$LOG" "$TMP/kformats" >/dev/null ||
	die "no guest kernel formats on the console ($LOG)"
printf '%s$ %s%s
' "$B" "$H stream $RAM --drain --formats DIR | grep 'demo-w\|hvt-demo' | tail -8" "$N"
"$H" stream "$RAM" --drain --formats "$TMP/kformats" --summary \
	>"$TMP/kring.out" 2>"$TMP/kring.err" || {
	cat "$TMP/kring.err"
	die "could not read the guest kernel's ring from $RAM"
}
grep -a 'demo-w\|hvt-demo' "$TMP/kring.out" | tail -8
tail -1 "$TMP/kring.err"
kswitch=$(grep -ac 'sched_switch:.*demo-w' "$TMP/kring.out")
klast=$(grep -ac 'hvt-demo: panicking on purpose' "$TMP/kring.out")
# print's ip named from the guest's own symbol table in its RAM
kname=$(grep -ac 'tracing_mark_write: hvt-demo: panicking on purpose' "$TMP/kring.out")
printf '  the guest kernel recorded %s switches of the workers; its last marker%s%s\n' \
	"$kswitch" "$([ "$klast" = 1 ] && echo ' is there' || echo ' is MISSING')" \
	"$([ "$kname" = 1 ] && echo ', written by tracing_mark_write' || echo ', its function NOT NAMED')"

# --- 7. stop ---------------------------------------------------------------------

say "7. Stop the guest and hvtraced"
run "$H" guest stop "$NAME"
run "$H" daemon stop
"$SRC/qemu-scripts/hvtrace-guest" cleanup --areas "$NAME" >/dev/null 2>&1
left=
pgrep -f -- "$HVT_RUNDIR/$NAME/" >/dev/null && left+=" QEMU"
[ -e "/dev/shm/hvtrace-$NAME" ] && left+=" /dev/shm/hvtrace-$NAME"
[ -e "$RAM" ] && left+=" $RAM"
[ -e "$HVTRACED_SOCKET" ] && left+=" $HVTRACED_SOCKET"
[ -e "$HVT_RUNDIR/$NAME" ] && left+=" $HVT_RUNDIR/$NAME"
[ -z "$left" ] || die "left behind:$left"
echo "nothing left behind (no QEMU, socket or /dev/shm file)"
printf '\n%sdemo finished in %s s%s (events: %s written, %s streamed, %s LOST lines; guest kernel: %s worker switches, last marker %s)\n' \
	"$B" "$(since "$T0")" "$N" "$written" "$streamed" "$lost" "$kswitch" "$klast"
[ "$streamed" = "$written" ] && [ "$lost" = 0 ] && [ "$kswitch" -gt 0 ] && [ "$klast" = 1 ] &&
	[ "$kname" = 1 ]
