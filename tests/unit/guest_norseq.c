// SPDX-License-Identifier: MIT
/*
 * A kernel without restartable sequences: a re-executed copy of this
 * program runs under a seccomp filter that fails the rseq system call
 * with ENOSYS (as a pre-4.18 kernel would), so neither glibc nor the
 * library can register an rseq area.  Opening an area must then fail
 * cleanly with -ENOSYS and a message that says what is missing, and keep
 * failing the same way (no retry storm, no crash); formatting an area,
 * which needs no rseq, still works.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../stress/guest_harness.h"

#if IS_ENABLED(CONFIG_HVT_GUEST) && \
	(defined(__x86_64__) || defined(__aarch64__))

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#else
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

static int child(void)
{
	struct hvtg_area_fds fds = { 0 };
	struct hvtg_area *a = NULL;
	uint64_t size = hvt_area_size(1, 4, 4096);
	void *m;
	int fd, i;

	fd = memfd_create("hvtg-norseq", MFD_CLOEXEC);
	t_assert(fd >= 0);
	t_ok(ftruncate(fd, (off_t)size));
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	t_assert(m != MAP_FAILED);
	{
		struct hvtg_format f = { 0 };

		f.nr_cpus = 1;
		f.nr_subbufs = 4;
		f.subbuf_size = 4096;
		t_ok(hvtg_area_format(m, size, &f));
	}
	fds.area_fd = fd;
	fds.ctrl_fd = -1;
	for (i = 0; i < 3; i++) {
		int ret = hvtg_area_open_fds(&fds, &a);

		if (ret != -ENOSYS || a)
			t_fail("open without rseq returned %d (%s), expected "
			       "-ENOSYS",
			       ret, hvtg_last_error());
		if (!strstr(hvtg_last_error(), "rseq"))
			t_fail("message does not name rseq: %s",
			       hvtg_last_error());
	}
	printf("refused: %s\n", hvtg_last_error());
	return 0;
}

int main(int argc, char **argv)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rseq, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };
	int status;
	pid_t pid;

	if (getenv("HVTG_NORSEQ_CHILD"))
		return child();
	pid = fork();
	t_assert(pid >= 0);
	if (pid == 0) {
		char *cargv[] = { argv[0], NULL };
		char *envp[] = { "HVTG_NORSEQ_CHILD=1", NULL };

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(77);
		execve("/proc/self/exe", cargv, envp);
		_exit(127);
	}
	t_assert(waitpid(pid, &status, 0) == pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		t_skip("cannot install a seccomp filter to hide rseq");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		t_fail("the child without rseq failed (status %#x)", status);
	printf("PASS\n");
	return 0;
}

#else
int main(void)
{
	t_skip("needs the guest library on x86_64 or aarch64");
}
#endif
