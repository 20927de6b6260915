#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The guest kernel's formats through the agent, against the guest's own
# files, and its events switched through the agent (docs/guest-kernel.md,
# "Event formats").
#
# 1. Golden: a Debian 6.12 guest with an agent; hvtraced (a daemon of the
#    test, with its own formats cache) keeps what the agent sent in
#    CACHE/kformats/guests/REMOTE/RELEASE@BUILDID.  The guest, by itself (no agent
#    involved), prints on its console the sha256 of every file the host
#    must serve (the instance's events/header_page, header_event, every
#    system's enable and every event's format, its trace_clock, and the
#    top level's printk_formats), the count of them, its release and a
#    hex dump of /sys/kernel/notes.  The host computes the same list over
#    the cache folder: the digests of both lists must be equal (every
#    file, byte for byte, and no file missing or extra), the folder named
#    by the guest's release and a build id that its notes hold.
#    saved_cmdlines is not compared: the guest adds to it while it runs.
#    A read of the guest's RAM file alone (hvtrace stream RAMFILE
#    --drain, as after a crash) finds that folder by the release in the
#    banner and the build id in RAM; a read by QEMU's pid (--vm-pid, no
#    --formats) by the release and build id of the kernel's vmcoreinfo.
# 2. Events: sched:sched_waking is off at boot (--kernel-events
#    ftrace:print,sched:sched_switch); "hvtrace events enable --remote
#    NAME sched:sched_waking" makes it appear in "hvtrace stream NAME
#    --guest-kernel" (decoded with the agent's formats), "disable" stops
#    it: no sched_waking after a marker the guest wrote once the disable
#    had returned.
# 3. Without an agent (the guest kills it on request), the same enable is
#    refused with a message that says only hvtrace-agent can do it.
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
T_RUNDIR=$T_TMP/run
CACHE=$T_TMP/cache
export HVTRACED_SOCKET=$T_TMP/hvtraced.sock HVT_RUNDIR=$T_RUNDIR HVT_SHM_DIR=$T_SHM
trap '"$HVTRACE" daemon stop >/dev/null 2>&1; t_cleanup' EXIT
# The daemon of the test, with a formats cache of its own (only hvtraced
# gets it: the launcher finds the guest kernel in the usual cache).
# (hvtraced detaches once it listens, as 'hvtrace guest start' starts it)
HVT_CACHE=$CACHE "$T_OBJTREE/bin/hvtraced" --socket "$HVTRACED_SOCKET" \
	--run-dir "$T_RUNDIR" --shm-dir "$T_SHM" >"$T_TMP/daemon.out" 2>&1 ||
	fail "hvtraced failed: $(cat "$T_TMP/daemon.out")"

t_name n kfg
# The guest's own account of its files, then a marker every 0.3 s
# ("hvt-tick N" in the ring, "hvt-tick-N" on the console), and on the
# byte 'k' on port "go" it kills its agent (its answer is spelled apart in
# the command, which the console shows, so only the answer matches).
run='T=/sys/kernel/tracing; I=$T/instances/hvt;'
run+=' { cd $I && sha256sum events/header_page events/header_event events/*/enable events/*/*/format trace_clock; cd $T && sha256sum printk_formats; } >/tmp/sums;'
run+=' echo "hvt-sums $(wc -l </tmp/sums) $(LC_ALL=C sort /tmp/sums | sha256sum | cut -c1-64)";'
run+=' for c in header_ /enable /format trace_clock printk_formats; do echo "hvt-part $c $(grep -c -- $c /tmp/sums) $(grep -- $c /tmp/sums | LC_ALL=C sort | sha256sum | cut -c1-64)"; done;'
run+=' echo "hvt-release $(uname -r)";'
run+=' echo "hvt-notes $(od -An -tx1 -v /sys/kernel/notes | tr -d " \n")";'
run+=' ( until head -c 1 /dev/virtio-ports/go | grep -q k; do sleep 0.1; done; for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = hvtrace-agent ] && kill ${p#/proc/}; done; echo hvt-agent-kill""ed ) &'
run+=' i=0; while :; do echo "hvt-tick $i" >$I/trace_marker; echo "hvt-tick-$i"; i=$((i + 1)); sleep 0.3; done'
# --accel tcg1: sched_waking is enabled and disabled while the guest runs
# (hvtrace.1, guest).
"$HVTRACE" guest start "$n" --initrd "$initrd" --accel tcg1 --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print,sched:sched_switch --port go --run "$run" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }

# 1. Golden.
# The first tick comes after the notes line: that one (1.4 KB on a TCG
# serial console) is whole only once the next line has begun.
wait_line "$T_TMP/$n.log" '^hvt-tick-' 300 || fail "the guest did not print its sums"
tr -d '\r' <"$T_TMP/$n.log" >"$T_TMP/console.txt"
read -r _ gcount gsum < <(grep -a '^hvt-sums ' "$T_TMP/console.txt" | tail -n 1)
rel=$(sed -n 's/^hvt-release //p' "$T_TMP/console.txt" | tail -n 1)
notes=$(sed -n 's/^hvt-notes //p' "$T_TMP/console.txt" | tail -n 1)
[ -n "$gsum" ] && [ "$gcount" -gt 100 ] && [ -n "$rel" ] && [ -n "$notes" ] ||
	fail "the guest's account is incomplete: sums '$gcount $gsum', release '$rel'"
dir=''
for _ in $(seq 1200); do
	dir=$(ls -d "$CACHE/kformats/guests/"*"/$rel@"* 2>/dev/null | head -n 1)
	[ -n "$dir" ] && [ -f "$dir/build_id" ] && break
	sleep 0.1
done
[ -n "$dir" ] && [ -f "$dir/build_id" ] ||
	fail "hvtraced kept no formats of $rel in $CACHE/kformats/guests: $(ls -aR "$CACHE/kformats" 2>&1 | head -n 20)"
bid=$(cat "$dir/build_id")
[ "$dir" = "$CACHE/kformats/guests/$(basename "$(dirname "$dir")")/$rel@$bid" ] ||
	fail "$dir is not named guests/REMOTE/$rel@$bid"
[ ${#bid} -ge 16 ] && [[ $notes == *"$bid"* ]] ||
	fail "build id '$bid' is not in the guest's /sys/kernel/notes ($notes)"
(cd "$dir" && sha256sum events/header_page events/header_event events/*/enable \
	events/*/*/format trace_clock printk_formats) >"$T_TMP/host.sums" 2>"$T_TMP/host.sums.err" ||
	fail "the cache folder lacks files: $(cat "$T_TMP/host.sums.err")"
hcount=$(wc -l <"$T_TMP/host.sums")
hsum=$(LC_ALL=C sort "$T_TMP/host.sums" | sha256sum | cut -c1-64)
if [ "$hcount" != "$gcount" ] || [ "$hsum" != "$gsum" ]; then
	# Which kind of file differs: the guest printed a count and a digest
	# for each (header_*, enable, format, trace_clock, printk_formats).
	parts=''
	while read -r _ c gc gd; do
		hc=$(grep -c -- "$c" "$T_TMP/host.sums")
		hd=$(grep -- "$c" "$T_TMP/host.sums" | LC_ALL=C sort | sha256sum | cut -c1-64)
		[ "$hc $hd" = "$gc $gd" ] || parts+=" '$c' (guest $gc files, cache $hc)"
	done < <(grep -a '^hvt-part ' "$T_TMP/console.txt")
	fail "the cache has $hcount files, the guest $gcount; digest of the sums $hsum, guest $gsum; differing:${parts:- none found}"
fi
info "$gcount files of kernel $rel (build id $bid) served byte for byte as the guest has them"
info "hvtraced: $(sed -n 's/.*guest kernel formats received: //p' "$T_RUNDIR/hvtraced.log")"

# The same folder for a read of the RAM file alone (as after the guest
# died): found by the release in the guest's banner and confirmed by the
# build id bytes in guest RAM.
HVT_CACHE=$CACHE "$HVTRACE" stream "$T_SHM/hvtrace-$n.ram" --drain \
	>"$T_TMP/pm.txt" 2>"$T_TMP/pm.err" || fail "stream RAMFILE --drain: $(cat "$T_TMP/pm.err")"
grep -q "the guest kernel's formats from $dir (release $rel, build id $bid found in guest RAM)" "$T_TMP/pm.err" ||
	fail "stream RAMFILE did not pick $dir: $(cat "$T_TMP/pm.err")"
grep -Eq ': hvt-tick [0-9]+$' "$T_TMP/pm.txt" || fail "stream RAMFILE decoded no marker"
info "a read of the RAM file alone decodes with $dir"
# And for a read by QEMU's pid, with no scan of guest RAM: the release
# and build id of the guest kernel's vmcoreinfo name the folder.
qpid=$(status_get "$n" qemu_pid)
[ -n "$qpid" ] || fail "no QEMU pid for $n"
HVT_CACHE=$CACHE "$HVTRACE" stream --vm-pid "$qpid" --drain \
	>"$T_TMP/vp.txt" 2>"$T_TMP/vp.err" || fail "stream --vm-pid --drain: $(cat "$T_TMP/vp.err")"
grep -q "the guest kernel's formats from $dir (release $rel, build id $bid found in the guest kernel's vmcoreinfo)" "$T_TMP/vp.err" ||
	fail "stream --vm-pid did not pick $dir: $(cat "$T_TMP/vp.err")"
grep -Eq ': hvt-tick [0-9]+$' "$T_TMP/vp.txt" || fail "stream --vm-pid decoded no marker"
info "a read by QEMU's pid decodes with $dir"

# 2. sched:sched_waking through the agent.
last_tick() { tr -d '\r' <"$T_TMP/$n.log" | sed -n 's/^hvt-tick-\([0-9]*\)$/\1/p' | tail -n 1; }
drain() {	# drain FILE
	"$HVTRACE" stream "$n" --guest-kernel --drain >"$1" 2>"$1.err" ||
		fail "stream --guest-kernel failed: $(cat "$1.err")"
}
drain "$T_TMP/s0.txt"
grep -Eq "formats from (hvtraced: )?its agent" "$T_TMP/s0.txt.err" ||
	fail "stream --guest-kernel did not use the agent's formats: $(cat "$T_TMP/s0.txt.err")"
grep -q ' sched_waking: ' "$T_TMP/s0.txt" && fail "sched_waking recorded before it was enabled"
"$HVTRACE" events enable --remote "$n" sched:sched_waking >"$T_TMP/en.out" 2>&1 ||
	fail "events enable sched:sched_waking: $(cat "$T_TMP/en.out")"
k=$(last_tick)
wait_line "$T_TMP/$n.log" "^hvt-tick-$((k + 5))" 60 || fail "the guest stopped ticking"
drain "$T_TMP/s1.txt"
w1=$(grep -c ' sched_waking: ' "$T_TMP/s1.txt")
[ "$w1" -gt 0 ] || fail "no sched_waking in the stream after enable"
"$HVTRACE" events disable --remote "$n" sched:sched_waking >"$T_TMP/dis.out" 2>&1 ||
	fail "events disable sched:sched_waking: $(cat "$T_TMP/dis.out")"
k=$(last_tick)
after=$((k + 3))
wait_line "$T_TMP/$n.log" "^hvt-tick-$((after + 5))" 60 || fail "the guest stopped ticking"
drain "$T_TMP/s2.txt"
verdict=$(awk -v m="hvt-tick $after" '
	function t(line,   a, n) { sub(/: .*/, "", line); n = split(line, a, " "); return a[n] + 0 }
	index($0, ": " m) && $0 ~ (m "$") { mt = t($0) }
	/ sched_waking: / { w[++nw] = t($0) }
	END {
		if (mt == "") { print "no marker " m; exit }
		for (i = 1; i <= nw; i++) if (w[i] > mt) { printf "sched_waking at %.6f after %s at %.6f\n", w[i], m, mt; exit }
		print "ok"
	}' "$T_TMP/s2.txt")
[ "$verdict" = ok ] || fail "after disable: $verdict"
info "sched_waking: $w1 events while enabled, none after the disable"

# 3. Without an agent.
"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" k "$T_TMP/$n.log" \
	hvt-agent-killed 60 || fail "the guest did not kill its agent"
# (the agent says goodbye: the guest's remote waits for another one)
for _ in $(seq 300); do
	"$HVTRACE" list 2>/dev/null | grep -Eq "^$n .* ready " || break
	sleep 0.1
done
"$HVTRACE" events enable --remote "$n" sched:sched_waking >"$T_TMP/noag.out" 2>&1 &&
	fail "events enable succeeded without an agent: $(cat "$T_TMP/noag.out")"
grep -q "the guest kernel's events can only be changed through hvtrace-agent" "$T_TMP/noag.out" ||
	fail "without an agent: $(cat "$T_TMP/noag.out")"
info "without an agent: $(head -n 1 "$T_TMP/noag.out")"
echo "PASS"
