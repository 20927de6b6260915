/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-client - register user events through the hvtrace agent.
 *
 * An application connects to the agent's UNIX socket, receives the trace
 * area from it (two descriptors: the rings read-write, the control page
 * read-only), and registers user_events definitions.  The agent forwards
 * each definition to the host, which owns event ids, formats and enable
 * state; the reply binds a libhvtrace-guest event handle to the event's
 * id and enable bit, so the fast path stays hvtg_enabled() (one load and a
 * mask) and hvtg_write() (straight into the ring, no system call):
 *
 *	static struct hvtg_event ev = HVTG_EVENT_INIT;
 *	struct hvtc *c;
 *
 *	hvtc_open(NULL, &c);
 *	hvtc_register(c, "myapp_req u32 id; __rel_loc char[] path", &ev);
 *	...
 *	if (hvtg_enabled(&ev))
 *		hvtg_write(&ev, rec, len);
 *
 * Registrations belong to the connection: when the process exits or
 * closes it, the agent tells the host, which drops them (events stay
 * defined while the host or a persistent definition still uses them).
 *
 * Functions return 0 or a negative errno; hvtc_last_error() then holds the
 * reason -- for a refused definition, the host's text naming the field.
 * A handle may be used from several threads (calls are serialised).
 */
#ifndef HVTRACE_CLIENT_H
#define HVTRACE_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "hvtrace-guest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the agent listens unless $HVTRACE_AGENT_SOCKET says otherwise. */
#define HVTC_DEFAULT_SOCKET	"/run/hvtrace/agent.sock"
/* How long a call waits for the agent (and the host behind it). */
#define HVTC_DEFAULT_TIMEOUT_MS	15000

struct hvtc;

/** hvtc_last_error - what the calling thread's last failed call hit */
const char *hvtc_last_error(void);

/**
 * hvtc_open - connect to the agent and map the trace area it hands over
 * @socket_path: NULL for $HVTRACE_AGENT_SOCKET, else HVTC_DEFAULT_SOCKET
 * @out:         the new handle
 *
 * Return: 0; -ENOENT/-ECONNREFUSED (no agent: the message says how to
 * start one), -EACCES (socket permissions: join the agent's group),
 * -EPROTO (not an agent, or an incompatible one), -ETIMEDOUT, or an
 * error from hvtg_area_open_fds().
 */
int hvtc_open(const char *socket_path, struct hvtc **out);

/**
 * hvtc_close - disconnect; the host drops this connection's registrations
 *
 * Unbinds every handle registered through @c and unmaps the area.  NULL
 * is a no-op.
 */
void hvtc_close(struct hvtc *c);

/** hvtc_area - the area the agent handed over (owned by @c) */
struct hvtg_area *hvtc_area(struct hvtc *c);

/** hvtc_set_timeout - how long calls wait for a reply (default above) */
void hvtc_set_timeout(struct hvtc *c, int timeout_ms);

/**
 * hvtc_register - register a user_events definition and bind a handle
 * @c:          connection
 * @definition: "name type field; type field" (no "u:" prefix), at most
 *              511 bytes, as for the kernel's DIAG_IOCSREG
 * @ev:         handle to bind (HVTG_EVENT_INIT or unbound)
 *
 * The same definition registered twice shares one event.
 *
 * Return: 0 with @ev bound; -EINVAL (bad definition: the message names
 * the field), -EADDRINUSE (the name is in use with other fields), -E2BIG,
 * -EMFILE/-ENOSPC (the host is out of events), -EHOSTDOWN (no host
 * attached to the agent in time), -ETIMEDOUT, -ECONNRESET.
 */
int hvtc_register(struct hvtc *c, const char *definition,
		  struct hvtg_event *ev);

/**
 * hvtc_unregister - drop a registration made through @c and unbind @ev
 *
 * Return: 0, -ENOENT (not registered through @c), or a transport error.
 */
int hvtc_unregister(struct hvtc *c, struct hvtg_event *ev);

/**
 * hvtc_delete - delete an event by name (the kernel's DIAG_IOCSDEL)
 *
 * Return: 0, -ENOENT, -EBUSY (still registered or enabled somewhere).
 */
int hvtc_delete(struct hvtc *c, const char *name);

/** hvtc_event_id - the id (common_type) a handle is bound to, or -ENOENT */
int hvtc_event_id(struct hvtc *c, const struct hvtg_event *ev);

/**
 * hvtc_name_thread - tell the host the calling thread's comm
 *
 * hvtg_write() records the thread id as common_pid; the host shows its
 * name only if it knows it.  The agent names the process itself; call
 * this from other threads that write events.
 */
int hvtc_name_thread(struct hvtc *c);

/** hvtc_fd - descriptor to poll() for notices from the agent */
int hvtc_fd(struct hvtc *c);

/**
 * hvtc_process - handle pending notices without blocking
 * @fn:  called for each enable change of an event registered through @c
 *       (may be NULL)
 *
 * Return: the number of notices handled, or a negative errno when the
 * agent went away (-ECONNRESET).
 */
int hvtc_process(struct hvtc *c,
		 void (*fn)(void *arg, uint32_t id, bool enabled), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_CLIENT_H */
