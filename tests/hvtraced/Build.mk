# SPDX-License-Identifier: MIT
#
# tests/hvtraced/: the daemon's structure.  callgraph derives the
# file-level call graph of host/hvtraced from its objects and fails on a
# cycle (docs/proxy.md, "Inside hvtraced").

ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/callgraph,python3 $(srctree)/tests/hvtraced/callgraph.py $(objtree)/host/hvtraced $(srctree)/host/hvtraced))
endif
