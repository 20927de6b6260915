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

# --- the host kernel ring, through the mmap ABI or read() ----------------
# kring_leg MODE: with HVTRACE_KERNEL_RING=MODE, on fresh tracefs instances
# of their own,
#   - 40 numbered trace_marker lines over (up to) two CPUs: stream --kernel
#     prints exactly the kernel's own "trace" text; $TMP/MODE.events keeps
#     the lines without pid and timestamp, for comparing paths;
#   - 300 numbered lines into the smallest ring on CPU 0, most of
#     them overwritten: the kernel's stats count the overrun; stream
#     prints "CPU:0 [LOST n EVENTS]" with exactly that n, then the
#     survivors, byte-identical to the kernel's text, n+1..300 in order.
# Says on stderr once which path it read (only for read()).  MODE auto
# is the default: whichever path this kernel has.  KRING_INST names the
# first instance afterwards; kring_setup's trap removes both.
# Needs KRING_ROOT (a tracefs mount with instances/).
kring_leg() {
	local mode=$1 inst dir ncpu i c overrun entries n want
	inst=hvt-kring-$$-$mode
	dir=$KRING_ROOT/instances/$inst
	mkdir "$dir" || fail "cannot create $dir"
	KRING_DIRS="${KRING_DIRS:-} $dir"
	ncpu=$(nproc)
	[ "$ncpu" -gt 2 ] && ncpu=2
	for i in $(seq 1 40); do
		c=$((i % ncpu))
		taskset -c $c sh -c "echo 'kring marker $i' > $dir/trace_marker" ||
			fail "cannot write trace_marker"
	done
	grep -v '^#' "$dir/trace" >"$TMP/$mode.kernel"
	expect_eq "$mode: kernel lines" "$(wc -l <"$TMP/$mode.kernel")" 40
	HVTRACE_KERNEL_RING=$mode "$HVTRACE" stream --kernel --instance $inst \
		--count 40 --timeout 20 >"$TMP/$mode.ours" 2>"$TMP/$mode.err" ||
		fail "$mode: stream --kernel failed: $(cat "$TMP/$mode.err")"
	if ! cmp -s "$TMP/$mode.kernel" "$TMP/$mode.ours"; then
		diff "$TMP/$mode.kernel" "$TMP/$mode.ours" | head -10
		fail "$mode: stream --kernel differs from the kernel's own text"
	fi
	n=$(grep -c 'host kernel ring: trace_pipe_raw read()' "$TMP/$mode.err")
	case $mode in
	read)
		expect_eq "$mode: the path said once" "$n" 1
		grep -qx 'hvtrace: host kernel ring: trace_pipe_raw read() (HVTRACE_KERNEL_RING=read)' \
			"$TMP/$mode.err" || fail "$mode: no reason given: $(cat "$TMP/$mode.err")"
		;;
	mmap) expect_eq "$mode: no read() note" "$n" 0 ;;
	*) [ "$n" -le 1 ] || fail "$mode: the read() path said $n times" ;;
	esac
	sed -E 's/^.*-[0-9]+ +(\[[0-9]{3}\]) [^ ]+ +[0-9]+\.[0-9]{6}: /\1 /' \
		"$TMP/$mode.ours" >"$TMP/$mode.events"
	KRING_INST=$inst

	# Losses: the smallest ring the kernel allows, overwritten many times.
	inst=hvt-kring-$$-$mode-lossy
	dir=$KRING_ROOT/instances/$inst
	mkdir "$dir" || fail "cannot create $dir"
	KRING_DIRS="$KRING_DIRS $dir"
	echo 4 >"$dir/buffer_size_kb" || fail "cannot set $dir/buffer_size_kb"
	# "kr NNN": 28-byte events, so a full 4 KiB page keeps 20 bytes free
	# and the kernel always has room to store the lost count (8 bytes),
	# even if a stall puts a time extend (8 bytes) on it.
	taskset -c 0 bash -c "for i in \$(seq -w 1 300); do echo \"kr \$i\" > $dir/trace_marker || exit 1; done" ||
		fail "cannot write trace_marker"
	overrun=$(awk '/^overrun:/ { print $2 }' "$dir/per_cpu/cpu0/stats")
	entries=$(awk '/^entries:/ { print $2 }' "$dir/per_cpu/cpu0/stats")
	expect_eq "$mode: kernel entries + overrun" $((entries + overrun)) 300
	[ "$overrun" -gt 0 ] || fail "$mode: nothing was overwritten (ring too large?)"
	grep -v '^#' "$dir/trace" >"$TMP/$mode.lossy.kernel"
	HVTRACE_KERNEL_RING=$mode "$HVTRACE" stream --kernel --instance $inst \
		--cpu 0 --drain >"$TMP/$mode.lossy" 2>"$TMP/$mode.lossy.err" ||
		fail "$mode: lossy stream failed: $(cat "$TMP/$mode.lossy.err")"
	expect_eq "$mode: lost line" "$(head -1 "$TMP/$mode.lossy")" \
		"CPU:0 [LOST $overrun EVENTS]"
	expect_eq "$mode: lost lines" "$(grep -c LOST "$TMP/$mode.lossy")" 1
	tail -n +2 "$TMP/$mode.lossy" >"$TMP/$mode.lossy.events"
	if ! cmp -s "$TMP/$mode.lossy.kernel" "$TMP/$mode.lossy.events"; then
		diff "$TMP/$mode.lossy.kernel" "$TMP/$mode.lossy.events" | head -10
		fail "$mode: the survivors differ from the kernel's own text"
	fi
	want=$((overrun + 1))
	awk -v want=$want '{ if ($NF + 0 != want) { print "line " NR ": " $0 ", expected " want; exit 1 } want++ }
		END { if (want != 301) { print "ended at " want - 1 ", expected 300"; exit 1 } }' \
		"$TMP/$mode.lossy.events" || fail "$mode: survivors not $want..300 in order"
	echo "$mode: 40 markers as the kernel prints them; 300 into a small ring: $overrun lost, reported exactly, $entries read"
}

# Mount tracefs if needed and set KRING_ROOT, or skip.
kring_setup() {
	KRING_ROOT=/sys/kernel/tracing
	if [ ! -d $KRING_ROOT/instances ]; then
		mount -t tracefs nodev $KRING_ROOT 2>/dev/null
	fi
	[ -d $KRING_ROOT/instances ] || { echo "SKIP: no tracefs at $KRING_ROOT"; exit 77; }
	mkdir $KRING_ROOT/instances/hvt-kring-$$-probe 2>/dev/null ||
		{ echo "SKIP: cannot create a tracefs instance (not root?)"; exit 77; }
	rmdir $KRING_ROOT/instances/hvt-kring-$$-probe
	KRING_DIRS=
	trap 'for d in $KRING_DIRS; do rmdir $d 2>/dev/null; done; cleanup' EXIT
}
