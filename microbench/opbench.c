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
 * refuses the operations, and one "clock" record per run. Progress goes to
 * stderr.
 *
 * Every timed iteration is read with the TSC on its own (tsc_now()), and a
 * sample's figure is the median of its iterations: an interrupt lands in a
 * few iterations and moves no median, so a shift of one instruction per
 * iteration shows under QEMU icount, where a tick is an instruction. The
 * "clock" record measures what a tick is on this machine rather than
 * trusting the guest's calibration: ticks per instruction of a known loop,
 * and the guest's CLOCK_MONOTONIC nanoseconds per tick. Every iteration also
 * arms the first and last watched destination word before it and reads them
 * after it: a sample whose walks did not happen, or happened when they
 * should not, is recorded as invalid.
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
#include <unistd.h>

#include "bpfops.h"
#include "minops.h"
#include "opbench.h"

/*
 * One row per benchmark: its name, what it does, how many list walks one
 * timed loop makes, what each timed iteration must show on the watched
 * words, and the operation type it uses unless --type says otherwise
 * (migrate's CPU-strided slot is what a migration changes).
 */
static const struct bench benches[] = {
	{ "syscall", "getppid() round trip: no schedule, so no walk", 0,
	  EXPECT_NONE, OP_NULL, bench_syscall, 0 },
	{ "switch", "sched_yield() ping-pong of two threads on one CPU", 2,
	  EXPECT_SWITCH, OP_NULL, bench_switch, BENCH_TRACED },
	{ "preempt", "a SCHED_FIFO waker preempts a spinner: one gap per preemption", 1,
	  EXPECT_SWITCH, OP_NULL, bench_preempt, BENCH_ALONE | BENCH_TRACED | BENCH_GAPS },
	{ "signal", "raise(), empty handler, return", 1,
	  EXPECT_ALWAYS, OP_NULL, bench_signal, BENCH_TRACED },
	{ "migrate", "sched_setaffinity() bounce between two CPUs", 2,
	  EXPECT_ALWAYS, OP_CPU, bench_migrate, 0 },
	{ "register", "prctl() registering one more operation and unregistering it", 0,
	  EXPECT_NONE, OP_NULL, bench_register, 0 },
};

#define NR_BENCHES	(int)(sizeof(benches) / sizeof(benches[0]))

static const char *const expect_names[] = {
	[EXPECT_NONE] = "none", [EXPECT_ALWAYS] = "always",
	[EXPECT_SWITCH] = "switch",
};

/* The table, for people or (--json) as one JSON array for a run. */
static void list_benches(bool json)
{
	for (int i = 0; i < NR_BENCHES; i++) {
		const struct bench *b = &benches[i];

		if (!json) {
			printf("%-8s %-6s %s\n", b->name, op_type_name(b->type),
			       b->summary);
			continue;
		}
		/* The summaries hold no quote or backslash. */
		printf("%s{\"name\":\"%s\",\"summary\":\"%s\",\"walks_per_loop\":%d,"
		       "\"expect\":\"%s\",\"type\":\"%s\",\"alone\":%s,\"traced\":%s,"
		       "\"marked\":%s}",
		       i ? "," : "[", b->name, b->summary, b->walks,
		       expect_names[b->expect], op_type_name(b->type),
		       b->flags & BENCH_ALONE ? "true" : "false",
		       b->flags & BENCH_TRACED ? "true" : "false",
		       b->flags & BENCH_GAPS ? "false" : "true");
	}
	if (json)
		printf("]\n");
}

/* Entries an --ops list may have. */
#define OPS_LIST_MAX	64

/*
 * Start a timed sample: note the thread's context switches. emit_sample()
 * reports the switches the sample saw beside what its iterations showed.
 */
void sample_start(struct bench_ctx *ctx)
{
	ctx->switches0 = nr_switches();
	ctx->faults0 = ops_backend && ops_backend->faults ? ops_backend->faults() : -1;
	ctx->pmu_ok = pmu_read(&ctx->pmu0);
	if (ctx->mark) {
		mark_begin();
		ctx->mark_t0 = tsc_now();
	}
}

int iters_alloc(struct iters *it, long n)
{
	long cap = 1;

	if (n > ITERS_MAX)
		n = ITERS_MAX;
	while (cap < n)
		cap <<= 1;
	it->dt = calloc(cap, sizeof(*it->dt));
	it->bits = calloc(cap, sizeof(*it->bits));
	it->n = n;
	it->mask = cap - 1;
	it->full = 0;
	if (it->dt && it->bits)
		return 0;
	iters_free(it);
	return -1;
}

void iters_free(struct iters *it)
{
	free(it->dt);
	free(it->bits);
	memset(it, 0, sizeof(*it));
}

/* Pin the calling thread for the benchmark: see pin_or_say(). */
int pin_or_complain(const struct bench_ctx *ctx, int cpu)
{
	return pin_or_say(ctx->bench, cpu);
}

/* The fields every record of the cell starts with. */
void emit_head(struct bench_ctx *ctx, const char *kind)
{
	const struct rec_head h = {
		.bench = ctx->bench, .nr_ops = ctx->nr_ops, .type = ctx->type,
		.reg = ctx->reg, .cpu = ctx->cpu, .layout = ctx->layout,
		.waker_ops = ctx->waker_ops, .period_us = ctx->period_us,
		.warmup = ctx->warmup, .no_ops = ctx->no_ops, .pad = ctx->pad,
	};

	emit_rec_head(&h, kind);
}

/*
 * One sample: the median of its iterations' ticks, over the iterations that
 * showed what the benchmark expects (the others are counted, not timed), and
 * the per-iteration gate. An iteration violates the gate when only some of
 * the watched words changed (a walk stopped part way), when an expected walk
 * did not happen, or when the words changed although nothing was expected
 * and the thread was not switched out. Returns whether the sample is valid.
 *
 * A correct kernel shows "partial" too, in an iteration that expects no
 * walk: watch_arm() stores the words one after the other and watch_read()
 * loads them in turn, and a switch out between the two (the walk runs on
 * the way back) rewrites one word and not the other. Such an iteration
 * shows no switch of its own (no IT_SWITCHED), so the sample accounts for
 * it with its own counts, as analysis/preempt_gaps.py's rule 8 does for
 * preempt: each switch of the thread that no iteration showed
 * ("switches_unshown": the sample's switches less its IT_SWITCHED
 * iterations, recorded beside switches_per_loop when the switches were
 * counted) explains at most one iteration that expected no walk and
 * showed one, whole (an unexpected walk) or partial. Partial iterations
 * within what is left after the unexpected walks are a disturbance
 * ("partial_explained"); any other partial iteration, and every partial
 * one where a walk was due (a signal, a migration, a switch the iteration
 * saw: no race leaves one word armed there), is a violation. So the
 * negative control, whose walks rewrite only the first word, still fails
 * every sample whose iterations walk, while a preemption between two
 * stores does not.
 */
bool emit_sample(struct bench_ctx *ctx, int sample, const struct iters *it,
		 const char *unit_of_loop, long partner_violations)
{
	uint64_t mark_ticks = ctx->mark ? tsc_now() - ctx->mark_t0 : 0;
	struct pmu_counts pc;
	bool pmu_ok;
	long sw;

	if (ctx->mark)
		mark_end();
	pmu_ok = ctx->pmu_ok && pmu_read(&pc);
	sw = ctx->switches0 >= 0 ? nr_switches() - ctx->switches0 : -1;
	long skipped = ctx->faults0 >= 0 ? ops_backend->faults() - ctx->faults0 : -1;
	long counted = 0, walked = 0, no_event = 0, partial = 0, missed = 0;
	long outliers = 0, unexpected = 0;
	/* iterations that showed a switch; walks and partial ones where
	 * none was due; switches no iteration showed, and what they explain */
	long shown = 0, stray_walks = 0, stray_partial = 0;
	long unshown = -1, explained = 0;
	uint64_t *v = malloc(it->n * sizeof(*v)), sum = 0;
	struct quantiles q = { };
	const char *why = "";
	bool valid;

	if (!v) {
		fprintf(stderr, "opbench: out of memory\n");
		exit(1);
	}
	for (long i = 0; i < it->n; i++) {
		uint8_t b = it->bits[i] & ~IT_SWITCHED;
		bool switched = it->bits[i] & IT_SWITCHED;
		bool all = it->full && b == it->full;
		bool take = false;

		sum += it->dt[i];
		if (b && !all)
			partial++;
		walked += all;
		switch (ctx->expect) {
		case EXPECT_NONE:
			take = !b;
			stray_walks += all;
			stray_partial += b && !all;
			break;
		case EXPECT_ALWAYS:
			take = ctx->nr_ops ? all : !b;
			missed += ctx->nr_ops && !b;
			break;
		case EXPECT_SWITCH:
			if (!switched) {
				no_event++;
				unexpected += all;
				stray_walks += all;
				stray_partial += b && !all;
				break;
			}
			shown++;
			take = ctx->nr_ops ? all : !b;
			missed += ctx->nr_ops && !b;
			break;
		}
		if (take)
			v[counted++] = it->dt[i];
	}
	if (counted) {
		quantiles(v, counted, &q);
		for (long i = 0; i < counted; i++)
			outliers += v[i] > 2 * q.med;
	}
	free(v);
	/*
	 * A walk needs a switch: more walked iterations than switches is a
	 * bug (checked when every iteration was kept). "unexpected" counts
	 * the switch benchmark's walks in iterations where the partner did
	 * not run (another task did): a hint, not a verdict.
	 */
	if (it->n < ctx->loops)
		sw = -1;
	/*
	 * Switches no iteration showed, and the partial iterations they
	 * explain (see above); none when the switches are not known, nor
	 * where every iteration walks.
	 */
	if (sw >= 0) {
		unshown = sw > shown ? sw - shown : 0;
		if (ctx->expect != EXPECT_ALWAYS && unshown > stray_walks)
			explained = stray_partial < unshown - stray_walks ?
				stray_partial : unshown - stray_walks;
	}
	if (partial > explained)
		why = "a walk rewrote some watched words and not others";
	else if (missed)
		why = "an expected walk did not happen";
	else if (ctx->expect != EXPECT_ALWAYS && sw >= 0 && walked > sw)
		why = "words rewritten in more iterations than the thread was switched out";
	else if (partner_violations)
		why = "the partner thread's operations did not run";
	else if (counted * 2 < it->n)
		why = "fewer than half the iterations showed the expected event";
	else if (skipped > 0)
		why = "the design skipped stores that faulted";
	valid = !*why;
	emit_head(ctx, "sample");
	printf(",\"sample\":%d,\"loops\":%ld,\"loop\":\"%s\",\"clock\":\"tsc\","
	       "\"tsc_median\":%llu,\"tsc_p10\":%llu,\"tsc_p90\":%llu,"
	       "\"tsc_mean\":%.3f,\"tsc_trim\":%.3f,\"kept\":%ld,"
	       "\"counted\":%ld,\"outliers\":%ld,"
	       "\"expect\":\"%s\",\"walked\":%ld,\"no_event\":%ld,"
	       "\"partial\":%ld,\"partial_explained\":%ld,\"missed\":%ld,"
	       "\"unexpected\":%ld,\"partner_violations\":%ld,\"better\":\"lower\","
	       "\"walks_per_loop\":%d,",
	       sample, ctx->loops, unit_of_loop, (unsigned long long)q.med,
	       (unsigned long long)q.p10, (unsigned long long)q.p90,
	       (double)sum / it->n, q.trim, it->n, counted, outliers,
	       expect_names[ctx->expect], walked, no_event, partial, explained,
	       missed, unexpected, partner_violations, ctx->walks);
	if (sw >= 0)
		printf("\"switches_per_loop\":%.4f,\"switches_unshown\":%ld,",
		       (double)sw / ctx->loops, unshown);
	if (skipped >= 0)
		printf("\"skipped_stores\":%ld,", skipped);
	if (ctx->mark)
		printf("\"mark_ticks\":%llu,", (unsigned long long)mark_ticks);
	if (pmu_ok)
		pmu_emit_fields(&ctx->pmu0, &pc, ctx->loops);
	printf("\"valid\":%s,\"why\":\"%s\"}\n", valid ? "true" : "false", why);
	ctx->switches0 = -1;
	ctx->faults0 = -1;
	fflush(stdout);
	if (!valid)
		progress("%s N=%d sample %d INVALID: %s", ctx->bench, ctx->nr_ops,
			 sample, why);
	else if (explained)
		progress("%s N=%d sample %d: %ld partial iteration(s) explained by %ld switch(es) no iteration showed",
			 ctx->bench, ctx->nr_ops, sample, explained, unshown);
	return valid;
}

void emit_gate(struct bench_ctx *ctx, const char *what, long expected,
	       long seen, bool valid, const char *detail)
{
	emit_head(ctx, "gate");
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
	emit_head(ctx, "unsupported");
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
	err = ops_register(to, area, ctx->type, ctx->nr_ops, ctx->layout,
			   ctx->no_ops);
	if (!err)
		return 0;
	if (err == -ENOMEM)
		return -1;
	emit_unsupported(ctx, err, ops_refusal(err, area));
	return 1;
}

/*
 * What every cell does before it is timed: pin this thread to @cpu (none
 * when @cpu < 0), register the cell's operations, allocate @it (none when
 * NULL). Returns CELL_READY, or what the benchmark returns: 0 when an
 * "unsupported" record says why the cell is missing, 1 on error, with
 * nothing left registered.
 */
int cell_begin(struct bench_ctx *ctx, int cpu, struct thread_ops *to,
	       struct iters *it)
{
	int ret;

	if (cpu >= 0 && pin_or_complain(ctx, cpu))
		return 1;
	ret = thread_setup(ctx, to);
	if (ret)
		return ret < 0;
	if (it && iters_alloc(it, ctx->loops)) {
		ops_unregister(to);
		return 1;
	}
	return CELL_READY;
}

static const struct bench *find_bench(const char *name)
{
	for (int i = 0; i < NR_BENCHES; i++)
		if (!strcmp(benches[i].name, name))
			return &benches[i];
	return NULL;
}

/*
 * Put the cells of one benchmark in an order drawn from @seed and its name
 * (Fisher-Yates with a 64-bit xorshift), so that N is not confounded with
 * the time into the boot. Seed 0 keeps the order given.
 */
static void shuffle(int *v, int n, unsigned int seed, const char *name)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL;

	if (!seed)
		return;
	for (const char *c = name; *c; c++)
		x = (x ^ (unsigned char)*c) * 0x100000001b3ULL;
	shuffle_ints(v, n, &x);
}

static void emit_order(const char *bench, unsigned int seed, const int *v, int n)
{
	printf("{\"kind\":\"order\",\"bench\":\"%s\",\"flavour\":\"%s\","
	       "\"seed\":%u,\"nr_ops\":[", bench, ob_flavour, seed);
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", v[i]);
	printf("]}\n");
	fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: opbench [options] BENCH|all\n"
		"       opbench --list [--json]\n"
		"options:\n"
		"  -n, --ops LIST      operations per thread, comma separated (default 0,1,%d)\n"
		"      --sweep         operations 0,1,2,4,...,%d\n"
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
		"      --period-us N   preempt: the waker's period (default 331, prime)\n"
		"      --waker-ops     preempt: the waker registers N operations too\n"
		"      --pad N         syscall: N more instructions per call (0..64),\n"
		"                      a known answer for the analysis\n"
		"      --seed N        order of the cells (default 0: as given)\n"
		"      --layout L      packed (default): nodes in list order, or\n"
		"                      scattered: one node per page, list shuffled\n"
		"      --via WAY       how operations are registered: prctl (default,\n"
		"                      PR_RSEQ_OP), bpf (the BPF design's map, which\n"
		"                      rseq-bpf-ops load pinned; at N = 0 the thread\n"
		"                      still opts in to the kernel's hook) or min\n"
		"                      (PR_RSEQ_OPS, the handle ABI: zero stores,\n"
		"                      the kernel's limit found by ENOSPC)\n"
		"      --mark          the instruction profiler's markers around each\n"
		"                      sample (tracing/insnprof; with --warmup 0)\n"
		"  -h, --help\n", OB_RSEQ_OP_LIST_LIMIT, OB_RSEQ_OP_LIST_LIMIT);
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

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "list", no_argument, NULL, 'L' },
		{ "json", no_argument, NULL, 'J' },
		{ "ops", required_argument, NULL, 'n' },
		{ "sweep", no_argument, NULL, 'S' },
		{ "type", required_argument, NULL, 't' },
		{ "reg", required_argument, NULL, 'r' },
		RUN_OPTS_LONG,
		{ "no-ops", no_argument, NULL, 'N' },
		{ "waker-ops", no_argument, NULL, 'W' },
		{ "pad", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 'R' },
		{ "layout", required_argument, NULL, 'Y' },
		{ "mark", no_argument, NULL, 'M' },
		{ "via", required_argument, NULL, 'V' },
		{ }
	};
	struct run_opts ro = {
		.loops = 10000, .samples = 20, .warmup = 2, .cpu = -1, .cpu2 = -1,
		.period_us = 331,
	};
	struct bench_ctx base = { .reg = REG_OWN, .type = OP_NR };
	int ops[OPS_LIST_MAX] = { 0, 1, OB_RSEQ_OP_LIST_LIMIT }, nops = 3;
	int opt, ret = 0;
	bool list = false, list_json = false;

	while ((opt = getopt_long(argc, argv, "n:t:r:" RUN_OPTS_SHORT, lopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'L':
			list = true;
			break;
		case 'J':
			list_json = true;
			break;
		case 'n':
			nops = parse_ops(optarg, ops, OPS_LIST_MAX);
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
		case 'N':
			base.no_ops = true;
			break;
		case 'V':
			if (!strcmp(optarg, "bpf")) {
				ops_backend = &bpfops_backend;
			} else if (!strcmp(optarg, "min")) {
				ops_backend = &minops_backend;
			} else if (strcmp(optarg, "prctl")) {
				fprintf(stderr, "opbench: --via '%s': want prctl, bpf or min\n", optarg);
				return 2;
			}
			break;
		case 'W':
			base.waker_ops = true;
			break;
		case 'p':
			base.pad = parse_num("--pad", optarg, 0);
			if (base.pad > 64) {
				fprintf(stderr, "opbench: --pad %d: at most 64\n", base.pad);
				return 2;
			}
			break;
		case 'R':
			base.seed = parse_num("--seed", optarg, 0);
			break;
		case 'Y':
			if (parse_layout(optarg, &base.layout)) {
				fprintf(stderr, "opbench: --layout '%s': want packed or scattered\n",
					optarg);
				return 2;
			}
			break;
		case 'M':
			base.mark = true;
			break;
		default:
			opt = run_opt(opt, optarg, &ro, usage);
			if (opt != RUN_OPT_TAKEN)
				return opt;
		}
	}
	if (list_json && !list) {
		fprintf(stderr, "opbench: --json goes with --list\n");
		return 2;
	}
	if (list) {
		list_benches(list_json);
		return 0;
	}
	base.loops = ro.loops;
	base.samples = ro.samples;
	base.warmup = ro.warmup;
	base.cpu = ro.cpu;
	base.cpu2 = ro.cpu2;
	base.period_us = ro.period_us;
	if (base.mark && base.warmup) {
		fprintf(stderr, "opbench: --mark needs --warmup 0: every marked window is a timed sample\n");
		return 2;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "opbench: name one benchmark, or 'all' (see --list)\n");
		usage(stderr);
		return 2;
	}
	ob_identify();
	default_cpus(&base.cpu, &base.cpu2, CPU_SETSIZE);
	if (base.cpu < 0 || base.cpu2 < 0 || base.cpu >= CPU_SETSIZE ||
	    base.cpu2 >= CPU_SETSIZE) {
		fprintf(stderr, "opbench: no usable CPU\n");
		return 2;
	}
	if (base.reg != REG_GLIBC)
		reexec_without_glibc_rseq(argv, "opbench", !ob_quiet);
	if (strcmp(argv[optind], "all") && !find_bench(argv[optind])) {
		fprintf(stderr, "opbench: no benchmark '%s' (see --list)\n", argv[optind]);
		return 2;
	}
	emit_clock();
	/* On this (the measured) thread; the record says if there is none. */
	pmu_open();
	pmu_emit_record(ob_flavour, ob_kernel);

	for (int b = 0; b < NR_BENCHES; b++) {
		if (strcmp(argv[optind], "all") && strcmp(argv[optind], benches[b].name))
			continue;
		/* perf and bpftrace see the benchmark's name. */
		prctl(PR_SET_NAME, (unsigned long)benches[b].name, 0, 0, 0);
		shuffle(ops, nops, base.seed, benches[b].name);
		emit_order(benches[b].name, base.seed, ops, nops);
		for (int i = 0; i < nops; i++) {
			struct bench_ctx ctx = base;
			int r;

			ctx.bench = benches[b].name;
			ctx.walks = benches[b].walks;
			ctx.expect = benches[b].expect;
			ctx.switches0 = -1;
			ctx.nr_ops = ops[i];
			if (ctx.type == OP_NR)
				ctx.type = benches[b].type;
			progress("%s: %d operations (%s, %s area), %d x %ld loops",
				 ctx.bench, ctx.nr_ops, op_type_name(ctx.type),
				 reg_mode_name(ctx.reg), ctx.samples, ctx.loops);
			r = benches[b].fn(&ctx);
			/* 2: the thread's state cannot be trusted for another cell */
			if (r == 2) {
				fprintf(stderr, "opbench: %s N=%d left this thread's operations in an unknown state; stopping\n",
					ctx.bench, ctx.nr_ops);
				return 2;
			}
			if (r)
				ret = 1;
		}
	}
	return ret;
}
