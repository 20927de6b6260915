#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The kring transport without a VM: a fake VMM process (python3) holds the
# golden 6.12 guest kernel ring that unit/kring_golden writes (7 events on
# CPU 0, 1 on CPU 1) in 64 MiB of private anonymous memory, as QEMU holds
# guest RAM.  hvtraced attaches it by pid (hvtrace daemon attach --vm-pid)
# and:
#
#   "hvtrace stream NAME --drain" prints exactly the lines "hvtrace stream
#   --vm-pid PID --drain" prints reading the ring itself, and says the
#   times are the guest's own; "hvtrace stat NAME" counts 7 events read
#   on CPU 0 and 1 on CPU 1, no errors; "daemon status" lists a connected
#   kring remote.  Killing the fake VMM under a live stream ends the
#   stream (exit 0) with a line saying so, and the remote is
#   disconnected.
#
# Refused with their reasons: a pid that is no process (also after the
# kill), a process without guest RAM, a bad --vm-pid, a formats folder
# without formats, and (when root runs it and user nobody can) a peer
# that is neither root nor the process's user.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" kring-attach
NAME=kr$$
VPID='' SPID=''

hvt_need_bins
hvt_need_golden
command -v python3 >/dev/null || skip "python3 is not installed"
hvt_golden_seeds

# The socket's group is nogroup (when it exists), so that user nobody is
# a trusted tool and is refused for attaching by pid, not for the socket.
group=()
if getent group nogroup >/dev/null; then
	group=(--group nogroup)
	chmod 711 "$T"
fi
"$OBJ/bin/hvtraced" --foreground --socket "$HVTRACED_SOCKET" \
	--run-dir "$T/run" "${group[@]}" >"$T/hvtraced.log" 2>&1 &
DPID=$!
hvt_listening

# The fake VMM: the ring 1 MiB into 64 MiB of private anonymous memory.
python3 -c '
import mmap, sys, time
img = open(sys.argv[1], "rb").read()
m = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
m[1 << 20:(1 << 20) + len(img)] = img
print("ready", flush=True)
time.sleep(600)' "$T/seeds/612-golden" >"$T/vmm.out" 2>"$T/vmm.err" &
VPID=$!
PIDS=$VPID
wait_for 5 grep -q ready "$T/vmm.out"
grep -q ready "$T/vmm.out" || fail "the fake VMM did not start"

"$H" stream --vm-pid "$VPID" --drain >"$T/direct.txt" 2>"$T/direct.err" ||
	fail "stream --vm-pid $VPID failed"
[ "$(grep -c . "$T/direct.txt")" = 8 ] || fail "stream --vm-pid: not the golden ring's 8 events"

"$H" daemon attach --vm-pid "$VPID" --name "$NAME" >"$T/attach.out" 2>&1 ||
	fail "daemon attach --vm-pid $VPID: $(cat "$T/attach.out")"
grep -q "attached '$NAME' (the guest kernel ring in process $VPID" "$T/attach.out" ||
	fail "attach: $(cat "$T/attach.out")"
"$H" daemon status | grep -E "^[0-9]+ +$NAME +connected +kring " >/dev/null ||
	fail "daemon status does not list a connected kring remote: $("$H" daemon status)"

"$H" stream "$NAME" --drain >"$T/daemon.txt" 2>"$T/daemon.err" ||
	fail "stream $NAME --drain failed"
diff "$T/direct.txt" "$T/daemon.txt" >"$T/diff.err" ||
	fail "stream $NAME differs from stream --vm-pid"
grep -q "times are the guest's own trace clock" "$T/daemon.err" ||
	fail "stream $NAME does not say whose clock its times are"
# The golden ring's RAM has no vmcoreinfo: hvtraced says so, and the
# stream says why its addresses stay in hex.
grep -q "function names print in hex (never the host's): .*vmcoreinfo\|function names print in hex (never the host's): .*note" "$T/daemon.err" ||
	fail "stream $NAME does not say why function names print in hex: $(cat "$T/daemon.err")"
"$H" stat "$NAME" >"$T/stat.txt" 2>&1 || fail "stat $NAME: $(cat "$T/stat.txt")"
awk '/^CPU 0:/ { c = 0 } /^CPU 1:/ { c = 1 }
	/^read events:/ { e[c] = $3 } /^errors:/ { err += $2 }
	END { exit !(e[0] == 7 && e[1] == 1 && err == 0) }' "$T/stat.txt" ||
	fail "stat $NAME: not 7 and 1 events read: $(cat "$T/stat.txt")"

# Refusals.
mkdir "$T/empty"
"$H" daemon attach --vm-pid "$VPID" --name "$NAME-e" --formats "$T/empty" \
	>"$T/nofmt.err" 2>&1 && fail "attach with an empty formats folder succeeded"
grep -q "no events/ folder in it" "$T/nofmt.err" || fail "empty formats: $(cat "$T/nofmt.err")"
"$H" daemon attach --vm-pid "$DPID" --name "$NAME-d" >"$T/notvm.err" 2>&1 &&
	fail "attach of hvtraced's own pid succeeded"
grep -q "no populated writable mapping of 64 MiB" "$T/notvm.err" ||
	fail "not a VMM: $(cat "$T/notvm.err")"
"$H" daemon attach --vm-pid 12x >"$T/badpid.err" 2>&1 && fail "--vm-pid 12x accepted"
grep -q "not a process id" "$T/badpid.err" || fail "bad pid: $(cat "$T/badpid.err")"
if [ "$(id -u)" = 0 ] && [ ${#group[@]} -gt 0 ] &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$H" 2>/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$H" daemon attach \
		--vm-pid "$VPID" --name "$NAME-n" >"$T/eperm.err" 2>&1 &&
		fail "attach by pid as nobody succeeded"
	grep -q "needs ptrace read access to it" "$T/eperm.err" ||
		fail "as nobody: $(cat "$T/eperm.err")"
else
	echo "(not checked: the refusal of a non-root peer; needs root, group nogroup and a build nobody can run)"
fi

# The VMM goes under a live stream.
"$H" stream "$NAME" >"$T/end.txt" 2>"$T/end.err" &
SPID=$!
PIDS="$SPID $VPID"
wait_for 10 grep -q "guest's own" "$T/end.err"
kill -9 "$VPID"
wait "$VPID" 2>/dev/null
VPID='' PIDS=$SPID
rc=0
timeout 60 tail --pid="$SPID" -f /dev/null || fail "the stream did not end when the VMM went"
wait "$SPID" || rc=$?
SPID='' PIDS=''
[ "$rc" = 0 ] || fail "the stream ended with $rc"
grep -q "'$NAME' stopped (its writer or VMM ended)" "$T/end.err" ||
	fail "the stream's end says nothing: $(cat "$T/end.err")"
"$H" daemon info --remote "$NAME" | grep -q "^state: disconnected" ||
	fail "$NAME is not disconnected"
pid=$(sed -n 's/.*(the guest kernel ring in process \([0-9]*\) .*/\1/p' "$T/attach.out")
"$H" daemon attach --vm-pid "$pid" --name "$NAME-g" >"$T/gone.err" 2>&1 &&
	fail "attach of a gone pid succeeded"
grep -q "no process $pid" "$T/gone.err" || fail "gone pid: $(cat "$T/gone.err")"
echo PASS
