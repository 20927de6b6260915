#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make install: the host libraries (static and shared), their headers,
# their pkg-config files, the hvtrace CLI, hvtraced, the QEMU rig's
# launcher that "hvtrace guest" runs (libexec/hvtrace), and the man pages.
# Honours DESTDIR and PREFIX.
set -euo pipefail
: "${HVT_OBJTREE:?}" "${HVT_SRCTREE:?}"
prefix=${PREFIX:-/usr/local}
dest=${DESTDIR:-}
bindir=$dest$prefix/bin
libdir=$dest$prefix/lib
incdir=$dest$prefix/include
pcdir=$libdir/pkgconfig
mandir=$dest$prefix/share/man
libexecdir=$dest$prefix/libexec/hvtrace
version=$(sed -n 's/^HVT_VERSION := //p' "$HVT_SRCTREE/Makefile")

install -d "$bindir" "$libdir" "$incdir/hvtrace" "$pcdir"
for f in $INSTALL_BIN; do
	install -m 0755 "$f" "$bindir/"
	echo "  INSTALL $bindir/$(basename "$f")"
done
for f in ${INSTALL_LIBEXEC:-}; do
	install -d "$libexecdir"
	install -m 0755 "$f" "$libexecdir/"
	echo "  INSTALL $libexecdir/$(basename "$f")"
done
for f in $INSTALL_LIB; do
	case $f in
	*.so.*)
		install -m 0755 "$f" "$libdir/"
		b=$(basename "$f")
		ln -sf "$b" "$libdir/${b%%.so.*}.so"
		;;
	*) install -m 0644 "$f" "$libdir/" ;;
	esac
	echo "  INSTALL $libdir/$(basename "$f")"
done
for f in $INSTALL_HDR; do
	install -m 0644 "$f" "$incdir/"
	echo "  INSTALL $incdir/$(basename "$f")"
done
# The public headers include the ABI header; <hvtrace-daemon.h> the
# protocol's.
for h in abi.h proto.h; do
	install -m 0644 "$HVT_SRCTREE/shared/include/hvtrace/$h" "$incdir/hvtrace/$h"
	echo "  INSTALL $incdir/hvtrace/$h"
done

for f in $INSTALL_PC; do
	pc=$(basename "$f" .in)
	sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" "$f" >"$pcdir/$pc"
	echo "  INSTALL $pcdir/$pc"
done

for sec in 1 3 7 8; do
	for m in "$HVT_SRCTREE"/docs/man/*.$sec; do
		[ -e "$m" ] || continue
		install -d "$mandir/man$sec"
		install -m 0644 "$m" "$mandir/man$sec/"
		echo "  INSTALL $mandir/man$sec/$(basename "$m")"
	done
done

# hvtraced serves root and the group hvtrace (its socket is 0660, owned by
# that group): create the group on the machine itself, never in a staging
# DESTDIR.
if [ -n "$dest" ]; then
	echo "  GROUP   skipped (DESTDIR is set): on the target, run 'groupadd --system hvtrace' as root"
elif [ "$(id -u)" != 0 ]; then
	echo "  GROUP   skipped (not root): run 'groupadd --system hvtrace' as root"
elif getent group hvtrace >/dev/null; then
	echo "  GROUP   hvtrace exists"
else
	groupadd --system hvtrace
	echo "  GROUP   hvtrace created; add the users who trace: usermod -aG hvtrace USER"
fi
