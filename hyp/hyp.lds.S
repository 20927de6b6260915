/* SPDX-License-Identifier: MIT */
/*
 * Link map of the EL2 image (preprocessed with cpp): one text segment,
 * one data segment, at HVT_HYP_IMAGE_BASE (see hvtrace/hyp_layout.h).
 */
#include <hvtrace/hyp_layout.h>

OUTPUT_FORMAT("elf64-littleaarch64")
OUTPUT_ARCH(aarch64)
ENTRY(_start)

PHDRS
{
	text PT_LOAD FLAGS(5);	/* R X */
	data PT_LOAD FLAGS(6);	/* R W */
}

SECTIONS
{
	. = HVT_HYP_IMAGE_BASE;
	__image_start = .;
	.text : {
		KEEP(*(.text.boot))
		*(.text .text.*)
	} :text
	.rodata : { *(.rodata .rodata.*) } :text
	. = ALIGN(4096);
	.data : { *(.data .data.*) } :data
	.bss (NOLOAD) : {
		. = ALIGN(16);
		__bss_start = .;
		*(.bss .bss.*)
		*(COMMON)
		. = ALIGN(16);
		__bss_end = .;
	} :data
	__image_end = .;
	/DISCARD/ : { *(.comment) *(.note*) *(.eh_frame*) }
}

ASSERT(__image_end - __image_start <= HVT_HYP_IMAGE_MAX,
       "the EL2 image overlaps the trace area: see hvtrace/hyp_layout.h")
