#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtraced reads an area with many CPUs on its reader threads
# (--reader-threads, host/hvtraced/fanout.c), and what a tool gets is the
# same as with one thread:
#   1. --reader-threads 4, a 16-CPU area written before it was attached:
#      stream NAME --drain gets every id exactly once on every CPU;
#      daemon info shows 4 reader threads that each read pages, adding
#      up to pages_read;
#   2. the same daemon while a writer writes 16 CPUs at once: every id
#      exactly once on every CPU, the stream ending by itself;
#   3. --reader-threads 1: one thread reads the same area;
#   4. automatic (the default): an area with 16 CPUs is read by
#      min(online CPUs, 8) threads, one with 2 CPUs by the loop alone;
#   5. a bad --reader-threads is refused, naming the option.
. "$(dirname "$0")/lib.sh"

CPUS=16
N=4000

# thread_pages NAME: the reader_thread_pages numbers of daemon info
thread_pages() {
	"$HVTRACE" daemon info --remote "$1" |
		sed -n 's/^reader_thread_pages://p'
}

# check_threads NAME THREADS: THREADS numbers, none 0, adding up to
# pages_read
check_threads() {
	local info pages sum=0 n=0 p
	info=$("$HVTRACE" daemon info --remote "$1") || fail "daemon info $1"
	pages=$(sed -n 's/^pages_read: //p' <<<"$info")
	for p in $(sed -n 's/^reader_thread_pages://p' <<<"$info"); do
		[ "$p" -gt 0 ] || fail "$1: a reader thread read nothing: $(thread_pages "$1")"
		sum=$((sum + p))
		n=$((n + 1))
	done
	expect_eq "$1: reader threads" "$n" "$2"
	expect_eq "$1: pages of the threads" "$sum" "$pages"
	echo "$1: $n reader thread(s) read$(thread_pages "$1") pages ($pages in all)"
}

# stream_exact NAME: stream NAME --drain, every id 0..N-1 on every CPU
stream_exact() {
	local cpu
	"$HVTRACE" stream "$1" --drain >"$TMP/$1.txt" 2>"$TMP/$1.err" ||
		fail "stream $1: $(cat "$TMP/$1.err")"
	for cpu in $(seq 0 $((CPUS - 1))); do
		ids_exact "$TMP/$1.txt" $cpu $N || fail "$1: ids of cpu $cpu"
	done
	expect_eq "$1: lines" "$(wc -l <"$TMP/$1.txt")" $((CPUS * N))
}

# written NAME: a 16-CPU area written to the end (a daemon that reads it
# consumes it, so each part writes its own)
written() {
	fz_loopback "$1" --cpus $CPUS --events $N --pages 64
	wait_for 30 bash -c "! kill -0 $LB_PID 2>/dev/null" ||
		fail "the writer of $1 did not finish"
}

# 1. Written before the daemon reads it.
fz_daemon --reader-threads 4
written pm
fz_attach pm "$LB_AREA"
stream_exact pm
check_threads pm 4
grep -q "reading large areas with 4 threads" "$TMP/d.log" ||
	fail "the daemon did not log its reader threads: $(cat "$TMP/d.log")"

# 2. Read while 16 CPUs are being written.
fz_loopback live --cpus $CPUS --events $N --pages 64 --rate 20000 \
	--wait-enable
fz_attach live "$LB_AREA"
"$HVTRACE" stream live >"$TMP/live.txt" 2>"$TMP/live.err" &
S_PID=$!
PIDS="$PIDS $S_PID"
wait "$S_PID" || fail "stream live: $(cat "$TMP/live.err")"
for cpu in $(seq 0 $((CPUS - 1))); do
	ids_exact "$TMP/live.txt" $cpu $N || fail "live: ids of cpu $cpu"
done
expect_eq "live: lines" "$(wc -l <"$TMP/live.txt")" $((CPUS * N))
check_threads live 4
echo "1-2: $CPUS CPUs x $N events exactly once, post-mortem and live"

# 3. One thread.
kill "$D_PID"
wait_for 10 bash -c "! kill -0 $D_PID 2>/dev/null" || fail "hvtraced did not stop"
fz_daemon --reader-threads 1
written one
fz_attach one "$LB_AREA"
stream_exact one
check_threads one 1

# 4. Automatic.
kill "$D_PID"
wait_for 10 bash -c "! kill -0 $D_PID 2>/dev/null" || fail "hvtraced did not stop"
fz_daemon
written auto
fz_attach auto "$LB_AREA"
stream_exact auto
online=$(getconf _NPROCESSORS_ONLN)
auto=$((online < 8 ? online : 8))
check_threads auto $auto
fz_loopback small --cpus 2 --events 100 --pages 8
wait_for 30 bash -c "! kill -0 $LB_PID 2>/dev/null" ||
	fail "the small writer did not finish"
fz_attach small "$LB_AREA"
"$HVTRACE" stream small --drain >"$TMP/small.txt" || fail "stream small"
expect_eq "small: lines" "$(wc -l <"$TMP/small.txt")" 200
check_threads small 1
echo "3-4: --reader-threads 1 and automatic ($auto threads on $online CPUs) read the same"

# 5. Bad values.
for bad in 0 65 two; do
	out=$("$HVTRACED" -f --socket "$TMP/bad.sock" --reader-threads $bad 2>&1) &&
		fail "--reader-threads $bad was accepted"
	grep -q -- "--reader-threads takes 'auto' or a number from 1 to 64, not '$bad'" <<<"$out" ||
		fail "--reader-threads $bad said: $out"
done
echo "5: bad --reader-threads refused"
echo PASS
