#!/bin/bash
# SPDX-License-Identifier: MIT
#
# make check-fresh must fail, clearly, when the package registry cannot be
# reached: run scripts/check-fresh.sh in a network namespace with no
# network, and expect exit 1, a message that names the registry, no
# PASSED line, and nothing left in its folder.
set -u
src=${HVT_SRCTREE:-$PWD}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (unshare --net, debootstrap)"; exit 77; }
for t in unshare debootstrap git; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
git -C "$src" rev-parse -q --verify HEAD >/dev/null ||
	{ echo "SKIP: $src is not a git checkout (check-fresh clones the committed tree)"; exit 77; }
unshare --net true 2>/dev/null || { echo "SKIP: unshare --net is not permitted here"; exit 77; }

dir=$(mktemp -d /var/tmp/hvt-fresh-offline.XXXXXX)
trap 'rm -rf --one-file-system "$dir"' EXIT

out=$(HVT_FRESH_DIR=$dir HVT_FRESH_CACHE=none timeout 120 \
	unshare --net "$src/scripts/check-fresh.sh" "$src" 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'

fail() {
	echo "FAIL: $*"
	exit 1
}
[ $rc -eq 1 ] || fail "check-fresh without a network exited $rc, not 1"
echo "$out" | grep -q 'PASSED' && fail "check-fresh printed PASSED without a registry"
echo "$out" | grep -q 'could not be reached' || fail "the message does not say the registry could not be reached"
echo "$out" | grep -qE 'registry \(https?://' || fail "the message does not name the registry"
left=$(ls -A "$dir")
[ -z "$left" ] || fail "check-fresh left $left in $dir"
echo "PASS: without a registry check-fresh fails, names it, and leaves nothing"
