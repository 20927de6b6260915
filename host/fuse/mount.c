// SPDX-License-Identifier: MIT
/*
 * libhvtrace: mounting the tracefs-style view and taking it down.
 *
 *   start     the sources (hvtraced, --area files), the file system,
 *             fuse_session_mount() at the mount point, the watcher
 *   serve     libfuse's multi-threaded loop; reads that wait are parked
 *             and hold no thread, so the loop always has one for new
 *             requests and for interrupts
 *   stop      SIGINT, SIGTERM or SIGHUP (libfuse's handlers end the
 *             loop), an unmount from outside (fusermount3 -u: the loop
 *             ends by itself), or a lazy unmount (fusermount3 -uz) that
 *             the watcher notices in /proc/self/mountinfo while a file is
 *             still open; then every parked read gets the end of file,
 *             the mount is detached (lazily, if a reader still holds a
 *             file), the sources stop and the session closes, which ends
 *             any request the kernel still has for us.
 *
 * Only libfuse's threads take the stop signals: every other thread starts
 * with them blocked, so a signal always interrupts the loop.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "fuse-local.h"

struct fz_watch {
	pthread_t thr;
	volatile int stop;
	char mnt[PATH_MAX];
};

/* Is @mnt mounted as our file system?  (/proc/self/mountinfo.) */
static int fz_still_mounted(const char *mnt)
{
	char line[4096], point[PATH_MAX];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = line, *dash, *fstype;
		int field;

		/* id parent major:minor root MOUNTPOINT ... - TYPE ... */
		for (field = 0; field < 4 && p; field++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		dash = strstr(line, " - ");
		if (!p || !dash)
			continue;
		{
			/* Unescape \040 and friends. */
			size_t i = 0;

			while (*p && *p != ' ' && i < sizeof(point) - 1) {
				if (p[0] == '\\' && p[1] >= '0' &&
				    p[1] <= '7' && p[2] >= '0' && p[2] <= '7' &&
				    p[3] >= '0' && p[3] <= '7') {
					point[i++] = (char)((p[1] - '0') * 64 +
							    (p[2] - '0') * 8 +
							    (p[3] - '0'));
					p += 4;
				} else {
					point[i++] = *p++;
				}
			}
			point[i] = '\0';
		}
		fstype = dash + 3;
		if (!strcmp(point, mnt) &&
		    !strncmp(fstype, "fuse.hvtrace ", 13))
			found = 1;
	}
	fclose(f);
	return found;
}

static void *fz_watch_thread(void *arg)
{
	struct fz_watch *w = arg;

	while (!w->stop) {
		struct timespec ts = {0, 200000000};

		nanosleep(&ts, NULL);
		if (!w->stop && fz_still_mounted(w->mnt) == 0) {
			/* Unmounted behind our back (fusermount3 -uz with a
			 * file open): end the loop as a signal would. */
			kill(getpid(), SIGTERM);
			break;
		}
	}
	return NULL;
}

static void fz_block_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

int hvtrace_fuse_run(const struct hvtrace_fuse_options *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config cfg;
	struct fuse_session *se = NULL;
	struct fz_daemon *dmn = NULL;
	struct fz_areas *areas = NULL;
	struct fz_watch watch;
	struct fz_view v;
	sigset_t old;
	bool mounted = false, handlers = false, watching = false;
	char optstr[256];
	int ret;

	memset(&watch, 0, sizeof(watch));
	if (!realpath(o->mountpoint, watch.mnt))
		return hvt_err(-errno, "mount point %s: %s", o->mountpoint,
			       strerror(errno));
	fz_view_init(&v);
	ret = fz_fs_init(&v);
	if (ret) {
		fz_view_fini(&v);
		return hvt_err(ret, "out of memory");
	}
	/* Our threads never take the stop signals: libfuse's loop must. */
	fz_block_signals(&old);
	if (!o->no_daemon)
		ret = fz_daemon_start(&v, o, &dmn);
	if (!ret && o->nr_areas)
		ret = fz_areas_start(&v, o->areas, o->nr_areas, &areas);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		goto out;

	/* Other users are let in only with the kernel checking the file
	 * modes (0640/0440, the mounting user's): the view itself does not. */
	snprintf(optstr, sizeof(optstr), "fsname=hvtrace,subtype=hvtrace%s",
		 o->allow_other ? ",allow_other,default_permissions" : "");
	if (fuse_opt_add_arg(&args, "hvtrace") ||
	    fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, optstr) ||
	    (o->debug && fuse_opt_add_arg(&args, "-d"))) {
		ret = hvt_err(-ENOMEM, "out of memory");
		goto out;
	}
	se = fuse_session_new(&args, fz_fs_ops(),
			      sizeof(struct fuse_lowlevel_ops), &v);
	if (!se) {
		ret = hvt_err(-EINVAL, "cannot start a FUSE session (see the "
				       "message above)");
		goto out;
	}
	if (fuse_set_signal_handlers(se)) {
		ret = hvt_err(-EIO, "cannot install the signal handlers");
		goto out;
	}
	handlers = true;
	if (fuse_session_mount(se, watch.mnt)) {
		ret = hvt_err(-EIO,
			      "cannot mount on %s (see the message above): is "
			      "/dev/fuse there and usable, is the directory "
			      "empty and not mounted already?",
			      watch.mnt);
		goto out;
	}
	mounted = true;
	fz_block_signals(&old);
	ret = pthread_create(&watch.thr, NULL, fz_watch_thread, &watch);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		ret = hvt_err(-ret, "cannot start a thread");
		goto out;
	}
	watching = true;
	if (o->ready)
		o->ready(o->ready_arg);

	memset(&cfg, 0, sizeof(cfg));
	cfg.clone_fd = 0;
	cfg.max_idle_threads = 10;
	ret = fuse_session_loop_mt(se, &cfg);
	ret = ret < 0 ? hvt_err(ret, "the FUSE loop failed: %s", strerror(-ret))
		      : 0;
out:
	/* Parked reads end first (the session can still answer them). */
	pthread_mutex_lock(&v.lock);
	v.shutdown = true;
	fz_fs_release_waiters(&v);
	pthread_cond_broadcast(&v.cond);
	pthread_mutex_unlock(&v.lock);
	if (watching) {
		watch.stop = 1;
		pthread_join(watch.thr, NULL);
	}
	if (mounted)
		fuse_session_unmount(se);
	if (handlers)
		fuse_remove_signal_handlers(se);
	fz_daemon_stop(dmn);
	fz_areas_stop(areas);
	if (se)
		fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	fz_fs_fini(&v);
	fz_view_fini(&v);
	return ret;
}
