# SPDX-License-Identifier: MIT
#
# Helpers for the hvtrace CLI tests.  Source it; it sets:
#   HVTRACE   the hvtrace binary ($HVTRACE, else $HVT_OBJTREE/bin/hvtrace)
#   TMP       a scratch directory, removed on exit
#   AREA      a fresh /dev/shm area path, removed on exit
# and kills the background writers listed in WRITERS on exit.

set -u
HVTRACE=${HVTRACE:-${HVT_OBJTREE:-build}/bin/hvtrace}
if [ ! -x "$HVTRACE" ]; then
	echo "FAIL: no hvtrace binary at $HVTRACE (build it first)"
	exit 1
fi
TMP=$(mktemp -d /tmp/hvt-cli.XXXXXX)
AREA=/dev/shm/hvt-cli-$$-$RANDOM
WRITERS=
cleanup() {
	local p
	for p in $WRITERS; do
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$TMP"
	rm -f "$AREA" "$AREA".*
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

# expect_eq WHAT GOT WANT
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

# Wait until pid $1 is gone (at most ~10 s).
wait_gone() {
	local i
	for i in $(seq 1 200); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	fail "process $1 did not end"
}

# ids_exact FILE CPU N: CPU's selftest ids are exactly 0..N-1 in order,
# and no line reports lost events for it.
ids_exact() {
	awk -v cpu="$2" -v n="$3" '
	BEGIN { want = 0; tag = sprintf("[%03d]", cpu) }
	$0 ~ "^CPU:" cpu " \\[LOST" { print "lost line: " $0; bad = 1; exit }
	$2 == tag {
		split($NF, a, "=")
		if (a[2] != want) { print "line " NR ": id " a[2] ", expected " want; bad = 1; exit }
		want++
	}
	END {
		if (bad) exit 1
		if (want != n) { print "cpu " cpu ": " want " ids, expected " n; exit 1 }
	}' "$1"
}

# ids_with_losses FILE CPU: ids are consecutive once the LOST counts are
# added in; prints "events lost".
ids_with_losses() {
	awk -v cpu="$2" '
	BEGIN { want = 0; lost = 0; n = 0; tag = sprintf("[%03d]", cpu) }
	$0 ~ "^CPU:" cpu " \\[LOST [0-9]+ EVENTS\\]" {
		want += $3; lost += $3; next
	}
	$0 ~ "^CPU:" cpu " \\[LOST EVENTS\\]" { print "unknown loss"; exit 1 }
	$2 == tag {
		split($NF, a, "=")
		if (a[2] != want) { print "line " NR ": id " a[2] ", expected " want; exit 1 }
		want++; n++
	}
	END { print n, lost }' "$1"
}

# Every selftest line has the trace_pipe shape.
lines_well_formed() {
	local bad
	bad=$(grep -v '^CPU:[0-9]* \[LOST' "$1" | grep -Ev '^ *[^ ]+-[0-9]+ +\[[0-9]{3}\] [.dDbBNLnplhHsSzZ0-9a-f]{5} +[0-9]+\.[0-9]{6}: selftest: id=[0-9]+$' | head -3)
	[ -z "$bad" ] || fail "malformed lines: $bad"
}

# Timestamps never go backwards across the merged output.
time_ordered() {
	awk '!/^CPU:/ {
		t = $4; sub(":", "", t)
		if (t + 0 < prev) {
			print "line " NR " goes back in time:"
			print "  " last
			print "  " $0
			exit 1
		}
		prev = t + 0; last = $0
	}' "$1"
}

# stat_field STATFILE CPU NAME: the value of "NAME: v" in CPU's block.
stat_field() {
	awk -v cpu="CPU $2:" -v name="$3:" '
	$0 == cpu { inblk = 1; next }
	/^CPU [0-9]+:/ { inblk = 0 }
	inblk && index($0, name) == 1 { sub(name " *", ""); print; exit }' "$1"
}

# writer_field LOG CPU COLUMN: a column of the loopback summary table
# (written, dropped, next_id).
writer_field() {
	awk -v cpu="$2" -v col="$3" '
	$1 == "cpu" { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
	c && $1 == cpu { print $c; exit }' "$1"
}
