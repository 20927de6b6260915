#!/bin/bash
# SPDX-License-Identifier: MIT
#
# "hvtrace record -o F.dat -B INST --pair NAME" of a rig guest started with
# --kernel-events sched,ftrace:print (docs/tracedat.md, "Host and guest
# files"): the host/guest pair trace-cmd record -A writes.  F.dat holds
# the host kernel's instance INST and the guest's user events; F-NAME.dat
# the guest kernel's ring on the guest's own clock, tied to F.dat by trace
# ids, with a TIME_SHIFT of hvtraced's clock model; F.dat's GUEST option
# maps each vCPU to its QEMU thread ("CPU N/TCG").
#
# M rounds, one letter each: the host writes "hvt-host-before L" to INST's
# trace_marker, sends L to the guest through a virtio-serial port, waits
# for the guest's "hvt-round L done" on its console (written after the
# guest's "hvt-mark L" to its own trace_marker and one hvt_e2e user event
# of a new ue_writer), then writes "hvt-host-after L".  Checked:
#   - trace-cmd report -i F.dat -i F-NAME.dat (Debian's 3.1.6): every guest
#     marker once, each between the host's markers of its round and before
#     its round's user event (F.dat's buffer NAME, converted by the
#     recorder: the two ways a guest time reaches the host's agree), the
#     merged time line never going back; hvtrace report -i -i prints the
#     same, and the guest file alone as trace-cmd does (TIME_SHIFT);
#   - the options: TRACEID in both files, the GUEST option's trace id the
#     guest file's, its vCPU threads the QEMU threads named "CPU N/TCG",
#     TIME_SHIFT with INTERPOLATE, a sample count for every guest CPU;
#   - the guest file alone: the guest's own function names (its kallsyms:
#     "tracing_mark_write", never an address) and task names;
#   - libkshark (KernelShark's library, through tests/tracedat/ks_pair.py)
#     opens F.dat with F-NAME.dat appended as 'kernelshark F.dat -a
#     F-NAME.dat' does: every event of each file loaded, and the host/guest
#     mapping of its KVM combo plots (name, vCPUs, threads) found;
#   - --pair refused with --no-guest-kernel and without remotes;
#   - a pair recording killed with SIGKILL: its private formats folder
#     is removed by the next read of a guest kernel; both files
#     recovered, still a pair (GUEST names the guest file, TIME_SHIFT
#     kept), the guest's events among the host's on one time line.
#
# Environment: HVT_RGP_ROUNDS (M, 1..26, default 12).
. "$(dirname "$0")/lib.sh"
t_require

rec_setup rgp
M=${HVT_RGP_ROUNDS:-12}
[ "$M" -ge 1 ] && [ "$M" -le 26 ] || fail "HVT_RGP_ROUNDS=$M: 1..26"
LETTERS=$(echo {a..z} | cut -d' ' -f1-"$M")

# Usage errors first (no guest needed).
"$HVTRACE" record -o "$T_TMP/x.dat" --pair -k >"$T_TMP/u1.out" 2>&1
[ $? -eq 2 ] || fail "--pair without remotes was not a usage error: $(cat "$T_TMP/u1.out")"
grep -q -- "--pair goes with remote names" "$T_TMP/u1.out" || fail "--pair without remotes: $(cat "$T_TMP/u1.out")"

t_name n pair
# Each round waits for its own letter (a letter repeated by port-send is
# skipped by the next round's wait).
"$HVTRACE" guest start "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events sched,ftrace:print --port go \
	--run "ue_writer --hold & for l in $LETTERS; do until head -c 1 /dev/virtio-ports/go | grep -q \$l; do :; done; echo \"hvt-mark \$l\" >$T/trace_marker; ue_writer --count 1 --wait-enable 60000 >/dev/null || echo \"hvt-ue-failed \$l\"; echo \"hvt-round \$l done\"; done; while :; do echo hvt-idle >$T/trace_marker; sleep 0.01; done" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
qpid=$(cat "$T_RUNDIR/$n/qemu.pid") || fail "no qemu.pid"
wait_line "$T_TMP/$n.log" '^registered id=' 120 || fail "ue_writer did not register hvt_e2e"
"$HVTRACE" events enable --remote "$n" hvt_e2e >/dev/null || fail "cannot enable hvt_e2e"

"$HVTRACE" record -o "$T_TMP/x.dat" --pair --no-guest-kernel "$n" >"$T_TMP/u2.out" 2>&1
[ $? -eq 2 ] || fail "--pair --no-guest-kernel was not a usage error: $(cat "$T_TMP/u2.out")"

"$HVTRACE" record -o "$T_TMP/t.dat" -B "$INST" --pair "$n" >"$T_TMP/rec.out" 2>"$T_TMP/rec.err" &
rec=$!
T_PIDS+=("$rec")
rec_wait_started "$rec" "$T_TMP/rec.err"
for l in $LETTERS; do
	echo "hvt-host-before $l" >"$HI/trace_marker" || fail "cannot write the host's marker"
	"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" "$l" "$T_TMP/$n.log" \
		"hvt-round $l done" 120 || fail "the guest did not do round $l"
	echo "hvt-host-after $l" >"$HI/trace_marker" || fail "cannot write the host's marker"
done
grep -qaE '^hvt-ue-failed [a-z]' "$T_TMP/$n.log" && fail "a ue_writer round failed"
kill -INT "$rec"
wait "$rec" || { cat "$T_TMP/rec.err"; fail "record failed"; }
cat "$T_TMP/rec.err"
GF=$T_TMP/t-$n.dat
[ -s "$GF" ] || fail "no guest file $GF"
grep -q "^hvtrace record: '$n': guest file $GF, paired with $T_TMP/t.dat" "$T_TMP/rec.err" ||
	fail "record did not name the guest file"
grep -q "the guest kernel's ring (2 CPUs) in a guest file of its own, on the guest's clock" "$T_TMP/rec.err" ||
	fail "record did not say where the guest kernel's ring goes"

# The options that tie the pair.
trace-cmd dump --options "$T_TMP/t.dat" >"$T_TMP/h.opt" 2>&1 || fail "trace-cmd dump --options (host) failed"
trace-cmd dump --options "$GF" >"$T_TMP/g.opt" 2>&1 || fail "trace-cmd dump --options (guest) failed"
hid=$(awk '/Option TRACEID/ { getline; print; exit }' "$T_TMP/h.opt")
gid=$(awk '/Option TRACEID/ { getline; print; exit }' "$T_TMP/g.opt")
[ -n "$hid" ] && [ -n "$gid" ] && [ "$hid" != "$gid" ] || fail "trace ids: host '$hid', guest '$gid'"
[ "$gid" != 0x0 ] && [ "$hid" != 0x0 ] || fail "a trace id is 0"
awk '/Option GUEST/ { on = 1; next } on && /Option / { exit } on' "$T_TMP/h.opt" >"$T_TMP/guest-opt.txt"
grep -q "^$n \[Guest name\]" "$T_TMP/guest-opt.txt" || fail "no GUEST option of $n: $(head -20 "$T_TMP/h.opt")"
grep -q "^$gid \[trace id\]" "$T_TMP/guest-opt.txt" || fail "the GUEST option's trace id is not the guest file's ($gid): $(cat "$T_TMP/guest-opt.txt")"
grep -q "^2 \[Guest CPUs\]" "$T_TMP/guest-opt.txt" || fail "the GUEST option has not 2 vCPUs: $(cat "$T_TMP/guest-opt.txt")"
for v in 0 1; do
	tid=$(sed -n "s/^ *$v \([0-9-]*\) \[guest cpu, host pid\]/\1/p" "$T_TMP/guest-opt.txt")
	[ -n "$tid" ] && [ -r "/proc/$qpid/task/$tid/comm" ] || fail "vCPU $v: host thread '$tid' is not a thread of QEMU $qpid"
	[ "$(cat "/proc/$qpid/task/$tid/comm")" = "CPU $v/TCG" ] ||
		fail "vCPU $v: thread $tid is '$(cat "/proc/$qpid/task/$tid/comm")', not 'CPU $v/TCG'"
done
grep -q "^$hid \[peer's trace id\]" "$T_TMP/g.opt" || fail "the guest's TIME_SHIFT does not name the host's trace id: $(grep -A3 TimeShift "$T_TMP/g.opt")"
grep -q "^0x1 \[peer's protocol flags\]" "$T_TMP/g.opt" || fail "TIME_SHIFT is not INTERPOLATE"
ns=$(grep -c "samples count for CPU" "$T_TMP/g.opt")
[ "$ns" -eq 2 ] || fail "TIME_SHIFT has $ns CPUs' sample counts, not 2"
samples=$(sed -n 's/^\([0-9]*\) \[samples count for CPU 0\]/\1/p' "$T_TMP/g.opt")
[ "${samples:-0}" -ge 2 ] || fail "TIME_SHIFT has ${samples:-no} samples"
info "trace ids $hid (host) and $gid (guest); GUEST: $n, vCPU threads 'CPU 0/TCG' 'CPU 1/TCG' of QEMU $qpid; TIME_SHIFT: $samples samples per CPU"

# One time line: each guest marker once, between the host's of its round.
trace-cmd report -i "$T_TMP/t.dat" -i "$GF" >"$T_TMP/report.txt" 2>"$T_TMP/report.err" ||
	{ cat "$T_TMP/report.err"; fail "trace-cmd report -i -i failed"; }
head -4 "$T_TMP/report.txt"
verdict=$(awk -v letters="$LETTERS" -v g="t-$n.dat:" -v u="$n:" '
	BEGIN { n = split(letters, L, " "); k = 1; want = "before" }
	{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i + 0; break }
	  if (t < last) { printf "time goes back at: %s\n", $0; bad = 1; exit }
	  last = t }
	/hvt-host-before [a-z]$/ || /hvt-mark [a-z]$/ || /hvt-host-after [a-z]$/ || / hvt_e2e: / {
		if ($0 ~ / hvt_e2e: /) { what = "ue"; l = L[k] } else { what = $(NF - 1); l = $NF }
		if (what == "hvt-mark" && $1 != g) { print "a guest marker outside the guest file: " $0; bad = 1; exit }
		if (what == "ue" && $1 != u) { print "a user event outside buffer " u " " $0; bad = 1; exit }
		if (what ~ /^hvt-host/ && $1 != "t.dat:") { print "a host marker outside the host file: " $0; bad = 1; exit }
		if (what == "hvt-host-before") w = "before"; else if (what == "hvt-mark") w = "mark"; else if (what == "ue") w = "ue"; else w = "after"
		if (l != L[k] || w != want) { printf "%s %s where %s %s was due\n", w, l, want, L[k]; bad = 1; exit }
		if (w == "before") want = "mark"; else if (w == "mark") { want = "ue"; marks++ } else if (w == "ue") { want = "after"; ues++ } else { want = "before"; k++ }
		if (w == "mark" && $0 !~ /tracing_mark_write: hvt-mark/) { print "the guest marker is not tracing_mark_write: " $0; bad = 1; exit }
	}
	END { if (!bad) { if (k != n + 1) printf "%d rounds of %d\n", k - 1, n; else print "ok " marks " " ues } }' "$T_TMP/report.txt")
[ "$verdict" = "ok $M $M" ] || fail "trace-cmd report -i t.dat -i t-$n.dat: $verdict"
info "$M guest markers (guest file) and $M user events (host file), each once, in order between the host's markers of their round in trace-cmd's merged time line"
"$HVTRACE" report -i "$T_TMP/t.dat" -i "$GF" >"$T_TMP/hv.txt" 2>"$T_TMP/hv.err" || { cat "$T_TMP/hv.err"; fail "hvtrace report -i -i failed"; }
cmp -s "$T_TMP/report.txt" "$T_TMP/hv.txt" ||
	fail "hvtrace report -i -i differs from trace-cmd's: $(diff "$T_TMP/report.txt" "$T_TMP/hv.txt" | head -5)"
trace-cmd report "$GF" >"$T_TMP/g.txt" 2>/dev/null || fail "trace-cmd report of the guest file failed"
"$HVTRACE" report "$GF" >"$T_TMP/hvg.txt" 2>"$T_TMP/hvg.err" || { cat "$T_TMP/hvg.err"; fail "hvtrace report of the guest file failed"; }
cmp -s "$T_TMP/g.txt" "$T_TMP/hvg.txt" ||
	fail "hvtrace report of the guest file differs from trace-cmd's: $(diff "$T_TMP/g.txt" "$T_TMP/hvg.txt" | head -5)"
info "hvtrace report prints the pair, and the guest file alone, as trace-cmd does"
grep -q "^ *t-$n.dat: .* sched_switch: " "$T_TMP/report.txt" || fail "no guest sched_switch in the pair's report"
unnamed=$(grep -c "^ *t-$n.dat: *<\.\.\.>-" "$T_TMP/report.txt")
[ "$unnamed" -eq 0 ] || fail "$unnamed guest events of unnamed tasks: $(grep -m3 "^ *t-$n.dat: *<\.\.\.>-" "$T_TMP/report.txt")"
grep -E "^ *t-$n.dat: .*print: +0x[0-9a-f]+:" "$T_TMP/report.txt" | head -2 | grep . &&
	fail "guest function names print as addresses"
info "every guest task named, its print events under the guest's own function names"

# KernelShark's library: both files as streams, every event, the pair
# mapped (tests/tracedat/ks_pair.py; skipped without libkshark).
hev=$(grep -c "^ *t.dat: .*: " "$T_TMP/report.txt")
gev=$(grep -c "^ *t-$n.dat: .*: " "$T_TMP/report.txt")
python3 "$T_SRCTREE/tests/tracedat/ks_pair.py" "$T_TMP/t.dat" "$GF" >"$T_TMP/ks.txt" 2>&1
case $? in
0)
	cat "$T_TMP/ks.txt"
	read -r _ _ kh _ < <(grep "^stream $T_TMP/t.dat " "$T_TMP/ks.txt")
	read -r _ _ kg _ < <(grep "^stream $GF " "$T_TMP/ks.txt")
	[ "$kh" = "$hev" ] && [ "$kg" = "$gev" ] ||
		fail "libkshark loaded $kh host and $kg guest events; trace-cmd reports $hev and $gev"
	read -r _ mname msd mhsd mv m0 m1 < <(grep "^map " "$T_TMP/ks.txt")
	[ "$mname" = "$n" ] && [ "$msd" = 1 ] && [ "$mhsd" = 0 ] && [ "$mv" = 2 ] ||
		fail "libkshark's host/guest mapping: $(grep "^map" "$T_TMP/ks.txt" || echo none)"
	[ "$m0 $m1" = "$(sed -n 's/^ *[01] \([0-9-]*\) \[guest cpu, host pid\]/\1/p' "$T_TMP/guest-opt.txt" | tr '\n' ' ' | sed 's/ $//')" ] ||
		fail "libkshark maps the vCPUs to threads $m0 $m1"
	info "libkshark: $hev host and $gev guest events, guest '$n' of stream 1 on host stream 0, vCPU threads $m0 $m1"
	;;
77) info "KernelShark's library not checked: $(cat "$T_TMP/ks.txt")" ;;
*) cat "$T_TMP/ks.txt"; fail "libkshark did not open the pair" ;;
esac

# A pair recording killed outright: both files recovered from their
# journals, still a pair (the guest file's TIME_SHIFT from its last
# snapshot), the guest's events on the host's time line.  (After its
# rounds the guest writes a marker every 10 ms: a journal keeps full
# pages only, and an idle guest fills none in 3 s.)
# (The host's sched_switch fills its pages: a partly filled last page is
# not in the journal.)
mkdir "$T_TMP/tmp"
TMPDIR=$T_TMP/tmp "$HVTRACE" record -o "$T_TMP/k.dat" -B "$INST" -e sched:sched_switch --pair "$n" >/dev/null 2>"$T_TMP/k.err" &
rec=$!
T_PIDS+=("$rec")
rec_wait_started "$rec" "$T_TMP/k.err"
sleep 3
kill -KILL "$rec"
wait "$rec" 2>/dev/null
# The killed recorder's private formats folder stays behind; the next
# read of a guest kernel removes it (its process is gone).
left=$(ls -d "$T_TMP/tmp/hvtrace-kformats.$rec".* 2>/dev/null)
[ -n "$left" ] || fail "no formats folder of the killed recorder in \$TMPDIR ($(ls "$T_TMP/tmp"))"
TMPDIR=$T_TMP/tmp "$HVTRACE" stream "$n" --guest-kernel --drain >/dev/null 2>"$T_TMP/sweep.err" ||
	{ cat "$T_TMP/sweep.err"; fail "stream $n --guest-kernel --drain failed"; }
[ ! -e "$left" ] || fail "the killed recorder's formats folder $left is still there after the next read"
[ -z "$(ls -A "$T_TMP/tmp")" ] || fail "left in \$TMPDIR after the stream ended: $(ls -A "$T_TMP/tmp")"
info "the killed recorder's formats folder was removed by the next read"
rmdir "$HI" 2>/dev/null
for f in k.dat "k-$n.dat"; do
	[ -e "$T_TMP/$f.unfinished" ] || fail "no $f.unfinished after SIGKILL"
	"$HVTRACE" record --recover "$T_TMP/$f" >"$T_TMP/recover.out" 2>&1 ||
		{ cat "$T_TMP/recover.out"; fail "record --recover $f failed"; }
done
trace-cmd dump --options "$T_TMP/k.dat" >"$T_TMP/kh.opt" 2>&1 || fail "trace-cmd dump --options (recovered host) failed"
trace-cmd dump --options "$T_TMP/k-$n.dat" >"$T_TMP/kg.opt" 2>&1 || fail "trace-cmd dump --options (recovered guest) failed"
kgid=$(awk '/Option TRACEID/ { getline; print; exit }' "$T_TMP/kg.opt")
awk '/Option GUEST/ { on = 1; next } on && /Option / { exit } on' "$T_TMP/kh.opt" | grep -q "^$kgid \[trace id\]" ||
	fail "the recovered host file's GUEST option does not name the recovered guest file ($kgid)"
ks=$(sed -n 's/^\([0-9]*\) \[samples count for CPU 0\]/\1/p' "$T_TMP/kg.opt")
[ "${ks:-0}" -ge 2 ] || fail "the recovered guest file's TIME_SHIFT has ${ks:-no} samples"
trace-cmd report -i "$T_TMP/k.dat" -i "$T_TMP/k-$n.dat" >"$T_TMP/kreport.txt" 2>/dev/null ||
	fail "trace-cmd report of the recovered pair failed"
verdict=$(awk -v g="k-$n.dat:" '
	{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i + 0; break } }
	!t { next }
	$1 == g { n++; if (!glo || t < glo) glo = t; if (t > ghi) ghi = t; next }
	{ h++; if (!hlo || t < hlo) hlo = t; if (t > hhi) hhi = t }
	END { if (!h) print "no host events"
	      else if (!n) print "no guest events"
	      else if (glo < hlo - 3 || ghi > hhi + 3) printf "guest events from %.6f to %.6f, host events from %.6f to %.6f\n", glo, ghi, hlo, hhi
	      else print "ok " n " " h }' "$T_TMP/kreport.txt")
case $verdict in
ok*) info "killed with SIGKILL: both files recovered, still a pair ($ks TIME_SHIFT samples), guest and host events ($(echo "${verdict#ok }" | tr ' ' '/')) on one time line" ;;
*) fail "the recovered pair: $verdict" ;;
esac
echo "PASS"
