// SPDX-License-Identifier: GPL-2.0
/*
 * bench-switch.c - sched_yield() ping-pong of two threads pinned to one CPU.
 *
 * Both threads register the same number of operations. One timed loop is
 * one sched_yield() of the measured thread: it runs the partner, which
 * yields back, so every loop is two context switches and two walks of N
 * nodes. The gate arms the measured thread's words, yields once and, if a
 * switch happened, expects every word reset.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "opbench.h"

struct partner {
	struct bench_ctx *ctx;
	int state;		/* 0 starting, 1 ready, -1 failed */
	int stop;
};

static void *partner_fn(void *arg)
{
	struct partner *p = arg;
	struct thread_ops to;

	if (pin_or_complain(p->ctx, p->ctx->cpu) || thread_setup(p->ctx, &to)) {
		__atomic_store_n(&p->state, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	__atomic_store_n(&p->state, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
		sched_yield();
	ops_unregister(&to);
	return NULL;
}

int bench_switch(struct bench_ctx *ctx)
{
	struct partner p = { .ctx = ctx };
	struct thread_ops to;
	pthread_t th;
	long seen = -1, sw;
	int ret, attempt;

	/* Both threads on one CPU, or the yields are not switches. */
	if (pin_or_complain(ctx, ctx->cpu))
		return 1;
	ret = thread_setup(ctx, &to);
	if (ret)
		return ret < 0;
	if (pthread_create(&th, NULL, partner_fn, &p)) {
		ops_unregister(&to);
		return 1;
	}
	while (!__atomic_load_n(&p.state, __ATOMIC_ACQUIRE))
		sched_yield();
	if (p.state < 0) {
		pthread_join(th, NULL);
		ops_unregister(&to);
		return 0;	/* the partner emitted the record */
	}

	for (int s = -ctx->warmup; s < ctx->samples; s++) {
		double t0 = sample_start(ctx);

		for (long i = 0; i < ctx->loops; i++)
			sched_yield();
		if (s >= 0)
			emit_sample(ctx, s, now_ns() - t0, ctx->loops,
				    "yield round trip (2 switches)");
	}

	for (attempt = 0; attempt < 20; attempt++) {
		ops_arm(&to);
		sw = nr_switches();
		sched_yield();
		if (nr_switches() != sw) {
			seen = ops_count_reset(&to);
			break;
		}
	}
	__atomic_store_n(&p.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	emit_gate(ctx, "walk-after-switch", ctx->nr_ops, seen,
		  seen == ctx->nr_ops, attempt < 20 ? "one sched_yield() that switched" :
		  "no sched_yield() switched in 20 attempts");
	ops_unregister(&to);
	return seen != ctx->nr_ops;
}
