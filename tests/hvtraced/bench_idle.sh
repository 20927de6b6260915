#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What an idle remote costs hvtraced: a private daemon gets N (100) loopback
# areas attached, each of a live writer that writes nothing (--wait-enable,
# attached --disabled), and
#
#   BENCH hvtraced_idle_rss_per_remote  VmRSS after the attaches minus
#                                       before, divided by N (KiB)
#   BENCH hvtraced_idle_cpu             the daemon's CPU time (schedstat,
#                                       or utime + stime) over SECS (5)
#                                       seconds of idling, in % of one CPU
#
# are printed.  It measures; it fails only when the rig does not come up.
# HVT_BENCH_SMAPS=FILE keeps the daemon's /proc/PID/smaps after the
# attaches, to see where the memory went.
#   bench_idle.sh [N [SECS]]
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" bench-idle
N=${1:-100}
SECS=${2:-5}
SHM=/dev/shm/hvt-bench-idle-$$
RM_WITH_T=$SHM
hvt_need_bins
mkdir -p "$SHM" "$T/run"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# CPU time in ns: the scheduler's own count where the kernel keeps one
# (utime + stime come in ticks: 10 ms, 0.2 % of 5 s), else utime + stime
# (fields 14 and 15, after the "(comm)").
cpu_ns() {
	if [ -r "/proc/$1/schedstat" ]; then
		awk '{ print $1 }' "/proc/$1/schedstat"
	else
		sed 's/.*) //' "/proc/$1/stat" |
			awk -v hz="$(getconf CLK_TCK)" \
				'{ printf "%.0f\n", ($12 + $13) * 1e9 / hz }'
	fi
}

# The writers first: their start is not the daemon's cost.
for i in $(seq "$N"); do
	pid=$("$H" loopback --area "$SHM/a$i" --cpus 1 --pages 2 \
		--wait-enable --background --quiet) ||
		fail "loopback writer $i did not start"
	PIDS="$PIDS $pid"
done

"$OBJ/bin/hvtraced" --foreground --run-dir "$T/run" --shm-dir "$SHM" \
	--socket "$HVTRACED_SOCKET" >"$T/hvtraced.log" 2>&1 &
DPID=$!
hvt_listening
sleep 0.5
before=$(rss_kib "$DPID")
for i in $(seq "$N"); do
	"$H" daemon attach --area "$SHM/a$i" --name "idle$i" --disabled \
		>"$T/attach.out" 2>&1 ||
		fail "attach $i: $(cat "$T/attach.out")"
done
# Settled: the attach-time sync bursts are over.
sleep 2
after=$(rss_kib "$DPID")
[ -n "${HVT_BENCH_SMAPS:-}" ] && cp "/proc/$DPID/smaps" "$HVT_BENCH_SMAPS"
anon=$(awk '/^Anonymous:/ { print $2 }' "/proc/$DPID/smaps_rollup" 2>/dev/null)
attached=$("$H" daemon status 2>/dev/null | grep -c ' idle[0-9]')
[ "$attached" -eq "$N" ] ||
	fail "$attached of $N remotes attached: $("$H" daemon status 2>&1)"

t0=$(cpu_ns "$DPID")
s0=$(date +%s%N)
sleep "$SECS"
t1=$(cpu_ns "$DPID")
s1=$(date +%s%N)

echo "hvtraced VmRSS: $before KiB, with $N idle loopback remotes $after KiB (anonymous ${anon:-?} KiB)"
echo "hvtraced CPU: $(((t1 - t0) / 1000)) us over $(((s1 - s0) / 1000000)) ms"
awk -v b="$before" -v a="$after" -v n="$N" -v t="$((t1 - t0))" \
    -v ns="$((s1 - s0))" 'BEGIN {
	printf "BENCH hvtraced_idle_rss_per_remote %.1f KiB\n", (a - b) / n
	printf "BENCH hvtraced_idle_cpu %.2f %%\n", 100 * t / ns
}'
