#!/bin/bash
# SPDX-License-Identifier: MIT
#
# "hvtrace record -o F NAME -B INST" of a rig guest started with
# --kernel-events sched,ftrace:print (docs/tracedat.md, section 1): one
# trace.dat holds the host kernel's events (instance INST, top-level
# buffer), the guest's user events (buffer NAME) and the guest kernel's
# own ring (buffer NAME-kernel), all on the host's clock.
#
# The guest writes M rounds, each "hvt-mark I" to its instance's
# trace_marker and then one hvt_e2e user event (a new ue_writer process
# each round); the host writes one marker of its own to INST once the
# recording runs.  trace-cmd report (Debian's, 3.1.6) must show:
#   - every guest marker exactly once, in the NAME-kernel buffer;
#   - M user events in the NAME buffer, named after their writer's comm;
#   - in its merged time order, marker I, then round I's user event, then
#     marker I+1: each user event between the marker written before it and
#     the one written after it (the guest kernel's mono times and the user
#     events' both go through hvtraced's clock model of the guest);
#   - the guest's sched_switch (NAME-kernel) with each ue_writer's comm
#     and pid, as the user events carry them;
#   - the host's marker in the top-level buffer;
# and trace-cmd dump --events lists every event id once: the guest's
# ftrace:print sits under an id of its own next to the host's; KernelShark
# opens the file with its three buffers as streams.
#
# The clock bound record prints (without -q) is in the file's CPU
# statistics too; record -q prints none of its informational lines.
#
# Environment: HVT_RGK_ROUNDS (M, default 20).
. "$(dirname "$0")/lib.sh"
t_require

rec_setup rgk
M=${HVT_RGK_ROUNDS:-20}

t_name n rgk
# A writer that keeps hvt_e2e registered (so the host can enable it
# before recording), then, once the host sends "g", M rounds.
"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events sched,ftrace:print --port go \
	--run "ue_writer --hold & until head -c 1 /dev/virtio-ports/go | grep -q g; do sleep 0.01; done; i=0; while [ \$i -lt $M ]; do echo \"hvt-mark \$i\" >$T/trace_marker; ue_writer --count 1 --wait-enable 60000 >/dev/null || echo \"hvt-ue-failed \$i\"; i=\$((i + 1)); done; echo \"hvt-rounds \$i done\"; sleep 600" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
wait_line "$T_TMP/$n.log" '^registered id=' 120 || fail "ue_writer did not register hvt_e2e"
"$HVTRACE" events enable --remote "$n" hvt_e2e >/dev/null || fail "cannot enable hvt_e2e"

"$HVTRACE" record -o "$T_TMP/t.dat" -B "$INST" "$n" >"$T_TMP/rec.out" 2>"$T_TMP/rec.err" &
rec=$!
T_PIDS+=("$rec")
# Recording runs once INST has the mono clock and tracing on (the guest
# kernel's ring is past what it held before that).
rec_wait_started "$rec" "$T_TMP/rec.err"
echo "hvt-host-ready" >"$HI/trace_marker" || fail "cannot write the host's marker"
"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" g "$T_TMP/$n.log" \
	"hvt-rounds $M done" 600 || fail "the guest's rounds did not finish"
grep -qaE '^hvt-ue-failed [0-9]' "$T_TMP/$n.log" && fail "a ue_writer round failed"
kill -INT "$rec"
wait "$rec" || { cat "$T_TMP/rec.err"; fail "record failed"; }
cat "$T_TMP/rec.err"
grep -q "the guest kernel's ring (2 CPUs) beside its user events" "$T_TMP/rec.err" ||
	fail "record did not take the guest kernel's ring"
grep -Eq "^hvtrace record: $n-kernel: times on the host's CLOCK_MONOTONIC through hvtraced's clock model \(error bound \+-[0-9.]+ us\)" "$T_TMP/rec.err" ||
	fail "record did not state the guest kernel times' error bound"
info "$(grep -E "^hvtrace record: $n-kernel: times on the host" "$T_TMP/rec.err")"

trace-cmd report "$T_TMP/t.dat" >"$T_TMP/report.txt" 2>"$T_TMP/report.err" ||
	{ cat "$T_TMP/report.err"; fail "trace-cmd report failed"; }
grep -q "$n-kernel: .* sched_switch: " "$T_TMP/report.txt" ||
	fail "no guest sched_switch in buffer $n-kernel: $(head -5 "$T_TMP/report.txt")"
grep -q "hvt-host-ready" "$T_TMP/report.txt" || fail "the host's marker is missing"
grep -E "^ *[^ :]+-[0-9]+ +\[[0-9]+\] +[0-9.]+: print: .*hvt-host-ready" "$T_TMP/report.txt" >/dev/null ||
	fail "the host's marker is not in the top-level buffer: $(grep hvt-host-ready "$T_TMP/report.txt")"
grep -E 'hvt-mark [0-9]+$' "$T_TMP/report.txt" | grep -v "^ *$n-kernel: " | head -3 | grep . &&
	fail "guest markers outside buffer $n-kernel"

# Markers once each, and the alternation marker I, user event, marker I+1.
verdict=$(awk -v m="$M" -v n="$n" '
	/DROPPED/ && index($0, n) == 1 { print "a guest buffer lost events: " $0; bad = 1; exit }
	/hvt-mark [0-9]+$/ {
		if (want != "mark") { printf "marker %s where a user event was due (after mark %d)\n", $NF, k - 1; bad = 1; exit }
		if ($NF != k) { printf "hvt-mark %s where %d was due\n", $NF, k; bad = 1; exit }
		k++; want = "ue"; next }
	/ hvt_e2e: / {
		if (index($0, n ": ") != 1 && index($0, " " n ": ") == 0) { print "user event outside buffer " n ": " $0; bad = 1; exit }
		if (want != "ue") { printf "a user event where hvt-mark %d was due\n", k; bad = 1; exit }
		u++; want = "mark"; next }
	BEGIN { want = "mark"; k = 0 }
	END { if (!bad) { if (k != m || u != m) printf "%d markers, %d user events of %d\n", k, u, m; else print "ok" } }' "$T_TMP/report.txt")
[ "$verdict" = ok ] || fail "trace-cmd report: $verdict"
info "$M guest markers and $M user events alternate in trace-cmd's time order"

# Each user event's writer: named, and switched out by the guest kernel
# under the same comm and pid.
pids=$(sed -n "s/^ *$n: *ue_writer-\([0-9][0-9]*\) .* hvt_e2e: .*/\1/p" "$T_TMP/report.txt" | sort -u)
[ "$(echo "$pids" | grep -c .)" -eq "$M" ] ||
	fail "the user events are not named ue_writer-PID with $M pids: $(grep hvt_e2e "$T_TMP/report.txt" | awk '{ print $2 }' | sort | uniq -c | head)"
for p in $pids; do
	grep -Eq "^ *$n-kernel: .* sched_switch: .*(ue_writer:$p \[|prev_comm=ue_writer prev_pid=$p )" "$T_TMP/report.txt" ||
		fail "no guest sched_switch of ue_writer:$p: $(grep -m3 "$n-kernel: .*sched_switch" "$T_TMP/report.txt")"
done
# Every guest task is named in the file's pid table (the guest's own
# sched_switch names the short-lived ones: sh, head, grep, ...).
unnamed=$(grep -c "^ *$n-kernel: *<\.\.\.>-" "$T_TMP/report.txt")
[ "$unnamed" -eq 0 ] || fail "$unnamed guest kernel events of unnamed tasks: $(grep -m3 "^ *$n-kernel: *<\.\.\.>-" "$T_TMP/report.txt")"
info "the guest's sched_switch names all $M ue_writer processes (comm and pid); every guest task named"

# Event ids: each once in the file (the ftrace system's formats are a
# section of their own); the guest's print under an id apart from the
# host's.
trace-cmd dump --events "$T_TMP/t.dat" >"$T_TMP/events.txt" 2>&1 || fail "trace-cmd dump --events failed"
trace-cmd dump --ftrace-events "$T_TMP/t.dat" >"$T_TMP/ftrace.txt" 2>&1 || fail "trace-cmd dump --ftrace-events failed"
nids=$(cat "$T_TMP/events.txt" "$T_TMP/ftrace.txt" | grep -c '^ID: ')
dups=$(cat "$T_TMP/events.txt" "$T_TMP/ftrace.txt" | sed -n 's/^ID: \([0-9]*\).*/\1/p' | sort | uniq -d)
[ -z "$dups" ] || fail "event ids saved twice: $dups"
for e in sched_switch hvt_e2e; do
	grep -q "^name: $e\$" "$T_TMP/events.txt" || fail "no format of $e saved"
done
prints=$(awk '/^name: print$/ { p = 1; next } p && /^ID: / { print $2; p = 0 }' "$T_TMP/ftrace.txt" | sort -u | grep -c .)
[ "$prints" -eq 2 ] || fail "$prints ftrace:print formats, not the host's and the guest's"
# Every event of the report has its format.
grep -iE 'no event found|unknown_event|UNKNOWN' "$T_TMP/report.txt" "$T_TMP/report.err" | head -3 | grep . &&
	fail "events printed without their format"
info "$nids event ids, each once; the host's and the guest's ftrace:print under two ids"

# Every record the recording read from the guest kernel's ring is in the
# file: the CPU statistics saved for NAME-kernel (what this recording
# read, past what the ring held before) add up to its events.
trace-cmd report --stat "$T_TMP/t.dat" >"$T_TMP/stat.txt" 2>&1 || fail "trace-cmd report --stat failed"
read -r entries errors < <(awk -v b="Buffer: $n-kernel" '
	$0 == b { on = 1; next } /^Buffer: / { on = 0 }
	on && /^entries: / { e += $2 } on && /^errors: / { x += $2 }
	END { print e + 0, x + 0 }' "$T_TMP/stat.txt")
events=$(grep -c "^ *$n-kernel: " "$T_TMP/report.txt")
[ "$errors" -eq 0 ] || fail "the guest kernel's ring had $errors malformed items"
[ "$entries" -eq "$events" ] ||
	fail "--stat says $entries guest kernel records were read, the file has $events"
info "the $events guest kernel events are all it read (--stat)"
# The file keeps the clock model's bound of each converted buffer (what
# record printed at the end): in the CPU statistics, under the buffer.
bound=$(awk -v b="Buffer: $n-kernel" '
	$0 == b { on = 1; next } /^Buffer: / { on = 0 }
	on && /^clock: / { print; exit }' "$T_TMP/stat.txt")
echo "$bound" | grep -Eq "^clock: mono \(the host's CLOCK_MONOTONIC through a clock model, error bound \+-[0-9]+\.[0-9]+ us\)$" ||
	fail "--stat has no clock bound for $n-kernel: '$bound'"
info "--stat: $n-kernel: $bound"

# KernelShark opens it: three streams, all events loaded
# (tests/tracedat/ks_check.sh; skipped without its tools).
HVT_OBJTREE=$T_OBJTREE "$T_SRCTREE/tests/tracedat/ks_check.sh" "$T_TMP/t.dat" "" \
	"top buffer" "$n" "$n-kernel" >"$T_TMP/ks.out" 2>&1
case $? in
0) info "KernelShark: $(grep '^PASS' "$T_TMP/ks.out")" ;;
77) info "KernelShark not checked: $(grep '^SKIP' "$T_TMP/ks.out")" ;;
*) cat "$T_TMP/ks.out"; fail "KernelShark did not open the file" ;;
esac

# hvtrace's own reader prints what trace-cmd prints.
"$HVTRACE" report "$T_TMP/t.dat" >"$T_TMP/hv.txt" 2>"$T_TMP/hv.err" || { cat "$T_TMP/hv.err"; fail "hvtrace report failed"; }
cmp -s "$T_TMP/report.txt" "$T_TMP/hv.txt" ||
	fail "hvtrace report differs from trace-cmd report: $(diff "$T_TMP/report.txt" "$T_TMP/hv.txt" | head -5)"
"$HVTRACE" report --stat "$T_TMP/t.dat" >"$T_TMP/hvstat.txt" 2>&1 || fail "hvtrace report --stat failed"
cmp -s "$T_TMP/stat.txt" "$T_TMP/hvstat.txt" ||
	fail "hvtrace report --stat differs from trace-cmd's: $(diff "$T_TMP/stat.txt" "$T_TMP/hvstat.txt" | head -5)"
# -q: warnings and errors only; the guest kernel's ring and the clock
# bound are not said (the bound is in the file, as above).
"$HVTRACE" record -o "$T_TMP/q.dat" -q -d 2 "$n" >/dev/null 2>"$T_TMP/q.err" ||
	{ cat "$T_TMP/q.err"; fail "record -q failed"; }
[ -s "$T_TMP/q.err" ] && fail "record -q printed: $(cat "$T_TMP/q.err")"
trace-cmd dump --options "$T_TMP/q.dat" 2>&1 | grep -q "\"$n-kernel\"" ||
	fail "record -q left out the guest kernel's ring"
info "record -q: nothing on stderr, buffer $n-kernel recorded"
# --no-guest-kernel: the remote's user events only.
"$HVTRACE" record -o "$T_TMP/u.dat" -q -d 2 --no-guest-kernel "$n" >/dev/null 2>"$T_TMP/u.err" ||
	{ cat "$T_TMP/u.err"; fail "record --no-guest-kernel failed"; }
grep -q "guest kernel's ring" "$T_TMP/u.err" && fail "--no-guest-kernel took the guest kernel's ring: $(cat "$T_TMP/u.err")"
trace-cmd dump --options "$T_TMP/u.dat" >"$T_TMP/u.opt" 2>&1 || fail "trace-cmd dump --options failed"
grep -q "$n-kernel" "$T_TMP/u.opt" && fail "--no-guest-kernel wrote a buffer $n-kernel"
grep -q "$n" "$T_TMP/u.opt" || fail "record --no-guest-kernel has no buffer $n: $(head -20 "$T_TMP/u.opt")"
info "--no-guest-kernel: buffer $n alone"
echo "PASS"
