#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A dead guest's RAM file and the formats cache: hvtrace stream RAMFILE
# --drain (and record --guest-kernel RAMFILE) pick the cache folder by the
# release in the kernel banner found in RAM, confirmed by the build id
# bytes found in RAM.  The RAM file is made here: a real Debian 6.12
# guest's ring (the kring_parse seed real-612-128k) at a 4 KiB boundary
# of a sparse file, a banner "Linux version REL (...)" and a build id
# (20 bytes) elsewhere in it.  The cache folders are made here too, named
# RELEASE@BUILDID as hvtraced names them.  Cases: one folder whose id is
# in RAM (used, stderr says so); a second one whose id is in RAM as well
# (refused: both named); only folders whose ids are not in RAM (refused:
# another build); a guest's upload under guests/REMOTE (taken when no
# trusted folder is confirmed, not when one is), and for a RAM file named
# hvtrace-NAME.ram only guest NAME's; an empty cache (no formats, events
# still counted).
. "$(dirname "$0")/lib.sh"

SEED=$(dirname "$0")/../fuzz/corpus/kring_parse/real-612-128k
[ -r "$SEED" ] || fail "no seed $SEED"
RAM=$TMP/guest.ram
REL=6.12.99-hvttest-amd64
ID1=00112233445566778899aabbccddeeff01234567
ID2=89abcdef0123456789abcdef0123456789abcdef
ID3=fedcba9876543210fedcba9876543210fedcba98

hexbytes() { printf '%s' "$1" | sed 's/../\\x&/g'; }

truncate -s 64M "$RAM"
printf 'Linux version %s (builder@host) (gcc 12) #1 SMP Debian\n' "$REL" |
	dd of="$RAM" bs=4096 seek=1024 conv=notrunc status=none
# The ids, as the notes of a kernel image hold them: raw bytes.
printf "$(hexbytes "$ID1")" | dd of="$RAM" bs=4096 seek=2048 conv=notrunc status=none
printf "$(hexbytes "$ID2")" | dd of="$RAM" bs=1 seek=$((12 * 1048576 - 7)) conv=notrunc status=none
dd if="$SEED" of="$RAM" bs=4096 seek=8192 conv=notrunc status=none

export HVT_CACHE=$TMP/cache
C=$HVT_CACHE/kformats
mkformats() {	# mkformats DIR
	mkdir -p "$1/events"
	printf '\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n' \
		>"$1/events/header_page"
	mkdir -p "$1/events/ftrace/print"
	printf '%s\n' 'name: print' 'ID: 5' 'format:' \
		$'\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;' \
		$'\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;' \
		$'\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;' \
		$'\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;' '' \
		$'\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;' \
		$'\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;' '' \
		'print fmt: "%ps: %s", (void *)REC->ip, REC->buf' \
		>"$1/events/ftrace/print/format"
	echo 'mono' >"$1/trace_clock"
}
counted() { grep -Eq 'cpu [0-9]+: [1-9][0-9]* events' "$1"; }

# 1. One folder, its id in RAM.
mkformats "$C/$REL@$ID1"
mkformats "$C/$REL-other@$ID3"
"$HVTRACE" stream "$RAM" --drain --summary >"$TMP/1.out" 2>"$TMP/1.err"
grep -q "the guest kernel's formats from $C/$REL@$ID1 (release $REL, build id $ID1 found in guest RAM)" "$TMP/1.err" ||
	fail "one match: $(cat "$TMP/1.err")"
counted "$TMP/1.err" || fail "one match: no events counted: $(cat "$TMP/1.err")"
grep -q ': hvt-mark 299$' "$TMP/1.out" || fail "one match: the guest's 300th marker is not decoded: $(head -3 "$TMP/1.out")"
grep -q 'UNKNOWN' "$TMP/1.out" || fail "one match: the events without a format are not printed as UNKNOWN"
"$HVTRACE" record -q -o "$TMP/1.dat" --guest-kernel "$RAM" >"$TMP/r1.out" 2>"$TMP/r1.err" ||
	fail "record --guest-kernel with the cached formats failed: $(cat "$TMP/r1.err")"
grep -q "hvtrace record: the guest kernel's formats from $C/$REL@$ID1" "$TMP/r1.err" ||
	fail "record, one match: $(cat "$TMP/r1.err")"
[ -s "$TMP/1.dat" ] || fail "record wrote no trace.dat with the cached formats"

# 2. A second folder of the release whose id is in RAM too.
mkformats "$C/$REL@$ID2"
"$HVTRACE" stream "$RAM" --drain --summary >"$TMP/2.out" 2>"$TMP/2.err"
grep -q "2 entries of the cache match release $REL" "$TMP/2.err" ||
	fail "two matches: $(cat "$TMP/2.err")"
grep -q "$C/$REL@$ID1" "$TMP/2.err" && grep -q "$C/$REL@$ID2" "$TMP/2.err" ||
	fail "two matches not both named: $(cat "$TMP/2.err")"
grep -q "no event formats of the guest kernel" "$TMP/2.err" ||
	fail "two matches: the stream does not say it has no formats"
counted "$TMP/2.err" || fail "two matches: events are not counted: $(cat "$TMP/2.err")"

# 3. Only folders of other builds.
rm -rf "${C:?}/$REL@$ID1" "${C:?}/$REL@$ID2"
mkformats "$C/$REL@$ID3"
"$HVTRACE" stream "$RAM" --drain --summary >"$TMP/3.out" 2>"$TMP/3.err"
grep -q "the cache has release $REL, but guest RAM holds none of its build ids ($ID3)" "$TMP/3.err" ||
	fail "no match: $(cat "$TMP/3.err")"

# 3b. A guest's upload (guests/REMOTE/RELEASE@BUILDID) is taken when no
# trusted folder of the host is confirmed; a confirmed trusted one wins.
mkformats "$C/guests/g1/$REL@$ID1"
"$HVTRACE" stream "$RAM" --drain --summary >"$TMP/3b.out" 2>"$TMP/3b.err"
grep -q "the guest kernel's formats from $C/guests/g1/$REL@$ID1 (release $REL, build id $ID1 found in guest RAM)" "$TMP/3b.err" ||
	fail "a guest's upload: $(cat "$TMP/3b.err")"
mkformats "$C/$REL@$ID1"
"$HVTRACE" stream "$RAM" --drain --summary >"$TMP/3c.out" 2>"$TMP/3c.err"
grep -q "the guest kernel's formats from $C/$REL@$ID1 (release" "$TMP/3c.err" ||
	fail "the trusted folder beside a guest's upload: $(cat "$TMP/3c.err")"

# 3d. Issue 22 point 5: a RAM file known to be guest g2's (hvtrace-g2.ram,
# as the rig names it) takes only g2's own upload, never g1's under the
# same release and build id (a guest may upload under any it claims).
rm -rf "${C:?}/$REL@$ID1"
ln "$RAM" "$TMP/hvtrace-g2.ram"
"$HVTRACE" stream "$TMP/hvtrace-g2.ram" --drain --summary >"$TMP/3d.out" 2>"$TMP/3d.err"
grep -q "guests/g1" "$TMP/3d.err" &&
	fail "guest g2's RAM file took guest g1's upload: $(cat "$TMP/3d.err")"
grep -q "no event formats of the guest kernel" "$TMP/3d.err" ||
	fail "guest g2's RAM file with only g1's upload: $(cat "$TMP/3d.err")"
mkformats "$C/guests/g2/$REL@$ID1"
"$HVTRACE" stream "$TMP/hvtrace-g2.ram" --drain --summary >"$TMP/3e.out" 2>"$TMP/3e.err"
grep -q "the guest kernel's formats from $C/guests/g2/$REL@$ID1 (release" "$TMP/3e.err" ||
	fail "guest g2's own upload: $(cat "$TMP/3e.err")"

# 4. No cache at all.
rm -rf "$HVT_CACHE"
"$HVTRACE" stream "$RAM" --drain --summary >"$TMP/4.out" 2>"$TMP/4.err"
grep -q "no event formats of the guest kernel" "$TMP/4.err" ||
	fail "empty cache: $(cat "$TMP/4.err")"
counted "$TMP/4.err" || fail "empty cache: events are not counted"
cmp -s "$TMP/2.err" "$TMP/4.err" && fail "the refusal of two matches printed nothing of its own"
echo "ok: the cache entry is chosen by release and build id, refusals say why"
