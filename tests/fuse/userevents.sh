#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A remote with user events (a local agent and the e2e workload, the
# same path a guest takes) through hvtrace mount:
#   - the registered event appears under events/user_events/ with its
#     format; enabling it there lets the workload write
#   - libtracefs reads every record the workload wrote, each seq once
#   - user_events_status and dynamic_events have the kernel's shapes
#   - dynamic_events: definitions and deletions by write(), the
#     kernel's errno for a bad type (EINVAL), a name in use with other
#     fields (EADDRINUSE), deleting an event in use (EBUSY) or an unknown
#     one (ENOENT), each explained in error_log; truncating
#     dynamic_events deletes every event or none: EBUSY while one is in
#     use (the agent always holds its trigger event)
. "$(dirname "$0")/lib.sh"
fz_need_fuse
[ -x "$TRACEFS_READ" ] || fail "$TRACEFS_READ is missing (make tests)"
OBJ=${HVT_OBJTREE:-$(dirname "$HVTRACE")/..}
AGENT=$OBJ/bin/hvtrace-agent
WRITER=$OBJ/guest/workloads/ue_writer
[ -x "$AGENT" ] && [ -x "$WRITER" ] || fail "hvtrace-agent or ue_writer missing (CONFIG_HVT_GUEST, make tests)"
fz_daemon
fz_mount

UAREA=/dev/shm/hvt-fz-$$-ue
SHM_FILES="$SHM_FILES $UAREA"
"$AGENT" --create "$UAREA" --size 8M --name ue --host-socket "$TMP/d.sock" \
	--socket "$TMP/agent.sock" >"$TMP/agent.log" 2>&1 &
PIDS="$PIDS $!"
wait_for 10 test -e "$MNT/remotes/ue/dynamic_events" || fail "the agent's remote did not appear"
R=$MNT/remotes/ue

N=4000
"$WRITER" --socket "$TMP/agent.sock" --count $N --wait-enable 30000 \
	--wait-agent 5000 >"$TMP/writer.out" 2>&1 &
WPID=$!
PIDS="$PIDS $WPID"
wait_for 10 test -e "$R/events/user_events/hvt_e2e/enable" ||
	fail "hvt_e2e did not appear: $(cat "$TMP/writer.out")"
grep -q "^print fmt: \"seq=%u val=%llu msg=%s\", REC->seq, REC->val, __get_rel_str(msg)$" \
	"$R/events/user_events/hvt_e2e/format" ||
	fail "format: $(cat "$R/events/user_events/hvt_e2e/format")"
expect_eq "disabled at first" "$(cat "$R/events/user_events/hvt_e2e/enable")" 0
grep -qx "hvt_e2e" "$R/user_events_status" || fail "status: $(cat "$R/user_events_status")"
echo 1 > "$R/events/user_events/hvt_e2e/enable" || fail "enable hvt_e2e"
wait $WPID
grep -q "^done wrote=$N failed=0$" "$TMP/writer.out" || fail "writer: $(cat "$TMP/writer.out")"
grep -qx "hvt_e2e # Used by ftrace" "$R/user_events_status" ||
	fail "status: $(cat "$R/user_events_status")"
"$TRACEFS_READ" "$MNT" ue --no-loss --unique user_events:hvt_e2e:seq \
	--total $N >"$TMP/read.txt" 2>&1 || fail "libtracefs: $(cat "$TMP/read.txt")"
sed 's/^/    /' "$TMP/read.txt"
echo "user events: $N records written, enabled through the mount, all read by libtracefs"

# dynamic_events.
echo 'u:fz_def u32 a; u64 b' >> "$R/dynamic_events" || fail "define"
grep -qx "u:fz_def u32 a; u64 b" "$R/dynamic_events" ||
	fail "dynamic_events: $(cat "$R/dynamic_events")"
wait_for 5 test -e "$R/events/user_events/fz_def/format" || fail "fz_def not in events/"
echo > "$R/error_log"
expect_errno "Invalid argument" bash -c "echo 'u:fz_bad long x' >> '$R/dynamic_events'"
expect_errno "Address already in use" bash -c "echo 'u:fz_def u32 other' >> '$R/dynamic_events'"
expect_errno "Device or resource busy" bash -c "echo '!u:hvt_e2e u32 seq; u64 val; __rel_loc char[] msg' >> '$R/dynamic_events'"
expect_errno "No such file or directory" bash -c "echo '!u:fz_nosuch u32 a' >> '$R/dynamic_events'"
expect_eq "error_log entries" "$(grep -c ': error: ' "$R/error_log")" 4
grep -q '^\[ *[0-9]*\.[0-9]*\] user_events: error: .*long' "$R/error_log" ||
	fail "error_log: $(cat "$R/error_log")"
grep -q "^  Command: u:fz_bad long x$" "$R/error_log" || fail "error_log command"
# The caret sits under the offending field.
awk '/Command: u:fz_bad/ { getline c; if (index(c, "^") != index($0, "long")) exit 1 }' \
	"$R/error_log" || fail "caret: $(grep -A1 'Command: u:fz_bad' "$R/error_log")"
# O_TRUNC: hvt_e2e is in use (enabled), so nothing is deleted.
expect_errno "Device or resource busy" bash -c "echo > '$R/dynamic_events'"
grep -qx "u:fz_def u32 a; u64 b" "$R/dynamic_events" || fail "a refused truncate deleted events"
echo 0 > "$R/events/user_events/hvt_e2e/enable"
echo '!u:fz_def u32 a; u64 b' >> "$R/dynamic_events" || fail "delete fz_def"
wait_for 5 test ! -e "$R/events/user_events/fz_def" || fail "fz_def still in events/"
# The agent keeps its own trigger event registered: truncating is still
# refused as a whole, and fz_def is gone for good.
expect_errno "Device or resource busy" bash -c "echo 'u:fz_two u32 a' > '$R/dynamic_events'"
grep -q "fz_def" "$R/dynamic_events" && fail "fz_def is back"
echo "dynamic_events: define, delete, EINVAL/EADDRINUSE/EBUSY/ENOENT with error_log, truncation"
exit 0
