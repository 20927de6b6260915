#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A remote's backlog larger than the view's page feed can hold is read
# whole.  The view reads each CPU of a remote of hvtraced as a ring on
# its feed, and a drain (DRAIN) has hvtraced read the remote's rings at
# the pace those rings take the pages: the feed receives only while its
# queue has room, so nothing is dropped there, however small the queue.
# With hvtraced's queue per tool at its least (--client-queue 64K: what
# it has in flight is that and the socket's buffer) and the mount's feed
# cut to 256 pages (HVTRACE_DAEMON_FEED_PAGES), more than that but far
# less than the backlog:
#   1. a 2-CPU writer that wrote N events per CPU (about 350 pages each)
#      and stopped before it was attached: `trace` shows every id of
#      every CPU once, in order, and no LOST line; per_cpu/cpuN/stats
#      say entries N, overrun 0 and dropped events 0;
#   2. trace_pipe then consumes the same, every id once, and stats say
#      read events N on each CPU.
. "$(dirname "$0")/lib.sh"
fz_need_fuse

N=60000
fz_daemon --client-queue 64K
fz_loopback pm --cpus 2 --events $N --pages 512 --mode consume
wait_for 60 bash -c "! kill -0 $LB_PID 2>/dev/null" ||
	fail "the writer did not finish"
for cpu in 0 1; do
	expect_eq "writer's drops on cpu $cpu" \
		"$(writer_field "$TMP/lb-pm.log" $cpu dropped)" 0
done
fz_attach pm "$LB_AREA"
export HVTRACE_DAEMON_FEED_PAGES=256
fz_mount
unset HVTRACE_DAEMON_FEED_PAGES
R=$MNT/remotes/pm
wait_for 10 test -e "$R/trace" || fail "pm is not in the view"

# 1. The snapshot after a drain.
cat "$R/trace" >"$TMP/trace.txt" || fail "cat trace"
grep -m3 "LOST" "$TMP/trace.txt" && fail "trace reports losses"
for cpu in 0 1; do
	ids_exact "$TMP/trace.txt" $cpu $N || fail "trace: ids of cpu $cpu"
	st=$(cat "$R/per_cpu/cpu$cpu/stats")
	expect_eq "cpu$cpu entries" "$(grep '^entries:' <<<"$st")" "entries: $N"
	expect_eq "cpu$cpu overrun" "$(grep '^overrun:' <<<"$st")" "overrun: 0"
	expect_eq "cpu$cpu dropped" "$(grep '^dropped events:' <<<"$st")" \
		"dropped events: 0"
done
echo "1: trace has 2 x $N events, none lost at a feed of 256 pages"

# 2. Consumed.
timeout 60 cat "$R/trace_pipe" >"$TMP/pipe.txt" || fail "cat trace_pipe"
for cpu in 0 1; do
	ids_exact "$TMP/pipe.txt" $cpu $N || fail "trace_pipe: ids of cpu $cpu"
	expect_eq "cpu$cpu read events" \
		"$(grep '^read events:' "$R/per_cpu/cpu$cpu/stats")" \
		"read events: $N"
done
echo "2: trace_pipe consumed 2 x $N events"
echo PASS
