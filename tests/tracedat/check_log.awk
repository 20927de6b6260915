# SPDX-License-Identifier: MIT
#
# Compare what trace-cmd report shows for one buffer with what tdat_writer
# logged.  Usage:
#
#   awk -v buf=NAME -v mode=exact|prefix|overwrite -f check_log.awk LOG REPORT
#
# The log has "W <cpu> <event> <fields>" for each committed event and
# "D <cpu> <event> <fields>" for each dropped one, in write order per CPU.
# The report is trace-cmd report's output: lines of this buffer start with
# "NAME: " (right-aligned), and a line "NAME: CPU:<n> [<k> EVENTS DROPPED]"
# precedes the event that follows a loss (that event's line has no name).
#
# exact:     per CPU, the report must list every committed event in order,
#            with "<k> EVENTS DROPPED" right before the first event after k
#            consecutive drops.  Drops after the last event cannot appear in
#            the report; they are printed as "trailing" for the caller.
# prefix:    as exact, but the report may stop early (the recording was
#            interrupted while the writer went on); with -v allow_empty=1
#            a CPU may have nothing yet (a recording killed early).
# overwrite: events may be missing (overwritten), but only where a loss
#            line reports exactly how many are missing; nothing may appear
#            twice or out of order; the newest events must all be there.
#
# Prints "cpu <n> events <e> lost <l> trailing <t>" per CPU; exits 1 at
# the first mismatch, saying where.

function fail(msg) {
	print "check_log: " msg > "/dev/stderr"
	bad = 1
	exit 1
}

FNR == NR {
	if ($1 != "W" && $1 != "D")
		next
	cpu = $2 + 0
	cpus[cpu] = 1
	text = $3
	for (i = 4; i <= NF; i++)
		text = text " " $i
	if ($1 == "D") {
		drop[cpu]++
		next
	}
	if (drop[cpu]) {
		want[cpu, ++ne[cpu]] = "L " drop[cpu]
		drop[cpu] = 0
	}
	want[cpu, ++ne[cpu]] = "E " text
	w[cpu, ++nw[cpu]] = text
	next
}

{
	line = $0
	trimmed = line
	sub(/^ +/, "", trimmed)
	mine = 0
	if (substr(trimmed, 1, length(buf) + 2) == buf ": ") {
		mine = 1
		line = substr(trimmed, length(buf) + 3)
	} else if (pending == buf) {
		mine = 1
	}
	pending = ""
	if (match(line, /^CPU:[0-9]+ \[[0-9]+ EVENTS DROPPED\]/)) {
		if (!mine)
			next
		split(substr(line, 5), a, /[ \[]+/)
		cpu = a[1] + 0
		cpus[cpu] = 1
		act[cpu, ++na[cpu]] = "L " a[2]
		pending = buf
		next
	}
	if (index(line, "EVENTS DROPPED]")) {
		if (mine)
			fail("loss of an unknown size in buffer " buf ": " $0)
		next
	}
	if (!mine)
		next
	if (!match(line, /\[[0-9][0-9][0-9]\]/))
		next
	cpu = substr(line, RSTART + 1, 3) + 0
	if (!match(line, / [0-9]+\.[0-9]+: /))
		fail("no timestamp in: " $0)
	rest = substr(line, RSTART + RLENGTH)
	c = index(rest, ":")
	ev = substr(rest, 1, c - 1)
	info = substr(rest, c + 1)
	sub(/^ +/, "", info)
	sub(/ +$/, "", info)
	cpus[cpu] = 1
	act[cpu, ++na[cpu]] = "E " ev " " info
}

END {
	if (bad)
		exit 1
	for (cpu in cpus) {
		lost = 0
		events = 0
		if (mode == "exact" || mode == "prefix") {
			n = ne[cpu] > na[cpu] ? ne[cpu] : na[cpu]
			if (mode == "prefix") {
				if (!na[cpu] && !allow_empty)
					fail("buffer " buf " cpu " cpu ": no events")
				n = na[cpu]
			}
			for (i = 1; i <= n; i++) {
				if (want[cpu, i] != act[cpu, i])
					fail("buffer " buf " cpu " cpu " item " i \
					     ": expected [" want[cpu, i] "] got [" \
					     act[cpu, i] "]")
				if (act[cpu, i] ~ /^L /)
					lost += substr(act[cpu, i], 3)
				else
					events++
			}
		} else {
			idx = 1
			skip = 0
			for (i = 1; i <= na[cpu]; i++) {
				a1 = act[cpu, i]
				if (a1 ~ /^L /) {
					skip += substr(a1, 3)
					lost += substr(a1, 3)
					continue
				}
				t = substr(a1, 3)
				for (j = idx; j <= nw[cpu] && w[cpu, j] != t; j++)
					;
				if (j > nw[cpu])
					fail("buffer " buf " cpu " cpu " item " i \
					     ": [" t "] was not written after " \
					     "the previous event (duplicate, " \
					     "reordered or invented)")
				if (j - idx != skip)
					fail("buffer " buf " cpu " cpu ": " \
					     (j - idx) " events missing before [" \
					     t "] but the loss line says " skip)
				idx = j + 1
				skip = 0
				events++
			}
			if (idx != nw[cpu] + 1)
				fail("buffer " buf " cpu " cpu ": the last " \
				     (nw[cpu] + 1 - idx) " events are missing")
		}
		printf "cpu %d events %d lost %d trailing %d\n", cpu, events,
			lost, drop[cpu] + 0
	}
}
