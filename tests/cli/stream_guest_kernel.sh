#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace stream --guest-kernel on a guest RAM image with a guest kernel's
# ring, without QEMU: the golden 6.12 image of tests/unit/kring_golden.c
# (committed as a fuzz seed; its comments give every event): CPU 0 holds
# events with sequence numbers 1..7 (8 is written but not committed),
# CPU 1 holds 100, all with id 7, pid 42.
#   - with a formats folder (a hand-written format for id 7) every event
#     is decoded, in time order across CPUs, and counted per CPU;
#   - without one, stream says so and prints UNKNOWN id=7 for each;
#   - a name ending in .ram needs no --guest-kernel, and stream says
#     once that a RAM file's times are the guest's own, not the host's;
#   - a file without a ring is refused, and a guest NAME with no hvtraced
#     serving it too, with a message that names the RAM file's path as
#     the way to read a file (NAME never opens a file by its name).
. "$(dirname "$0")/lib.sh"

SRC=${HVT_SRCTREE:-$(cd "$(dirname "$0")/../.." && pwd)}
IMG=$SRC/tests/fuzz/corpus/kring_parse/612-golden
[ -f "$IMG" ] || fail "no golden image $IMG"

# The formats folder, laid out like tracefs.
mkdir -p "$TMP/fmt/events/hvt/marker"
printf '\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n' \
	>"$TMP/fmt/events/header_page"
cat >"$TMP/fmt/events/hvt/marker/format" <<'FMT'
name: marker
ID: 7
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned int seq;	offset:8;	size:4;	signed:0;

print fmt: "seq=%u", REC->seq
FMT
printf '42 marker-task\n' >"$TMP/fmt/saved_cmdlines"

"$HVTRACE" stream "$IMG" --guest-kernel --drain --formats "$TMP/fmt" \
	--summary >"$TMP/out.txt" 2>"$TMP/err.txt" ||
	fail "stream failed: $(cat "$TMP/err.txt")"
expect_eq "decoded events in order" \
	"$(grep -o 'marker: seq=[0-9]*' "$TMP/out.txt" | cut -d= -f2 | tr '\n' ' ')" \
	"100 1 2 3 4 5 6 7 "
grep -q '^ *marker-task-42 *\[001\]' "$TMP/out.txt" ||
	fail "comm and CPU of seq 100: $(head -1 "$TMP/out.txt")"
grep -q 'cpu 0: 7 events, 0 lost, 0 errors' "$TMP/err.txt" ||
	fail "CPU 0 summary: $(cat "$TMP/err.txt")"
grep -q 'cpu 1: 1 events, 0 lost, 0 errors' "$TMP/err.txt" ||
	fail "CPU 1 summary: $(cat "$TMP/err.txt")"

cp "$IMG" "$TMP/guest.ram"
"$HVTRACE" stream "$TMP/guest.ram" --drain >"$TMP/raw.txt" 2>"$TMP/err.txt" ||
	fail "stream of a .ram file failed: $(cat "$TMP/err.txt")"
expect_eq "UNKNOWN lines" "$(grep -c 'UNKNOWN id=7' "$TMP/raw.txt")" 8
grep -q 'no event formats of the guest kernel' "$TMP/err.txt" ||
	fail "no note about missing formats: $(cat "$TMP/err.txt")"
grep -qx "hvtrace stream: guest kernel times are the guest's own (its trace clock), not the host's CLOCK_MONOTONIC (a RAM file: no clock model; 'hvtrace stream NAME' of a rig guest reads its ring through hvtraced, on the host's clock)" "$TMP/err.txt" ||
	fail "no note that the times are the guest's own: $(cat "$TMP/err.txt")"

head -c 65536 /dev/zero >"$TMP/empty.ram"
"$HVTRACE" stream "$TMP/empty.ram" --drain >/dev/null 2>"$TMP/err.txt"
expect_eq "exit status without a ring" $? 1
grep -q 'no guest kernel ring buffer in this file' "$TMP/err.txt" ||
	fail "message: $(cat "$TMP/err.txt")"

HVT_SHM_DIR=$TMP HVTRACED_SOCKET=$TMP/none.sock "$HVTRACE" stream nosuchguest \
	--guest-kernel --drain >/dev/null 2>"$TMP/err.txt"
expect_eq "exit status of a guest NAME without hvtraced" $? 1
grep -qF "read directly by its path: 'hvtrace stream $TMP/hvtrace-nosuchguest.ram'" "$TMP/err.txt" ||
	fail "message: $(cat "$TMP/err.txt")"
echo "ok: --guest-kernel with and without formats, refusals"
