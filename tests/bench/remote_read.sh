#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Reading a remote through hvtraced against reading its area directly, on
# the same pre-filled area: a loopback writer fills a 2-CPU consume-mode
# area with N events per CPU (default 1,000,000: 2,000,000 in all) and
# stops; the area is then read
#
#   - directly: 'hvtrace stream AREA --drain --summary' (text to
#     /dev/null) and 'hvtrace record -o F AREA --reader-threads 1';
#   - through a private hvtraced it is attached to: 'hvtrace stream NAME
#     --drain --summary' and 'hvtrace record -o F NAME'.
#
# Each area read consumes what it reads (consume mode), so each run gets a
# fresh copy of the filled area (cp of the file: the writer has stopped).
# Printed, per path: events read and lost, the reading command's CPU
# (user + system, bash's 'time') per million events -- for NAME with
# hvtraced's CPU over the same run added in (/proc/PID/stat) -- and for
# record the throughput (the trace.dat's bytes over the wall time).
#
#   BENCH remote_stream_area_cpu_per_mev  S s
#   BENCH remote_stream_name_cpu_per_mev  S s   (stream + hvtraced)
#   BENCH remote_stream_name_vs_area      X x
#   BENCH remote_stream_name_lost         N events
#   BENCH remote_record_area_mbps         M MB/s
#   BENCH remote_record_name_mbps         M MB/s
#   BENCH remote_record_name_vs_area      X x
#
# Environment: HVT_BENCH_REMOTE_EVENTS (N per CPU).
set -u
OBJ=${HVT_OBJTREE:-build}
H=$OBJ/bin/hvtrace
D=$OBJ/bin/hvtraced
N=${HVT_BENCH_REMOTE_EVENTS:-1000000}
[ -x "$H" ] && [ -x "$D" ] || { echo "FAIL: build hvtrace and hvtraced first"; exit 1; }
T=$(mktemp -d /tmp/hvt-bench-remote.XXXXXX)
SRC_AREA=/dev/shm/hvt-bench-remote-$$
AREA=/dev/shm/hvt-bench-remote-$$-run
DPID=''
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$T" "$SRC_AREA" "$AREA"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
TICK=$(getconf CLK_TCK)

# cpu_of PID: its user + system time in seconds.
cpu_of() {
	awk -v t="$TICK" '{ sub(/.*\) /, ""); print ($12 + $13) / t }' \
		"/proc/$1/stat"
}

# timed CMD...: run it; "USER+SYS WALL" in $T/time.
timed() {
	local TIMEFORMAT='%U %S %R'
	{ time "$@" >/dev/null 2>"$T/cmd.err"; } 2>"$T/time.raw" ||
		fail "$* failed: $(tail -n 3 "$T/cmd.err")"
	awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }' "$T/time.raw" >"$T/time"
}

# summary_events FILE: "READ LOST", summed over a stream's --summary
# lines of CPUs.
summary_events() {
	awk '/^  cpu [0-9]+: [0-9]+ events, [0-9]+ lost/ {
		r += $3; sub(/,/, "", $5); l += $5
	} END { print r + 0, l + 0 }' "$1"
}

echo "filling a 2-CPU consume-mode area with $N events per CPU"
"$H" loopback --area "$SRC_AREA" --cpus 2 --events "$N" --pages 16384 \
	--mode consume --quiet || fail "loopback writer failed"
fresh() { rm -f "$AREA"; cp "$SRC_AREA" "$AREA"; }

"$D" --foreground --socket "$T/d.sock" --run-dir "$T/run" \
	--shm-dir /dev/shm >"$T/hvtraced.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do [ -S "$T/d.sock" ] && break; sleep 0.05; done
[ -S "$T/d.sock" ] || fail "hvtraced did not listen"

# --- stream ------------------------------------------------------------------
fresh
timed "$H" stream "$AREA" --drain --summary
read -r area_cpu area_wall <"$T/time"
read -r area_read area_lost < <(summary_events "$T/cmd.err")
echo "stream AREA: $area_read read, $area_lost lost, cpu $area_cpu s, wall $area_wall s"

fresh
"$H" daemon attach --area "$AREA" --name benchr --socket "$T/d.sock" \
	>/dev/null || fail "attach failed"
d0=$(cpu_of "$DPID")
timed "$H" stream benchr --socket "$T/d.sock" --drain --summary
d1=$(cpu_of "$DPID")
read -r name_cpu name_wall <"$T/time"
read -r name_read name_lost < <(summary_events "$T/cmd.err")
dcpu=$(awk -v a="$d0" -v b="$d1" 'BEGIN { printf "%.3f", b - a }')
echo "stream NAME: $name_read read, $name_lost lost, cpu $name_cpu s +" \
	"hvtraced $dcpu s, wall $name_wall s"
"$H" daemon detach benchr --socket "$T/d.sock" >/dev/null 2>&1

awk -v ac="$area_cpu" -v ar="$area_read" -v nc="$name_cpu" -v dc="$dcpu" \
	-v nr="$name_read" -v nl="$name_lost" 'BEGIN {
	a = ar ? ac / (ar / 1e6) : 0
	n = nr ? (nc + dc) / (nr / 1e6) : 0
	printf "BENCH remote_stream_area_cpu_per_mev %.3f s\n", a
	printf "BENCH remote_stream_name_cpu_per_mev %.3f s\n", n
	printf "BENCH remote_stream_name_vs_area %.2f x\n", a ? n / a : 0
	printf "BENCH remote_stream_name_lost %d events\n", nl
}'

# --- record ------------------------------------------------------------------
fresh
timed "$H" record -o "$T/area.dat" "$AREA" --reader-threads 1 -q
read -r rarea_cpu rarea_wall <"$T/time"
rarea_bytes=$(stat -c %s "$T/area.dat")

fresh
"$H" daemon attach --area "$AREA" --name benchr2 --socket "$T/d.sock" \
	>/dev/null || fail "attach failed"
timed "$H" record -o "$T/name.dat" --socket "$T/d.sock" benchr2 -q
read -r rname_cpu rname_wall <"$T/time"
rname_bytes=$(stat -c %s "$T/name.dat")
echo "record AREA: $rarea_bytes bytes in $rarea_wall s (cpu $rarea_cpu s);" \
	"record NAME: $rname_bytes bytes in $rname_wall s (cpu $rname_cpu s)"
awk -v ab="$rarea_bytes" -v aw="$rarea_wall" -v nb="$rname_bytes" \
	-v nw="$rname_wall" 'BEGIN {
	a = aw > 0 ? ab / aw / 1e6 : 0
	n = nw > 0 ? nb / nw / 1e6 : 0
	printf "BENCH remote_record_area_mbps %.1f MB/s\n", a
	printf "BENCH remote_record_name_mbps %.1f MB/s\n", n
	printf "BENCH remote_record_name_vs_area %.2f x\n", a ? n / a : 0
}'
