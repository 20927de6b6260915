#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The manual pages in docs/man are complete, render without warnings, and
# their examples build and run:
#
#   - every page renders with man --warnings and groff -ww without a
#     warning, and no rendered line is wider than 80 columns;
#   - every .so link names a page that exists, and resolves in an
#     installed layout (man -M DIR NAME);
#   - every HVTRACE_API function of every public host header
#     (host/include/hvtrace*.h) and every
#     function of guest/include/hvtrace-guest.h has a page, whose NAME
#     lists it and whose SYNOPSIS shows exactly its prototype;
#   - every hvtrace/hvtg/libhvtrace page a page refers to exists, and
#     every errno name a page mentions is a real one;
#   - every verb registered in host/cli (HVT_CLI_COMMAND) has a section
#     in hvtrace.1 and every section there is a verb; with a build, every
#     --option in 'hvtrace VERB --help', 'hvtraced --help' and
#     'hvtrace-agent --help' is in the page;
#   - the example programs of libhvtrace(3) and libhvtrace-guest(3),
#     taken from the rendered pages, compile against the build tree and
#     run against real areas.
#
# Environment: HVT_SRCTREE, HVT_OBJTREE (the build tree), HVT_MAN_HOST and
# HVT_MAN_GUEST (y when the configuration builds the host and the guest
# library).  Exit 0 pass, 1 fail, 77 when man or groff is missing.
set -u

src=${HVT_SRCTREE:-$(cd "$(dirname "$0")/../.." && pwd)}
obj=${HVT_OBJTREE:-$src/build}
man_dir=$src/docs/man
want_host=${HVT_MAN_HOST:-y}
want_guest=${HVT_MAN_GUEST:-y}

for t in man groff col perl cc; do
	if ! command -v "$t" >/dev/null 2>&1; then
		case $t in
		man | groff | col)
			echo "SKIP: $t is not installed (apt-get install man-db groff-base bsdextrautils)"
			exit 77
			;;
		*)
			echo "FAIL: $t is not installed"
			exit 1
			;;
		esac
	fi
done

export LC_ALL=C MANWIDTH=80 MANPAGER=cat PAGER=cat
tmp=$(mktemp -d /tmp/hvt-man.XXXXXX)
bg_pids=
cleanup() {
	local p
	for p in $bg_pids; do
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$tmp"
	rm -f /dev/shm/hvt-man-$$-*
}
trap cleanup EXIT

failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# Render PAGE (a path) as man shows it, formatting stripped.
render() {
	man -l "$1" 2>/dev/null | col -bx
}

# The same text without hyphenation, for checks that look for words.
render_words() {
	groff -man -Tascii -rHY=0 -P-c -P-b -P-u "$1" 2>/dev/null | col -bx
}

# --- the installed layout: man1, man3, man7, man8 -------------------------
pages=()
for f in "$man_dir"/*.[1378]; do
	[ -e "$f" ] || continue
	pages+=("$f")
	sec=${f##*.}
	mkdir -p "$tmp/man/man$sec"
	cp "$f" "$tmp/man/man$sec/"
done
[ ${#pages[@]} -gt 0 ] || { echo "FAIL: no pages in $man_dir"; exit 1; }

is_link() { head -n 1 "$1" | grep -q '^\.so '; }

# --- 1. rendering ------------------------------------------------------------
nr_full=0 nr_link=0
for f in "${pages[@]}"; do
	base=${f##*/}
	sec=${base##*.}
	if is_link "$f"; then
		nr_link=$((nr_link + 1))
		if [ "$(wc -l <"$f")" -ne 1 ]; then
			fail "$base: a .so link must be one line"
			continue
		fi
		target=$(sed -n 's/^\.so //p' "$f")
		case $target in
		man[1378]/*) ;;
		*)
			fail "$base: link target '$target' is not manN/PAGE"
			continue
			;;
		esac
		if [ ! -f "$man_dir/${target#*/}" ] || is_link "$man_dir/${target#*/}"; then
			fail "$base: links to $target, which is not a page"
			continue
		fi
		# Resolved as installed, from the manN directory's parent.
		w=$(cd "$tmp/man" && man --warnings -l "man$sec/$base" 2>&1 >/dev/null)
		[ -z "$w" ] || fail "$base: man --warnings: $w"
		name=${base%.*}
		man -M "$tmp/man" -w "$sec" "$name" >/dev/null 2>&1 ||
			fail "man -M DIR $sec $name does not find the page"
		continue
	fi
	nr_full=$((nr_full + 1))
	w=$(man --warnings -l "$f" 2>&1 >/dev/null)
	[ -z "$w" ] || fail "$base: man --warnings: $w"
	w=$(groff -man -ww -z "$f" 2>&1)
	[ -z "$w" ] || fail "$base: groff -ww: $w"
	long=$(render "$f" | awk 'length > 80 { n++ } END { print n + 0 }')
	[ "$long" -eq 0 ] || fail "$base: $long rendered line(s) wider than 80 columns"
	# .TH names the page as its file does.
	th=$(sed -n 's/^\.TH \([^ ]*\) \([^ ]*\) .*/\1 \2/p' "$f" | head -n 1 | sed 's/\\-/-/g')
	[ "$th" = "${base%.*} $sec" ] || fail "$base: .TH says '$th'"
	for s in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
		grep -q "^\.SH \"\{0,1\}$s\"\{0,1\}\$" "$f" || fail "$base: no $s section"
	done
	if [ "$sec" = 3 ] && [[ $base != lib* ]]; then
		grep -q '^\.SH "\{0,1\}RETURN VALUE"\{0,1\}$' "$f" ||
			fail "$base: no RETURN VALUE section"
	fi
	if [ "$sec" = 1 ] || [ "$sec" = 8 ]; then
		grep -q '^\.SH "\{0,1\}EXIT STATUS"\{0,1\}$' "$f" ||
			fail "$base: no EXIT STATUS section"
	fi
done
echo "rendered $nr_full pages and $nr_link links"

# --- 2. every public function has a page that shows its prototype ---------

# Print "name<TAB>prototype" for every function a header declares:
# comments and preprocessor lines removed, each declaration reduced to
# its return type, name and parameters with single spaces.
declarations() {
	perl -0777 -ne '
		my $prefix = $ARGV =~ /guest/ ? "hvtg_" : "hvtrace_";
		s{/\*.*?\*/}{ }gs;
		s{//[^\n]*}{}g;
		s{^[ \t]*#(?:[^\n]*\\\n)*[^\n]*}{}mg;
		while (/(?:^|(?<=[;{}]))\s*([^;{}]*?\b(\Q$prefix\E\w+)\s*\((?:[^;{}()]|\([^;{}()]*\))*\))\s*(?=[;{])/gs) {
			my ($decl, $name) = ($1, $2);
			next if $decl =~ /^\s*(?:struct|enum|union)\s+\w+\s*$/;
			$decl =~ s/\bHVTRACE_API\b//;
			$decl =~ s/\bstatic\s+inline\b//;
			$decl =~ s/\s+/ /g;
			$decl =~ s/^ | $//g;
			print "$name\t$decl\n";
		}' "$1"
}

check_functions() {
	local header=$1 label=$2 n=0 name decl page full syn
	[ -f "$header" ] || { fail "no $header"; return; }
	while IFS=$'\t' read -r name decl; do
		n=$((n + 1))
		page=$man_dir/$name.3
		if [ ! -f "$page" ]; then
			fail "$name ($label) has no page docs/man/$name.3"
			continue
		fi
		full=$page
		if is_link "$page"; then
			full=$man_dir/$(sed -n 's/^\.so man3\///p' "$page")
			[ -f "$full" ] || continue	# reported above
		fi
		# The NAME line lists it.
		if ! awk '/^\.SH/ { on = ($2 == "NAME"); next } on' "$full" |
			sed 's/ \\- .*//; s/\\//g' | tr ', ' '\n\n' | grep -qx -- "$name"; then
			fail "$name: the NAME section of ${full##*/} does not list it"
		fi
		# SYNOPSIS shows the exact prototype (whitespace aside).
		syn=$(render_words "$full" | sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | tr -d ' \n\t')
		case $syn in
		*"$(printf '%s' "$decl" | tr -d ' ')"*) ;;
		*) fail "$name: the SYNOPSIS of ${full##*/} does not show '$decl'" ;;
		esac
	done < <(declarations "$header")
	[ "$n" -gt 0 ] || fail "found no functions in $header"
	# Cross-check the extraction for the host header: one declaration
	# per HVTRACE_API.
	if [ "${label%%-*}" = libhvtrace ] && [ "$label" != libhvtrace-guest ]; then
		api=$(grep -c '^HVTRACE_API' "$header")
		[ "$n" -eq "$api" ] || fail "found $n declarations in $header, which has $api HVTRACE_API lines"
	fi
	echo "checked $n $label functions"
	nr_funcs=$((nr_funcs + n))
}
nr_funcs=0
# Every public host header: hvtrace.h (libhvtrace) and hvtrace-X.h
# (libhvtrace-X, or the core's for hvtrace-userevents.h).
for h in "$src"/host/include/hvtrace*.h; do
	b=${h##*/}
	b=${b%.h}
	check_functions "$h" "lib$b"
done
check_functions "$src/guest/include/hvtrace-guest.h" libhvtrace-guest

# --- 3. cross references and errno names --------------------------------------
errnos=$(perl -MErrno -e 'print join("\n", keys %!), "\n"')
for f in "${pages[@]}"; do
	is_link "$f" && continue
	base=${f##*/}
	while read -r ref; do
		n=${ref%% *}
		s=${ref##* }
		[ -f "$man_dir/$n.$s" ] || fail "$base refers to $n($s), which has no page"
	done < <(sed -n 's/^\.BR \(\(hvtrace\|hvtg\|libhvtrace\)[a-z0-9_\\-]*\) (\([1378]\)).*/\1 \3/p' "$f" |
		sed 's/\\-/-/g')
	for e in $(render_words "$f" | grep -o '[-(]E[A-Z0-9]\{2,\}\b' | tr -d '(-' | sort -u); do
		grep -qx "$e" <<<"$errnos" || fail "$base names $e, which is not an errno"
	done
done

# --- 4. the CLI: verbs and options ----------------------------------------------
hv1=$man_dir/hvtrace.1
# The name is HVT_CLI_COMMAND's second argument: a string, or a macro
# the same file #defines to one.
verbs=$(for f in "$src"/host/cli/*.c; do
	perl -0777 -ne '
		while (/HVT_CLI_COMMAND\s*\(\s*\w+\s*,\s*("([^"]*)"|(\w+))/g) {
			my ($lit, $id) = ($2, $3);
			if (defined $id) {
				($lit) = /^[ \t]*#[ \t]*define[ \t]+\Q$id\E[ \t]+"([^"]*)"/m;
				$lit = "?$id" unless defined $lit;
			}
			print "$lit\n";
		}' "$f"
done | sort -u)
[ -n "$verbs" ] || fail "found no HVT_CLI_COMMAND in host/cli"
documented=$(sed -n 's/^\.SS \([a-z0-9-]*\)$/\1/p' "$hv1" | sort -u)
for v in $verbs; do
	grep -qx "$v" <<<"$documented" || fail "verb '$v' has no .SS section in hvtrace.1"
done
for v in $documented; do
	case $v in
	[a-z]*) grep -qx "$v" <<<"$verbs" || fail "hvtrace.1 documents '$v', which is not a verb" ;;
	esac
done
echo "checked $(wc -w <<<"$verbs") verbs: $(echo $verbs)"

# The text of the .SS section of verb $1 in hvtrace.1.
verb_section() {
	awk -v v="$1" '/^\.SH /{ on = 0 } /^\.SS /{ on = ($2 == v) } on' "$hv1"
}

# Every --option of a --help text ($3) appears (as \-\-option) in the
# page text $2 (--help and --version are documented once per page).
check_options() {
	local what=$1 text=$2 help=$3 o
	for o in $(grep -o -- '--[a-z][a-z0-9-]*' <<<"$help" | grep -vx -- '--help\|--version' | sort -u); do
		grep -qF -- "$(sed 's/-/\\-/g' <<<"$o")" <<<"$text" ||
			fail "$what: option $o (from --help) is not documented"
	done
}

if [ "$want_host" = y ]; then
	hvtrace=$obj/bin/hvtrace
	if [ -x "$hvtrace" ]; then
		for v in $verbs; do
			check_options "hvtrace.1 $v" "$(verb_section "$v")" "$("$hvtrace" "$v" --help 2>&1)"
		done
		# Verbs --help lists match the registered ones.
		listed=$("$hvtrace" --help | sed -n 's/^  \([a-z][a-z0-9-]*\)  .*/\1/p' | sort -u)
		[ "$listed" = "$verbs" ] || fail "'hvtrace --help' lists '$(echo $listed)', the sources register '$(echo $verbs)'"
	else
		fail "no $hvtrace: build first (make O=... all)"
	fi
	if ls "$src"/host/hvtraced/*.c >/dev/null 2>&1; then
		if [ ! -f "$man_dir/hvtraced.8" ]; then
			fail "host/hvtraced exists but docs/man/hvtraced.8 does not"
		elif [ -x "$obj/bin/hvtraced" ]; then
			check_options hvtraced.8 "$(cat "$man_dir/hvtraced.8")" "$("$obj/bin/hvtraced" --help 2>&1)"
		else
			fail "no $obj/bin/hvtraced: build first"
		fi
	fi
fi
if [ "$want_guest" = y ] && ls "$src"/guest/agent/*.c >/dev/null 2>&1; then
	if [ ! -f "$man_dir/hvtrace-agent.8" ]; then
		fail "guest/agent exists but docs/man/hvtrace-agent.8 does not"
	elif [ -x "$obj/bin/hvtrace-agent" ]; then
		check_options hvtrace-agent.8 "$(cat "$man_dir/hvtrace-agent.8")" "$("$obj/bin/hvtrace-agent" --help 2>&1)"
	else
		fail "no $obj/bin/hvtrace-agent: build first"
	fi
fi

# --- 5. the example programs -----------------------------------------------------

# The C program in the EXAMPLES section of page $1, as man shows it: the
# indented block that starts at its first #include, de-indented.
example_of() {
	render "$1" | awk '
		/^EXAMPLES/ { ex = 1; next }
		/^[A-Z]/ { ex = 0 }
		!ex { next }
		!on && /^ +#include/ { on = 1; match($0, /^ +/); ind = RLENGTH }
		!on { next }
		/^ *$/ { print ""; next }
		{ match($0, /^ */); if (RLENGTH < ind) exit; print substr($0, ind + 1) }'
}

if [ "$want_host" = y ]; then
	example_of "$man_dir/libhvtrace.3" >"$tmp/areacat.c"
	if ! grep -q '^int main' "$tmp/areacat.c"; then
		fail "libhvtrace.3: no example program found"
	elif ! cc -std=gnu11 -Wall -Wextra -Werror -o "$tmp/areacat" "$tmp/areacat.c" \
		-I"$src/host/include" -I"$src/shared/include" \
		-L"$obj/lib" -lhvtrace -Wl,-rpath,"$obj/lib" 2>"$tmp/cc.log"; then
		fail "libhvtrace.3: the example does not compile: $(head -n 5 "$tmp/cc.log")"
	else
		area=/dev/shm/hvt-man-$$-host
		if ! "$obj/bin/hvtrace" loopback --area "$area" --cpus 2 --events 300 \
			--quiet --clock mono; then
			fail "hvtrace loopback could not write an area for the example"
		elif ! "$tmp/areacat" "$area" >"$tmp/areacat.out" 2>"$tmp/areacat.err"; then
			fail "libhvtrace.3: the example failed: $(head -n 3 "$tmp/areacat.err")"
		else
			# 300 events per CPU, ids 0..299 in order on each CPU.
			for c in 000 001; do
				got=$(grep -F "[$c]" "$tmp/areacat.out" | grep -o 'selftest: id=[0-9]*' |
					sed 's/.*=//' | tr '\n' ' ')
				[ "$got" = "$(seq -s ' ' 0 299) " ] ||
					fail "libhvtrace.3 example: CPU $c printed ids '${got:0:60}...'"
			done
			for c in 0 1; do
				grep -qx "cpu $c: written 300 read 300 lost 0" "$tmp/areacat.out" ||
					fail "libhvtrace.3 example: no account line for cpu $c"
			done
			# Time order across CPUs (the merge).
			awk '/selftest/ { t = $4 + 0; if (t < last) bad = 1; last = t } END { exit bad }' \
				"$tmp/areacat.out" || fail "libhvtrace.3 example: events out of time order"
			echo "libhvtrace.3 example: compiled, read 600 events"
		fi
	fi
	# It refuses what is not an area, with the library's message.
	if [ -x "$tmp/areacat" ]; then
		head -c 65536 /dev/urandom >"$tmp/noise"
		if "$tmp/areacat" "$tmp/noise" >/dev/null 2>"$tmp/noise.err"; then
			fail "libhvtrace.3 example accepted random bytes as an area"
		fi
		grep -q 'not an hvtrace area' "$tmp/noise.err" ||
			fail "libhvtrace.3 example: unexpected message for random bytes: $(cat "$tmp/noise.err")"
	fi
fi

if [ "$want_guest" = y ]; then
	example_of "$man_dir/libhvtrace-guest.3" >"$tmp/selftest.c"
	if ! grep -q '^int main' "$tmp/selftest.c"; then
		fail "libhvtrace-guest.3: no example program found"
	elif ! cc -std=gnu11 -Wall -Wextra -Werror -o "$tmp/selftest" "$tmp/selftest.c" \
		-I"$src/guest/include" "$obj/lib/libhvtrace-guest.a" 2>"$tmp/cc.log"; then
		fail "libhvtrace-guest.3: the example does not compile: $(head -n 5 "$tmp/cc.log")"
	elif [ "$want_host" != y ]; then
		echo "libhvtrace-guest.3 example: compiled (no host build to read it)"
	else
		area=/dev/shm/hvt-man-$$-guest
		"$tmp/selftest" "$area" 500 >"$tmp/selftest.out" 2>&1 &
		wpid=$!
		bg_pids="$bg_pids $wpid"
		# Wait (bounded) until the example has formatted its area.
		for i in $(seq 100); do
			"$obj/bin/hvtrace" stat "$area" >/dev/null 2>&1 && break
			sleep 0.1
		done
		timeout 60 "$obj/bin/hvtrace" stream "$area" --count 500 --timeout 30 \
			>"$tmp/stream.out" 2>"$tmp/stream.err"
		wait "$wpid"
		rc=$?
		[ "$rc" -eq 0 ] || fail "libhvtrace-guest.3 example exited $rc: $(cat "$tmp/selftest.out")"
		grep -qx "committed 500, dropped 0" "$tmp/selftest.out" ||
			fail "libhvtrace-guest.3 example printed '$(cat "$tmp/selftest.out")'"
		got=$(grep -o 'selftest: id=[0-9]*' "$tmp/stream.out" | sed 's/.*=//' | sort -n | tr '\n' ' ')
		[ "$got" = "$(seq -s ' ' 0 499) " ] ||
			fail "libhvtrace-guest.3 example: the host read ids '${got:0:60}...' ($(cat "$tmp/stream.err"))"
		[ $failures -eq 0 ] && echo "libhvtrace-guest.3 example: compiled, wrote 500 events the host read"
	fi
fi

echo "$nr_full pages, $nr_link links, $nr_funcs functions checked; $failures failure(s)"
[ $failures -eq 0 ] || exit 1
exit 0
