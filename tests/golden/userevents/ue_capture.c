// SPDX-License-Identifier: MIT
/*
 * ue_capture - run a user_events command script against a real kernel.
 *
 * Runs inside the QEMU guest that capture.sh boots (statically linked, no
 * library beyond libc).  Reads COMMANDS, one per line, executes each against
 * /sys/kernel/tracing and appends "COMMAND LINE => RESULT" to
 * OUTDIR/results.txt, where RESULT is 0, a positive count, or the errno
 * name the kernel answered.  Commands:
 *
 *   dyn LINE             write(2) LINE (no newline) to dynamic_events
 *   trunc                open dynamic_events with O_TRUNC (release all)
 *   reg SLOT DEF         DIAG_IOCSREG DEF on user_events_data handle SLOT
 *                        (0..7, opened on first use) with a fresh enable
 *                        bit; the result is the write index
 *   del NAME             DIAG_IOCSDEL NAME on a fresh handle
 *   close SLOT           DIAG_IOCSUNREG every enable bit registered through
 *                        SLOT, then close it: drops every reference the
 *                        slot's registrations hold (a client that went away)
 *   settle               wait for the kernel's deferred event frees
 *   enable NAME 0|1      write to events/user_events/NAME/enable
 *   write SLOT NAME HEX  write(2) the write index of NAME in SLOT, then the
 *                        payload bytes given in hex
 *   copy PATH FILE       copy /sys/kernel/tracing/PATH to OUTDIR/FILE
 *   format NAME FILE     copy events/user_events/NAME/format
 *   raw FILE             copy the first page of per_cpu/cpu0/trace_pipe_raw
 *   sysctl NAME VALUE    write VALUE to /proc/sys/kernel/NAME
 *   limit N              set kernel.user_events_max to the number of events
 *                        that exist now plus N; the result is that value
 *
 * In arguments, \t \n \\ are escapes and {rep:N:C} stands for N copies of
 * the character C, so long and odd definitions fit on one line.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define TRACEFS "/sys/kernel/tracing"

/* include/uapi/linux/user_events.h (Linux 6.4+), not in Debian 12's
 * linux-libc-dev. */
struct ue_reg {
	uint32_t size;
	uint8_t enable_bit;
	uint8_t enable_size;
	uint16_t flags;
	uint64_t enable_addr;
	uint64_t name_args;
	uint32_t write_index;
} __attribute__((packed));

#define UE_IOC_MAGIC '*'
#define UE_IOCSREG _IOWR(UE_IOC_MAGIC, 0, struct ue_reg *)
#define UE_IOCSDEL _IOW(UE_IOC_MAGIC, 1, char *)

struct ue_unreg {
	uint32_t size;
	uint8_t disable_bit;
	uint8_t reserved;
	uint16_t reserved2;
	uint64_t disable_addr;
} __attribute__((packed));

#define UE_IOCSUNREG _IOW(UE_IOC_MAGIC, 2, struct ue_unreg *)

#define NR_SLOTS 8
#define MAX_REGS 256

struct slot_reg {
	char name[600];
	int write_index;
	unsigned int enable;	/* index into enable_words, as bits */
};

static int slot_fd[NR_SLOTS] = { -1, -1, -1, -1, -1, -1, -1, -1 };
static struct slot_reg slot_regs[NR_SLOTS][MAX_REGS];
static int slot_nregs[NR_SLOTS];
static uint32_t enable_words[MAX_REGS];
static unsigned int next_enable;
static const char *outdir;
static FILE *results;

/*
 * The kernel's answer by name.  An independent copy of the names
 * hvtrace_ue_errno_name() (host/userevents/ue_parse.c) gives, on purpose: this
 * program records the kernel's truth that the host registry is compared
 * against, so it shares no code with the code under test (and it links
 * nothing beyond libc).  An errno neither knows is written as "errnoN",
 * so a new kernel answer shows up in the golden diff instead of as
 * EUNKNOWN.
 */
static const char *errname(int e)
{
	static char buf[32];

	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case E2BIG: return "E2BIG";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case EMFILE: return "EMFILE";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case EADDRINUSE: return "EADDRINUSE";
	case ECANCELED: return "ECANCELED";
	}
	snprintf(buf, sizeof(buf), "errno%d", e);
	return buf;
}

/* Expand escapes in place-independent fashion into @out. */
static int expand(const char *in, char *out, size_t outlen)
{
	size_t o = 0;

	while (*in) {
		char c = *in++;
		long n;

		if (c == '\\' && *in) {
			c = *in++;
			if (c == 't')
				c = '\t';
			else if (c == 'n')
				c = '\n';
		} else if (c == '{' && !strncmp(in, "rep:", 4)) {
			char *end;

			n = strtol(in + 4, &end, 10);
			if (*end != ':' || !end[1] || end[2] != '}' || n < 0)
				return -1;
			while (n-- > 0) {
				if (o + 1 >= outlen)
					return -1;
				out[o++] = end[1];
			}
			in = end + 3;
			continue;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int copy_file(const char *src, const char *file, size_t limit)
{
	char path[1024], buf[4096];
	int in, out;
	size_t total = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_NONBLOCK);
	if (in < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", outdir, file);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return -errno;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, n) != n)
			break;
		total += n;
		if (limit && total >= limit)
			break;
	}
	close(in);
	close(out);
	return (int)total;
}

static int slot_open(int slot)
{
	if (slot < 0 || slot >= NR_SLOTS)
		return -EINVAL;
	if (slot_fd[slot] < 0) {
		slot_fd[slot] = open(TRACEFS "/user_events_data", O_RDWR);
		if (slot_fd[slot] < 0)
			return -errno;
		slot_nregs[slot] = 0;
	}
	return slot_fd[slot];
}

static int do_reg(int slot, const char *def)
{
	struct ue_reg reg;
	unsigned int e = next_enable++;
	int fd = slot_open(slot);
	int n;

	if (fd < 0)
		return fd;
	if (e >= MAX_REGS * 32)
		return -ENOSPC;
	memset(&reg, 0, sizeof(reg));
	reg.size = sizeof(reg);
	reg.enable_bit = e % 32;
	reg.enable_size = 4;
	reg.enable_addr = (uintptr_t)&enable_words[e / 32];
	reg.name_args = (uintptr_t)def;
	if (ioctl(fd, UE_IOCSREG, &reg) < 0)
		return -errno;
	n = slot_nregs[slot];
	if (n < MAX_REGS) {
		const char *sp = strchr(def, ' ');
		size_t len = sp ? (size_t)(sp - def) : strlen(def);

		if (len >= sizeof(slot_regs[0][0].name))
			len = sizeof(slot_regs[0][0].name) - 1;
		memcpy(slot_regs[slot][n].name, def, len);
		slot_regs[slot][n].name[len] = '\0';
		slot_regs[slot][n].write_index = reg.write_index;
		slot_regs[slot][n].enable = e;
		slot_nregs[slot] = n + 1;
	}
	return (int)reg.write_index;
}

static int do_del(const char *name)
{
	int fd = open(TRACEFS "/user_events_data", O_RDWR);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, UE_IOCSDEL, name) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int do_write_str(const char *path, const char *s, int flags)
{
	int fd = open(path, O_WRONLY | flags);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (s && write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int do_write_event(int slot, const char *name, const char *hex)
{
	unsigned char payload[4096];
	struct iovec iov[2];
	size_t n = 0;
	int i, idx = -1;

	if (slot < 0 || slot >= NR_SLOTS || slot_fd[slot] < 0)
		return -EBADF;
	for (i = 0; i < slot_nregs[slot]; i++)
		if (!strcmp(slot_regs[slot][i].name, name))
			idx = slot_regs[slot][i].write_index;
	if (idx < 0)
		return -ENOENT;
	while (hex[0] && hex[1] && n < sizeof(payload)) {
		int hi = hexval(hex[0]), lo = hexval(hex[1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		payload[n++] = (unsigned char)(hi << 4 | lo);
		hex += 2;
	}
	iov[0].iov_base = &idx;
	iov[0].iov_len = sizeof(idx);
	iov[1].iov_base = payload;
	iov[1].iov_len = n;
	if (writev(slot_fd[slot], iov, 2) < 0)
		return -errno;
	return 0;
}

static int do_limit(int extra)
{
	char buf[16384], val[32], *p;
	ssize_t n;
	int fd, active;

	fd = open(TRACEFS "/user_events_status", O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	p = strstr(buf, "\nActive: ");
	if (!p)
		return -EINVAL;
	active = atoi(p + 9);
	snprintf(val, sizeof(val), "%d", active + extra);
	fd = do_write_str("/proc/sys/kernel/user_events_max", val, 0);
	return fd < 0 ? fd : active + extra;
}

static void settle(void)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static int run(char *line)
{
	char arg[4096], path[1024], *cmd = line, *rest, *a2, *a3;
	int slot;

	rest = strchr(line, ' ');
	if (rest)
		*rest++ = '\0';
	else
		rest = line + strlen(line);
	if (expand(rest, arg, sizeof(arg)))
		return -E2BIG;

	if (!strcmp(cmd, "dyn"))
		return do_write_str(TRACEFS "/dynamic_events", arg, 0);
	if (!strcmp(cmd, "trunc"))
		return do_write_str(TRACEFS "/dynamic_events", NULL, O_TRUNC);
	if (!strcmp(cmd, "settle")) {
		settle();
		return 0;
	}
	if (!strcmp(cmd, "del"))
		return do_del(arg);

	/* Commands with a leading numeric or name argument. */
	a2 = strchr(arg, ' ');
	if (a2)
		*a2++ = '\0';
	else
		a2 = arg + strlen(arg);

	if (!strcmp(cmd, "reg"))
		return do_reg(atoi(arg), a2);
	if (!strcmp(cmd, "close")) {
		slot = atoi(arg);
		if (slot < 0 || slot >= NR_SLOTS || slot_fd[slot] < 0)
			return -EBADF;
		for (int i = 0; i < slot_nregs[slot]; i++) {
			struct ue_unreg u;
			unsigned int e = slot_regs[slot][i].enable;

			memset(&u, 0, sizeof(u));
			u.size = sizeof(u);
			u.disable_bit = e % 32;
			u.disable_addr = (uintptr_t)&enable_words[e / 32];
			if (ioctl(slot_fd[slot], UE_IOCSUNREG, &u) < 0)
				return -errno;
		}
		close(slot_fd[slot]);
		slot_fd[slot] = -1;
		slot_nregs[slot] = 0;
		return 0;
	}
	if (!strcmp(cmd, "enable")) {
		snprintf(path, sizeof(path),
			 TRACEFS "/events/user_events/%s/enable", arg);
		return do_write_str(path, a2, 0);
	}
	if (!strcmp(cmd, "limit"))
		return do_limit(atoi(arg));
	if (!strcmp(cmd, "sysctl")) {
		snprintf(path, sizeof(path), "/proc/sys/kernel/%s", arg);
		return do_write_str(path, a2, 0);
	}
	if (!strcmp(cmd, "copy")) {
		snprintf(path, sizeof(path), TRACEFS "/%s", arg);
		return copy_file(path, a2, 0);
	}
	if (!strcmp(cmd, "format")) {
		snprintf(path, sizeof(path),
			 TRACEFS "/events/user_events/%s/format", arg);
		return copy_file(path, a2, 0);
	}
	if (!strcmp(cmd, "raw"))
		return copy_file(TRACEFS "/per_cpu/cpu0/trace_pipe_raw", arg,
				 4096);
	if (!strcmp(cmd, "write")) {
		a3 = strchr(a2, ' ');
		if (a3)
			*a3++ = '\0';
		else
			a3 = a2 + strlen(a2);
		return do_write_event(atoi(arg), a2, a3);
	}
	return -ENOSYS;
}

int main(int argc, char **argv)
{
	char line[4096], copy[4096], path[1024];
	FILE *in;
	int ret, lineno = 0, bad = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: ue_capture COMMANDS OUTDIR\n");
		return 2;
	}
	outdir = argv[2];
	in = fopen(argv[1], "r");
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/results.txt", outdir);
	results = fopen(path, "w");
	if (!results) {
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		snprintf(copy, sizeof(copy), "%s", line);
		ret = run(line);
		if (ret == -ENOSYS) {
			fprintf(stderr, "line %d: unknown command: %s\n", lineno,
				copy);
			bad++;
			continue;
		}
		if (ret < 0)
			fprintf(results, "%s => %s\n", copy, errname(-ret));
		else
			fprintf(results, "%s => %d\n", copy, ret);
		fflush(results);
	}
	fclose(results);
	fclose(in);
	return bad ? 1 : 0;
}
