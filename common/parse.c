// SPDX-License-Identifier: MIT
/*
 * Numbers from command lines and configuration strings: byte counts with
 * an optional K/M/G suffix ("16M", "0x1000") and octal file modes.  One
 * parser for every program that takes them (hvtrace-agent, the guest
 * library's area spec, hvtraced, the hvtrace CLI).
 */
#include <errno.h>
#include <stdlib.h>

#include "hvt_util.h"

/**
 * hvt_util_size_parse() - a byte count: decimal, 0x hex or 0 octal, with
 * an optional K, M or G suffix (binary: 1K = 1024)
 * @s:   the text, whole: nothing may follow the number and its suffix
 * @out: where the value goes (untouched on failure)
 *
 * Return: 0; -EINVAL for an empty, negative or malformed @s; -ERANGE when
 * the value does not fit 64 bits.
 */
int hvt_util_size_parse(const char *s, uint64_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ULL << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ULL << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ULL << 30;
		end++;
		break;
	}
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
}

/**
 * hvt_util_mode_parse() - file permission bits in octal ("0660", "600")
 * @s:    the text, whole
 * @mode: where the mode goes (untouched on failure)
 *
 * Return: 0, or -EINVAL when @s is not an octal number of at most 0777.
 */
int hvt_util_mode_parse(const char *s, unsigned int *mode)
{
	unsigned long m;
	char *end;

	if (!s || *s < '0' || *s > '7')
		return -EINVAL;
	errno = 0;
	m = strtoul(s, &end, 8);
	if (errno || *end || m > 0777)
		return -EINVAL;
	*mode = (unsigned int)m;
	return 0;
}
