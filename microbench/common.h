/* SPDX-License-Identifier: GPL-2.0 */
/*
 * common.h - what common.c defines, for opbench and tcmodel (both link
 * common.c and reg.c): the benchmarks' clock, the records' head and clock
 * record, the median and percentiles of a sample, the SCHED_FIFO periodic
 * waker, the thread's context switches and a sleep that ends in one,
 * progress messages, option numbers, pinning and the flavour.
 */
#ifndef OPBENCH_COMMON_H
#define OPBENCH_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "reg.h"

/*
 * The benchmarks' clock: the TSC, read directly. Under QEMU icount it
 * advances exactly one tick per guest instruction, whatever frequency the
 * guest calibrated; elsewhere the "clock" record (emit_clock()) gives the
 * guest's nanoseconds per tick. The lfence keeps earlier instructions from
 * drifting past the read on hardware; it is one instruction under icount.
 */
static inline uint64_t tsc_now(void)
{
	uint32_t lo, hi;

	asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
}

/* The program's name in its messages, -q, and what the records call the
 * flavour (-f, else uname -r after the first dash) and the kernel. */
extern const char *ob_prog;
extern bool ob_quiet;
extern const char *ob_flavour;
extern const char *ob_kernel;

/* uname -r into ob_kernel, and the flavour from it unless -f named one. */
void ob_identify(void);
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long parse_num(const char *opt, const char *s, long min);

/* The options opbench and tcmodel share: how much is timed, where, as what. */
struct run_opts {
	long loops;		/* -l: timed iterations per sample */
	int samples;		/* -s */
	int warmup;		/* -w: untimed samples first */
	int cpu, cpu2;		/* -c, -C: -1 until default_cpus() */
	int period_us;		/* --period-us: the preempt waker's period */
};
#define RUN_OPTS_SHORT	"l:s:w:c:C:f:qh"
#define RUN_OPTS_LONG							\
	{ "loops", required_argument, NULL, 'l' },			\
	{ "samples", required_argument, NULL, 's' },			\
	{ "warmup", required_argument, NULL, 'w' },			\
	{ "cpu", required_argument, NULL, 'c' },			\
	{ "cpu2", required_argument, NULL, 'C' },			\
	{ "flavour", required_argument, NULL, 'f' },			\
	{ "quiet", no_argument, NULL, 'q' },				\
	{ "period-us", required_argument, NULL, 'P' },			\
	{ "help", no_argument, NULL, 'h' }
/*
 * The getopt_long() result @opt that the program did not take itself:
 * one of RUN_OPTS_LONG's options into @o (or ob_flavour, ob_quiet), and
 * RUN_OPT_TAKEN; else what main() returns: 0 after -h (@usage to
 * stdout), 2 after anything unknown (@usage to stderr). A bad number
 * exits 2 (parse_num()).
 */
#define RUN_OPT_TAKEN	-1
int run_opt(int opt, const char *arg, struct run_opts *o,
	    void (*usage)(FILE *f));
int pin_self(int cpu);
/* pin_self(), saying "<prog>: @who: cannot pin to CPU ..." when it fails. */
int pin_or_say(const char *who, int cpu);
void default_cpus(int *cpu, int *cpu2, int limit);
const char *flavour_of_release(const char *release);
double now_ns(void);

/* This thread's context switches so far, voluntary and involuntary. */
long nr_switches(void);

/*
 * Leave the CPU until the scheduler has switched this thread out: poll()
 * for a millisecond at a time until nr_switches() moved, at most @max
 * times. One poll() does not always block: the timer may have expired by
 * the time the thread reaches schedule() (under TCG the host can
 * deschedule the vCPU in between), and then nothing switched and no walk
 * ran. Once the count moved, the return from the switch has already run
 * the exit path (before the getrusage() that saw it). Returns the polls
 * taken, 1 .. @max, or 0 when none of @max switched the thread out (the
 * caller's gate says so rather than checking words no walk was due to
 * write). correctness/guest/sched_out.h is the same idea, unbounded.
 */
int sched_out(int max);
#define SCHED_OUT_MAX	1000
int cmp_u64(const void *a, const void *b);

/* The "clock" record: what a TSC tick is here, measured. */
void emit_clock(void);

/*
 * The fields every record of a measured cell starts with, in both
 * programs: what was measured (bench), where (flavour, kernel, cpu) and
 * every variant a sample depends on. tcmodel fills what it has: its cell
 * registers one operation or none (nr_ops), a NULL reset, on glibc's area
 * (ops mode) or a legacy one (legacy mode), and its waker holds none.
 */
struct rec_head {
	const char *bench;
	int nr_ops;
	enum op_type type;
	enum reg_mode reg;
	int cpu;
	enum layout layout;
	bool waker_ops;		/* the preempt waker holds N operations too */
	int period_us;		/* the preempt waker's period */
	int warmup;		/* untimed samples before the timed ones */
	bool no_ops;		/* test hook: operations set up, not registered */
	int pad;		/* syscall: extra instructions per call */
};

/* Start a record of @kind with @h's fields; the caller adds its own
 * fields, each preceded by a comma, and ends it with "}\n". */
void emit_rec_head(const struct rec_head *h, const char *kind);

/* A sample's figures: order statistics of its timed iterations. */
struct quantiles {
	uint64_t med;		/* v[n / 2] */
	uint64_t p10;		/* v[n / 10] */
	uint64_t p90;		/* v[n * 9 / 10] */
	double trim;		/* mean of v[n / 10] .. v[n - 1 - n / 10] */
};

/*
 * Sort @v (@n > 0 values) in place and take its quantiles, and the mean
 * with a tenth cut from each end: where a sample's iterations spread over
 * a few TSC steps, the median sits on the step's grid and the trimmed
 * mean does not.
 */
void quantiles(uint64_t *v, long n, struct quantiles *q);

/*
 * The SCHED_FIFO periodic waker: a thread on the measured thread's CPU,
 * at a higher priority, that sleeps to an absolute CLOCK_MONOTONIC period
 * and preempts the measured thread at each wake-up. The program's thread
 * function pins itself, calls waker_fifo(), sets up what it needs and runs
 * waker_periods() until waker_stop().
 */
#define WAKER_PRIO	50

enum waker_state {
	WAKER_STARTING,
	WAKER_RUNNING,
	WAKER_FAILED,		/* the thread function said why */
	WAKER_NO_FIFO,		/* SCHED_FIFO refused: err */
	WAKER_UNSUPPORTED,	/* it emitted an "unsupported" record */
};

struct waker {
	int period_us;		/* in */
	int state;		/* enum waker_state */
	int err;		/* why it failed, an errno */
	int stop;
};

/* On the waker thread: SCHED_FIFO at WAKER_PRIO. 0, or the error. */
int waker_fifo(void);

/*
 * Start @fn(@arg), a waker thread of @wk, and wait until it runs or failed:
 * its state, or -1 when no thread started (said on stderr).
 */
int waker_start(struct waker *wk, pthread_t *th, void *(*fn)(void *), void *arg);
void waker_stop(struct waker *wk, pthread_t th);

/*
 * The waker's periods: @arm(@arg) before each sleep, @woken(@arg) after
 * each wake-up, until waker_stop(). What the waker does between a wake-up
 * and its next sleep lies inside the preemption both programs time, so
 * the loop is inlined into each waker with its hooks: no call, nothing
 * but the hooks' own instructions.
 *
 * With @restart_late, a wake-up a period late or more starts the period
 * again from now (tcmodel); without, the absolute schedule is kept and a
 * late waker catches up at once (opbench's preempt, which records the
 * second wake-up in the same gap and judges the sample disturbed).
 */
static inline __attribute__((always_inline)) void
waker_periods(struct waker *wk, void (*arm)(void *), void (*woken)(void *),
	      void *arg, const bool restart_late)
{
	struct timespec next, now;

	clock_gettime(CLOCK_MONOTONIC, &next);
	__atomic_store_n(&wk->state, WAKER_RUNNING, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&wk->stop, __ATOMIC_ACQUIRE)) {
		next.tv_nsec += wk->period_us * 1000L;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		arm(arg);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		woken(arg);
		if (!restart_late)
			continue;
		/*
		 * Woken a period late or more: start the period again from
		 * now, or the next sleep returns at once and wakes a second
		 * time while the measured thread is still off the CPU.
		 */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec + 1 ||
		    (now.tv_sec - next.tv_sec) * 1000000000L + now.tv_nsec -
		    next.tv_nsec >= wk->period_us * 1000L)
			next = now;
	}
}

#endif /* OPBENCH_COMMON_H */
