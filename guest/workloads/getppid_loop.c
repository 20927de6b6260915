// SPDX-License-Identifier: MIT
/*
 * getppid_loop - make an exact number of getppid() system calls, for tests
 * that count a guest kernel's syscall events (syscalls:sys_enter_getppid).
 *
 *   getppid_loop COUNT
 *
 * Calls the system call directly (syscall(2)), so no C library can answer
 * from a cache, then prints "getppid_loop: pid PID made COUNT calls" so a
 * test can pick this process's events out of the guest's trace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long i, count;
	char *end;

	if (argc != 2 || (count = strtoul(argv[1], &end, 10), *end)) {
		fprintf(stderr, "usage: getppid_loop COUNT\n");
		return 2;
	}
	for (i = 0; i < count; i++)
		syscall(SYS_getppid);
	printf("getppid_loop: pid %d made %lu calls\n", (int)getpid(), count);
	return 0;
}
