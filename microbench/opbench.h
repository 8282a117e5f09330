/* SPDX-License-Identifier: GPL-2.0 */
/*
 * opbench.h - the opbench harness (opbench.c) and its benchmarks
 * (bench-*.c). What opbench shares with tcmodel is in common.h (common.c),
 * what all three programs link in reg.h (reg.c).
 */
#ifndef OPBENCH_H
#define OPBENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "pmu.h"

/*
 * What one timed iteration of a benchmark must show on the watched words
 * (the first and last operation's destination; for a strided type, their
 * slot for the CPU or mm_cid the thread is on):
 *   EXPECT_NONE	no walk (syscall: a walk needs a schedule)
 *   EXPECT_ALWAYS	every watched word rewritten (signal, migrate)
 *   EXPECT_SWITCH	rewritten exactly when the thread was switched out
 *			in that iteration (switch: the partner ran)
 */
enum iter_expect { EXPECT_NONE, EXPECT_ALWAYS, EXPECT_SWITCH };

/* Per-iteration bits in struct iters.bits[]: which watched words changed. */
#define IT_SWITCHED	0x80	/* the thread was switched out (switch) */

/*
 * One sample's iterations: time and what the watched words showed. Index
 * iteration i at [i & mask]: a sample of more than ITERS_MAX iterations
 * (tracing runs one of 10^9, stopped from outside) keeps the last ones.
 */
#define ITERS_MAX	(1L << 20)
struct iters {
	uint64_t *dt;		/* TSC ticks per iteration */
	uint8_t *bits;		/* bit i: watched word i was rewritten */
	long n;			/* iterations kept: min(loops, ITERS_MAX) */
	long mask;		/* a power of two less one, at least n - 1 */
	uint8_t full;		/* the bits of every watched word */
};

/* One measurement cell: everything a record carries. */
struct bench_ctx {
	const char *bench;
	int walks;		/* walks per loop, from the table */
	long switches0;		/* switches at sample_start(), or -1 */
	long faults0;		/* ops_backend's skipped stores then, or -1 */
	enum reg_mode reg;
	enum op_type type;
	int nr_ops;
	long loops;		/* timed iterations per sample */
	int samples;
	int warmup;		/* untimed samples first */
	int cpu;		/* CPU the measured thread runs on */
	int cpu2;		/* second CPU (migrate) */
	enum iter_expect expect;	/* what each iteration must show, from the table */
	bool no_ops;		/* test hook: pretend to register, do not */
	int period_us;		/* preempt: the waker's period */
	bool waker_ops;		/* preempt: the waker holds N operations too */
	enum layout layout;	/* where the nodes live */
	int pad;		/* syscall: extra instructions per call (0..64) */
	unsigned int seed;	/* order of the cells, recorded */
	struct pmu_counts pmu0;	/* the counters at sample_start() */
	bool pmu_ok;		/* pmu0 was read */
	bool mark;		/* --mark: the profiler's markers around each sample */
	uint64_t mark_t0;	/* TSC right after the begin marker */
};

/*
 * The instruction profiler's window markers (tracing/insnprof): nopl
 * "BEGN"(%rax) and nopl "END!"(%rax), seven-byte NOPs anywhere else.
 */
static inline void mark_begin(void)
{
	asm volatile(".byte 0x0f, 0x1f, 0x80\n\t.long 0x4e474542" ::: "memory");
}

static inline void mark_end(void)
{
	asm volatile(".byte 0x0f, 0x1f, 0x80\n\t.long 0x21444e45" ::: "memory");
}

/*
 * How a benchmark is run, beside what it measures (opbench --list --json
 * exports them into a run, where the planner and the tracing read them):
 *   BENCH_ALONE	on one CPU with the others offline, in a guest: no
 *			other vCPU's instructions fall into its gaps (preempt)
 *   BENCH_TRACED	its walks per loop are counted by the tracing step
 *			(bpftrace) against what it declares
 *   BENCH_GAPS		its samples are gaps between events (kind "gaps"),
 *			not timed loops: no --mark window around them, so
 *			the instruction profiler has nothing to count
 *			(--list --json: "marked": false)
 */
#define BENCH_ALONE	0x1
#define BENCH_TRACED	0x2
#define BENCH_GAPS	0x4

struct bench {
	const char *name;
	const char *summary;
	int walks;		/* list walks per timed loop, when operations run */
	enum iter_expect expect;	/* what each iteration must show */
	enum op_type type;	/* operation type when --type is not given */
	int (*fn)(struct bench_ctx *ctx);
	unsigned int flags;	/* BENCH_ALONE, BENCH_TRACED */
};

/* opbench.c: the harness's records and threads */
/* Start a record of @kind with the cell's fields (emit_rec_head()); the
 * caller adds its own fields, each preceded by a comma, and ends it with
 * "}\n". */
void emit_head(struct bench_ctx *ctx, const char *kind);
bool emit_sample(struct bench_ctx *ctx, int sample, const struct iters *it,
		 const char *unit_of_loop, long partner_violations);
void emit_gate(struct bench_ctx *ctx, const char *what, long expected,
	       long seen, bool valid, const char *detail);
void emit_unsupported(struct bench_ctx *ctx, int err, const char *why);
void sample_start(struct bench_ctx *ctx);
int iters_alloc(struct iters *it, long n);
void iters_free(struct iters *it);
int pin_or_complain(const struct bench_ctx *ctx, int cpu);
int thread_setup(struct bench_ctx *ctx, struct thread_ops *to);
/* cell_begin(): the cell may be timed; any other value is the bench's. */
#define CELL_READY	-1
int cell_begin(struct bench_ctx *ctx, int cpu, struct thread_ops *to,
	       struct iters *it);

/*
 * The timed samples of a cell: @body once per iteration between two TSC
 * reads, the watched words of @w read after it, warm-up samples dropped;
 * @valid is and-ed with each emitted sample's verdict. A macro, so that
 * the body is compiled in place: nothing but the body is timed.
 */
#define TIMED_SAMPLES(ctx, it, w, valid, unit_of_loop, body)		\
	for (int s_ = -(ctx)->warmup; s_ < (ctx)->samples; s_++) {	\
		sample_start(ctx);					\
		for (long i_ = 0; i_ < (ctx)->loops; i_++) {		\
			uint64_t t0_;					\
									\
			watch_arm(w);					\
			t0_ = tsc_now();				\
			body;						\
			(it)->dt[i_ & (it)->mask] = tsc_now() - t0_;	\
			(it)->bits[i_ & (it)->mask] = watch_read(w);	\
		}							\
		if (s_ >= 0)						\
			(valid) &= emit_sample(ctx, s_, it, unit_of_loop, 0); \
	}

/* One function per benchmark, each in its own file. */
int bench_syscall(struct bench_ctx *ctx);
int bench_switch(struct bench_ctx *ctx);
int bench_preempt(struct bench_ctx *ctx);
int bench_signal(struct bench_ctx *ctx);
int bench_migrate(struct bench_ctx *ctx);
int bench_register(struct bench_ctx *ctx);

#endif /* OPBENCH_H */
