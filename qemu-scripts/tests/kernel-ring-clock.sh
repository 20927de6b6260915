#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest kernel's ring on the host's clock: "hvtrace stream NAME
# --guest-kernel" reads the ring hvtraced serves and maps its timestamps
# (the guest's CLOCK_MONOTONIC: the rig sets the instance's trace clock to
# mono) to the host's CLOCK_MONOTONIC with hvtraced's clock model of guest
# NAME, which "hvtrace guest start" attached (docs/guest-kernel.md).
#
# Causality, K rounds: the host stamps its CLOCK_MONOTONIC (t0), sends
# the round's byte on the guest's port "go"; the guest writes "hvt-clock N" to its
# instance's trace_marker and then prints a console line; the host stamps
# again (t1) once it sees that line.  Each mapped marker time must lie in
# [t0 - E, t1 + E], E being the error bound the stream states.  The
# guest's RAM file read by its path, without hvtraced, says the times are
# the guest's own.
#
# Then one timeline: the guest writes 5 user events, then one more marker;
# "hvtrace stream NAME" (hvtraced hands on what came after the first
# stream took its pages) shows the guest kernel's ring and the user events
# merged on the host's clock, in time order, the marker after the last
# user event.
#
# Environment: HVT_KCLOCK_ROUNDS (K, default 20).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
K=${HVT_KCLOCK_ROUNDS:-20}
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
T=/sys/kernel/tracing/instances/hvt
t_own_daemon

t_name n kclock
# Round k's byte is letter k (a, b, ...): the copies of the previous
# round's letter that the host sent before it saw the answer are read
# and passed over, so a marker is never written before its round began.
# Each round: wait for its letter (a read before the host connects sees
# end of file), write the marker, say so.
[ "$K" -le 26 ] || fail "HVT_KCLOCK_ROUNDS is at most 26"
letters=$(echo {a..z} | cut -d' ' -f1-"$K")
"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print --port go \
	--run "k=0; for l in $letters; do until head -c 1 /dev/virtio-ports/go | grep -q \$l; do sleep 0.01; done; echo \"hvt-clock \$k\" >$T/trace_marker; echo \"hvt-clock-done \$k\"; k=\$((k + 1)); done; ue_writer --count 5 --wait-enable 60000; echo hvt-clock-after >$T/trace_marker; echo hvt-ue-done; sleep 600" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }

now() { python3 -c 'import time; print(time.monotonic_ns())'; }
: >"$T_TMP/brackets"
k=0
for l in $letters; do
	t0=$(now)
	"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" "$l" "$T_TMP/$n.log" \
		"hvt-clock-done $k" 60 || fail "round $k: the guest did not answer"
	t1=$(now)
	echo "$k $t0 $t1" >>"$T_TMP/brackets"
	k=$((k + 1))
done

"$HVTRACE" stream "$n" --guest-kernel --drain >"$T_TMP/out.txt" 2>"$T_TMP/err.txt" ||
	{ cat "$T_TMP/err.txt"; fail "stream --guest-kernel failed"; }
cat "$T_TMP/err.txt"
err_us=$(sed -n "s/.*'$n': times on the host's CLOCK_MONOTONIC through hvtraced's clock model (error bound +-\([0-9.]*\) us).*/\1/p" "$T_TMP/err.txt")
[ -n "$err_us" ] || fail "the stream did not map the guest kernel's times: $(cat "$T_TMP/err.txt")"
verdict=$(awk -v e="$err_us" '
	NR == FNR { t0[$1] = $2; t1[$1] = $3; next }
	/hvt-clock [0-9]+$/ {
		k = $NF; ts = $0; sub(/:.*/, "", ts); n = split(ts, f, " "); ts = f[n] * 1e9
		lo = t0[k] - e * 1000; hi = t1[k] + e * 1000
		if (ts < lo || ts > hi) { printf "round %d: mapped %.0f ns, host bracket %.0f..%.0f (+-%s us)\n", k, ts, t0[k], t1[k], e; bad = 1; exit }
		seen++
	}
	END { if (!bad) print "ok " seen }' "$T_TMP/brackets" "$T_TMP/out.txt")
case $verdict in
"ok $K") info "$K markers, each inside its host bracket (+-$err_us us)" ;;
ok*) fail "only ${verdict#ok } of $K markers in the stream" ;;
*) fail "$verdict" ;;
esac

# One timeline: "hvtrace stream NAME" merges the guest kernel's ring with
# the guest's user events (5 written by ue_writer after the rounds, then
# the marker hvt-clock-after), all on the host's clock: every line in time
# order, the user events, the marker after the last of them (the guest
# wrote it after ue_writer ended; both clocks are the guest's mono, so
# their order is exact).
for _ in $(seq 600); do grep -qa '^registered id=' "$T_TMP/$n.log" && break; sleep 0.1; done
"$HVTRACE" events enable --remote "$n" hvt_e2e >/dev/null || fail "cannot enable hvt_e2e"
wait_line "$T_TMP/$n.log" '^hvt-ue-done' 120 || fail "ue_writer did not finish"
"$HVTRACE" stream "$n" --drain --summary >"$T_TMP/one.txt" 2>"$T_TMP/one.err" ||
	{ cat "$T_TMP/one.err"; fail "stream NAME failed"; }
cat "$T_TMP/one.err"
grep -q "the guest kernel's ring (2 CPUs) beside its user events" "$T_TMP/one.err" ||
	fail "stream NAME did not merge the guest kernel's ring"
verdict=$(awk '
	function t(line,   a, n) { sub(/: .*/, "", line); n = split(line, a, " "); return a[n] + 0 }
	{ ts = t($0); if (ts < last) { printf "line %d out of time order\n", FNR; bad = 1; exit } last = ts }
	/ hvt_e2e: / { nu++; lastu = ts }
	/hvt-clock-after$/ { nk++; if (!nu || ts < lastu) { print "the marker before the last user event"; bad = 1; exit } }
	/hvt-clock [0-9]+$/ { nold++ }
	END { if (!bad) print "ok " nk + 0 " " nu + 0 " " nold + 0 }' "$T_TMP/one.txt")
[ "$verdict" = "ok 1 5 0" ] || fail "stream NAME: $verdict (want: the marker, 5 user events, no marker the first stream took)"
info "one timeline: the kernel marker after the 5 user events, in time order"

# Without hvtraced, the RAM file by its path: the guest's own times,
# said so.
ram=$(status_get "$n" ram)
[ -n "$ram" ] || fail "status names no RAM file of $n"
"$G" kformats "$n" "$T_TMP/fmt" >/dev/null || fail "kformats of $n failed"
"$HVTRACE" daemon stop >/dev/null 2>&1
HVTRACED_SOCKET=$T_TMP/none.sock "$HVTRACE" stream "$ram" --formats "$T_TMP/fmt" --drain \
	>"$T_TMP/own.txt" 2>"$T_TMP/own.err" || { cat "$T_TMP/own.err"; fail "stream without hvtraced failed"; }
grep -q "guest kernel times are the guest's own" "$T_TMP/own.err" ||
	fail "without hvtraced the stream does not say its times are the guest's: $(cat "$T_TMP/own.err")"
[ "$(grep -c 'hvt-clock [0-9]*$' "$T_TMP/own.txt")" -eq "$K" ] || fail "the guest-time stream lost markers"
echo "PASS"
