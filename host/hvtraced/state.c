// SPDX-License-Identifier: MIT
/*
 * hvtraced: what it had attached, kept across a restart.
 *
 * Guests attached by name and areas attached alone do not come back by
 * themselves (a local agent reconnects on its own), so the daemon keeps
 * the list in RUN_DIR/hvtraced.state, mode 0600, one entry a line:
 *
 *   guest<TAB>NAME[<TAB>UID]
 *   area<TAB>NAME<TAB>uid=UID,gid=GID,groups=G1:G2:...<TAB>PATH[@OFFSET[+SIZE]]
 *
 * It is rewritten (a temporary file, then rename()) whenever a remote
 * comes or goes, but not while the daemon shuts down, so that the next
 * start finds what was attached when it stopped and attaches it again
 * (logging each; a guest whose QEMU control socket is gone is skipped;
 * an area whose file is gone is "missing": area_remote.c).  The areas' control pages carry each reader's position
 * (struct hvt_ctrl_pos), so the new daemon resumes reading where the old
 * one stopped.  The file is read back only if it is a regular file of
 * this user that nobody else can write, and every entry goes through the
 * same validation as an ATTACH request.
 *
 * An area is attached again as the client that attached it (uid, gid and
 * groups on its line), never with the daemon's own authority unless that
 * client was root or the daemon's user: its file is checked as that
 * client's ATTACH_AREA would be (access.c), on this attach and on every
 * later re-open, so a path changed while the daemon was down (a link in a
 * component, another file) is refused.  A line without the requester (an
 * older daemon's) is not attached: the log says to attach it again.
 *
 * A guest's UID is the user whose tool attached it: its area file may
 * be that user's (chardev.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

#define STATE_FILE	"hvtraced.state"
#define STATE_MAX	(1u << 20)	/* bytes read back */

static void state_path(char *buf, size_t size, const char *suffix)
{
	snprintf(buf, size, "%s/%s%s", D->run_dir, STATE_FILE, suffix);
}

void state_save(void)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	struct remote *r;
	FILE *f;
	int fd;

	if (!D->state_dirty || D->stop)
		return;
	D->state_dirty = false;
	state_path(path, sizeof(path), "");
	state_path(tmp, sizeof(tmp), ".tmp");
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		d_log("cannot write %s: %s; what is attached will not be "
		      "attached again after a restart",
		      tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	for (r = D->remotes; r; r = r->next)
		if (r->ops->save)
			r->ops->save(r, f);
	if (fclose(f) || rename(tmp, path)) {
		d_log("cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
	}
}

static char *state_read(const char *path)
{
	struct stat st;
	char *buf;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			d_log("cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) ||
	    st.st_size > STATE_MAX) {
		d_log("ignoring %s: not a regular file of this user with mode "
		      "0600 (at most %u bytes); remove it",
		      path, STATE_MAX);
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return NULL;
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	return buf;
}

/* A guest still runs while QEMU's control socket is there. */
static bool state_guest_alive(const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (!hvt_proto_name_ok(name, (uint32_t)strlen(name)))
		return false;
	snprintf(path, sizeof(path), "%s/%s/control.sock", D->run_dir, name);
	return !lstat(path, &st) && S_ISSOCK(st.st_mode);
}

/* "uid=U,gid=G,groups=A:B:C" (groups may be empty); 0 or -EINVAL. */
static int state_parse_cred(const char *s, struct d_cred *cr)
{
	unsigned long v;
	char *end;

	memset(cr, 0, sizeof(*cr));
	if (strncmp(s, "uid=", 4))
		return -EINVAL;
	errno = 0;
	v = strtoul(s + 4, &end, 10);
	if (errno || end == s + 4 || v > (uid_t)-2 || strncmp(end, ",gid=", 5))
		return -EINVAL;
	cr->uid = (uid_t)v;
	s = end + 5;
	v = strtoul(s, &end, 10);
	if (errno || end == s || v > (gid_t)-2 ||
	    strncmp(end, ",groups=", 8))
		return -EINVAL;
	cr->gid = (gid_t)v;
	for (s = end + 8; *s; s = *end ? end + 1 : end) {
		if (cr->nr_groups == D_CRED_GROUPS)
			return -EINVAL;
		v = strtoul(s, &end, 10);
		if (errno || end == s || v > (gid_t)-2 ||
		    (*end && *end != ':') || (*end == ':' && !end[1]))
			return -EINVAL;
		cr->groups[cr->nr_groups++] = (gid_t)v;
	}
	cr->root = cr->uid == 0;
	return 0;
}

void state_restore(void)
{
	char path[PATH_MAX], msg[1024], *buf, *line, *save;
	struct remote *r;

	state_path(path, sizeof(path), "");
	buf = state_read(path);
	if (!buf)
		return;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *name = strchr(line, '\t'), *spec = NULL, *who = NULL;
		uid_t owner = (uid_t)-1;
		struct d_cred cred;
		int ret;

		if (!name)
			continue;
		*name++ = '\0';
		if (!strcmp(line, "area")) {
			who = strchr(name, '\t');
			if (!who)
				continue;
			*who++ = '\0';
			spec = strchr(who, '\t');
			if (spec)
				*spec++ = '\0';
		} else if (strcmp(line, "guest")) {
			continue;
		} else if ((spec = strchr(name, '\t'))) {
			/* guest NAME UID: the area's trusted owner. */
			char *end;
			unsigned long u;

			*spec++ = '\0';
			errno = 0;
			u = strtoul(spec, &end, 10);
			if (errno || end == spec || *end || u >= (uid_t)-1)
				continue;
			owner = (uid_t)u;
			spec = NULL;
		}
		if (remote_by_name(name))
			continue;	/* attached by an option already */
		if (who && !spec) {
			/* An older daemon's line: no one to attach it as. */
			d_log("not attaching area '%s' (%s) again: %s does not "
			      "say who attached it (written by an older "
			      "hvtraced); attach it again ('hvtrace daemon "
			      "attach --area %s --name %s')",
			      name, who, path, who, name);
			continue;
		}
		if (who && state_parse_cred(who, &cred)) {
			d_log("not attaching area '%s' again: bad requester "
			      "'%s' in %s",
			      name, who, path);
			continue;
		}
		if (who && access_cred_restore(&cred, msg, sizeof(msg))) {
			d_log("not attaching area '%s' (%s) again: %s", name,
			      spec, msg);
			continue;
		}
		if (!spec && !state_guest_alive(name)) {
			d_log("not attaching guest '%s' again: its control "
			      "socket is gone (the guest stopped)",
			      name);
			continue;
		}
		/* An area as the client that attached it, checked again
		 * as its ATTACH_AREA was (access.c): the path may lead
		 * elsewhere by now. */
		ret = spec ? area_remote_restore(name, spec, &cred, &r, msg,
						 sizeof(msg)) :
			     remote_attach_chardev(name, owner, &r, msg,
						   sizeof(msg));
		if (ret && spec)
			d_log("could not attach area '%s' again as uid %u, "
			      "who attached it (it was attached when hvtraced "
			      "stopped, %s): %s",
			      name, (unsigned int)cred.uid, path, msg);
		else if (ret)
			d_log("could not attach %s '%s' again (it was "
			      "attached when hvtraced stopped, %s): %s",
			      line, name, path, msg);
		else if (spec && area_remote_stale(r))
			;	/* its file is gone: area_remote.c said so */
		else if (spec)
			d_log("attached area '%s' again as uid %u (it was "
			      "attached when hvtraced stopped, %s): %s",
			      name, (unsigned int)cred.uid, path, msg);
		else
			d_log("attached %s '%s' again (it was attached when "
			      "hvtraced stopped, %s)",
			      line, name, path);
	}
	free(buf);
	state_changed();
}
