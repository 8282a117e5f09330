// SPDX-License-Identifier: GPL-2.0
/*
 * bench-syscall.c - getppid() round trips.
 *
 * A syscall that does not schedule never walks the operation list: the
 * time must not depend on the number of operations. Each iteration is timed
 * on its own and watched: its words must stay armed unless the thread was
 * switched out meanwhile. The cell's gate checks both halves once more:
 * 1000 getppid() calls with no context switch leave every word alone (up
 * to 20 attempts, since a preemption leaves no conclusion), a sleep that
 * switched the thread out (sched_out()) resets them all. Each gate's
 * detail says how many attempts or polls it took.
 *
 * --pad K adds exactly K instructions to every iteration (a jump into a
 * run of one-byte nops): a known answer the analysis must resolve.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opbench.h"

/* Attempts at 1000 getppid() calls without a context switch. */
#define NO_WALK_ATTEMPTS	20

/* Three instructions and then @pad nops, whatever @pad (0..64) is. */
static inline void pad_insns(long pad)
{
	asm volatile("lea 1f(%%rip), %%rax\n\t"
		     "sub %0, %%rax\n\t"
		     "jmp *%%rax\n\t"
		     ".rept 64\n\tnop\n\t.endr\n"
		     "1:"
		     : : "r"(pad) : "rax", "cc", "memory");
}

int bench_syscall(struct bench_ctx *ctx)
{
	struct thread_ops to;
	struct watch w = { };
	struct iters it;
	bool valid = true;
	char detail[96];
	long seen, sw;
	int ret, attempt, polls;

	ret = cell_begin(ctx, ctx->cpu, &to, &it);
	if (ret != CELL_READY)
		return ret;
	watch_ops(&w, &to, ops_slot(&to, ctx->cpu));
	it.full = watch_full(&w);

	TIMED_SAMPLES(ctx, &it, &w, valid, ctx->pad ? "getppid+pad" : "getppid",
		      syscall(__NR_getppid); pad_insns(ctx->pad));
	iters_free(&it);

	for (attempt = 1; attempt <= NO_WALK_ATTEMPTS; attempt++) {
		ops_arm(&to);
		sw = nr_switches();
		for (int i = 0; i < 1000; i++)
			syscall(__NR_getppid);
		if (nr_switches() != sw)
			continue;	/* preempted meanwhile: no conclusion */
		seen = ops_count_reset(&to);
		/*
		 * A switch on the way out of the count above applies the
		 * operations after it was counted: the words are judged only
		 * when a count taken after them has not moved either.
		 */
		if (nr_switches() != sw)
			continue;
		snprintf(detail, sizeof(detail),
			 "1000 getppid without a context switch, attempt %d of %d",
			 attempt, NO_WALK_ATTEMPTS);
		emit_gate(ctx, "no-walk-without-schedule", 0, seen, seen == 0,
			  detail);
		valid &= seen == 0;
		break;
	}
	if (attempt > NO_WALK_ATTEMPTS) {
		snprintf(detail, sizeof(detail), "preempted in all %d attempts",
			 NO_WALK_ATTEMPTS);
		emit_gate(ctx, "no-walk-without-schedule", 0, -1, false, detail);
		valid = false;
	}

	ops_arm(&to);
	polls = sched_out(SCHED_OUT_MAX);
	seen = ops_count_exact(&to, ops_slot(&to, ctx->cpu));
	if (polls)
		snprintf(detail, sizeof(detail),
			 "switched out after %d poll() of 1 ms", polls);
	else
		snprintf(detail, sizeof(detail),
			 "no switch in %d poll() of 1 ms: no walk was due",
			 SCHED_OUT_MAX);
	emit_gate(ctx, "walk-after-schedule", ctx->nr_ops, seen,
		  polls && seen == ctx->nr_ops, detail);
	valid &= polls && seen == ctx->nr_ops;
	ops_unregister(&to);
	return !valid;
}
