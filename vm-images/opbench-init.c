// SPDX-License-Identifier: GPL-2.0
/*
 * opbench-init.c - PID 1 of an rseq-opbench guest: run one command, report, reboot.
 *
 * Built static by vm-images/build-rootfs.sh and installed as /sbin/opbench-init.
 * The launcher passes on the kernel command line:
 *   opbench.cmd=<file>   script on the shared directory to run (default run.sh)
 * The shared directory (9p tag "share") is mounted at /share and the script
 * runs there under /bin/sh. Its exit status goes to the console as
 * "OPBENCH-EXIT: <status>", after "OPBENCH-START" before it; then the guest
 * resets and QEMU (-no-reboot) exits.
 *
 * In C rather than shell because under TCG every exec of a dynamically
 * linked mount(8) cost about 0.1 s: the shell version spent 1.4 s of a
 * 4 s boot mounting file systems.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

struct fs {
	const char *src, *dst, *type, *opts;
	int required;
};

static const struct fs mounts[] = {
	{ "proc", "/proc", "proc", NULL, 1 },
	{ "sysfs", "/sys", "sysfs", NULL, 1 },
	{ "devtmpfs", "/dev", "devtmpfs", NULL, 0 },	/* DEVTMPFS_MOUNT did it */
	{ "devpts", "/dev/pts", "devpts", NULL, 0 },
	{ "tmpfs", "/dev/shm", "tmpfs", NULL, 0 },
	{ "tmpfs", "/tmp", "tmpfs", NULL, 1 },
	{ "tmpfs", "/run", "tmpfs", NULL, 1 },
	{ "debugfs", "/sys/kernel/debug", "debugfs", NULL, 0 },
	{ "tracefs", "/sys/kernel/tracing", "tracefs", NULL, 0 },
	{ "bpf", "/sys/fs/bpf", "bpf", NULL, 0 },
	{ "share", "/share", "9p",
	  "trans=virtio,version=9p2000.L,msize=1048576,cache=loose", 1 },
};

static void say(const char *fmt, const char *arg)
{
	dprintf(1, fmt, arg);
}

static const char *command_file(void)
{
	static char buf[4096], name[256] = "run.sh";
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	char *tok, *save;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return name;
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strncmp(tok, "opbench.cmd=", 12))
			snprintf(name, sizeof(name), "%s", tok + 12);
	return name;
}

int main(void)
{
	int status = 255, fd;
	const char *cmd;
	pid_t pid;

	fd = open("/dev/console", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
	setenv("HOME", "/root", 1);
	setenv("LANG", "C.UTF-8", 1);

	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		const struct fs *m = &mounts[i];

		mkdir(m->dst, 0755);
		if (mount(m->src, m->dst, m->type, 0, m->opts) && m->required &&
		    errno != EBUSY) {
			dprintf(2, "opbench-init: cannot mount %s on %s: %s\n",
				m->type, m->dst, strerror(errno));
			if (!strcmp(m->type, "9p"))
				goto out;
		}
	}

	cmd = command_file();
	say("OPBENCH-START\n", NULL);
	pid = fork();
	if (pid == 0) {
		char path[300];
		int null = open("/dev/null", O_RDONLY);

		if (null >= 0)
			dup2(null, 0);
		if (chdir("/share"))
			_exit(127);
		snprintf(path, sizeof(path), "/share/%s", cmd);
		execl("/bin/sh", "sh", path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0) {
		int st;

		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	sync();
out:
	dprintf(1, "OPBENCH-EXIT: %d\n", status);
	/*
	 * Let the UART send the line before the reset: without this the
	 * marker was lost now and then under -icount.
	 */
	tcdrain(1);
	nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	reboot(RB_AUTOBOOT);
	dprintf(2, "opbench-init: reboot failed: %s\n", strerror(errno));
	for (;;)
		pause();
}
