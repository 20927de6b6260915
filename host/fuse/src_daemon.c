// SPDX-License-Identifier: MIT
/*
 * libhvtrace: remotes of hvtraced in the tracefs-style view.
 *
 * Two connections to the daemon.  The page feed belongs to one thread,
 * which reads each CPU of every remote as a ring of the core
 * (hvtrace_daemon_ring_open(): the feed routes that CPU's pages to it; the
 * ring validates them, converts times with the clock model hvtraced sends
 * in the page stream and reports losses, the daemon's drops included) and
 * moves the records, merged by time, into the view's queues (src_ring.c:
 * the path of any ring).  What is this file's own: the daemon's list of
 * remotes, looked at every FZD_REFRESH_NS (new remotes appear with a ring
 * per CPU, detached ones disappear, a new generation or geometry starts a
 * remote over with new rings, a remote whose writer stopped is marked so
 * readers get the end of the data), drain requests (DRAIN, then every
 * record the rings have, flushed past the reorder window), the remote's
 * formats and its guest kernel's ring.  The control
 * connection carries everything the file system asks (enable, tracing,
 * definitions, texts, formats) under its own lock, which is never taken
 * with the view lock held.
 *
 * When the daemon goes away every remote goes with it (readers get the
 * end of file); the thread reconnects every second.
 *
 * A guest remote whose agent stamps the guest's CLOCK_MONOTONIC may have
 * its kernel's own pages served beside its CPUs (a rig guest started with
 * --kernel-events: hvtraced reads its ring in guest RAM or the pages its
 * agent copies).  The mount's kring_open() callback is asked for them
 * once per run of the remote's writer, when its agent session is up (the
 * guest printed its formats before it started the agent), however early
 * the remote appeared; a remote whose formats were missing then stays
 * without its kernel's events until its next run or until it comes back.
 * The same thread reads those CPUs as rings on its feed at every turn
 * (at least every 100 ms) and on every drain, checks each record against
 * the guest's formats (kmap.c) and queues them beside the agent's, their
 * times through the same clock model (both are the guest's mono clock).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fuse-local.h"
#include "kmap.h"
#include <hvtrace-daemon.h>

#define FZD_REFRESH_NS	  300000000ULL	/* remotes list */
#define FZD_COMMS_NS	  1000000000ULL /* a guest's comms */
#define FZD_RECONNECT_NS  1000000000ULL
#define FZD_DRAIN_WAIT_MS 5000
#define FZD_WINDOW_NS	  10000000ULL /* reorder window across CPUs */
#define FZD_WINDOW_MS	  10
#define FZD_BATCH	  (1u << 16) /* records per remote per burst */
#define FZD_KFILE_MAX	  (4u << 20) /* printk_formats, saved_cmdlines */

struct fz_dremote {
	struct fz_dremote *next;
	struct fz_daemon *d;
	struct fz_remote *r; /* holds a reference */
	uint32_t id;
	bool dead;
	uint32_t nr_events; /* as REMOTES said at the last fetch */
	struct fz_rings *R; /* a ring per CPU, or NULL */
	uint64_t comms_ns;
	uint64_t generation;
	struct hvtrace_daemon_kring *kr; /* the guest kernel's ring, or NULL */
	struct fz_rings *KR;		 /* ... its CPUs as rings */
	char kformats[4096];		 /* its formats' folder */
	bool kr_asked; /* kring_open() was asked in this run */
};

struct fz_daemon {
	struct fz_view *v;
	char *sock;
	pthread_t thr;
	bool thr_started;
	int wake[2];
	volatile int stop;
	pthread_mutex_t ctl_lock;
	struct hvtrace_daemon *ctl;	  /* under ctl_lock */
	struct hvtrace_daemon_feed *feed; /* the thread's */
	struct fz_dremote *all;		  /* live and dead: freed at stop */
	uint64_t next_refresh, next_connect;
	uint64_t kring_noted; /* kring remotes said to be left out, id % 64 */
	bool logged_down;
	const struct hvtrace_fuse_options *o; /* kring_open, kring_close */
	unsigned int nr_kr;		      /* rings open */
};

static struct fz_dremote *fzd_by_id(struct fz_daemon *d, uint32_t id)
{
	struct fz_dremote *x;

	for (x = d->all; x; x = x->next)
		if (!x->dead && x->id == id)
			return x;
	return NULL;
}

/* --- operations for the file system ------------------------------------ */

static int fzd_ctl_begin(struct fz_dremote *x)
{
	pthread_mutex_lock(&x->d->ctl_lock);
	if (!x->d->ctl || x->dead) {
		pthread_mutex_unlock(&x->d->ctl_lock);
		return -ENODEV;
	}
	return 0;
}

static void fzd_ctl_end(struct fz_dremote *x)
{
	pthread_mutex_unlock(&x->d->ctl_lock);
}

/* The event table from FORMATS and TEXT EVENTS (ctl_lock held). */
static int fzd_fetch_events(struct fz_dremote *x)
{
	struct hvtrace_daemon_events evs = {0};
	struct fz_event *ev;
	unsigned int i, n = 0;
	int ret;

	ret = hvtrace_daemon_events_get(x->d->ctl, x->id, &evs);
	if (ret)
		return ret;
	ev = calloc(evs.nr + 1, sizeof(*ev));
	if (!ev) {
		hvtrace_daemon_events_free(&evs);
		return -ENOMEM;
	}
	for (i = 0; i < evs.nr; i++) {
		if (evs.ev[i].bit < 0)
			continue;
		snprintf(ev[n].system, sizeof(ev[n].system), "%s",
			 evs.ev[i].system);
		snprintf(ev[n].name, sizeof(ev[n].name), "%s", evs.ev[i].name);
		ev[n].id = evs.ev[i].id;
		ev[n].bit = evs.ev[i].bit;
		ev[n].enabled = evs.ev[i].enabled;
		ev[n].format = evs.ev[i].format;
		evs.ev[i].format = NULL;
		n++;
	}
	pthread_mutex_lock(&x->d->v->lock);
	fz_remote_set_events(x->r, ev, n, evs.header_page, evs.header_event);
	pthread_mutex_unlock(&x->d->v->lock);
	evs.header_page = evs.header_event = NULL;
	hvtrace_daemon_events_free(&evs);
	return 0;
}

static int fzd_refresh(struct fz_remote *r)
{
	struct fz_dremote *x = r->priv;
	int ret = fzd_ctl_begin(x);

	if (ret)
		return ret;
	ret = fzd_fetch_events(x);
	fzd_ctl_end(x);
	return ret;
}

/* One ENABLE; the daemon's text goes to @msg. */
static int fzd_enable_one(struct fz_dremote *x, const char *system,
			  const char *name, bool on, char *msg, size_t msgsize)
{
	char full[330];

	hvtrace_daemon_event_path(full, sizeof(full), system, name);
	return hvtrace_daemon_enable_event(x->d->ctl, x->id, full, on, msg,
					   msgsize);
}

/* A guest kernel event the agent switched: the view shows it so. */
static void fzd_kernel_set(struct fz_remote *r, const char *system,
			   const char *name, bool on)
{
	unsigned int i;

	pthread_mutex_lock(&r->v->lock);
	for (i = 0; i < r->nev; i++) {
		struct fz_event *k = &r->ev[i];

		if (k->kernel && !strcmp(k->system, system) &&
		    !strcmp(k->name, name)) {
			k->enabled = on;
			k->unknown = false;
		}
	}
	/* And in the kernel map the event table is rebuilt from. */
	for (i = 0; r->kmap && i < r->kmap->nev; i++) {
		struct fz_kev *k = &r->kmap->ev[i];

		if (!strcmp(k->system, system) && !strcmp(k->name, name))
			k->enabled = on;
	}
	pthread_mutex_unlock(&r->v->lock);
}

static int fzd_enable(struct fz_remote *r, const struct fz_event *e,
		      const char *system, bool on, char *msg, size_t msgsize)
{
	struct fz_dremote *x = r->priv;
	struct {
		char system[64], name[256];
		bool kernel;
	} *list = NULL;
	unsigned int n = 0, i, nk = 0;
	int ret = 0;

	/* The events to change, copied while the view is locked.  A guest
	 * kernel event already as asked needs nothing; the others go
	 * through hvtraced to the guest's agent (ENABLE of "SYSTEM:EVENT"),
	 * which refuses with a message when the guest has no agent. */
	pthread_mutex_lock(&r->v->lock);
	list = calloc(r->nev + 1, sizeof(*list));
	for (i = 0; list && i < r->nev; i++) {
		const struct fz_event *k = &r->ev[i];

		if (e ? strcmp(k->system, e->system) || strcmp(k->name, e->name)
		      : system && strcmp(k->system, system))
			continue;
		if (k->kernel) {
			nk++;
			if (!k->unknown && k->enabled == on)
				continue;
		}
		snprintf(list[n].system, sizeof(list[n].system), "%s",
			 k->system);
		snprintf(list[n].name, sizeof(list[n].name), "%s", k->name);
		list[n].kernel = k->kernel;
		n++;
	}
	pthread_mutex_unlock(&r->v->lock);
	if (!list)
		return -ENOMEM;
	if (!n && nk) {
		free(list);
		return 0; /* nothing to change */
	}
	ret = fzd_ctl_begin(x);
	if (ret) {
		free(list);
		return ret;
	}
	for (i = 0; !ret && i < n; i++) {
		char full[330];
		unsigned int j;

		/* A system's (or every) enable file: hvtraced switches the
		 * system's events in one request (SYSTEM and a "*"), together,
		 * not one round trip after the other, so that a writer
		 * that starts on its first enabled event (the hypervisor)
		 * finds them all on. */
		if (!list[i].kernel && !e) {
			for (j = 0; j < i; j++)
				if (!list[j].kernel &&
				    !strcmp(list[j].system, list[i].system))
					break;
			if (j == i)
				ret = fzd_enable_one(x, list[i].system, "*",
						     on, msg, msgsize);
			continue;
		}
		if (!list[i].kernel) {
			ret = fzd_enable_one(x, list[i].system, list[i].name,
					     on, msg, msgsize);
			continue;
		}
		snprintf(full, sizeof(full), "%s:%s", list[i].system,
			 list[i].name);
		ret = hvtrace_daemon_enable_event(x->d->ctl, x->id, full, on,
						  msg, msgsize);
		if (!ret)
			fzd_kernel_set(r, list[i].system, list[i].name, on);
	}
	/* The state as the daemon has it now, whatever happened. */
	if (!fzd_fetch_events(x) && !ret && !n)
		ret = -ENOENT;
	fzd_ctl_end(x);
	free(list);
	return ret;
}

static int fzd_tracing(struct fz_remote *r, bool on, char *msg, size_t msgsize)
{
	struct fz_dremote *x = r->priv;
	struct hvt_m_result res;
	struct hvt_msg m;
	int ret = fzd_ctl_begin(x);

	if (ret)
		return ret;
	memset(&m, 0, sizeof(m));
	m.type = HVT_MSG_TRACING;
	m.chan = x->id;
	m.u.tracing.op = on ? HVT_TRACING_ON : HVT_TRACING_OFF;
	ret = hvtrace_daemon_call_result(x->d->ctl, &m, &res, msg, msgsize);
	fzd_ctl_end(x);
	if (!ret) {
		pthread_mutex_lock(&r->v->lock);
		r->tracing_on = res.id != 0;
		pthread_mutex_unlock(&r->v->lock);
	}
	return ret;
}

static int fzd_drain(struct fz_remote *r)
{
	struct fz_dremote *x = r->priv;
	struct fz_view *v = r->v;
	struct timespec until;
	uint64_t target;
	int ret = 0;
	char c = 'd';

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FZD_DRAIN_WAIT_MS / 1000;
	pthread_mutex_lock(&v->lock);
	target = ++r->drain_req;
	pthread_mutex_unlock(&v->lock);
	if (write(x->d->wake[1], &c, 1) < 0 && errno != EAGAIN)
		return -errno;
	pthread_mutex_lock(&v->lock);
	while (r->drain_done < target && !r->gone && !v->shutdown) {
		if (pthread_cond_timedwait(&v->cond, &v->lock, &until)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&v->lock);
	return ret;
}

static int fzd_dyn(struct fz_remote *r, const char *line, char *msg,
		   size_t msgsize)
{
	struct fz_dremote *x = r->priv;
	struct hvt_msg m;
	int ret = fzd_ctl_begin(x);

	if (ret)
		return ret;
	memset(&m, 0, sizeof(m));
	m.chan = x->id;
	if (!line) {
		m.type = HVT_MSG_DELETE;
		m.u.arg.s.ptr = "*";
		m.u.arg.s.len = 1;
	} else {
		m.type = line[0] == '!' || line[0] == '-' ? HVT_MSG_DELETE
							  : HVT_MSG_DEFINE;
		m.u.arg.s.ptr = line;
		m.u.arg.s.len = (uint32_t)strlen(line);
	}
	ret = hvtrace_daemon_call_result(x->d->ctl, &m, NULL, msg, msgsize);
	if (ret != -ENODEV && ret != -ECONNRESET && ret != -ETIMEDOUT)
		fzd_fetch_events(x);
	fzd_ctl_end(x);
	return ret;
}

static int fzd_text(struct fz_remote *r, uint32_t kind, char **out)
{
	struct fz_dremote *x = r->priv;
	int ret = fzd_ctl_begin(x);

	if (ret)
		return ret;
	ret = hvtrace_daemon_get_text(x->d->ctl, x->id, kind, out, NULL);
	fzd_ctl_end(x);
	return ret;
}

static const struct fz_src_ops fzd_ops = {
	.enable = fzd_enable,
	.tracing = fzd_tracing,
	.drain = fzd_drain,
	.dyn = fzd_dyn,
	.text = fzd_text,
	.refresh = fzd_refresh,
};

/* --- the feed thread ------------------------------------------------------ */

/* --- the guest kernel's ring of a remote ------------------------------------
 */

static void fzd_kring_close(struct fz_daemon *d, struct fz_dremote *x)
{
	fz_rings_free(x->KR); /* the rings read through x->kr */
	x->KR = NULL;
	if (!x->kr)
		return;
	d->o->kring_close(d->o->kring_arg, x->kr, x->kformats);
	x->kr = NULL;
	x->kformats[0] = '\0';
	d->nr_kr--;
}

/* FILE of the formats' folder (text, at most FZD_KFILE_MAX bytes) or NULL. */
static char *fzd_kfile(const char *dir, const char *file)
{
	char path[4200], *buf;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	buf = fz_kmap_slurp(path, FZD_KFILE_MAX, &n);
	/* Text only: what the guest put there is shown as it is. */
	if (buf && memchr(buf, '\0', n)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The guest kernel's CPUs of @x as rings (@map: its events' ids). */
static int fzd_krings_open(struct fz_daemon *d, struct fz_dremote *x,
			   const struct fz_kmap *map)
{
	uint32_t nr = hvtrace_daemon_kring_cpus(x->kr), cpu;
	struct hvtrace_ring **rings = calloc(nr ? nr : 1, sizeof(*rings));
	int ret = rings ? 0 : hvt_err(-ENOMEM, "out of memory");

	for (cpu = 0; !ret && cpu < nr; cpu++)
		ret = hvtrace_daemon_kring_ring_open(x->kr, (int)cpu, d->feed,
						     x->id, &rings[cpu]);
	if (!ret)
		ret = fz_rings_new(rings, nr,
				   hvtrace_daemon_kring_subbuf_size(x->kr),
				   FZD_WINDOW_NS, map, &x->KR);
	else
		for (cpu = 0; rings && cpu < nr; cpu++)
			hvtrace_ring_close(rings[cpu]);
	free(rings);
	return ret;
}

/* Ask for the guest kernel's ring of @x; its events join the remote's. */
static void fzd_kring_open(struct fz_daemon *d, struct fz_dremote *x,
			   const struct hvt_remote_rec *rec)
{
	struct hvtrace_decoder *dec = NULL;
	struct fz_kmap *map = NULL;
	char enabled[4096] = "";
	int ret;

	fzd_kring_close(d, x);
	if (!d->o || !d->o->kring_open || !d->o->kring_close ||
	    rec->transport == HVT_TRANSPORT_AREA ||
	    rec->clock_id != HVT_CLOCK_MONO_NS)
		return;
	x->kformats[0] = '\0';
	if (d->o->kring_open(d->o->kring_arg, rec->name, &x->kr, x->kformats,
			     sizeof(x->kformats), enabled, sizeof(enabled)) ||
	    !x->kr) {
		x->kr = NULL;
		return;
	}
	d->nr_kr++;
	enabled[sizeof(enabled) - 1] = '\0';
	x->kformats[sizeof(x->kformats) - 1] = '\0';
	map = fz_kmap_new();
	ret = map ? fz_kmap_load(map, x->kformats, enabled[0] ? enabled : NULL)
		  : -ENOMEM;
	if (ret)
		hvt_err(ret, "no usable event format in %s", x->kformats);
	else
		ret = hvtrace_decoder_new_kernel(x->kformats, &dec);
	if (!ret) {
		/* Function names from the guest's RAM (never the host's) as
		 * hvtraced read them there, once per open; none (copy
		 * mode: no guest RAM): the addresses stay in hex. */
		int named = 0;

		if (!hvtrace_daemon_kring_copied(x->kr)) {
			pthread_mutex_lock(&d->ctl_lock);
			named = hvtrace_daemon_ksyms_load(d->ctl, x->id, dec);
			pthread_mutex_unlock(&d->ctl_lock);
		}
		if (named < 0)
			fprintf(stderr,
				"hvtrace mount: '%s': note: the guest kernel's "
				"function names print in hex (never the "
				"host's): %s\n",
				rec->name, hvtrace_last_error());
	}
	if (!ret) {
		pthread_mutex_lock(&d->v->lock);
		ret = fz_remote_set_kernel(
			x->r, map, dec, hvtrace_daemon_kring_cpus(x->kr),
			fzd_kfile(x->kformats, "printk_formats"),
			fzd_kfile(x->kformats, "saved_cmdlines"));
		if (d->v->wake)
			d->v->wake(d->v, x->r);
		pthread_mutex_unlock(&d->v->lock);
		if (ret)
			hvt_err(ret, "out of memory");
		else
			ret = fzd_krings_open(d, x, map);
		if (!ret)
			return;
		/* What the view was given goes with the ring. */
		pthread_mutex_lock(&d->v->lock);
		fz_remote_set_kernel(x->r, NULL, NULL, 0, NULL, NULL);
		pthread_mutex_unlock(&d->v->lock);
	} else {
		fz_kmap_free(map);
	}
	fprintf(stderr,
		"hvtrace mount: '%s': the guest kernel's events are left "
		"out: %s\n",
		rec->name, hvtrace_last_error());
	fzd_kring_close(d, x);
}

/* Once per run, as soon as the guest's agent is up. */
static void fzd_kring_maybe(struct fz_daemon *d, struct fz_dremote *x,
			    const struct hvt_remote_rec *rec)
{
	if (x->kr || x->kr_asked || !rec->nr_cpus ||
	    rec->state != HVT_REMOTE_CONNECTED)
		return;
	x->kr_asked = true;
	fzd_kring_open(d, x, rec);
}

/* A new run of the remote's writer (the guest rebooted): what the last
 * run's kernel showed goes; its ring is asked for again. */
static void fzd_kring_new_run(struct fz_daemon *d, struct fz_dremote *x)
{
	fzd_kring_close(d, x);
	x->kr_asked = false;
	pthread_mutex_lock(&d->v->lock);
	fz_remote_set_kernel(x->r, NULL, NULL, 0, NULL, NULL);
	pthread_mutex_unlock(&d->v->lock);
}

/*
 * What @x's guest kernel ring has ready, into the view (its CPUs as rings
 * of the core, merged as the remote's are; times through the remote's
 * clock model, which the feed holds).  A ring that fails is no longer
 * read.  Returns the records moved.
 */
static int fzd_kpump(struct fz_daemon *d, struct fz_dremote *x, bool flush)
{
	int n;

	if (x->dead || !x->KR || !x->r->kmap)
		return 0;
	n = fz_rings_pump(x->KR, x->r, flush, FZD_BATCH);
	if (n >= 0)
		return n;
	fprintf(stderr,
		"hvtrace mount: '%s': the guest kernel's ring is no longer "
		"read: %s\n",
		x->r->name, hvtrace_last_error());
	fzd_kring_close(d, x);
	return 0;
}

/*
 * What @x's rings have ready (@flush: everything they have, past the
 * reorder window) and its guest kernel's pages, into the view.  Returns
 * the records and pages moved (FZD_BATCH or more: call again), or a
 * negative errno of the feed.
 */
static int fzd_pump_one(struct fz_daemon *d, struct fz_dremote *x, bool flush)
{
	int n = 0, k;

	if (x->dead)
		return 0;
	if (x->R) {
		n = fz_rings_pump(x->R, x->r, flush, FZD_BATCH);
		if (n == -ENOENT || n == -ENODEV)
			n = 0; /* detached meanwhile: the list says so */
		if (n < 0)
			return n;
	}
	k = fzd_kpump(d, x, flush);
	return n + k;
}

/*
 * Every remote; *@more when one has more at once.  @sock: the feed's
 * socket said something.  A ring that the merge finds empty reads the
 * socket until it has a page or the socket has nothing (routing every
 * other ring's pages on the way), so with rings the socket is read here;
 * without any, what comes is received and dropped.
 */
static int fzd_pump(struct fz_daemon *d, bool sock, bool *more)
{
	struct hvtrace_daemon_page *pg;
	struct fz_dremote *x;
	bool rings = false;
	int ret;

	*more = false;
	for (x = d->all; x; x = x->next) {
		ret = fzd_pump_one(d, x, false);
		if (ret < 0)
			return ret;
		if (ret >= (int)FZD_BATCH)
			*more = true;
		rings |= x->R != NULL;
	}
	/* Pages no ring takes (a subscription closed while its pages were
	 * on their way) are nobody's. */
	while (hvtrace_daemon_feed_pending(d->feed) || (sock && !rings)) {
		ret = hvtrace_daemon_feed_next(d->feed, 0, &pg);
		if (ret <= 0)
			return ret;
		free(pg);
	}
	return 0;
}

/* Whether a record waits for the reorder window. */
static bool fzd_waiting(struct fz_daemon *d)
{
	struct fz_dremote *x;

	for (x = d->all; x; x = x->next)
		if (!x->dead &&
		    (fz_rings_pending(x->R) || fz_rings_pending(x->KR)))
			return true;
	return false;
}

static int fzd_pump(struct fz_daemon *d, bool sock, bool *more);

/*
 * Read until the feed's DRAIN is answered, @x's rings flushed (every
 * other remote's read too, so that no ring's pages fill the feed).
 */
static int fzd_drain_wait(struct fz_daemon *d, struct fz_dremote *x)
{
	uint64_t idle_since = hvt_host_now_ns();
	bool more;
	int n, ret, st;

	while (!(st = hvtrace_daemon_feed_drained(d->feed))) {
		struct pollfd pfd = {.fd = hvtrace_daemon_feed_fd(d->feed),
				     .events = POLLIN};

		n = fzd_pump_one(d, x, true);
		if (n < 0)
			return n;
		ret = fzd_pump(d, false, &more);
		if (ret < 0)
			return ret;
		if (n > 0 || more || hvtrace_daemon_feed_drained(d->feed)) {
			idle_since = hvt_host_now_ns();
			continue;
		}
		/* Every ring read the socket dry: wait for more. */
		if (hvt_host_now_ns() - idle_since >
		    HVTRACE_DAEMON_TIMEOUT_MS * 1000000ULL)
			return hvt_err(-ETIMEDOUT,
				       "hvtraced did not answer a DRAIN "
				       "within %d ms",
				       HVTRACE_DAEMON_TIMEOUT_MS);
		poll(&pfd, 1, 100);
	}
	return st < 0 ? st : 0;
}

/*
 * Everything @x's writer committed until now, into the view.  hvtraced
 * reads the rings to their end at the pace their pages are taken (the
 * feed receives only while it has room), so a backlog larger than the
 * feed's queue is read whole, none of it dropped at the feed.
 */
static int fzd_drain_one(struct fz_daemon *d, struct fz_dremote *x)
{
	int ret;

	if (x->R) {
		ret = hvtrace_daemon_feed_drain_start(d->feed, x->id);
		if (ret == -EBUSY) {
			/* One left out by a remote that went meanwhile. */
			fzd_drain_wait(d, x);
			ret = hvtrace_daemon_feed_drain_start(d->feed, x->id);
		}
		if (!ret)
			ret = fzd_drain_wait(d, x);
		if (ret)
			return ret;
	}
	/* Whatever the rings hold, past the reorder window. */
	while ((ret = fzd_pump_one(d, x, true)) > 0)
		;
	return ret;
}

/*
 * A ring per CPU, once the remote has an area whose geometry the view
 * took: a guest that hvtrace guest start attached while it boots has none
 * yet (ENODEV), and gets its rings at the first look that finds one.
 */
static int fzd_rings_open(struct fz_daemon *d, struct fz_dremote *x,
			  const struct hvt_remote_rec *rec)
{
	struct hvtrace_ring **rings;
	uint32_t cpu;
	int ret = 0;

	if (x->R || !rec->nr_cpus || !x->r->loaded ||
	    x->r->nr_cpus != rec->nr_cpus ||
	    x->r->subbuf_size != rec->subbuf_size)
		return 0;
	rings = calloc(rec->nr_cpus, sizeof(*rings));
	if (!rings)
		return hvt_err(-ENOMEM, "out of memory");
	for (cpu = 0; !ret && cpu < rec->nr_cpus; cpu++)
		ret = hvtrace_daemon_ring_open(d->feed, x->id, (int)cpu,
					       &rings[cpu]);
	if (ret) {
		for (cpu = 0; cpu < rec->nr_cpus; cpu++)
			hvtrace_ring_close(rings[cpu]);
	} else {
		ret = fz_rings_new(rings, rec->nr_cpus, rec->subbuf_size,
				   FZD_WINDOW_NS, NULL, &x->R);
	}
	free(rings);
	if (ret && ret != -ENODEV && ret != -ENOENT)
		fprintf(stderr, "hvtrace mount: cannot read '%s': %s\n",
			rec->name, hvtrace_last_error());
	return ret == -ENODEV || ret == -ENOENT ? 0 : ret;
}

static void fzd_rings_close(struct fz_dremote *x)
{
	fz_rings_free(x->R);
	x->R = NULL;
}

/* A remote of the daemon appeared: its events, then its pages. */
static void fzd_add(struct fz_daemon *d, const struct hvt_remote_rec *rec)
{
	struct fz_dremote *x = calloc(1, sizeof(*x));
	struct fz_remote *r;
	int ret;

	if (!x)
		return;
	x->d = d;
	x->id = rec->id;
	x->nr_events = rec->nr_events;
	x->generation = rec->generation;
	pthread_mutex_lock(&d->v->lock);
	r = fz_remote_find(d->v, rec->name);
	if (r) {
		/* The name is taken (an area given with --area). */
		pthread_mutex_unlock(&d->v->lock);
		free(x);
		return;
	}
	r = fz_remote_add(d->v, rec->name, &fzd_ops, x);
	if (!r) {
		pthread_mutex_unlock(&d->v->lock);
		free(x);
		return;
	}
	fz_remote_get(r);
	x->r = r;
	r->id = rec->id;
	r->transport = rec->transport;
	r->user_events = rec->transport != HVT_TRANSPORT_AREA;
	r->tracing_on = rec->tracing_on;
	r->state = rec->state;
	if (rec->nr_cpus)
		fz_remote_set_geometry(r, rec->nr_cpus, rec->nr_subbufs,
				       rec->subbuf_size, rec->writer_kind,
				       rec->mode, rec->clock_id,
				       rec->generation);
	x->next = d->all;
	d->all = x;
	pthread_mutex_unlock(&d->v->lock);
	pthread_mutex_lock(&d->ctl_lock);
	if (d->ctl)
		fzd_fetch_events(x);
	pthread_mutex_unlock(&d->ctl_lock);
	ret = fzd_rings_open(d, x, rec);
	fzd_kring_maybe(d, x, rec);
	if (rec->transport == HVT_TRANSPORT_AREA &&
	    rec->state == HVT_REMOTE_DISCONNECTED) {
		/* A writer that stopped already: what it left, then the
		 * news. */
		if (!ret)
			fzd_drain_one(d, x);
		pthread_mutex_lock(&d->v->lock);
		r->stopped = true;
		if (d->v->wake)
			d->v->wake(d->v, r);
		pthread_mutex_unlock(&d->v->lock);
	}
}

static void fzd_remove(struct fz_daemon *d, struct fz_dremote *x)
{
	/* What the view queued stays readable: it has its own decoder. */
	fzd_rings_close(x);
	fzd_kring_close(d, x);
	x->dead = true;
	pthread_mutex_lock(&d->v->lock);
	fz_remote_remove(x->r);
	pthread_mutex_unlock(&d->v->lock);
}

/* One comm of a guest's agent (ctl_lock held; the view lock may be
 * taken inside it, never the other way). */
static void fzd_comm(void *arg, int pid, const char *comm)
{
	struct fz_dremote *x = arg;

	pthread_mutex_lock(&x->d->v->lock);
	if (x->r->dec)
		hvtrace_decoder_set_comm(x->r->dec, pid, comm);
	pthread_mutex_unlock(&x->d->v->lock);
}

/*
 * Name a guest's pids from its agent's saved_cmdlines.  Returns false
 * while the remote has no decoder yet (its formats are not loaded), so
 * the caller asks again at the next sync instead of a period later.
 */
static bool fzd_comms(struct fz_daemon *d, struct fz_dremote *x)
{
	bool applied = false;
	int ret = -ENODEV;

	pthread_mutex_lock(&d->ctl_lock);
	if (d->ctl)
		ret = hvtrace_daemon_cmdlines_each(d->ctl, x->id, fzd_comm, x);
	pthread_mutex_unlock(&d->ctl_lock);
	if (ret)
		return false;
	pthread_mutex_lock(&d->v->lock);
	applied = x->r->dec != NULL;
	pthread_mutex_unlock(&d->v->lock);
	return applied;
}

/* Compare the daemon's list with ours. */
static int fzd_sync_remotes(struct fz_daemon *d)
{
	struct hvt_remote_rec *recs = NULL;
	struct fz_dremote *x;
	uint32_t n = 0, i, k;
	uint64_t now = hvt_host_now_ns();
	int ret;

	pthread_mutex_lock(&d->ctl_lock);
	ret = hvtrace_daemon_get_remotes(d->ctl, &recs, &n);
	pthread_mutex_unlock(&d->ctl_lock);
	if (ret)
		return ret;
	/* A missing remote (its area file is gone) has nothing to read:
	 * not in the view, as if it were not there. */
	for (i = 0, k = 0; i < n; i++)
		if (recs[i].state != HVT_REMOTE_MISSING)
			recs[k++] = recs[i];
	n = k;
	for (x = d->all; x; x = x->next) {
		const struct hvt_remote_rec *rec = NULL;
		bool refetch = false, reopen = false, stopped, new_run;

		if (x->dead)
			continue;
		for (i = 0; i < n; i++)
			if (recs[i].id == x->id)
				rec = &recs[i];
		if (!rec) {
			fzd_remove(d, x);
			continue;
		}
		stopped = hvtrace_daemon_remote_stopped(rec);
		new_run = rec->nr_cpus && x->r->loaded &&
			  rec->generation != x->generation;
		if (stopped && !x->r->stopped) {
			/* The writer stopped: everything it committed
			 * reaches the view before readers are told. */
			fzd_drain_one(d, x);
		}
		pthread_mutex_lock(&d->v->lock);
		x->r->tracing_on = rec->tracing_on;
		x->r->state = rec->state;
		x->r->stopped = stopped;
		if (rec->nr_cpus &&
		    (!x->r->loaded || rec->generation != x->r->generation ||
		     rec->nr_cpus != x->r->nr_cpus ||
		     rec->subbuf_size != x->r->subbuf_size)) {
			fz_remote_set_geometry(
				x->r, rec->nr_cpus, rec->nr_subbufs,
				rec->subbuf_size, rec->writer_kind, rec->mode,
				rec->clock_id, rec->generation);
			x->generation = rec->generation;
			refetch = true;
			/* Another run or shape: rings of it. */
			reopen = true;
		}
		if (d->v->wake)
			d->v->wake(d->v, x->r);
		pthread_mutex_unlock(&d->v->lock);
		if (new_run)
			fzd_kring_new_run(d, x);
		if (reopen)
			fzd_rings_close(x);
		fzd_rings_open(d, x, rec);
		fzd_kring_maybe(d, x, rec);
		if (rec->nr_events != x->nr_events)
			refetch = true;
		if (refetch) {
			x->nr_events = rec->nr_events;
			pthread_mutex_lock(&d->ctl_lock);
			if (d->ctl)
				fzd_fetch_events(x);
			pthread_mutex_unlock(&d->ctl_lock);
		}
		/* A guest's comms, from its agent, now and then. */
		if (x->r->user_events && now - x->comms_ns >= FZD_COMMS_NS &&
		    fzd_comms(d, x))
			x->comms_ns = now;
	}
	for (i = 0; i < n; i++) {
		if (fzd_by_id(d, recs[i].id))
			continue;
		/* A guest kernel ring attached by pid has no clock model: its
		 * times are the guest's own, which the view would show as the
		 * host's.  Left out, and said once. */
		if (recs[i].transport == HVT_TRANSPORT_KRING) {
			if (!(d->kring_noted & (1ull << (recs[i].id % 64))))
				fprintf(stderr,
					"hvtrace mount: '%s' (a guest kernel "
					"ring attached by pid) is left out: "
					"its times are the guest's own; read "
					"it with hvtrace stream %s\n",
					recs[i].name, recs[i].name);
			d->kring_noted |= 1ull << (recs[i].id % 64);
			continue;
		}
		fzd_add(d, &recs[i]);
	}
	free(recs);
	return 0;
}

/*
 * The feed's connection goes with its subscriptions: closing a ring then
 * asks nothing of a daemon that may not answer.
 */
static void fzd_feed_shut(struct fz_daemon *d)
{
	if (d->feed)
		shutdown(hvtrace_daemon_feed_fd(d->feed), SHUT_RDWR);
}

static void fzd_disconnect(struct fz_daemon *d, int why)
{
	struct fz_dremote *x;

	fzd_feed_shut(d);
	for (x = d->all; x; x = x->next)
		if (!x->dead)
			fzd_remove(d, x);
	pthread_mutex_lock(&d->ctl_lock);
	hvtrace_daemon_close(d->ctl);
	d->ctl = NULL;
	pthread_mutex_unlock(&d->ctl_lock);
	hvtrace_daemon_feed_close(d->feed);
	d->feed = NULL;
	d->next_connect = hvt_host_now_ns() + FZD_RECONNECT_NS;
	if (!d->logged_down) {
		fprintf(stderr,
			"hvtrace mount: lost hvtraced (%s: %s); its "
			"remotes are gone from the view, reconnecting "
			"every second\n",
			strerror(-why), hvtrace_last_error());
		d->logged_down = true;
	}
}

static int fzd_connect(struct fz_daemon *d)
{
	struct hvtrace_daemon *ctl;
	int ret;

	ret = hvtrace_daemon_open(d->sock, &ctl);
	if (ret)
		return ret;
	ret = hvtrace_daemon_feed_open(d->sock, &d->feed);
	if (ret) {
		hvtrace_daemon_close(ctl);
		return ret;
	}
	pthread_mutex_lock(&d->ctl_lock);
	d->ctl = ctl;
	pthread_mutex_unlock(&d->ctl_lock);
	if (d->logged_down)
		fprintf(stderr, "hvtrace mount: hvtraced is back\n");
	d->logged_down = false;
	d->next_refresh = 0;
	return 0;
}

/* Serve the drains asked for, in order. */
static int fzd_drains(struct fz_daemon *d)
{
	struct fz_dremote *x;
	int ret = 0;

	for (x = d->all; x; x = x->next) {
		uint64_t target;

		if (x->dead)
			continue;
		pthread_mutex_lock(&d->v->lock);
		target = x->r->drain_req;
		pthread_mutex_unlock(&d->v->lock);
		if (target == x->r->drain_done)
			continue;
		ret = fzd_drain_one(d, x);
		pthread_mutex_lock(&d->v->lock);
		x->r->drain_done = target;
		pthread_cond_broadcast(&d->v->cond);
		pthread_mutex_unlock(&d->v->lock);
		if (ret == -ENOENT || ret == -ENODEV)
			ret = 0; /* detached meanwhile */
		if (ret)
			return ret;
	}
	return 0;
}

static void *fzd_thread(void *arg)
{
	struct fz_daemon *d = arg;
	bool more = false;

	while (!d->stop) {
		struct pollfd pfd[2];
		uint64_t now = hvt_host_now_ns();
		int ret = 0, timeout;

		if (!d->feed) {
			if (now >= d->next_connect && fzd_connect(d))
				d->next_connect = now + FZD_RECONNECT_NS;
			if (!d->feed) {
				/* Drains cannot be served: say they are. */
				struct fz_dremote *x;

				pthread_mutex_lock(&d->v->lock);
				for (x = d->all; x; x = x->next)
					x->r->drain_done = x->r->drain_req;
				pthread_cond_broadcast(&d->v->cond);
				pthread_mutex_unlock(&d->v->lock);
				pfd[0].fd = d->wake[0];
				pfd[0].events = POLLIN;
				poll(pfd, 1, 200);
				if (pfd[0].revents & POLLIN) {
					char buf[64];

					while (read(d->wake[0], buf,
						    sizeof(buf)) > 0)
						;
				}
				continue;
			}
		}
		if (now >= d->next_refresh) {
			d->next_refresh = now + FZD_REFRESH_NS;
			ret = fzd_sync_remotes(d);
			if (ret) {
				fzd_disconnect(d, ret);
				continue;
			}
		}
		/* Records held for the reorder window are looked at again
		 * when it has passed. */
		timeout = more || hvtrace_daemon_feed_pending(d->feed) ? 0
			  : fzd_waiting(d) ? FZD_WINDOW_MS
					   : 100;
		pfd[0].fd = hvtrace_daemon_feed_fd(d->feed);
		pfd[0].events = POLLIN;
		pfd[1].fd = d->wake[0];
		pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		if (timeout)
			poll(pfd, 2, timeout);
		if (pfd[1].revents & POLLIN) {
			char buf[64];

			while (read(d->wake[0], buf, sizeof(buf)) > 0)
				;
		}
		if (d->stop)
			break;
		/* Rings are read at every turn (they take from the socket
		 * what is there; guest kernel rings have no fd). */
		ret = fzd_pump(d, pfd[0].revents & (POLLIN | POLLHUP | POLLERR),
			       &more);
		if (ret >= 0)
			ret = fzd_drains(d);
		if (ret < 0)
			fzd_disconnect(d, ret);
	}
	return NULL;
}

int fz_daemon_start(struct fz_view *v, const struct hvtrace_fuse_options *o,
		    struct fz_daemon **out)
{
	struct fz_daemon *d = calloc(1, sizeof(*d));
	const char *sock = o->sock;
	int ret;

	if (!d)
		return hvt_err(-ENOMEM, "out of memory");
	d->v = v;
	d->o = o;
	d->wake[0] = d->wake[1] = -1;
	pthread_mutex_init(&d->ctl_lock, NULL);
	if (sock) {
		d->sock = strdup(sock);
		if (!d->sock) {
			fz_daemon_stop(d);
			return hvt_err(-ENOMEM, "out of memory");
		}
	}
	if (pipe2(d->wake, O_NONBLOCK | O_CLOEXEC)) {
		ret = hvt_err(-errno, "pipe: %s", strerror(errno));
		fz_daemon_stop(d);
		return ret;
	}
	/* The daemon must answer now; later it may come and go. */
	ret = fzd_connect(d);
	if (ret) {
		fz_daemon_stop(d);
		return ret;
	}
	ret = fzd_sync_remotes(d);
	if (ret) {
		fz_daemon_stop(d);
		return ret;
	}
	d->next_refresh = hvt_host_now_ns() + FZD_REFRESH_NS;
	ret = pthread_create(&d->thr, NULL, fzd_thread, d);
	if (ret) {
		fz_daemon_stop(d);
		return hvt_err(-ret, "cannot start a thread: %s",
			       strerror(ret));
	}
	d->thr_started = true;
	*out = d;
	return 0;
}

void fz_daemon_stop(struct fz_daemon *d)
{
	struct fz_dremote *x, *n;
	char c = 's';

	if (!d)
		return;
	d->stop = 1;
	if (d->wake[1] >= 0 && write(d->wake[1], &c, 1) < 0)
		(void)0; /* the thread polls every 100 ms anyway */
	if (d->thr_started)
		pthread_join(d->thr, NULL);
	fzd_feed_shut(d);
	for (x = d->all; x; x = n) {
		n = x->next;
		fzd_rings_close(x);
		fzd_kring_close(d, x);
		pthread_mutex_lock(&d->v->lock);
		if (!x->dead)
			fz_remote_remove(x->r);
		fz_remote_put(x->r);
		pthread_mutex_unlock(&d->v->lock);
		free(x);
	}
	hvtrace_daemon_close(d->ctl);
	hvtrace_daemon_feed_close(d->feed);
	if (d->wake[0] >= 0)
		close(d->wake[0]);
	if (d->wake[1] >= 0)
		close(d->wake[1]);
	pthread_mutex_destroy(&d->ctl_lock);
	free(d->sock);
	free(d);
}
