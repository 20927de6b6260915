#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream of a guest RAM file names the guest kernel's functions
# from the symbol table in that RAM, never from the host's: the real
# Debian 6.12 guest's ring of the kring_parse seed real-612-128k (300
# ftrace:print markers, "%ps: %s" of ip 0xffffffff8f8377ff) with that
# guest's formats (no kallsyms file in the folder), and past the ring a
# VMCOREINFO note and compressed kallsyms tables with that guest's KASLR
# base that put the ip in tracing_mark_write (tests/unit/ksyms_ram
# --onto).  Expected:
#   - with the tables: every marker line reads "tracing_mark_write:
#     hvt-mark N", nothing on stderr about names;
#   - the seed alone (no note in its RAM): every marker prints the ip in
#     hex, one note on stderr says why (not one per event), and no name
#     of the host's /proc/kallsyms shows.
. "$(dirname "$0")/lib.sh"

SRC=${HVT_SRCTREE:-$(cd "$(dirname "$0")/../.." && pwd)}
GEN=${HVT_OBJTREE:-build}/tests/unit/ksyms_ram
[ -x "$GEN" ] || fail "no $GEN (make tests)"
. "$SRC/tests/include/guest612_formats.sh"
F=$TMP/fmt
guest612_formats "$F"
"$GEN" --onto "$SEED" "$TMP/guest.ram" >"$TMP/gen.out" 2>&1 ||
	fail "ksyms_ram --onto failed: $(cat "$TMP/gen.out")"

# drain RAM OUT ERR: the guest kernel ring of RAM, decoded with $F.
drain() {
	"$HVTRACE" stream "$1" --guest-kernel --drain --formats "$F" \
		>"$2" 2>"$3" || fail "stream of $1 failed: $(cat "$3")"
}

drain "$TMP/guest.ram" "$TMP/out.txt" "$TMP/err.txt"
n=$(grep -c ': tracing_mark_write: hvt-mark ' "$TMP/out.txt")
[ "$n" = 300 ] ||
	fail "$n of 300 markers named tracing_mark_write: $(grep -m2 'hvt-mark' "$TMP/out.txt")"
! grep -q 'function names' "$TMP/err.txt" ||
	fail "a note about names with the table there: $(cat "$TMP/err.txt")"

cp "$SEED" "$TMP/plain.ram"
drain "$TMP/plain.ram" "$TMP/out2.txt" "$TMP/err2.txt"
n=$(grep -c ': 0xffffffff8f8377ff: hvt-mark ' "$TMP/out2.txt")
[ "$n" = 300 ] ||
	fail "$n of 300 markers in hex without a table: $(grep -m2 'hvt-mark' "$TMP/out2.txt")"
n=$(grep -c 'function names print in hex' "$TMP/err2.txt")
[ "$n" = 1 ] || fail "$n notes about hex names (want 1): $(cat "$TMP/err2.txt")"
grep 'function names print in hex' "$TMP/err2.txt" | grep -q 'VMCOREINFO' ||
	fail "the note does not say why: $(cat "$TMP/err2.txt")"
echo "ok: guest function names from its RAM's table; hex without one"
