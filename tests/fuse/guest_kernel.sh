#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A real 6.12 guest (QEMU TCG, the rig's initramfs) started with
# --kernel-events sched:sched_switch,ftrace:print by hvtrace guest start,
# through hvtrace mount (mounted before the guest exists: its remote
# appears while it boots):
#   - events/sched/sched_switch and events/ftrace/print of the guest
#     kernel are in the remote's tree beside user_events/hvt_e2e; their
#     format files are the guest's own (hvtrace-guest kformats) but for
#     the served ID line; every id of the tree is distinct and each id
#     file agrees with its format; enable reads 1 for both; writing 0 and
#     then 1 goes through the guest's agent and reads back; writing 1 changes
#     nothing and succeeds; printk_formats is there, saved_cmdlines has
#     every pid of the guest's own;
#   - trace (not consuming) shows each of the M numbered markers the
#     guest wrote to its instance's trace_marker exactly once, named
#     tracing_mark_write (the symbol table in the guest's RAM); once the
#     agent's N user events (written after the markers) are there too,
#     trace is one timeline: times never go back, markers in the order
#     written, every user event after the last marker; no guest kernel
#     line of a pid a sched_switch named before it prints as <...>;
#   - libtracefs (tracefs_read: tracefs_local_events +
#     tracefs_iterate_raw_events on the mount) finds sched:sched_switch and
#     ftrace:print, reads every marker exactly once with its text, reads
#     sched_switch records, and reads the N user events of the guest's
#     agent, each seq once (the user events still read right).
. "$(dirname "$0")/lib.sh"
fz_need_fuse
fz_need_guest

M=${HVT_FGK_MARKERS:-3000}
N=200
G=fgk$$
# The mount finds the guest's RAM file and console through these.
export HVT_RUNDIR=$TMP/run HVT_SHM_DIR=$TMP HVT_OBJTREE=$OBJ
fz_daemon
fz_mount
trap fz_stop_guest EXIT
T=/sys/kernel/tracing/instances/hvt
# hvtrace guest start attaches the guest to hvtraced as it boots: the
# remote is in the view before the guest printed its formats, and its
# kernel's ring is asked for once its agent is up.
# --accel tcg1: the test enables and disables sched_switch while the guest
# runs, which patches the guest kernel's code (hvtrace.1, guest).
"$HVTRACE" guest start "$G" --initrd "$IMAGE" --accel tcg1 \
	--kernel-events sched:sched_switch,ftrace:print \
	--run "i=0; while [ \$i -lt $M ]; do echo \"hvt-fk \$i\" >$T/trace_marker; i=\$((i + 1)); done; echo hvt-fk-done; ue_writer --wait-agent 30000 --count $N --wait-enable 120000 && echo hvt-ue-done; sleep 300" \
	--log "$TMP/console.log" >"$TMP/launcher.log" 2>&1 ||
	fail "the guest did not start: $(tail -5 "$TMP/launcher.log")"
R=$MNT/remotes/$G
wait_for 120 test -e "$R/events/sched/sched_switch/format" ||
	fail "the guest kernel's events did not appear (mount: $(cat "$TMP/mount.log"))"
wait_for 120 grep -qa '^hvt-fk-done' "$TMP/console.log" ||
	fail "the guest did not write its markers"

# --- the tree ------------------------------------------------------------
"$LAUNCHER" kformats "$G" "$TMP/kf" >/dev/null || fail "kformats $G"
for e in sched/sched_switch ftrace/print; do
	[ -f "$TMP/kf/events/$e/format" ] || fail "the guest has no $e"
	id=$(cat "$R/events/$e/id") || fail "no $e/id"
	grep -qx "ID: $id" "$R/events/$e/format" ||
		fail "$e: id $id, format says $(grep '^ID:' "$R/events/$e/format")"
	diff <(grep -v '^ID:' "$TMP/kf/events/$e/format") \
		<(grep -v '^ID:' "$R/events/$e/format") >/dev/null ||
		fail "$e: the served format is not the guest's"
	expect_eq "$e/enable" "$(cat "$R/events/$e/enable")" 1
	echo "$e: the guest's format, $(grep '^ID:' "$TMP/kf/events/$e/format") served as $id"
done
[ -e "$R/printk_formats" ] || fail "no printk_formats"
dup=$(cat "$R"/events/*/*/id | sort | uniq -d)
[ -z "$dup" ] || fail "ids served twice: $dup"
echo "ids: $(cat "$R"/events/*/*/id | wc -l) events, all distinct"
echo 1 >"$R/events/sched/sched_switch/enable" || fail "writing 1 (as it is) was refused"
# A change goes through hvtraced to the guest's agent.
echo 0 >"$R/events/sched/sched_switch/enable" ||
	fail "disabling sched_switch through the agent failed: $(cat "$R/error_log")"
expect_eq "sched_switch/enable after 0" "$(cat "$R/events/sched/sched_switch/enable")" 0
echo 1 >"$R/events/sched/sched_switch/enable" ||
	fail "enabling sched_switch through the agent failed: $(cat "$R/error_log")"
expect_eq "sched_switch/enable after 1" "$(cat "$R/events/sched/sched_switch/enable")" 1
echo "enable: 1 as booted; 0 and 1 written through the guest's agent"

# --- trace (not consuming) ---------------------------------------------------
grep -a 'hvt-fk [0-9]*$' "$R/trace" >"$TMP/trace.txt"
awk -v m="$M" '{ k = $NF; if (seen[k]++) { print "marker " k " twice"; exit 1 } }
	END { if (length(seen) != m) { print length(seen) " of " m " markers"; exit 1 } }' \
	"$TMP/trace.txt" || fail "trace"
echo "trace: $M markers once each"
# Function names from the table in the guest's RAM, never hex or the
# host's: every marker's ip is tracing_mark_write.
n=$(grep -c ' tracing_mark_write: hvt-fk [0-9]*$' "$TMP/trace.txt")
[ "$n" = "$M" ] ||
	fail "trace: $n of $M markers named tracing_mark_write: $(head -2 "$TMP/trace.txt")"
echo "trace: every marker named tracing_mark_write"
# The guest's own saved_cmdlines (taken at boot) are all served.
while read -r pid comm; do
	grep -q "^$pid " "$R/saved_cmdlines" || fail "saved_cmdlines lacks the guest's '$pid $comm'"
done <"$TMP/kf/saved_cmdlines"
echo "saved_cmdlines: the guest's $(wc -l <"$TMP/kf/saved_cmdlines") pids"

# --- libtracefs ---------------------------------------------------------------
for _ in $(seq 600); do grep -qa '^registered id=' "$TMP/console.log" && break; sleep 0.1; done
wait_for 60 test -e "$R/events/user_events/hvt_e2e/enable" || fail "hvt_e2e did not appear"
echo 1 >"$R/events/user_events/hvt_e2e/enable" || fail "enable hvt_e2e"
wait_for 120 grep -qa '^hvt-ue-done' "$TMP/console.log" || fail "ue_writer did not finish"
# One time base (host CLOCK_MONOTONIC) for both kinds: trace, merged by
# time, has every line in time order, the markers in the order written,
# and every user event (written after the last marker) after them.
wait_for 30 bash -c "[ \$(grep -c ' hvt_e2e: ' '$R/trace') -ge $N ]" ||
	fail "$(grep -c ' hvt_e2e: ' "$R/trace") of $N user events in trace"
awk -v m="$M" -v n="$N" '
	/^#/ { next }
	{ ts = $0; sub(/: .*/, "", ts); k = split(ts, f, " "); ts = f[k] + 0
	  if (ts < last) { print "line " NR " goes back in time: " $0; exit 1 }
	  last = ts }
	/ hvt-fk [0-9]+$/ { if ($NF != nm) { print "marker " $NF ", expected " nm; exit 1 }
		nm++; lastk = ts }
	/ hvt_e2e: / { if (nm != m) { print "a user event before the last marker"; exit 1 } nu++ }
	END { if (nm != m || nu != n) { print nm " markers, " nu " user events"; exit 1 } }' \
	"$R/trace" || fail "trace is not one timeline"
echo "one timeline: $M markers in order, then $N user events, times never going back"
# Task names from the ring itself: no guest kernel line of a pid that a
# sched_switch named (on that line or before it) prints as <...>-PID.
awk '/ sched_switch: / {
		if (match($0, /prev_pid=[0-9]+/))
			named[substr($0, RSTART + 9, RLENGTH - 9)] = 1
		if (match($0, /next_pid=[0-9]+/))
			named[substr($0, RSTART + 9, RLENGTH - 9)] = 1
		ns++
	}
	/ hvt_e2e: / { next }	# the agent'"'"'s user events: its own names
	$1 ~ /^<\.\.\.>-[0-9]+$/ && (substr($1, 7) in named) {
		print "line " NR ": " $0; bad = 1; exit
	}
	END { if (!ns) print "no sched_switch"; exit bad || !ns }' \
	"$R/trace" >"$TMP/unnamed.txt" ||
	fail "trace: $(cat "$TMP/unnamed.txt")"
echo "trace: every pid a sched_switch named keeps its name"
"$TRACEFS_READ" "$MNT" "$G" --dump ftrace:print:buf \
	--unique user_events:hvt_e2e:seq --total $N >"$TMP/read.txt" 2>&1 ||
	fail "libtracefs: $(grep -v '^dump' "$TMP/read.txt" | head)"
grep -v '^dump ' "$TMP/read.txt" | sed 's/^/    /'
awk -v m="$M" '
	$1 == "dump" {
		if ($3 != "hvt-fk" || NF != 4 || $4 !~ /^[0-9]+$/) { print "bad marker: " $0; exit 1 }
		if (seen[$4]++) { print "marker " $4 " twice"; exit 1 }
		next
	}
	$1 == "cpu" && $3 == "sched:sched_switch" { sw += $4 }
	END {
		if (length(seen) != m) { print length(seen) " of " m " markers"; exit 1 }
		for (i = 0; i < m; i++) if (!(i in seen)) { print "marker " i " missing"; exit 1 }
		if (!sw) { print "no sched_switch"; exit 1 }
		print sw
	}' "$TMP/read.txt" >"$TMP/check.txt" || fail "libtracefs: $(cat "$TMP/check.txt")"
echo "libtracefs: $M markers once each with their text, $(cat "$TMP/check.txt") sched_switch, $N user events once each"
"$TRACEFS_READ" "$MNT" "$G" --dump ftrace:print:buf >"$TMP/again.txt" 2>&1 ||
	fail "libtracefs again: $(cat "$TMP/again.txt")"
grep -q 'hvt-fk' "$TMP/again.txt" && fail "a marker was read twice"
echo "read again: no marker comes back"
exit 0
