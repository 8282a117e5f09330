// SPDX-License-Identifier: GPL-2.0
/*
 * bench-syscall.c - getppid() round trips.
 *
 * A syscall that does not schedule never walks the operation list: the
 * time must not depend on the number of operations. The gate checks both
 * halves: 1000 getppid() calls with no context switch leave every word
 * alone, one poll() that sleeps resets them all.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opbench.h"

int bench_syscall(struct bench_ctx *ctx)
{
	struct thread_ops to;
	bool valid = true;
	long seen, sw;
	int ret, attempt;

	if (pin_or_complain(ctx, ctx->cpu))
		return 1;
	ret = thread_setup(ctx, &to);
	if (ret)
		return ret < 0;

	for (int s = -ctx->warmup; s < ctx->samples; s++) {
		double t0 = sample_start(ctx);

		for (long i = 0; i < ctx->loops; i++)
			syscall(__NR_getppid);
		if (s >= 0)
			emit_sample(ctx, s, now_ns() - t0, ctx->loops, "getppid");
	}

	for (attempt = 0; attempt < 20; attempt++) {
		ops_arm(&to);
		sw = nr_switches();
		for (int i = 0; i < 1000; i++)
			syscall(__NR_getppid);
		if (nr_switches() != sw)
			continue;	/* preempted meanwhile: no conclusion */
		seen = ops_count_reset(&to);
		emit_gate(ctx, "no-walk-without-schedule", 0, seen, seen == 0,
			  "1000 getppid without a context switch");
		valid &= seen == 0;
		break;
	}
	if (attempt == 20) {
		emit_gate(ctx, "no-walk-without-schedule", 0, -1, false,
			  "preempted in all 20 attempts");
		valid = false;
	}

	ops_arm(&to);
	poll(NULL, 0, 1);
	seen = ops_count_reset(&to);
	emit_gate(ctx, "walk-after-schedule", ctx->nr_ops, seen,
		  seen == ctx->nr_ops, "poll() sleeping 1 ms");
	valid &= seen == ctx->nr_ops;
	ops_unregister(&to);
	return !valid;
}
