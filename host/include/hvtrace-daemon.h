/* SPDX-License-Identifier: MIT */
/*
 * libhvtrace-daemon - a client of hvtraced, the host daemon, over its
 * socket: for the hvtrace CLI, the tests and other host tools.  Same
 * conventions as libhvtrace (<hvtrace.h>): negative errno returns,
 * hvtrace_last_error() says what to do.
 *
 * Messages are those of <hvtrace/proto.h>: the client fills a struct
 * hvt_msg, hvtrace_daemon_call() sends it and returns the reply with the
 * same request id; anything else that arrives meanwhile (PAGE messages of
 * a subscription, notices) goes to an optional callback.  Decoded views
 * stay valid until the next receive on the same connection.
 */
#ifndef HVTRACE_DAEMON_H
#define HVTRACE_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include <hvtrace.h>
#include <hvtrace/proto.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- connections and requests (dclient.c) -------------------------------- */

#define HVTRACE_DAEMON_DEFAULT_SOCKET "/run/hvtrace/hvtraced.sock"
#define HVTRACE_DAEMON_TIMEOUT_MS     10000

struct hvtrace_daemon;

typedef void (*hvtrace_daemon_cb)(void *arg, const struct hvt_msg *m);

/** hvtrace_daemon_default_socket - $HVTRACED_SOCKET, else the default path */
HVTRACE_API const char *hvtrace_daemon_default_socket(void);

/**
 * hvtrace_daemon_open - connect to hvtraced and say HELLO
 * @path: socket path, NULL for hvtrace_daemon_default_socket()
 *
 * Return: 0; -ENOENT/-ECONNREFUSED when no daemon listens (the message
 * says how to start one), -EACCES, -EPROTO.
 */
HVTRACE_API int hvtrace_daemon_open(const char *path,
				    struct hvtrace_daemon **out);

HVTRACE_API void hvtrace_daemon_close(struct hvtrace_daemon *c);
HVTRACE_API int hvtrace_daemon_fd(const struct hvtrace_daemon *c);

/** hvtrace_daemon_send - send @m; assigns m->req when it is 0 */
HVTRACE_API int hvtrace_daemon_send(struct hvtrace_daemon *c,
				    struct hvt_msg *m);

/**
 * hvtrace_daemon_recv - the next message
 * Return: 1 with a message, 0 on timeout, negative errno.
 */
HVTRACE_API int hvtrace_daemon_recv(struct hvtrace_daemon *c, struct hvt_msg *m,
				    int timeout_ms);

/**
 * hvtrace_daemon_call - send @req and wait for its reply
 * @other: gets every other message meanwhile (may be NULL)
 *
 * Return: 0 with @reply filled (type is the request's or HVT_MSG_ERROR),
 * -ETIMEDOUT, -ECONNRESET.
 */
HVTRACE_API int hvtrace_daemon_call(struct hvtrace_daemon *c,
				    struct hvt_msg *req, struct hvt_msg *reply,
				    int timeout_ms, hvtrace_daemon_cb other,
				    void *arg);

/**
 * hvtrace_daemon_find_remote - find a remote by name
 * @name: NULL picks the only remote (an error if there are several)
 *
 * Return: 0 with @rec filled, -ENOENT or -EINVAL with a message listing
 * the remotes that exist.
 */
HVTRACE_API int hvtrace_daemon_find_remote(struct hvtrace_daemon *c,
					   const char *name,
					   struct hvt_remote_rec *rec);

/**
 * hvtrace_daemon_get_text - fetch a TEXT (all its parts) of a remote
 * @kind: enum hvt_text_kind
 * @out:  malloc'd, NUL-terminated
 */
HVTRACE_API int hvtrace_daemon_get_text(struct hvtrace_daemon *c,
					uint32_t remote, uint32_t kind,
					char **out, size_t *len);

/**
 * hvtrace_daemon_call_result - a request answered by a RESULT (DEFINE, DELETE,
 * ENABLE, TRACING, ATTACH, DETACH, SUBSCRIBE, UNSUBSCRIBE...)
 * @req:  the request (m->req assigned here)
 * @res:  the result (may be NULL); its text is copied to @text
 *
 * Return: the result's status (0 or -errno), or a transport error; the
 * daemon's text, if any, is also set as hvtrace_last_error().
 */
HVTRACE_API int hvtrace_daemon_call_result(struct hvtrace_daemon *c,
					   struct hvt_msg *req,
					   struct hvt_m_result *res, char *text,
					   size_t textsize);

/*
 * --- end of the connections part (dclient.c) ------------------------------
 * Further parts of the client (page feeds) follow in sections of their own.
 */

#ifdef __cplusplus
}
#endif

#endif /* HVTRACE_DAEMON_H */
