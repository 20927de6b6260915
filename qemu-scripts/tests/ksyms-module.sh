#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest kernel module's function names (docs/guest-kernel.md, "Function
# names"): a rig guest started with --module softdog (Debian 6.12's
# softdog.ko in its initramfs, loaded at boot) and the guest kernel's
# timer:hrtimer_start ("function=%ps") in its ring.  At boot the guest
# prints its modules' /proc/kallsyms lines on its console with its event
# formats; the image's symbols the host reads from guest RAM.  The guest
# then opens /dev/watchdog and closes it with 'V': softdog arms its
# hrtimer, whose function is softdog_fire in the module; the guest prints
# how many of its own trace file's lines say
# "function=softdog_fire [softdog]", and its kallsyms lines of
# softdog_fire and _text.
#
#   - "hvtrace stream RAMFILE --drain" (the guest's RAM file by its path,
#     with the formats and module lines of its console) and "hvtrace
#     stream NAME --drain" (through hvtraced, which has the modules' lines
#     from the guest's agent: the console is out of the way) print as many
#     hrtimer_start lines
#     "function=softdog_fire [softdog]" as the guest's own trace file, and
#     no hrtimer_start whose function is an address of the module;
#   - "hvtrace record --pair" while the guest pings softdog every 0.2 s
#     (told on its port go): the guest file's KALLSYMS holds the guest's
#     own softdog_fire line (this boot's module address, "\t[softdog]")
#     and its _text line (the image, from guest RAM) both; "hvtrace
#     report" of it prints the module, " [softdog]", after the function
#     where "trace-cmd report" prints none (both through libtraceevent's
#     hrtimer plugin), and is the same otherwise;
#   - the launcher's kformats into the formats cache leaves the modules'
#     lines out (one folder serves every boot of a kernel).
. "$(dirname "$0")/lib.sh"
t_require

HVTRACE=$T_OBJTREE/bin/hvtrace
[ -x "$HVTRACE" ] || fail "$HVTRACE is missing; build it with 'make O=$T_OBJTREE'"
command -v trace-cmd >/dev/null || { echo "SKIP: trace-cmd is not installed (make deps)"; exit 77; }
t_own_daemon

t_name n kmod
run="grep -E ' (_text|softdog_fire)(\$|	)' /proc/kallsyms | sed 's/^/hvt-ksym /'"
run+="; T=/sys/kernel/tracing/instances/hvt; echo V >/dev/watchdog"
run+="; echo hvt-softdog \$(grep -c 'hrtimer_start: .* function=softdog_fire \\[softdog\\] ' \$T/trace)"
# Then, once the host says "g" on port go, softdog is pinged every 0.2 s
# (for the recording below).
run+="; echo hvt-done; $(kring_gated 'while :; do echo V >/dev/watchdog; sleep 0.2; done')"
"$HVTRACE" guest start "$n" --module softdog --port go --log "$T_TMP/$n.log" \
	--kernel-events timer:hrtimer_start,ftrace:print --run "$run" \
	>"$T_TMP/start.out" 2>&1 || { cat "$T_TMP/start.out"; fail "hvtrace guest start failed"; }
wait_line "$T_TMP/$n.log" '^hvt-done' 120 || fail "the guest did not finish: $(tail -n 5 "$T_TMP/$n.log")"
want=$(tr -d '\r' <"$T_TMP/$n.log" | sed -n 's/^hvt-softdog \([0-9]*\)$/\1/p')
[ "${want:-0}" -ge 1 ] || fail "the guest's own trace file has no hrtimer_start of softdog_fire: $(grep -a hvt-softdog "$T_TMP/$n.log")"
want_fire=$(tr -d '\r' <"$T_TMP/$n.log" | sed -n 's/^hvt-ksym \([0-9a-f]* [tT] softdog_fire	\[softdog\]\)$/\1/p' | head -1)
want_text=$(tr -d '\r' <"$T_TMP/$n.log" | sed -n 's/^hvt-ksym \([0-9a-f]* [tT] _text\)$/\1/p' | head -1)
[ -n "$want_fire" ] && [ -n "$want_text" ] ||
	fail "the guest did not print its kallsyms lines: $(grep -a hvt-ksym "$T_TMP/$n.log")"
fire_addr=${want_fire%% *}

# named FILE WHAT: as many softdog_fire lines as the guest's own, and no
# hrtimer_start with softdog_fire's address in hex.
named() {
	local got
	got=$(grep -c 'hrtimer_start: .* function=softdog_fire \[softdog\] ' "$1")
	[ "$got" = "$want" ] ||
		fail "$2: $got hrtimer_start lines name softdog_fire [softdog], the guest's own trace file $want: $(grep -m2 'hrtimer_start: .*function=' "$1" | grep -v 'function=[a-z_]* ')"
	! grep -q "function=0x$fire_addr " "$1" || fail "$2: softdog_fire prints as an address: $(grep -m1 "function=0x$fire_addr " "$1")"
}

# The RAM file read directly (by its path), with the formats and the
# modules' symbols the console printed.
ram=$(status_get "$n" ram)
[ -n "$ram" ] || fail "status names no RAM file of $n"
"$G" kformats "$n" "$T_TMP/gkfmt" >/dev/null 2>&1 || fail "kformats of $n failed"
"$HVTRACE" stream "$ram" --formats "$T_TMP/gkfmt" --drain >"$T_TMP/gk.txt" 2>"$T_TMP/gk.err" ||
	{ cat "$T_TMP/gk.err"; fail "stream $ram failed"; }
named "$T_TMP/gk.txt" "stream RAMFILE"
info "stream RAMFILE: $want lines 'function=softdog_fire [softdog]', as the guest's own trace file"
# Through hvtraced, the module's lines too come from hvtraced (its agent
# sent them): the console, where the launcher finds its own list, is out
# of the way meanwhile.
mv "$T_TMP/$n.log" "$T_TMP/$n.log.away"
"$HVTRACE" stream "$n" --drain >"$T_TMP/one.txt" 2>"$T_TMP/one.err" ||
	{ mv "$T_TMP/$n.log.away" "$T_TMP/$n.log"; cat "$T_TMP/one.err"; fail "stream $n failed"; }
mv "$T_TMP/$n.log.away" "$T_TMP/$n.log"
grep -q "the guest kernel's ring (2 CPUs) beside its user events, on the host's clock (formats from hvtraced: its agent's, with this boot's clock, comms and module symbols; its pages through hvtraced)" "$T_TMP/one.err" ||
	fail "stream $n did not merge the guest kernel's ring with hvtraced's formats: $(cat "$T_TMP/one.err")"
named "$T_TMP/one.txt" "stream $n"
info "stream $n (through hvtraced, formats and module symbols from hvtraced): the same"

# (A line of its own: the console's echo of the --run command holds the
# words too.)
"$T_SRCTREE/qemu-scripts/port-send" "$T_RUNDIR/$n/port-go.sock" g "$T_TMP/$n.log" \
	$'\nhvt-go-seen' 60 || fail "the guest did not take the go"
"$HVTRACE" record -q -o "$T_TMP/p.dat" --pair -d 2 "$n" 2>"$T_TMP/rec.err" ||
	{ cat "$T_TMP/rec.err"; fail "record --pair failed"; }
trace-cmd dump --kallsyms "$T_TMP/p-$n.dat" >"$T_TMP/ksyms" 2>&1 || fail "trace-cmd dump --kallsyms failed"
grep -qxF "$want_fire" "$T_TMP/ksyms" ||
	fail "the guest file's KALLSYMS has not the guest's '$want_fire': $(grep softdog_fire "$T_TMP/ksyms")"
grep -qx "$want_text" "$T_TMP/ksyms" ||
	fail "the guest file's KALLSYMS has not the guest's '$want_text': $(grep ' _text$' "$T_TMP/ksyms")"
info "record --pair: the guest file's KALLSYMS has the module's line ($want_fire) and the image's ($want_text), $(grep -c . "$T_TMP/ksyms") lines"
# hvtrace report names the module's function as the kernel does
# (" [softdog]"), trace-cmd report as libtraceevent does (no module);
# every other byte the same.
trace-cmd report "$T_TMP/p-$n.dat" >"$T_TMP/tc.txt" 2>/dev/null || fail "trace-cmd report of the guest file failed"
"$HVTRACE" report -i "$T_TMP/p-$n.dat" >"$T_TMP/hr.txt" 2>"$T_TMP/hr.err" ||
	{ cat "$T_TMP/hr.err"; fail "hvtrace report of the guest file failed"; }
# (Both load libtraceevent's hrtimer plugin: "function=NAME/0xDIFF".)
k=$(grep -c 'hrtimer_start: .* function=softdog_fire[^ ]* \[softdog\] ' "$T_TMP/hr.txt")
[ "$k" -ge 2 ] || fail "hvtrace report: $k hrtimer_start lines of softdog_fire [softdog] in 2 s of pings every 0.2 s ($(grep -c . "$T_TMP/hr.txt") lines in all): $(grep -m2 softdog "$T_TMP/hr.txt")"
[ "$(grep -c 'function=softdog_fire[^ ]* ' "$T_TMP/tc.txt")" = "$k" ] ||
	fail "trace-cmd report names softdog_fire $(grep -c 'function=softdog_fire[^ ]* ' "$T_TMP/tc.txt") times, hvtrace report $k"
unmod='s/ \(function=softdog_fire[^ ]*\) \[softdog\] / \1 /'
sed "$unmod" "$T_TMP/hr.txt" | cmp -s - "$T_TMP/tc.txt" ||
	fail "hvtrace report differs from trace-cmd report beyond the module: $(sed "$unmod" "$T_TMP/hr.txt" | diff - "$T_TMP/tc.txt" | head -6)"
info "hvtrace report: $k lines '$(grep -m1 -o 'function=softdog_fire[^ ]* \[softdog\]' "$T_TMP/hr.txt")' (trace-cmd report: '$(grep -m1 -o 'function=softdog_fire[^ ]*' "$T_TMP/tc.txt")'), the rest byte for byte"

HVT_CACHE=$T_TMP/cache "$G" kformats "$n" >"$T_TMP/kf.out" 2>&1 || fail "kformats into the cache failed: $(cat "$T_TMP/kf.out")"
dir=$(sed -n 's/: the event formats of guest kernel .*//p' "$T_TMP/kf.out")
[ -d "$dir/events" ] || fail "kformats did not fill a cache folder: $(cat "$T_TMP/kf.out")"
[ ! -e "$dir/kallsyms" ] || fail "the cache folder $dir holds this boot's modules' symbols"
"$G" kformats "$n" "$T_TMP/fmt" >/dev/null 2>&1 || fail "kformats into a folder failed"
grep -qxF "$want_fire" "$T_TMP/fmt/kallsyms" || fail "the console's kallsyms has not '$want_fire'"
info "kformats: the modules' lines in a folder given, not in the cache"
echo "PASS"
