#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The loopback demo: the whole read path without a VM.
#
#   1. a loopback writer process fills a trace area in /dev/shm with
#      selftest events on 2 CPUs (one pinned writer thread per CPU);
#   2. hvtrace stream reads it live, as ftrace text merged across CPUs
#      (a sample of the lines is shown);
#   3. the totals: events per CPU, lost, errors, wall time, and hvtrace
#      stat's view of the area;
#   4. an unthrottled writer on a small ring: losses happen and are
#      accounted exactly;
#   5. the host kernel through the same code (when tracefs is writable).
#
# Run by 'make demo' (HVT_OBJTREE points at the build); finishes in
# about ten seconds.
set -u
objtree=${HVT_OBJTREE:-build}
H=$objtree/bin/hvtrace
[ -x "$H" ] || { echo "demo: no $H; build first (make)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/hvt-demo.XXXXXX)
area=/dev/shm/hvtrace-demo-$$
inst=
cleanup() {
	[ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null
	[ -n "$inst" ] && rmdir "/sys/kernel/tracing/instances/$inst" 2>/dev/null
	rm -rf "$tmp" "$area"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "1. a loopback writer: 2 CPUs x 200000 selftest events at 100000 events/s per CPU"
echo "\$ hvtrace loopback --area $area --cpus 2 --events 200000 --rate 100000 --background"
wpid=$("$H" loopback --area "$area" --cpus 2 --events 200000 --rate 100000 \
	--pages 256 --background --log "$tmp/writer.log") || exit 1
echo "writer pid $wpid is writing into $area"

say "2. hvtrace stream: live, trace_pipe format, both CPUs merged by time"
echo "\$ hvtrace stream $area --summary      (first lines, every 50000th, last lines)"
t0=$EPOCHREALTIME
"$H" stream "$area" --summary 2>"$tmp/stream.err" | awk '
	# the first 8 lines, every 50000th (printed 4 lines late, so it is
	# never one of the last 4), and the last 4
	{ line[NR % 5] = $0 }
	NR <= 8 { print; next }
	(NR - 4) % 50000 == 0 && NR - 4 > 8 { print "   ..."; print line[(NR - 4) % 5] }
	END {
		print "   ..."
		for (i = NR - 3; i <= NR; i++)
			if (i > 8)
				print line[i % 5]
	}'
t1=$EPOCHREALTIME
while kill -0 "$wpid" 2>/dev/null; do sleep 0.05; done
wpid=

say "3. totals"
echo "reader:"
sed 's/^/  /' "$tmp/stream.err"
echo "writer:"
sed 's/^/  /' "$tmp/writer.log"
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "wall time of the live stream: %.2f s\n", b - a }'
echo
echo "\$ hvtrace stat $area --cpu 0"
echo "(read events count the sub-buffers the stream finished; entries, the"
echo " rest of the one it was reading when the writer stopped)"
"$H" stat "$area" --cpu 0

say "4. an unthrottled writer on a small ring: losses are counted exactly"
rm -f "$area"
echo "\$ hvtrace loopback --area $area --cpus 2 --events 1000000 --pages 16 --background"
wpid=$("$H" loopback --area "$area" --cpus 2 --events 1000000 --pages 16 \
	--background --log "$tmp/fast.log") || exit 1
"$H" stream "$area" --summary >"$tmp/fast.txt" 2>"$tmp/fast.err"
while kill -0 "$wpid" 2>/dev/null; do sleep 0.05; done
wpid=
echo "the first lost-events marks in the stream:"
grep -m 3 LOST "$tmp/fast.txt" | sed 's/^/  /'
echo "reader:"
sed 's/^/  /' "$tmp/fast.err"
echo "writer (dropped = what the reader reported lost):"
sed 's/^/  /' "$tmp/fast.log"

say "5. the host kernel's ring buffer, through the same mmap-view code"
if [ -w /sys/kernel/tracing/instances ] && inst=hvtrace-demo-$$ &&
	mkdir "/sys/kernel/tracing/instances/$inst" 2>/dev/null; then
	for i in 1 2 3; do
		echo "hello from the demo, marker $i" \
			>"/sys/kernel/tracing/instances/$inst/trace_marker"
	done
	echo "\$ hvtrace stream --kernel --instance $inst --count 3"
	"$H" stream --kernel --instance "$inst" --count 3 --timeout 10
else
	inst=
	echo "(skipped: needs root and a writable tracefs)"
fi
echo
echo "demo done."
