// SPDX-License-Identifier: GPL-2.0
/*
 * bench-signal.c - raise(), an empty handler, and back.
 *
 * Operations run at signal delivery, before the handler: every iteration
 * must find its watched words rewritten. The cell's gate raises one signal
 * more and expects every operation to have written its slot, and only it.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>

#include "opbench.h"

static void empty_handler(int sig)
{
	(void)sig;
}

int bench_signal(struct bench_ctx *ctx)
{
	struct sigaction sa;
	struct thread_ops to;
	struct watch w = { };
	struct iters it;
	bool valid = true;
	long seen;
	int ret;

	ret = cell_begin(ctx, ctx->cpu, &to, &it);
	if (ret != CELL_READY)
		return ret;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = empty_handler;
	sigaction(SIGUSR1, &sa, NULL);
	watch_ops(&w, &to, ops_slot(&to, ctx->cpu));
	it.full = watch_full(&w);

	TIMED_SAMPLES(ctx, &it, &w, valid, "raise+handler", raise(SIGUSR1));
	iters_free(&it);

	ops_arm(&to);
	raise(SIGUSR1);
	seen = ops_count_exact(&to, ops_slot(&to, ctx->cpu));
	emit_gate(ctx, "walk-at-signal-delivery", ctx->nr_ops, seen,
		  seen == ctx->nr_ops, "one raise(SIGUSR1)");
	valid &= seen == ctx->nr_ops;
	ops_unregister(&to);
	return !valid;
}
