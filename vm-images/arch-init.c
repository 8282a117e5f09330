// SPDX-License-Identifier: GPL-2.0
/*
 * arch-init.c - PID 1 of the initramfs of an off-x86 guest (make arch-run).
 *
 * Built static for the guest's architecture in the cross build root by
 * correctness/arch-run.sh, with the test programs beside it. It mounts
 * /proc, /sys, /dev and /tmp, then runs each line of /run.list:
 *
 *	TIMEOUT NAME PROGRAM [ARG]...
 *
 * in a process group of its own, with glibc's rseq registration off (the
 * programs register their own area), and kills the group with SIGKILL when
 * it has not exited after TIMEOUT seconds of guest time. Each program's
 * output (its own TAP, for a kselftest) goes to the console as it runs,
 * as TAP comments ("# " before each line); after it, one TAP line:
 *
 *	ok 1 NAME                      exit status 0
 *	ok 1 NAME # SKIP               exit status 4 (kselftest's skip)
 *	not ok 1 NAME # exit 1 | # signal 11 | # timeout after 300 s
 *
 * then "1..N", "OPBENCH-EXIT: <failures>", and power off: the markers
 * vm-images/opbench_vm.py reads from every guest (the run's start,
 * OPBENCH-START, and its status, here the failures). A program that
 * SIGKILL cannot end within 30 s more (a task that never leaves the
 * kernel) is reported as "# unkillable" and ends the run there: the host
 * kills the guest when it sees the exit line, or at its own timeout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 32

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The program's output, as comments, one line at a time. */
static char pending[1024];
static size_t npending;

static void flush_line(void)
{
	printf("# %.*s\n", (int)npending, pending);
	npending = 0;
}

/*
 * Copy what the pipe holds, waiting up to ms for it: 1 when something was
 * read, 0 at its end (or fd < 0), -1 when nothing came in time.
 */
static int copy_output(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[512];
	ssize_t got, i;

	if (fd < 0)
		return 0;
	if (poll(&pfd, 1, ms) <= 0)
		return -1;
	got = read(fd, buf, sizeof(buf));
	if (got <= 0)
		return 0;
	for (i = 0; i < got; i++) {
		if (buf[i] == '\n' || npending == sizeof(pending))
			flush_line();
		if (buf[i] != '\n')
			pending[npending++] = buf[i];
	}
	return 1;
}

/*
 * Wait for pid until deadline, copying its output from *fd (closed and set
 * to -1 at its end); 1 and *status when it ended, 0 if not.
 */
static int wait_until(pid_t pid, double deadline, int *status, int *fd)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 1;
		if (r < 0 && errno == ECHILD) {
			/* Lost, which cannot happen: never report it as a pass. */
			*status = 0x7f00;	/* exit status 127 */
			return 1;
		}
		if (now() >= deadline)
			return 0;
		if (*fd >= 0 && copy_output(*fd, 20) == 0) {
			close(*fd);
			*fd = -1;
		} else if (*fd < 0) {
			nanosleep(&ts, NULL);
		}
	}
}

static void finish(int failures)
{
	printf("OPBENCH-EXIT: %d\n", failures);
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

int main(void)
{
	static char line[4096];
	int n = 0, failures = 0;
	FILE *list;

	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mkdir("/dev", 0755);
	mkdir("/tmp", 01777);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
	/* The initramfs has no /dev/console: take it from devtmpfs. */
	n = open("/dev/console", O_RDWR);
	if (n >= 0) {
		dup2(n, 0);
		dup2(n, 1);
		dup2(n, 2);
		if (n > 2)
			close(n);
	}
	n = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
	setenv("PATH", "/", 1);

	printf("OPBENCH-START\nTAP version 13\n");
	list = fopen("/run.list", "re");
	if (!list) {
		printf("Bail out! no /run.list in the initramfs\n");
		finish(1);
	}
	while (fgets(line, sizeof(line), list)) {
		char *argv[MAX_ARGS + 1], *name, *tok, *save;
		int argc = 0, status = 0, out[2];
		double t0, timeout;
		pid_t pid;

		line[strcspn(line, "\n")] = 0;
		tok = strtok_r(line, " \t", &save);
		if (!tok || tok[0] == '#')
			continue;
		timeout = atof(tok);
		name = strtok_r(NULL, " \t", &save);
		while ((tok = strtok_r(NULL, " \t", &save)) && argc < MAX_ARGS)
			argv[argc++] = tok;
		argv[argc] = NULL;
		if (!name || !argc || timeout <= 0) {
			printf("Bail out! bad /run.list line for '%s'\n", name ? name : "?");
			finish(failures + 1);
		}
		n++;
		printf("# ARCH-RUN-BEGIN %s: %s (timeout %.0f s)\n", name, argv[0], timeout);
		t0 = now();
		if (pipe(out)) {
			printf("not ok %d %s # pipe: %s\n", n, name, strerror(errno));
			failures++;
			continue;
		}
		pid = fork();
		if (pid == 0) {
			setpgid(0, 0);
			dup2(out[1], 1);
			dup2(out[1], 2);
			close(out[0]);
			close(out[1]);
			execv(argv[0], argv);
			printf("cannot run %s: %s\n", argv[0], strerror(errno));
			_exit(127);
		}
		close(out[1]);
		if (pid < 0) {
			printf("not ok %d %s # fork: %s\n", n, name, strerror(errno));
			close(out[0]);
			failures++;
			continue;
		}
		setpgid(pid, pid);
		if (!wait_until(pid, t0 + timeout, &status, &out[0])) {
			kill(-pid, SIGKILL);
			if (!wait_until(pid, now() + 30, &status, &out[0])) {
				if (npending)
					flush_line();
				printf("not ok %d %s # unkillable: SIGKILL did not end it in 30 s\n",
				       n, name);
				finish(failures + 1);
			}
			while (copy_output(out[0], 100) > 0)
				;
			if (npending)
				flush_line();
			printf("not ok %d %s # timeout after %.0f s (killed)\n", n, name, timeout);
			failures++;
			goto next;
		}
		/* The rest of its output; a child it left may hold the pipe. */
		kill(-pid, SIGKILL);
		while (copy_output(out[0], 500) > 0)
			;
		if (npending)
			flush_line();
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("ok %d %s # %.1f s\n", n, name, now() - t0);
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
			printf("ok %d %s # SKIP\n", n, name);
		} else if (WIFEXITED(status)) {
			printf("not ok %d %s # exit %d\n", n, name, WEXITSTATUS(status));
			failures++;
		} else {
			printf("not ok %d %s # signal %d\n", n, name, WTERMSIG(status));
			failures++;
		}
next:
		/* What the group left behind. */
		if (out[0] >= 0)
			close(out[0]);
		kill(-pid, SIGKILL);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	printf("1..%d\n", n);
	finish(failures);
	return 0;
}
