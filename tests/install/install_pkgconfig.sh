#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make install puts the library, headers, pkg-config file and CLI in place:
# install into a scratch DESTDIR, build a program against the installed
# copy with pkg-config alone, and run it and the installed CLI.
set -euo pipefail
: "${HVT_SRCTREE:?}" "${HVT_OBJTREE:?}"
dest=$(mktemp -d /tmp/hvtrace-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT
out=$(make -s -C "$HVT_SRCTREE" O="$HVT_OBJTREE" install DESTDIR="$dest" PREFIX=/usr)
# A staged install never touches the machine's groups, and says so.
grep -q "GROUP   skipped (DESTDIR is set)" <<<"$out" ||
	{ echo "install into DESTDIR did not say it left the hvtrace group alone" >&2; exit 1; }
for f in usr/bin/hvtrace usr/lib/libhvtrace.a usr/lib/libhvtrace.so.1 \
	 usr/include/hvtrace.h usr/include/hvtrace/abi.h \
	 usr/lib/pkgconfig/hvtrace.pc; do
	[ -e "$dest/$f" ] || { echo "missing after install: /$f" >&2; exit 1; }
done
cat >"$dest/use.c" <<'C'
#include <hvtrace.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	struct hvtrace_area *a;
	int r = hvtrace_area_open("/nonexistent/area", 0, 0, 0, &a);
	/* A missing file is -ENOENT with a message naming it. */
	if (r != -2 || !strstr(hvtrace_last_error(), "/nonexistent/area"))
		return 1;
	printf("installed library works: %s\n", hvtrace_last_error());
	return 0;
}
C
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig
# Shared library build and run.
gcc -o "$dest/use" "$dest/use.c" $(pkg-config --cflags --libs hvtrace)
LD_LIBRARY_PATH=$dest/usr/lib "$dest/use"
# Static build against the installed archive, private deps from pkg-config.
gcc -o "$dest/use-static" "$dest/use.c" $(pkg-config --cflags hvtrace) \
	"$dest/usr/lib/libhvtrace.a" \
	$(pkg-config --libs --static hvtrace | sed 's/-lhvtrace//')
"$dest/use-static"
"$dest/usr/bin/hvtrace" --help | grep -q "usage: hvtrace" || { echo "installed hvtrace --help failed" >&2; exit 1; }
# "hvtrace guest" runs the installed launcher, with its scripts beside it,
# not the source tree's: no source tree is needed once installed.
for f in hvtrace-guest mkinitramfs.sh fetch-kernel.sh guest-init.sh; do
	[ -x "$dest/usr/libexec/hvtrace/$f" ] || { echo "missing after install: /usr/libexec/hvtrace/$f" >&2; exit 1; }
done
# The installed launcher checks a request with its installed scripts.
HVT_RUNDIR=$dest/run HVT_SHM_DIR=$dest "$dest/usr/libexec/hvtrace/hvtrace-guest" start --name inst \
	--kernel "$dest/usr/bin/hvtrace" --initrd "$dest/use.c" --check ||
	{ echo "the installed launcher refused a valid request" >&2; exit 1; }
# Which launcher the installed hvtrace runs: put a stand-in where the
# installed one is; it must be the one that answers.
cp "$dest/usr/libexec/hvtrace/hvtrace-guest" "$dest/launcher.real"
printf '#!/bin/sh\necho "installed launcher: $HVT_GUEST_PROG $*"\n' >"$dest/usr/libexec/hvtrace/hvtrace-guest"
out=$(env -u HVT_SRCTREE -u HVT_OBJTREE -u HVT_GUEST_LAUNCHER "$dest/usr/bin/hvtrace" guest kformats x 2>&1)
[ "$out" = "installed launcher: hvtrace guest kformats x" ] ||
	{ echo "the installed hvtrace did not run the installed launcher: $out" >&2; exit 1; }
cp "$dest/launcher.real" "$dest/usr/libexec/hvtrace/hvtrace-guest"
echo "ok: install tree complete, pkg-config build (shared and static) runs, the installed launcher runs"
