/* SPDX-License-Identifier: MIT */
/*
 * Error numbers used by the freestanding code.  They equal Linux's errno
 * values, so hosted callers can compare them with <errno.h> names and
 * pass -ret to strerror().
 */
#ifndef HVTRACE_ERRNO_H
#define HVTRACE_ERRNO_H

#define HVT_ENOENT	2
#define HVT_E2BIG	7
#define HVT_EAGAIN	11
#define HVT_EFAULT	14
#define HVT_EBUSY	16
#define HVT_EINVAL	22
#define HVT_ENOSPC	28
#define HVT_ERANGE	34
#define HVT_ENODATA	61
#define HVT_EPROTO	71
#define HVT_EBADMSG	74
#define HVT_EOVERFLOW	75
#define HVT_EMSGSIZE	90
#define HVT_EPROTONOSUPPORT 93
#define HVT_EOPNOTSUPP	95

#endif /* HVTRACE_ERRNO_H */
