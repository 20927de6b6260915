// SPDX-License-Identifier: MIT
/*
 * libhvtrace: areas the view opens itself (hvtrace mount --area
 * NAME=PATH[@OFFSET[+SIZE]]), for use without hvtraced.
 *
 * The view is then the area's owner (HVTRACE_OPEN_CONTROL), exactly as
 * hvtraced would be: its events (the writer kind's static table) are
 * enabled when it attaches, consumer progress is published, time is
 * sampled through the control page (or read directly for a loopback
 * writer on this host).  One thread polls every area -- every millisecond
 * while pages come, backing off to 50 ms when idle -- and notices a
 * writer that stopped, re-formatted the area (re-attached) or vanished
 * (the file shrank: dropped and retried every second).  Each area handle
 * is used under its own lock.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvtrace/config.h>

#include <hvtrace/proto.h>

#include "fuse-local.h"

#define FZA_PAGES	 64 /* per CPU per round */
#define FZA_POLL_MAX_US	 50000
#define FZA_STATE_NS	 200000000ULL
#define FZA_RETRY_NS	 1000000000ULL
#define FZA_SYNC_NS	 1000000000ULL
#define FZA_SYNC_WAIT_MS 5

struct fz_aremote {
	struct fz_aremote *next;
	struct fz_areas *A;
	struct fz_remote *r; /* holds a reference */
	char spec[4096];
	pthread_mutex_t lock; /* the area handle */
	struct hvtrace_area *area;
	struct hvtrace_area_info info;
	struct hvtrace_catalog cat;
	bool *on; /* our record of the enables */
	uint8_t *page;
	uint64_t next_open, next_state, next_sync;
	unsigned int sync_misses;
	char last_err[256];
};

struct fz_areas {
	struct fz_view *v;
	pthread_t thr;
	bool thr_started;
	volatile int stop;
	struct fz_aremote *all;
};

/* The event table from the catalog and our enable record (view lock). */
static void fza_publish_events(struct fz_aremote *x)
{
	struct fz_event *ev;
	unsigned int i, n = 0;

	ev = calloc(x->cat.nr + 1, sizeof(*ev));
	if (!ev)
		return;
	for (i = 0; i < x->cat.nr; i++) {
		if (x->cat.bit[i] < 0)
			continue;
		snprintf(ev[n].system, sizeof(ev[n].system), "%s",
			 x->cat.fmt[i].system);
		snprintf(ev[n].name, sizeof(ev[n].name), "%s",
			 x->cat.fmt[i].name);
		ev[n].id = x->cat.fmt[i].id;
		ev[n].bit = x->cat.bit[i];
		ev[n].enabled = x->on[i];
		ev[n].format = strdup(x->cat.fmt[i].text);
		n++;
	}
	fz_remote_set_events(x->r, ev, n, NULL, NULL);
	if (!x->r->header_page) {
		char buf[1024];

		if (hvtrace_header_page_text(x->info.subbuf_size, buf,
					     sizeof(buf)) > 0)
			x->r->header_page = strdup(buf);
		if (hvtrace_header_event_text(buf, sizeof(buf)) > 0)
			x->r->header_event = strdup(buf);
	}
}

/* (Re)attach (x->lock held). */
static int fza_open(struct fz_aremote *x)
{
	struct hvtrace_area *a;
	struct hvtrace_area_info info;
	struct fz_view *v = x->A->v;
	uint8_t *page;
	bool *on;
	unsigned int i;
	int ret;

	ret = hvtrace_area_open_spec(x->spec, HVTRACE_OPEN_CONTROL, &a);
	if (ret) {
		if (strcmp(x->last_err, hvtrace_last_error())) {
			snprintf(x->last_err, sizeof(x->last_err), "%s",
				 hvtrace_last_error());
			fprintf(stderr,
				"hvtrace mount: '%s': %s (retrying "
				"every second)\n",
				x->r->name, x->last_err);
		}
		return ret;
	}
	x->last_err[0] = '\0';
	hvtrace_area_get_info(a, &info);
	page = realloc(x->page, info.subbuf_size);
	if (!page) {
		hvtrace_area_close(a);
		return -ENOMEM;
	}
	x->page = page;
	if (!x->area || info.writer_kind != x->info.writer_kind) {
		hvtrace_catalog_free(&x->cat);
		ret = hvtrace_catalog_add_writer(&x->cat, info.writer_kind);
		on = calloc(x->cat.nr + 1, sizeof(*on));
		if (ret || !on) {
			free(on);
			hvtrace_area_close(a);
			return -ENOMEM;
		}
		/* Everything the writer has is enabled, as hvtraced does. */
		for (i = 0; i < x->cat.nr; i++)
			on[i] = x->cat.bit[i] >= 0;
		free(x->on);
		x->on = on;
	}
	hvtrace_area_close(x->area);
	x->area = a;
	x->info = info;
	for (i = 0; i < x->cat.nr; i++)
		if (x->cat.bit[i] >= 0)
			hvtrace_area_set_event(a, (unsigned int)x->cat.bit[i],
					       x->on[i]);
	pthread_mutex_lock(&v->lock);
	hvtrace_area_set_tracing(a, x->r->tracing_on);
	x->r->writer_pid = info.writer_pid;
	fz_remote_set_geometry(x->r, info.nr_cpus, info.nr_subbufs,
			       info.subbuf_size, info.writer_kind, info.mode,
			       info.clock_id, info.generation);
	fza_publish_events(x);
	x->r->stopped = false;
	pthread_mutex_unlock(&v->lock);
	x->next_sync = 0;
	x->sync_misses = 0;
	return 0;
}

/* Read what the area has now into the view (x->lock held). */
static int fza_read(struct fz_aremote *x, bool all)
{
	struct fz_view *v = x->A->v;
	uint32_t cpu;
	int pages = 0;

	if (!x->area)
		return 0;
	for (cpu = 0; cpu < x->info.nr_cpus; cpu++) {
		uint32_t k, max = all ? x->info.nr_subbufs + 2 : FZA_PAGES;

		for (k = 0; k < max; k++) {
			struct hvtrace_page_info info;
			struct fz_chunk *c;
			uint32_t e;
			int ret, err;

			ret = hvtrace_cpu_read_page(x->area, (int)cpu, x->page,
						    x->info.subbuf_size, &info);
			if (ret < 0)
				return ret;
			if (!ret)
				break;
			pages++;
			c = fz_chunk_from_page(x->page, x->info.subbuf_size, 0,
					       NULL, &err);
			if (!c)
				continue;
			for (e = 0; e < c->n; e++)
				c->ev[e].host = hvtrace_area_to_host_ns(
					x->area, c->ev[e].ts, NULL);
			pthread_mutex_lock(&v->lock);
			fz_ingest(x->r, cpu, c);
			pthread_mutex_unlock(&v->lock);
		}
	}
	return pages;
}

static bool fza_writer_alive(const struct fz_aremote *x)
{
	if (x->info.writer_kind != HVT_WRITER_LOOPBACK || !x->info.writer_pid)
		return true;
	return !(kill((pid_t)x->info.writer_pid, 0) && errno == ESRCH);
}

/* Writer state, re-formats, time sync (x->lock held). */
static void fza_housekeeping(struct fz_aremote *x, uint64_t now)
{
	struct fz_view *v = x->A->v;
	uint32_t state = 0;
	uint64_t gen = 0;
	int ret;

	if (now >= x->next_state) {
		x->next_state = now + FZA_STATE_NS;
		ret = hvtrace_area_writer_state(x->area, &state, &gen);
		if (ret < 0) {
			fprintf(stderr, "hvtrace mount: '%s': %s; retrying\n",
				x->r->name, hvtrace_last_error());
			hvtrace_area_close(x->area);
			x->area = NULL;
			x->next_open = now + FZA_RETRY_NS;
			pthread_mutex_lock(&v->lock);
			x->r->stopped = true;
			if (v->wake)
				v->wake(v, x->r);
			pthread_mutex_unlock(&v->lock);
			return;
		}
		if (ret == 1) {
			/* A new run: what is left of the old one first. */
			fza_read(x, true);
			if (fza_open(x))
				x->next_open = now + FZA_RETRY_NS;
			return;
		}
		if (state == HVT_STATE_STOPPED || !fza_writer_alive(x)) {
			bool was;

			/* Everything it committed, before readers are told
			 * the writer stopped. */
			fza_read(x, true);
			pthread_mutex_lock(&v->lock);
			was = x->r->stopped;
			x->r->stopped = true;
			if (!was && v->wake)
				v->wake(v, x->r);
			pthread_mutex_unlock(&v->lock);
		} else {
			pthread_mutex_lock(&v->lock);
			x->r->stopped = false;
			pthread_mutex_unlock(&v->lock);
		}
	}
	if (now >= x->next_sync) {
		bool ok = false;

		if (x->info.writer_kind == HVT_WRITER_LOOPBACK &&
		    x->info.writer_pid && fza_writer_alive(x))
			ok = !hvtrace_area_sync_local(x->area);
		if (!ok && state != HVT_STATE_STOPPED)
			ok = !hvtrace_area_sync(x->area, FZA_SYNC_WAIT_MS);
		x->sync_misses = ok		      ? 0
				 : x->sync_misses < 6 ? x->sync_misses + 1
						      : 6;
		x->next_sync = now + (FZA_SYNC_NS << x->sync_misses);
	}
}

static void *fza_thread(void *arg)
{
	struct fz_areas *A = arg;
	uint64_t poll_us = CONFIG_HVT_HOST_POLL_US;

	while (!A->stop) {
		struct fz_aremote *x;
		struct timespec ts;
		uint64_t now = hvt_host_now_ns();
		int got = 0;

		for (x = A->all; x; x = x->next) {
			int n;

			pthread_mutex_lock(&x->lock);
			if (!x->area && now >= x->next_open && fza_open(x))
				x->next_open = now + FZA_RETRY_NS;
			if (x->area) {
				n = fza_read(x, false);
				if (n > 0)
					got += n;
				fza_housekeeping(x, now);
			}
			pthread_mutex_unlock(&x->lock);
		}
		poll_us = got ? CONFIG_HVT_HOST_POLL_US
			  : poll_us * 2 > FZA_POLL_MAX_US ? FZA_POLL_MAX_US
							  : poll_us * 2;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)poll_us * 1000;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* --- operations for the file system ------------------------------------ */

static int fza_enable(struct fz_remote *r, const struct fz_event *e,
		      const char *system, bool on, char *msg, size_t msgsize)
{
	struct fz_aremote *x = r->priv;
	char want_sys[64] = "", want_name[256] = "";
	unsigned int i, hits = 0;
	int ret = 0;

	/* Copy what to match while the view is locked. */
	pthread_mutex_lock(&r->v->lock);
	if (e) {
		snprintf(want_sys, sizeof(want_sys), "%s", e->system);
		snprintf(want_name, sizeof(want_name), "%s", e->name);
	} else if (system) {
		snprintf(want_sys, sizeof(want_sys), "%s", system);
	}
	pthread_mutex_unlock(&r->v->lock);
	pthread_mutex_lock(&x->lock);
	for (i = 0; i < x->cat.nr; i++) {
		if (x->cat.bit[i] < 0 ||
		    (want_sys[0] && strcmp(x->cat.fmt[i].system, want_sys)) ||
		    (want_name[0] && strcmp(x->cat.fmt[i].name, want_name)))
			continue;
		x->on[i] = on;
		hits++;
		if (x->area)
			ret = hvtrace_area_set_event(
				x->area, (unsigned int)x->cat.bit[i], on);
		if (ret)
			break;
	}
	pthread_mutex_lock(&r->v->lock);
	fza_publish_events(x);
	pthread_mutex_unlock(&r->v->lock);
	pthread_mutex_unlock(&x->lock);
	if (ret)
		snprintf(msg, msgsize, "%s", hvtrace_last_error());
	else if (!hits)
		ret = -ENOENT;
	return ret;
}

static int fza_tracing(struct fz_remote *r, bool on, char *msg, size_t msgsize)
{
	struct fz_aremote *x = r->priv;
	int ret = 0;

	pthread_mutex_lock(&x->lock);
	if (x->area)
		ret = hvtrace_area_set_tracing(x->area, on);
	pthread_mutex_unlock(&x->lock);
	if (ret) {
		snprintf(msg, msgsize, "%s", hvtrace_last_error());
		return ret;
	}
	pthread_mutex_lock(&r->v->lock);
	r->tracing_on = on;
	pthread_mutex_unlock(&r->v->lock);
	return 0;
}

static int fza_drain(struct fz_remote *r)
{
	struct fz_aremote *x = r->priv;
	int ret;

	pthread_mutex_lock(&x->lock);
	ret = fza_read(x, true);
	pthread_mutex_unlock(&x->lock);
	return ret < 0 ? ret : 0;
}

static int fza_dyn(struct fz_remote *r, const char *line, char *msg,
		   size_t msgsize)
{
	snprintf(msg, msgsize,
		 "'%s' is an area without an agent: it has no "
		 "user events",
		 r->name);
	return -EOPNOTSUPP;
}

static int fza_text(struct fz_remote *r, uint32_t kind, char **out)
{
	if (kind != HVT_TEXT_CMDLINES)
		return -EOPNOTSUPP;
	*out = strdup("");
	return *out ? 0 : -ENOMEM;
}

static int fza_refresh(struct fz_remote *r)
{
	struct fz_aremote *x = r->priv;

	pthread_mutex_lock(&x->lock);
	pthread_mutex_lock(&r->v->lock);
	if (x->cat.nr)
		fza_publish_events(x);
	pthread_mutex_unlock(&r->v->lock);
	pthread_mutex_unlock(&x->lock);
	return 0;
}

static const struct fz_src_ops fza_ops = {
	.enable = fza_enable,
	.tracing = fza_tracing,
	.drain = fza_drain,
	.dyn = fza_dyn,
	.text = fza_text,
	.refresh = fza_refresh,
};

int fz_areas_start(struct fz_view *v, char *const *specs, unsigned int n,
		   struct fz_areas **out)
{
	struct fz_areas *A = calloc(1, sizeof(*A));
	unsigned int i;
	int ret;

	if (!A)
		return hvt_err(-ENOMEM, "out of memory");
	A->v = v;
	for (i = 0; i < n; i++) {
		const char *eq = strchr(specs[i], '=');
		char name[32];
		struct fz_aremote *x;

		if (!eq || eq == specs[i] || !eq[1] ||
		    (size_t)(eq - specs[i]) >= sizeof(name)) {
			fz_areas_stop(A);
			return hvt_err(-EINVAL,
				       "--area takes NAME=PATH[@OFFSET"
				       "[+SIZE]], not '%s'",
				       specs[i]);
		}
		memcpy(name, specs[i], (size_t)(eq - specs[i]));
		name[eq - specs[i]] = '\0';
		if (!hvt_proto_name_ok(name, (uint32_t)strlen(name))) {
			fz_areas_stop(A);
			return hvt_err(-EINVAL,
				       "'%s' is not a remote name: use "
				       "1..31 of [A-Za-z0-9._-]",
				       name);
		}
		x = calloc(1, sizeof(*x));
		if (!x) {
			fz_areas_stop(A);
			return hvt_err(-ENOMEM, "out of memory");
		}
		x->A = A;
		snprintf(x->spec, sizeof(x->spec), "%s", eq + 1);
		pthread_mutex_init(&x->lock, NULL);
		pthread_mutex_lock(&v->lock);
		if (fz_remote_find(v, name)) {
			pthread_mutex_unlock(&v->lock);
			free(x);
			fz_areas_stop(A);
			return hvt_err(-EEXIST, "'%s' is given twice", name);
		}
		x->r = fz_remote_add(v, name, &fza_ops, x);
		if (x->r) {
			fz_remote_get(x->r);
			x->r->transport = HVT_TRANSPORT_AREA;
		}
		pthread_mutex_unlock(&v->lock);
		if (!x->r) {
			free(x);
			fz_areas_stop(A);
			return hvt_err(-ENOMEM, "out of memory");
		}
		x->next = A->all;
		A->all = x;
		/* A first attach now, so a mistyped path is said at once;
		 * the thread keeps retrying. */
		pthread_mutex_lock(&x->lock);
		if (fza_open(x))
			x->next_open = hvt_host_now_ns() + FZA_RETRY_NS;
		pthread_mutex_unlock(&x->lock);
	}
	ret = pthread_create(&A->thr, NULL, fza_thread, A);
	if (ret) {
		fz_areas_stop(A);
		return hvt_err(-ret, "cannot start a thread: %s",
			       strerror(ret));
	}
	A->thr_started = true;
	*out = A;
	return 0;
}

void fz_areas_stop(struct fz_areas *A)
{
	struct fz_aremote *x, *n;

	if (!A)
		return;
	A->stop = 1;
	if (A->thr_started)
		pthread_join(A->thr, NULL);
	for (x = A->all; x; x = n) {
		n = x->next;
		pthread_mutex_lock(&A->v->lock);
		fz_remote_remove(x->r);
		fz_remote_put(x->r);
		pthread_mutex_unlock(&A->v->lock);
		hvtrace_area_close(x->area);
		hvtrace_catalog_free(&x->cat);
		free(x->on);
		free(x->page);
		pthread_mutex_destroy(&x->lock);
		free(x);
	}
	free(A);
}
