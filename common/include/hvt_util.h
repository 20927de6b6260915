/* SPDX-License-Identifier: MIT */
/*
 * Hosted helpers shared by guest and host programs (libhvtutil, common/):
 * command-line numbers and the UNIX socket chores every daemon and client
 * repeats.  Linux user space only; every function returns 0 (or a
 * descriptor) on success and -errno on failure, and prints nothing: the
 * caller words the message for its own user.
 */
#ifndef HVT_UTIL_H
#define HVT_UTIL_H

#include <stdint.h>
#include <sys/un.h>

int hvt_util_size_parse(const char *s, uint64_t *out);
int hvt_util_mode_parse(const char *s, unsigned int *mode);
int hvt_util_dir_create(const char *dir);
int hvt_util_sock_prepare(const char *path, struct sockaddr_un *sa);
int hvt_util_sock_connect(const char *path);

#endif /* HVT_UTIL_H */
