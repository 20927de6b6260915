# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Common code of the QEMU rig tests (sourced).  Every test boots real guests
# under QEMU (TCG unless KVM proves usable) with an initramfs holding
# hvt-probe, and checks the host side through the launcher's files.
#
# Environment: HVT_OBJTREE (build tree with qemu-scripts/hvt-probe*).

set -u

T_SRCTREE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
T_OBJTREE=${HVT_OBJTREE:-$T_SRCTREE/build}
G=$T_SRCTREE/qemu-scripts/hvtrace-guest
PROBE=$T_OBJTREE/qemu-scripts/hvt-probe
PROBE_HOST=$T_OBJTREE/qemu-scripts/hvt-probe-host
T_RUNDIR=${HVT_RUNDIR:-/run/hvtrace}
T_SHM=${HVT_SHM_DIR:-/dev/shm}
T_TMP=
T_GUESTS=()
T_PIDS=()	# background processes to end on exit

fail() {
	echo "FAIL: $*" >&2
	t_dump_logs
	exit 1
}

info() {
	echo "-- $*"
}

# The consoles of this test's guests, for the failure report.
t_dump_logs() {
	local f
	[ -n "$T_TMP" ] || return 0
	for f in "$T_TMP"/*.log; do
		echo "---- $f" >&2
		tail -n 30 "$f" >&2
	done
}

t_stopped() {
	fail "stopped by SIG$1 after ${SECONDS}s (the runner's timeout, or a signal from outside the test)"
}

t_cleanup() {
	local n p
	for p in "${T_PIDS[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	for n in "${T_GUESTS[@]}"; do
		"$G" stop "$n" >/dev/null 2>&1
		"$G" cleanup --areas "$n" >/dev/null 2>&1
	done
	[ -n "$T_TMP" ] && rm -rf "$T_TMP"
}

# Skip only when QEMU itself is missing; anything else is a failure.
t_require() {
	if ! command -v "${HVT_QEMU:-qemu-system-x86_64}" >/dev/null; then
		echo "SKIP: ${HVT_QEMU:-qemu-system-x86_64} is not installed (apt-get install qemu-system-x86, or make deps)"
		exit 77
	fi
	[ -x "$PROBE" ] && [ -x "$PROBE_HOST" ] ||
		fail "$PROBE or $PROBE_HOST is missing; build them with 'make O=$T_OBJTREE tests'"
	T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hvt-qemu-test.XXXXXX")
	trap t_cleanup EXIT
	# A runner's timeout must not leave guests behind either.
	# (said, with the consoles: a test stopped from outside must not
	# leave an empty log)
	trap 't_stopped INT' INT
	trap 't_stopped TERM' TERM
	trap 't_stopped HUP' HUP
}

# t_name VAR SUFFIX: set VAR to a guest name unique to this test run and
# register it for cleanup.
t_name() {
	T_GUESTS+=("t$$-$2")
	printf -v "$1" '%s' "t$$-$2"
}

# The test initramfs: busybox and hvt-probe only.
t_initrd() {
	if [ ! -f "$T_TMP/initrd.gz" ]; then
		"$T_SRCTREE/qemu-scripts/mkinitramfs.sh" -o "$T_TMP/initrd.gz" "$PROBE" ||
			fail "mkinitramfs.sh failed"
	fi
	echo "$T_TMP/initrd.gz"
}

# status_get NAME KEY: one key of "hvtrace-guest status NAME".
status_get() {
	"$G" status "$1" 2>/dev/null | sed -n "s/^$2=//p"
}

# Nothing of guest NAME may remain: no QEMU with its runtime folder on the
# command line, no runtime folder, sockets or area file; list shows it
# only as a guest whose QEMU ended (its record: powered-off, panicked,
# crashed), if at all.  With "keep" the area file must remain instead.
assert_gone() {
	local n=$1 keep=${2:-} rd pids
	rd=$T_RUNDIR/$n
	pids=$(pgrep -f -- "$rd/" || true)
	[ -z "$pids" ] || fail "QEMU/launcher processes of '$n' remain: $(ps -o pid=,args= -p ${pids//$'\n'/,} 2>/dev/null)"
	[ ! -e "$rd" ] || fail "runtime folder $rd remains: $(ls -la "$rd" 2>&1)"
	[ ! -e "$rd/control.sock" ] || fail "control socket of '$n' remains"
	if [ "$keep" = keep ]; then
		[ -f "$T_SHM/hvtrace-$n" ] || fail "--keep-area: area file $T_SHM/hvtrace-$n is gone"
	else
		[ ! -e "$T_SHM/hvtrace-$n" ] || fail "area file $T_SHM/hvtrace-$n remains"
	fi
	local st
	st=$("$G" list --no-header | awk -v n="$n" '$1 == n { print $2 }')
	case $st in
	'' | powered-off | panicked | crashed) ;;
	*) fail "'$n' is still listed as $st" ;;
	esac
	return 0
}

# wait_line FILE REGEX SECONDS: wait (bounded) until a line of FILE
# matches the extended REGEX; 1 if none did in time.  When FILE is a
# guest's console and its kernel panicked after its userspace began, no
# line will come: 1 at once, the panic's line on stderr.
wait_line() {
	local tries=$(($3 * 10))
	until grep -qaE -- "$2" "$1"; do
		[ $tries -gt 0 ] || return 1
		if [ $((tries % 10)) -eq 0 ] && console_panicked "$1"; then
			echo "$1: the guest's kernel panicked: $(console_panicked "$1")" >&2
			return 1
		fi
		tries=$((tries - 1))
		sleep 0.1
	done
}

# console_panicked LOG: print the "Kernel panic" line of console LOG if
# its kernel panicked after /init's first "hvtrace: " line (a panic while
# booting is the launcher's to retry: hvtrace-guest, boot_panicked).
console_panicked() {
	awk '/^hvtrace-guest: kernel panic while booting under TCG/ { user = 0; next }
	     /^hvtrace: / { user = 1 }
	     user && /Kernel panic/ { sub(/.*Kernel panic/, "Kernel panic"); sub(/\r$/, ""); print; found = 1; exit }
	     END { exit !found }' "$1" 2>/dev/null
}

# Wait (bounded) until pid $1 is gone.
wait_pid_gone() {
	local pid=$1 tries=$(($2 * 20))
	while kill -0 "$pid" 2>/dev/null; do
		[ $tries -gt 0 ] || return 1
		tries=$((tries - 1))
		sleep 0.05
	done
}

# Guest kernel ring tests (--kernel-events): the --run command that writes
# lines "hvt-mark 0" .. "hvt-mark COUNT-1" to the instance's trace_marker
# from one CPU (guest CPU 0), so the order of the lines is the ring's
# order, whatever the merge window across CPUs.
kring_marks() {
	echo "taskset 1 sh -c 'T=/sys/kernel/tracing/instances/hvt; i=0; while [ \$i -lt $1 ]; do echo \"hvt-mark \$i\" >\$T/trace_marker; i=\$((i + 1)); done'"
}

# kring_gated CMD: CMD run once the host sends "g" on the guest's port
# "go" (start the guest with --port go), and the console line hvt-go-seen
# first.  The exact-delivery tests start their writers this way once the
# host's reader is running: their guest writes more than its kernel ring
# holds (raw_syscalls on every CPU), so writers that started at "ready"
# could lap the ring before a reader slowed by a loaded host attached,
# and a reader cannot count what was overwritten before it came.
kring_gated() {
	echo "until head -c 1 /dev/virtio-ports/go | grep -q g; do sleep 0.05; done; echo hvt-go-seen; $1"
}

# kring_go NAME ERR SPID REGEX: once the stream SPID wrote a line matching
# REGEX to ERR (it is set up and reading), send guest NAME's "go"
# (kring_gated) until it says it saw it.  A stream of a RAM file says at
# once "guest kernel times are the guest's own", and "stream NAME
# --guest-kernel" names the ring it reads through hvtraced: signs that do
# not wait for an event.
kring_go() {
	local n=$1 err=$2 spid=$3 re=$4 tries=1200
	until grep -qaE -- "$re" "$err"; do
		kill -0 "$spid" 2>/dev/null || { cat "$err"; fail "the stream ended before it was reading"; }
		[ $tries -gt 0 ] || { cat "$err"; fail "the stream did not say it was reading in 120 s"; }
		tries=$((tries - 1))
		sleep 0.1
	done
	"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" g "$T_TMP/$n.log" \
		$'\nhvt-go-seen' 120 || fail "the guest did not take the signal on its port"
}

# kring_check_marks FILE COUNT: FILE holds exactly the lines hvt-mark
# 0..COUNT-1, each once, in order, and no lost-events line.
kring_check_marks() {
	local file=$1 count=$2 got
	grep -q 'LOST' "$file" && fail "$file reports lost events: $(grep -m3 LOST "$file")"
	got=$(grep -o 'hvt-mark [0-9]*' "$file" | awk -v n="$count" '
		{ if ($2 != seen) { printf "line %d: hvt-mark %s where %d was due\n", NR, $2, seen; bad = 1; exit } seen++ }
		END { if (!bad && seen != n) printf "%d of %d lines\n", seen, n; else if (!bad) print "ok" }')
	[ "$got" = ok ] || fail "$file: $got"
}

# kring_check_end KIND SPID OUT ERR COUNT: the live stream SPID (its
# output OUT, its stderr ERR) after its VMM ended: a memfd guest's ring is
# read to its end (exit 0, the COUNT marks each once); anonymous RAM went
# with the process (a non-zero exit, an error that says so).
kring_check_end() {
	local kind=$1 spid=$2 out=$3 err=$4 count=$5 rc=0
	wait "$spid" || rc=$?
	if [ "$kind" = memfd ]; then
		[ "$rc" = 0 ] || { cat "$err"; fail "live stream ended with $rc after its VMM ended"; }
		kring_check_marks "$out" "$count"
	else
		[ "$rc" != 0 ] || fail "live stream of anonymous RAM exited 0 after its VMM ended"
		grep -q "the ring went with it" "$err" || fail "anon end: $(cat "$err")"
	fi
}

# kring_check_getppid LOG OUT CALLS: getppid_loop (its pid from the console
# LOG) made CALLS getppid calls, and OUT shows exactly that many
# "sys_enter: NR 110" events (getppid on x86_64) of that pid.
kring_check_getppid() {
	local log=$1 out=$2 want=$3 pid calls
	pid=$(sed -n 's/^getppid_loop: pid \([0-9]*\) made .*/\1/p' "$log" | tr -d '\r')
	[ -n "$pid" ] || fail "getppid_loop did not say its pid"
	calls=$(grep -a -c -- "-$pid *\[.*sys_enter: NR 110 (" "$out")
	info "getppid_loop (pid $pid): $calls getppid sys_enter events of $want calls"
	[ "$calls" -eq "$want" ] || {
		grep -a -m5 -- "-$pid *\[" "$out"
		fail "$calls getppid sys_enter events from pid $pid, not $want"
	}
}

# The overwrite tests' guest (pinned to CPU 0): 100 numbered marker
# lines, then it waits for a "g" on its port "go" (the host's signal that
# the reader is stopped; a read before the host connects sees end of
# file), 19900 more, the console line hvt-burst1-done, a pause, 1000 more.
kring_lap_run() {
	local T=/sys/kernel/tracing/instances/hvt
	marks() {
		echo "i=$1; while [ \$i -lt $2 ]; do echo \"hvt-mark \$i\" >$T/trace_marker; i=\$((i + 1)); done"
	}
	echo "taskset 1 sh -c '$(marks 0 100); until head -c 1 /dev/virtio-ports/go | grep -q g; do sleep 0.1; done; echo hvt-go-seen; $(marks 100 20000); echo hvt-burst1-done; sleep 3; $(marks 20000 21000)'"
}

# kring_lap NAME SPID OUT ERR: once the stream SPID printed the first 100
# lines to OUT, stop it (SIGSTOP), signal guest NAME (kring_lap_run) on
# its port until it says it saw the byte (one sent while the port is
# closed may be dropped), wait for its burst, resume the stream and wait
# for its end (ERR: its stderr, shown).
kring_lap() {
	local n=$1 spid=$2 out=$3 err=$4
	wait_line "$out" 'hvt-mark 99$' 120 ||
		{ cat "$err"; fail "the stream did not print the first lines"; }
	kill -STOP "$spid" || fail "cannot stop the stream"
	# From here a failure must let the stream run again, or it never ends.
	"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" g "$T_TMP/$n.log" \
		$'\nhvt-go-seen' 120 ||
		{ kill -CONT "$spid"; fail "the guest did not take the signal on its port"; }
	wait_line "$T_TMP/$n.log" '^hvt-burst1-done' 120 ||
		{ kill -CONT "$spid"; fail "the guest did not finish its first burst"; }
	kill -CONT "$spid"
	wait "$spid" || { cat "$err"; fail "stream failed"; }
	cat "$err"
	grep -qa 'hvtrace: run exited with status 0' "$T_TMP/$n.log" || fail "the guest's writer failed"
}

# t_own_daemon: the test's own hvtraced (started by "hvtrace guest start"),
# its socket and runtime folder in $T_TMP, stopped at exit.
t_own_daemon() {
	T_RUNDIR=$T_TMP/run
	export HVTRACED_SOCKET=$T_TMP/hvtraced.sock HVT_RUNDIR=$T_RUNDIR HVT_SHM_DIR=$T_SHM
	trap '"$T_OBJTREE/bin/hvtrace" daemon stop >/dev/null 2>&1; t_cleanup' EXIT
}

# rec_setup TAG: a test that records a rig guest with a host tracefs
# instance (record-guest-kernel, record-guest-pair): HVTRACE, the guest
# image (initrd), the guest's instance T, a daemon of the test's own (its
# socket and runtime folder in $T_TMP), the host instance INST (its
# folder HI) removed at exit; a skip without trace-cmd or tracefs
# instances.
rec_setup() {
	HVTRACE=$T_OBJTREE/bin/hvtrace
	[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
	command -v trace-cmd >/dev/null || { echo "SKIP: trace-cmd is not installed (make deps)"; exit 77; }
	[ -w /sys/kernel/tracing/instances ] || { echo "SKIP: the host's tracefs instances are not writable (root needed)"; exit 77; }
	initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
	[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
	T=/sys/kernel/tracing/instances/hvt
	T_RUNDIR=$T_TMP/run
	export HVTRACED_SOCKET=$T_TMP/hvtraced.sock HVT_RUNDIR=$T_RUNDIR HVT_SHM_DIR=$T_SHM
	INST=hvt-$1-$$
	HI=/sys/kernel/tracing/instances/$INST
	trap '"$HVTRACE" daemon stop >/dev/null 2>&1; [ -d "$HI" ] && rmdir "$HI" 2>/dev/null; t_cleanup' EXIT
}

# rec_wait_started PID ERRFILE: until the recorder PID has set INST's
# mono clock and turned tracing on (what the guest kernel's ring held
# before is behind it then); a failure with ERRFILE when it exits first.
rec_wait_started() {
	local _
	for _ in $(seq 600); do
		grep -q '\[mono\]' "$HI/trace_clock" 2>/dev/null && [ "$(cat "$HI/tracing_on" 2>/dev/null)" = 1 ] && return 0
		kill -0 "$1" 2>/dev/null || { cat "$2"; fail "record exited early"; }
		sleep 0.1
	done
	cat "$2"
	fail "record did not start the host instance"
}
