// SPDX-License-Identifier: MIT
/*
 * The guest kernel's own ring of a remote NAME, for the verbs that read
 * remotes (stream, record, mount): its formats, and the ring beside them.
 *
 * A rig guest started with --kernel-events keeps its kernel's ftrace ring
 * in its RAM file (or in agent copy mode, its agent copies the kernel's
 * pages into its area's kernel section).  hvtraced reads those pages
 * itself and serves them beside the guest's own CPUs
 * (hvtrace_daemon_kring_served(), hvtrace_daemon_kring_open_served()), so
 * that the verbs of one guest read the same pages at once and none opens
 * its files; with an hvtraced that does not serve them the verbs read the
 * guest's user events alone.
 * Its formats come from hvtraced: what the guest's agent sent, in its
 * formats cache, whose folder it names (hvtrace_daemon_kformats_dir());
 * the cache is per kernel build, so this boot's trace_clock,
 * saved_cmdlines and module symbols come beside it from the agent's
 * files of this boot that hvtraced keeps (TEXT KBOOT_*; ck_boot_files()),
 * all in a private folder that lives as long as the ring is read.  Only
 * with an older agent or hvtraced do they come from the guest's console:
 * the guest printed them at boot, and the rig's launcher unpacks them
 * (hvtrace-guest kformats NAME DIR) into that folder, the agent's upload
 * over them (hvt_cli_kformats_overlay()).  The ring joins the remote's
 * user events only when its trace clock is mono, the clock of the
 * guest's agent, so that both go through hvtraced's model of that clock
 * (sent ahead of the remote's pages as CLOCK, applied by the reader);
 * otherwise it is left out and stderr says why.  In agent copy mode the
 * formats and the clock rule are the same.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hvtrace.h>
#include <hvtrace-daemon.h>

#include "cli.h"

#define CK_PREFIX "hvtrace-kformats."

static const char *ck_tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t && t[0] == '/' ? t : "/tmp";
}

/* Whether @dir is one of our private folders (never hvtraced's cache). */
static bool ck_private(const char *dir)
{
	const char *t = ck_tmpdir();
	size_t n = strlen(t);

	return !strncmp(dir, t, n) && dir[n] == '/' &&
	       !strncmp(dir + n + 1, CK_PREFIX, strlen(CK_PREFIX)) &&
	       !strchr(dir + n + 1, '/');
}

void hvt_cli_kformats_tmp_rm(const char *dir)
{
	char *argv[] = {"rm", "-rf", (char *)dir, NULL};

	if (dir[0] && ck_private(dir))
		hvt_cli_run(argv, NULL);
}

/*
 * The private folders of hvtrace processes that are gone (killed before
 * they removed theirs): ours (same owner), named with a pid that no
 * process has.  A folder of a live process, or of another user, stays.
 */
static void ck_sweep(void)
{
	const char *t = ck_tmpdir();
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(t);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, CK_PREFIX, strlen(CK_PREFIX)))
			continue;
		pid = strtol(de->d_name + strlen(CK_PREFIX), &end, 10);
		if (end == de->d_name + strlen(CK_PREFIX) || *end != '.' ||
		    pid <= 0 || pid == getpid() || pid > INT_MAX)
			continue;
		if (!kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", t, de->d_name) >=
			    (int)sizeof(path) ||
		    lstat(path, &st) || !S_ISDIR(st.st_mode) ||
		    st.st_uid != geteuid())
			continue;
		hvt_cli_kformats_tmp_rm(path);
	}
	closedir(d);
}

int hvt_cli_kformats_tmp(char *buf, size_t size)
{
	ck_sweep();
	if (snprintf(buf, size, "%s/" CK_PREFIX "%d.XXXXXX", ck_tmpdir(),
		     (int)getpid()) >= (int)size) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(buf)) {
		buf[0] = '\0';
		return -errno;
	}
	return 0;
}

/*
 * The agent's formats (hvtraced's cache: one folder per kernel build) with
 * this boot's own trace_clock and saved_cmdlines from the console dump in
 * @formats: every other entry of the dump is replaced by a link into the
 * cache folder, so events enabled later (not in the dump) decode too.
 */
int hvt_cli_kformats_overlay(const char *agent, const char *formats)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(agent);
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		char *argv[] = {"rm", "-rf", dst, NULL};

		if (de->d_name[0] == '.' ||
		    !strcmp(de->d_name, "trace_clock") ||
		    !strcmp(de->d_name, "saved_cmdlines"))
			continue;
		if (snprintf(src, sizeof(src), "%s/%s", agent, de->d_name) >=
			    (int)sizeof(src) ||
		    snprintf(dst, sizeof(dst), "%s/%s", formats, de->d_name) >=
			    (int)sizeof(dst)) {
			ret = -ENAMETOOLONG;
			break;
		}
		hvt_cli_run(argv, NULL);
		if (symlink(src, dst))
			ret = -errno;
	}
	closedir(d);
	return ret;
}

/*
 * What hvtraced says of @remote's agent's files (TEXT @kind, or with
 * @kind 0 the folder of its formats), waiting at most CK_AGENT_WAIT_MS
 * while it says they are on their way (a guest that just started sends
 * them at the start of its agent's session, in about a second under TCG).
 */
#define CK_AGENT_WAIT_MS 30000

static int ck_agent_get(struct hvtrace_daemon *dc, uint32_t remote,
			uint32_t kind, char **text, size_t *len, char *dir,
			size_t dir_size)
{
	int ret, waited = 0;

	for (;;) {
		ret = kind ? hvtrace_daemon_get_text(dc, remote, kind, text,
						     len)
			   : hvtrace_daemon_kformats_dir(dc, remote, dir,
							 dir_size);
		if (ret != -EAGAIN || waited >= CK_AGENT_WAIT_MS)
			return ret;
		usleep(50 * 1000);
		waited += 50;
	}
}

static int ck_write(const char *dir, const char *name, const char *text,
		    size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	int ret = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "wxe");
	if (!f)
		return -errno;
	if (len && fwrite(text, 1, len, f) != len)
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

/*
 * The formats in private folder @formats from hvtraced alone: the agent's
 * upload (folder @agent of its cache) with this boot's trace_clock,
 * saved_cmdlines and module kallsyms lines, as the agent sent them.  0, or
 * -errno when hvtraced has not them all (an older agent or hvtraced).
 */
static int ck_boot_files(struct hvtrace_daemon *dc, uint32_t remote,
			 const char *agent, const char *formats)
{
	static const struct {
		uint32_t kind;
		const char *name;
	} f[] = {
		{HVT_TEXT_KBOOT_CLOCK, "trace_clock"},
		{HVT_TEXT_KBOOT_CMDLINES, "saved_cmdlines"},
		{HVT_TEXT_KBOOT_MODSYMS, "kallsyms"},
	};
	char *text[3] = {NULL, NULL, NULL};
	size_t len[3], i;
	int ret = 0;

	for (i = 0; i < 3 && !ret; i++) {
		ret = ck_agent_get(dc, remote, f[i].kind, &text[i], &len[i],
				   NULL, 0);
		/* A file the guest lacked: none beside the formats. */
		if (ret == -ENODATA) {
			text[i] = NULL;
			ret = 0;
		}
	}
	if (!ret)
		ret = hvt_cli_kformats_overlay(agent, formats);
	for (i = 0; i < 3 && !ret; i++)
		if (text[i])
			ret = ck_write(formats, f[i].name, text[i], len[i]);
	for (i = 0; i < 3; i++)
		free(text[i]);
	return ret;
}

int hvt_cli_kring_open(const char *verb, struct hvtrace_daemon *dc,
		       uint32_t remote, const char *name, char *formats,
		       size_t size, struct hvtrace_daemon_kring **out)
{
	char launcher[PATH_MAX], *argv[5], *text = NULL;
	char clock[64], agent[PATH_MAX];
	const char *from = "its console";
	const char *what;
	bool have_agent;
	int rc, where;

	*out = NULL;
	formats[0] = '\0';
	/* hvtraced reads the pages itself: every tool of the guest reads
	 * the same pages, and none opens its files. */
	where = hvtrace_daemon_kring_served(dc, remote);
	if (where < 0) {
		/* A description of its CPUs this library cannot read. */
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's ring of '%s' is "
			"left out: %s\n",
			verb, name, hvtrace_last_error());
		return 0;
	}
	if (!where)
		return 0; /* none served: user events only */
	what = where == 2 ? "pages" : "ring";
	have_agent =
		!ck_agent_get(dc, remote, 0, NULL, NULL, agent, sizeof(agent));
	/* The cache's formats are a kernel build's; its trace clock, comms
	 * and modules are this boot's: hvtraced has them from the agent. */
	rc = hvt_cli_kformats_tmp(formats, size);
	if (!rc && have_agent && !ck_boot_files(dc, remote, agent, formats)) {
		from = "hvtraced: its agent's, with this boot's clock, comms "
		       "and module symbols";
		goto clock;
	}
	/* An older agent or hvtraced: the console's dump, by the launcher,
	 * in a folder of its own. */
	hvt_cli_kformats_tmp_rm(formats);
	if (!rc)
		rc = hvt_cli_kformats_tmp(formats, size);
	if (rc)
		return hvt_cli_error(verb,
				     "cannot make a folder for the "
				     "guest kernel's formats in %s: %s",
				     ck_tmpdir(), strerror(-rc));
	hvt_cli_launcher(launcher, sizeof(launcher));
	argv[0] = launcher;
	argv[1] = "kformats";
	argv[2] = (char *)name;
	argv[3] = formats;
	argv[4] = NULL;
	rc = hvt_cli_run(argv, &text);
	free(text);
	if (have_agent && !rc && !hvt_cli_kformats_overlay(agent, formats)) {
		from = "its agent, with this boot's clock and comms from its "
		       "console";
	} else if (have_agent && rc && where == 2) {
		/* Copy mode: the kernel section's header names the clock. */
		hvt_cli_kformats_tmp_rm(formats);
		if ((size_t)snprintf(formats, size, "%s", agent) >= size)
			goto none;
		from = "its agent";
		goto open;
	} else if (have_agent && rc) {
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's ring of '%s' is "
			"left out: this boot's trace clock is not known (its "
			"console has no formats dump; hvtraced's cache holds "
			"those of the kernel build, not of a boot)\n",
			verb, name);
		goto none;
	}
clock:
	if (rc || !hvt_cli_ring_clock_mono(formats, clock, sizeof(clock))) {
		const char *shm = getenv("HVT_SHM_DIR");

		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's %s of '%s' "
			"is left out: %s",
			verb, what, name,
			rc ? "its formats are not on its console"
			   : "its clock is not mono, the agent's");
		if (where == 2)
			fprintf(stderr, "\n");
		else
			fprintf(stderr,
				" (its RAM file, read by its path, gives its "
				"own times: hvtrace stream "
				"%s/hvtrace-%s.ram)\n",
				shm && *shm ? shm : "/dev/shm", name);
		goto none;
	}
open:
	if (hvtrace_daemon_kring_open_served(dc, remote, formats, out)) {
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's %s of '%s' "
			"is left out: %s\n",
			verb, what, name, hvtrace_last_error());
		goto none;
	}
	if (!*out)
		goto none; /* hvtraced serves them no more */
	if (!hvt_cli_kring_quiet)
		fprintf(stderr,
			"hvtrace %s: '%s': the guest kernel's %s (%u CPUs) "
			"%s (formats from %s; its pages through hvtraced)\n",
			verb, name,
			hvtrace_daemon_kring_copied(*out)
				? "pages, copied by its agent (kernel copy "
				  "mode)"
				: "ring",
			hvtrace_daemon_kring_cpus(*out),
			hvt_cli_kring_pair ? "in a guest file of its own, on "
					     "the guest's clock"
			: hvt_cli_kring_alone
				? "alone, on the host's clock"
				: "beside its user events, on the "
				  "host's clock",
			from);
	return 0;
none:
	hvt_cli_kformats_tmp_rm(formats);
	formats[0] = '\0';
	return 0;
}

/* The clock a guest's formats folder's trace_clock marks; is it mono? */
bool hvt_cli_ring_clock_mono(const char *dir, char *clock, size_t len)
{
	char path[PATH_MAX], buf[512], *b, *e;
	size_t n;
	FILE *f;

	snprintf(clock, len, "local (the instance's default)");
	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/trace_clock", dir);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	b = strchr(buf, '[');
	e = b ? strchr(b, ']') : NULL;
	if (!b || !e)
		return false;
	snprintf(clock, len, "%.*s", (int)(e - b - 1), b + 1);
	return !strcmp(clock, "mono");
}

bool hvt_cli_kring_quiet;
bool hvt_cli_kring_pair;
bool hvt_cli_kring_alone;

void hvt_cli_kring_ksyms(const char *verb, struct hvtrace_decoder *dec,
			 struct hvtrace_kring *k)
{
	if (!dec)
		return;
	if (!k) {
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's function names "
			"print in hex: in kernel copy mode there is no guest "
			"RAM to read its symbols from\n",
			verb);
		return;
	}
	if (hvtrace_decoder_ksyms_from_kring(dec, k, NULL) < 0)
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's function names "
			"print in hex (never the host's): %s\n",
			verb, hvtrace_last_error());
}

void hvt_cli_kring_names(const char *verb, struct hvtrace_daemon *dc,
			 uint32_t remote, struct hvtrace_daemon_kring *kr)
{
	struct hvtrace_decoder *dec = hvtrace_daemon_kring_decoder(kr);

	/* Copy mode: no guest RAM to read them from (the note says so). */
	if (hvtrace_daemon_kring_copied(kr)) {
		hvt_cli_kring_ksyms(verb, dec, NULL);
		return;
	}
	/* Ring mode: hvtraced read the symbols in guest RAM. */
	if (hvtrace_daemon_ksyms_load(dc, remote, dec))
		fprintf(stderr,
			"hvtrace %s: note: the guest kernel's function names "
			"print in hex (never the host's): %s\n",
			verb, hvtrace_last_error());
}

int hvt_cli_kring_of(const char *verb, const char *name, const char *sock,
		     char *formats, size_t size,
		     struct hvtrace_daemon_kring **out)
{
	struct hvtrace_daemon *dc = NULL;
	struct hvt_remote_rec rec;
	int ret;

	*out = NULL;
	formats[0] = '\0';
	if (hvtrace_daemon_open(sock, &dc) ||
	    hvtrace_daemon_find_remote(dc, name, &rec)) {
		ret = hvt_cli_error(verb, "%s", hvtrace_last_error());
		hvtrace_daemon_close(dc);
		return ret;
	}
	ret = hvt_cli_kring_open(verb, dc, rec.id, name, formats, size, out);
	hvtrace_daemon_close(dc);
	return ret;
}

void hvt_cli_kring_close(struct hvtrace_daemon_kring *r, char *formats)
{
	hvtrace_daemon_kring_close(r);
	if (formats) {
		hvt_cli_kformats_tmp_rm(formats);
		formats[0] = '\0';
	}
}
