#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest kernel's own ftrace ring, read live from guest RAM with no agent
# involved (--kernel-events; docs/guest-kernel.md), in one run:
#
#   - the guest writes N numbered trace_marker lines (a busybox loop on
#     guest CPU 0) while the host's "hvtrace stream RAMFILE" reads them
#     from the guest's RAM file (by its path, no hvtraced between; the
#     stream ends when the launcher removes the file): events delivered
#     per second, events lost (the loop is
#     slow enough that the ring never fills: a paced run), and the
#     stream's CPU time (user + system) per million events;
#   - the guest's cost: the same loop with the instance's tracing_on at 0
#     (each write refused at once), against the loop with tracing on, in
#     guest time per line; the difference is what recording costs the
#     writer.  The transport costs the guest nothing beyond that: no
#     agent reads the ring, and the agent's CPU time over the run is
#     printed to show it.
#
# Then the same two loops with agent copy mode forced (--kernel-mode
# copy: hvtrace-agent copies the instance's pages into the trace area's
# kernel section, and "hvtrace stream NAME" reads them through the area
# beside the user events), as kcopy_* lines: the rate, the events lost,
# the stream's CPU, the guest's cost traced against tracing off, and the
# agent's CPU time over the run, which is what copy mode costs the guest
# on top of the ring writes.
#
# Environment: HVT_BENCH_KRING_LINES (N, default 20000).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
N=${HVT_BENCH_KRING_LINES:-20000}
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
T=/sys/kernel/tracing/instances/hvt

# up: the guest's uptime in seconds; loop: N writes to the marker.
up='cut -d" " -f1 /proc/uptime'
loop="i=0; while [ \$i -lt $N ]; do echo \"hvt-mark \$i\" >$T/trace_marker; i=\$((i + 1)); done"
agent='a=$(pidof hvtrace-agent); [ -n "$a" ] && cut -d" " -f14,15 /proc/$a/stat || echo "0 0"'
run="sleep 3; g0=\$($agent); t0=\$($up); taskset 1 sh -c '$loop'; t1=\$($up);
echo 0 >$T/tracing_on; t2=\$($up); taskset 1 sh -c '$loop' 2>/dev/null; t3=\$($up);
echo 1 >$T/tracing_on; g1=\$($agent); echo hvt-bench \$t0 \$t1 \$t2 \$t3 \$g0 \$g1"
run=${run//$'\n'/ }

# bench PREFIX NAME OUT ERR TIME: the BENCH lines of a run whose stream
# wrote OUT and ERR, its CPU time in TIME, the guest's timings on the
# console of guest NAME.
bench() {
	local p=$1 name=$2 out=$3 err=$4 cpu_user cpu_sys line got lost
	local t0 t1 t2 t3 gu0 gs0 gu1 gs1
	read -r cpu_user cpu_sys <"$5"
	line=$(grep -a '^hvt-bench ' "$T_TMP/$name.log" | tr -d '\r')
	[ -n "$line" ] || fail "the guest printed no timings ($p)"
	read -r _ t0 t1 t2 t3 gu0 gs0 gu1 gs1 <<<"$line"
	got=$(grep -ac 'hvt-mark' "$out")
	lost=$(sed -n 's/^hvtrace stream: .* events, \([0-9]*\) lost, .*/\1/p' "$err")
	[ "$got" -eq "$N" ] || [ "${lost:-0}" -gt 0 ] ||
		fail "the stream printed $got of $N lines and no loss ($p: $(tail -1 "$err"))"
	awk -v p="$p" -v n="$N" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" \
		-v u="$cpu_user" -v s="$cpu_sys" -v lost="${lost:-0}" \
		-v hz="$(getconf CLK_TCK)" -v ga="$((gu1 + gs1 - gu0 - gs0))" 'BEGIN {
		on = (t1 - t0) * 1e9 / n; off = (t3 - t2) * 1e9 / n
		printf "BENCH %s_events_per_s %.0f events/s\n", p, n / (t1 - t0)
		printf "BENCH %s_events_lost %d events\n", p, lost
		printf "BENCH %s_host_cpu_per_1M_events %.2f s\n", p, (u + s) * 1e6 / n
		printf "BENCH %s_guest_write_traced %.0f ns/event\n", p, on
		printf "BENCH %s_guest_write_tracing_off %.0f ns/event\n", p, off
		printf "BENCH %s_guest_cost_traced_vs_off %.2f x\n", p, on / off
		printf "BENCH %s_guest_agent_cpu %.0f ms\n", p, ga * 1000 / hz
		printf "BENCH %s_guest_agent_cpu_per_event %.0f ns/event\n", p, ga * 1e9 / hz / n
	}'
}

# --- the persistent ring, read from guest RAM, no agent involved ----------
t_name n kbench
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print --run "$run" \
	--wait-ready --timeout 180 >/dev/null || fail "start failed"
TIMEFORMAT='%U %S'
ram=$(status_get "$n" ram)
[ -n "$ram" ] || fail "status names no RAM file of $n"
"$G" kformats "$n" "$T_TMP/fmt" >/dev/null || fail "kformats of $n failed"
{ time timeout 900 "$HVTRACE" stream "$ram" --formats "$T_TMP/fmt" --summary \
	>"$T_TMP/out.txt" 2>"$T_TMP/err.txt"; } \
	2>"$T_TMP/time.txt" || { cat "$T_TMP/err.txt"; fail "stream failed"; }
bench kring "$n" "$T_TMP/out.txt" "$T_TMP/err.txt" "$T_TMP/time.txt"

# --- agent copy mode: the same loops, the pages through the agent ---------
t_own_daemon
t_name c kbcopy
"$HVTRACE" guest start "$c" --initrd "$initrd" --log "$T_TMP/$c.log" \
	--kernel-events ftrace:print --kernel-mode copy --run "$run" \
	--timeout 180 >"$T_TMP/start-copy.out" 2>&1 ||
	{ cat "$T_TMP/start-copy.out"; fail "start (copy mode) failed"; }
{ time timeout 900 "$HVTRACE" stream "$c" --summary >"$T_TMP/out-copy.txt" \
	2>"$T_TMP/err-copy.txt"; } 2>"$T_TMP/time-copy.txt" ||
	{ cat "$T_TMP/err-copy.txt"; fail "stream (copy mode) failed"; }
grep -q 'kernel copy mode' "$T_TMP/err-copy.txt" ||
	fail "the stream did not read the kernel section: $(cat "$T_TMP/err-copy.txt")"
bench kcopy "$c" "$T_TMP/out-copy.txt" "$T_TMP/err-copy.txt" "$T_TMP/time-copy.txt"
