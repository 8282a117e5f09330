// SPDX-License-Identifier: GPL-2.0
/*
 * bench-migrate.c - a thread bouncing between two CPUs.
 *
 * One loop is two sched_setaffinity() calls, each moving the thread to the
 * other CPU: two migrations, two returns with new IDs, two walks. With the
 * strided types (the default here is cpu) each walk writes the slot of the
 * CPU or mm_cid the thread lands on. Every iteration watches the first and
 * last operation's slot for each CPU; all four must be rewritten. The
 * cell's gate arms every slot, migrates once and expects each operation to
 * have written the slot of the CPU it arrived on, and no other slot.
 *
 * Under QEMU icount the vCPUs run in turn on one host thread and the TSC
 * counts the instructions of both, idle loops included: the figure is not
 * this thread's cost alone (the report says so).
 */
#define _GNU_SOURCE
#include "opbench.h"

int bench_migrate(struct bench_ctx *ctx)
{
	struct thread_ops to;
	struct watch w = { };
	struct iters it;
	bool valid = true;
	long seen;
	int ret;

	if (ctx->cpu == ctx->cpu2) {
		emit_unsupported(ctx, 0, "migrate needs two CPUs (--cpu, --cpu2)");
		return 0;
	}
	if (pin_self(ctx->cpu) || pin_self(ctx->cpu2) || pin_self(ctx->cpu)) {
		emit_unsupported(ctx, 0, "cannot move between --cpu and --cpu2");
		return 0;
	}
	/* Pinned to --cpu above, after a first move to --cpu2. */
	ret = cell_begin(ctx, -1, &to, &it);
	if (ret != CELL_READY)
		return ret;
	/* mm_cid slots are watched as the IDs are when the cell starts. */
	watch_ops(&w, &to, ops_slot(&to, ctx->cpu2));
	pin_self(ctx->cpu2);
	watch_add(&w, &to, ops_slot(&to, ctx->cpu));
	pin_self(ctx->cpu);
	it.full = watch_full(&w);

	TIMED_SAMPLES(ctx, &it, &w, valid, "migration round trip (2 migrations)",
		      pin_self(ctx->cpu2); pin_self(ctx->cpu));
	iters_free(&it);

	ops_arm(&to);
	pin_self(ctx->cpu2);
	seen = ops_count_exact(&to, ops_slot(&to, ctx->cpu2));
	pin_self(ctx->cpu);
	emit_gate(ctx, "walk-after-migration", ctx->nr_ops, seen,
		  seen == ctx->nr_ops, "one move to --cpu2: its slot and no other");
	valid &= seen == ctx->nr_ops;
	ops_unregister(&to);
	return !valid;
}
