/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the libFuzzer targets (tests/fuzz): a check that aborts with
 * the failed condition (a finding), and the input written to a memfd that
 * the target opens by path, exactly as a writer's file would be.
 */
#ifndef HVT_FUZZ_H
#define HVT_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define fuzz_assert(cond)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "assertion failed: %s (line %d)\n",   \
				#cond, __LINE__);                             \
			abort();                                              \
		}                                                             \
	} while (0)

/*
 * The path of a memfd (created once per target, named @name) that now
 * holds exactly @data; also its descriptor in *@fdp when not NULL.
 */
static inline const char *fuzz_memfd(const char *name, const uint8_t *data,
				     size_t size, int *fdp)
{
	static char path[64];
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create(name, MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || ftruncate(fd, (off_t)size) ||
	    (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	if (fdp)
		*fdp = fd;
	return path;
}

#endif /* HVT_FUZZ_H */
