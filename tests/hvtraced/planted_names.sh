#!/bin/bash
# SPDX-License-Identifier: MIT
#
# issue 22 point 4: names in world-writable folders.  A rig guest's RAM
# file ($HVT_SHM_DIR/hvtrace-NAME.ram) and trace area (hvtrace-NAME) are
# found by name in a folder anyone may write (/dev/shm, mode 1777): a
# file another user planted there for a guest that has none must not be
# read as that guest's kernel ring or owned as its area.  As root, in a
# private 1777 HVT_SHM_DIR:
#
#   "hvtrace stream NAME --guest-kernel" reads only the kernel ring
#   hvtraced serves for remote NAME, never a RAM file found by its name:
#   with a RAM file that user nobody wrote under that name (a real 6.12
#   kernel ring image of unit/kring_golden) and no hvtraced, it fails
#   saying hvtraced is not running and naming the RAM file's path as
#   the way to read a file, and prints no event; the same image in a
#   file of root's is read when given by its path (its 8 events);
#   "hvtrace stream NAME" through hvtraced (the daemon's remote NAME, whose
#   kernel ring the stream, record and mount take only as hvtraced serves
#   it) reads the remote's user events alone and never the planted RAM
#   file, and "stream NAME --guest-kernel" is refused (hvtraced serves no
#   kernel ring of it) with no event printed: no tool or library finds a
#   rig guest's file by its name;
#   hvtraced's chardev remote ("hvtrace daemon attach NAME") refuses an
#   area file nobody made (a loopback writer's area) and logs why, and
#   still attaches a root-owned one.
#
# On the tree before the fix the planted ring is streamed and the planted
# area is attached.  Needs root and user nobody (else SKIP).
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" planted
N=pl$$
export HVT_SHM_DIR=$T/shm HVT_RUNDIR=$T/run

hvt_need_bins
hvt_need_golden
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null ||
	! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	skip "needs root, setpriv and user nobody (uid 65534)"
fi
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
planted="is owned by uid 65534, not root or you: someone else may have planted it; remove it"

chmod 711 "$T"
mkdir "$T/shm" "$T/run"
chmod 1777 "$T/shm"
hvt_golden_seeds
# A guest's RAM: 4 MiB with the ring 1 MiB in.
truncate -s 4M "$T/ram.img"
dd if="$T/seeds/612-golden" of="$T/ram.img" bs=1M seek=1 conv=notrunc \
	status=none || fail "cannot write the RAM image"
chmod 644 "$T/ram.img"

# --- hvtrace stream NAME --guest-kernel ------------------------------------
as_nobody cp "$T/ram.img" "$T/shm/hvtrace-$N.ram" || fail "nobody cannot write $T/shm"
[ "$(stat -c %u "$T/shm/hvtrace-$N.ram")" = 65534 ] || fail "the planted file is not nobody's"
"$H" stream "$N" --guest-kernel --drain >"$T/planted.txt" 2>"$T/planted.err" &&
	fail "stream $N --guest-kernel without hvtraced succeeded ($(grep -c . "$T/planted.txt") lines)"
grep -q "hvtraced is not running" "$T/planted.err" &&
	grep -qF "read directly by its path: 'hvtrace stream $T/shm/hvtrace-$N.ram'" "$T/planted.err" ||
	fail "stream $N --guest-kernel without hvtraced: $(cat "$T/planted.err")"
[ -s "$T/planted.txt" ] && fail "events of the planted RAM file were printed"

# A file given by its path is the user's choice: root's is read.
cp "$T/ram.img" "$T/shm/hvtrace-$N-r.ram"
chmod 600 "$T/shm/hvtrace-$N-r.ram"
"$H" stream "$T/shm/hvtrace-$N-r.ram" --drain >"$T/root.txt" 2>"$T/root.err" ||
	fail "stream of a root-owned RAM file by its path failed: $(cat "$T/root.err")"
[ "$(grep -c . "$T/root.txt")" = 8 ] || fail "the root-owned RAM file: not the golden ring's 8 events"

# --- hvtraced: the chardev remote's area, the kernel ring beside it ------------
"$OBJ/bin/hvtraced" --foreground --socket "$HVTRACED_SOCKET" \
	--run-dir "$T/run" --shm-dir "$T/shm" >"$T/hvtraced.log" 2>&1 &
DPID=$!
hvt_listening

# An area nobody made, under the name of a guest that has none.
as_nobody "$H" loopback --area "$T/shm/hvtrace-$N-a" --cpus 1 --events 10 \
	>"$T/lb-planted.err" 2>&1 || fail "nobody's loopback writer failed"
"$H" daemon attach "$N-a" >"$T/attach-planted.err" 2>&1 ||
	fail "attach $N-a: $(cat "$T/attach-planted.err")"
grep -qF "hvtrace-$N-a $planted" "$T/attach-planted.err" ||
	fail "attach does not refuse the planted area: $(cat "$T/attach-planted.err")"
grep -qF "remote '$N-a': $T/shm/hvtrace-$N-a $planted" "$T/hvtraced.log" ||
	fail "hvtraced does not log the planted area"
grep -q "remote '$N-a': area .*CPUs" "$T/hvtraced.log" &&
	fail "hvtraced attached the planted area"

# Root's own area (a mono clock, as an agent's) is attached; beside it
# nobody planted the RAM file, which the stream through hvtraced does not
# look for: hvtraced serves no kernel pages of this remote (no agent), so
# the stream reads its user events alone.
"$H" loopback --area "$T/shm/hvtrace-$N-b" --cpus 1 --events 10 --clock mono \
	>"$T/lb-root.err" 2>&1 || fail "root's loopback writer failed"
"$H" daemon attach "$N-b" >"$T/attach-root.err" 2>&1 ||
	fail "attach $N-b: $(cat "$T/attach-root.err")"
grep -q "refused" "$T/attach-root.err" && fail "root's area was refused: $(cat "$T/attach-root.err")"
wait_for 5 grep -q "remote '$N-b': area .*CPUs" "$T/hvtraced.log" ||
	fail "hvtraced did not attach root's area"
as_nobody cp "$T/ram.img" "$T/shm/hvtrace-$N-b.ram" || fail "nobody cannot write $T/shm"
timeout 20 "$H" stream "$N-b" --drain >"$T/dstream.txt" 2>"$T/dstream.err" ||
	fail "stream $N-b through hvtraced: $(cat "$T/dstream.err")"
grep -q "guest kernel" "$T/dstream.err" &&
	fail "stream $N-b looked for a guest kernel hvtraced does not serve: $(cat "$T/dstream.err")"
[ "$(grep -c . "$T/dstream.txt")" = 10 ] ||
	fail "stream $N-b: not the loopback writer's 10 events: $(cat "$T/dstream.txt")"
timeout 20 "$H" stream "$N-b" --guest-kernel --drain >"$T/dkring.txt" 2>"$T/dkring.err" &&
	fail "stream $N-b --guest-kernel read something hvtraced does not serve"
grep -qF "'$N-b': hvtraced serves no guest kernel ring of it" "$T/dkring.err" ||
	fail "stream $N-b --guest-kernel: $(cat "$T/dkring.err")"
[ -s "$T/dkring.txt" ] && fail "stream $N-b --guest-kernel printed the planted ring's events"
echo PASS
