#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build the initramfs of an hvtrace QEMU guest: a gzip'd newc cpio with
# busybox (static), the rig's /init (qemu-scripts/guest-init.sh), the extra
# files named on the command line and, if asked, kernel modules.
#
#   mkinitramfs.sh -o OUT.cpio.gz [options] [FILE[:DEST]]...
#
#   FILE[:DEST]      copy FILE into the image; DEST is an absolute path in
#                    the guest (default /bin/BASENAME).  A folder is copied
#                    whole.  ELF programs must be statically linked: the
#                    image has no shared libraries.
#   -o, --output F   where to write the image (required)
#   -m, --module M   load kernel module M (a name such as uio_pci_generic)
#                    at boot; its dependencies come along.  Repeatable.
#   --kernel-dir D   unpacked kernel package to take modules from
#                    (default: qemu-scripts/fetch-kernel.sh --print dir)
#   --init F         use F as /init instead of qemu-scripts/guest-init.sh
#   --busybox F      the busybox binary (default: busybox from PATH)
#   -h, --help       this text
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=
modules=()
files=()
kernel_dir=
init=$here/guest-init.sh
busybox=

die() {
	echo "mkinitramfs: error: $*" >&2
	exit 1
}

usage() {
	sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
	case $1 in
	-o | --output)
		[ $# -ge 2 ] || die "$1 needs a file name"
		out=$2
		shift
		;;
	-m | --module)
		[ $# -ge 2 ] || die "$1 needs a module name"
		modules+=("$2")
		shift
		;;
	--kernel-dir)
		[ $# -ge 2 ] || die "$1 needs a folder"
		kernel_dir=$2
		shift
		;;
	--init)
		[ $# -ge 2 ] || die "$1 needs a file"
		init=$2
		shift
		;;
	--busybox)
		[ $# -ge 2 ] || die "$1 needs a file"
		busybox=$2
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	--) shift; files+=("$@"); break ;;
	-*) die "unknown option '$1'; see $0 --help" ;;
	*) files+=("$1") ;;
	esac
	shift
done
[ -n "$out" ] || die "no output file; use -o FILE (see --help)"
command -v cpio >/dev/null || die "cpio is missing; install it (apt-get install cpio, or make deps)"
command -v gzip >/dev/null || die "gzip is missing; install it (apt-get install gzip)"

# An ELF file that asks for a program interpreter needs shared libraries.
is_elf() {
	[ "$(head -c4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]
}
check_static() {
	local f=$1
	is_elf "$f" || return 0
	if LC_ALL=C readelf -l "$f" 2>/dev/null | grep -q 'program interpreter'; then
		die "$f is dynamically linked; the guest image has no shared libraries: link it with -static"
	fi
}

if [ -z "$busybox" ]; then
	busybox=$(command -v busybox || true)
	[ -n "$busybox" ] || die "busybox is missing; install busybox-static (apt-get install busybox-static, or make deps)"
fi
[ -x "$busybox" ] || die "busybox '$busybox' is not an executable file"
if is_elf "$busybox" && LC_ALL=C readelf -l "$busybox" 2>/dev/null | grep -q 'program interpreter'; then
	die "$busybox is dynamically linked; install busybox-static (apt-get install busybox-static)"
fi
[ -r "$init" ] || die "init script $init not found"

stage=$(mktemp -d "${TMPDIR:-/tmp}/hvt-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT

mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,run,tmp,root,etc/hvtrace,lib/modules}
chmod 1777 "$stage/tmp"
cp "$busybox" "$stage/bin/busybox"
chmod 0755 "$stage/bin/busybox"
# /init links the applets with "busybox --install -s" at boot (one
# process instead of hundreds here); the shell it runs under is needed now.
ln -sf busybox "$stage/bin/sh"
install -m 0755 "$init" "$stage/init"
# The kernel opens /dev/console before /init mounts devtmpfs; without the
# node early output is lost (harmless: /init reopens it).
mknod -m 0600 "$stage/dev/console" c 5 1 2>/dev/null || true
echo "root:x:0:0:root:/root:/bin/sh" >"$stage/etc/passwd"
echo "root:x:0:" >"$stage/etc/group"

for spec in "${files[@]}"; do
	src=${spec%%:*}
	dest=
	[ "$src" != "$spec" ] && dest=${spec#*:}
	[ -e "$src" ] || die "$src does not exist"
	[ -n "$dest" ] || dest=/bin/$(basename "$src")
	case $dest in
	/*) ;;
	*) die "destination '$dest' of $src must be an absolute path in the guest" ;;
	esac
	case $dest in
	*/../* | */.. | /init) die "destination '$dest' of $src is not allowed" ;;
	esac
	if [ -d "$src" ]; then
		while IFS= read -r -d '' f; do
			[ -f "$f" ] && check_static "$f"
		done < <(find "$src" -type f -print0)
		mkdir -p "$stage$dest"
		cp -a "$src"/. "$stage$dest"/
	else
		check_static "$src"
		mkdir -p "$stage$(dirname "$dest")"
		rm -f "$stage$dest"
		cp -L "$src" "$stage$dest"
		[ -x "$src" ] && chmod 0755 "$stage$dest"
	fi
done

# Modules: resolve names and dependencies from the kernel package,
# decompress (busybox insmod takes plain .ko), list in load order.
if [ ${#modules[@]} -gt 0 ]; then
	if [ -z "$kernel_dir" ]; then
		kernel_dir=$("$here/fetch-kernel.sh" --print dir) ||
			die "could not find the guest kernel for the modules; pass --kernel-dir"
	fi
	moddir=$(ls -d "$kernel_dir"/lib/modules/*/ 2>/dev/null | head -n1)
	[ -n "$moddir" ] && [ -d "$moddir/kernel" ] ||
		die "no lib/modules/*/kernel/ under $kernel_dir"
	moddir=${moddir%/}
	rel=${moddir##*/}
	# Index: module name (- folded to _) -> path under $moddir.  The
	# package ships no modules.dep (depmod runs at install time), so the
	# dependencies come from each module's own .modinfo "depends=" field.
	declare -A modpath=()
	while IFS= read -r -d '' f; do
		n=${f##*/}
		n=${n%%.ko*}
		modpath[${n//-/_}]=${f#"$moddir"/}
	done < <(find "$moddir/kernel" -name '*.ko*' -print0)
	unpack() {
		case $1 in
		*.xz) xz -dc "$moddir/$1" ;;
		*.zst) zstd -qdc "$moddir/$1" ;;
		*.gz) gzip -dc "$moddir/$1" ;;
		*) cat "$moddir/$1" ;;
		esac
	}
	declare -A loaded=()
	order=()
	add_module() {
		local name=${1//-/_} depth=$2 p deps d
		[ "$depth" -lt 32 ] || die "module dependencies of $name nest too deep"
		[ -z "${loaded[$name]:-}" ] || return 0
		loaded[$name]=1
		p=${modpath[$name]:-}
		[ -n "$p" ] || die "kernel $rel has no module named $name (see $moddir/kernel/)"
		deps=$(unpack "$p" | tr '\0' '\n' | grep -a -m1 '^depends=' | cut -d= -f2 | tr ',' ' ') ||
			true
		for d in $deps; do
			add_module "$d" $((depth + 1))
		done
		order+=("$p")
	}
	for m in "${modules[@]}"; do
		if [ -z "${modpath[${m//-/_}]:-}" ] &&
			grep -q "/${m//-/_}\.ko\|/${m//_/-}\.ko" "$moddir/modules.builtin" 2>/dev/null; then
			echo "mkinitramfs: note: $m is built into kernel $rel; nothing to add" >&2
			continue
		fi
		add_module "$m" 0
	done
	: >"$stage/etc/hvtrace/modules"
	for p in "${order[@]}"; do
		base=${p%.xz}
		base=${base%.zst}
		base=${base%.gz}
		dst=$stage/lib/modules/$rel/$base
		mkdir -p "$(dirname "$dst")"
		unpack "$p" >"$dst" || die "could not decompress $moddir/$p"
		echo "/lib/modules/$rel/$base" >>"$stage/etc/hvtrace/modules"
	done
fi

tmp_out=$(mktemp "$(dirname "$out")/.$(basename "$out").XXXXXX") ||
	die "cannot write next to $out"
if ! (cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc --owner=0:0 | gzip -n -6) >"$tmp_out"; then
	rm -f "$tmp_out"
	die "cpio/gzip failed writing $out"
fi
chmod 0644 "$tmp_out"
mv -f "$tmp_out" "$out"
