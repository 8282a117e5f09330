// SPDX-License-Identifier: GPL-2.0
/*
 * opbench.c - microbenchmarks of the exit-to-user path with RSEQ operations.
 *
 *   opbench --list
 *   opbench [options] BENCH|all
 *
 * Emits one JSON record per line on stdout: a "sample" record per timed
 * batch, a "gate" record per cell (did the operations run when they
 * should, and only then), or an "unsupported" record when the kernel
 * refuses the operations. Progress goes to stderr. Times come from
 * clock_gettime(CLOCK_MONOTONIC) around whole batches: it is a vDSO call
 * with no syscall, it counts in nanoseconds on every kernel and under every
 * QEMU accelerator (under -icount it counts executed instructions), and a
 * batch of thousands of iterations makes its own cost negligible. rdtscp
 * would tie the records to a TSC frequency the guest only estimates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "opbench.h"

/*
 * One row per benchmark: its name, what it does, how many list walks one
 * timed loop makes, and the operation type it uses unless --type says
 * otherwise (migrate's CPU-strided slot is what a migration changes).
 */
static const struct bench benches[] = {
	{ "syscall", "getppid() round trip: no schedule, so no walk", 0, OP_NULL, bench_syscall },
	{ "switch", "sched_yield() ping-pong of two threads on one CPU", 2, OP_NULL, bench_switch },
	{ "preempt", "two spinning threads on one CPU: cost per preemption", 1, OP_NULL, bench_preempt },
	{ "signal", "raise(), empty handler, return", 1, OP_NULL, bench_signal },
	{ "migrate", "sched_setaffinity() bounce between two CPUs", 2, OP_CPU, bench_migrate },
};

#define NR_BENCHES	(int)(sizeof(benches) / sizeof(benches[0]))

static struct utsname uts;
static const char *flavour = "unknown";
static bool quiet;

double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * Start a timed sample: note the thread's context switches, then the time.
 * emit_sample() reports the switches the sample saw, so that the analysis
 * can tell when a loop did not switch as often as it should have.
 */
double sample_start(struct bench_ctx *ctx)
{
	ctx->switches0 = nr_switches();
	return now_ns();
}

int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/*
 * Pin the calling thread for a benchmark that means nothing unpinned (two
 * threads that must share a CPU, a loop that must not migrate); say which
 * CPU could not be had.
 */
int pin_or_complain(const struct bench_ctx *ctx, int cpu)
{
	int ret = pin_self(cpu);

	if (ret)
		fprintf(stderr, "opbench: %s: cannot pin to CPU %d: %s (see --cpu)\n",
			ctx->bench, cpu, strerror(-ret));
	return ret;
}

long nr_switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

void progress(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	fputs("opbench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The fields every record starts with. */
static void head(struct bench_ctx *ctx, const char *kind)
{
	printf("{\"kind\":\"%s\",\"bench\":\"%s\",\"flavour\":\"%s\","
	       "\"kernel\":\"%s\",\"nr_ops\":%d,\"op_type\":\"%s\",\"reg\":\"%s\","
	       "\"cpu\":%d",
	       kind, ctx->bench, flavour, uts.release, ctx->nr_ops,
	       op_type_name(ctx->type), reg_mode_name(ctx->reg), ctx->cpu);
}

void emit_sample(struct bench_ctx *ctx, int sample, double ns, long loops,
		 const char *unit_of_loop)
{
	long sw = ctx->switches0 >= 0 ? nr_switches() - ctx->switches0 : -1;

	head(ctx, "sample");
	printf(",\"sample\":%d,\"loops\":%ld,\"loop\":\"%s\",\"ns\":%.0f,"
	       "\"ns_per_loop\":%.3f,\"better\":\"lower\",\"walks_per_loop\":%d,",
	       sample, loops, unit_of_loop, ns, ns / loops, ctx->walks);
	if (sw >= 0)
		printf("\"switches_per_loop\":%.4f,", (double)sw / loops);
	printf("\"clock\":\"CLOCK_MONOTONIC\"}\n");
	ctx->switches0 = -1;
	fflush(stdout);
}

void emit_gate(struct bench_ctx *ctx, const char *what, long expected,
	       long seen, bool valid, const char *detail)
{
	head(ctx, "gate");
	printf(",\"check\":\"%s\",\"resets_expected\":%ld,\"resets_seen\":%ld,"
	       "\"valid\":%s,\"detail\":\"%s\"}\n",
	       what, expected, seen, valid ? "true" : "false", detail);
	fflush(stdout);
	if (!valid)
		progress("%s N=%d: gate '%s' FAILED: expected %ld resets, saw %ld (%s)",
			 ctx->bench, ctx->nr_ops, what, expected, seen, detail);
}

void emit_unsupported(struct bench_ctx *ctx, int err, const char *why)
{
	head(ctx, "unsupported");
	printf(",\"errno\":%d,\"why\":\"%s\"}\n", -err, why);
	fflush(stdout);
	progress("%s N=%d: unsupported here: %s", ctx->bench, ctx->nr_ops, why);
}

/*
 * Register this thread's rseq area (once) and the cell's operations.
 * Returns 0 to go on, 1 when the kernel refused (an "unsupported" record
 * was emitted), -1 on error.
 */
int thread_setup(struct bench_ctx *ctx, struct thread_ops *to)
{
	static __thread struct ob_rseq *area;
	int err;

	if (!area) {
		err = rseq_register_thread(ctx->reg, &area);
		if (err) {
			area = NULL;
			emit_unsupported(ctx, err, err == -ENOENT ?
					 "glibc registered no rseq area" :
					 "rseq registration refused");
			return 1;
		}
	}
	err = ops_register(to, area, ctx->type, ctx->nr_ops, ctx->no_ops);
	if (!err)
		return 0;
	if (err == -OB_ENOTSUPP)
		emit_unsupported(ctx, err, "legacy rseq registration: no operations");
	else if (err == -EINVAL && !(area->flags & OB_RSEQ_OP_AVAILABLE))
		emit_unsupported(ctx, err, "kernel without RSEQ operations");
	else if (err == -ENOMEM)
		return -1;
	else
		emit_unsupported(ctx, err, "operation registration refused");
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: opbench [options] BENCH|all\n"
		"       opbench --list\n"
		"options:\n"
		"  -n, --ops LIST      operations per thread, comma separated (default 0,1,2048)\n"
		"      --sweep         operations 0,1,2,4,...,2048\n"
		"  -t, --type TYPE     reset4, reset8, null, cpu, mmcid (default null;\n"
		"                      migrate defaults to cpu)\n"
		"  -r, --reg MODE      own (default), legacy or glibc\n"
		"  -l, --loops N       timed iterations per sample (default 10000)\n"
		"  -s, --samples N     timed samples per cell (default 20)\n"
		"  -w, --warmup N      untimed samples first (default 2)\n"
		"  -c, --cpu N         CPU of the measured thread (default: last allowed)\n"
		"  -C, --cpu2 N        second CPU for migrate (default: first allowed)\n"
		"  -f, --flavour NAME  flavour label (default: uname -r after the first -)\n"
		"  -q, --quiet         no progress on stderr\n"
		"      --no-ops        set up operations but do not register them\n"
		"                      (tests the correctness gate: it must fail)\n"
		"  -h, --help\n");
}

static int parse_ops(const char *s, int *out, int max)
{
	int n = 0;
	char *end;

	while (*s) {
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || v > OB_RSEQ_OP_LIST_LIMIT || n == max)
			return -1;
		out[n++] = v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

static long parse_num(const char *opt, const char *s, long min)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end || v < min) {
		fprintf(stderr, "opbench: %s '%s' is not a number >= %ld\n", opt, s, min);
		exit(2);
	}
	return v;
}

static void default_cpus(struct bench_ctx *ctx)
{
	cpu_set_t set;
	int first = -1, last = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &set)) {
			if (first < 0)
				first = c;
			last = c;
		}
	}
	if (ctx->cpu < 0)
		ctx->cpu = last;
	if (ctx->cpu2 < 0)
		ctx->cpu2 = first;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "list", no_argument, NULL, 'L' },
		{ "ops", required_argument, NULL, 'n' },
		{ "sweep", no_argument, NULL, 'S' },
		{ "type", required_argument, NULL, 't' },
		{ "reg", required_argument, NULL, 'r' },
		{ "loops", required_argument, NULL, 'l' },
		{ "samples", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "cpu2", required_argument, NULL, 'C' },
		{ "flavour", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-ops", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct bench_ctx base = {
		.reg = REG_OWN, .type = OP_NR, .loops = 10000, .samples = 20,
		.warmup = 2, .cpu = -1, .cpu2 = -1,
	};
	int ops[64] = { 0, 1, OB_RSEQ_OP_LIST_LIMIT }, nops = 3;
	int opt, ret = 0, ran = 0;

	while ((opt = getopt_long(argc, argv, "n:t:r:l:s:w:c:C:f:qh", lopts, NULL)) != -1) {
		switch (opt) {
		case 'L':
			for (int i = 0; i < NR_BENCHES; i++)
				printf("%-8s %-6s %s\n", benches[i].name,
				       op_type_name(benches[i].type), benches[i].summary);
			return 0;
		case 'n':
			nops = parse_ops(optarg, ops, 64);
			if (nops <= 0) {
				fprintf(stderr, "opbench: --ops '%s': want numbers 0..%d, comma separated\n",
					optarg, OB_RSEQ_OP_LIST_LIMIT);
				return 2;
			}
			break;
		case 'S':
			nops = 0;
			ops[nops++] = 0;
			for (int n = 1; n <= OB_RSEQ_OP_LIST_LIMIT; n *= 2)
				ops[nops++] = n;
			break;
		case 't':
			if (parse_op_type(optarg, &base.type)) {
				fprintf(stderr, "opbench: --type '%s': want reset4, reset8, null, cpu or mmcid\n",
					optarg);
				return 2;
			}
			break;
		case 'r':
			if (parse_reg_mode(optarg, &base.reg)) {
				fprintf(stderr, "opbench: --reg '%s': want own, legacy or glibc\n", optarg);
				return 2;
			}
			break;
		case 'l':
			base.loops = parse_num("--loops", optarg, 1);
			break;
		case 's':
			base.samples = parse_num("--samples", optarg, 1);
			break;
		case 'w':
			base.warmup = parse_num("--warmup", optarg, 0);
			break;
		case 'c':
			base.cpu = parse_num("--cpu", optarg, 0);
			break;
		case 'C':
			base.cpu2 = parse_num("--cpu2", optarg, 0);
			break;
		case 'f':
			flavour = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'N':
			base.no_ops = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "opbench: name one benchmark, or 'all' (see --list)\n");
		usage(stderr);
		return 2;
	}
	uname(&uts);
	if (!strcmp(flavour, "unknown")) {
		/* Our kernels name their flavour: 7.2.13-ops. */
		const char *dash = strchr(uts.release, '-');

		if (dash && dash[1])
			flavour = dash + 1;
	}
	default_cpus(&base);
	if (base.cpu < 0 || base.cpu2 < 0 || base.cpu >= CPU_SETSIZE ||
	    base.cpu2 >= CPU_SETSIZE) {
		fprintf(stderr, "opbench: no usable CPU\n");
		return 2;
	}
	if (base.reg != REG_GLIBC)
		reexec_without_glibc_rseq(argv, "opbench", !quiet);

	for (int b = 0; b < NR_BENCHES; b++) {
		if (strcmp(argv[optind], "all") && strcmp(argv[optind], benches[b].name))
			continue;
		ran++;
		/* perf and bpftrace see the benchmark's name. */
		prctl(PR_SET_NAME, (unsigned long)benches[b].name, 0, 0, 0);
		for (int i = 0; i < nops; i++) {
			struct bench_ctx ctx = base;

			ctx.bench = benches[b].name;
			ctx.walks = benches[b].walks;
			ctx.switches0 = -1;
			ctx.nr_ops = ops[i];
			if (ctx.type == OP_NR)
				ctx.type = benches[b].type;
			progress("%s: %d operations (%s, %s area), %d x %ld loops",
				 ctx.bench, ctx.nr_ops, op_type_name(ctx.type),
				 reg_mode_name(ctx.reg), ctx.samples, ctx.loops);
			if (benches[b].fn(&ctx))
				ret = 1;
		}
	}
	if (!ran) {
		fprintf(stderr, "opbench: no benchmark '%s' (see --list)\n", argv[optind]);
		return 2;
	}
	return ret;
}
