/* SPDX-License-Identifier: MIT */
/*
 * Hosted helpers shared by guest and host programs (libhvtutil, common/):
 * command-line numbers, the UNIX socket chores every daemon and client
 * repeats, a daemon's log lines, and a pool of worker threads.  Linux user
 * space only; every function returns 0 (or a descriptor) on success and
 * -errno on failure, and only the log functions print: the caller words
 * its messages.
 */
#ifndef HVT_UTIL_H
#define HVT_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

int hvt_util_size_parse(const char *s, uint64_t *out);
int hvt_util_mode_parse(const char *s, unsigned int *mode);
int hvt_util_dir_create(const char *dir);
int hvt_util_sock_prepare(const char *path, struct sockaddr_un *sa);
int hvt_util_sock_connect(const char *path);
/*
 * A file found by a name in a shared folder (/dev/shm/hvtrace-NAME, .ram):
 * opened only when it is a regular file of root, the effective user or
 * @owner ((uid_t)-1: none), not world-writable; no symbolic link.  The
 * descriptor, or -errno with @msg saying why (owned.c).
 */
int hvt_util_open_owned(const char *path, int rdwr, uid_t owner, char *msg,
			size_t msgsize);

/*
 * A guest kernel's formats folder (DIR/events/SYSTEM/EVENT/format) as a
 * format set (HVT_KFSET of <hvtrace/proto.h>, malloc()ed), and such a set
 * in a sealed memfd (kfset.c): the one folder reader of an attach by pid,
 * the client's and root's.  HVT_UTIL_KFSET_SKIP skips a format file that
 * cannot be opened or is not regular instead of refusing the folder.
 */
#define HVT_UTIL_KFSET_SKIP 0x1u

int hvt_util_kfset_read(const char *dir, unsigned int flags, uint8_t **set,
			size_t *len, char *msg, size_t msgsize);
int hvt_util_kfset_memfd(const uint8_t *set, size_t len, char *msg,
			 size_t msgsize);

void hvt_util_log_setup(const char *prog, int verbose);
int hvt_util_log_verbose(void);
void hvt_util_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hvt_util_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Worker threads that run passes over jobs (workers.c): job j always runs
 * on thread j % nr, the calling thread being thread 0; a pass returns when
 * every job is done.  @want threads (0: one per job up to the online CPUs
 * and @auto_max), never more than @max_jobs; each thread has a scratch
 * buffer of @scratch bytes.  -ENOMEM, or pthread_create()'s error.
 */
struct hvt_util_workers;

int hvt_util_workers_start(unsigned int want, unsigned int auto_max,
			   unsigned int max_jobs, size_t scratch,
			   struct hvt_util_workers **out);
void hvt_util_workers_pass(struct hvt_util_workers *w, unsigned int nr_jobs,
			   void (*work)(void *ctx, unsigned int job,
					void *scratch),
			   void *ctx);
/* Threads in use, the calling thread included (1 for NULL). */
unsigned int hvt_util_workers_nr(const struct hvt_util_workers *w);
/* Join the threads and free; NULL is a no-op. */
void hvt_util_workers_stop(struct hvt_util_workers *w);

#endif /* HVT_UTIL_H */
