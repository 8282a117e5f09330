// SPDX-License-Identifier: GPL-2.0
/*
 * bench-migrate.c - a thread bouncing between two CPUs.
 *
 * One loop is two sched_setaffinity() calls, each moving the thread to the
 * other CPU: two migrations, two returns with new IDs, two walks. With the
 * strided types (the default here is cpu) each walk writes the slot of the
 * CPU or mm_cid the thread lands on. The gate arms the words, migrates
 * once and expects every operation to have written a slot.
 */
#define _GNU_SOURCE
#include "opbench.h"

int bench_migrate(struct bench_ctx *ctx)
{
	struct thread_ops to;
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
	ret = thread_setup(ctx, &to);
	if (ret)
		return ret < 0;

	for (int s = -ctx->warmup; s < ctx->samples; s++) {
		double t0 = sample_start(ctx);

		for (long i = 0; i < ctx->loops; i++) {
			pin_self(ctx->cpu2);
			pin_self(ctx->cpu);
		}
		if (s >= 0)
			emit_sample(ctx, s, now_ns() - t0, ctx->loops,
				    "migration round trip (2 migrations)");
	}

	ops_arm(&to);
	pin_self(ctx->cpu2);
	seen = ops_count_reset(&to);
	pin_self(ctx->cpu);
	emit_gate(ctx, "walk-after-migration", ctx->nr_ops, seen,
		  seen == ctx->nr_ops, "one move to --cpu2");
	ops_unregister(&to);
	return seen != ctx->nr_ops;
}
