#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace mount, driven with plain shell tools: the file tree of a remote
# (a loopback writer attached to hvtraced), trace (non-consuming),
# trace_pipe (consuming, blocking, O_NONBLOCK, wakes on new data),
# trace_pipe_raw (whole pages, one per read), stats, enable files,
# tracing_on, trace_clock, buffer_size_kb, set_event, resets, and the
# errno and error_log entry of each refused write -- compared with the
# real tracefs of this host where it can be.
. "$(dirname "$0")/lib.sh"
fz_need_fuse
fz_daemon

N=2000
fz_loopback lb --cpus 2 --events $N --pages 64 --wait-enable
fz_attach lb "$LB_AREA"
wait_for 10 grep -q "remote 'lb': writer stopped" "$TMP/d.log" ||
	fail "the writer did not run to its end"
fz_mount
R=$MNT/remotes/lb

# --- the tree -------------------------------------------------------------
expect_eq "remotes" "$(ls "$MNT/remotes")" "lb"
expect_eq "remote files" "$(ls "$R" | tr '\n' ' ')" \
	"available_events buffer_size_kb error_log events per_cpu saved_cmdlines set_event state trace trace_clock trace_pipe tracing_on "
expect_eq "per_cpu" "$(ls "$R/per_cpu" | tr '\n' ' ')" "cpu0 cpu1 "
expect_eq "cpu files" "$(ls "$R/per_cpu/cpu1" | tr '\n' ' ')" \
	"buffer_size_kb stats trace trace_pipe trace_pipe_raw "
expect_eq "events" "$(ls "$R/events" | tr '\n' ' ')" \
	"enable header_event header_page hvtrace "
expect_eq "event files" "$(ls "$R/events/hvtrace/selftest" | tr '\n' ' ')" \
	"enable format id "
expect_eq "instances link" "$(readlink "$MNT/instances/lb")" "../remotes/lb"
[ -d "$MNT/instances/lb/per_cpu/cpu0" ] || fail "instances/lb does not lead to the remote"
expect_eq "id" "$(cat "$R/events/hvtrace/selftest/id")" 57344
grep -q '^print fmt: "id=%llu", REC->id$' "$R/events/hvtrace/selftest/format" ||
	fail "format: $(cat "$R/events/hvtrace/selftest/format")"
expect_eq "buffer_size_kb" "$(cat "$R/buffer_size_kb")" "256 (loaded)"
expect_eq "available_events" "$(cat "$R/available_events")" "hvtrace:selftest"
expect_eq "tracing_on" "$(cat "$R/tracing_on")" 1
expect_eq "trace_clock" "$(cat "$R/trace_clock")" "[mono] counter"
# Same writer geometry as the host's own tracefs: the same header_page.
if [ -r /sys/kernel/tracing/events/header_page ] &&
   [ "$(getconf PAGESIZE)" = 4096 ]; then
	cmp -s /sys/kernel/tracing/events/header_page "$R/events/header_page" ||
		fail "header_page differs from the kernel's"
	cmp -s /sys/kernel/tracing/events/header_event "$R/events/header_event" ||
		fail "header_event differs from the kernel's"
	echo "header_page and header_event: identical to the host kernel's"
fi

# --- trace: everything, twice the same, nothing consumed ------------------
cat "$R/trace" >"$TMP/t1"
cat "$R/trace" >"$TMP/t2"
cmp -s "$TMP/t1" "$TMP/t2" || fail "trace changed between two reads"
grep -q "^# entries-in-buffer/entries-written: $((2 * N))/$((2 * N))   #P:2$" "$TMP/t1" ||
	fail "trace header: $(grep entries "$TMP/t1")"
for cpu in 0 1; do
	ids_exact "$TMP/t1" $cpu $N || fail "trace ids, cpu $cpu"
done
expect_eq "per_cpu trace lines" "$(grep -c 'selftest:' "$R/per_cpu/cpu1/trace")" $N
grep -q "\[000\]" "$R/per_cpu/cpu1/trace" && fail "cpu1/trace shows CPU 0"
expect_eq "stats entries" "$(grep '^entries:' "$R/per_cpu/cpu0/stats")" "entries: $N"
echo "trace: $((2 * N)) records, non-consuming, per CPU"

# --- trace_pipe: consumes, then the end (the writer stopped) --------------
timeout 10 cat "$R/trace_pipe" >"$TMP/p1"
rc=$?
expect_eq "cat trace_pipe exit (writer stopped: end of file)" $rc 0
for cpu in 0 1; do
	ids_exact "$TMP/p1" $cpu $N || fail "trace_pipe ids, cpu $cpu"
done
cmp -s <(grep selftest: "$TMP/t1") "$TMP/p1" ||
	fail "trace_pipe and trace disagree"
grep -q "entries-written: 0/0 " "$R/trace" || fail "trace_pipe did not consume: $(grep entries "$R/trace")"
expect_eq "stats read events" "$(grep '^read events:' "$R/per_cpu/cpu1/stats")" "read events: $N"
echo "trace_pipe: $((2 * N)) records consumed, then end of file"

# --- a live writer: blocking, O_NONBLOCK, wake-up ---------------------------
fz_loopback live --cpus 1 --rate 200 --events 100000 --pages 64
fz_attach live "$LB_AREA"
L=$MNT/remotes/live
wait_for 5 test -d "$L/per_cpu" || fail "the live remote did not appear"
echo 0 > "$L/events/hvtrace/selftest/enable" || fail "disable"
expect_eq "enable after 0" "$(cat "$L/events/hvtrace/selftest/enable")" 0
expect_eq "events/enable" "$(cat "$L/events/enable")" 0
"$HVTRACE" events status --remote live | grep -q "^hvtrace/selftest$" ||
	fail "hvtraced does not see the event disabled"
sleep 0.3
cat "$L/trace_pipe" >/dev/null &	# empty the queue; ends when killed
CPID=$!
sleep 0.5
kill $CPID 2>/dev/null
wait $CPID 2>/dev/null
expect_errno "Resource temporarily unavailable" \
	dd if="$L/per_cpu/cpu0/trace_pipe_raw" of=/dev/null bs=4096 count=1 iflag=nonblock
expect_errno "Resource temporarily unavailable" \
	dd if="$L/trace_pipe" of=/dev/null bs=4096 count=1 iflag=nonblock
timeout 1 cat "$L/trace_pipe" >/dev/null
expect_eq "a blocking read with nothing to read (timeout's status)" $? 124
# A reader that waits is woken by new records.
timeout 10 head -c 1 "$L/trace_pipe" >"$TMP/w1" &
WPID=$!
sleep 0.5
kill -0 $WPID 2>/dev/null || fail "trace_pipe did not block"
echo 1 > "$L/events/hvtrace/selftest/enable" || fail "enable"
wait $WPID
expect_eq "woken reader's status" $? 0
expect_eq "woken reader's byte" "$(wc -c <"$TMP/w1")" 1
# poll(): not readable while empty, readable once records come.  (bash's
# read -t cannot check this: it never selects on a regular file.)
echo 0 > "$L/events/hvtrace/selftest/enable"
sleep 0.3
timeout 1 cat "$L/trace_pipe" >/dev/null
command -v python3 >/dev/null || fail "python3 is missing (make deps installs python3-minimal)"
timeout 20 python3 - "$L" <<'PY' || fail "poll on trace_pipe"
import os, select, sys
L = sys.argv[1]
fd = os.open(L + "/trace_pipe", os.O_RDONLY)
p = select.poll()
p.register(fd, select.POLLIN)
r = p.poll(500)
if r:
    sys.exit("poll said readable with nothing queued: %r" % r)
with open(L + "/events/hvtrace/selftest/enable", "w") as f:
    f.write("1")
r = p.poll(5000)
if not r or not r[0][1] & select.POLLIN:
    sys.exit("poll: nothing readable 5 s after enabling: %r" % r)
line = os.read(fd, 4096).decode()
if "selftest: id=" not in line:
    sys.exit("poll then read: %r" % line)
os.close(fd)
PY
echo "trace_pipe: blocks, EAGAIN with O_NONBLOCK, poll, wakes when records come"

# --- trace_pipe_raw: one whole sub-buffer per read ---------------------------
sleep 0.5
expect_eq "raw bs=4096" "$(dd if="$L/per_cpu/cpu0/trace_pipe_raw" bs=4096 count=1 status=none | wc -c)" 4096
sleep 0.3
expect_eq "raw bs=8192 (one page per read)" \
	"$(dd if="$L/per_cpu/cpu0/trace_pipe_raw" bs=8192 count=1 status=none | wc -c)" 4096
sleep 0.3
dd if="$L/per_cpu/cpu0/trace_pipe_raw" bs=4096 count=1 status=none of="$TMP/page"
commit=$(od -An -t u8 -j 8 -N 8 "$TMP/page" | tr -d ' ')
size=$((commit & ((1 << 27) - 1)))
[ $size -gt 0 ] && [ $size -le 4080 ] || fail "raw page commit $commit"
# Every record of the page is a 20-byte selftest (4-byte header + 16).
[ $((size % 20)) -eq 0 ] || fail "raw page data size $size"
expect_eq "raw partial reads" \
	"$(dd if="$L/per_cpu/cpu0/trace_pipe_raw" bs=1000 count=3 status=none | wc -c)" 3000
echo "trace_pipe_raw: 4096-byte pages, one per read, partial reads continue"

# --- tracing_on, trace_clock, resets, buffer_size_kb -------------------------
echo 0 > "$L/tracing_on" || fail "tracing_on 0"
expect_eq "tracing_on" "$(cat "$L/tracing_on")" 0
expect_eq "daemon tracing" "$("$HVTRACE" events tracing --remote live)" 0
echo 1 > "$L/tracing_on"
sleep 0.3
echo counter > "$L/trace_clock" || fail "trace_clock counter"
expect_eq "trace_clock" "$(cat "$L/trace_clock")" "mono [counter]"
sleep 0.3
line=$(grep -m1 selftest: "$L/trace")
ts=$(echo "$line" | awk '{ print $4 }')
[[ $ts =~ ^[0-9]+:$ ]] || fail "counter clock prints raw counts: $line"
echo mono > "$L/trace_clock"
sleep 0.3
grep -m1 -q selftest: "$L/trace" || fail "no records after the clock change"
# The reset takes everything committed until then (the view drains the
# source first); the writer goes on, so what the next read shows must
# all be newer than the newest record read before the reset, however
# long the two reads are apart.
before=$(grep selftest: "$L/trace" | tail -n 1 | sed 's/.*id=//')
[ -n "$before" ] || fail "no record before the reset"
echo > "$L/trace" || fail "echo > trace"
grep selftest: "$L/trace" >"$TMP/after-reset"
after=$(head -n 1 "$TMP/after-reset" | sed 's/.*id=//')
entries=$(sed -n 's|^# entries-in-buffer/entries-written: \([0-9]*\)/.*|\1|p' "$L/trace")
[ -z "$after" ] || [ "$after" -gt "$before" ] ||
	fail "echo > trace did not reset: id $after after the reset, $before before it"
[ "$entries" -le $(($(wc -l <"$TMP/after-reset") + 200)) ] ||
	fail "echo > trace did not reset: $entries entries"
echo "tracing_on, trace_clock (resets), echo > trace (resets)"

# --- refused writes: errno as tracefs, reason in error_log -------------------
echo > "$L/error_log"
expect_eq "error_log after clearing" "$(cat "$L/error_log")" ""
K=/sys/kernel/tracing
kernel_err() {	# the host's own tracefs answer to the same write
	(bash -c "$1" 2>&1 >/dev/null | sed "s/^.*: //")
}
check() {	# check WHAT OURS_CMD KERNEL_CMD FALLBACK_ERRTEXT
	local want=$4
	if [ -w $K/tracing_on ] && [ -n "$3" ]; then
		want=$(kernel_err "$3")
		[ -n "$want" ] || fail "the kernel accepted: $3"
	fi
	expect_errno "$want" bash -c "$2"
	echo "  $1: $want"
}
check "enable 2" "echo 2 > $L/events/hvtrace/selftest/enable" \
	"echo 2 > $K/events/sched/sched_switch/enable" "Invalid argument"
check "system enable 2" "echo 2 > $L/events/hvtrace/enable" \
	"echo 2 > $K/events/sched/enable" "Invalid argument"
check "tracing_on abc" "echo abc > $L/tracing_on" "echo abc > $K/tracing_on" \
	"Invalid argument"
check "tracing_on 0x1" "echo 0x1 > $L/tracing_on" "echo 0x1 > $K/tracing_on" \
	"Invalid argument"
check "unknown clock" "echo nosuch > $L/trace_clock" \
	"echo nosuch > $K/trace_clock" "Invalid argument"
check "buffer_size_kb 0" "echo 0 > $L/buffer_size_kb" "" "Invalid argument"
check "buffer_size_kb of a loaded remote" "echo 1024 > $L/buffer_size_kb" "" \
	"Device or resource busy"
check "unknown event dir" "echo 1 > $L/events/nosuch/enable" \
	"echo 1 > $K/events/nosuch_hvt/enable" "No such file or directory"
check "new file" "echo 1 > $L/nosuchfile" "echo 1 > $K/nosuchfile_hvt" \
	"Permission denied"
check "read-only file" "echo 1 > $L/events/hvtrace/selftest/id" \
	"echo 1 > $K/events/sched/sched_switch/id" "Invalid argument"
check "unknown event in set_event" "echo hvtrace:nosuch > $L/set_event" \
	"echo hvt_nosuch:nosuch > $K/set_event" "Invalid argument"
n=$(grep -c ': error: ' "$L/error_log")
expect_eq "error_log entries (the writes that reached a file)" "$n" 9
# Three lines an entry: "[secs.usecs] LOC: error: TEXT", "  Command: CMD",
# and the caret under the offending part.
expect_eq "error_log lines" "$(wc -l <"$L/error_log")" $((3 * n))
expect_eq "error_log headers" "$(grep -cE '^\[ *[0-9]+\.[0-9]{6}\] [a-z_]+: error: .' "$L/error_log")" $n
expect_eq "error_log commands" "$(grep -c '^  Command: ' "$L/error_log")" $n
expect_eq "error_log carets" "$(grep -cE '^ +\^$' "$L/error_log")" $n
grep -q "enable: error: '2' is not 0 or 1" "$L/error_log" ||
	fail "error_log reason: $(cat "$L/error_log")"
echo "error_log: 9 entries in tracefs's format"

# --- set_event ---------------------------------------------------------------
expect_eq "set_event" "$(cat "$L/set_event")" "hvtrace:selftest"
echo '!hvtrace:selftest' > "$L/set_event" || fail "set_event disable"
expect_eq "enable via set_event" "$(cat "$L/events/hvtrace/selftest/enable")" 0
echo 'selftest' > "$L/set_event" || fail "set_event enable"
expect_eq "enable via set_event" "$(cat "$L/events/hvtrace/selftest/enable")" 1
echo "set_event: enables and disables"
exit 0
