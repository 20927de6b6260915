#!/bin/bash
# SPDX-License-Identifier: MIT
#
# issue 22 point 2: an attach by pid ("hvtrace daemon attach --vm-pid")
# reads a VMM's memory only through what the client opened with its own
# rights, and nothing a user names blocks hvtraced's loop.
#
#   (a) a formats folder whose events/SYS/EV/format is a FIFO: the attach
#       is refused with a message saying so, within seconds, as root and
#       as user nobody, and "hvtrace daemon status" answers at once after
#       it (the daemon used to block in open() on the FIFO, for ever);
#       root's own "--attach-area NAME=vmpid:PID,formats=DIR", which the
#       daemon opens itself, skips the FIFO and the daemon comes up.
#   (b) the kernel's ptrace check decides: user nobody is refused a
#       process of uid nobody that holds a capability nobody lacks (the
#       kernel refuses nobody its /proc/PID/mem although /proc/PID is
#       nobody's: hvtraced's own owner check let it read it as root), and
#       one marked undumpable; nobody may attach its own plain fake VMM,
#       and hvtraced then opens no /proc/PID file of it (strace of the
#       daemon, when strace works here): it uses the descriptors passed,
#       so a pid reused after the client's check reads nothing.
#   A fake VMM holding its RAM in a shared memfd is attached through the
#   memfd passed (the map path), and streams the golden ring's 8 events.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" kring-fds
NAME=kf$$
HVT_KILL=KILL

hvt_need_bins
hvt_need_golden
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
[ -n "$PY" ] || skip "python3 is not installed"
NOBODY=()
if [ "$(id -u)" = 0 ] && getent group nogroup >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$H" 2>/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" -c '' 2>/dev/null; then
	NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
chmod 711 "$T"
hvt_golden_seeds
chmod 755 "$T/seeds"
chmod 644 "$T/seeds/612-golden"

# hvtraced, under strace when strace can trace here.
TRACE=()
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
	TRACE=(strace -f -qq -e trace=open,openat,openat2 -o "$T/strace.out")
fi
"${TRACE[@]}" "$OBJ/bin/hvtraced" --foreground --socket "$HVTRACED_SOCKET" \
	--run-dir "$T/run" --group nogroup >"$T/hvtraced.log" 2>&1 &
DPID=$!
# Under strace, $! is strace's: the daemon is its child, and the one to
# stop at the end (strace detaches when it is stopped).
if [ ${#TRACE[@]} -gt 0 ]; then
	SPID=$DPID DPID=''
	for _ in $(seq 200); do
		DPID=$(pgrep -P "$SPID" -x hvtraced) && break
		sleep 0.05
	done
	[ -n "$DPID" ] || fail "hvtraced did not start under strace"
	PIDS="$PIDS $SPID"
fi
hvt_listening 10

# vmm TAG [memfd] [undumpable]: a fake VMM holding the golden ring 1 MiB
# into 64 MiB of anonymous memory (or of a shared memfd); its pid in
# $T/TAG.pid.  Runs as whoever runs it (a prefix command before).
vmm() {
	local tag=$1
	shift
	"$@" "$PY" -c '
import ctypes, mmap, os, sys, time
img = open(sys.argv[1], "rb").read()
if "undumpable" in sys.argv[2:]:
	ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)	# PR_SET_DUMPABLE 0
if "memfd" in sys.argv[2:]:
	fd = os.memfd_create("guest-ram")
	os.ftruncate(fd, 64 << 20)
	m = mmap.mmap(fd, 64 << 20, flags=mmap.MAP_SHARED)
else:
	m = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
m[1 << 20:(1 << 20) + len(img)] = img
print(os.getpid(), flush=True)
time.sleep(600)' "$T/seeds/612-golden" $VMM_OPTS >"$T/$tag.pid" 2>"$T/$tag.err" &
	PIDS="$PIDS $!"
	wait_for 5 test -s "$T/$tag.pid"
	[ -s "$T/$tag.pid" ] || fail "the fake VMM $tag did not start"
}

status_answers() {
	timeout 3 "$H" daemon status >"$T/status.out" 2>&1 ||
		fail "$1: hvtraced does not answer 'daemon status' within 3 s"
}

VMM_OPTS='' vmm root
VPID=$(cat "$T/root.pid")

# (a) A FIFO for a format file.
mkdir -p "$T/fifo/events/sched/sched_switch"
mkfifo "$T/fifo/events/sched/sched_switch/format"
chmod -R a+rX "$T/fifo"
chmod a+rw "$T/fifo/events/sched/sched_switch/format"
rc=0
timeout 10 "$H" daemon attach --vm-pid "$VPID" --name "$NAME-f" \
	--formats "$T/fifo" >"$T/fifo.err" 2>&1 || rc=$?
[ "$rc" = 124 ] && fail "the attach with a FIFO for a format hung"
[ "$rc" = 0 ] && fail "the attach with a FIFO for a format succeeded"
grep -q "format is not a regular file" "$T/fifo.err" ||
	fail "FIFO format: $(cat "$T/fifo.err")"
status_answers "after a FIFO format (root)"
grep -q "$NAME-f" "$T/status.out" && fail "the FIFO attach left a remote"

# Root's own spec, which hvtraced opens itself (--attach-area at start):
# the FIFO is skipped, not waited on, and the daemon comes up.
"$OBJ/bin/hvtraced" --foreground --socket "$T/legacy.sock" --run-dir "$T/run2" \
	--attach-area "$NAME-l=vmpid:$VPID,formats=$T/fifo" >"$T/legacy.log" 2>&1 &
PIDS="$PIDS $!"
wait_for 5 test -S "$T/legacy.sock"
HVTRACED_SOCKET=$T/legacy.sock timeout 3 "$H" daemon status >/dev/null 2>&1 ||
	fail "hvtraced --attach-area with a FIFO format does not answer"
grep -q "formats folder $T/fifo: no events/SYSTEM/EVENT/format file" "$T/legacy.log" ||
	fail "--attach-area with a FIFO format: $(cat "$T/legacy.log")"

if [ ${#NOBODY[@]} = 0 ]; then
	echo "(not checked: user nobody's attaches; need root, group nogroup and a build nobody can run)"
	echo PASS
	exit 0
fi
VMM_OPTS='' vmm own "${NOBODY[@]}"
OPID=$(cat "$T/own.pid")
rc=0
timeout 10 "${NOBODY[@]}" "$H" daemon attach --vm-pid "$OPID" --name "$NAME-g" \
	--formats "$T/fifo" >"$T/fifo-nobody.err" 2>&1 || rc=$?
[ "$rc" = 124 ] && fail "nobody's attach with a FIFO for a format hung"
[ "$rc" = 0 ] && fail "nobody's attach with a FIFO for a format succeeded"
grep -q "format is not a regular file" "$T/fifo-nobody.err" ||
	fail "FIFO format as nobody: $(cat "$T/fifo-nobody.err")"
status_answers "after a FIFO format (nobody)"

# (b) The kernel decides.  A nobody process with a capability nobody
# lacks: /proc/PID is nobody's, its memory is not.
VMM_OPTS='' vmm cap setpriv --reuid=65534 --regid=65534 --clear-groups \
	--inh-caps +sys_nice --ambient-caps +sys_nice
CPID=$(cat "$T/cap.pid")
[ "$(stat -c %u "/proc/$CPID")" = 65534 ] || fail "the capable fake VMM is not nobody's"
if "${NOBODY[@]}" cat "/proc/$CPID/smaps" >/dev/null 2>&1; then
	echo "(not checked: this kernel lets nobody read a capable nobody process)"
else
	timeout 10 "${NOBODY[@]}" "$H" daemon attach --vm-pid "$CPID" \
		--name "$NAME-c" >"$T/cap.err" 2>&1 &&
		fail "nobody attached a process the kernel does not let it read"
	grep -q "needs ptrace read access to it" "$T/cap.err" ||
		fail "capable VMM: $(cat "$T/cap.err")"
fi
VMM_OPTS=undumpable vmm undump "${NOBODY[@]}"
UPID=$(cat "$T/undump.pid")
timeout 10 "${NOBODY[@]}" "$H" daemon attach --vm-pid "$UPID" \
	--name "$NAME-u" >"$T/undump.err" 2>&1 &&
	fail "nobody attached an undumpable process"
grep -q "needs ptrace read access to it" "$T/undump.err" ||
	fail "undumpable VMM: $(cat "$T/undump.err")"
timeout 10 "${NOBODY[@]}" "$H" daemon attach --vm-pid "$VPID" \
	--name "$NAME-r" >"$T/root.err" 2>&1 &&
	fail "nobody attached root's process"
status_answers "after the refusals"
grep -E "$NAME-(c|u|r) " "$T/status.out" && fail "a refused attach left a remote"

# nobody's own plain VMM: attached, read through the passed descriptors.
timeout 20 "${NOBODY[@]}" "$H" daemon attach --vm-pid "$OPID" --name "$NAME-o" \
	>"$T/own.out" 2>&1 || fail "nobody's attach of its own VMM: $(cat "$T/own.out")"
grep -q "attached '$NAME-o' (the guest kernel ring in process $OPID" "$T/own.out" ||
	fail "own VMM: $(cat "$T/own.out")"
timeout 20 "$H" stream "$NAME-o" --drain >"$T/own.txt" 2>"$T/own-stream.err" ||
	fail "stream $NAME-o failed"
[ "$(grep -c . "$T/own.txt")" = 8 ] || fail "stream $NAME-o: not the golden ring's 8 events"
if [ -n "${TRACE[*]}" ]; then
	grep -E "\"/proc/$OPID/" "$T/strace.out" >"$T/opened.err" &&
		fail "hvtraced opened /proc/$OPID files itself for nobody's attach"
else
	echo "(not checked: which files hvtraced opens; strace cannot trace here)"
fi

# The map path: guest RAM in a shared memfd, passed as the memfd.
VMM_OPTS=memfd vmm memfd
MPID=$(cat "$T/memfd.pid")
timeout 20 "$H" daemon attach --vm-pid "$MPID" --name "$NAME-m" \
	>"$T/memfd.out" 2>&1 || fail "attach of the memfd VMM: $(cat "$T/memfd.out")"
grep -q "attached '$NAME-m'" "$T/memfd.out" || fail "memfd VMM: $(cat "$T/memfd.out")"
timeout 20 "$H" stream "$NAME-m" --drain >"$T/memfd.txt" 2>"$T/memfd-stream.err" ||
	fail "stream $NAME-m failed"
[ "$(grep -c . "$T/memfd.txt")" = 8 ] || fail "stream $NAME-m: not the golden ring's 8 events"
echo PASS
