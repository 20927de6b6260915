#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest kernel's formats and events through the agent, on one machine:
# hvtrace-agent with --tracefs pointing at a tracefs-like folder this
# test builds (an instance "hvt" with events of two systems, one of them
# with a format of several pieces, printk_formats of 100 KiB, and files
# whose bytes include tabs, a NUL-free binary mix and no final newline)
# uploads it to hvtraced, which keeps it in $HVT_CACHE/kformats/guests/
# NAME/RELEASE@BUILDID (that remote's own).  Checked against the test's
# own files, byte for byte, every file of the upload and no other; the
# folder's name against uname -r.  The same remote's agent again finds
# the cache and sends nothing.  A remote new to the cache evicts the least
# recently used folders of remotes not attached beyond 32 (planted ones,
# the attached remotes' made the oldest).  Then hvtrace events
# enable/disable --remote switches a guest
# kernel event and a whole system in the folder (the agent writes the
# instance's enable files), an unknown name and a name with a path in it
# are refused with clear messages, and without an agent the refusal says
# that only hvtrace-agent can change the guest kernel's events.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" kformats
NAME=kf$$
AREA=/dev/shm/hvt-kformats-$$
export HVT_CACHE=$T/cache
RM_ALWAYS="$AREA ${AREA}b ${AREA}c"

hvt_need_bins "$OBJ/bin/hvtrace-agent"

# The guest's tracefs, as the test makes it.
F=$T/tracefs
I=$F/instances/hvt
mkdir -p "$I/events/sched/sched_switch" "$I/events/sched/sched_waking" \
	"$I/events/ftrace/print" "$I/events/irq/irq_handler_entry"
printf 'field: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n' >"$I/events/header_page"
printf 'type_len    :    5 bits\n' >"$I/events/header_event"
for e in sched/sched_switch sched/sched_waking ftrace/print irq/irq_handler_entry; do
	{
		echo "name: ${e#*/}"
		echo "ID: $((RANDOM % 1000 + 1))"
		echo "format:"
		printf '\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n'
	} >"$I/events/$e/format"
	echo 0 >"$I/events/$e/enable"
done
# A format longer than one KFILE piece, without a final newline.
head -c 40000 /dev/urandom | base64 -w 100 | head -c 39999 >>"$I/events/sched/sched_switch/format"
for s in sched ftrace irq; do echo 0 >"$I/events/$s/enable"; done
echo 'mono [local] global' >"$I/trace_clock"
head -c 102400 /dev/urandom | base64 >"$F/printk_formats"
printf '1 init\n42 worker\n' >"$F/saved_cmdlines"
# Top-level events are not the instance's: they must not be sent.
mkdir -p "$F/events/other/ev"
echo 'name: not_sent' >"$F/events/other/ev/format"

"$OBJ/bin/hvtraced" --foreground --socket "$HVTRACED_SOCKET" \
	--run-dir "$T/run" --shm-dir /dev/shm >"$T/hvtraced.log" 2>&1 &
DPID=$!
hvt_listening

"$OBJ/bin/hvtrace-agent" --create "$AREA" --size 1M --name "$NAME" \
	--host-socket "$HVTRACED_SOCKET" --socket "$T/agent.sock" \
	--tracefs "$F" -v >"$T/agent.log" 2>&1 &
APID=$!
PIDS=$APID

REL=$(uname -r)
C=''
for _ in $(seq 200); do
	C=$(ls -d "$HVT_CACHE/kformats/guests/$NAME/$REL@"* 2>/dev/null | head -n1)
	[ -n "$C" ] && break
	sleep 0.05
done
[ -n "$C" ] || fail "no formats folder for $REL in $HVT_CACHE/kformats/guests/$NAME"
BID=$(cat "$C/build_id")
[ "$C" = "$HVT_CACHE/kformats/guests/$NAME/$REL@${BID:-none}" ] ||
	fail "folder $C is not named RELEASE@BUILDID ($REL@$BID)"
[[ $BID =~ ^([0-9a-f]{2})*$ ]] || fail "build id '$BID' is not hex"
[ "$(cat "$C/release")" = "$REL" ] || fail "release file: $(cat "$C/release")"

# Byte for byte, every file, and nothing else.
check() {	# check UPLOADED SOURCE
	cmp -s "$C/$1" "$2" || fail "$C/$1 differs from $2"
}
check events/header_page "$I/events/header_page"
check events/header_event "$I/events/header_event"
n=0
for e in sched/sched_switch sched/sched_waking ftrace/print irq/irq_handler_entry; do
	check "events/$e/format" "$I/events/$e/format"
	n=$((n + 1))
done
for s in sched ftrace irq; do check "events/$s/enable" "$I/events/$s/enable"; done
check trace_clock "$I/trace_clock"
check printk_formats "$F/printk_formats"
check saved_cmdlines "$F/saved_cmdlines"
# (procfs reports a size of 0: compare with a copy)
cat /proc/version >"$T/version.txt"
check version "$T/version.txt"
got=$(cd "$C" && find . -type f | sort | tr '\n' ' ')
want='./build_id ./events/ftrace/enable ./events/ftrace/print/format ./events/header_event ./events/header_page ./events/irq/enable ./events/irq/irq_handler_entry/format ./events/sched/enable ./events/sched/sched_switch/format ./events/sched/sched_waking/format ./printk_formats ./release ./saved_cmdlines ./trace_clock ./version '
[ "$got" = "$want" ] || fail "the folder holds: $got"
ls -a "$HVT_CACHE/kformats/guests/$NAME" | grep -q '^\.upload' && fail "a staging folder was left"
"$H" daemon info --remote "$NAME" >"$T/info.out" 2>&1 || fail "daemon info: $(cat "$T/info.out")"
grep -qx "kernel_formats: $C" "$T/info.out" || fail "daemon info does not name $C: $(cat "$T/info.out")"
echo "ok: $n formats and 10 other files kept byte for byte in $C"

# Another remote of the same kernel keeps its own copy (what a guest
# claims is used for that guest only); its second session finds it in
# the cache and sends nothing more.
agent2() {	# agent2 LOG [X]: one session of remote ${NAME}X (b) until WORDS
	local x=${2:-b}
	"$OBJ/bin/hvtrace-agent" --create "$AREA$x" --size 1M --name "$NAME$x" \
		--host-socket "$HVTRACED_SOCKET" --socket "$T/agent$x.sock" \
		--tracefs "$F" -v >"$1" 2>&1 &
	A2=$!
	wait_for 10 grep -Eq "has this kernel's formats already|sent the formats" "$1"
	kill "$A2"; wait "$A2" 2>/dev/null
}
agent2 "$T/agent2.log"
grep -q "sent the formats" "$T/agent2.log" ||
	fail "remote ${NAME}b did not send its own formats"
[ -d "$HVT_CACHE/kformats/guests/${NAME}b/$REL@${BID:-none}" ] ||
	fail "remote ${NAME}b's formats are not in its own folder"
agent2 "$T/agent2b.log"
grep -q "has this kernel's formats already" "$T/agent2b.log" ||
	fail "the second session was not told that the host has its formats"
grep -q "sent the formats" "$T/agent2b.log" && fail "the second session sent them again"

# At most 32 remotes' folders: a remote new to the cache evicts the least
# recently used folders of remotes that are not attached (guests that
# come and go, as a test rig's), never an attached remote's, however old;
# at most 2 an upload (a big removal holds hvtraced's loop).  31 planted
# ones and the 2 attached remotes': the new one evicts the 2 oldest
# planted, and the cache holds 32.
G=$HVT_CACHE/kformats/guests
for i in $(seq -w 1 31); do
	mkdir -p "$G/gone$i/6.0.0-test@none"
	echo 6.0.0-test >"$G/gone$i/6.0.0-test@none/release"
	touch -d "2020-01-01 00:00:$i" "$G/gone$i"
done
touch -d "2019-01-01" "$G/$NAME" "$G/${NAME}b"
"$H" list >"$T/list.out" 2>&1
for r in "$NAME" "${NAME}b"; do
	grep -q "^$r " "$T/list.out" || fail "remote $r is not attached: $(cat "$T/list.out")"
done
agent2 "$T/agent2c.log" c
grep -q "sent the formats" "$T/agent2c.log" || fail "remote ${NAME}c did not send its formats"
[ -d "$G/${NAME}c/$REL@${BID:-none}" ] || fail "remote ${NAME}c's formats are not in its own folder"
# (Evicted folders are renamed .trash-* at once and removed by a thread.)
n=$(find "$G" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)
[ "$n" -eq 32 ] || fail "$n remotes' folders in the cache, not 32"
for i in 01 02; do
	[ -e "$G/gone$i" ] && fail "gone$i, one of the 2 least recently used, is still there"
done
for i in $(seq -w 3 31); do
	[ -d "$G/gone$i" ] || fail "gone$i went, but only the 2 least recently used were to go"
done
for r in "$NAME" "${NAME}b"; do
	[ -d "$G/$r/$REL@${BID:-none}" ] || fail "the folder of $r (attached) went"
done
grep -q "formats cache: 2 folders of remotes not attached went to make room for '${NAME}c' (at most 32 remotes' folders are kept)" "$T/hvtraced.log" ||
	fail "hvtraced did not log the eviction: $(grep 'formats cache' "$T/hvtraced.log")"
for _ in $(seq 200); do
	ls -A "$G" | grep -q '^\.trash-' || break
	sleep 0.05
done
ls -A "$G" | grep '^\.' && fail "evicted folders were not removed within 10 s"
echo "ok: a new remote evicted the 2 least recently used folders of remotes not attached; 32 kept, the attached ones among them"

# Guest kernel events through the agent.
en() { cat "$I/events/$1/enable"; }
"$H" events enable --remote "$NAME" sched:sched_waking >"$T/en.out" 2>"$T/en.err" ||
	fail "events enable sched:sched_waking failed: $(cat "$T/en.err")"
[ "$(en sched/sched_waking)" = 1 ] || fail "sched_waking/enable is '$(en sched/sched_waking)'"
[ "$(en sched/sched_switch)" = 0 ] || fail "enabling sched_waking touched sched_switch"
"$H" events disable --remote "$NAME" sched:sched_waking 2>"$T/dis.err" ||
	fail "events disable failed: $(cat "$T/dis.err")"
[ "$(en sched/sched_waking)" = 0 ] || fail "sched_waking/enable is '$(en sched/sched_waking)' after disable"
"$H" events enable --remote "$NAME" irq 2>"$T/sys.err" ||
	fail "events enable irq (a system) failed: $(cat "$T/sys.err")"
[ "$(en irq)" = 1 ] || fail "irq/enable is '$(en irq)'"
"$H" events enable --remote "$NAME" no_such_thing >"$T/bad.out" 2>"$T/bad.err" &&
	fail "enabling an unknown name succeeded"
grep -q "neither a user event of remote '$NAME' nor an event or event system of its guest kernel" "$T/bad.err" ||
	fail "unknown name: $(cat "$T/bad.err")"
"$H" events enable --remote "$NAME" sched:nope 2>"$T/bad2.err" && fail "sched:nope succeeded"
grep -q "the guest kernel has no event 'sched:nope'" "$T/bad2.err" ||
	fail "sched:nope: $(cat "$T/bad2.err")"
"$H" events enable --remote "$NAME" '../x:y' 2>"$T/bad3.err" && fail "'../x:y' succeeded"
grep -q "'../x:y' is not a guest kernel event: give SYSTEM or SYSTEM:EVENT" "$T/bad3.err" ||
	fail "'../x:y': $(cat "$T/bad3.err")"
[ -e "$F/instances/x" ] && fail "a path escaped the events folder"

# Without an agent.
kill "$APID"; wait "$APID" 2>/dev/null; PIDS=''
for _ in $(seq 100); do
	"$H" list 2>/dev/null | grep -Eq "^$NAME .*disconnected" && break
	sleep 0.05
done
"$H" events enable --remote "$NAME" sched:sched_waking 2>"$T/noag.err" &&
	fail "enable succeeded without an agent"
grep -q "the guest kernel's events can only be changed through hvtrace-agent" "$T/noag.err" ||
	fail "without an agent: $(cat "$T/noag.err")"
[ "$(en sched/sched_waking)" = 0 ] || fail "sched_waking changed without an agent"
echo "ok: kernel events switched through the agent; refusals say why"
