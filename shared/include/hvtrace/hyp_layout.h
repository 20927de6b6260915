/* SPDX-License-Identifier: MIT */
/*
 * Memory map of the EL2 rig (QEMU "virt", -M virt,virtualization=on).
 *
 * Shared by the EL2 image (C, assembly and the linker script) and the host
 * tools, so it holds only plain numbers.  Guest RAM is a file on the host
 * (-object memory-backend-file,...,share=on -machine memory-backend=ram):
 * guest physical HVT_HYP_RAM_BASE + X is file offset X.
 *
 *   physical      file offset  what
 *   0x09000000    -            PL011 UART (Device memory)
 *   0x40000000    0x0000000    DTB, placed by QEMU (1 MiB); /chosen/bootargs
 *                              carries the boot parameters (-append)
 *   0x40200000    0x0200000    the EL2 image: code, data, stacks, page
 *                              tables (at most 14 MiB)
 *   0x41000000    0x1000000    the trace area, 16 MiB (HVT_HYP_AREA_*):
 *                              header, control page, per-CPU buffers
 *   0x42000000    0x2000000    end of RAM (32 MiB of RAM is the minimum)
 */
#ifndef HVTRACE_HYP_LAYOUT_H
#define HVTRACE_HYP_LAYOUT_H

#define HVT_HYP_RAM_BASE	0x40000000
#define HVT_HYP_RAM_MIN_MB	32
#define HVT_HYP_IMAGE_BASE	0x40200000
#define HVT_HYP_IMAGE_MAX	0x00e00000
#define HVT_HYP_AREA_OFFSET	0x01000000	/* RAM offset = file offset */
#define HVT_HYP_AREA_SIZE	0x01000000
#define HVT_HYP_AREA_BASE	(HVT_HYP_RAM_BASE + HVT_HYP_AREA_OFFSET)
#define HVT_HYP_UART_BASE	0x09000000
#define HVT_HYP_DTB_BASE	HVT_HYP_RAM_BASE
#define HVT_HYP_DTB_MAX		0x00100000

/* Most CPUs the image supports (the Kconfig limit is at most this). */
#define HVT_HYP_MAX_CPUS	8

#endif /* HVTRACE_HYP_LAYOUT_H */
