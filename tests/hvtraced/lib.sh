# SPDX-License-Identifier: MIT
#
# Helpers for the tests of hvtraced with a private daemon.  Source it
# with a tag for the scratch folder:
#
#	. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" kring-attach
#
# It sets
#   SRC, OBJ     the source tree and the build tree ($HVT_OBJTREE)
#   H            the hvtrace binary; GOLDEN, unit/kring_golden
#   T            a scratch folder /tmp/hvt-TAG.XXXXXX (kept with KEEP=1)
#   HVTRACED_SOCKET  $T/hvtraced.sock (exported)
#   DPID, PIDS   the daemon's pid and a list of other pids, for the test
#                to fill in: on exit they are sent HVT_KILL (TERM unless
#                the test sets KILL), and the daemon SIGKILL if it has
#                not ended within 2 s (a stalled one takes no SIGTERM);
#                then $T and the paths in RM_WITH_T are removed unless
#                KEEP is set, and the paths in RM_ALWAYS always
# and defines
#   fail MSG...           "FAIL: MSG" on stderr, the last 20 lines of
#                         each $T/*.log and $T/*.err, exit 1
#   hvt_dump_logs [N]     the last N (20) lines of each $T/*.log, *.err
#   skip MSG...           "SKIP: MSG", exit 77
#   hvt_need_bins [BIN...]  hvtrace, hvtraced and BINs are built, or FAIL
#   hvt_need_golden       SKIP without unit/kring_golden
#   hvt_golden_seeds      kring_golden's images in $T/seeds (612-golden)
#   wait_for SECONDS CMD...  retry CMD (quiet) every 50 ms until it succeeds
#   hvt_listening [SECONDS [SOCKET]]  wait (5 s) until hvtraced listens on
#                         SOCKET ($HVTRACED_SOCKET), or FAIL

set -u

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OBJ=${HVT_OBJTREE:-$SRC/build}
H=$OBJ/bin/hvtrace
GOLDEN=$OBJ/tests/unit/kring_golden
T=$(mktemp -d "/tmp/hvt-$1.XXXXXX")
export HVTRACED_SOCKET=$T/hvtraced.sock
DPID='' PIDS='' HVT_KILL=TERM RM_WITH_T='' RM_ALWAYS=''

hvt_dump_logs() {
	local f
	for f in "$T"/*.log "$T"/*.err; do
		[ -f "$f" ] && { echo "---- $f" >&2; tail -n "${1:-20}" "$f" >&2; }
	done
}

fail() {
	echo "FAIL: $*" >&2
	hvt_dump_logs
	exit 1
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# hvt_go_on_checks: from here fail() notes a failed check and goes on
# (bad=1; the test exits 1 at its end when $bad says so), and die()
# stops at once with the logs, for tests that report every check.
hvt_go_on_checks() {
	bad=0
	fail() {
		echo "FAIL: $*" >&2
		bad=1
	}
	die() {
		fail "$@"
		hvt_dump_logs 30
		exit 1
	}
}

cleanup() {
	local p
	for p in $PIDS $DPID; do
		kill -"$HVT_KILL" "$p" 2>/dev/null
	done
	if [ -n "$DPID" ] && [ "$HVT_KILL" != KILL ]; then
		for _ in $(seq 40); do
			kill -0 "$DPID" 2>/dev/null || break
			sleep 0.05
		done
		kill -9 "$DPID" 2>/dev/null
	fi
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T" $RM_WITH_T
	[ -z "$RM_ALWAYS" ] || rm -rf $RM_ALWAYS
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

hvt_need_bins() {
	local b
	for b in "$H" "$OBJ/bin/hvtraced" "$@"; do
		# (exit too where the test's fail does not)
		[ -x "$b" ] || { fail "$b is not built"; exit 1; }
	done
}

hvt_need_golden() {
	[ -x "$GOLDEN" ] || skip "$GOLDEN is not built (make tests)"
}

hvt_golden_seeds() {
	mkdir -p "$T/seeds"
	"$GOLDEN" "$T/seeds" >/dev/null 2>&1 || fail "kring_golden did not write its images"
	[ -s "$T/seeds/612-golden" ] || fail "no 612-golden image from kring_golden"
}

wait_for() {	# SECONDS CMD...
	local i
	for ((i = 0; i < $1 * 20; i++)); do
		"${@:2}" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

hvt_listening() {	# [SECONDS [SOCKET]]
	wait_for "${1:-5}" test -S "${2:-$HVTRACED_SOCKET}" ||
		fail "hvtraced did not listen"
}
