#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A loopback writer killed with SIGKILL in the middle of writing leaves an
# area that can still be read to every committed event: ids 0..C-1 on each
# CPU with C what the area says was committed, then the events it dropped
# after its last page reported as lost.  A plain stream of such an area
# ends by itself (its writer is gone).
. "$(dirname "$0")/lib.sh"

pid=$("$HVTRACE" loopback --area "$AREA" --cpus 2 --pages 256 \
	--background) || fail "background writer did not start"
WRITERS=$pid
sleep 0.3
kill -9 "$pid"
wait_gone "$pid"

"$HVTRACE" stat "$AREA" >"$TMP/stat.txt" || fail "stat failed"
grep -q "running" "$TMP/stat.txt" || fail "a killed writer cannot have stopped cleanly"
"$HVTRACE" stream "$AREA" --drain --read-only >"$TMP/pm.txt" ||
	fail "post-mortem stream failed"
for cpu in 0 1; do
	c=$(stat_field "$TMP/stat.txt" $cpu committed)
	d=$(stat_field "$TMP/stat.txt" $cpu "dropped events")
	[ "$c" -gt 0 ] || fail "cpu $cpu: nothing committed before the kill"
	read -r n lost < <(ids_with_losses "$TMP/pm.txt" $cpu) ||
		fail "cpu $cpu ids: $n"
	expect_eq "cpu $cpu events read" $n $c
	expect_eq "cpu $cpu lost reported" $lost $d
	echo "cpu $cpu: $c committed, $d dropped, all read back"
done
lines_well_formed "$TMP/pm.txt"

# Without --drain: the writer is gone, so the stream ends on its own.
timeout 30 "$HVTRACE" stream "$AREA" >"$TMP/own.txt"
rc=$?
expect_eq "stream of a dead writer's area exits" $rc 0
expect_eq "owner stream lines" "$(grep -vc '^CPU:' "$TMP/own.txt")" \
	"$(grep -vc '^CPU:' "$TMP/pm.txt")"
echo "ok: SIGKILLed writer read post-mortem to every committed event"
