#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""ks_pair.py HOST GUEST: KernelShark's own library (libkshark 2.2) opens a
host/guest pair as 'kernelshark HOST -a GUEST' does: each file a stream,
every entry loaded, and the host/guest mapping it builds for the KVM combo
plots (the guest's TRACEID matched with the host's GUEST option).  Prints
'stream FILE ENTRIES FIRST_TS LAST_TS' per file and 'map NAME GUEST_SD HOST_SD
VCPUS PID...' per mapping; exit 1 when a file does not open, 77 without
libkshark."""
import ctypes
import sys


class HostGuestMap(ctypes.Structure):
    _fields_ = [("guest_id", ctypes.c_int), ("host_id", ctypes.c_int),
                ("guest_name", ctypes.c_char_p), ("vcpu_count", ctypes.c_int),
                ("cpu_pid", ctypes.POINTER(ctypes.c_int))]


class Entry(ctypes.Structure):  # struct kshark_entry (libkshark.h, 2.x)
    _fields_ = [("next", ctypes.c_void_p), ("visible", ctypes.c_uint16),
                ("stream_id", ctypes.c_int16), ("event_id", ctypes.c_int16),
                ("cpu", ctypes.c_int16), ("pid", ctypes.c_int32),
                ("offset", ctypes.c_int64), ("ts", ctypes.c_int64)]


def main():
    try:
        ks = ctypes.CDLL("libkshark.so.2")
    except OSError as e:
        print("SKIP: libkshark is not installed (apt-get install "
              "kernelshark): %s" % e)
        return 77
    ks.kshark_instance.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    ks.kshark_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    ks.kshark_load_entries.argtypes = [
        ctypes.c_void_p, ctypes.c_int,
        ctypes.POINTER(ctypes.POINTER(ctypes.POINTER(Entry)))]
    ks.kshark_load_entries.restype = ctypes.c_ssize_t
    ks.kshark_tracecmd_get_hostguest_mapping.argtypes = [
        ctypes.POINTER(ctypes.POINTER(HostGuestMap))]
    ctx = ctypes.c_void_p()
    if not ks.kshark_instance(ctypes.byref(ctx)):
        print("kshark_instance failed")
        return 1
    for path in sys.argv[1:3]:
        sd = ks.kshark_open(ctx, path.encode())
        if sd < 0:
            print("kshark_open %s: %d" % (path, sd))
            return 1
        rows = ctypes.POINTER(ctypes.POINTER(Entry))()
        n = ks.kshark_load_entries(ctx, sd, ctypes.byref(rows))
        if n < 0:
            print("kshark_load_entries %s: %d" % (path, n))
            return 1
        first = rows[0].contents.ts if n else 0
        last = rows[n - 1].contents.ts if n else 0
        print("stream %s %d %d %d" % (path, n, first, last))
    maps = ctypes.POINTER(HostGuestMap)()
    nmap = ks.kshark_tracecmd_get_hostguest_mapping(ctypes.byref(maps))
    for i in range(max(nmap, 0)):
        m = maps[i]
        pids = [m.cpu_pid[v] for v in range(m.vcpu_count)]
        print("map %s %d %d %d %s" % (m.guest_name.decode(), m.guest_id,
                                      m.host_id, m.vcpu_count,
                                      " ".join(map(str, pids))))
    return 0


sys.exit(main())
