#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ks_check.sh FILE PNG STREAM...: KernelShark opens trace.dat FILE.  It
# runs headless under Xvfb (as an unprivileged user when run as root, so it
# shows no "running as root" dialog).  Checks: the main window comes up
# titled with the file, no other window (an error dialog) appears, the
# process is still running after loading, its log has no error besides
# the plugins that opt out of streams without their events, and the screen
# is not blank.  Then it is closed as a window manager would (x_close),
# which makes it save its session: the streams it opened must be exactly
# STREAM... ("top buffer" for the top-level one, else buffer names), and
# its model's time range, which it takes from the first and last event it
# loaded, must cover the events trace-cmd reads from the file and no more
# (up to its rounding to whole bins).  The screenshot is kept as PNG
# ("" for none).  Exit 0, 1 (a failure) or 77 (a tool is missing).
# Used by t_kernelshark.sh and qemu-scripts/tests/record-guest-kernel.sh.
. "$(dirname "$0")/lib.sh"
[ $# -ge 3 ] || fail "usage: ks_check.sh FILE PNG STREAM..."
FILE=$1
PNG=$2
shift 2
[ -f "$FILE" ] || fail "$FILE is missing"
command -v trace-cmd >/dev/null || skip "trace-cmd is not installed (apt-get install trace-cmd)"
command -v kernelshark >/dev/null ||
	skip "kernelshark is not installed (apt-get install kernelshark)"
command -v Xvfb >/dev/null || skip "Xvfb is not installed (apt-get install xvfb)"
command -v xwininfo >/dev/null ||
	skip "xwininfo is not installed (apt-get install x11-utils)"
command -v import >/dev/null ||
	skip "import is not installed (apt-get install imagemagick)"

# KernelShark's side: a readable copy, a home it may write its settings to.
chmod 755 "$T"
mkdir -p "$T/ks/home"
cp "$FILE" "$T/ks/trace.dat"
chmod 755 "$T/ks"
chmod 644 "$T/ks/trace.dat"
RUNAS=()
if [ "$(id -u)" -eq 0 ]; then
	command -v setpriv >/dev/null ||
		skip "setpriv (util-linux) is needed to run KernelShark unprivileged"
	chown nobody "$T/ks/home"
	chmod 700 "$T/ks/home"
	RUNAS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi

exec 5>"$T/display"
Xvfb -displayfd 5 -screen 0 1280x900x24 -nolisten tcp -nolisten unix \
	>"$T/xvfb.log" 2>&1 &
XP=$!
BGPIDS+=("$XP")
exec 5>&-
n=0
until [ -s "$T/display" ]; do
	n=$((n + 1))
	[ $n -gt 200 ] && skip "Xvfb did not start: $(head -3 "$T/xvfb.log")"
	sleep 0.05
done
export DISPLAY=:$(cat "$T/display")

(cd "$T/ks" && HOME="$T/ks/home" XDG_RUNTIME_DIR="$T/ks/home" \
	XDG_CACHE_HOME="$T/ks/home/.cache" MESA_SHADER_CACHE_DISABLE=true \
	exec "${RUNAS[@]}" kernelshark -geometry 1280x900+0+0 "$T/ks/trace.dat") \
	>"$T/ks.log" 2>&1 &
KP=$!
BGPIDS+=("$KP")

title="Kernel Shark ($T/ks/trace.dat)"
n=0
until xwininfo -root -tree 2>/dev/null | grep -qF "\"$title\""; do
	n=$((n + 1))
	kill -0 "$KP" 2>/dev/null || fail "kernelshark exited: $(tail -5 "$T/ks.log")"
	[ $n -gt 600 ] && fail "no KernelShark window after 30 s: $(tail -5 "$T/ks.log")"
	sleep 0.05
done
sleep 4	# loading and drawing
kill -0 "$KP" 2>/dev/null || fail "kernelshark died after opening the file: $(tail -5 "$T/ks.log")"
import -window root "$T/ks.png" || fail "screenshot failed"
[ -z "$PNG" ] || cp "$T/ks.png" "$PNG" 2>/dev/null
xwininfo -root -tree >"$T/windows.txt"
cat "$T/ks.log"

# Only KernelShark's own windows (no error or warning dialog).
awk -F'"' '/^ +0x/ && NF > 2 { print $2 }' "$T/windows.txt" | sort -u >"$T/names.txt"
while read -r name; do
	case $name in
	"$title" | kernelshark | "Qt Selection Owner for kernelshark" | \
		"Qt Clipboard Requestor Window") ;;
	*) fail "unexpected window '$name' (an error dialog?)" ;;
	esac
done <"$T/names.txt"
grep -q 'Loading' "$T/ks.log" || fail "KernelShark did not say it loaded the file"
grep -viE '^QStandardPaths|^Loading |plugin "(kvm_combo|sched_events|missed_events|latency_plot|event_field_plot)" failed to initialize' \
	"$T/ks.log" | grep -iE 'error|fail|could not|cannot|unable|invalid|bad ' &&
	fail "KernelShark reported a problem loading the file"
# KernelShark's own account of what it loaded: closed like a window
# manager closes it, it saves its session, with the streams it opened and
# its model's time range, which it sets from the first and last event it
# loaded.  They must match the file as trace-cmd reads it.
wid=$(awk -v t="\"$title\"" 'index($0, t) { print $1; exit }' "$T/windows.txt")
[ -x "$OBJ/tests/tracedat/x_close" ] ||
	skip "x_close was not built (libx11-dev is missing)"
"$OBJ/tests/tracedat/x_close" "$wid" || fail "cannot close KernelShark's window $wid"
wait_pid "$KP" 30
session=$T/ks/home/.cache/kernelshark/lastsession.json
[ -s "$session" ] || fail "KernelShark saved no session when closed ($(find "$T/ks/home" -type f | head -5))"
trace-cmd report -t "$FILE" >"$T/tc.txt" 2>"$T/tc.err" ||
	fail "trace-cmd report failed: $(head -3 "$T/tc.err")"
read -r first last nev < <(awk '{
	for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]:$/) {
		t = $i; sub(/:$/, "", t); sub(/\./, "", t); t += 0
		if (!n || t < lo) lo = t
		if (!n || t > hi) hi = t
		n++; break
	} } END { printf "%.0f %.0f %d\n", lo, hi, n }' "$T/tc.txt")
[ "$nev" -gt 0 ] || fail "trace-cmd shows no events in the recording"
read -r rmin rmax < <(awk '/"range"/ { r = 1; next }
	r && /[0-9]/ { gsub(/[ ,]/, ""); v[++k] = $0; if (k == 2) { print v[1], v[2]; exit } }' "$session")
[ -n "${rmin:-}" ] && [ -n "${rmax:-}" ] ||
	fail "the session has no model range: $(head -30 "$session")"
span=$((last - first))
echo "trace-cmd: $nev events from $first to $last ns; KernelShark's model: $rmin .. $rmax"
# The range covers the events exactly, widened only by KernelShark's
# rounding to whole bins (at most a few bins; 1% of the span here).
[ "$rmin" -le "$first" ] && [ "$rmax" -ge "$last" ] ||
	fail "KernelShark's range $rmin..$rmax misses events of the file ($first..$last): it did not load them all"
[ $(( (first - rmin) + (rmax - last) )) -le $((span / 100)) ] ||
	fail "KernelShark's range $rmin..$rmax is wider than the file's events ($first..$last): it did not load them"
# Every buffer of the file is a stream of the session.
awk -F'"' '/"name":/ { print $4 }' "$session" | sort >"$T/ks-streams.txt"
printf '%s\n' "$@" | sort >"$T/want-streams.txt"
diff "$T/want-streams.txt" "$T/ks-streams.txt" >/dev/null ||
	fail "KernelShark opened the streams $(tr '\n' ' ' <"$T/ks-streams.txt"), expected $(tr '\n' ' ' <"$T/want-streams.txt")"
colors=$(convert "$T/ks.png" -format %k info: 2>/dev/null || echo 0)
[ "${colors:-0}" -gt 20 ] || fail "the screenshot is blank ($colors colors)"
echo "PASS: KernelShark loaded the file's $nev events (its range $rmin..$rmax covers $first..$last) in streams $(tr '\n' ' ' <"$T/ks-streams.txt")($colors colors on screen)"
