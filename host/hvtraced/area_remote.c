// SPDX-License-Identifier: MIT
/*
 * hvtraced: the area transport -- remotes that are an area alone.
 *
 * A hypervisor (its trace area in a range of its guest-RAM file) and the
 * loopback writer (a /dev/shm file) have no agent and no control
 * channel: everything the daemon says to them goes through the area's
 * control page, which it owns (HVTRACE_OPEN_CONTROL).  Such a remote is
 * attached by name with "PATH[@OFFSET[+SIZE]]" and then served like a
 * guest: the same subscriptions and fan-out, the same tools.  Its
 * remote_ops (area_ops, at the end) work on this file's struct
 * area_remote, which embeds the struct remote, and give the tool role the
 * static events instead of user events.
 *
 *   events     the writer kind's static table: the built-in "hvtrace"
 *              events (a loopback writer's selftest, enable bit 0) and,
 *              for a hypervisor, its "hypervisor" events (enable bit =
 *              index).  The daemon keeps its own record of which are on
 *              and writes it into the control page on every (re)attach;
 *              it never reads enable state back from shared memory.
 *              All are on after attach unless HVT_ATTACH_DISABLED.
 *   time       samples through the control page (hvtrace_area_sync())
 *              for a writer that answers them; a loopback writer that
 *              lives on this host is read directly
 *              (hvtrace_area_sync_local()).  A burst at attach, then one
 *              per --sync-interval.  hvtrace_area_sync() waits for the
 *              answer, so the wait is bounded (AR_SYNC_WAIT_MS) and a
 *              writer that stops answering is asked less and less often.
 *   state      polled every AR_STATE_MS, on one grid for all remotes (one
 *              wakeup of the loop polls them all): a writer that stopped
 *              (STOPPED, or a loopback writer whose process is gone) makes
 *              the remote "disconnected"; a new generation (the writer
 *              formatted the area again) re-attaches it; a file that
 *              shrank under the mapping drops the area, which is then
 *              retried every second, as is an area not formatted yet.
 *   restart    the state file keeps each area with who attached it
 *              (ar_save()); area_remote_restore() attaches it again as
 *              that client, through the same checks as its ATTACH_AREA.
 *              A restored area whose file is missing (ENOENT) is
 *              "missing" (HVT_REMOTE_MISSING in REMOTES): it has nothing
 *              to read and a SUBSCRIBE is refused with why; the log says
 *              so once; the file is looked for again after 1, 2, 4 ...
 *              s, then every AR_MISSING_MAX_MS (a hypervisor may start
 *              later, a writer may create it again), silently until it
 *              is there or fails otherwise; a new attach of its name
 *              replaces it (area_remote_stale(), tool.c) and a DETACH
 *              forgets it, state file included.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"

#define AR_STATE_MS	       200  /* writer state poll */
#define AR_RETRY_MS	       1000 /* area not there or not formatted yet */
#define AR_MISSING_MAX_MS      64000 /* a restored area's file is gone */
#define AR_SYNC_WAIT_MS	       5    /* longest wait for one answer */
#define AR_SYNC_BURST	       16
#define AR_SYNC_MAX_BACKOFF_MS 60000
#define AR_SPEC_MAX	       4200 /* PATH[@OFFSET[+SIZE]], with its NUL */

struct area_remote {
	struct remote r;
	char *spec;		     /* PATH[@OFFSET[+SIZE]] */
	uint32_t flags;		     /* HVT_ATTACH_* */
	/* Who attached it (the daemon's own ids for --attach-area), kept
	 * in the state file; when not root nor the daemon's user
	 * (restricted), every (re)open is checked against what that client
	 * may open (access.c). */
	struct d_cred cred;
	bool restricted;
	bool restored;		     /* attached again from the state file */
	int last_ret;		     /* the last open's error, 0: opened */
	struct hvtrace_catalog cat; /* static events of the writer kind */
	uint32_t cat_kind;	     /* writer kind the catalog is for */
	bool have_cat;
	/* The daemon's own record of the static events' state, by catalog
	 * index (never read back from the control page). */
	bool *on;
	bool defaults_applied;
	uint64_t next_open_ms;
	uint64_t missing_gap_ms;     /* back-off while missing (doubles) */
	uint64_t next_state_ms;
	uint64_t next_sync_ms;
	unsigned int burst_left;
	unsigned int sync_misses; /* answers missed in a row */
	char last_err[512];	  /* logged once per distinct error */
	char problem[1024];	  /* TEXT INFO: why it has no area */
};

static const struct remote_ops area_ops;

static struct area_remote *area_remote(struct remote *r)
{
	return container_of(r, struct area_remote, r);
}

static const struct area_remote *area_remote_c(const struct remote *r)
{
	return container_of(r, const struct area_remote, r);
}

static const char *ar_spec(const struct remote *r)
{
	const struct area_remote *ar = area_remote_c(r);

	return ar->spec;
}

static const char *ar_control(const struct remote *r)
{
	(void)r;
	return "(the area's control page)";
}

/* area<TAB>NAME<TAB>uid=U,gid=G,groups=G1:G2...<TAB>SPEC: the requester
 * goes with the area, so that a restart attaches it as that client. */
static void ar_save(const struct remote *r, FILE *f)
{
	const struct area_remote *ar = area_remote_c(r);
	uint32_t i;

	if (strpbrk(ar_spec(r), "\t\n"))
		return;
	fprintf(f, "area\t%s\tuid=%u,gid=%u,groups=", r->name,
		(unsigned int)ar->cred.uid, (unsigned int)ar->cred.gid);
	for (i = 0; i < ar->cred.nr_groups && i < D_CRED_GROUPS; i++)
		fprintf(f, "%s%u", i ? ":" : "",
			(unsigned int)ar->cred.groups[i]);
	fprintf(f, "\t%s\n", ar_spec(r));
}

static const char *ar_problem(const struct remote *r)
{
	const struct area_remote *ar = area_remote_c(r);

	return !r->area && ar->problem[0] ? ar->problem : NULL;
}

bool area_remote_stale(const struct remote *r)
{
	if (r->ops != &area_ops)
		return false;
	return area_remote_c(r)->restored && !r->area &&
	       area_remote_c(r)->last_ret == -ENOENT;
}

static int ar_load_catalog(struct remote *r)
{
	struct area_remote *ar = area_remote(r);
	bool *on;
	int ret;

	if (ar->have_cat && ar->cat_kind == r->info.writer_kind)
		return 0;
	hvtrace_catalog_free(&ar->cat);
	ar->have_cat = false;
	free(ar->on);
	ar->on = NULL;
	ar->defaults_applied = false;
	ret = hvtrace_catalog_add_writer(&ar->cat, r->info.writer_kind);
	if (ret)
		return ret;
	on = calloc(ar->cat.nr + 1, sizeof(*on));
	if (!on)
		return -ENOMEM;
	ar->on = on;
	ar->cat_kind = r->info.writer_kind;
	ar->have_cat = true;
	return 0;
}

static const struct hvtrace_catalog *ar_catalog(struct remote *r)
{
	struct area_remote *ar = area_remote(r);

	if (!r->area || ar_load_catalog(r))
		return NULL;
	return &ar->cat;
}

static bool ar_event_on(const struct remote *r, unsigned int i)
{
	const struct area_remote *ar = area_remote_c(r);

	return ar->have_cat && i < ar->cat.nr && ar->on[i];
}

static int ar_set_event(struct remote *r, unsigned int i, bool on)
{
	struct area_remote *ar = area_remote(r);

	if (!ar->have_cat || i >= ar->cat.nr || ar->cat.bit[i] < 0)
		return -EINVAL;
	ar->on[i] = on;
	if (!r->area)
		return 0;
	return hvtrace_area_set_event(r->area, (unsigned int)ar->cat.bit[i],
				      on);
}

/* The whole static bitmap and tracing_on, from the daemon's record. */
static void ar_write_control(struct remote *r)
{
	struct area_remote *ar = area_remote(r);
	unsigned int i;

	if (!ar->have_cat)
		return;
	if (!ar->defaults_applied) {
		for (i = 0; i < ar->cat.nr; i++)
			ar->on[i] = ar->cat.bit[i] >= 0 &&
				    !(ar->flags & HVT_ATTACH_DISABLED);
		ar->defaults_applied = true;
	}
	for (i = 0; i < ar->cat.nr; i++)
		if (ar->cat.bit[i] >= 0)
			hvtrace_area_set_event(r->area,
					       (unsigned int)ar->cat.bit[i],
					       ar->on[i]);
	hvtrace_area_set_tracing(r->area, r->tracing_on);
}

static bool ar_writer_alive(const struct remote *r)
{
	if (r->info.writer_kind != HVT_WRITER_LOOPBACK || !r->info.writer_pid)
		return true; /* nothing else can be asked */
	return !(kill((pid_t)r->info.writer_pid, 0) && errno == ESRCH);
}

static void ar_set_state(struct remote *r, uint32_t writer_state)
{
	enum hvt_remote_state s;

	if (!r->area)
		s = HVT_REMOTE_WAITING;
	else if (writer_state == HVT_STATE_STOPPED || !ar_writer_alive(r))
		s = HVT_REMOTE_DISCONNECTED;
	else if (writer_state == HVT_STATE_RUNNING)
		s = HVT_REMOTE_CONNECTED;
	else
		s = HVT_REMOTE_WAITING;
	if (s != r->state)
		d_log("remote '%s': writer %s", r->name,
		      s == HVT_REMOTE_CONNECTED	     ? "running"
		      : s == HVT_REMOTE_DISCONNECTED ? "stopped"
						     : "not running yet");
	r->state = s;
}

/* (Re)attach the area; 0, or the error (logged once per distinct one). */
static int ar_open(struct remote *r)
{
	struct area_remote *ar = area_remote(r);
	struct hvtrace_area_info info;
	struct hvtrace_area *a;
	uint32_t state = 0;
	int ret;

	char via[AR_SPEC_MAX + 32], why[512];
	int fd;

	ret = access_area_open(ar->restricted ? &ar->cred : NULL, ar->spec,
			       &fd, via, sizeof(via), why, sizeof(why));
	if (!ret) {
		ret = hvtrace_area_open_spec(via, HVTRACE_OPEN_CONTROL |
						       HVTRACE_OPEN_RESUME |
						       HVTRACE_OPEN_POST_LATER,
					     &a);
		/* Opened through a descriptor: name the file as given. */
		if (ret && fd >= 0)
			snprintf(why, sizeof(why), "%.200s (opened as %.40s): %s",
				 ar->spec, via, hvtrace_last_error());
		else if (ret)
			snprintf(why, sizeof(why), "%s", hvtrace_last_error());
		if (fd >= 0)
			close(fd);	/* the area holds its own descriptor */
	}
	if (ret) {
		ar->last_ret = ret;
		if (strcmp(ar->last_err, why)) {
			snprintf(ar->last_err, sizeof(ar->last_err), "%s",
				 why);
			if (area_remote_stale(r))
				snprintf(ar->problem, sizeof(ar->problem),
					 "%s (attached again from "
					 "hvtraced.state, but the file is "
					 "gone: looked for again after 1, 2, "
					 "4 ... s, then every %d s; create it "
					 "again at that path, or a new attach "
					 "of '%s' replaces it, 'hvtrace "
					 "daemon detach %s' forgets it)",
					 ar->last_err, AR_MISSING_MAX_MS / 1000,
					 r->name, r->name);
			else
				snprintf(ar->problem, sizeof(ar->problem),
					 "%s (retrying every %d ms)",
					 ar->last_err, AR_RETRY_MS);
			d_log("remote '%s': %s", r->name, ar->problem);
		}
		if (area_remote_stale(r)) {
			if (r->state != HVT_REMOTE_MISSING)
				ar->missing_gap_ms = AR_RETRY_MS;
			r->state = HVT_REMOTE_MISSING;
		} else if (r->state == HVT_REMOTE_MISSING) {
			r->state = HVT_REMOTE_WAITING;
		}
		return ret;
	}
	if (r->state == HVT_REMOTE_MISSING)
		d_log("remote '%s': its file %s is there again", r->name,
		      ar->spec);
	ar->last_ret = 0;
	ar->last_err[0] = '\0';
	ar->problem[0] = '\0';
	ret = remote_set_area(r, a);
	if (ret)
		return ret;
	info = r->info;
	ret = ar_load_catalog(r);
	if (ret) {
		d_log("remote '%s': cannot load its event table: %s", r->name,
		      strerror(-ret));
		return ret;
	}
	ar_write_control(r);
	hvtrace_area_writer_state(a, &state, NULL);
	ar_set_state(r, state);
	ar->burst_left = AR_SYNC_BURST;
	ar->sync_misses = 0;
	ar->next_sync_ms = d_now_ms();
	d_log("remote '%s': area %s: %s writer, %u CPUs x %u sub-buffers of %u "
	      "bytes, generation %llu",
	      r->name, ar->spec,
	      info.writer_kind == HVT_WRITER_HYP	? "hypervisor"
	      : info.writer_kind == HVT_WRITER_LOOPBACK ? "loopback"
	      : info.writer_kind == HVT_WRITER_GUEST	? "guest"
							: "unknown",
	      info.nr_cpus, info.nr_subbufs, info.subbuf_size,
	      (unsigned long long)info.generation);
	return 0;
}

/* The checks of an attach that need no remote: name, spec, flags and,
 * for a restricted client, the file itself (access.c). */
static int ar_check(const char *name, const char *spec, uint32_t flags,
		    const struct d_cred *cred, bool check_file, char *msg,
		    size_t msgsize)
{
	char via[AR_SPEC_MAX + 32];
	int fd, ret;

	if (!hvt_proto_name_ok(name, (uint32_t)strlen(name))) {
		snprintf(msg, msgsize,
			 "'%s' is not a remote name: use 1..31 "
			 "of [A-Za-z0-9._-]",
			 name);
		return -EINVAL;
	}
	if (!*spec || strlen(spec) >= AR_SPEC_MAX) {
		snprintf(msg, msgsize, "give the area as PATH[@OFFSET[+SIZE]]");
		return -EINVAL;
	}
	if (flags & ~HVT_ATTACH_DISABLED) {
		snprintf(msg, msgsize, "attach flags 0x%x are not an area's",
			 flags);
		return -EINVAL;
	}
	if (!check_file || !cred || cred->root || cred->uid == geteuid())
		return 0;
	ret = access_area_open(cred, spec, &fd, via, sizeof(via), msg,
			       msgsize);
	if (!ret)
		close(fd);
	return ret;
}

int area_remote_check(const char *name, const char *spec, uint32_t flags,
		      const struct d_cred *cred, char *msg, size_t msgsize)
{
	return ar_check(name, spec, flags, cred, true, msg, msgsize);
}

static int ar_attach(const char *name, const char *spec, uint32_t flags,
		     const struct d_cred *cred, bool restored,
		     struct remote **out, char *msg, size_t msgsize)
{
	struct area_remote *ar;
	struct remote *r;
	int ret;

	ret = ar_check(name, spec, flags, cred, false, msg, msgsize);
	if (ret)
		return ret;
	if (remote_by_name(name)) {
		snprintf(msg, msgsize, "'%s' is attached already", name);
		return -EEXIST;
	}
	/* Refused now, not retried: the client sees why. */
	ret = ar_check(name, spec, flags, cred, true, msg, msgsize);
	if (ret)
		return ret;
	ar = calloc(1, sizeof(*ar));
	if (ar)
		ar->spec = strdup(spec);
	if (!ar || !ar->spec) {
		free(ar);
		snprintf(msg, msgsize, "out of memory");
		return -ENOMEM;
	}
	ar->flags = flags;
	ar->restored = restored;
	if (cred) {
		ar->cred = *cred;
	} else {	/* --attach-area: the daemon's own authority */
		ar->cred.uid = geteuid();
		ar->cred.gid = getegid();
		ar->cred.root = ar->cred.uid == 0;
	}
	ar->restricted = !ar->cred.root && ar->cred.uid != geteuid();
	ret = remote_add(&ar->r, name, &area_ops);
	if (ret) {
		free(ar->spec);
		free(ar);
		snprintf(msg, msgsize, "cannot create remote: %s",
			 strerror(-ret));
		return ret;
	}
	r = &ar->r;
	ret = ar_open(r);
	if (ret && r->state == HVT_REMOTE_MISSING) {
		ar->next_open_ms = d_now_ms() + ar->missing_gap_ms;
		snprintf(msg, msgsize, "'%s' is missing: %s", name,
			 ar->problem);
	} else if (ret) {
		ar->next_open_ms = d_now_ms() + AR_RETRY_MS;
		snprintf(msg, msgsize,
			 "attached '%s' (area %s: %s; retrying every second)",
			 name, spec,
			 ar->last_err[0] ? ar->last_err : strerror(-ret));
	} else {
		snprintf(msg, msgsize, "attached '%s' (area %s)", name, spec);
	}
	*out = r;
	return 0;
}

int area_remote_attach(const char *name, const char *spec, uint32_t flags,
		       const struct d_cred *cred,
		       struct remote **out, char *msg, size_t msgsize)
{
	return ar_attach(name, spec, flags, cred, false, out, msg, msgsize);
}

int area_remote_restore(const char *name, const char *spec,
			const struct d_cred *cred, struct remote **out,
			char *msg, size_t msgsize)
{
	return ar_attach(name, spec, 0, cred, true, out, msg, msgsize);
}

static void ar_free(struct remote *r)
{
	struct area_remote *ar = area_remote(r);

	hvtrace_catalog_free(&ar->cat);
	free(ar->on);
	free(ar->spec);
	free(ar);
}

/* One time-sync sample, as the writer allows; true when one was taken. */
static bool ar_sync_once(struct remote *r)
{
	uint64_t send, recv;

	if (r->info.writer_kind == HVT_WRITER_LOOPBACK && r->info.writer_pid &&
	    ar_writer_alive(r)) {
		/* A loopback writer runs on this host: its clock is ours
		 * to read, and that needs no answer. */
		if (!hvtrace_area_sync_local(r->area)) {
			r->sync_samples++;
			return true;
		}
	}
	send = d_now_ns();
	if (hvtrace_area_sync(r->area, AR_SYNC_WAIT_MS)) {
		r->sync_bad++;
		return false;
	}
	recv = d_now_ns();
	r->sync_samples++;
	r->sync_window_ns = recv - send;
	return true;
}

static void ar_sync(struct remote *r, uint64_t now)
{
	struct area_remote *ar = area_remote(r);
	uint64_t gap;

	if (r->state != HVT_REMOTE_CONNECTED) {
		ar->next_sync_ms = d_grid(now, AR_STATE_MS);
		return;
	}
	if (ar_sync_once(r)) {
		ar->sync_misses = 0;
		clocks_update(r); /* the refitted model to the subscribers */
	} else if (ar->sync_misses < 32) {
		ar->sync_misses++;
	}
	if (ar->burst_left) {
		ar->burst_left--;
		ar->next_sync_ms = now + 1;
		return;
	}
	gap = D->sync_interval_ms ? D->sync_interval_ms : 1000;
	/* A writer that does not answer is asked less and less often, so
	 * it costs the loop at most AR_SYNC_WAIT_MS per back-off period. */
	if (ar->sync_misses)
		gap <<= ar->sync_misses > 6 ? 6 : ar->sync_misses;
	if (gap > AR_SYNC_MAX_BACKOFF_MS)
		gap = AR_SYNC_MAX_BACKOFF_MS;
	ar->next_sync_ms = now + gap;
}

static void ar_tick(struct remote *r, uint64_t now, uint64_t *next)
{
	struct area_remote *ar = area_remote(r);
	uint32_t state = 0;
	uint64_t gen = 0;
	int ret;

	if (!r->area) {
		if (now >= ar->next_open_ms) {
			if (ar_open(r) && r->state == HVT_REMOTE_MISSING) {
				/* Backing off: 1, 2, 4 ... s, then every
				 * AR_MISSING_MAX_MS. */
				if (ar->missing_gap_ms < AR_MISSING_MAX_MS / 2)
					ar->missing_gap_ms *= 2;
				else
					ar->missing_gap_ms = AR_MISSING_MAX_MS;
				ar->next_open_ms = now + ar->missing_gap_ms;
			} else {
				ar->next_open_ms = now + AR_RETRY_MS;
			}
		}
		if (!r->area) {
			if (*next > ar->next_open_ms)
				*next = ar->next_open_ms;
			return;
		}
	}
	if (now >= ar->next_state_ms) {
		ar->next_state_ms = d_grid(now, AR_STATE_MS);
		ret = hvtrace_area_writer_state(r->area, &state, &gen);
		if (ret < 0) {
			d_log("remote '%s': %s; the area is dropped and "
			      "retried",
			      r->name, hvtrace_last_error());
			remote_close_area(r);
			r->state = HVT_REMOTE_WAITING;
			ar->next_open_ms = now + AR_RETRY_MS;
			if (*next > ar->next_open_ms)
				*next = ar->next_open_ms;
			return;
		}
		if (ret == 1) {
			d_log("remote '%s': the writer formatted the area "
			      "again (generation %llu): re-attaching",
			      r->name, (unsigned long long)gen);
			if (ar_open(r)) {
				remote_close_area(r);
				r->state = HVT_REMOTE_WAITING;
				ar->next_open_ms = now + AR_RETRY_MS;
				return;
			}
		} else {
			ar_set_state(r, state);
		}
	}
	if (now >= ar->next_sync_ms)
		ar_sync(r, d_now_ms());
	if (*next > ar->next_state_ms)
		*next = ar->next_state_ms;
	if (*next > ar->next_sync_ms)
		*next = ar->next_sync_ms;
}

static const struct remote_ops area_ops = {
	.transport = HVT_TRANSPORT_AREA,
	.name = "area",
	.attached_as = "the area",
	.control = ar_control,
	.area_path = ar_spec,
	.where = ar_spec,
	.save = ar_save,
	.problem = ar_problem,
	.tick = ar_tick,
	.free = ar_free,
	.catalog = ar_catalog,
	.event_on = ar_event_on,
	.set_event = ar_set_event,
};
