# SPDX-License-Identifier: MIT
#
# tests/hvtraced/: the daemon's structure.  callgraph derives the
# file-level call graph of host/hvtraced from its objects and fails on a
# cycle, or on a call that goes up the layer map of docs/proxy.md
# ("Inside hvtraced").

ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/callgraph,python3 $(srctree)/tests/hvtraced/callgraph.py $(objtree)/host/hvtraced $(srctree)/host/hvtraced $(srctree)/docs/proxy.md))
endif

# kformats: a guest kernel's formats and events through a local agent
# with a tracefs-like folder (no VM).
ifneq ($(HVTRACED_BIN)$(AGENT_BIN),)
$(eval $(call add-test,hvtraced/kformats,HVT_OBJTREE=$(objtree) $(srctree)/tests/hvtraced/kformats.sh))
endif

# kring_attach: a guest kernel ring attached by pid (the kring transport)
# from a fake VMM process holding unit/kring_golden's ring (no VM).
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/kring_attach,HVT_OBJTREE=$(objtree) $(srctree)/tests/hvtraced/kring_attach.sh))
endif

# kring_attach_fds: an attach by pid reads only what its client opened
# and passed, and a FIFO in a formats folder blocks nothing (issue 22).
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/kring_attach_fds,HVT_OBJTREE=$(objtree) $(srctree)/tests/hvtraced/kring_attach_fds.sh))
endif
