#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A rig guest says in hvtraced what the rig says of it, in the rig's
# words: "booting" until its agent is up, and once its QEMU ended unasked
# the word of the record the rig (qemu-scripts/hvtrace-guest) leaves in
# RUN_DIR/NAME.ended: first line "state=powered-off" (its init powered it
# off), "state=panicked" or "state=crashed" -- not "disconnected".  A fake
# guest (a control.sock that listens, no QEMU) is attached by name and
# then goes away:
#   - attached, no agent: booting (the launcher's word), not waiting;
#   - with no record it is disconnected, as before;
#   - a record that is not the rig's is not believed (disconnected): a
#     symbolic link, a world-writable file, another first line, a
#     truncated line, a word the rig does not write;
#   - with the rig's record, hvtrace list and daemon info say its word:
#     powered-off, then panicked, then crashed;
#   - the record removed (stop, cleanup): disconnected again;
#   - the guest back (its socket listens again): booting, as before.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" poweredoff
SOCK=$HVTRACED_SOCKET

hvt_need_bins
N=off$$
REC=$T/run/$N.ended
mkdir -p "$T/run/$N"

# fake_guest: a control.sock that accepts and holds its connections.
fake_guest() {
	rm -f "$T/run/$N/control.sock" "$T/fake.ready"
	python3 - "$T/run/$N/control.sock" "$T/fake.ready" >>"$T/fake.log" 2>&1 <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(4)
open(sys.argv[2], "w").close()
keep = []
while True:
	c, _ = s.accept()
	keep.append(c)
EOF
	FPID=$!
	PIDS="$PIDS $FPID"
	wait_for 5 test -e "$T/fake.ready" || fail "the fake guest did not listen"
}

state() {
	"$H" list --socket "$SOCK" 2>/dev/null | awk -v n="$N" '$1 == n { print $4 }'
}

# expect WORD WHAT: hvtrace list says WORD for the guest within 5 s.
expect() {
	local _
	for _ in $(seq 1 100); do
		[ "$(state)" = "$1" ] && break
		sleep 0.05
	done
	[ "$(state)" = "$1" ] || fail "$2: hvtrace list says '$(state)', not $1"
	echo "$2: $1"
}

"$OBJ/bin/hvtraced" --foreground --socket "$SOCK" --run-dir "$T/run" \
	--shm-dir "$T" >"$T/hvtraced.log" 2>&1 &
DPID=$!
hvt_listening

fake_guest
"$H" daemon attach "$N" --socket "$SOCK" >"$T/attach.log" 2>&1 ||
	fail "attach: $(cat "$T/attach.log")"
wait_for 5 grep -q "remote '$N': connected to" "$T/hvtraced.log" ||
	fail "hvtraced did not connect to the fake guest"
expect booting "attached, no agent"

# The guest goes (QEMU exited): no record yet.
kill "$FPID"
wait "$FPID" 2>/dev/null
rm -f "$T/run/$N/control.sock"
expect disconnected "its QEMU gone, no record"

# Records that are not the rig's are not believed.
printf 'state=powered-off\n' >"$T/elsewhere"
ln -s "$T/elsewhere" "$REC"
sleep 2.5
expect disconnected "a symbolic link as the record"
rm -f "$REC"
printf 'state=powered-off\n' >"$REC"
chmod 0666 "$REC"
sleep 2.5
expect disconnected "a world-writable record"
printf 'state=powered-offX\n' >"$REC"
chmod 0644 "$REC"
sleep 2.5
expect disconnected "a record whose first line is another"
printf 'state=powered-of' >"$REC"
sleep 2.5
expect disconnected "a truncated record"
printf 'state=exploded\n' >"$REC"
sleep 2.5
expect disconnected "a record with a word the rig does not write"

# The rig's record.
printf 'state=powered-off\nname=%s\nrun_status=0\n' "$N" >"$REC"
expect powered-off "the rig's record"
"$H" daemon info --remote "$N" --socket "$SOCK" 2>&1 | grep -q '^state: powered-off$' ||
	fail "daemon info does not say 'state: powered-off': $("$H" daemon info --remote "$N" --socket "$SOCK" 2>&1 | head -5)"
grep -q "remote '$N': the guest's QEMU ended: powered-off" "$T/hvtraced.log" ||
	fail "hvtraced's log does not say that the guest powered itself off"

# The rig's record of a panic, then of a QEMU that was killed (written
# as the rig does: a new file renamed over the old).
printf 'state=panicked\nname=%s\npanic=Kernel panic - not syncing: sysrq triggered crash\n' "$N" >"$REC.tmp"
mv -f "$REC.tmp" "$REC"
expect panicked "the rig's record of a panic"
printf 'state=crashed\nname=%s\nqemu_status=137\n' "$N" >"$REC.tmp"
mv -f "$REC.tmp" "$REC"
expect crashed "the rig's record of a killed QEMU"
"$H" daemon info --remote "$N" --socket "$SOCK" 2>&1 | grep -q '^state: crashed$' ||
	fail "daemon info does not say 'state: crashed'"

# Stopped or cleaned up: the record goes.
rm -f "$REC"
expect disconnected "the record removed"

# Started again under the name.
fake_guest
expect booting "the guest back"
echo PASS
