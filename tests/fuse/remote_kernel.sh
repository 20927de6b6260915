#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A remote of hvtraced recorded together with the host kernel, checked
# with trace-cmd report:
#   record -o FILE --kernel REMOTE (the top-level tracefs instance):
#     - every event the loopback writer wrote is in the remote's buffer,
#       per CPU ids 0..N-1 in order (the field values), N the writer's
#       own count;
#     - the trace_marker lines written meanwhile are in the top-level
#       buffer (no buffer prefix), in order, named after the shell;
#     - merged in time, each round of remote events lies between the
#       marker written before the round and the one written after it:
#       remote timestamps are on host CLOCK_MONOTONIC, the kernel's mono
#       trace clock;
#     - the top-level buffer is marked mono with the kernel's CPUs,
#       hvtrace report (and --stat) prints what trace-cmd report prints,
#       and the kernel's trace clock and tracing_on are put back;
#   record -B NAME -e PATTERN... REMOTE: one pattern selects a kernel
#     event, the other a remote event; both are recorded, the instance is
#     removed and the remote's enable state put back; a pattern that
#     matches nothing is an error that leaves no file and changes nothing;
#   --no-control, or an area path, next to a remote: usage errors.
. "$(dirname "$0")/lib.sh"

TRACEFS=/sys/kernel/tracing
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: recording the host kernel needs root"
	exit 77
fi
if [ ! -w $TRACEFS/trace_marker ] || [ ! -w $TRACEFS/instances ]; then
	echo "SKIP: no writable tracefs at $TRACEFS"
	exit 77
fi
if ! command -v trace-cmd >/dev/null; then
	echo "SKIP: trace-cmd is not installed (apt-get install trace-cmd)"
	exit 77
fi

# The top-level instance is recorded: put its clock and tracing_on back
# even when the recorder was killed.
saved_clock=$(sed -n 's/.*\[\([^]]*\)\].*/\1/p' $TRACEFS/trace_clock)
saved_on=$(cat $TRACEFS/tracing_on)
INST=hvt-rk-$$
rk_cleanup() {
	fz_cleanup
	grep -q "\[$saved_clock\]" $TRACEFS/trace_clock ||
		echo "$saved_clock" >$TRACEFS/trace_clock
	echo "$saved_on" >$TRACEFS/tracing_on
	[ -d $TRACEFS/instances/$INST ] && rmdir $TRACEFS/instances/$INST
}
trap rk_cleanup EXIT

fz_daemon

# written CPU: what the writer of remote $RNAME committed on CPU
written() {
	"$HVTRACE" stat "$RNAME" --cpu "$1" | awk '/^written:/ { print $2 }'
}

# settle: W0 W1 once the writer wrote nothing for 150 ms
settle() {
	local a0 a1 i
	W0=$(written 0) W1=$(written 1)
	for i in $(seq 1 100); do
		sleep 0.15
		a0=$(written 0) a1=$(written 1)
		[ "$a0" = "$W0" ] && [ "$a1" = "$W1" ] && return 0
		W0=$a0 W1=$a1
	done
	fail "remote $RNAME does not stop writing once disabled"
}

mark() {
	echo "hvt-rk-$$ $1" >$TRACEFS/trace_marker || fail "cannot write trace_marker"
}

# --- 1. --kernel (top-level instance) and a remote -------------------------
fz_loopback lb --cpus 2 --rate 1000 --pages 256 --wait-enable
fz_attach lb "$LB_AREA"
RNAME=lb
"$HVTRACE" events disable '*' --remote lb || fail "disable on lb"
settle
# Known state to see the recorder set up and put back.
echo 0 >$TRACEFS/tracing_on
echo local >$TRACEFS/trace_clock

"$HVTRACE" record -o "$TMP/k.dat" --kernel -q -d 120 lb \
	>"$TMP/rec.out" 2>"$TMP/rec.err" &
RP=$!
PIDS="$PIDS $RP"
k_ready() {
	[ "$(cat $TRACEFS/tracing_on)" = 1 ] &&
		grep -q '\[mono\]' $TRACEFS/trace_clock
}
wait_for 10 k_ready || fail "record did not start the kernel: $(cat "$TMP/rec.err")"

# Marker 0, then rounds: enable the remote, let it write, disable it,
# wait until it wrote its last event, next marker.  bounds: per round
# the written counts of CPU 0 and 1 when its closing marker was written.
ROUNDS=3
settle
bounds="$W0 $W1"
mark 0
for r in $(seq 1 $ROUNDS); do
	"$HVTRACE" events enable 'hvtrace/*' --remote lb || fail "enable, round $r"
	sleep 0.3
	"$HVTRACE" events disable 'hvtrace/*' --remote lb || fail "disable, round $r"
	settle
	bounds="$bounds $W0 $W1"
	mark "$r"
done
running "$RP" || fail "record ended early: $(cat "$TMP/rec.err")"

# The writer stops: the recording ends by itself once it read it all.
kill "$LB_PID"
wait_for 10 grep -q '^total:' "$TMP/lb-lb.log" || fail "writer lb did not stop"
for _ in $(seq 1 600); do
	running "$RP" || break
	sleep 0.05
done
running "$RP" && fail "record did not end after the remote's writer stopped"
wait "$RP"
rc=$?
expect_eq "record exit status ($(cat "$TMP/rec.err"))" $rc 0
# The one line that says the kernel is read without its mmap (before
# 6.10) is not a complaint.
grep -v '^hvtrace: host kernel ring: trace_pipe_raw read() (' "$TMP/rec.err" >"$TMP/rec.err2"
[ -s "$TMP/rec.err2" ] && fail "record complained: $(cat "$TMP/rec.err")"
grep -q '\[local\]' $TRACEFS/trace_clock ||
	fail "trace_clock not put back: $(cat $TRACEFS/trace_clock)"
expect_eq "tracing_on put back" "$(cat $TRACEFS/tracing_on)" 0

N0=$(writer_field "$TMP/lb-lb.log" 0 written)
N1=$(writer_field "$TMP/lb-lb.log" 1 written)
expect_eq "writer cpu 0 after the last round" "$N0" "$W0"
expect_eq "writer cpu 1 after the last round" "$N1" "$W1"

trace-cmd report "$TMP/k.dat" >"$TMP/k.rep" 2>"$TMP/k.err" ||
	fail "trace-cmd report: $(head -3 "$TMP/k.err")"
me=$(cat /proc/$$/comm)
awk -v tag="hvt-rk-$$" -v rounds=$ROUNDS -v bounds="$bounds" \
	-v me="$me-$$" '
BEGIN {
	nb = split(bounds, b, " ")
	for (r = 0; r <= rounds; r++) {
		hi[r, 0] = b[2 * r + 1]; hi[r, 1] = b[2 * r + 2]
	}
	seg = 0		# 0: before marker 0, r: between markers r-1 and r
	nm = 0
}
function bad(msg) { print "line " NR ": " msg ": " $0; err = 1; exit 1 }
index($0, "tracing_mark_write: " tag " ") {
	if ($1 ~ /:$/)
		bad("marker not in the top-level buffer")
	if ($1 != me)
		bad("marker not named " me)
	if ($NF != nm)
		bad("marker " $NF ", expected " nm)
	nm++
	seg = nm
	next
}
$1 == "lb:" {
	if ($5 != "selftest:" || $6 !~ /^id=[0-9]+$/)
		bad("unexpected line in buffer lb")
	cpu = substr($3, 2, 3) + 0
	id = substr($6, 4) + 0
	if (cpu > 1)
		bad("cpu " cpu)
	if (id != next_id[cpu] + 0)
		bad("cpu " cpu ": id " id ", expected " next_id[cpu] + 0)
	next_id[cpu]++
	# Written before marker seg (seg 0: before marker 0), after
	# marker seg - 1.
	if (seg > rounds)
		bad("remote event after the last marker")
	lo = seg ? hi[seg - 1, cpu] : 0
	if (id < lo || id >= hi[seg, cpu])
		bad("id " id " of cpu " cpu " lies " \
		    (seg ? "between markers " seg - 1 " and " seg : \
		     "before marker 0") ", where ids [" lo ", " \
		    hi[seg, cpu] ") were written")
	count[seg, cpu]++
	next
}
/DROPPED/ { bad("a loss") }
END {
	if (err)
		exit 1
	if (nm != rounds + 1) {
		print nm " markers, expected " rounds + 1; exit 1
	}
	for (r = 1; r <= rounds; r++)
		for (c = 0; c < 2; c++)
			if (!count[r, c]) {
				print "round " r ": no event of cpu " c; exit 1
			}
	printf "%d %d\n", next_id[0], next_id[1] > "/dev/stderr"
}' "$TMP/k.rep" 2>"$TMP/k.counts" || fail "the merged report is wrong (above)"
expect_eq "events of lb in the file (cpu 0, cpu 1)" "$(cat "$TMP/k.counts")" "$N0 $N1"

trace-cmd dump --options "$TMP/k.dat" >"$TMP/k.dump" 2>&1
grep -A3 '^"" \[name\]' "$TMP/k.dump" | grep -q '^"mono" \[clock\]' ||
	fail "the top-level buffer is not marked mono"
kcpus=$(ls -d $TRACEFS/per_cpu/cpu* | wc -l)
grep -A3 '^"" \[name\]' "$TMP/k.dump" | grep -q "^$kcpus \[CPUs\]" ||
	fail "the top-level buffer does not have the kernel's $kcpus CPUs"
"$HVTRACE" report "$TMP/k.dat" >"$TMP/k.hv" || fail "hvtrace report"
cmp -s "$TMP/k.rep" "$TMP/k.hv" || {
	diff "$TMP/k.rep" "$TMP/k.hv" | head
	fail "hvtrace report and trace-cmd report differ"
}
trace-cmd report --stat "$TMP/k.dat" >"$TMP/k.tcs" 2>&1 || fail "trace-cmd report --stat"
"$HVTRACE" report --stat "$TMP/k.dat" >"$TMP/k.hvs" 2>&1 || fail "hvtrace report --stat"
cmp -s "$TMP/k.tcs" "$TMP/k.hvs" || fail "hvtrace report --stat and trace-cmd report --stat differ"
grep -q "^Buffer: lb$" "$TMP/k.tcs" || fail "--stat has no section for buffer lb"
echo "--kernel + remote: $N0 + $N1 events exact, $((ROUNDS + 1)) markers in" \
	"the top-level buffer, every round between its markers"

# --- 2. -B and -e: patterns on both sides -----------------------------------
N=2000
fz_loopback lb2 --cpus 1 --events $N --rate 2000 --pages 256 --wait-enable
fz_attach lb2 "$LB_AREA"
"$HVTRACE" events disable '*' --remote lb2 || fail "disable on lb2"

# A pattern that matches nothing anywhere: an error, no file, no change.
"$HVTRACE" record -o "$TMP/x.dat" -B $INST -e 'hvtrace:*' \
	-e no_such_event_xyz lb2 >/dev/null 2>"$TMP/x.err"
expect_eq "record with a pattern matching nothing" $? 1
grep -q "no event matches 'no_such_event_xyz' (kernel events: .*remotes: " \
	"$TMP/x.err" || fail "unclear error: $(cat "$TMP/x.err")"
[ -e "$TMP/x.dat" ] && fail "a failed record left a file"
[ -d $TRACEFS/instances/$INST ] && fail "a failed record left instance $INST"
"$HVTRACE" events status --remote lb2 | grep -q "^hvtrace/selftest$" ||
	fail "a failed record changed lb2's events"

timeout 60 "$HVTRACE" record -o "$TMP/b.dat" -B $INST -e 'hvtrace:*' \
	-e sched:sched_switch -q lb2 2>"$TMP/b.err" ||
	fail "record -B -e: $(cat "$TMP/b.err")"
[ -d $TRACEFS/instances/$INST ] && fail "instance $INST was left behind"
"$HVTRACE" events status --remote lb2 | grep -q "^hvtrace/selftest$" ||
	fail "record did not put lb2's enable state back"
trace-cmd report "$TMP/b.dat" >"$TMP/b.rep" 2>"$TMP/b.err" ||
	fail "trace-cmd report: $(head -3 "$TMP/b.err")"
awk '$1 == "lb2:" && $5 == "selftest:" {
	if ($6 != "id=" n + 0) { print "line " NR ": " $0 ", expected id=" n + 0; exit 1 }
	n++
}
END { if (n != '$N') { print n " events of lb2, expected '$N'"; exit 1 } }' \
	"$TMP/b.rep" || fail "lb2 events in the -B recording"
nsw=$(awk '$1 !~ /:$/ && / sched_switch: /' "$TMP/b.rep" | wc -l)
[ "$nsw" -gt 0 ] || fail "no sched_switch in the top-level buffer"
echo "-B -e: $N remote events and $nsw sched_switch events, instance removed"

# --- 3. usage errors ------------------------------------------------------------
"$HVTRACE" record -o "$TMP/y.dat" -k --no-control lb2 2>/dev/null
expect_eq "record -k --no-control REMOTE" $? 2
"$HVTRACE" record -o "$TMP/y.dat" -k lb2 "$LB_AREA" 2>/dev/null
expect_eq "record -k REMOTE AREA" $? 2
[ -e "$TMP/y.dat" ] && fail "a usage error left a file"
echo "usage errors: exit 2"
exit 0
