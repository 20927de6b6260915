#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Fetch a Debian 6.12 amd64 kernel for the QEMU guest rig, without
# installing it on the host: the newest linux-image-6.12.N+debM-amd64 that
# apt offers is downloaded with `apt-get download` and unpacked with
# `dpkg -x` into a cache folder.  Later runs reuse the cache and do not
# touch apt at all.
#
#   fetch-kernel.sh [--refresh] [--print vmlinuz|dir|config|modules|version]
#
# Prints the path of the kernel image (vmlinuz) by default; with --print:
#   dir      the unpacked package root (holds boot/ and lib/modules/)
#   config   the kernel's build configuration (boot/config-*)
#   modules  the module tree (lib/modules/VERSION)
#   version  the kernel release string (uname -r inside the guest)
# --refresh asks apt again and fetches a newer kernel if there is one.
#
# Environment:
#   HVT_CACHE        cache folder (default /var/cache/hvtrace)
#   HVT_KERNEL_PKG   a package name to use instead of the newest 6.12 image
set -euo pipefail

cache=${HVT_CACHE:-/var/cache/hvtrace}
kdir=$cache/kernel
refresh=0
what=vmlinuz

usage() {
	sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//'
}

die() {
	echo "fetch-kernel: error: $*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--refresh) refresh=1 ;;
	--print)
		[ $# -ge 2 ] || die "--print needs an argument (vmlinuz, dir, config, modules or version)"
		what=$2
		shift
		;;
	--print=*) what=${1#--print=} ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$1'; see $0 --help" ;;
	esac
	shift
done
case $what in
vmlinuz | dir | config | modules | version) ;;
*) die "--print takes vmlinuz, dir, config, modules or version, not '$what'" ;;
esac

# The answer for an unpacked package root.
print_for() {
	local root=$1 vmlinuz rel
	vmlinuz=$(ls "$root"/boot/vmlinuz-* 2>/dev/null | head -n1)
	[ -n "$vmlinuz" ] || return 1
	rel=${vmlinuz##*/vmlinuz-}
	case $what in
	vmlinuz) echo "$vmlinuz" ;;
	dir) echo "$root" ;;
	config) echo "$root/boot/config-$rel" ;;
	modules) echo "$root/lib/modules/$rel" ;;
	version) echo "$rel" ;;
	esac
}

# The cached kernel in use, if any: kernel/current points at its root.
cached_root() {
	local root
	root=$(readlink -f "$kdir/current" 2>/dev/null) || return 1
	[ -d "$root/boot" ] && ls "$root"/boot/vmlinuz-* >/dev/null 2>&1 || return 1
	echo "$root"
}

# Fast path: a cached kernel and no refresh asked for.  No lock needed:
# kernel/current is only ever replaced atomically.
if [ $refresh -eq 0 ] && [ -z "${HVT_KERNEL_PKG:-}" ] && root=$(cached_root); then
	print_for "$root"
	exit 0
fi
if [ -n "${HVT_KERNEL_PKG:-}" ] && [ $refresh -eq 0 ] &&
	[ -d "$kdir/$HVT_KERNEL_PKG/boot" ] && print_for "$kdir/$HVT_KERNEL_PKG"; then
	exit 0
fi

mkdir -p "$kdir" 2>/dev/null ||
	die "cannot create the cache folder $kdir; run as root or set HVT_CACHE to a writable folder"
[ -w "$kdir" ] || die "cache folder $kdir is not writable; run as root or set HVT_CACHE to a writable folder"
command -v apt-get >/dev/null && command -v dpkg >/dev/null ||
	die "apt-get and dpkg are needed to fetch the guest kernel (this rig expects a Debian host)"

# One fetcher at a time; the others wait and then find the cache filled.
exec 9>"$kdir/.lock"
flock -w 600 9 || die "timed out waiting for another fetch-kernel.sh (lock $kdir/.lock)"

# Candidate package names, newest first: for each version the signed image
# first, then the unsigned one (both carry boot/vmlinuz-*).
candidates() {
	apt-cache search --names-only '^linux-image-6\.12\.[0-9]+(\+deb[0-9]+)?-amd64(-unsigned)?$' 2>/dev/null |
		awk '{ print $1 }' |
		awk '{ v = $0; sub(/^linux-image-/, "", v); sub(/-amd64(-unsigned)?$/, "", v);
		       u = ($0 ~ /-unsigned$/) ? 1 : 0; print v "\t" u "\t" $0 }' |
		sort -t"$(printf '\t')" -k1,1Vr -k2,2n | cut -f3
}

if [ -n "${HVT_KERNEL_PKG:-}" ]; then
	list=$HVT_KERNEL_PKG
else
	list=$(candidates)
	if [ -z "$list" ]; then
		echo "fetch-kernel: no linux-image-6.12.*-amd64 in apt's lists; running apt-get update" >&2
		apt-get update -q >/dev/null 2>&1 ||
			die "apt-get update failed; run it by hand (as root) and retry"
		list=$(candidates)
	fi
	[ -n "$list" ] ||
		die "apt offers no linux-image-6.12.*-amd64 package; enable a Debian source that has one (bookworm-security or trixie) or set HVT_KERNEL_PKG"
fi

root=
for pkg in $list; do
	if [ -d "$kdir/$pkg/boot" ] && ls "$kdir/$pkg"/boot/vmlinuz-* >/dev/null 2>&1; then
		root=$kdir/$pkg
		break
	fi
	tmp=$(mktemp -d "$kdir/.fetch.XXXXXX")
	echo "fetch-kernel: downloading $pkg" >&2
	if ! (cd "$tmp" && apt-get download -q "$pkg" >download.log 2>&1); then
		echo "fetch-kernel: could not download $pkg: $(tail -n1 "$tmp/download.log")" >&2
		rm -rf "$tmp"
		continue
	fi
	deb=$(ls "$tmp"/*.deb 2>/dev/null | head -n1)
	mkdir "$tmp/root"
	if ! dpkg -x "$deb" "$tmp/root" 2>"$tmp/dpkg.log"; then
		echo "fetch-kernel: could not unpack $deb: $(tail -n1 "$tmp/dpkg.log")" >&2
		rm -rf "$tmp"
		continue
	fi
	if ! ls "$tmp"/root/boot/vmlinuz-* >/dev/null 2>&1; then
		echo "fetch-kernel: $pkg has no boot/vmlinuz-*; trying the next candidate" >&2
		rm -rf "$tmp"
		continue
	fi
	rm -rf "${kdir:?}/$pkg"
	mv "$tmp/root" "$kdir/$pkg"
	rm -rf "$tmp"
	root=$kdir/$pkg
	break
done
[ -n "$root" ] || die "none of the candidate kernel packages could be fetched ($(echo $list | tr '\n' ' '))"

if [ -z "${HVT_KERNEL_PKG:-}" ]; then
	ln -sfn "${root##*/}" "$kdir/.current.new"
	mv -T "$kdir/.current.new" "$kdir/current"
fi
print_for "$root"
