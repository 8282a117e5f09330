// SPDX-License-Identifier: GPL-2.0
/*
 * bench-preempt.c - involuntary preemption between two spinning threads.
 *
 * Neither thread makes a syscall while measured: every switch is a
 * preemption by the tick. The measured thread first spins alone to learn
 * its rate of work; then both spin on one CPU until the same deadline,
 * loops x 10 us after the start. The time of that window the pair did not
 * spend working, divided by their preemptions, is the cost of one
 * preemption, walks included:
 *     (window - (work_a + work_b) / rate_alone) / (preemptions_a + _b)
 * Work either thread finishes after the deadline is at most one CHUNK.
 * The gate arms the words, spins until preempted and expects them reset.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/resource.h>

#include "opbench.h"

#define CHUNK	256	/* iterations between two looks at the clock */

struct spin {
	struct bench_ctx *ctx;
	int state;	/* 0 starting, 1 ready, -1 failed */
	int go;		/* sample number + 1 to spin for, -1 to quit */
	int done;
	double until;
	long work;
	long preempted;
};

static long involuntary(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nivcsw;
}

/* Spin until @until (ns); return the iterations done. */
static long spin_until(double until)
{
	volatile long sink = 0;
	long it = 0;

	do {
		for (int i = 0; i < CHUNK; i++)
			sink += i;
		it += CHUNK;
	} while (now_ns() < until);
	return it;
}

static void *competitor(void *arg)
{
	struct spin *c = arg;
	struct thread_ops to;
	int seen = 0, go;

	if (pin_or_complain(c->ctx, c->ctx->cpu) || thread_setup(c->ctx, &to)) {
		__atomic_store_n(&c->state, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	__atomic_store_n(&c->state, 1, __ATOMIC_RELEASE);
	for (;;) {
		while ((go = __atomic_load_n(&c->go, __ATOMIC_ACQUIRE)) == seen)
			;
		if (go < 0)
			break;
		seen = go;
		long before = involuntary();

		c->work = spin_until(c->until);
		c->preempted = involuntary() - before;
		__atomic_store_n(&c->done, go, __ATOMIC_RELEASE);
	}
	ops_unregister(&to);
	return NULL;
}

int bench_preempt(struct bench_ctx *ctx)
{
	struct spin c = { .ctx = ctx };
	double span = ctx->loops * 10e3, rate, t0;
	struct thread_ops to;
	pthread_t th;
	long seen = -1, before, work;
	int ret;

	if (pin_or_complain(ctx, ctx->cpu))
		return 1;
	ret = thread_setup(ctx, &to);
	if (ret)
		return ret < 0;
	/* Rate of work alone, before the competitor exists. */
	t0 = now_ns();
	work = spin_until(t0 + span);
	rate = work / (now_ns() - t0);

	if (pthread_create(&th, NULL, competitor, &c)) {
		ops_unregister(&to);
		return 1;
	}
	while (!__atomic_load_n(&c.state, __ATOMIC_ACQUIRE))
		;
	if (c.state < 0) {
		pthread_join(th, NULL);
		ops_unregister(&to);
		return 0;
	}
	for (int s = -ctx->warmup; s < ctx->samples; s++) {
		int go = s + ctx->warmup + 1;
		double wall, lost;
		long n;

		t0 = now_ns();
		c.until = t0 + span;
		__atomic_store_n(&c.go, go, __ATOMIC_RELEASE);
		before = involuntary();
		work = spin_until(c.until);
		n = involuntary() - before;
		/*
		 * The window ends at c.until. Waiting for the competitor to
		 * notice is not part of it: until it is preempted, this
		 * thread spins here doing no counted work.
		 */
		while (__atomic_load_n(&c.done, __ATOMIC_ACQUIRE) != go)
			;
		wall = c.until - t0;
		n += c.preempted;
		lost = wall - (work + c.work) / rate;
		if (s >= 0 && n > 0)
			emit_sample(ctx, s, lost, n, "preemption");
	}

	/* Gate: the competitor spins; wait to be preempted at least once. */
	c.until = now_ns() + 2e9;
	__atomic_store_n(&c.go, ctx->warmup + ctx->samples + 1, __ATOMIC_RELEASE);
	ops_arm(&to);
	before = involuntary();
	t0 = now_ns();
	while (involuntary() == before && now_ns() - t0 < 1e9)
		spin_until(now_ns() + 1e5);
	if (involuntary() != before)
		seen = ops_count_reset(&to);
	while (__atomic_load_n(&c.done, __ATOMIC_ACQUIRE) != ctx->warmup + ctx->samples + 1)
		;
	__atomic_store_n(&c.go, -1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	emit_gate(ctx, "walk-after-preemption", ctx->nr_ops, seen,
		  seen == ctx->nr_ops, "spun until involuntarily switched out");
	ops_unregister(&to);
	return seen != ctx->nr_ops;
}
