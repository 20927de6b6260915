# SPDX-License-Identifier: MIT
#
# Shared code of the trace.dat tests (sourced).  Each test:
#   - writes areas with tdat_writer (which logs every event it wrote or
#     dropped, with the text its print fmt makes of the fields),
#   - records them with hvtrace record,
#   - checks the file with the real trace-cmd (and KernelShark), and that
#     hvtrace report prints exactly what trace-cmd report prints.

set -u

OBJ=${HVT_OBJTREE:-build}
SRC=${HVT_SRCTREE:-.}
HVTRACE=$OBJ/bin/hvtrace
WRITER=$OBJ/tests/tracedat/tdat_writer
CHECK_AWK=$SRC/tests/tracedat/check_log.awk
TRACEFS=/sys/kernel/tracing

T=$(mktemp -d /tmp/hvt-tdat-XXXXXX)
TAG=hvt-tdat-$$
BGPIDS=()
SHMS=()
INSTANCES=()

cleanup() {
	local p i
	for p in "${BGPIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for p in "${SHMS[@]}"; do rm -f "$p"; done
	for i in "${INSTANCES[@]}"; do
		[ -d "$TRACEFS/instances/$i" ] && rmdir "$TRACEFS/instances/$i" 2>/dev/null
	done
	if [ -n "${KEEP:-}" ]; then
		echo "kept $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*"
	exit 77
}

need_tools() {
	[ -x "$HVTRACE" ] || fail "$HVTRACE not built (make O=... tests)"
	[ -x "$WRITER" ] || fail "$WRITER not built (make O=... tests)"
	command -v trace-cmd >/dev/null ||
		skip "trace-cmd is not installed (apt-get install trace-cmd)"
}

# Recording the host kernel needs root and a writable tracefs.
need_kernel() {
	[ "$(id -u)" -eq 0 ] || skip "recording the host kernel needs root"
	[ -w "$TRACEFS/instances" ] ||
		skip "no writable tracefs at $TRACEFS (mount -t tracefs nodev $TRACEFS)"
}

# area VAR NAME: set VAR to a fresh /dev/shm path, removed at exit (not
# in a $(...) subshell: the cleanup list must be this shell's)
area() {
	local p=/dev/shm/$TAG-$2
	SHMS+=("$p")
	printf -v "$1" '%s' "$p"
}

# instance VAR NAME: set VAR to a kernel instance name, removed at exit
instance() {
	local i=$TAG-$2
	INSTANCES+=("$i")
	printf -v "$1" '%s' "$i"
}

# wait_ready LOG: the writer formatted its area
wait_ready() {
	local n=0
	until grep -q '^READY' "$1" 2>/dev/null; do
		n=$((n + 1))
		[ $n -gt 600 ] && fail "writer did not start (log $1)"
		sleep 0.05
	done
}

# live_writer VAR NAME DIR: a writer that keeps writing (a 2-CPU
# consume-mode area of 8 sub-buffers, buffer "live", host mono clock) on
# area NAME, whose path goes to VAR; its log is DIR/w.log, its pid WP.
# Returns once the area is formatted.
live_writer() {
	area "$1" "$2"
	"$WRITER" --area "${!1}" --cpus 2 --subbufs 8 --mode consume --kind hyp \
		--clock mono --name live --log "$3/w.log" -- \
		wait-control run 0 >"$3/w.out" 2>&1 &
	WP=$!
	BGPIDS+=("$WP")
	wait_ready "$3/w.log"
}

# wait_pid PID SECONDS: wait for a background process, fail if it runs on
wait_pid() {
	local pid=$1 limit=$2 n=0
	while kill -0 "$pid" 2>/dev/null; do
		n=$((n + 1))
		if [ $n -gt $((limit * 20)) ]; then
			fail "process $pid still running after ${limit}s"
		fi
		sleep 0.05
	done
	wait "$pid"
}

# check_buffer LOG REPORT BUFFER [MODE]: the events trace-cmd shows for
# BUFFER are exactly what the writer logged, CPU by CPU and in order, with
# every loss reported where it happened and with its count.
#   MODE exact      every committed event, losses = the writer's drops
#   MODE overwrite  committed events may be missing only where a loss line
#                   reports exactly how many
check_buffer() {
	awk -v buf="$3" -v mode="${4:-exact}" -f "$CHECK_AWK" "$1" "$2" ||
		fail "buffer $3: trace-cmd report differs from what was written (log $1, report $2)"
}

# same_report FILE: hvtrace report prints what trace-cmd report prints
same_report() {
	trace-cmd report "$1" >"$T/tc.txt" 2>"$T/tc.err" ||
		fail "trace-cmd report $1 failed: $(head -3 "$T/tc.err")"
	"$HVTRACE" report "$1" >"$T/hv.txt" 2>"$T/hv.err" ||
		fail "hvtrace report $1 failed: $(head -3 "$T/hv.err")"
	if ! cmp -s "$T/tc.txt" "$T/hv.txt"; then
		diff "$T/tc.txt" "$T/hv.txt" | head -20 >&2
		fail "hvtrace report and trace-cmd report differ for $1"
	fi
	trace-cmd report --stat "$1" >"$T/tcs.txt" 2>&1 ||
		fail "trace-cmd report --stat $1 failed"
	"$HVTRACE" report --stat "$1" >"$T/hvs.txt" 2>&1 ||
		fail "hvtrace report --stat $1 failed"
	if ! cmp -s "$T/tcs.txt" "$T/hvs.txt"; then
		diff "$T/tcs.txt" "$T/hvs.txt" | head -20 >&2
		fail "hvtrace report --stat and trace-cmd report --stat differ"
	fi
}

# stat_of FILE BUFFER CPU FIELD: a value of the CPU statistics trace-cmd
# prints for BUFFER ("" for the top-level one)
stat_of() {
	trace-cmd report --stat "$1" 2>/dev/null | awk -v buf="$2" -v cpu="$3" \
		-v field="$4" '
		/^Buffer: / { cur = substr($0, 9); next }
		/^CPU: / { c = $2; next }
		{
			i = index($0, ": ")
			if (i && cur == buf && c == cpu &&
			    substr($0, 1, i - 1) == field) {
				print substr($0, i + 2) + 0
				found = 1
			}
		}
		END { if (!found) print "missing" }'
}
