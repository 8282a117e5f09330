// SPDX-License-Identifier: GPL-2.0
/*
 * common.c - what opbench and tcmodel share (declared in common.h): the
 * benchmarks' clock (what a TSC tick is on this machine, measured), the
 * records' head, a sample's median and percentiles, the SCHED_FIFO
 * periodic waker, the thread's context switches and sched_out(), progress
 * messages, option numbers, pinning, the default CPUs and the flavour's
 * name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>

#include "common.h"

/* The program's name in its messages, and -q. */
const char *ob_prog = "opbench";
bool ob_quiet;
const char *ob_flavour = "unknown";
const char *ob_kernel = "";

void ob_identify(void)
{
	static struct utsname uts;

	uname(&uts);
	ob_kernel = uts.release;
	if (!strcmp(ob_flavour, "unknown"))
		ob_flavour = flavour_of_release(uts.release);
}

void progress(const char *fmt, ...)
{
	va_list ap;

	if (ob_quiet)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", ob_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* An option's number, at least @min; exits 2 with the option named. */
long parse_num(const char *opt, const char *s, long min)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end || v < min) {
		fprintf(stderr, "%s: %s '%s' is not a number >= %ld\n", ob_prog, opt, s, min);
		exit(2);
	}
	return v;
}

int run_opt(int opt, const char *arg, struct run_opts *o,
	    void (*usage)(FILE *f))
{
	switch (opt) {
	case 'l':
		o->loops = parse_num("--loops", arg, 1);
		break;
	case 's':
		o->samples = parse_num("--samples", arg, 1);
		break;
	case 'w':
		o->warmup = parse_num("--warmup", arg, 0);
		break;
	case 'c':
		o->cpu = parse_num("--cpu", arg, 0);
		break;
	case 'C':
		o->cpu2 = parse_num("--cpu2", arg, 0);
		break;
	case 'f':
		ob_flavour = arg;
		break;
	case 'q':
		ob_quiet = true;
		break;
	case 'P':
		o->period_us = parse_num("--period-us", arg, 10);
		break;
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return 2;
	}
	return RUN_OPT_TAKEN;
}

int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/*
 * Pin the calling thread for something that means nothing unpinned (two
 * threads that must share a CPU, a loop that must not migrate); say which
 * CPU could not be had.
 */
int pin_or_say(const char *who, int cpu)
{
	int ret = pin_self(cpu);

	if (ret)
		fprintf(stderr, "%s: %s: cannot pin to CPU %d: %s (see --cpu)\n",
			ob_prog, who, cpu, strerror(-ret));
	return ret;
}

/*
 * The CPUs not given (negative): @cpu the last one allowed, @cpu2 the
 * first, both below @limit.
 */
void default_cpus(int *cpu, int *cpu2, int limit)
{
	cpu_set_t set;
	int first = -1, last = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int c = 0; c < CPU_SETSIZE && c < limit; c++) {
		if (CPU_ISSET(c, &set)) {
			if (first < 0)
				first = c;
			last = c;
		}
	}
	if (*cpu < 0)
		*cpu = last;
	if (*cpu2 < 0)
		*cpu2 = first;
}

/* Our kernels name their flavour after the first dash: 7.2.13-ops. */
const char *flavour_of_release(const char *release)
{
	const char *dash = strchr(release, '-');

	return dash && dash[1] ? dash + 1 : "unknown";
}

double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

long nr_switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

int sched_out(int max)
{
	long before = nr_switches();

	for (int polls = 1; polls <= max; polls++) {
		poll(NULL, 0, 1);
		if (nr_switches() != before)
			return polls;
	}
	return 0;
}

/* qsort() order of uint64_t. */
int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void quantiles(uint64_t *v, long n, struct quantiles *q)
{
	long lo = n / 10, hi = n - n / 10;
	double sum = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	q->med = v[n / 2];
	q->p10 = v[n / 10];
	q->p90 = v[n * 9 / 10];
	for (long i = lo; i < hi; i++)
		sum += v[i];
	q->trim = sum / (hi - lo);
}

void emit_rec_head(const struct rec_head *h, const char *kind)
{
	printf("{\"kind\":\"%s\",\"bench\":\"%s\",\"flavour\":\"%s\","
	       "\"kernel\":\"%s\",\"nr_ops\":%d,\"op_type\":\"%s\",\"reg\":\"%s\","
	       "\"cpu\":%d,\"layout\":\"%s\",\"waker_ops\":%s,\"period_us\":%d,"
	       "\"warmup\":%d,\"no_ops\":%s,\"pad\":%d,\"via\":\"%s\"",
	       kind, h->bench, ob_flavour, ob_kernel, h->nr_ops,
	       op_type_name(h->type), reg_mode_name(h->reg), h->cpu,
	       layout_name(h->layout), h->waker_ops ? "true" : "false",
	       h->period_us, h->warmup, h->no_ops ? "true" : "false", h->pad,
	       ops_backend ? ops_backend->name : "prctl");
}

/* @n iterations of a two-instruction loop (dec, jnz). */
static void known_loop(long n)
{
	asm volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
}

/* The fewest TSC ticks @n known iterations took in @tries runs. */
static uint64_t min_ticks(long n, int tries, double *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < tries; i++) {
		double t0 = now_ns();
		uint64_t a = tsc_now(), d;

		known_loop(n);
		d = tsc_now() - a;
		if (d < best) {
			best = d;
			*ns = now_ns() - t0;
		}
	}
	return best;
}

/*
 * The TSC's step: the greatest common divisor of the differences between
 * two reads in a row, over @tries pairs (a difference is the read's own
 * latency rounded to the step, so their divisor is the step, not the
 * latency). Some TSCs advance by more than one tick at a time (this
 * project's development machine: 21), which puts every median on a grid
 * of that step. 0 when no pair differed.
 */
static uint64_t tsc_step(int tries)
{
	uint64_t step = 0;

	for (int i = 0; i < tries; i++) {
		uint64_t a = tsc_now(), b = tsc_now(), d = b > a ? b - a : 0;

		while (d) {
			uint64_t r = step % d;

			step = d;
			d = r;
		}
	}
	return step;
}

/*
 * What one TSC tick is here, measured, not assumed: the ticks a loop of a
 * known number of instructions takes (the difference of two lengths, so
 * the reads' own cost cancels; the fewest of several runs, so an interrupt
 * does not count), and the guest's CLOCK_MONOTONIC nanoseconds per tick.
 * Under QEMU icount ticks_per_insn is 1: a tick is an instruction. And
 * the TSC's step (tsc_step()).
 * With it, what the kernel says of itself that the designs table shows:
 * AT_RSEQ_FEATURE_SIZE, the part of struct rseq it knows (0: no such
 * entry in the auxiliary vector).
 */
void emit_clock(void)
{
	const long n1 = 20000, n2 = 120000;
	double ns1, ns2;
	uint64_t t1 = min_ticks(n1, 25, &ns1), t2 = min_ticks(n2, 25, &ns2);

	printf("{\"kind\":\"clock\",\"flavour\":\"%s\",\"kernel\":\"%s\","
	       "\"clock\":\"tsc\",\"insns\":%ld,\"ticks\":%llu,"
	       "\"ticks_per_insn\":%.6f,\"ns_per_tick\":%.6f,"
	       "\"tsc_step\":%llu,\"rseq_feature_size\":%lu}\n",
	       ob_flavour, ob_kernel, 2 * (n2 - n1),
	       (unsigned long long)(t2 - t1), (double)(t2 - t1) / (2 * (n2 - n1)),
	       t2 > t1 ? (ns2 - ns1) / (double)(t2 - t1) : 0.0,
	       (unsigned long long)tsc_step(10000),
	       getauxval(OB_AT_RSEQ_FEATURE_SIZE));
	fflush(stdout);
}

int waker_fifo(void)
{
	struct sched_param sp = { .sched_priority = WAKER_PRIO };

	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

int waker_start(struct waker *wk, pthread_t *th, void *(*fn)(void *), void *arg)
{
	int ret, st;

	wk->state = WAKER_STARTING;
	wk->stop = 0;
	ret = pthread_create(th, NULL, fn, arg);
	if (ret) {
		fprintf(stderr, "%s: preempt: cannot start the waker: %s\n", ob_prog,
			strerror(ret));
		return -1;
	}
	while ((st = __atomic_load_n(&wk->state, __ATOMIC_ACQUIRE)) == WAKER_STARTING)
		sched_yield();
	if (st != WAKER_RUNNING)
		pthread_join(*th, NULL);
	return st;
}

void waker_stop(struct waker *wk, pthread_t th)
{
	__atomic_store_n(&wk->stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
}
