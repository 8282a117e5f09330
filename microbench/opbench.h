/* SPDX-License-Identifier: GPL-2.0 */
/*
 * opbench.h - shared declarations of the rseq-opbench microbenchmarks.
 */
#ifndef OPBENCH_H
#define OPBENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "rseq-op-abi.h"

enum reg_mode {
	REG_OWN,	/* our own v2 area, glibc's registration turned off */
	REG_LEGACY,	/* our own 32-byte (v1) area */
	REG_GLIBC,	/* glibc's own area (glibc >= 2.40 makes it v2) */
};

enum op_type {
	OP_RESET4,	/* 4-byte reset from a source word */
	OP_RESET8,	/* 8-byte reset from a source word */
	OP_NULL,	/* 8-byte reset to zero (NULL source) */
	OP_CPU,		/* 8-byte reset in a per-CPU array slot */
	OP_MMCID,	/* 8-byte reset in a per-mm_cid array slot */
	OP_NR,
};

/* Slots in a strided destination array: more than any CPU or mm_cid here. */
#define STRIDE_SLOTS	64

/* What ops_arm() and the per-iteration watch write into a destination. */
#define MARK		0x6d61726bULL

/*
 * Where the nodes live: packed in list order (the friendliest layout to
 * caches), or one node per page with the list in a shuffled page order (the
 * worst an unprivileged user can arrange for the walk).
 */
enum layout { LAYOUT_PACKED, LAYOUT_SCATTERED };

/* A thread's rseq area and the operations it registered. */
struct thread_ops {
	struct ob_rseq *area;
	enum op_type type;
	enum layout layout;
	int nr;			/* registered */
	void *nodes;		/* nr nodes, or nr pages */
	int *page;		/* scattered: the page of node i */
	uint64_t *words;	/* destinations: nr words, or nr * STRIDE_SLOTS */
	uint64_t src;		/* source value for the non-NULL types */
};

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

#define WATCH_MAX	4

/*
 * The words one iteration arms before it and reads after it. With no
 * operations the words are dummies no walk writes, so every cell runs the
 * same instructions per iteration.
 */
struct watch {
	uint64_t *w[WATCH_MAX];
	int nr;
	uint64_t dummy[WATCH_MAX];
};

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

static inline void watch_arm(struct watch *w)
{
	for (int i = 0; i < w->nr; i++)
		*(volatile uint64_t *)w->w[i] = MARK;
}

/* The bits watch_read() gives when every watched word was rewritten. */
static inline uint8_t watch_full(const struct watch *w)
{
	return (1 << w->nr) - 1;
}

static inline uint8_t watch_read(const struct watch *w)
{
	uint8_t b = 0;

	for (int i = 0; i < w->nr; i++)
		b |= (*(volatile uint64_t *)w->w[i] != MARK) << i;
	return b;
}

/* One measurement cell: everything a record carries. */
struct bench_ctx {
	const char *bench;
	int walks;		/* walks per loop, from the table */
	long switches0;		/* switches at sample_start(), or -1 */
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

struct bench {
	const char *name;
	const char *summary;
	int walks;		/* list walks per timed loop, when operations run */
	enum iter_expect expect;	/* what each iteration must show */
	enum op_type type;	/* operation type when --type is not given */
	int (*fn)(struct bench_ctx *ctx);
};

/*
 * The benchmarks' clock: the TSC, read directly. Under QEMU icount it
 * advances exactly one tick per guest instruction, whatever frequency the
 * guest calibrated; elsewhere the "clock" record (opbench.c) gives the
 * guest's nanoseconds per tick. The lfence keeps earlier instructions from
 * drifting past the read on hardware; it is one instruction under icount.
 */
static inline uint64_t tsc_now(void)
{
	uint32_t lo, hi;

	asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
}

/* opbench.c: records */
/* Start a record of @kind with the cell's fields; the caller adds its own
 * fields, each preceded by a comma, and ends it with "}\n". */
void emit_head(struct bench_ctx *ctx, const char *kind);
int iters_alloc(struct iters *it, long n);
void iters_free(struct iters *it);
int cmp_u64(const void *a, const void *b);
bool emit_sample(struct bench_ctx *ctx, int sample, const struct iters *it,
		 const char *unit_of_loop, long partner_violations);
void emit_gate(struct bench_ctx *ctx, const char *what, long expected,
	       long seen, bool valid, const char *detail);
void emit_unsupported(struct bench_ctx *ctx, int err, const char *why);
double now_ns(void);
void sample_start(struct bench_ctx *ctx);
void emit_clock(void);
/* common.c, shared with tcmodel */
extern const char *ob_prog;
extern bool ob_quiet;
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long parse_num(const char *opt, const char *s, long min);
int pin_self(int cpu);
void default_cpus(int *cpu, int *cpu2, int limit);
const char *flavour_of_release(const char *release);
void emit_clock_for(const char *flavour, const char *release);
int pin_or_complain(const struct bench_ctx *ctx, int cpu);
int thread_setup(struct bench_ctx *ctx, struct thread_ops *to);
long nr_switches(void);

/* reg.c: registration helpers */
const char *reg_mode_name(enum reg_mode m);
const char *op_type_name(enum op_type t);
int parse_reg_mode(const char *s, enum reg_mode *m);
int parse_op_type(const char *s, enum op_type *t);
bool glibc_owns_rseq(void);
void reexec_without_glibc_rseq(char **argv, const char *me, bool say);
int rseq_register_thread(enum reg_mode m, struct ob_rseq **area);
int rseq_unregister_thread(enum reg_mode m, struct ob_rseq *area);
int ops_register(struct thread_ops *to, struct ob_rseq *area, enum op_type type,
		 int nr, enum layout layout, bool pretend);
const char *layout_name(enum layout l);
int parse_layout(const char *s, enum layout *l);
void shuffle_ints(int *v, int n, uint64_t *state);
int op_node_init(void *n, enum op_type type, uint64_t *dst, const uint64_t *src);
void ops_unregister(struct thread_ops *to);
const char *ops_refusal(int err, const struct ob_rseq *area);
void ops_arm(struct thread_ops *to);
long ops_count_reset(struct thread_ops *to);
int ops_slot(struct thread_ops *to, int cpu);
long ops_count_exact(struct thread_ops *to, int slot);
void watch_ops(struct watch *w, struct thread_ops *to, int slot);
void watch_add(struct watch *w, struct thread_ops *to, int slot);

/* One function per benchmark, each in its own file. */
int bench_syscall(struct bench_ctx *ctx);
int bench_switch(struct bench_ctx *ctx);
int bench_preempt(struct bench_ctx *ctx);
int bench_signal(struct bench_ctx *ctx);
int bench_migrate(struct bench_ctx *ctx);
int bench_register(struct bench_ctx *ctx);

#endif /* OPBENCH_H */
