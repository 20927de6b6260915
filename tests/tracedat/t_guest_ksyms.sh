#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace record --guest-kernel of a guest RAM file: when the guest's
# formats folder has no kallsyms, the trace.dat's KALLSYMS section is the
# symbol table read from that RAM, so trace-cmd report and hvtrace report
# name the guest's functions; never the host's.  The RAM file is the real
# Debian 6.12 guest's ring of the kring_parse seed real-612-128k (300
# ftrace:print markers of ip 0xffffffff8f8377ff) with that guest's
# formats, and past the ring a VMCOREINFO note and kallsyms tables that
# put the ip in tracing_mark_write (tests/unit/ksyms_ram --onto).
# Expected: the 300 markers read "tracing_mark_write: hvt-mark N" in
# both reports, and the section holds the table's lines; of the seed
# alone (no note): the section is empty, the markers print the ip in hex
# and one note on stderr says why.
. "$(dirname "$0")/lib.sh"

command -v trace-cmd >/dev/null ||
	skip "trace-cmd is not installed (apt-get install trace-cmd)"
[ -x "$HVTRACE" ] || fail "$HVTRACE not built"
GEN=$OBJ/tests/unit/ksyms_ram
[ -x "$GEN" ] || fail "no $GEN (make tests)"
. "$SRC/tests/include/guest612_formats.sh"
F=$T/fmt
guest612_formats "$F"
echo 1 >"$F/events/ftrace/enable"
echo mono >"$F/trace_clock"
"$GEN" --onto "$SEED" "$T/guest.ram" >"$T/gen.out" 2>&1 ||
	fail "ksyms_ram --onto failed: $(cat "$T/gen.out")"

"$HVTRACE" record -q -o "$T/g.dat" --guest-kernel "$T/guest.ram" \
	--formats "$F" >"$T/rec.out" 2>"$T/rec.err" ||
	fail "record failed: $(cat "$T/rec.err")"
! grep -q 'function names' "$T/rec.err" ||
	fail "a note about names with the table there: $(cat "$T/rec.err")"
trace-cmd dump --kallsyms "$T/g.dat" >"$T/ksyms" 2>&1
grep -q '^ffffffff8f8376e0 t tracing_mark_write$' "$T/ksyms" ||
	fail "no tracing_mark_write in the KALLSYMS section: $(head -5 "$T/ksyms")"
trace-cmd report "$T/g.dat" >"$T/report" 2>"$T/report.err" ||
	fail "trace-cmd report failed: $(cat "$T/report.err")"
n=$(grep -cE ' tracing_mark_write: hvt-mark [0-9]+$' "$T/report")
[ "$n" = 300 ] ||
	fail "trace-cmd report: $n of 300 markers named: $(grep -m2 'hvt-mark' "$T/report")"
"$HVTRACE" report "$T/g.dat" >"$T/hreport" 2>"$T/hreport.err" ||
	fail "hvtrace report failed: $(cat "$T/hreport.err")"
n=$(grep -cE ' tracing_mark_write: hvt-mark [0-9]+$' "$T/hreport")
[ "$n" = 300 ] ||
	fail "hvtrace report: $n of 300 markers named: $(grep -m2 'hvt-mark' "$T/hreport")"

cp "$SEED" "$T/plain.ram"
"$HVTRACE" record -q -o "$T/p.dat" --guest-kernel "$T/plain.ram" \
	--formats "$F" >"$T/rec2.out" 2>"$T/rec2.err" ||
	fail "record of the seed failed: $(cat "$T/rec2.err")"
n=$(grep -c 'function names print in hex' "$T/rec2.err")
[ "$n" = 1 ] || fail "$n notes about hex names (want 1): $(cat "$T/rec2.err")"
trace-cmd report "$T/p.dat" >"$T/report2" 2>/dev/null ||
	fail "trace-cmd report of the seed's file failed"
n=$(grep -cE ' 0xffffffff8f8377ff: hvt-mark [0-9]+$' "$T/report2")
[ "$n" = 300 ] ||
	fail "$n of 300 markers in hex without a table: $(grep -m2 'hvt-mark' "$T/report2")"
echo "ok: the guest's table from its RAM in the trace.dat; hex without one"
