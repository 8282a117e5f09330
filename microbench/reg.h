/* SPDX-License-Identifier: GPL-2.0 */
/*
 * reg.h - what reg.c defines: rseq registration, RSEQ operations and the
 * words they reset. opbench, tcmodel and correctness/stress/rseq_op_stress.c
 * all link reg.c; the stress program links nothing else of microbench/.
 */
#ifndef OPBENCH_REG_H
#define OPBENCH_REG_H

#include <stdbool.h>
#include <stdint.h>

#include "rseq-op-abi.h"

/* The signature every rseq registration here passes, and every abort
 * handler is preceded by. */
#define OB_RSEQ_SIG	0x53053053

/* The CPUs (and mm_cids) these programs handle: 0 .. OB_CPUS - 1. */
#define OB_CPUS		64

/* Slots in a strided destination array: one per CPU or mm_cid. */
#define STRIDE_SLOTS	OB_CPUS

/* What ops_arm() and the per-iteration watch write into a destination. */
#define MARK		0x6d61726bULL

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
	bool begun;		/* ops_backend->thread_begin() done */
};

#define WATCH_MAX	4

/*
 * The words one iteration arms before it and reads after it. With no
 * operations the words are dummies no walk writes, so every cell runs the
 * same instructions per iteration. The words are stored, and loaded, one
 * after the other: a switch out between two of them (the walk runs on the
 * way back) leaves one word rewritten and the other not, which looks like
 * a walk stopped part way. opbench's emit_sample() accounts for that with
 * the switches the sample counted; keep the two stores and the two loads
 * adjacent so that the window stays a few instructions wide.
 */
struct watch {
	uint64_t *w[WATCH_MAX];
	int nr;
	uint64_t dummy[WATCH_MAX];
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

/*
 * How operations are registered: prctl(PR_RSEQ_OP) when ops_backend is
 * NULL (the default), else another design's calls (opbench --via bpf sets
 * it to bpfops.c's). Each node is one that op_node_init() filled.
 *   thread_begin	before a thread's first operation, even at N = 0
 *			(the design's opt-in): 0 or -errno
 *   add, remove	one node: 0 or -errno
 *   thread_end		after a thread's last unregistration
 *   refusal		why thread_begin() or add() failed with err
 *   faults		stores the design skipped for this thread so far
 *			(NULL: it never skips one)
 */
struct ops_backend {
	const char *name;
	int (*thread_begin)(void);
	int (*add)(const void *node, enum op_type type);
	int (*remove)(const void *node, enum op_type type);
	void (*thread_end)(void);
	const char *(*refusal)(int err);
	long (*faults)(void);
};
extern const struct ops_backend *ops_backend;

/* Register or unregister one node @n of @type, as ops_backend says. */
int op_node_register(const void *n, enum op_type type);
int op_node_unregister(const void *n, enum op_type type);

/* Names of the enums, as the records and the options spell them. */
const char *reg_mode_name(enum reg_mode m);
const char *op_type_name(enum op_type t);
const char *layout_name(enum layout l);
int parse_reg_mode(const char *s, enum reg_mode *m);
int parse_op_type(const char *s, enum op_type *t);
int parse_layout(const char *s, enum layout *l);

/* Registration of the thread's rseq area. */
bool glibc_owns_rseq(void);
void reexec_without_glibc_rseq(char **argv, const char *me, bool say);
int rseq_register_thread(enum reg_mode m, struct ob_rseq **area);
int rseq_unregister_thread(enum reg_mode m, struct ob_rseq *area);

/* RSEQ operations, and the words they reset. */
void shuffle_ints(int *v, int n, uint64_t *state);
int op_node_init(void *n, enum op_type type, uint64_t *dst, const uint64_t *src);
int ops_register(struct thread_ops *to, struct ob_rseq *area, enum op_type type,
		 int nr, enum layout layout, bool pretend);
void ops_unregister(struct thread_ops *to);
const char *ops_refusal(int err, const struct ob_rseq *area);
void ops_arm(struct thread_ops *to);
long ops_count_reset(struct thread_ops *to);
int ops_slot(struct thread_ops *to, int cpu);
long ops_count_exact(struct thread_ops *to, int slot);
void watch_ops(struct watch *w, struct thread_ops *to, int slot);
void watch_add(struct watch *w, struct thread_ops *to, int slot);

#endif /* OPBENCH_REG_H */
