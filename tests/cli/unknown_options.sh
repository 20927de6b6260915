#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every verb says a bad option the same way: exit status 2, nothing on
# stdout, and exactly two lines on stderr,
#
#   hvtrace VERB: unknown option 'X'          (or: option 'X' needs a value)
#   Run 'hvtrace VERB --help' for usage.
#
# with no getopt line before them and no usage text after them.  The verbs
# are taken from 'hvtrace --help', so a new verb is checked too.  hvtraced
# says its own the same way ("hvtraced: ..."), and as "hvtrace daemon"
# when that verb started it.  -V and --version print the version.
. "$(dirname "$0")/lib.sh"
HVTRACED=$(dirname "$HVTRACE")/hvtraced

# expect_usage PROG-WORDS WANT-LINE1 ARGS...
expect_usage() {
	local who=$1 want=$2 rc
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	[ $rc -eq 2 ] || fail "$*: exit $rc, expected 2 ($(cat "$TMP/err"))"
	[ -s "$TMP/out" ] && fail "$*: wrote to stdout: $(head -3 "$TMP/out")"
	printf '%s\n' "$who: $want" "Run '$who --help' for usage." >"$TMP/want"
	cmp -s "$TMP/err" "$TMP/want" ||
		fail "$*: stderr is not the two usage lines:
$(cat "$TMP/err")
--- expected:
$(cat "$TMP/want")"
	checked=$((checked + 1))
}

verbs=$("$HVTRACE" --help | sed -n '/^verbs:/,/^$/{s/^  \([a-z][a-z]*\) .*/\1/p}')
[ "$(echo "$verbs" | wc -w)" -ge 10 ] || fail "hvtrace --help lists too few verbs: $verbs"
checked=0
for v in $verbs; do
	expect_usage "hvtrace $v" "unknown option '--bogus'" "$HVTRACE" $v --bogus
	expect_usage "hvtrace $v" "unknown option '-Z'" "$HVTRACE" $v -Z
done

# An option's missing value, one per verb that has valued options.
expect_usage "hvtrace record" "option '-o' needs a value" "$HVTRACE" record -o
expect_usage "hvtrace record" "option '--output' needs a value" "$HVTRACE" record --output
expect_usage "hvtrace report" "option '-i' needs a value" "$HVTRACE" report -i
expect_usage "hvtrace stream" "option '--count' needs a value" "$HVTRACE" stream "$AREA" --count
expect_usage "hvtrace stat" "option '--cpu' needs a value" "$HVTRACE" stat "$AREA" --cpu
expect_usage "hvtrace loopback" "option '--area' needs a value" "$HVTRACE" loopback --area
expect_usage "hvtrace events" "option '--socket' needs a value" "$HVTRACE" events --socket
expect_usage "hvtrace list" "option '--socket' needs a value" "$HVTRACE" list --socket
# A short option inside a group is named alone.
expect_usage "hvtrace record" "unknown option '-Z'" "$HVTRACE" record -qZ

# hvtrace guest passes launcher options on: the launcher checks them first
# and says what was wrong as "hvtrace guest", and no hvtraced is started
# for a request that was refused.
export HVTRACED_SOCKET=$TMP/hvtraced.sock
expect_usage "hvtrace guest" "start: unknown option '--bogus'" "$HVTRACE" guest start g1 --bogus
expect_usage "hvtrace guest" "start: option '--cpus' needs a value" "$HVTRACE" guest start g1 --cpus
expect_usage "hvtrace guest" "kformats: unknown option '--bogus'" "$HVTRACE" guest kformats --bogus
[ -e "$HVTRACED_SOCKET" ] && fail "a refused 'hvtrace guest start' started hvtraced ($HVTRACED_SOCKET)"
unset HVTRACED_SOCKET

# hvtraced, started directly or by 'hvtrace daemon' (which must not start
# a daemon on a bad command line).
expect_usage "hvtraced" "unknown option '--bogus'" "$HVTRACED" --bogus
expect_usage "hvtraced" "unknown option '-Z'" "$HVTRACED" -Z
expect_usage "hvtraced" "option '--socket' needs a value" "$HVTRACED" --socket
expect_usage "hvtraced" "unexpected argument 'extra'" "$HVTRACED" extra
expect_usage "hvtrace daemon" "unknown option '--bogus'" "$HVTRACE" daemon start --bogus

for flag in -V --version; do
	out=$("$HVTRACE" $flag) || fail "hvtrace $flag failed"
	[[ $out =~ ^hvtrace\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "hvtrace $flag printed '$out'"
done
echo "ok: $checked bad command lines, each in the two usage lines with exit 2"
