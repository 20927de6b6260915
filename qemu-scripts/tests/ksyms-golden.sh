#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest kernel's function names come from the symbol table in that
# guest's own RAM (docs/guest-kernel.md, "Function names"), on the cached
# Debian 6.12 guest kernel, one boot of a rig guest with its agent
# (--kernel-events ftrace:print --keep-ram): the guest prints its own
# /proc/kallsyms lines of _text and tracing_mark_write on its console,
# then writes M numbered lines to its instance's trace_marker
# (ftrace:print, "%ps: %s" of the writer's ip).
#
#   running      "hvtrace stream NAME --drain" (through hvtraced, the
#                kernel ring beside the agent's user events; hvtraced's
#                ring is what "stream NAME --guest-kernel" reads alone)
#                prints every line as "tracing_mark_write: hvt-mark I",
#                and nothing about names on stderr;
#   post-mortem  after "hvtrace guest stop", "hvtrace stream RAMFILE
#                --drain" of the kept RAM file the same;
#                "hvtrace record --guest-kernel" writes the table as the
#                trace.dat's KALLSYMS section: its tracing_mark_write
#                line is the guest's own (this boot's KASLR address, as
#                the guest printed it), its _text too, and trace-cmd
#                report names all M lines.
#
#   attached     "hvtrace daemon attach --ram RAMFILE" makes the kept
#                file a remote of hvtraced: "hvtrace stream ram-NAME"
#                names every line and ends at the ring's end; /dev/null
#                and a file without a ring are refused, saying why.
#
# kmem:kfree, on for a moment, prints "call_site=%pS": the call sites
# of "hvtrace stream NAME" are those of the guest's own
# trace file, in the kernel's form NAME+0xOFF/0xSIZE.  The guest runs
# with --accel tcg1: enabling kfree at run time patches the kernel's code
# (a static key), which multi-threaded TCG can race with on the other
# vCPU (docs/guest-kernel.md; a CI run saw that oops panic this guest).
#
# Environment: HVT_KSYMS_LINES (M, default 200).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
command -v trace-cmd >/dev/null || { echo "SKIP: trace-cmd is not installed (make deps)"; exit 77; }
M=${HVT_KSYMS_LINES:-200}
initrd=$T_OBJTREE/qemu-scripts/guest.cpio.gz
[ -f "$initrd" ] || fail "$initrd is missing; build it with 'make guest-image'"
t_own_daemon

# named FILE: all M lines, in order, each named tracing_mark_write.
named() {
	kring_check_marks "$1" "$M"
	local n
	n=$(grep -cE ' tracing_mark_write: hvt-mark [0-9]+$' "$1")
	[ "$n" = "$M" ] ||
		fail "$1: $n of $M lines named tracing_mark_write: $(grep -m2 'hvt-mark' "$1")"
}

t_name n ksyms
# kmem:kfree ("call_site=%pS") on for a moment in the ring's instance;
# then the guest prints the call sites as its own trace file has them.
kfree="t=/sys/kernel/tracing/instances/hvt; echo 1 >\$t/events/kmem/kfree/enable; ls -R /sys/kernel/tracing/events/kmem >/dev/null; echo 0 >\$t/events/kmem/kfree/enable; sed -n 's/.* kfree: *\\(call_site=[^ ]*\\) .*/hvt-kfree \\1/p' \$t/trace"
"$HVTRACE" guest start "$n" --initrd "$initrd" --accel tcg1 --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print --keep-ram \
	--run "grep -E ' (_text|tracing_mark_write)\$' /proc/kallsyms | sed 's/^/hvt-ksym /'; $(kring_marks "$M"); $kfree; echo hvt-marks-done; sleep 600" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
wait_line "$T_TMP/$n.log" '^hvt-marks-done' 300 || fail "the guest did not finish writing"

"$HVTRACE" stream "$n" --drain >"$T_TMP/one.txt" 2>"$T_TMP/one.err" ||
	{ cat "$T_TMP/one.err"; fail "stream NAME failed"; }
cat "$T_TMP/one.err"
grep -q "the guest kernel's ring (2 CPUs) beside its user events" "$T_TMP/one.err" ||
	fail "stream NAME did not merge the guest kernel's ring"
! grep -q 'function names' "$T_TMP/one.err" || fail "stream $n could not name functions"
named "$T_TMP/one.txt"
info "stream $n (through hvtraced) names all $M lines tracing_mark_write"
# %pS as the kernel prints it: NAME+0xOFF/0xSIZE, the same call sites
# as the guest's own trace file.
tr -d '\r' <"$T_TMP/$n.log" | sed -n 's/^hvt-kfree //p' | sort >"$T_TMP/kfree.want"
sed -n 's/.* kfree: *\(call_site=[^ ]*\) .*/\1/p' "$T_TMP/one.txt" | sort >"$T_TMP/kfree.got"
[ -s "$T_TMP/kfree.want" ] || fail "the guest printed no kfree call sites"
grep -q '^call_site=[A-Za-z0-9_.]*+0x[0-9a-f]*/0x[0-9a-f]*$' "$T_TMP/kfree.want" ||
	fail "the guest's own kfree lines are not in the form NAME+0xOFF/0xSIZE: $(head -3 "$T_TMP/kfree.want")"
cmp -s "$T_TMP/kfree.want" "$T_TMP/kfree.got" ||
	fail "kfree's call sites differ from the guest's own trace file: $(diff "$T_TMP/kfree.want" "$T_TMP/kfree.got" | head -8)"
info "kmem:kfree: all $(wc -l <"$T_TMP/kfree.want") call sites as the guest kernel prints them ($(head -1 "$T_TMP/kfree.want"))"
"$HVTRACE" guest stop "$n" >/dev/null 2>&1 || fail "guest stop failed"

ram=$T_SHM/hvtrace-$n.ram
[ -f "$ram" ] || fail "no kept RAM file $ram"
"$G" kformats --log "$T_TMP/$n.log" "$T_TMP/fmt" >/dev/null || fail "kformats failed"
want_tmw=$(tr -d '\r' <"$T_TMP/$n.log" | sed -n 's/^hvt-ksym \([0-9a-f]* [tT] tracing_mark_write\)$/\1/p' | head -1)
want_text=$(tr -d '\r' <"$T_TMP/$n.log" | sed -n 's/^hvt-ksym \([0-9a-f]* [tT] _text\)$/\1/p' | head -1)
[ -n "$want_tmw" ] && [ -n "$want_text" ] ||
	fail "the guest did not print its kallsyms lines: $(grep -a hvt-ksym "$T_TMP/$n.log")"
case $want_tmw in 0000000000000000*) fail "the guest's /proc/kallsyms hides addresses" ;; esac

"$HVTRACE" stream "$ram" --drain --formats "$T_TMP/fmt" \
	>"$T_TMP/pm.txt" 2>"$T_TMP/pm.err" || { cat "$T_TMP/pm.err"; fail "post-mortem stream failed"; }
! grep -q 'function names' "$T_TMP/pm.err" || fail "post-mortem stream: $(cat "$T_TMP/pm.err")"
named "$T_TMP/pm.txt"
info "post-mortem: stream of the kept RAM file names all $M lines"

# The kept RAM file attached as a remote (hvtrace daemon attach --ram):
# hvtraced reads its ring, with the guest's symbols from it; stream NAME
# names all M lines and ends at the ring's end.
"$HVTRACE" daemon attach --ram "$ram" --formats "$T_TMP/fmt" >"$T_TMP/att.out" 2>&1 ||
	fail "daemon attach --ram failed: $(cat "$T_TMP/att.out")"
grep -q "attached 'ram-$n' (the guest kernel ring in file $ram: " "$T_TMP/att.out" ||
	fail "attach --ram said: $(cat "$T_TMP/att.out")"
grep -q 'read as it is, to its end' "$T_TMP/att.out" || fail "attach --ram said: $(cat "$T_TMP/att.out")"
timeout 120 "$HVTRACE" stream "ram-$n" >"$T_TMP/rr.txt" 2>"$T_TMP/rr.err" ||
	{ cat "$T_TMP/rr.err"; fail "stream ram-$n did not end by itself at the ring's end"; }
! grep -q 'function names' "$T_TMP/rr.err" || fail "stream ram-$n: $(cat "$T_TMP/rr.err")"
named "$T_TMP/rr.txt"
"$HVTRACE" daemon detach "ram-$n" >/dev/null || fail "detach ram-$n failed"
info "attach --ram: stream ram-$n (through hvtraced) names all $M lines and ends"
# What is not a guest RAM file is refused, saying why.
"$HVTRACE" daemon attach --ram /dev/null >"$T_TMP/bad.out" 2>&1 && fail "attach --ram /dev/null succeeded"
grep -q 'not a regular file' "$T_TMP/bad.out" || fail "attach --ram /dev/null said: $(cat "$T_TMP/bad.out")"
head -c 1M /dev/zero >"$T_TMP/zero.ram"
"$HVTRACE" daemon attach --ram "$T_TMP/zero.ram" --name z >"$T_TMP/bad.out" 2>&1 && fail "attach --ram of zeros succeeded"
grep -qi 'ring' "$T_TMP/bad.out" || fail "attach --ram of zeros said: $(cat "$T_TMP/bad.out")"
info "attach --ram refuses /dev/null and a file without a ring: $(tail -1 "$T_TMP/bad.out")"

"$HVTRACE" record -q -o "$T_TMP/g.dat" --guest-kernel "$ram" --formats "$T_TMP/fmt" \
	2>"$T_TMP/rec.err" || { cat "$T_TMP/rec.err"; fail "record --guest-kernel failed"; }
[ -s "$T_TMP/rec.err" ] && fail "record -q printed: $(cat "$T_TMP/rec.err")"
trace-cmd dump --kallsyms "$T_TMP/g.dat" >"$T_TMP/ksyms" 2>&1
grep -qx "$want_tmw" "$T_TMP/ksyms" ||
	fail "KALLSYMS has not the guest's '$want_tmw': $(grep ' tracing_mark_write$' "$T_TMP/ksyms")"
grep -qx "$want_text" "$T_TMP/ksyms" ||
	fail "KALLSYMS has not the guest's '$want_text': $(grep ' _text$' "$T_TMP/ksyms")"
trace-cmd report "$T_TMP/g.dat" >"$T_TMP/report.txt" 2>"$T_TMP/report.err" ||
	{ cat "$T_TMP/report.err"; fail "trace-cmd report failed"; }
named "$T_TMP/report.txt"
info "record: KALLSYMS holds the guest's $(grep -c . "$T_TMP/ksyms") lines ($want_tmw); trace-cmd report names all $M lines"

"$G" cleanup --areas "$n" >/dev/null 2>&1
echo "PASS"
