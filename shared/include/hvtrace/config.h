/* SPDX-License-Identifier: MIT */
/*
 * The only way C code sees build options: the header that kconfig generates
 * from .config, plus IS_ENABLED().  Built with -Wundef, so a misspelt
 * CONFIG_ name in #if is an error rather than a silent 0; prefer
 * IS_ENABLED(CONFIG_X) in C expressions.
 */
#ifndef HVTRACE_CONFIG_H
#define HVTRACE_CONFIG_H

#include <generated/autoconf.h>

/*
 * IS_ENABLED(CONFIG_X) is 1 when CONFIG_X is defined to 1 (a 'y' bool),
 * else 0, and is usable in both #if and C expressions.
 */
#define HVT_CFG_PLACEHOLDER_1		0,
#define hvt_cfg_second(ignored, val, ...)	val
#define hvt_cfg_test(junk)		hvt_cfg_second(junk 1, 0, 0)
#define hvt_cfg_paste(val)		hvt_cfg_test(HVT_CFG_PLACEHOLDER_##val)
#define hvt_cfg_defined(x)		hvt_cfg_paste(x)
#define IS_ENABLED(option)		hvt_cfg_defined(option)

#if (CONFIG_HVT_DEFAULT_SUBBUFS & (CONFIG_HVT_DEFAULT_SUBBUFS - 1)) != 0
#error "CONFIG_HVT_DEFAULT_SUBBUFS must be a power of two: fix it with make menuconfig"
#endif

#if IS_ENABLED(CONFIG_HVT_MODE_DEFAULT_OVERWRITE)
#define HVT_DEFAULT_MODE	HVT_MODE_OVERWRITE
#else
#define HVT_DEFAULT_MODE	HVT_MODE_CONSUME
#endif

#endif /* HVTRACE_CONFIG_H */
