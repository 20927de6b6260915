#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Three tools of one guest kernel at once.  hvtraced reads a rig guest's
# kernel pages itself (host/hvtraced/kside.c) and serves them beside the
# guest's own CPUs to every subscriber (TEXT CPUS), so the tools of one
# guest no longer read its files each on their own:
#
# In both kernel modes -- ring (the kernel's persistent ring in guest
# RAM, which hvtraced maps read-only) and copy (the agent copies the
# kernel's pages into the area's kernel section, which has one owner,
# hvtraced) -- "hvtrace stream NAME", "hvtrace mount" (the view's
# remotes/NAME/trace) and "hvtrace record NAME -B INST" read one guest at
# once.  Once all three are set up (the recorder's host instance runs:
# what the ring held before is behind it), the guest writes N numbered
# trace_marker lines on CPU 0 (kring_gated).  Each tool has every line
# exactly once and in order (the recording as trace-cmd report prints
# it); each says its pages came through hvtraced, and its formats too
# (its agent's upload with this boot's clock, comms and module symbols,
# which the agent sent hvtraced: the guest's console, where the launcher
# finds its own dump of them, is out of the way while the tools start);
# hvtraced's log names
# the ring or section it read; no tool was refused the section (before,
# a second tool of a copy-mode guest was: the section's owner was the
# first) and none opened the RAM file.  Each guest then powers off: the
# stream reads to the end and ends; once no tool reads the ring of the
# ring-mode guest (whose RAM file the launcher removed), hvtraced lets
# its memory go.
#
# Environment: HVT_KTHREE_LINES (N, default 3000).
. "$(dirname "$0")/lib.sh"
t_require

rec_setup three
N=${HVT_KTHREE_LINES:-3000}
MNT=$T_TMP/mnt
mkdir -p "$MNT"
MNT_PID=
three_cleanup() {
	[ -n "$MNT_PID" ] && kill -TERM "$MNT_PID" 2>/dev/null
	for _ in $(seq 100); do
		grep -q " $MNT fuse" /proc/mounts || break
		sleep 0.1
	done
	"$HVTRACE" daemon stop >/dev/null 2>&1
	[ -d "$HI" ] && rmdir "$HI" 2>/dev/null
	t_cleanup
}
trap three_cleanup EXIT

# mount_view: the view of hvtraced in $MNT, in the background.
mount_view() {
	MNT_PID=$("$HVTRACE" mount "$MNT" --background 2>"$T_TMP/mount.log") ||
		fail "hvtrace mount failed: $(cat "$T_TMP/mount.log")"
	grep -q " $MNT fuse.hvtrace " /proc/mounts || fail "$MNT is not mounted"
}

umount_view() {
	kill -TERM "$MNT_PID"
	for _ in $(seq 200); do
		kill -0 "$MNT_PID" 2>/dev/null || break
		sleep 0.05
	done
	grep -q " $MNT fuse" /proc/mounts && fail "$MNT is still mounted"
	MNT_PID=
}

# check_marks WHAT FILE: FILE has hvt-mark 0..N-1 once each, in order.
check_marks() {
	local got
	got=$(grep -ao 'hvt-mark [0-9]*' "$2" | awk -v n="$N" '
		{ if ($2 != seen) { printf "line %d: hvt-mark %s where %d was due\n", NR, $2, seen; bad = 1; exit } seen++ }
		END { if (!bad && seen != n) printf "%d of %d lines\n", seen, n; else if (!bad) print "ok" }')
	[ "$got" = ok ] || fail "$1: $got"
	info "$1: $N markers once each, in order"
}

# view_marks NAME: the view's trace of NAME once it has N markers.
view_marks() {
	local r=$MNT/remotes/$1 _
	for _ in $(seq 600); do
		[ "$(grep -ac 'hvt-mark [0-9]*' "$r/trace" 2>/dev/null)" -ge "$N" ] && break
		sleep 0.2
	done
	cat "$r/trace" >"$T_TMP/$1.view" || fail "cannot read $r/trace"
}

# three MODE WHAT: a guest of kernel mode MODE (WHAT: the words the tools
# use for its kernel's pages), read by the three tools at once.
three() {
	local mode=$1 what=$2 n spid rpid _
	t_name n "$mode"
	"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
		--kernel-events ftrace:print --kernel-mode "$mode" --port go \
		--run "$(kring_gated "$(kring_marks "$N")"); echo hvt-three-done; until head -c 1 /dev/virtio-ports/go | grep -q e; do sleep 0.05; done" \
		>"$T_TMP/$n.start" 2>&1 || { cat "$T_TMP/$n.start"; fail "hvtrace guest start ($mode) failed"; }
	# No tool may take the formats from the console: hvtraced has them.
	mv "$T_TMP/$n.log" "$T_TMP/$n.log.away"
	mount_view
	timeout 300 "$HVTRACE" stream "$n" --summary >"$T_TMP/$n.out" 2>"$T_TMP/$n.err" &
	spid=$!
	T_PIDS+=("$spid")
	"$HVTRACE" record -o "$T_TMP/$n.dat" -B "$INST" "$n" >"$T_TMP/$n.rec.out" 2>"$T_TMP/$n.rec.err" &
	rpid=$!
	T_PIDS+=("$rpid")
	rec_wait_started "$rpid" "$T_TMP/$n.rec.err"
	wait_line "$T_TMP/$n.err" 'through hvtraced' 120 ||
		{ cat "$T_TMP/$n.err"; fail "$mode: the stream did not read the kernel through hvtraced"; }
	wait_line "$T_TMP/mount.log" "'$n': .*through hvtraced" 120 ||
		fail "$mode: the view did not read the kernel through hvtraced: $(cat "$T_TMP/mount.log")"
	for f in "$T_TMP/$n.err" "$T_TMP/mount.log" "$T_TMP/$n.rec.err"; do
		grep -q "'$n': the guest kernel's $what (2 CPUs) .*(formats from hvtraced: its agent's, with this boot's clock, comms and module symbols; its pages through hvtraced)" "$f" ||
			fail "$mode: $f: $(cat "$f")"
	done
	mv "$T_TMP/$n.log.away" "$T_TMP/$n.log"
	# None maps or holds the guest's files: hvtraced reads them.
	for p in $(pgrep -P "$spid") "$rpid" "$MNT_PID"; do
		if grep -q "hvtrace-$n" "/proc/$p/maps" ||
			ls -l "/proc/$p/fd" 2>/dev/null | grep -q "hvtrace-$n"; then
			fail "$mode: $(tr '\0' ' ' <"/proc/$p/cmdline") maps or holds the guest's $(grep -o "hvtrace-$n[^ ]*" "/proc/$p/maps" | head -1)"
		fi
	done
	# Every tool is set up: the guest writes.
	kring_go "$n" "$T_TMP/$n.err" "$spid" 'through hvtraced'
	wait_line "$T_TMP/$n.log" '^hvt-three-done' 300 || fail "$mode: the guest did not finish its markers"
	view_marks "$n"
	check_marks "$mode: the view" "$T_TMP/$n.view"
	# The recording: it reads what hvtraced sends, as the others do;
	# the stream, once it has them all, says they were sent.
	for _ in $(seq 600); do
		[ "$(grep -ac 'hvt-mark [0-9]*' "$T_TMP/$n.out")" -ge "$N" ] && break
		sleep 0.2
	done
	sleep 1
	kill -INT "$rpid"
	wait "$rpid" || { cat "$T_TMP/$n.rec.err"; fail "$mode: record failed"; }
	trace-cmd report -i "$T_TMP/$n.dat" >"$T_TMP/$n.report" 2>"$T_TMP/$n.report.err" ||
		fail "$mode: trace-cmd report: $(head -5 "$T_TMP/$n.report.err")"
	check_marks "$mode: the recording (trace-cmd report)" "$T_TMP/$n.report"
	# The guest powers off ("e"): the stream reads to the end and ends.
	"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" e "$T_TMP/$n.log" \
		'hvtrace: run exited with status 0' 120 || fail "$mode: the guest did not take its end"
	wait "$spid" || { cat "$T_TMP/$n.err"; fail "$mode: the stream failed or did not end with the guest"; }
	check_marks "$mode: the stream" "$T_TMP/$n.out"
	grep -qi 'owned by' "$T_TMP/$n.err" "$T_TMP/mount.log" "$T_TMP/$n.rec.err" &&
		fail "$mode: a tool was refused the section"
	umount_view
}

three ring ring
grep -q "remote 't$$-ring': the guest kernel's ring in $T_SHM/hvtrace-t$$-ring.ram: 2 CPUs" "$T_RUNDIR/hvtraced.log" ||
	fail "hvtraced did not read the ring: $(grep -a "t$$-ring" "$T_RUNDIR/hvtraced.log" | tail -5)"
# Its QEMU ended and the launcher removed the RAM file; once no tool
# reads the ring, hvtraced lets its memory go.
[ ! -e "$T_SHM/hvtrace-t$$-ring.ram" ] || fail "the launcher kept the RAM file"
wait_line "$T_RUNDIR/hvtraced.log" "remote 't$$-ring': its RAM file is gone and no tool reads its kernel ring: the ring is let go" 30 ||
	fail "hvtraced kept the ring of a guest that ended: $(grep -a "t$$-ring" "$T_RUNDIR/hvtraced.log" | tail -5)"
info "ring: hvtraced let the ended guest's RAM go once no tool read it"
three copy "pages, copied by its agent (kernel copy mode)"
grep -q "remote 't$$-copy': the guest kernel's pages, copied by its agent: 2 CPUs" "$T_RUNDIR/hvtraced.log" ||
	fail "hvtraced did not read the section: $(grep -a "t$$-copy" "$T_RUNDIR/hvtraced.log" | tail -5)"
exit 0
