# SPDX-License-Identifier: MIT
#
# Sourced by tests: guest612_formats DIR writes into DIR, laid out like a
# guest's tracefs, the header_page and the sched_switch and ftrace:print
# formats of the real Debian 6.12 guest whose ring is the kring_parse seed
# real-612-128k (the formats come from the kmap seed guest-612-formats).
# SRC is the source tree.  Sets SEED to that ring's path.  Fails (through
# the caller's fail) when a seed is missing.

guest612_formats() {
	local dir=$1 fmts=$SRC/tests/fuzz/corpus/kmap/guest-612-formats
	SEED=$SRC/tests/fuzz/corpus/kring_parse/real-612-128k
	[ -r "$SEED" ] && [ -r "$fmts" ] || fail "no seeds $SEED, $fmts"
	mkdir -p "$dir/events/sched/sched_switch" "$dir/events/ftrace/print"
	printf '\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n' \
		>"$dir/events/header_page"
	# Each format: from its "name:" line to the end of its "print fmt:"
	# line (the seed frames the texts with binary lengths).
	guest612_fmt_of "$fmts" sched_switch >"$dir/events/sched/sched_switch/format"
	guest612_fmt_of "$fmts" print >"$dir/events/ftrace/print/format"
	grep -q '^ID: 310$' "$dir/events/sched/sched_switch/format" &&
		grep -q '^ID: 5$' "$dir/events/ftrace/print/format" ||
		fail "formats not cut out of $fmts"
}

guest612_fmt_of() {
	tr -d '\000' <"$1" | awk -v n="name: $2" '
		!on && (i = index($0, n)) { on = 1; $0 = substr($0, i) }
		on { print }
		on && /^print fmt:/ { exit }'
}
