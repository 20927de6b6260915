#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A guest kernel that panics while booting under TCG, before any of its
# userspace ran, is booted once more by the supervisor, which says so on
# stderr and in the console log, on one vCPU that time (maxcpus=1); a
# second panic is final.  A panic after
# userspace started (here: sysrq c from the guest's --run) is never
# retried.
. "$(dirname "$0")/lib.sh"
t_require

# 1. No init at all: the kernel panics before userspace, twice.
t_name n boot
"$G" start --name "$n" --accel tcg --foreground --quiet --log "$T_TMP/$n.log" \
	--append 'rdinit=/nonexistent init=/nonexistent ignore_loglevel' 2>"$T_TMP/$n.err" </dev/null
panics=$(grep -ac 'Kernel panic' "$T_TMP/$n.log")
[ "$panics" = 2 ] || fail "a boot panic gave $panics panics on the console, not 2 (one retry)"
grep -q "panicked while booting under TCG" "$T_TMP/$n.err" ||
	fail "the retry was not said on stderr: $(cat "$T_TMP/$n.err")"
[ "$(grep -ac 'booting once more' "$T_TMP/$n.log")" = 1 ] ||
	fail "the console log does not mark the retry exactly once"
# The retry boots on one vCPU (maxcpus=1), the first boot on all of them
# (each boot's "Command line:", on the console with ignore_loglevel).
cmds=$(grep -a 'Command line: ' "$T_TMP/$n.log" | grep -v 'Kernel command line')
[ "$(echo "$cmds" | grep -c .)" = 2 ] || fail "not 2 boots' command lines: $cmds"
echo "$cmds" | head -1 | grep -q 'maxcpus=1' && fail "the first boot had maxcpus=1"
echo "$cmds" | tail -1 | grep -q 'maxcpus=1' || fail "the retry did not boot on one vCPU: $(echo "$cmds" | tail -1)"
assert_gone "$n"

# 2. A panic once userspace ran: no retry.
initrd=$(t_initrd)
t_name m late
"$G" start --name "$m" --accel tcg --foreground --quiet --log "$T_TMP/$m.log" \
	--initrd "$initrd" --run 'echo c >/proc/sysrq-trigger' \
	2>"$T_TMP/$m.err" </dev/null
grep -qa 'sysrq triggered crash' "$T_TMP/$m.log" || fail "sysrq c did not panic the guest"
# (Its first boot may itself have hit the boot hazard and been retried:
# what counts is that nothing follows the sysrq panic.)
awk '/sysrq triggered crash/ { late = 1 } late && /booting once more|Linux version/ { bad = 1 }
	END { exit bad }' "$T_TMP/$m.log" ||
	fail "a panic after userspace started was retried"
assert_gone "$m"
echo "PASS"
