#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every installed program has a manual page, every hvtrace verb and every
# program answers --help, and the option lists of the code, of --help and
# of the page agree:
#
#   - each program of the build's bin/ (what 'make install' puts in
#     PREFIX/bin) and the launcher 'hvtrace guest' runs (libexec) has a
#     page docs/man/NAME.1 or NAME.8;
#   - 'PROG --help' and 'PROG -h' (for hvtrace, 'hvtrace VERB --help'
#     and '-h') print the usage on stdout, nothing on stderr, and exit 0;
#   - each option --help lists (in its usage lines or as the entry of an
#     option list) is named by the page where it documents that verb or
#     program (the verb's section of hvtrace(1), or the SYNOPSIS,
#     DESCRIPTION and OPTIONS of the program's own page), and each
#     option that page lists (a .TP or .IP tag, a synopsis line) is
#     named by --help, long and short;
#   - the options the code accepts (its getopt_long() table and option
#     string, the strcmp()s of a verb that reads argv itself, or the
#     case patterns of the launcher) are the options --help lists; a
#     verb that hands its options on ('hvtrace daemon' to hvtraced,
#     'hvtrace guest start' to the launcher) may list the other's too.
#
# Each disagreement is one line: "hvtrace record: --foo in --help, not
# in hvtrace(1)".  --help and -h themselves are checked by running them,
# not compared.  Runs no daemon and no guest: only --help.
#
# Environment: HVT_SRCTREE, HVT_OBJTREE (the build tree).  Exit 0 pass,
# 1 fail, 77 when perl is missing.
set -u

src=${HVT_SRCTREE:-$(cd "$(dirname "$0")/../.." && pwd)}
obj=${HVT_OBJTREE:-$src/build}
man_dir=$src/docs/man
launcher=$src/qemu-scripts/hvtrace-guest

command -v perl >/dev/null 2>&1 || { echo "SKIP: perl is not installed"; exit 77; }
export LC_ALL=C
tmp=$(mktemp -d /tmp/hvt-manopt.XXXXXX)
trap '[ -n "${HVT_KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT

failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# An option name in a text: --long or -x, starting a word (not the
# hyphen of "re-run" or "+-2 us").
OPT_RE='(?:^|(?<=[\s\[(|,"'"'"'`{=]))(--?[A-Za-z][A-Za-z0-9-]*)'

# Perl: print each option (OPT_RE) of the line in $_, one a line, without
# trailing dashes, leaving out single-dash words (-foo) that are no
# options.
PRINT_OPTIONS='while (/'"$OPT_RE"'/g) {
	my $o = $1;
	next if $o =~ /^-[A-Za-z][A-Za-z0-9]/;
	$o =~ s/-+$//;
	print "$o\n";
}'

# The options a --help text (stdin) lists: those of its usage lines (up
# to the first blank line, and lines indented by at most 6 columns that
# start with the program's name) and of its option entries (a line
# indented by at most 6 columns that starts with an option: the options
# before its description, which follows two spaces); with ALL=1 every
# option it names.
help_options() {
	ALL=${1:-0} perl -ne '
		BEGIN { $u = 1; $all = $ENV{ALL} }
		$u = 0 if /^\s*$/;
		if (!$all && !$u && /^ {1,6}-/) {
			my $l = "";
			(my $t = $_) =~ s/^\s+//;
			for my $c (split /\s{2,}/, $t) {
				last unless $c =~ /^-/;
				$l .= " $c";
			}
			$_ = $l;
		} elsif (!$all && !$u) {
			next unless /^ {0,6}hvtrace/;
		}
		'"$PRINT_OPTIONS"'' | sort -u
}

# The options roff text (stdin) lists: the tags of .TP (and .TQ) and
# .IP entries, the lines of .nf blocks, and with ALL=1 every line.
roff_options() {
	ALL=${1:-0} perl -ne '
		BEGIN { $all = $ENV{ALL} }
		if (/^\.TP/) { $tp = 1; next }
		if (/^\.TQ/) { $tp = 1; next }
		if (/^\.nf/) { $nf = 1; next }
		if (/^\.fi/) { $nf = 0; next }
		next if /^\.(?:PD|\\")/;
		$take = $all || $nf || /^\.IP\s/ || $tp;
		$tp = 0;
		next unless $take;
		s/\\f[BIRP]|\\f\(..|\\f\[[^]]*\]//g;
		s/\\-/-/g;
		s/\\\(..|\\&|\\ //g;
		s/"/ /g;
		s/^\.[A-Za-z]+\s*/ /;
		'"$PRINT_OPTIONS"'' | sort -u
}

# The roff of verb $1's .SS section of hvtrace.1.
verb_section() {
	awk -v v="$1" '/^\.SH /{ on = 0 } /^\.SS /{ on = ($2 == v) } on' "$man_dir/hvtrace.1"
}

# The options a program's own page $1 lists: its SYNOPSIS (every option)
# and the entries of its OPTIONS section; with $2 = 1, every option its
# SYNOPSIS, DESCRIPTION and OPTIONS name.
page_options() {
	{
		awk '/^\.SH /{ on = ($2 == "SYNOPSIS") } on' "$1" | roff_options 1
		awk '/^\.SH /{ on = ($2 == "OPTIONS") } on' "$1" | roff_options "${2:-0}"
		[ "${2:-0}" = 0 ] ||
			awk '/^\.SH /{ on = ($2 == "DESCRIPTION") } on' "$1" | roff_options 1
	} | sort -u
}

# The options C file $1 accepts: the long names of its struct option
# tables and the letters of its getopt_long() option strings, else the
# options its strcmp()s compare argv with -- less those whose test leads
# straight to a refusal (hvt_cli_usage()).
code_options() {
	perl -0777 -ne '
		my %o;
		s{/\*.*?\*/}{ }gs;
		if (/getopt_long\s*\(/) {
			while (/struct\s+option\s+\w+\s*\[\s*\]\s*=\s*\{(.*?)\}\s*;/gs) {
				my $t = $1;
				$o{"--$1"} = 1 while $t =~ /\{\s*"([A-Za-z0-9-]+)"\s*,/g;
			}
			while (/getopt_long\s*\([^,]*,[^,]*,\s*"([^"]*)"/g) {
				$o{"-$_"} = 1 for grep { /[A-Za-z]/ } split //, $1;
			}
		} else {
			my %refused;
			while (/if\s*\(((?:[^{};]|\([^{};]*\))*?)\)\s*\{?\s*return\s+hvt_cli_usage/gs) {
				my $c = $1;
				$refused{$1}++ while $c =~ /strcmp\s*\([^,]+,\s*"(-{1,2}[A-Za-z][A-Za-z0-9-]*)"\s*\)/g;
			}
			my %n;
			$n{$1}++ while /strn?cmp\s*\([^,()]+,\s*"(-{1,2}[A-Za-z][A-Za-z0-9-]*)=?"\s*[,)]/g;
			for (keys %n) {
				$o{$_} = 1 if $n{$_} > ($refused{$_} // 0);
			}
		}
		print "$_\n" for keys %o;' "$1" | sort -u
}

# The options the launcher (a bash script) accepts: its case patterns.
script_options() {
	perl -ne '
		next unless /^\s*((?:-[-A-Za-z0-9]+\s*\|\s*)*-[-A-Za-z0-9]+)\s*\)/;
		print "$_\n" for grep { /^-/ } split /\s*\|\s*/, $1;' "$1" | sort -u
}

# "what: X in A, not in B" for each line of file $2 not in file $3.
report() {
	local what=$1 a=$2 b=$3 in_a=$4 in_b=$5 o
	for o in $(comm -23 "$a" "$b" | grep -vx -- '--help\|-h'); do
		fail "$what: $o $in_a, not $in_b"
	done
}

# --help and -h: usage on stdout, nothing on stderr, status 0.
check_help() {
	local what=$1 h rc
	shift
	for h in --help -h; do
		"$@" "$h" >"$tmp/out" 2>"$tmp/err" </dev/null
		rc=$?
		if [ "$rc" -ne 0 ]; then
			fail "$what $h exits $rc (want 0): $(head -n 2 "$tmp/err")"
		elif [ -s "$tmp/err" ]; then
			fail "$what $h writes to stderr: $(head -n 2 "$tmp/err")"
		elif ! grep -qi '^usage:\|^ *hvtrace' "$tmp/out"; then
			fail "$what $h prints no usage on stdout"
		fi
	done
	"$@" --help >"$tmp/help.txt" 2>/dev/null </dev/null
}

# Compare program/verb $1: help text in $tmp/help.txt, the options its
# page lists in $tmp/page and names anywhere in $tmp/page-all, page name
# $2, code options in $tmp/code (from $3), options it hands on in
# $tmp/passed.  What one side lists must be named by the other: a page
# may name in its prose options that --help lists as entries, and the
# other way round.
compare() {
	local what=$1 page=$2 code=$3
	help_options <"$tmp/help.txt" >"$tmp/help"
	help_options 1 <"$tmp/help.txt" >"$tmp/help-all"
	report "$what" "$tmp/help" "$tmp/page-all" "in --help" "in $page"
	report "$what" "$tmp/page" "$tmp/help-all" "in $page" "in --help"
	[ -n "$code" ] || return 0
	report "$what" "$tmp/code" "$tmp/help" "accepted ($code)" "in --help"
	sort -u "$tmp/code" "$tmp/passed" >"$tmp/takes"
	report "$what" "$tmp/help" "$tmp/takes" "in --help" "accepted ($code)"
}

nr=0

# --- the installed programs have pages -------------------------------------
progs=()
for p in "$obj"/bin/*; do
	[ -x "$p" ] && [ -f "$p" ] && progs+=("${p##*/}")
done
[ ${#progs[@]} -gt 0 ] || { echo "FAIL: no programs in $obj/bin: build first"; exit 1; }
[ -x "$launcher" ] && progs+=(hvtrace-guest)
page_of() {
	local s
	for s in 1 8; do
		[ -f "$man_dir/$1.$s" ] && { echo "$1.$s"; return 0; }
	done
	return 1
}
for p in "${progs[@]}"; do
	page_of "$p" >/dev/null || fail "$p is installed but has no page docs/man/$p.1 or $p.8"
done

# --- hvtrace and its verbs ---------------------------------------------------
hvtrace=$obj/bin/hvtrace
if [ -x "$hvtrace" ]; then
	# hvtrace itself: the SYNOPSIS lines of hvtrace(1) without a verb.
	nr=$((nr + 1))
	check_help hvtrace "$hvtrace"
	awk '/^\.SH /{ on = ($2 == "SYNOPSIS") } on' "$man_dir/hvtrace.1" |
		grep '^\\fBhvtrace \\-' | roff_options 1 >"$tmp/page"
	cp "$tmp/page" "$tmp/page-all"
	code_options "$src/host/cli/main.c" >"$tmp/code"
	: >"$tmp/passed"
	compare hvtrace "hvtrace(1)" host/cli/main.c
	# Each verb's source file: the one that registers it.
	verbs=$("$hvtrace" --help | sed -n 's/^  \([a-z][a-z0-9-]*\)  .*/\1/p')
	[ -n "$verbs" ] || fail "'hvtrace --help' lists no verbs"
	: >"$tmp/daemon-passed"
	: >"$tmp/launcher-passed"
	if [ -x "$obj/bin/hvtraced" ]; then
		code_options "$src/host/hvtraced/main.c" >"$tmp/daemon-passed"
	fi
	if [ -x "$launcher" ]; then
		script_options "$launcher" >"$tmp/launcher-passed"
	fi
	for v in $verbs; do
		nr=$((nr + 1))
		check_help "hvtrace $v" "$hvtrace" "$v"
		verb_section "$v" | roff_options >"$tmp/page"
		verb_section "$v" | roff_options 1 >"$tmp/page-all"
		verb_section "$v" | grep -q . || fail "hvtrace $v: no section in hvtrace(1)"
		f=$(grep -l "HVT_CLI_COMMAND($v," "$src"/host/cli/cmd_*.c | head -n 1)
		: >"$tmp/code"
		: >"$tmp/passed"
		if [ -n "$f" ]; then
			code_options "$f" >"$tmp/code"
			case $v in
			daemon) cp "$tmp/daemon-passed" "$tmp/passed" ;;
			guest) cp "$tmp/launcher-passed" "$tmp/passed" ;;
			esac
			compare "hvtrace $v" "hvtrace(1)" "${f#"$src"/}"
		else
			fail "hvtrace $v: no host/cli/cmd_*.c registers it"
		fi
	done
fi

# --- the other programs: their own pages -------------------------------------
# PROG SOURCE (C file, or the launcher script itself)
sources="hvtraced host/hvtraced/main.c
hvtrace-agent guest/agent/main.c
hvtrace-ivshmem host/ivshmem/main.c
hvtrace-guest qemu-scripts/hvtrace-guest"
for p in "${progs[@]}"; do
	[ "$p" = hvtrace ] || grep -q "^$p " <<<"$sources" ||
		fail "$p: its source is not known here: add it to tests/man/options.sh"
done
while read -r p srcf; do
	exe=$obj/bin/$p
	[ "$p" = hvtrace-guest ] && exe=$launcher
	[ -x "$exe" ] || continue
	nr=$((nr + 1))
	check_help "$p" "$exe"
	pg=$(page_of "$p") || continue
	page_options "$man_dir/$pg" >"$tmp/page"
	page_options "$man_dir/$pg" 1 >"$tmp/page-all"
	: >"$tmp/passed"
	if [ "$p" = hvtrace-guest ]; then
		script_options "$src/$srcf" >"$tmp/code"
	else
		code_options "$src/$srcf" >"$tmp/code"
	fi
	compare "$p" "${pg%.*}(${pg##*.})" "$srcf"
done <<<"$sources"

echo "checked the options of $nr verbs and programs; $failures failure(s)"
[ $failures -eq 0 ] || exit 1
exit 0
