// SPDX-License-Identifier: MIT
/*
 * libhvtrace: the checks every event format passes before it reaches
 * libtraceevent's parser in a reader (decode.h).
 *
 * libtraceevent's parser trusts its input, and a guest's format text is
 * hostile: a byte that is not text (in an array size, for one) or a
 * damaged print fmt crashes it.  So a format is first checked for bytes
 * (what every kernel writes is ASCII: tabs, newlines and printable
 * characters), then parsed once in a forked child, as the trace.dat
 * reader does with a file's texts (host/tracedat/read_sandbox.c): a text
 * that kills the child, or keeps it past FMT_SANDBOX_S, is refused
 * before it reaches the reader's own handle.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event-parse.h>

#include "decode.h"

#define FMT_SANDBOX_S 10

long hvt_dec_format_bad_byte(const char *format, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char b = (unsigned char)format[i];

		if (b != '\t' && b != '\n' && (b < 0x20 || b > 0x7e))
			return (long)i;
	}
	return -1;
}

int hvt_dec_format_sandbox(const char *format, size_t len, const char *system)
{
	int status;
	pid_t pid, w;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE,
					     SIGABRT, SIGALRM };
		const struct rlimit no_core = { 0, 0 };
		struct tep_handle *tep;
		unsigned int i;

		/* A crash ends the child quietly (no handler of the
		 * caller's, no core); a parse that hangs ends at the
		 * alarm. */
		for (i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
			signal(fatal[i], SIG_DFL);
		setrlimit(RLIMIT_CORE, &no_core);
		alarm(FMT_SANDBOX_S);
		tep = tep_alloc();
		if (tep) {
			tep_set_long_size(tep, 8);
			tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
			tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
			tep_parse_event(tep, format, len, system);
		}
		_exit(0);
	}
	do {
		w = waitpid(pid, &status, 0);
	} while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EINVAL;
}
