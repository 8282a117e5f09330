// SPDX-License-Identifier: GPL-2.0
/*
 * rseq-bpf-ops - load, pin, inspect and unload the BPF design of RSEQ
 * operations (rseq_ops.bpf.c) on a kernel with rseq_exit_bpf_hook() (the
 * bpf flavour, kernel-patch/bpf/). libbpf and the skeleton bpftool made.
 *
 *   rseq-bpf-ops load [DIR]     verify, attach, pin the link and the maps
 *                               in DIR (default RBO_PIN_DIR); it stays
 *                               attached after the loader exits
 *   rseq-bpf-ops unload [DIR]   remove the pins: the program detaches
 *   rseq-bpf-ops status [DIR]   the program's counters (rbo_stats), summed
 *   rseq-bpf-ops probe          load, never attach, each walk the design
 *                               did not take, and say what the verifier
 *                               said of it
 *
 * Exit status: 0 done, 1 failed, 2 refused (usage, a kernel without the
 * hook, already loaded), each with a message naming the problem and the
 * fix.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "rseq-bpf-ops.h"
#include "rseq_ops.skel.h"

#define ME "rseq-bpf-ops"
#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC	0xcafe4a11
#endif

static char logbuf[1 << 22];
static size_t loglen;

/* libbpf's messages go into logbuf, printed when a step fails. */
static int keep_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (level == LIBBPF_DEBUG || loglen >= sizeof(logbuf) - 1)
		return 0;
	n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);
	if (n > 0)
		loglen += (size_t)n < sizeof(logbuf) - loglen ? (size_t)n :
			sizeof(logbuf) - loglen - 1;
	return n;
}

static void print_log_tail(const char *log, int lines)
{
	const char *p = log + strlen(log);
	int n = 0;

	while (p > log && n <= lines)
		if (*--p == '\n')
			n++;
	if (p > log)
		p++;
	fprintf(stderr, "%s", p);
}

static const char *kernel_release(void)
{
	static struct utsname u;

	return uname(&u) ? "?" : u.release;
}

/*
 * 0 when the running kernel has the hook; else 2, having said why and
 * what to do.
 */
static int check_hook(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int id;

	if (!btf) {
		fprintf(stderr, "%s: kernel %s has no BTF (/sys/kernel/btf/vmlinux: %s): fentry programs need CONFIG_DEBUG_INFO_BTF; boot the bpf flavour of the default configuration\n",
			ME, kernel_release(), strerror(errno));
		return 2;
	}
	id = btf__find_by_name_kind(btf, RBO_HOOK, BTF_KIND_FUNC);
	btf__free(btf);
	if (id < 0) {
		fprintf(stderr, "%s: kernel %s has no %s() (not in its BTF): it is not the bpf flavour; boot a kernel built with kernel-patch/bpf/ (make kernel FLAVOUR=bpf)\n",
			ME, kernel_release(), RBO_HOOK);
		return 2;
	}
	return 0;
}

/* DIR on a bpffs: mount one at /sys/fs/bpf when there is none. */
static int pin_dir(const char *dir)
{
	struct statfs st;

	if (statfs("/sys/fs/bpf", &st) || st.f_type != BPF_FS_MAGIC) {
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL)) {
			fprintf(stderr, "%s: no bpffs at /sys/fs/bpf and mounting one failed: %s\n",
				ME, strerror(errno));
			return 1;
		}
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "%s: cannot make %s: %s\n", ME, dir, strerror(errno));
		return 1;
	}
	return 0;
}

static void path_of(char *buf, size_t n, const char *dir, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

/*
 * The line of a verifier log that says why it refused, into @buf (empty
 * when none does): the last one naming a cause.
 */
static const char *verifier_reason(const char *log, char *buf, size_t n)
{
	static const char *const causes[] = {
		"unknown func", "invalid", "too large", "too complex", "infinite",
		"unbounded", "back-edge", "not allowed", "permission",
		"cannot use helper", "cannot call",
		"unreleased", "misaligned", "R0 !read_ok", "math between",
	};
	const char *q = log, *why = NULL;

	buf[0] = 0;
	while (q && *q) {
		const char *line = q;

		q = strchr(q, '\n');
		if (q)
			q++;
		if (!strncmp(line, "libbpf:", 7) || !strncmp(line, "processed ", 10))
			continue;
		for (unsigned int i = 0; i < sizeof(causes) / sizeof(causes[0]); i++) {
			const char *c = strstr(line, causes[i]);

			if (c && (!q || c < q))
				why = line;
		}
	}
	if (why)
		snprintf(buf, n, "%.*s", (int)strcspn(why, "\n"), why);
	return buf;
}

/* The verifier's "processed N insns ..." line of @log, or "". */
static void processed_line(const char *log, char *buf, size_t n)
{
	const char *p = strstr(log, "processed ");

	snprintf(buf, n, "%.*s", p ? (int)strcspn(p, "\n") : 0, p ? p : "");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_prog(const char *what, int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_prog_get_info_by_fd(fd, &info, &len)) {
		printf("%s: (no program info: %s)\n", what, strerror(errno));
		return;
	}
	printf("%s: prog id %u, %u instructions after the verifier, %u bytes JITed, %u instructions processed by the verifier\n",
	       what, info.id, info.xlated_prog_len / 8, info.jited_prog_len,
	       info.verified_insns);
}

static int load(const char *dir)
{
	char path[512];
	struct rseq_ops *skel;
	int err;

	err = check_hook();
	if (err)
		return err;
	path_of(path, sizeof(path), dir, "link");
	if (!access(path, F_OK)) {
		fprintf(stderr, "%s: already loaded (%s exists); %s unload %s first\n",
			ME, path, ME, dir);
		return 2;
	}
	skel = rseq_ops__open();
	if (!skel) {
		fprintf(stderr, "%s: opening the BPF object failed: %s\n", ME, strerror(errno));
		return 1;
	}
	err = rseq_ops__load(skel);
	if (err) {
		char why[256];

		print_log_tail(logbuf, 30);
		verifier_reason(logbuf, why, sizeof(why));
		fprintf(stderr, "%s: loading rseq_exit failed: %s%s%s%s\n", ME, strerror(-err),
			*why ? " (verifier: " : "", why, *why ? ")" : "");
		if (err == -EPERM || strstr(why, "unknown func"))
			fprintf(stderr, "%s: a tracing program that writes user memory needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (bpf_probe_write_user()); run as root\n", ME);
		rseq_ops__destroy(skel);
		return 1;
	}
	err = rseq_ops__attach(skel);
	if (err) {
		print_log_tail(logbuf, 10);
		fprintf(stderr, "%s: attaching rseq_exit to %s() failed: %s\n", ME,
			RBO_HOOK, strerror(-err));
		rseq_ops__destroy(skel);
		return 1;
	}
	err = pin_dir(dir);
	if (!err) {
		struct { struct bpf_map *m; const char *n; } maps[] = {
			{ skel->maps.sets, "sets" }, { skel->maps.slot_of, "slot_of" },
			{ skel->maps.stats, "stats" },
		};

		for (unsigned int i = 0; i < sizeof(maps) / sizeof(maps[0]) && !err; i++) {
			path_of(path, sizeof(path), dir, maps[i].n);
			err = bpf_map__pin(maps[i].m, path);
		}
		path_of(path, sizeof(path), dir, "link");
		if (!err)
			err = bpf_link__pin(skel->links.rseq_exit, path);
		path_of(path, sizeof(path), dir, "exit_link");
		if (!err)
			err = bpf_link__pin(skel->links.rseq_exit_thread, path);
		if (err)
			fprintf(stderr, "%s: pinning in %s failed: %s\n", ME, dir,
				strerror(-err));
	}
	if (!err) {
		print_prog("rseq_exit", bpf_program__fd(skel->progs.rseq_exit));
		printf("attached to %s() of kernel %s, and rseq_exit_thread to sched_process_exit; pinned in %s\n",
		       RBO_HOOK, kernel_release(), dir);
	}
	rseq_ops__destroy(skel);	/* the pins keep it */
	return err ? 1 : 0;
}

static int unload(const char *dir)
{
	static const char *const names[] = {
		"link", "exit_link", "sets", "slot_of", "stats",
	};
	char path[512];
	int gone = 0;

	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		path_of(path, sizeof(path), dir, names[i]);
		if (!unlink(path))
			gone++;
		else if (errno != ENOENT)
			fprintf(stderr, "%s: cannot remove %s: %s\n", ME, path, strerror(errno));
	}
	rmdir(dir);
	printf("%s\n", gone ? "unloaded: the program is detached" : "nothing was loaded");
	return 0;
}

static int status(const char *dir)
{
	struct rbo_stats sum = {}, *v;
	char path[512];
	int fd, ncpu;
	__u32 zero = 0;

	path_of(path, sizeof(path), dir, "stats");
	fd = bpf_obj_get(path);
	if (fd < 0) {
		fprintf(stderr, "%s: nothing loaded (%s: %s); %s load first\n", ME, path,
			strerror(errno), ME);
		return 2;
	}
	ncpu = libbpf_num_possible_cpus();
	v = calloc(ncpu, sizeof(*v));
	if (!v || bpf_map_lookup_elem(fd, &zero, v)) {
		fprintf(stderr, "%s: reading %s failed: %s\n", ME, path, strerror(errno));
		return 1;
	}
	for (int c = 0; c < ncpu; c++) {
		sum.hooks += v[c].hooks;
		sum.walks += v[c].walks;
		sum.stores += v[c].stores;
		sum.faults += v[c].faults;
	}
	printf("hooks %llu walks %llu stores %llu faults %llu\n",
	       (unsigned long long)sum.hooks, (unsigned long long)sum.walks,
	       (unsigned long long)sum.stores, (unsigned long long)sum.faults);
	free(v);
	close(fd);
	return 0;
}

static int probe(void)
{
	static const char *const variants[] = {
		"walk_bounded_loop", "walk_unbounded_loop", "walk_direct_store",
	};
	int err = check_hook();

	if (err)
		return err;
	for (unsigned int i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		static char vlog[1 << 24];
		struct bpf_program *prog;
		struct rseq_ops *skel = rseq_ops__open();

		if (!skel) {
			fprintf(stderr, "%s: opening the BPF object failed: %s\n", ME, strerror(errno));
			return 1;
		}
		char why[256], processed[256];
		double t;

		vlog[0] = 0;
		bpf_object__for_each_program(prog, skel->obj)
			bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog), variants[i]));
		prog = bpf_object__find_program_by_name(skel->obj, variants[i]);
		/*
		 * BPF_LOG_STATS: the verifier's messages and its totals, not
		 * every instruction it walked (a million of them, under TCG,
		 * take longer than the boot may).
		 */
		bpf_program__set_log_buf(prog, vlog, sizeof(vlog));
		bpf_program__set_log_level(prog, 4);
		t = now_s();
		err = rseq_ops__load(skel);
		t = now_s() - t;
		processed_line(vlog, processed, sizeof(processed));
		if (!err) {
			print_prog(variants[i], bpf_program__fd(prog));
			printf("  accepted, verified in %.1f s of CLOCK_MONOTONIC (emulated time in a TCG guest)\n", t);
		} else {
			printf("%s: refused: %s, after %.1f s of CLOCK_MONOTONIC\n", variants[i], strerror(-err), t);
			verifier_reason(vlog, why, sizeof(why));
			if (*why)
				printf("  verifier: %s\n", why);
		}
		if (*processed)
			printf("  verifier: %s\n", processed);
		rseq_ops__destroy(skel);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	const char *dir = argc > 2 ? argv[2] : RBO_PIN_DIR;

	libbpf_set_print(keep_log);
	if (argc > 3 || (argc > 2 && !strcmp(cmd, "probe"))) {
		fprintf(stderr, "%s: too many arguments; usage: %s load|unload|status [DIR] | probe\n", ME, ME);
		return 2;
	}
	if (!strcmp(cmd, "load"))
		return load(dir);
	if (!strcmp(cmd, "unload"))
		return unload(dir);
	if (!strcmp(cmd, "status"))
		return status(dir);
	if (!strcmp(cmd, "probe"))
		return probe();
	fprintf(stderr, "%s: %s%s; usage: %s load|unload|status [DIR] | probe\n", ME,
		*cmd ? "unknown command " : "no command", cmd, ME);
	return 2;
}
