#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hvtrace record --reader-threads: the CPU buffers of two pre-filled areas
# (8 CPUs in all) read by 1, 2 and 4 reader threads, and by the automatic
# number, give the same file byte for byte.  One area lost events in the
# middle of its pages (consume mode, a host read it, the writer dropped,
# then wrote on); in the file every CPU's events are consecutive once the
# losses are added in, end with the last event written, and the losses
# are exactly the writer's drops.  The threads asked for are the threads
# that run.
. "$(dirname "$0")/lib.sh"
[ -x "$HVTRACE" ] || fail "$HVTRACE not built (make O=... tests)"
[ -x "$WRITER" ] || fail "$WRITER not built (make O=... tests)"

area L lossy
area O full
"$WRITER" --area "$L" --cpus 3 --subbufs 4 --mode consume --kind loopback \
	--clock mono --name lossy --log "$T/l.log" -- \
	write 1000 sleep 1500 write 300 stop >"$T/l.out" 2>&1 &
WL=$!
BGPIDS+=("$WL")
"$WRITER" --area "$O" --cpus 5 --subbufs 16 --mode overwrite --kind loopback \
	--clock mono --name full --log "$T/o.log" -- write 3000 stop \
	>"$T/o.out" 2>&1 &
WO=$!
BGPIDS+=("$WO")
wait_ready "$T/l.log"
# A host reads what the lossy area holds, while its writer sleeps: the
# writer dropped what did not fit, and its next page says how many.
sleep 0.3
"$HVTRACE" stream --drain "$L" >"$T/first.txt" 2>"$T/first.err" ||
	fail "stream of the lossy area failed: $(cat "$T/first.err")"
wait_pid "$WL" 30 || fail "lossy writer failed: $(cat "$T/l.out")"
wait_pid "$WO" 30 || fail "overwrite writer failed: $(cat "$T/o.out")"

for n in 1 2 4 auto; do
	"$HVTRACE" record -q --read-only --reader-threads $n -o "$T/$n.dat" \
		"$L" "$O" 2>"$T/$n.err" ||
		fail "record with $n reader threads failed: $(cat "$T/$n.err")"
	# The stopped writers answer no time sync: their buffers keep the
	# writers' own times, said once each; nothing else.
	grep -v "^hvtrace record: '\(lossy\|full\)': times are the writer's own (buffer clock 'writer-mono')" \
		"$T/$n.err" >"$T/$n.other"
	[ -s "$T/$n.other" ] && fail "record with $n threads: $(cat "$T/$n.err")"
done
for n in 2 4 auto; do
	cmp "$T/1.dat" "$T/$n.dat" ||
		fail "the file read by $n reader threads differs from the one read by 1"
done
echo "1, 2, 4 and auto reader threads: the same file ($(stat -c %s "$T/1.dat") bytes)"

# Every event of the 1-thread file read or counted lost.
"$HVTRACE" report "$T/1.dat" >"$T/report.txt" 2>"$T/report.err" ||
	fail "hvtrace report failed: $(cat "$T/report.err")"
# check BUFFER LOG CPUS WHOLE: per CPU, ids (n of seq (cpu << 32) | n) run
# on with the losses added in, to the last one written; the losses are the
# writer's drops; with WHOLE=yes (no host read the area before), read +
# lost is all the writer wrote.
check() {
	local buf=$1 log=$2 cpus=$3 whole=$4 cpu out written
	for cpu in $(seq 0 $((cpus - 1))); do
		# The event line after a loss line has no buffer tag (as in
		# trace-cmd report): give it the loss line's.
		out=$(awk -v buf="$buf:" -v cpu=$cpu -v tag="$(printf '[%03d]' $cpu)" '
		tagnext != "" { $0 = tagnext " " $0; tagnext = "" }
		$2 ~ /^CPU:/ && $4 == "EVENTS" { tagnext = $1 }
		$1 == buf && $2 == "CPU:" cpu && $4 == "EVENTS" {
			sub(/^\[/, "", $3)
			if (n) want += $3
			lost += $3; next
		}
		$1 == buf && $3 == tag {
			split($NF, a, "="); id = a[2] - cpu * 4294967296
			if (n && id != want) { print "id " id ", expected " want; exit 1 }
			want = id + 1; n++
		}
		END { print n + 0, lost + 0, want + 0 }' "$T/report.txt") ||
			fail "$buf cpu $cpu: $out"
		read -r events lost next <<<"$out"
		last=$(awk -v c=$cpu '$1 == "W" && $2 == c { v = $4 } END { split(v, a, "="); print a[2] - c * 4294967296 }' "$log")
		drops=$(awk -v c=$cpu '$1 == "D" && $2 == c' "$log" | wc -l)
		[ "$events" -gt 0 ] || fail "$buf cpu $cpu: no events"
		expect_last=$((last + 1))
		[ "$next" = "$expect_last" ] ||
			fail "$buf cpu $cpu: events end before id $next, the writer's last was $last"
		[ "$lost" = "$drops" ] ||
			fail "$buf cpu $cpu: $lost lost in the file, the writer dropped $drops"
		if [ "$whole" = yes ]; then
			written=$(awk -v c=$cpu '($1 == "W" || $1 == "D") && $2 == c' "$log" | wc -l)
			[ $((events + lost)) = "$written" ] ||
				fail "$buf cpu $cpu: $events read + $lost lost != $written written"
		fi
		echo "$buf cpu $cpu: $events events, $lost lost = $drops dropped, to id $last"
	done
}
check lossy "$T/l.log" 3 no
check full "$T/o.log" 5 yes
[ "$(grep -c '^D' "$T/l.log")" -gt 0 ] || fail "the lossy writer dropped nothing"

# The threads that run: a live area (a paced writer, so that the drain
# after the interrupt is short), recorded with N threads.
area R running
WR=$("$HVTRACE" loopback --area "$R" --cpus 4 --rate 2000 --background) ||
	fail "the paced writer did not start"
BGPIDS+=("$WR")
for n in 1 3 4; do
	"$HVTRACE" record -q --read-only --reader-threads $n -o "$T/r$n.dat" \
		"$R" 2>"$T/r$n.err" &
	RP=$!
	BGPIDS+=("$RP")
	got=
	# Counted once the output exists: started, not just forked.
	for i in $(seq 1 200); do
		got=$(ls /proc/$RP/task 2>/dev/null | wc -l)
		[ -e "$T/r$n.dat" ] && [ "$got" = "$n" ] && break
		sleep 0.05
	done
	kill -TERM "$RP"
	wait_pid "$RP" 30 || fail "record of the running area failed: $(cat "$T/r$n.err")"
	[ "$got" = "$n" ] || fail "--reader-threads $n: $got threads run"
done
echo "--reader-threads 1, 3, 4: that many threads run"

# Bad values are refused with a reason.
"$HVTRACE" record -q --reader-threads 0 -o "$T/x.dat" "$O" 2>"$T/bad.err" &&
	fail "--reader-threads 0 accepted"
grep -q "bad --reader-threads '0'" "$T/bad.err" ||
	fail "no reason for --reader-threads 0: $(cat "$T/bad.err")"
echo PASS
