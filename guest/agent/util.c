// SPDX-License-Identifier: MIT
/*
 * hvtrace-agent: output queues, time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

uint64_t agent_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int outq_push(struct outq *q, const struct hvt_msg *m, const int *fds,
	      int nr_fds)
{
	struct out_chunk *c;
	int n = hvt_msg_encoded_size(m), i;

	if (n < 0)
		return n;
	c = malloc(sizeof(*c) + (size_t)n);
	if (!c)
		return -ENOMEM;
	n = hvt_msg_encode(c->data, (uint32_t)n, m);
	if (n < 0) {
		free(c);
		return n;
	}
	c->next = NULL;
	c->len = (uint32_t)n;
	c->off = 0;
	c->nr_fds = 0;
	for (i = 0; i < nr_fds && i < 2; i++) {
		c->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (c->fds[i] < 0) {
			while (--i >= 0)
				close(c->fds[i]);
			free(c);
			return -errno;
		}
		c->nr_fds++;
	}
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->bytes += (size_t)n;
	return 0;
}

static void chunk_free(struct out_chunk *c)
{
	while (c->nr_fds > 0)
		close(c->fds[--c->nr_fds]);
	free(c);
}

void outq_clear(struct outq *q)
{
	struct out_chunk *c, *n;

	for (c = q->head; c; c = n) {
		n = c->next;
		chunk_free(c);
	}
	q->head = q->tail = NULL;
	q->bytes = 0;
}

int outq_flush(struct outq *q, int fd, bool is_socket)
{
	/* Bounded by the queue: every round sends bytes or stops. */
	while (q->head) {
		struct out_chunk *c = q->head;
		ssize_t w;

		if (is_socket) {
			union {
				struct cmsghdr h;
				char buf[CMSG_SPACE(2 * sizeof(int))];
			} cm;
			struct iovec iov = { c->data + c->off,
					     c->len - c->off };
			struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

			if (c->nr_fds && c->off == 0) {
				struct cmsghdr *ch;

				memset(&cm, 0, sizeof(cm));
				mh.msg_control = cm.buf;
				mh.msg_controllen =
					CMSG_SPACE(c->nr_fds * sizeof(int));
				ch = CMSG_FIRSTHDR(&mh);
				ch->cmsg_level = SOL_SOCKET;
				ch->cmsg_type = SCM_RIGHTS;
				ch->cmsg_len =
					CMSG_LEN(c->nr_fds * sizeof(int));
				memcpy(CMSG_DATA(ch), c->fds,
				       c->nr_fds * sizeof(int));
			}
			w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		} else {
			w = write(fd, c->data + c->off, c->len - c->off);
		}
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		if (w == 0)
			return 0;
		if (c->off == 0)
			while (c->nr_fds > 0)
				close(c->fds[--c->nr_fds]);
		c->off += (uint32_t)w;
		q->bytes -= (size_t)w;
		if (c->off == c->len) {
			q->head = c->next;
			if (!q->head)
				q->tail = NULL;
			chunk_free(c);
		}
	}
	return 0;
}
