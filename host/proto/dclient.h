/* SPDX-License-Identifier: MIT */
/*
 * A client of hvtraced's socket, for the hvtrace CLI, the tests and other
 * host tools.  Internal to libhvtrace (hidden visibility); errors set
 * hvtrace_last_error() to a sentence that says what to do.
 *
 * Messages are those of <hvtrace/proto.h>: the client fills a struct
 * hvt_msg, hvt_dclient_call() sends it and returns the reply with the same
 * request id; anything else that arrives meanwhile (PAGE messages of a
 * subscription, notices) goes to an optional callback.  Decoded views stay
 * valid until the next receive on the same client.
 */
#ifndef HVT_DCLIENT_H
#define HVT_DCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <hvtrace/proto.h>

#define HVT_DCLIENT_DEFAULT_SOCKET	"/run/hvtrace/hvtraced.sock"
#define HVT_DCLIENT_TIMEOUT_MS		10000

struct hvt_dclient;

typedef void (*hvt_dclient_cb)(void *arg, const struct hvt_msg *m);

/** hvt_dclient_default_socket - $HVTRACED_SOCKET, else the default path */
const char *hvt_dclient_default_socket(void);

/**
 * hvt_dclient_open - connect to hvtraced and say HELLO
 * @path: socket path, NULL for hvt_dclient_default_socket()
 *
 * Return: 0; -ENOENT/-ECONNREFUSED when no daemon listens (the message
 * says how to start one), -EACCES, -EPROTO.
 */
int hvt_dclient_open(const char *path, struct hvt_dclient **out);

void hvt_dclient_close(struct hvt_dclient *c);
int hvt_dclient_fd(const struct hvt_dclient *c);

/** hvt_dclient_send - send @m; assigns m->req when it is 0 */
int hvt_dclient_send(struct hvt_dclient *c, struct hvt_msg *m);

/**
 * hvt_dclient_recv - the next message
 * Return: 1 with a message, 0 on timeout, negative errno.
 */
int hvt_dclient_recv(struct hvt_dclient *c, struct hvt_msg *m,
		     int timeout_ms);

/**
 * hvt_dclient_call - send @req and wait for its reply
 * @other: gets every other message meanwhile (may be NULL)
 *
 * Return: 0 with @reply filled (type is the request's or HVT_MSG_ERROR),
 * -ETIMEDOUT, -ECONNRESET.
 */
int hvt_dclient_call(struct hvt_dclient *c, struct hvt_msg *req,
		     struct hvt_msg *reply, int timeout_ms,
		     hvt_dclient_cb other, void *arg);

/**
 * hvt_dclient_remote - find a remote by name
 * @name: NULL picks the only remote (an error if there are several)
 *
 * Return: 0 with @rec filled, -ENOENT or -EINVAL with a message listing
 * the remotes that exist.
 */
int hvt_dclient_remote(struct hvt_dclient *c, const char *name,
		       struct hvt_remote_rec *rec);

/**
 * hvt_dclient_text - fetch a TEXT (all its parts) of a remote
 * @kind: enum hvt_text_kind
 * @out:  malloc'd, NUL-terminated
 */
int hvt_dclient_text(struct hvt_dclient *c, uint32_t remote, uint32_t kind,
		     char **out, size_t *len);

/**
 * hvt_dclient_result - a request answered by a RESULT (DEFINE, DELETE,
 * ENABLE, TRACING, ATTACH, DETACH, SUBSCRIBE, UNSUBSCRIBE...)
 * @req:  the request (m->req assigned here)
 * @res:  the result (may be NULL); its text is copied to @text
 *
 * Return: the result's status (0 or -errno), or a transport error; the
 * daemon's text, if any, is also set as hvtrace_last_error().
 */
int hvt_dclient_result(struct hvt_dclient *c, struct hvt_msg *req,
		       struct hvt_m_result *res, char *text, size_t textsize);

#endif /* HVT_DCLIENT_H */
