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

/* A thread's rseq area and the operations it registered. */
struct thread_ops {
	struct ob_rseq *area;
	enum op_type type;
	int nr;			/* registered */
	void *nodes;		/* nr nodes */
	uint64_t *words;	/* destinations: nr words, or nr * STRIDE_SLOTS */
	uint64_t src;		/* source value for the non-NULL types */
};

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
	bool no_ops;		/* test hook: pretend to register, do not */
};

struct bench {
	const char *name;
	const char *summary;
	int walks;		/* list walks per timed loop, when operations run */
	enum op_type type;	/* operation type when --type is not given */
	int (*fn)(struct bench_ctx *ctx);
};

/* opbench.c: records */
void emit_sample(struct bench_ctx *ctx, int sample, double ns, long loops,
		 const char *unit_of_loop);
void emit_gate(struct bench_ctx *ctx, const char *what, long expected,
	       long seen, bool valid, const char *detail);
void emit_unsupported(struct bench_ctx *ctx, int err, const char *why);
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double now_ns(void);
double sample_start(struct bench_ctx *ctx);
int pin_self(int cpu);
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
		 int nr, bool pretend);
void ops_unregister(struct thread_ops *to);
void ops_arm(struct thread_ops *to);
long ops_count_reset(struct thread_ops *to);

/* One function per benchmark, each in its own file. */
int bench_syscall(struct bench_ctx *ctx);
int bench_switch(struct bench_ctx *ctx);
int bench_preempt(struct bench_ctx *ctx);
int bench_signal(struct bench_ctx *ctx);
int bench_migrate(struct bench_ctx *ctx);

#endif /* OPBENCH_H */
