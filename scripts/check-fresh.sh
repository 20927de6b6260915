#!/bin/bash
# SPDX-License-Identifier: MIT
#
# check-fresh.sh SRCTREE: the README's two commands on a fresh Debian 12.
#
#   1. debootstrap a minimal Debian 12 root (minbase, plus make and git)
#      from this machine's own apt sources, so it reaches the same package
#      registry a user's machine does;
#   2. clone the committed tree (SRCTREE's HEAD) into ROOT/root/hvtrace;
#   3. run exactly "make demo", then "make check", inside it, as root;
#   4. report the result, with the last lines of whichever failed;
#   5. kill what the commands left running, unmount, delete the root.
#
# Everything that mounts runs in a private mount namespace (unshare -m):
# the bind mount of /dev, and proc, sysfs and tracefs, exist only there,
# so they vanish with its last process, even after a SIGKILL, and the
# host namespace never sees a mount under ROOT.  The root is deleted from
# the host namespace with rm --one-file-system, and only after
# /proc/mounts shows nothing under it.
#
# Environment:
#   HVT_FRESH_DIR     where the root is made (default /var/tmp)
#   HVT_FRESH_CACHE   a folder that keeps downloaded .deb files between
#                     runs (default /var/cache/hvtrace/fresh-debs; "none"
#                     downloads everything every time).  apt still fetches
#                     the package lists from the registry and checks each
#                     file against them.
#   HVT_FRESH_KEEP=1  keep the root afterwards (it is printed)
#   HVT_FRESH_TIMEOUT seconds each command may take (default 2700)
set -uo pipefail

die() {
	echo "check-fresh: error: $*" >&2
	exit 1
}

[ $# -eq 1 ] || die "usage: $0 SRCTREE"
srctree=$(readlink -f "$1")
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts); run it as root"
for t in debootstrap unshare chroot git; do
	command -v $t >/dev/null || die "$t is missing; run 'make deps' first"
done
git -C "$srctree" rev-parse --verify -q HEAD >/dev/null ||
	die "$srctree is not a git checkout with a commit; check-fresh tests the committed tree"

parent=${HVT_FRESH_DIR:-/var/tmp}
cache=${HVT_FRESH_CACHE:-/var/cache/hvtrace/fresh-debs}
keep=${HVT_FRESH_KEEP:-0}
limit=${HVT_FRESH_TIMEOUT:-2700}

# --- the part that runs inside the private mount namespace ----------------

# inner ROOT LOGDIR: debootstrap, mount, run the two commands.  Exit status
# 0 when both passed, 1 when one failed, 2 when the root could not be made.
inner() {
	local root=$1 logs=$2 mirror rc

	# unshare --propagation private made every mount here private: no
	# mount made below reaches the host namespace.
	readlink /proc/self/ns/mnt >"$logs/mntns"

	mirror=$(apt_mirror) || {
		echo "check-fresh: no bookworm source in /etc/apt/sources.list{,.d}" >&2
		return 2
	}
	echo "check-fresh: debootstrap bookworm (minbase, make, git) from $mirror"
	local cacheopt=()
	if [ "$cache" != none ]; then
		mkdir -p "$cache" && cacheopt=(--cache-dir="$cache")
	fi
	if ! debootstrap --variant=minbase --include=make,git,ca-certificates \
		"${cacheopt[@]}" bookworm "$root" "$mirror" >"$logs/debootstrap.log" 2>&1; then
		tail -n 15 "$logs/debootstrap.log" >&2
		echo "check-fresh: debootstrap failed: the package registry ($mirror) could not be reached or served bookworm" >&2
		return 2
	fi

	# The machine's own apt sources and registry settings.
	rm -f "$root/etc/apt/sources.list"
	mkdir -p "$root/etc/apt/sources.list.d" "$root/etc/apt/apt.conf.d"
	[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/"
	local f
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] && cp "$f" "$root/etc/apt/sources.list.d/"
	done
	for f in /etc/apt/apt.conf.d/*; do
		[ -f "$f" ] && grep -q '^[[:space:]]*Acquire::' "$f" && cp "$f" "$root/etc/apt/apt.conf.d/"
	done
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null

	# The root becomes a mount point of its own, as / is on a real
	# machine (tools that change mount propagation, unshare(1) among
	# them, need "/" to be one).  The cgroup file systems a booted
	# machine has mounted are the host's (libvirt puts its QEMU in a
	# cgroup: qemu/libvirt-domain).
	mount --bind "$root" "$root" &&
		mount -t proc proc "$root/proc" &&
		mount -t sysfs sysfs "$root/sys" &&
		{ ! [ -d /sys/kernel/tracing/events ] ||
			mount -t tracefs tracefs "$root/sys/kernel/tracing"; } &&
		{ ! mountpoint -q /sys/fs/cgroup ||
			mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"; } &&
		mount --rbind /dev "$root/dev" &&
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm" &&
		mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root/run" || {
		echo "check-fresh: mounting proc, sys, cgroup, dev or run in the root failed" >&2
		return 2
	}
	if [ "$cache" != none ]; then
		mount --bind "$cache" "$root/var/cache/apt/archives" || return 2
	fi

	echo "check-fresh: cloning $(git -C "$srctree" rev-parse --short HEAD) into the root"
	git clone -q --no-hardlinks "$srctree" "$root/root/hvtrace" || return 2

	rc=0
	run_one demo "$root" "$logs" || rc=1
	[ $rc -eq 0 ] && { run_one check "$root" "$logs" || rc=1; }
	return $rc
}

# run_one GOAL ROOT LOGDIR: "make GOAL" in the clone, as root, with the
# environment a root login shell has.
run_one() {
	local goal=$1 root=$2 logs=$3 t0 t1 rc
	echo "check-fresh: # make $goal"
	t0=$EPOCHSECONDS
	timeout -k 10 "$limit" chroot "$root" /usr/bin/env -i HOME=/root \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		TERM=dumb SHELL=/bin/bash USER=root LOGNAME=root \
		/bin/bash -c "cd /root/hvtrace && make $goal" </dev/null \
		>"$logs/make-$goal.log" 2>&1
	rc=$?
	t1=$EPOCHSECONDS
	echo "$goal $rc $((t1 - t0))" >>"$logs/results"
	if [ $rc -eq 0 ]; then
		echo "check-fresh: make $goal passed in $((t1 - t0)) s; its last lines:"
		tail -n 4 "$logs/make-$goal.log" | sed 's/^/  | /'
		return 0
	fi
	[ $rc -eq 124 ] && echo "check-fresh: make $goal ran past $limit s and was stopped"
	echo "check-fresh: make $goal FAILED (exit $rc) after $((t1 - t0)) s; its last lines:"
	tail -n 40 "$logs/make-$goal.log" | sed 's/^/  | /'
	# The logs of the tests that failed, before the root goes.
	local t
	for t in $(sed -n 's/^failed tests: //p' "$logs/make-$goal.log" | tail -n1); do
		# The runner's report of it (exit status, time, reason).
		grep -a -A 20 "^FAIL  $t " "$logs/make-$goal.log" |
			awk 'NR > 1 && !/^      [|>]/ { exit } { print }' |
			cut -c1-300 | sed 's/^/  | /'
		t=${t//\//_}
		[ -f "$root/root/hvtrace/build/test-logs/$t.log" ] || continue
		if [ ! -s "$root/root/hvtrace/build/test-logs/$t.log" ]; then
			echo "check-fresh: $t's log is empty"
			continue
		fi
		echo "check-fresh: $t's log: its FAIL lines, then its end:"
		grep -a -m 5 'FAIL' "$root/root/hvtrace/build/test-logs/$t.log" | cut -c1-300 | sed 's/^/  | /'
		echo "  | ..."
		tail -n 25 "$root/root/hvtrace/build/test-logs/$t.log" | cut -c1-300 | sed 's/^/  | /'
	done
	return 1
}

# The first deb source for bookworm itself, from a one-line .list or a
# deb822 .sources file.
apt_mirror() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1 == "deb" { u = ($2 ~ /^\[/) ? $3 : $2; s = ($2 ~ /^\[/) ? $4 : $3;
			if (s == "bookworm") { print u; exit } }' "$f"
	done | head -n1 | grep . && return 0
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN { RS = ""; FS = "\n" }
		{ t = ""; u = ""; s = ""
		  for (i = 1; i <= NF; i++) {
			if ($i ~ /^Types:/) t = $i
			if ($i ~ /^URIs:/) { u = $i; sub(/^URIs:[ \t]*/, "", u); sub(/[ \t].*/, "", u) }
			if ($i ~ /^Suites:/) s = " " substr($i, 8) " "
		  }
		  if (t ~ /[ \t]deb([ \t]|$)/ && s ~ /[ \t]bookworm[ \t]/ && u != "") { print u; exit } }' "$f"
	done | head -n1 | grep .
}

if [ -n "${HVT_FRESH_INNER:-}" ]; then
	inner "$HVT_FRESH_ROOT" "$HVT_FRESH_LOGS"
	exit $?
fi

# --- the host side: make the folder, run the namespace, clean up ----------

# Processes in the namespace whose id is in FILE.
ns_pids() {
	local ns p
	ns=$(cat "$1" 2>/dev/null) || return 0
	[ -n "$ns" ] || return 0
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && echo "${p#/proc/}"
	done
	return 0
}

mounted_under() {
	awk -v r="$1" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts
}

remove_root() {
	local root=$1 m
	m=$(mounted_under "$root")
	if [ -n "$m" ]; then
		echo "check-fresh: NOT deleting $root: still mounted under it:" >&2
		echo "$m" | sed 's/^/  /' >&2
		return 1
	fi
	rm -rf --one-file-system "$root"
}

# end_namespace MNTNSFILE: end every process in that mount namespace.
# Whatever the two commands left running (daemons, guests, an apt in the
# middle of an install) keeps it alive: TERM it, then KILL whatever is
# there, again each round, since a dying parent can still fork.  Fails if
# something survives a minute; then the root must not be deleted.
end_namespace() {
	local pids tries=0
	while pids=$(ns_pids "$1") && [ -n "$pids" ]; do
		if [ $tries -ge 120 ]; then
			echo "check-fresh: processes remain in the root's namespace:" $pids >&2
			return 1
		fi
		if [ $tries -eq 0 ]; then
			kill -TERM $pids 2>/dev/null
		elif [ $tries -ge 4 ]; then
			kill -KILL $pids 2>/dev/null
		fi
		sleep 0.5
		tries=$((tries + 1))
	done
	return 0
}

# Roots that an earlier run left behind (killed before it could clean up),
# with whatever it left running there.
for old in "$parent"/hvtrace-fresh.*; do
	[ -d "$old" ] || continue
	pid=${old##*.}
	case $pid in *[!0-9]*) continue ;; esac
	kill -0 "$pid" 2>/dev/null && continue
	echo "check-fresh: removing $old, left by an earlier run"
	end_namespace "$old.logs/mntns" && remove_root "$old" || true
	rm -rf "$old.logs"
done

root=$parent/hvtrace-fresh.$$
logs=$root.logs
mkdir -p "$root" "$logs" || die "cannot create $root"
child=
cleaned=0

cleanup() {
	[ $cleaned -eq 1 ] && return
	cleaned=1
	end_namespace "$logs/mntns" || { echo "check-fresh: NOT deleting $root" >&2; return 1; }
	[ -n "$child" ] && wait "$child" 2>/dev/null
	if [ "$keep" = 1 ]; then
		echo "check-fresh: kept the root at $root (logs in $logs); nothing is mounted there"
		return
	fi
	remove_root "$root" && rm -rf "$logs"
}

on_signal() {
	echo "check-fresh: interrupted; cleaning up" >&2
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null
	cleanup
	exit 130
}
trap on_signal INT TERM HUP
trap cleanup EXIT

t0=$EPOCHSECONDS
HVT_FRESH_INNER=1 HVT_FRESH_ROOT=$root HVT_FRESH_LOGS=$logs \
	unshare --mount --propagation private "$0" "$srctree" &
child=$!
wait "$child"
rc=$?
child=
t1=$EPOCHSECONDS

echo
case $rc in
0)
	summary=$(awk '{ printf "%smake %s %d s", (NR > 1 ? ", " : ""), $1, $3 }' "$logs/results")
	echo "check-fresh: PASSED in $((t1 - t0)) s on a fresh Debian 12 root ($summary)"
	# The fresh root's own test count, as the runner printed it there.
	counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/make-check.log" | tail -n1)
	[ -n "$counts" ] && echo "fresh: $counts"
	;;
2) echo "check-fresh: FAILED: the fresh root could not be made (see above)" ;;
*) echo "check-fresh: FAILED after $((t1 - t0)) s (see above)" ;;
esac
[ $rc -eq 0 ] || { [ "$keep" = 1 ] || echo "(set HVT_FRESH_KEEP=1 to keep the root for a look)"; }
cleanup
[ $rc -eq 0 ] && exit 0
exit 1
