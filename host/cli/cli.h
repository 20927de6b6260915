/* SPDX-License-Identifier: MIT */
/*
 * hvtrace CLI plumbing.  Each verb lives in host/cli/cmd_VERB.c and
 * registers itself with HVT_CLI_COMMAND(); main.c finds every registered
 * verb through the linker section, so adding a verb touches no shared file.
 */
#ifndef HVT_CLI_H
#define HVT_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct hvt_cli_cmd {
	const char *name;
	const char *summary;	/* one line for 'hvtrace --help' */
	const char *usage;	/* full text for 'hvtrace VERB --help' */
	int (*run)(int argc, char **argv);	/* argv[0] is the verb */
};

#define HVT_CLI_COMMAND(ident, name_, summary_, usage_, fn)                   \
	static const struct hvt_cli_cmd hvt_cli_cmd_##ident                   \
		__attribute__((used, section("hvt_cli_cmds"),                 \
			       aligned(sizeof(void *)))) = {                  \
			.name = name_,                                        \
			.summary = summary_,                                  \
			.usage = usage_,                                      \
			.run = fn,                                            \
		}

/* Conventional exit codes (sysexits-like). */
#define HVT_EXIT_OK		0
#define HVT_EXIT_FAIL		1	/* the operation failed */
#define HVT_EXIT_USAGE		2	/* bad command line */

/* Print "hvtrace VERB: message" to stderr; returns HVT_EXIT_FAIL. */
int hvt_cli_error(const char *verb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print usage error plus a hint to run --help; returns HVT_EXIT_USAGE. */
int hvt_cli_usage(const char *verb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * After getopt_long() returned '?' or ':' (the option string starting with
 * ':' and opterr 0): print "unknown option 'X'" or "option 'X' needs a
 * value" as every verb does; returns HVT_EXIT_USAGE.
 */
int hvt_cli_bad_option(const char *verb, char **argv, int c);

/* 1 if argv has -h or --help (before "--"). */
int hvt_cli_wants_help(int argc, char **argv);

/* Print the usage text of a verb to stdout. */
void hvt_cli_print_usage(const char *verb);

/* Parse an unsigned number with an optional K/M/G suffix (1024-based).
 * Returns 0 or -EINVAL / -ERANGE. */
int hvt_cli_parse_u64(const char *s, unsigned long long *out);

/* Parse --reader-threads: "auto" (0) or 1..256; 0 or -EINVAL. */
int hvt_cli_parse_reader_threads(const char *s, unsigned int *out);

/* Parse a process id (decimal, above 0); returns 0 or -EINVAL. */
int hvt_cli_parse_pid(const char *s, int *out);
/* The trace clock a guest kernel's formats folder names (its
 * trace_clock file) into @clock; true when it is mono (daemon_kring.c). */
bool hvt_cli_ring_clock_mono(const char *dir, char *clock, size_t len);
/*
 * The guest kernel's ring of remote @name, id @remote on @dc
 * (daemon_kring.c): its formats -- the folder hvtraced keeps from the
 * guest's agent, else unpacked from the guest's console into a private
 * folder; either way its path is in @formats (@size: PATH_MAX) -- and the
 * ring: the pages hvtraced serves (hvtrace_daemon_kring_open_served()).
 * Returns 0 with *@out NULL when hvtraced serves none or it cannot join (a
 * note on stderr says why), 0 with *@out set, or an exit code.
 * hvt_cli_kring_close() removes a private folder, never hvtraced's cache.
 */
struct hvtrace_daemon;
struct hvtrace_daemon_kring;
int hvt_cli_kring_open(const char *verb, struct hvtrace_daemon *dc,
		       uint32_t remote, const char *name, char *formats,
		       size_t size, struct hvtrace_daemon_kring **out);
/*
 * Turn @formats, a guest's console dump, into the agent's formats folder
 * @agent (linked) with the dump's own trace_clock and saved_cmdlines:
 * the cache is per kernel build, those two are per boot.  0 or -errno.
 */
int hvt_cli_kformats_overlay(const char *agent, const char *formats);
/* The same, for a verb without a daemon connection of its own. */
int hvt_cli_kring_of(const char *verb, const char *name, const char *sock,
		     char *formats, size_t size,
		     struct hvtrace_daemon_kring **out);
void hvt_cli_kring_close(struct hvtrace_daemon_kring *r, char *formats);
/*
 * A private folder (mode 0700) for a guest's console formats,
 * $TMPDIR/hvtrace-kformats.PID.XXXXXX (default /tmp), in @buf.  Such
 * folders of processes that are gone (a killed hvtrace) are removed
 * first.  0 or -errno.
 */
int hvt_cli_kformats_tmp(char *buf, size_t size);
/* Remove @dir if it is such a folder; anything else is left alone. */
void hvt_cli_kformats_tmp_rm(const char *dir);
/*
 * The guest kernel's function names for decoder @dec of a ring in guest
 * RAM @k (NULL: none, as in kernel copy mode): the table read from that
 * RAM (hvtrace_decoder_ksyms_from_kring()), once per open; when none can
 * be read, one note on stderr says why the addresses print in hex.
 */
struct hvtrace_decoder;
struct hvtrace_kring;
void hvt_cli_kring_ksyms(const char *verb, struct hvtrace_decoder *dec,
			 struct hvtrace_kring *k);
/* The same for the guest kernel ring @kr of remote @remote on @dc: the
 * symbols hvtraced read in guest RAM (TEXT KALLSYMS); in kernel copy mode
 * there are none, and the note says so. */
void hvt_cli_kring_names(const char *verb, struct hvtrace_daemon *dc,
			 uint32_t remote, struct hvtrace_daemon_kring *kr);
/* record -q: hvt_cli_kring_open() leaves out its informational line (the
 * notes of a ring left out are still said). */
extern bool hvt_cli_kring_quiet;
/* record --pair: the ring goes to a guest file (said so in that line). */
extern bool hvt_cli_kring_pair;
/* stream NAME --guest-kernel: the ring is read alone (said so too). */
extern bool hvt_cli_kring_alone;

/*
 * The formats cache's folder of the guest kernel whose RAM @ram holds
 * (kformats_cache.c): by the release of its banner, confirmed by its build
 * id in RAM, else the console's folder of its version line.  Of the guests'
 * uploads only @remote's count (NULL: the guest whose name the RAM file
 * has, hvtrace-NAME.ram, or every guest's when it has none).  0 with @dir
 * set (stderr says which), -ENOENT when the cache has none, -EEXIST or
 * -ESRCH when it has some but none can be chosen (stderr says why).
 */
#define HVT_CLI_RELEASE_MAX	64
int hvt_cli_kformats_cached(const char *verb, const char *ram,
			    const char *remote, char *dir, size_t dirsize);
/*
 * The same for a guest kernel known by its symbol table's info
 * (hvtrace_ksyms_from_kring(): the vmcoreinfo's release and build id, its
 * banner), with no scan of its RAM (for --vm-pid, whose untouched memory
 * a scan would populate).
 */
struct hvtrace_ksyms_info;
int hvt_cli_kformats_of_kernel(const char *verb,
			       const struct hvtrace_ksyms_info *ki,
			       const char *remote, char *dir, size_t dirsize);
/* The same for the guest kernel whose RAM @k reads: its symbol table
 * (hvtrace_ksyms_from_kring()) says which kernel it is; a note on stderr
 * when it cannot. */
struct hvtrace_kring;
int hvt_cli_kformats_of_kring(const char *verb, struct hvtrace_kring *k,
			      const char *remote, char *dir, size_t dirsize);
/* The same for the VM whose VMM is process @pid (--vm-pid without
 * --formats); -ENOENT, silently, when its RAM cannot be opened: the
 * caller's own open of it says why. */
int hvt_cli_kformats_of_pid(const char *verb, int pid, char *dir,
			    size_t dirsize);

/*
 * --domain NAME: the pid of the QEMU of the running libvirt domain @name
 * (vm_domain.c), checked against its command line.  0 with @pid set, else
 * the exit status after saying why (no such domain, a stale pid file).
 */
int hvt_cli_domain_pid(const char *verb, const char *name, int *pid);

/* Parse seconds as a decimal ("1.5"); returns 0 or -EINVAL. */
int hvt_cli_parse_seconds(const char *s, double *out);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t hvt_cli_now_ns(void);

/*
 * The time to print for an event at host time @ns, +- @err_ns (0: exact;
 * UINT64_MAX: not on the host's clock), after the events @o has seen
 * (zeroed at first): no earlier than the latest time printed while their
 * error intervals overlap, so a refitted clock model never makes the
 * output go back in time (stream_order.c).
 */
struct hvt_cli_order {
	uint64_t ns;	 /* the latest time printed */
	uint64_t err_ns; /* ... its error bound */
};
uint64_t hvt_cli_order_time(struct hvt_cli_order *o, uint64_t ns,
			    uint64_t err_ns);

/* The SIGINT or SIGTERM (or SIGHUP) that asked a long-running verb to
 * stop, 0 before any; set by the handlers hvt_cli_catch_stop_signals()
 * installs (without SA_RESTART, so a blocking poll returns EINTR). */
extern volatile sig_atomic_t hvt_cli_stop_signal;
void hvt_cli_catch_stop_signals(bool hangup);

/* --- hvtrace record: what areas and remotes share (record_loop.c) ------- */

struct hvtrace_tracedat_record;

/* A started recording: of areas or of remotes, either with the host
 * kernel or not. */
struct hvt_cli_rec {
	struct hvtrace_tracedat_record *r;
	const char *path;	       /* the trace.dat */
	double duration;	       /* seconds, 0: none */
	unsigned long long max_events; /* 0: none */
	bool quiet;		       /* no status line */
	const char *errors_note;       /* after "malformed item(s) skipped" */
	bool say_clock;		       /* print the clock error bounds */
};

/* Ctrl-C, SIGTERM and SIGHUP end the recording, not the process. */

/*
 * Record until a signal, a limit or the end of every source, then stop,
 * report and finish the file (the recorder is gone after).  Returns the
 * exit code.
 */
int hvt_cli_rec_run(const struct hvt_cli_rec *rec);

/* --- the QEMU rig's launcher (launcher.c) -------------------------------- */

/* The directory this hvtrace binary lives in: 0 or -ENOENT. */
int hvt_cli_exe_dir(char *buf, size_t size);
/* A regular file we may execute. */
bool hvt_cli_executable(const char *path);
/*
 * The launcher: $HVT_GUEST_LAUNCHER, next to this binary, in
 * ../libexec/hvtrace, in $HVT_SRCTREE, in the source tree this was built
 * from, then "hvtrace-guest" for $PATH.  Returns 0, or -ENOENT when
 * $HVT_GUEST_LAUNCHER names no executable.  Sets $HVT_GUEST_PROG, so the
 * launcher's messages speak as "hvtrace guest".
 */
int hvt_cli_launcher(char *buf, size_t size);
/* Point the launcher at this build (HVT_OBJTREE) unless it is set. */
void hvt_cli_set_objtree(void);
/*
 * Run @argv (argv[0] through $PATH if it has no slash) and wait; with
 * @out, its stdout is collected (NUL-terminated, malloc'd, at most 256
 * KiB kept).  Returns the exit status, 128 + signal, or -errno.
 */
int hvt_cli_run(char *const argv[], char **out);
/*
 * The rig's QEMU of guest @name while it runs: the pid in
 * $HVT_RUNDIR/NAME/qemu.pid (default /run/hvtrace) when that process is
 * the guest's QEMU (comm "hvt-NAME", as the launcher names it), else 0.
 */
int hvt_cli_rig_qemu_pid(const char *name);

#endif
