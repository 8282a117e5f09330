// SPDX-License-Identifier: GPL-2.0
/*
 * bench-switch.c - sched_yield() ping-pong of two threads pinned to one CPU.
 *
 * Both threads register the same number of operations. One timed loop is
 * one sched_yield() of the measured thread: it runs the partner, which
 * yields back, so every loop is two context switches and two walks of N
 * nodes. Each thread counts its yields begun and returned, so each knows
 * per iteration whether the other ran, and then its own watched words must
 * have been rewritten;
 * an iteration in which the yield did not switch is counted and not timed.
 * The partner's failures are counted in the sample it happened in. The
 * cell's gate arms the measured thread's words and yields until a yield
 * switched (at most 20 times; the partner may be between its own yields),
 * then expects every operation to have written its slot; its detail says
 * how many yields that took. A yield need not switch at all: the scheduler
 * may keep picking this thread while the partner is not eligible (charged
 * a long run, as when the host stalled the vCPU under it). After 20 the
 * gate sleeps instead (sched_out(): poll() until the thread was switched
 * out), and says so.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "opbench.h"

/* Yields the gate tries before it gives up on a switch. */
#define GATE_YIELDS	20

struct partner {
	struct bench_ctx *ctx;
	int state;		/* 0 starting, 1 ready, -1 failed, -2 refused */
	int stop;
	long enter;		/* the partner's yields begun */
	long loops;		/* the partner's yields returned */
	long mine;		/* the measured thread's yields so far */
	long violations;	/* partner iterations that should have walked */
};

static void *partner_fn(void *arg)
{
	struct partner *p = arg;
	struct thread_ops to;
	struct watch w = { };
	uint8_t full;
	int ret;

	if (pin_or_complain(p->ctx, p->ctx->cpu)) {
		__atomic_store_n(&p->state, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	/* > 0: refused, and the partner emitted the unsupported record. */
	ret = thread_setup(p->ctx, &to);
	if (ret) {
		__atomic_store_n(&p->state, ret > 0 ? -2 : -1, __ATOMIC_RELEASE);
		return NULL;
	}
	watch_ops(&w, &to, ops_slot(&to, p->ctx->cpu));
	full = watch_full(&w);
	__atomic_store_n(&p->state, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		long m = __atomic_load_n(&p->mine, __ATOMIC_RELAXED);
		uint8_t b;

		bool ran;

		watch_arm(&w);
		__atomic_store_n(&p->enter, p->enter + 1, __ATOMIC_RELAXED);
		sched_yield();
		/*
		 * Whether the measured thread ran before the words: a
		 * preemption between the two reads then adds a walk the check
		 * does not expect, never a switch without its walk.
		 */
		ran = __atomic_load_n(&p->mine, __ATOMIC_RELAXED) != m;
		b = watch_read(&w);
		if (ran && (to.nr ? b != full : b != 0))
			__atomic_store_n(&p->violations, p->violations + 1,
					 __ATOMIC_RELAXED);
		__atomic_store_n(&p->loops, p->loops + 1, __ATOMIC_RELAXED);
	}
	ops_unregister(&to);
	return NULL;
}

int bench_switch(struct bench_ctx *ctx)
{
	struct partner p = { .ctx = ctx };
	struct thread_ops to;
	struct watch w = { };
	struct iters it;
	pthread_t th;
	long seen = -1, sw;
	bool valid = true;
	char detail[96];
	int ret, attempt, slot, polls = 0;

	/* Both threads on one CPU, or the yields are not switches. */
	ret = cell_begin(ctx, ctx->cpu, &to, &it);
	if (ret != CELL_READY)
		return ret;
	if (pthread_create(&th, NULL, partner_fn, &p)) {
		iters_free(&it);
		ops_unregister(&to);
		return 1;
	}
	while (!__atomic_load_n(&p.state, __ATOMIC_ACQUIRE))
		sched_yield();
	if (p.state < 0) {
		pthread_join(th, NULL);
		iters_free(&it);
		ops_unregister(&to);
		if (p.state == -2)
			return 0;	/* the partner's unsupported record */
		/* No record would say why the cell is missing: fail the run. */
		fprintf(stderr, "opbench: switch: N=%d: the partner thread could not be pinned or set up: no record for this cell\n",
			ctx->nr_ops);
		return 1;
	}
	slot = ops_slot(&to, ctx->cpu);
	watch_ops(&w, &to, slot);
	it.full = watch_full(&w);

	for (int s = -ctx->warmup; s < ctx->samples; s++) {
		long pv = __atomic_load_n(&p.violations, __ATOMIC_RELAXED);

		sample_start(ctx);
		for (long i = 0; i < ctx->loops; i++) {
			long pe = __atomic_load_n(&p.enter, __ATOMIC_RELAXED);
			long pl = __atomic_load_n(&p.loops, __ATOMIC_RELAXED);
			uint64_t t0;
			bool ran;

			watch_arm(&w);
			t0 = tsc_now();
			sched_yield();
			it.dt[i & it.mask] = tsc_now() - t0;
			/*
			 * The partner ran if it began or finished a yield: a
			 * partner preempted just before its yield only begins
			 * one in this iteration. Read before the words: a
			 * preemption between the two reads then shows a walk
			 * without a switch (counted as unexpected, a hint),
			 * never a switch without its walk (a failed sample).
			 */
			ran = __atomic_load_n(&p.enter, __ATOMIC_RELAXED) != pe ||
			      __atomic_load_n(&p.loops, __ATOMIC_RELAXED) != pl;
			it.bits[i & it.mask] = watch_read(&w);
			if (ran)
				it.bits[i & it.mask] |= IT_SWITCHED;
			__atomic_store_n(&p.mine, p.mine + 1, __ATOMIC_RELAXED);
		}
		if (s >= 0)
			valid &= emit_sample(ctx, s, &it, "yield round trip (2 switches)",
					     __atomic_load_n(&p.violations,
							     __ATOMIC_RELAXED) - pv);
	}
	iters_free(&it);

	for (attempt = 1; attempt <= GATE_YIELDS; attempt++) {
		ops_arm(&to);
		sw = nr_switches();
		sched_yield();
		if (nr_switches() != sw) {
			seen = ops_count_exact(&to, slot);
			break;
		}
	}
	if (attempt > GATE_YIELDS) {
		ops_arm(&to);
		polls = sched_out(SCHED_OUT_MAX);
		if (polls)
			seen = ops_count_exact(&to, slot);
	}
	__atomic_store_n(&p.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (attempt <= GATE_YIELDS)
		snprintf(detail, sizeof(detail),
			 "a sched_yield() that switched, yield %d of %d",
			 attempt, GATE_YIELDS);
	else if (polls)
		snprintf(detail, sizeof(detail),
			 "no sched_yield() of %d switched; poll() %d of %d did",
			 GATE_YIELDS, polls, SCHED_OUT_MAX);
	else
		snprintf(detail, sizeof(detail),
			 "no sched_yield() of %d nor poll() of %d switched",
			 GATE_YIELDS, SCHED_OUT_MAX);
	emit_gate(ctx, "walk-after-switch", ctx->nr_ops, seen,
		  seen == ctx->nr_ops, detail);
	valid &= seen == ctx->nr_ops;
	ops_unregister(&to);
	return !valid;
}
