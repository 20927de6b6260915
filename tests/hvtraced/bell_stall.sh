#!/bin/bash
# SPDX-License-Identifier: MIT
#
# issue 22 point 9: the doorbell socket must never stall hvtraced's loop.
# When hvtraced connects a guest's control socket it asks
# RUN_DIR/NAME/bell.sock for the guest's doorbell eventfd.  Two fake
# guests (a control.sock that listens, no QEMU):
#
#   full    bell.sock listens with its backlog filled: a blocking
#           connect() would wait for ever.  'hvtrace daemon attach' and
#           'status' must still answer within 5 s, the log saying the
#           backlog is full (the agent relays);
#   silent  bell.sock accepts and sends nothing for 2 s, then the
#           eventfd: hvtraced answers status meanwhile, and takes the
#           eventfd when it comes (it waits on its loop, not in a recv).
set -u

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" bellstall
SOCK=$HVTRACED_SOCKET

hvt_need_bins
F=full$$ S=silent$$
mkdir -p "$T/run/$F" "$T/run/$S"

# The fake guests' sockets; "ready" once they listen.
python3 - "$T/run" "$F" "$S" >"$T/fake.log" 2>&1 <<'EOF' &
import os, socket, struct, sys, time
run, full, silent = sys.argv[1:4]
keep = []
def listener(path, backlog):
	s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
	s.bind(path)
	s.listen(backlog)
	keep.append(s)
	return s
for g in (full, silent):
	listener(os.path.join(run, g, "control.sock"), 16)
# full: its backlog filled by connections nobody accepts
b = listener(os.path.join(run, full, "bell.sock"), 0)
n = 0
while True:
	c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
	c.setblocking(False)
	try:
		c.connect(os.path.join(run, full, "bell.sock"))
	except BlockingIOError:
		c.close()
		break
	keep.append(c)
	n += 1
print("full: backlog filled with", n, "connections", flush=True)
# silent: accepts, says nothing for 2 s, then the eventfd
s = listener(os.path.join(run, silent, "bell.sock"), 4)
print("ready", flush=True)
a, _ = s.accept()
print("silent: accepted", flush=True)
time.sleep(2)
efd = os.eventfd(0)
socket.send_fds(a, [struct.pack("<Q", 0x6c6c6562747668)], [efd])
print("silent: eventfd sent", flush=True)
time.sleep(600)
EOF
PIDS=$!
wait_for 5 grep -q ready "$T/fake.log" || fail "the fake guests did not start"

"$OBJ/bin/hvtraced" --foreground --socket "$SOCK" --run-dir "$T/run" \
	--shm-dir "$T" >"$T/hvtraced.log" 2>&1 &
DPID=$!
hvt_listening

# full: a blocking connect() would hang the attach (and everything after).
timeout 5 "$H" daemon attach "$F" --socket "$SOCK" >"$T/attach-full.log" 2>&1 ||
	fail "attach of a guest whose bell.sock backlog is full did not answer within 5 s (rc $?)"
timeout 5 "$H" daemon status --socket "$SOCK" >"$T/status1.log" 2>&1 ||
	fail "status did not answer within 5 s after the full bell.sock"
grep -q "$F" "$T/status1.log" || fail "status does not list $F"
grep -q "remote '$F': no doorbell from .*backlog is full" "$T/hvtraced.log" ||
	fail "hvtraced did not say that $F's bell.sock backlog is full"
echo "full backlog: attach and status answered"

# silent: status answers while the server says nothing; its eventfd is
# taken when it comes.
t0=$(date +%s%N)
timeout 5 "$H" daemon attach "$S" --socket "$SOCK" >"$T/attach-silent.log" 2>&1 ||
	fail "attach of a guest whose bell.sock sends nothing did not answer (rc $?)"
for i in 1 2 3; do
	timeout 5 "$H" daemon status --socket "$SOCK" >"$T/status2.log" 2>&1 ||
		fail "status did not answer while $S's bell.sock is silent"
	sleep 0.2
done
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q "silent: eventfd sent" "$T/fake.log" && [ $ms -lt 1900 ] &&
	fail "the silent server sent its eventfd before the checks were done"
echo "silent server: attach and 3 status answered in $ms ms"
wait_for 5 grep -q "remote '$S': doorbell eventfd received" "$T/hvtraced.log" ||
	fail "hvtraced did not take the eventfd that came late"
grep -q "silent: eventfd sent" "$T/fake.log" ||
	fail "the fake server did not send its eventfd"
kill -0 "$DPID" 2>/dev/null || fail "hvtraced died"
echo "silent server: its late eventfd was taken"
echo "PASS"
