#!/bin/bash
# SPDX-License-Identifier: MIT
#
# record NAME of a remote whose writer stopped before the recording: a
# loopback writer fills a 2-CPU consume-mode area with N events per CPU
# and stops; the area is attached to a private hvtraced whose tool queue
# is 64 KiB, and recorded by name with a client feed queue of 256 pages
# (HVTRACE_DAEMON_FEED_PAGES): more than the daemon has out at once (its
# queue and the socket's buffer), so a recorder that keeps reading never
# fills it.  The recorder reads the remote's CPUs while hvtraced drains
# the stopped remote, so the daemon waits for the recorder (backpressure)
# and nothing piles up in the feed: trace-cmd report must show all N ids
# of each CPU, in order, and no loss; the recorder must end by itself;
# hvtrace report must print what trace-cmd prints.
. "$(dirname "$0")/lib.sh"
need_tools
D=$OBJ/bin/hvtraced
[ -x "$D" ] || fail "$D not built"
N=${HVT_TDAT_DRAIN_EVENTS:-1000000}

area SRC_AREA src
"$HVTRACE" loopback --area "$SRC_AREA" --cpus 2 --events "$N" \
	--pages 8192 --mode consume --quiet || fail "loopback writer failed"

"$D" --foreground --socket "$T/d.sock" --run-dir "$T/run" \
	--shm-dir /dev/shm --client-queue 64K >"$T/hvtraced.log" 2>&1 &
DPID=$!
BGPIDS+=("$DPID")
for _ in $(seq 200); do [ -S "$T/d.sock" ] && break; sleep 0.05; done
[ -S "$T/d.sock" ] || fail "hvtraced did not listen: $(tail -3 "$T/hvtraced.log")"
"$HVTRACE" daemon attach --area "$SRC_AREA" --name "$TAG" \
	--socket "$T/d.sock" >"$T/attach.out" 2>&1 ||
	fail "attach failed: $(cat "$T/attach.out")"

HVTRACE_DAEMON_FEED_PAGES=256 timeout 120 "$HVTRACE" record -q \
	-o "$T/n.dat" --socket "$T/d.sock" "$TAG" 2>"$T/rec.err" ||
	fail "record NAME failed: $(tail -3 "$T/rec.err")"

sec=$(od -An -tu2 -j32 -N2 "$T/n.dat" | tr -d ' ')
[ "$sec" = 3 ] ||
	fail "no rooms: section $sec follows the file header (3 expected)"
grep -q 'unused room' "$T/n.dat" && fail "a CPU outgrew its room"
# trace-cmd report into $T/tc.txt, and hvtrace report the same.
same_report "$T/n.dat"
# One pass: a loss line, or an id out of its place, ends it.
awk -v n="$N" '
	/LOST|DROPPED/ { print "a loss in the file: " $0; bad = 1; exit 1 }
	/selftest:/ {
		c = $3
		split($NF, a, "=")
		if (a[2] != got[c] + 0) {
			print c ": id " a[2] " where " got[c] + 0 " was due"
			bad = 1
			exit 1
		}
		got[c]++
	}
	END {
		if (bad)
			exit 1
		for (c in got) k++
		if (k != 2 || got["[000]"] != n || got["[001]"] != n) {
			print "ids of [000] and [001]: " got["[000]"] + 0 \
				" and " got["[001]"] + 0 " of " n " each"
			exit 1
		}
	}' "$T/tc.txt" >"$T/ids.txt" || fail "$(cat "$T/ids.txt")"
kill "$DPID" && wait "$DPID" 2>/dev/null
echo "PASS: 2 x $N events of a stopped remote, none lost, in order"
