// SPDX-License-Identifier: MIT
/*
 * libhvtrace: surviving a trace area file that shrinks under its mapping.
 *
 * Touching a MAP_SHARED page beyond the end of its file raises SIGBUS.  A
 * writer (or anyone with write access to the file) can truncate it at any
 * moment, so the reader checks the file size before each read, and guards
 * the reads themselves: library calls that touch the mapping register a
 * guard (the mapped range and a jump buffer) for the calling thread; a
 * process-wide SIGBUS handler, installed once, jumps back to the guard when
 * the faulting address lies inside the guarded range, and otherwise hands
 * the signal to whatever handler was installed before (or to the default
 * action).  The guarded call then fails with -EIO and marks the CPU gone.
 *
 * Set HVTRACE_NO_SIGBUS_GUARD=1 in the environment to keep libhvtrace from
 * installing the handler (then a truncation between the size check and a
 * copy kills the process, as it would any program that maps the file).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "hvtrace-local.h"

__thread struct hvt_guard *hvt_cur_guard;

static struct sigaction guard_prev;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static bool guard_installed; /* written once, under guard_once */

static void guard_handler(int sig, siginfo_t *si, void *uc)
{
	struct hvt_guard *g = hvt_cur_guard;

	if (g && (const char *)si->si_addr >= (const char *)g->lo &&
	    (const char *)si->si_addr < (const char *)g->hi) {
		hvt_cur_guard = g->prev;
		siglongjmp(g->env, 1);
	}
	/* Not ours: behave as if we had never been installed. */
	if (guard_prev.sa_flags & SA_SIGINFO) {
		guard_prev.sa_sigaction(sig, si, uc);
	} else if (guard_prev.sa_handler == SIG_IGN) {
		return;
	} else if (guard_prev.sa_handler == SIG_DFL) {
		signal(sig, SIG_DFL);
		raise(sig);
	} else {
		guard_prev.sa_handler(sig);
	}
}

static void guard_install(void)
{
	struct sigaction sa;
	const char *off = getenv("HVTRACE_NO_SIGBUS_GUARD");

	if (off && *off && strcmp(off, "0"))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	/* SA_NODEFER: we leave the handler with siglongjmp and a jump buffer
	 * that did not save the signal mask (sigsetjmp(env, 0), no system
	 * call on the fast path), so SIGBUS must not stay blocked. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (!sigaction(SIGBUS, &sa, &guard_prev))
		guard_installed = true;
}

void hvt_guard_init(void)
{
	pthread_once(&guard_once, guard_install);
}

bool hvt_guard_armed(void)
{
	pthread_once(&guard_once, guard_install);
	return guard_installed;
}
