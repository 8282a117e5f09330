// SPDX-License-Identifier: GPL-2.0
/*
 * bench-signal.c - raise(), an empty handler, and back.
 *
 * Operations run at signal delivery, before the handler. The gate raises
 * one signal and expects every word reset by the time raise() returns.
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
	long seen;
	int ret;

	if (pin_or_complain(ctx, ctx->cpu))
		return 1;
	ret = thread_setup(ctx, &to);
	if (ret)
		return ret < 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = empty_handler;
	sigaction(SIGUSR1, &sa, NULL);

	for (int s = -ctx->warmup; s < ctx->samples; s++) {
		double t0 = sample_start(ctx);

		for (long i = 0; i < ctx->loops; i++)
			raise(SIGUSR1);
		if (s >= 0)
			emit_sample(ctx, s, now_ns() - t0, ctx->loops, "raise+handler");
	}

	ops_arm(&to);
	raise(SIGUSR1);
	seen = ops_count_reset(&to);
	emit_gate(ctx, "walk-at-signal-delivery", ctx->nr_ops, seen,
		  seen == ctx->nr_ops, "one raise(SIGUSR1)");
	ops_unregister(&to);
	return seen != ctx->nr_ops;
}
