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

# planted_names: issue 22 point 4, a guest's RAM file or area that another
# user planted under its name in a 1777 HVT_SHM_DIR is refused by stream
# and hvtraced's chardev remote; root's own files are still read.
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/planted_names,HVT_OBJTREE=$(objtree) $(srctree)/tests/hvtraced/planted_names.sh))
endif
