#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest kernel's function names come from the symbol table in that
# guest's own RAM (docs/guest-kernel.md, "Function names"), on the cached
# Debian 6.12 guest kernel, one boot (--kernel-events ftrace:print
# --keep-ram): the guest prints its own /proc/kallsyms lines of _text and
# tracing_mark_write on its console, then writes M numbered lines to its
# instance's trace_marker (ftrace:print, "%ps: %s" of the writer's ip)
# while "hvtrace stream NAME --guest-kernel" runs, then powers off.
#
#   live         the stream prints every line as "tracing_mark_write:
#                hvt-mark I", and nothing about names on stderr;
#   post-mortem  "hvtrace stream RAMFILE --drain" of the kept RAM file
#                the same; "hvtrace record --guest-kernel" writes the
#                table as the trace.dat's KALLSYMS section: its
#                tracing_mark_write line is the guest's own (this boot's
#                KASLR address, as the guest printed it), its _text too,
#                and trace-cmd report names all M lines.
#
# It also says how long reading the table takes (stream --drain with
# names minus --summary without, median of 3).
#
# Environment: HVT_KSYMS_LINES (M, default 200).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
command -v trace-cmd >/dev/null || { echo "SKIP: trace-cmd is not installed (make deps)"; exit 77; }
M=${HVT_KSYMS_LINES:-200}
initrd=$(t_initrd)

# named FILE: all M lines, in order, each named tracing_mark_write.
named() {
	kring_check_marks "$1" "$M"
	local n
	n=$(grep -cE ' tracing_mark_write: hvt-mark [0-9]+$' "$1")
	[ "$n" = "$M" ] ||
		fail "$1: $n of $M lines named tracing_mark_write: $(grep -m2 'hvt-mark' "$1")"
}

t_name n ksyms
"$G" start --name "$n" --initrd "$initrd" --log "$T_TMP/$n.log" \
	--kernel-events ftrace:print --keep-ram --port go \
	--run "grep -E ' (_text|tracing_mark_write)\$' /proc/kallsyms | sed 's/^/hvt-ksym /'; $(kring_gated "$(kring_marks "$M")")" \
	--wait-ready --timeout 120 >/dev/null || fail "start failed"
HVTRACED_SOCKET=$T_TMP/no-daemon.sock HVT_SHM_DIR=$T_SHM HVT_RUNDIR=$T_RUNDIR \
	timeout 200 "$HVTRACE" stream "$n" --guest-kernel \
	>"$T_TMP/live.txt" 2>"$T_TMP/live.err" &
spid=$!
T_PIDS+=("$spid")
kring_go "$n" "$T_TMP/live.err" "$spid" "guest kernel times"
wait "$spid" || { cat "$T_TMP/live.err"; fail "stream failed or did not end with the guest"; }
cat "$T_TMP/live.err"
! grep -q 'function names' "$T_TMP/live.err" || fail "stream $n could not name functions"
named "$T_TMP/live.txt"
info "live: stream $n names all $M lines tracing_mark_write"

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

# What reading the table costs: --summary reads no names.
med() { sort -n | sed -n 2p; }
t_run() {
	local i s e
	for i in 1 2 3; do
		s=$(date +%s%N)
		"$HVTRACE" stream "$ram" --drain --formats "$T_TMP/fmt" "$@" >/dev/null 2>&1
		e=$(date +%s%N)
		echo $(((e - s) / 1000000))
	done | med
}
with=$(t_run)
without=$(t_run --summary)
info "stream --drain: $with ms with names, $without ms without (--summary), median of 3"
"$G" cleanup --areas "$n" >/dev/null 2>&1
echo "PASS"
