#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One timeline of the host kernel, a guest kernel and the guest's user
# events: "hvtrace stream NAME --kernel -e ftrace:print" merges the host
# kernel's events (an instance of the stream's own on the mono trace
# clock, the host's CLOCK_MONOTONIC) with a rig guest's kernel ring and
# user events (put on the host's clock with hvtraced's clock model).
#
# Causality, K rounds while the stream runs: the host writes "hvt-host N"
# to the stream's instance's trace_marker, then sends the round's letter
# on the guest's port "go"; the guest writes "hvt-guest N" to its own
# instance's trace_marker and says so on its console; once the host sees
# that line the next round begins; a last host marker closes.  Every
# marker must be in the stream exactly once, host ones with the "host: "
# prefix and guest ones without, in exactly the order they were written:
# host 0, guest 0, host 1, ..., host K.  Then the guest's user events
# (ue_writer's, enabled after the rounds) follow the last marker, every line is in
# time order, and the instance the stream made is gone once it ends.
#
# Environment: HVT_KHOST_ROUNDS (K, default 20, at most 26).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
TRACEFS=/sys/kernel/tracing
if [ "$(id -u)" -ne 0 ] || [ ! -w $TRACEFS/instances ]; then
	echo "SKIP: reading the host kernel needs root and a writable tracefs at $TRACEFS"
	exit 77
fi
K=${HVT_KHOST_ROUNDS:-20}
[ "$K" -le 26 ] || fail "HVT_KHOST_ROUNDS is at most 26"
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
GT=/sys/kernel/tracing/instances/hvt
t_own_daemon

t_name n khost
INST=hvt-khost-$$
HT=$TRACEFS/instances/$INST
# Round k's byte is letter k; copies of an earlier letter are passed over
# (see kernel-ring-clock.sh).
letters=$(echo {a..z} | cut -d' ' -f1-"$K")
"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events sched,ftrace:print --port go \
	--run "ue_writer --count 5 --wait-enable 600000 & u=\$!; k=0; for l in $letters; do until head -c 1 /dev/virtio-ports/go | grep -q \$l; do sleep 0.01; done; echo \"hvt-guest \$k\" >$GT/trace_marker; echo \"hvt-guest-done \$k\"; k=\$((k + 1)); done; wait \$u; echo hvt-ue-done; sleep 600" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
# The user event is registered now (the stream decodes it), written once
# enabled, after the rounds.
wait_line "$T_TMP/$n.log" '^registered id=' 60 || fail "ue_writer did not register its event"

# Lines across CPUs are in time order where a CPU's event reaches the
# reader within the reorder window of its stamp (docs/reading.md,
# section 3); a TCG vCPU thread on a loaded host stalls for far longer
# than the default 10 ms (one run printed a guest CPU 1 event 177 ms
# behind CPU 0's), so this check takes a window of 5 s.
"$HVTRACE" stream "$n" --kernel --instance "$INST" -e ftrace:print --summary \
	--window 5000 >"$T_TMP/out.txt" 2>"$T_TMP/err.txt" &
s_pid=$!
T_PIDS+=("$s_pid")
wait_line "$T_TMP/err.txt" "the host kernel's events \\(instance $INST" 60 ||
	fail "the stream did not start the host kernel: $(cat "$T_TMP/err.txt")"
grep -q "the guest kernel's ring (2 CPUs) beside its user events" "$T_TMP/err.txt" ||
	fail "the stream did not merge the guest kernel's ring: $(cat "$T_TMP/err.txt")"

k=0
for l in $letters; do
	echo "hvt-host $k" >"$HT/trace_marker" || fail "round $k: cannot write the host marker"
	"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" "$l" "$T_TMP/$n.log" \
		"hvt-guest-done $k" 60 || fail "round $k: the guest did not answer"
	k=$((k + 1))
done
echo "hvt-host $K" >"$HT/trace_marker" || fail "cannot write the last host marker"
"$HVTRACE" events enable --remote "$n" hvt_e2e >/dev/null || fail "cannot enable hvt_e2e"
wait_line "$T_TMP/$n.log" '^hvt-ue-done' 120 || fail "ue_writer did not finish"

# Everything is printed once the stream has read it: wait for it, then
# stop the stream as a user does.
want=$((2 * K + 1))
for _ in $(seq 600); do
	[ "$(grep -cE 'hvt-(host|guest) [0-9]+$' "$T_TMP/out.txt")" -ge "$want" ] &&
		[ "$(grep -c ' hvt_e2e: ' "$T_TMP/out.txt")" -ge 5 ] && break
	sleep 0.1
done
kill -INT "$s_pid"
wait "$s_pid" || { cat "$T_TMP/err.txt"; fail "stream NAME --kernel failed"; }
cat "$T_TMP/err.txt"
[ -d "$HT" ] && fail "the stream left its instance $INST behind"

verdict=$(awk -v k="$K" '
	function t(line,   i, n, a) { n = split(line, a, " ")
		for (i = 1; i <= n; i++) if (a[i] ~ /^[0-9]+\.[0-9]+:$/) return a[i] + 0
		return -1 }
	/LOST/ { print "lost events: " $0; bad = 1; exit }
	{ ts = t($0); if (ts < 0) { print "no time in line " NR; bad = 1; exit }
	  if (ts < last) { print "line " NR " goes back in time: \"" prev "\" then \"" $0 "\""; bad = 1; exit }
	  last = ts; prev = $0 }
	/hvt-(host|guest) [0-9]+$/ {
		who = $(NF - 1); host = $1 == "host:"
		if ((who == "hvt-host") != host) { print "prefix wrong: " $0; bad = 1; exit }
		want = (i % 2 == 0 ? "hvt-host " : "hvt-guest ") int(i / 2)
		if (who " " $NF != want) { printf "marker %d is \"%s %s\", expected \"%s\"\n", i, who, $NF, want; bad = 1; exit }
		i++; lastm = ts
	}
	/ hvt_e2e: / { nu++; if ($1 == "host:") { print "a user event with the host prefix"; bad = 1; exit }
		if (ts < lastm) { print "a user event before the last marker"; bad = 1; exit } }
	END { if (!bad) print "ok " i " " nu }' "$T_TMP/out.txt")
[ "$verdict" = "ok $want 5" ] || fail "stream NAME --kernel: $verdict"
grep -q "^  host kernel cpu 0: " "$T_TMP/err.txt" || fail "the summary has no host kernel CPUs"
grep -E -m 3 'hvt-(host|guest) 1$|hvt-host 2$' "$T_TMP/out.txt"
info "one timeline: $((K + 1)) host markers and $K guest kernel markers in the order written, 5 user events after, instance removed"
echo "PASS"
