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
# A recording of the default 6,000,000 events (about 120 MB) takes a few
# tenths of a second, so one run says little: each stream and each record
# is run three times, AREA and NAME taking turns, and the median of each
# is printed with all three.  The trace.dat goes to /dev/shm, so that
# the figure is the reader's and the packer's, not a disk's.  What still
# makes one run differ from the next is memory: each recording writes 120
# MB of new tmpfs pages, and on a virtual machine whose balloon hands
# memory that was free for a few seconds back to its host, the first
# touch of such memory costs a fault in the host too (512 MiB touched by
# a test program here: 2.2 GB/s right after a free, 0.6-0.8 GB/s when it
# had been free for 4 s).  hvtraced keeps its sent page buffers for reuse
# for the same reason (host/hvtraced/conn.c).
#
#   BENCH remote_stream_area_cpu_per_mev  S s      (median of 3)
#   BENCH remote_stream_name_cpu_per_mev  S s      (stream + hvtraced, median)
#   BENCH remote_stream_name_vs_area      X x
#   BENCH remote_stream_name_lost         N events (the most of the 3 runs)
#   BENCH remote_record_area_mbps         M MB/s   (median of 3)
#   BENCH remote_record_name_mbps         M MB/s   (median of 3)
#   BENCH remote_record_name_vs_area      X x
#
# Environment: HVT_BENCH_REMOTE_EVENTS (N per CPU, default 3000000, at
# most 6000000: the area holds 32768 sub-buffers of 4 KiB per CPU).
set -u
OBJ=${HVT_OBJTREE:-build}
H=$OBJ/bin/hvtrace
D=$OBJ/bin/hvtraced
N=${HVT_BENCH_REMOTE_EVENTS:-3000000}
[ -x "$H" ] && [ -x "$D" ] || { echo "FAIL: build hvtrace and hvtraced first"; exit 1; }
T=$(mktemp -d /tmp/hvt-bench-remote.XXXXXX)
SRC_AREA=/dev/shm/hvt-bench-remote-$$
AREA=/dev/shm/hvt-bench-remote-$$-run
DAT=/dev/shm/hvt-bench-remote-$$-dat
DPID=''
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$T" "$SRC_AREA" "$AREA" "$DAT"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
case $N in ""|*[!0-9]*) N=0 ;; esac
[ "$N" -ge 1 ] && [ "$N" -le 6000000 ] ||
	fail "HVT_BENCH_REMOTE_EVENTS must be 1..6000000 (events per CPU)"
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
"$H" loopback --area "$SRC_AREA" --cpus 2 --events "$N" --pages 32768 \
	--mode consume --quiet || fail "loopback writer failed"
fresh() { rm -f "$AREA"; cp "$SRC_AREA" "$AREA"; }

"$D" --foreground --socket "$T/d.sock" --run-dir "$T/run" \
	--shm-dir /dev/shm >"$T/hvtraced.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do [ -S "$T/d.sock" ] && break; sleep 0.05; done
[ -S "$T/d.sock" ] || fail "hvtraced did not listen"

# --- stream ------------------------------------------------------------------
# stream_once area|name: one stream of a fresh copy of the area; prints
# "CPU_PER_MEV READ LOST CPU HVTRACED_CPU WALL" (hvtraced's CPU added in
# for NAME).
stream_once() {
	local what=$1 d0=0 d1=0 cpu wall read lost
	fresh
	if [ "$what" = name ]; then
		"$H" daemon attach --area "$AREA" --name benchr \
			--socket "$T/d.sock" >/dev/null || fail "attach failed"
		d0=$(cpu_of "$DPID")
		timed "$H" stream benchr --socket "$T/d.sock" --drain --summary
		d1=$(cpu_of "$DPID")
		"$H" daemon detach benchr --socket "$T/d.sock" >/dev/null 2>&1
	else
		timed "$H" stream "$AREA" --drain --summary
	fi
	read -r cpu wall <"$T/time"
	read -r read lost < <(summary_events "$T/cmd.err")
	awk -v c="$cpu" -v d0="$d0" -v d1="$d1" -v w="$wall" -v r="$read" \
		-v l="$lost" 'BEGIN {
		printf "%.3f %d %d %.3f %.3f %.3f\n",
			(r ? (c + d1 - d0) / (r / 1e6) : 0), r, l, c, d1 - d0, w
	}'
}

: >"$T/st-area"
: >"$T/st-name"
for i in 1 2 3; do
	stream_once area >>"$T/st-area"
	stream_once name >>"$T/st-name"
done
read -r sa_mev sa_read sa_lost sa_cpu _ sa_wall < <(sort -n "$T/st-area" | sed -n 2p)
read -r sn_mev sn_read sn_lost sn_cpu sn_dcpu sn_wall < <(sort -n "$T/st-name" | sed -n 2p)
echo "stream AREA: $sa_read read, $sa_lost lost, cpu $sa_cpu s, wall $sa_wall s;" \
	"s per million events of three runs: $(awk '{ printf "%s ", $1 }' "$T/st-area")"
echo "stream NAME: $sn_read read, $sn_lost lost, cpu $sn_cpu s + hvtraced" \
	"$sn_dcpu s, wall $sn_wall s; s per million events of three runs:" \
	"$(awk '{ printf "%s ", $1 }' "$T/st-name")"
# Every run reads every event: the most any run lost is printed.
lost_max=$(awk '$3 > m { m = $3 } END { print m + 0 }' "$T/st-name")
awk -v a="$sa_mev" -v n="$sn_mev" -v nl="$lost_max" 'BEGIN {
	printf "BENCH remote_stream_area_cpu_per_mev %.3f s\n", a
	printf "BENCH remote_stream_name_cpu_per_mev %.3f s\n", n
	printf "BENCH remote_stream_name_vs_area %.2f x\n", a ? n / a : 0
	printf "BENCH remote_stream_name_lost %d events\n", nl
}'

# --- record ------------------------------------------------------------------
# record_once area|name: one recording of a fresh copy of the area,
# directly or attached to hvtraced; prints "MB/s BYTES WALL CPU".
record_once() {
	local what=$1 src=$AREA
	fresh
	if [ "$what" = name ]; then
		src=benchr-rec
		"$H" daemon attach --area "$AREA" --name "$src" \
			--socket "$T/d.sock" >/dev/null || fail "attach failed"
		timed "$H" record -o "$DAT" --socket "$T/d.sock" "$src" -q
		"$H" daemon detach "$src" --socket "$T/d.sock" >/dev/null 2>&1
	else
		timed "$H" record -o "$DAT" "$src" --reader-threads 1 -q
	fi
	local bytes cpu wall
	bytes=$(stat -c %s "$DAT")
	read -r cpu wall <"$T/time"
	rm -f "$DAT"
	awk -v b="$bytes" -v w="$wall" -v c="$cpu" \
		'BEGIN { printf "%.1f %d %.3f %.3f\n", (w > 0 ? b / w / 1e6 : 0), b, w, c }'
}

: >"$T/rec-area"
: >"$T/rec-name"
for i in 1 2 3; do
	record_once area >>"$T/rec-area"
	record_once name >>"$T/rec-name"
done
# median3 FILE: the median MB/s line of three; "all" lists the MB/s.
median3() { sort -n "$1" | sed -n 2p; }
all3() { awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 }' "$1"; }
read -r ra_mbps ra_bytes ra_wall ra_cpu < <(median3 "$T/rec-area")
read -r rn_mbps rn_bytes rn_wall rn_cpu < <(median3 "$T/rec-name")
echo "record AREA: $ra_bytes bytes in $ra_wall s (cpu $ra_cpu s), MB/s of" \
	"three runs: $(all3 "$T/rec-area")"
echo "record NAME: $rn_bytes bytes in $rn_wall s (cpu $rn_cpu s), MB/s of" \
	"three runs: $(all3 "$T/rec-name")"
awk -v a="$ra_mbps" -v n="$rn_mbps" 'BEGIN {
	printf "BENCH remote_record_area_mbps %.1f MB/s\n", a
	printf "BENCH remote_record_name_mbps %.1f MB/s\n", n
	printf "BENCH remote_record_name_vs_area %.2f x\n", a ? n / a : 0
}'
