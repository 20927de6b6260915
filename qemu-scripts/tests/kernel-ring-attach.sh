#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtraced attaches the guest kernel's own ftrace ring found in the memory
# of a QEMU process by its pid (hvtrace daemon attach --vm-pid PID; the
# kring transport, docs/proxy.md), and tools read it by name like any
# remote.  A guest with --kernel-events and --kernel-ram anon (plain
# anonymous RAM, no RAM file) on the cached Debian 6.12 guest kernel
# writes N numbered lines to its instance's trace_marker from CPU 0:
#
#   "hvtrace stream NAME" (formats from the folder "hvtrace guest
#   kformats" writes, given with --formats) shows every line exactly once,
#   in order, with no loss, and says the times are the guest's own;
#   "hvtrace stat NAME" counts N events read on CPU 0, none on CPU 1, no
#   errors; "hvtrace daemon status" lists it as a kring remote.  When QEMU
#   is killed, a stream of it ends (exit 0) with a line saying so, and the
#   remote is "disconnected".
#
# Attached again without --formats (the formats cache holding the
# kernel's formats, filed from the console by "hvtrace guest kformats
# --log"), the attach names the cache's folder of the kernel's version
# line (the banner the vmcoreinfo's symbol table points at), and a stream
# of it shows every line again.
#
# Refused, with messages that say why: a pid that is no process, a
# process that is not a VMM, a formats folder with no formats, the same
# name twice, "hvtrace record NAME" (its times cannot go on the host's
# clock), and (when root runs the test) a peer that is neither root nor
# QEMU's user.
#
# Environment: HVT_KRING_LINES (N, default 2000).
. "$(dirname "$0")/lib.sh"
t_require
t_own_daemon

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
N=${HVT_KRING_LINES:-2000}
initrd=$(t_initrd)
mkdir -p "$T_RUNDIR"
# The socket's group is nogroup (when it exists), so that user nobody can
# be a trusted tool and be refused for attaching by pid, not for the
# socket; $T_TMP must be searchable for that.
group=()
if getent group nogroup >/dev/null; then
	group=(--group nogroup)
	chmod 711 "$T_TMP"
fi
"$HVTRACE" daemon start --socket "$HVTRACED_SOCKET" --run-dir "$T_RUNDIR" \
	--log "$T_TMP/hvtraced.log" "${group[@]}" >/dev/null || fail "hvtraced did not start"

t_name n anon
info "$N lines of a --kernel-ram anon guest, read through hvtraced by QEMU's pid"
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print --kernel-ram anon \
	--run "sleep 1; $(kring_marks "$N"); echo hvt-marks-done; sleep 600" \
	--wait-ready --timeout 120 >/dev/null || fail "start failed"
[ ! -e "$T_SHM/hvtrace-$n.ram" ] || fail "anon guest has a RAM file"
qpid=$(status_get "$n" qemu_pid)
[ -n "$qpid" ] || fail "no QEMU pid for $n"
"$G" kformats "$n" "$T_TMP/fmt" >/dev/null || fail "kformats failed"

k=k$$
"$HVTRACE" daemon attach --vm-pid "$qpid" --name "$k" --formats "$T_TMP/fmt" \
	>"$T_TMP/attach.out" 2>&1 ||
	{ cat "$T_TMP/attach.out"; fail "daemon attach --vm-pid $qpid failed"; }
cat "$T_TMP/attach.out"
grep -q "attached '$k' (the guest kernel ring in process $qpid" "$T_TMP/attach.out" ||
	fail "attach: $(cat "$T_TMP/attach.out")"
"$HVTRACE" daemon status | grep -E "^[0-9]+ +$k +connected +kring " >/dev/null ||
	fail "daemon status does not list $k as a connected kring remote: $("$HVTRACE" daemon status)"

timeout 200 "$HVTRACE" stream "$k" --count "$N" --summary \
	>"$T_TMP/live.txt" 2>"$T_TMP/live.err" ||
	{ cat "$T_TMP/live.err"; fail "stream $k failed"; }
cat "$T_TMP/live.err"
kring_check_marks "$T_TMP/live.txt" "$N"
# Function names: the symbols hvtraced read from the guest's vmcoreinfo.
grep -q ' tracing_mark_write: hvt-mark 0$' "$T_TMP/live.txt" ||
	fail "stream $k prints no function name: $(grep -m1 'hvt-mark 0' "$T_TMP/live.txt")"
grep -q "guest kernel symbols from its vmcoreinfo" "$T_TMP/hvtraced.log" ||
	fail "hvtraced did not read the guest's symbols: $(cat "$T_TMP/hvtraced.log")"
grep -q "times are the guest's own trace clock" "$T_TMP/live.err" ||
	fail "stream $k does not say whose clock its times are"
wait_line "$T_TMP/$n.log" '^hvt-marks-done' 300 || fail "the guest did not finish writing"

"$HVTRACE" stat "$k" >"$T_TMP/stat.txt" 2>&1 ||
	{ cat "$T_TMP/stat.txt"; fail "stat $k failed"; }
grep -q "^transport: kring" "$T_TMP/stat.txt" || fail "stat $k: no kring transport"
awk -v n="$N" '
	/^CPU 0:/ { c = 0 } /^CPU 1:/ { c = 1 }
	/^read events:/ { e[c] = $3 } /^errors:/ { err += $2 }
	END { exit !(e[0] == n && e[1] == 0 && err == 0) }' "$T_TMP/stat.txt" ||
	{ cat "$T_TMP/stat.txt"; fail "stat $k: not $N events read on CPU 0 and none on CPU 1"; }

info "refusals"
if "$HVTRACE" daemon attach --vm-pid "$qpid" --name "$k" >"$T_TMP/dup.err" 2>&1; then
	fail "a second attach under the same name succeeded"
fi
grep -q "attached already" "$T_TMP/dup.err" || fail "same name: $(cat "$T_TMP/dup.err")"
if "$HVTRACE" record -o "$T_TMP/k.dat" -q "$k" >"$T_TMP/rec.err" 2>&1; then
	fail "record of $k (guest clock) on the host's clock succeeded"
fi
grep -q "guest kernel ring attached by VMM pid or RAM file: its times are the guest's own" "$T_TMP/rec.err" ||
	fail "record $k: $(cat "$T_TMP/rec.err")"
mkdir "$T_TMP/empty"
if "$HVTRACE" daemon attach --vm-pid "$qpid" --name "$k-e" --formats "$T_TMP/empty" \
	>"$T_TMP/nofmt.err" 2>&1; then
	fail "attach with an empty formats folder succeeded"
fi
grep -q "no events/ folder in it" "$T_TMP/nofmt.err" || fail "empty formats: $(cat "$T_TMP/nofmt.err")"
sleep 600 &
notvm=$!
T_PIDS+=("$notvm")
if "$HVTRACE" daemon attach --vm-pid "$notvm" --name "$k-s" >"$T_TMP/notvm.err" 2>&1; then
	fail "attach of sleep's pid succeeded"
fi
grep -q "no populated writable mapping of 64 MiB" "$T_TMP/notvm.err" ||
	fail "not a VMM: $(cat "$T_TMP/notvm.err")"
if [ "$(id -u)" = 0 ] &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$HVTRACE" 2>/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -w "$HVTRACED_SOCKET" 2>/dev/null; then
	if setpriv --reuid=65534 --regid=65534 --clear-groups "$HVTRACE" daemon attach \
		--vm-pid "$qpid" --name "$k-n" >"$T_TMP/eperm.err" 2>&1; then
		fail "attach by pid as nobody succeeded"
	fi
	grep -q "needs ptrace read access to it" "$T_TMP/eperm.err" ||
		fail "as nobody: $(cat "$T_TMP/eperm.err")"
else
	info "(not checked: the refusal of a non-root peer; needs root, a build and a daemon socket nobody can use)"
fi

info "attach without --formats: the formats cache's folder of the kernel its vmcoreinfo names"
HVT_CACHE=$T_TMP/cache "$G" kformats --log "$T_TMP/$n.log" >/dev/null ||
	fail "kformats into the cache failed"
HVT_CACHE=$T_TMP/cache "$HVTRACE" daemon attach --vm-pid "$qpid" --name "$k-c" \
	>"$T_TMP/cached.out" 2>&1 ||
	{ cat "$T_TMP/cached.out"; fail "daemon attach --vm-pid $qpid without --formats failed"; }
cat "$T_TMP/cached.out"
grep -q "formats from $T_TMP/cache/kformats/Linux_version_" \
	"$T_TMP/cached.out" ||
	fail "attach without --formats did not take the cached formats: $(cat "$T_TMP/cached.out")"
timeout 200 "$HVTRACE" stream "$k-c" --count "$N" >"$T_TMP/cached.txt" 2>"$T_TMP/cached.err" ||
	{ cat "$T_TMP/cached.err"; fail "stream $k-c failed"; }
kring_check_marks "$T_TMP/cached.txt" "$N"
"$HVTRACE" daemon detach "$k-c" >/dev/null || fail "detach $k-c failed"

info "QEMU killed under a live stream"
"$HVTRACE" stream "$k" >"$T_TMP/end.txt" 2>"$T_TMP/end.err" &
spid=$!
T_PIDS+=("$spid")
wait_line "$T_TMP/end.err" "guest's own trace clock" 60 ||
	fail "the live stream did not start: $(cat "$T_TMP/end.err")"
kill -9 "$qpid"
wait_pid_gone "$qpid" 60 || fail "QEMU $qpid did not end"
rc=0
timeout 120 tail --pid="$spid" -f /dev/null || fail "the stream of $k did not end after QEMU was killed"
wait "$spid" || rc=$?
cat "$T_TMP/end.err"
[ "$rc" = 0 ] || fail "the stream of $k ended with $rc after QEMU was killed"
grep -q "'$k' stopped (its writer or VMM ended)" "$T_TMP/end.err" ||
	fail "the stream's end says nothing of the VMM: $(cat "$T_TMP/end.err")"
"$HVTRACE" daemon info --remote "$k" | grep -q "^state: disconnected" ||
	fail "$k is not disconnected: $("$HVTRACE" daemon info --remote "$k")"
if "$HVTRACE" daemon attach --vm-pid "$qpid" --name "$k-g" >"$T_TMP/gone.err" 2>&1; then
	fail "attach of a gone pid succeeded"
fi
grep -q "no process $qpid" "$T_TMP/gone.err" || fail "gone pid: $(cat "$T_TMP/gone.err")"
"$HVTRACE" daemon detach "$k" >/dev/null || fail "detach $k failed"
echo "PASS"
