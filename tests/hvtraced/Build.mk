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

# sub_high_cpu: a subscription through hvtraced to CPU 70 of a 72-CPU
# loopback area gets that CPU's events and consumes no other CPU
# (issue 22 point 10).
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/sub_high_cpu,HVT_OBJTREE=$(objtree) bash $(srctree)/tests/hvtraced/sub_high_cpu.sh))
endif

# bell_stall: a guest's bell.sock with a full backlog, or one that
# answers late, never stalls hvtraced's loop (issue 22 point 9).
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/bell_stall,HVT_OBJTREE=$(objtree) bash $(srctree)/tests/hvtraced/bell_stall.sh))
endif

# state_restore: what a restart attaches again (hvtraced.state): an area
# as the member that attached it, through the same checks (issue 22 point
# 1); a restored area whose file is gone frees its name.  Needs
# root (skips otherwise).
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/state_restore,HVT_OBJTREE=$(objtree) $(srctree)/tests/hvtraced/state_restore.sh))
endif

# planted_names: issue 22 point 4, a guest's RAM file or area that another
# user planted under its name in a 1777 HVT_SHM_DIR is refused by stream
# and hvtraced's chardev remote; root's own files are still read.
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/planted_names,HVT_OBJTREE=$(objtree) $(srctree)/tests/hvtraced/planted_names.sh))
endif

# kring_attach_fds: an attach by pid reads only what its client opened
# and passed, and a FIFO in a formats folder blocks nothing (issue 22).
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/kring_attach_fds,HVT_OBJTREE=$(objtree) $(srctree)/tests/hvtraced/kring_attach_fds.sh))
endif

# backpressure: a remote read through hvtraced loses nothing the area
# kept (a pre-filled area through the smallest tool queue), and a loss
# forced by a stalled reader shows at its CPU, where it happened.
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/backpressure,HVT_OBJTREE=$(objtree) bash $(srctree)/tests/hvtraced/backpressure.sh))
endif

# bench_idle (make bench): what 100 idle loopback remotes cost hvtraced,
# RSS per remote and the daemon's idle CPU.
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-bench,hvtraced/idle,HVT_OBJTREE=$(objtree) $(srctree)/tests/hvtraced/bench_idle.sh))
endif

# restore_missing: a restored area whose file is gone is "missing" (list,
# stream, unknown-name errors), said once in the log, looked for again
# with back-off (its file created again is attached by itself), and a
# detach forgets it.
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/restore_missing,HVT_OBJTREE=$(objtree) bash $(srctree)/tests/hvtraced/restore_missing.sh))
endif

# guest_powered_off: a rig guest's remote is powered-off while the rig's
# record RUN_DIR/NAME.ended says so (and only a record of the rig's:
# no link, not world-writable, the exact first line), disconnected
# without it, waiting again when the guest is back.
ifneq ($(HVTRACED_BIN),)
$(eval $(call add-test,hvtraced/guest_powered_off,HVT_OBJTREE=$(objtree) bash $(srctree)/tests/hvtraced/guest_powered_off.sh))
endif
