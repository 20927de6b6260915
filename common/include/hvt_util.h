/* SPDX-License-Identifier: MIT */
/*
 * Hosted helpers shared by guest and host programs (libhvtutil, common/):
 * command-line numbers, the UNIX socket chores every daemon and client
 * repeats, and a daemon's log lines.  Linux user space only; every
 * function returns 0 (or a descriptor) on success and -errno on failure,
 * and only the log functions print: the caller words its messages.
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

void hvt_util_log_setup(const char *prog, int verbose);
int hvt_util_log_verbose(void);
void hvt_util_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hvt_util_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* HVT_UTIL_H */
