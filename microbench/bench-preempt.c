// SPDX-License-Identifier: GPL-2.0
/*
 * bench-preempt.c - the preemption round trip, one gap at a time.
 *
 * The measured thread S spins in user space reading the TSC and records
 * every gap between two reads longer than a threshold: a gap spans the last
 * user instruction before S left user space to the first one after it. A
 * waker W on the same CPU, SCHED_FIFO and (unless --waker-ops) without
 * operations, sleeps on an absolute CLOCK_MONOTONIC period of --period-us
 * and, at each wake-up, bumps a sequence number S reads at every gap. Each
 * wake-up preempts S, so a gap is either
 *   a P-gap: the sequence moved; interrupt, wake-up, switch to W, W's work,
 *            switch back and S's exit path with exactly one walk of its N
 *            operations; or
 *   an I-gap: the sequence did not move; a tick or another interrupt, no
 *            switch, no walk.
 * Before every gap S has armed the destination words of its first and last
 * operation (for a strided type their slot for this CPU or mm_cid; with no
 * operations two dummy words, so every cell runs the same instructions);
 * after the gap it takes them back with an atomic exchange, which re-arms
 * them and loses no store of the kernel's. A P-gap must find both rewritten,
 * an I-gap neither.
 *
 * A sample is the gaps until --loops wake-ups were seen (or a cap on the
 * gaps or on the time, which marks it truncated). It is emitted as one
 * "gaps" record: every gap's duration in TSC ticks, how many wake-ups it
 * saw and which words it found rewritten, beside W's wake-ups and S's
 * context switches over the same window. analysis/preempt_gaps.py
 * classifies the records and is authoritative; the cell's "gate" record is
 * what the guest saw itself.
 *
 * The counts are bracketed exactly. The window starts with a read of the
 * sequence, the rusage and the TSC the spin starts from, then a second read
 * of the sequence: when a wake-up fell between the two reads the start is
 * taken again, so every wake-up after the window opened preempts S in a gap
 * the spin records, and none before it is in the rusage difference. The
 * window ends with the sequence read at the last gap; the rusage is taken
 * after it and the sequence read once more: a wake-up in between (which the
 * rusage may or may not count) repeats the sample, up to SAMPLE_TRIES
 * times in all ("attempts" in the record, "bracket_ok" whether the last
 * one held). So the wake-ups are the sum of the gaps' sequence steps, and
 * in a clean sample P-gaps = wake-ups = S's involuntary switches, and S's
 * voluntary switches are 0.
 *
 * The threshold is 20 times the median TSC delta of a calibration loop of
 * 10^5 reads run before W exists (both go in the record): under icount a
 * few hundred instructions, far below any interrupt. Any other task that
 * preempts S makes a switch without a wake-up: the sample does not
 * reconcile (with operations, the I-gap also shows the walk), which the
 * classifier reports as such.
 *
 * An interrupt can land in the few instructions that close a gap (read the
 * sequence, exchange the words, read the TSC). It is then recorded as a gap
 * of its own flagged GAP_INSIDE: the closing reads may have split what it
 * and the gap before it did between their two records, so the classifier
 * judges such a run of gaps as one event and times none of them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "opbench.h"

#define CAL_LOOPS	100000	/* calibration iterations */
#define THR_FACTOR	20	/* threshold: this many median loop deltas */
#define SAMPLE_TRIES	3	/* takes of a sample whose closing bracket fails */

/* reset_bits of a gap */
#define GAP_FIRST	0x1	/* the first operation's word was rewritten */
#define GAP_LAST	0x2	/* the last operation's word was rewritten */
#define GAP_INSIDE	0x4	/* began inside the previous gap's closing reads */

struct gap {
	uint64_t ticks;		/* TSC ticks from the read before to the read after */
	uint32_t seq;		/* wake-ups of W seen at its end */
	uint32_t bits;		/* GAP_* */
};

/* W: the shared periodic waker (common.h), its own words, what S reads. */
struct preempt_waker {
	struct waker w;
	struct bench_ctx *ctx;
	struct thread_ops to;	/* W's: nothing registered unless --waker-ops */
	struct watch watch;	/* W's words, checked around each sleep */
	uint8_t full;
	/* W's wake-ups: bumped (release) once per wake-up, after violations */
	unsigned long seq __attribute__((aligned(64)));
	long violations;	/* wake-ups after which W's own words were wrong */
};

/* What the spin starts from and where it ended. */
struct spin {
	struct gap *rec;
	long cap;		/* room in rec */
	uint64_t thr;		/* a gap is a delta above this */
	uint64_t limit;		/* ticks: give up after this long */
	uint64_t *w0, *w1;	/* the watched words */
	const unsigned long *seq;
	unsigned long s0;	/* in: sequence at the start; out: at the last gap */
	uint64_t t0;		/* TSC read the spin starts from */
	long n;			/* out: gaps recorded */
	bool truncated;		/* out: stopped before the wake-ups wanted */
};

/* Before each sleep: the same instructions with and without operations. */
static inline void waker_arm(void *arg)
{
	struct preempt_waker *pw = arg;

	watch_arm(&pw->watch);
}

/* After each wake-up: W's own words, then the sequence S reads. */
static inline void waker_woken(void *arg)
{
	struct preempt_waker *pw = arg;
	uint8_t b = watch_read(&pw->watch);

	if (pw->to.nr ? b != pw->full : b != 0)
		__atomic_store_n(&pw->violations, pw->violations + 1,
				 __ATOMIC_RELAXED);
	__atomic_store_n(&pw->seq, pw->seq + 1, __ATOMIC_RELEASE);
}

static void *waker_fn(void *arg)
{
	struct preempt_waker *pw = arg;
	struct bench_ctx *ctx = pw->ctx;
	int ret;

	if (pin_or_complain(ctx, ctx->cpu)) {
		__atomic_store_n(&pw->w.state, WAKER_FAILED, __ATOMIC_RELEASE);
		return NULL;
	}
	ret = waker_fifo();
	if (ret) {
		pw->w.err = ret;
		__atomic_store_n(&pw->w.state, WAKER_NO_FIFO, __ATOMIC_RELEASE);
		return NULL;
	}
	ret = ctx->waker_ops ? thread_setup(ctx, &pw->to) : 0;
	if (ret) {
		/* 1: thread_setup() emitted an "unsupported" record */
		__atomic_store_n(&pw->w.state,
				 ret > 0 ? WAKER_UNSUPPORTED : WAKER_FAILED,
				 __ATOMIC_RELEASE);
		return NULL;
	}
	watch_ops(&pw->watch, &pw->to, ops_slot(&pw->to, ctx->cpu));
	pw->full = watch_full(&pw->watch);
	/* The absolute schedule: a late wake-up shows as a multi-wake gap. */
	waker_periods(&pw->w, waker_arm, waker_woken, pw, false);
	if (ctx->waker_ops)
		ops_unregister(&pw->to);
	return NULL;
}

/* Whether the kernel rewrote @w since it was armed; arm it again. */
static inline uint32_t take(uint64_t *w)
{
	return __atomic_exchange_n(w, MARK, __ATOMIC_RELAXED) != MARK;
}

/*
 * Spin from sp->t0 until @want wake-ups were seen after sp->s0 (or the cap
 * or the time limit), recording every gap. The loop that does not close a
 * gap is a TSC read, a subtraction, a compare and a branch: every iteration
 * is the same instructions, whatever the cell.
 */
static __attribute__((noinline)) void spin_gaps(struct spin *sp, unsigned long want)
{
	const uint64_t thr = sp->thr, t0 = sp->t0, limit = sp->limit;
	uint64_t *const w0 = sp->w0, *const w1 = sp->w1;
	const unsigned long *const seq = sp->seq;
	struct gap *g = sp->rec, *const gend = sp->rec + sp->cap;
	unsigned long s0 = sp->s0, s1 = s0;
	const unsigned long end = s0 + want;
	uint64_t prev = t0, now, t;
	uint32_t inside, b;

	for (;;) {
		now = tsc_now();
		if (__builtin_expect(now - prev <= thr, 1)) {
			prev = now;
			continue;
		}
		/* Close the gap [prev, now]; an interrupt meanwhile is a gap too. */
		inside = 0;
		for (;;) {
			s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
			b = take(w0);
			b |= (w1 == w0 ? b : take(w1)) << 1;
			t = tsc_now();
			g->ticks = now - prev;
			g->seq = s1 - s0;
			g->bits = b | inside;
			s0 = s1;
			if (++g == gend || __builtin_expect(t - now <= thr, 1))
				break;
			inside = GAP_INSIDE;
			prev = now;
			now = t;
		}
		if ((long)(s1 - end) >= 0 || g == gend || t - t0 > limit)
			break;
		prev = t;
	}
	sp->n = g - sp->rec;
	sp->s0 = s1;
	sp->truncated = (long)(s1 - end) < 0;
}

/*
 * The median TSC delta of a loop of CAL_LOOPS reads (each read, the store of
 * its delta and the loop: within a few ticks of the spin's own iteration),
 * with no waker yet; and the TSC ticks per nanosecond of CLOCK_MONOTONIC.
 */
static int calibrate(uint64_t *med, double *ticks_per_ns)
{
	uint64_t *d = malloc(CAL_LOOPS * sizeof(*d)), a, prev, now;
	struct quantiles q;
	double ns;

	if (!d)
		return -1;
	memset(d, 0, CAL_LOOPS * sizeof(*d));
	ns = now_ns();
	a = prev = tsc_now();
	for (long i = 0; i < CAL_LOOPS; i++) {
		now = tsc_now();
		d[i] = now - prev;
		prev = now;
	}
	ns = now_ns() - ns;
	*ticks_per_ns = ns > 0 ? (prev - a) / ns : 1.0;
	quantiles(d, CAL_LOOPS, &q);
	*med = q.med ? q.med : 1;
	free(d);
	return 0;
}

/* What the guest itself saw over the cell's samples (the gate record). */
struct tally {
	long p, p_walked, i, i_walked, any, partial, multi, inside, waker;
	long p_events, unreconciled, disturbed;
	long retaken;		/* samples taken more than once */
};

/*
 * Judge one sample's gaps as analysis/preempt_gaps.py does: a gap and the
 * GAP_INSIDE gaps after it are one event; it is a P-event when the sequence
 * moved in it. With operations a P-event must show both words rewritten and
 * an I-event neither; with none, nothing may show.
 */
static long tally_sample(struct tally *ty, const struct gap *rec, long n,
			 bool ops)
{
	long i_both = 0;

	for (long k = 0; k < n;) {
		unsigned long seq = 0;
		uint32_t bits = 0;
		long j = k;

		do {
			seq += rec[j].seq;
			bits |= rec[j].bits & (GAP_FIRST | GAP_LAST);
			if (j > k)
				ty->inside++;
			j++;
		} while (j < n && (rec[j].bits & GAP_INSIDE));
		ty->any += bits != 0;
		ty->partial += bits == GAP_FIRST || bits == GAP_LAST;
		ty->multi += seq > 1;
		if (seq) {
			ty->p++;
			ty->p_walked += bits == (GAP_FIRST | GAP_LAST);
			ty->p_events += ops ? bits != (GAP_FIRST | GAP_LAST) : bits != 0;
		} else {
			ty->i++;
			ty->i_walked += bits != 0;
			i_both += bits == (GAP_FIRST | GAP_LAST);
		}
		k = j;
	}
	return i_both;
}

static void emit_gaps(struct bench_ctx *ctx, int sample, const struct spin *sp,
		      uint64_t loop_ticks, double ticks_per_ns,
		      unsigned long wakeups, long nivcsw, long nvcsw, long wviol,
		      bool bracket_ok, int attempts)
{
	emit_head(ctx, "gaps");
	printf(",\"sample\":%d,\"clock\":\"tsc\",\"threshold\":%llu,"
	       "\"ticks_per_us\":%.3f,"
	       "\"loop_ticks\":%llu,\"loops\":%ld,\"wakeups\":%lu,\"nivcsw\":%ld,\"nvcsw\":%ld,"
	       "\"waker_violations\":%ld,\"truncated\":%s,\"bracket_ok\":%s,"
	       "\"attempts\":%d,\"gaps\":[",
	       sample, (unsigned long long)sp->thr, ticks_per_ns * 1000,
	       (unsigned long long)loop_ticks, ctx->loops,
	       wakeups, nivcsw, nvcsw, wviol, sp->truncated ? "true" : "false",
	       bracket_ok ? "true" : "false", attempts);
	for (long k = 0; k < sp->n; k++)
		printf("%s[%llu,%u,%u]", k ? "," : "",
		       (unsigned long long)sp->rec[k].ticks, sp->rec[k].seq,
		       sp->rec[k].bits);
	printf("]}\n");
	fflush(stdout);
}

int bench_preempt(struct bench_ctx *ctx)
{
	struct preempt_waker wk = { .w.period_us = ctx->period_us, .ctx = ctx };
	struct thread_ops to;
	struct watch w = { };
	struct spin sp = { };
	struct tally ty = { };
	struct rusage ru0, ru1;
	uint64_t loop_ticks;
	double ticks_per_ns, limit_ns;
	pthread_t th;
	bool valid = true, locked = false;
	char detail[320];
	int ret, st;

	/* Both threads on one CPU: each wake-up of W preempts S. */
	ret = cell_begin(ctx, ctx->cpu, &to, NULL);
	if (ret != CELL_READY)
		return ret;
	sp.seq = &wk.seq;
	if (calibrate(&loop_ticks, &ticks_per_ns)) {
		ops_unregister(&to);
		return 1;
	}
	sp.thr = THR_FACTOR * loop_ticks;
	/* Generous: ten periods per wake-up wanted, and a second more. */
	limit_ns = (double)ctx->loops * ctx->period_us * 1e4 + 1e9;
	sp.limit = limit_ns * ticks_per_ns;
	/* Ticks and other interrupts: at most a few per period. */
	sp.cap = 8 * ctx->loops + 4096;
	sp.rec = malloc(sp.cap * sizeof(*sp.rec));
	if (!sp.rec) {
		ops_unregister(&to);
		return 1;
	}
	memset(sp.rec, 0, sp.cap * sizeof(*sp.rec));	/* pre-fault */
	progress("preempt N=%d: loop %llu ticks, threshold %llu, period %d us%s",
		 ctx->nr_ops, (unsigned long long)loop_ticks,
		 (unsigned long long)sp.thr, ctx->period_us,
		 ctx->waker_ops ? ", waker with operations" : "");

	st = waker_start(&wk.w, &th, waker_fn, &wk);
	if (st != WAKER_RUNNING) {
		if (st == WAKER_NO_FIFO)
			emit_unsupported(ctx, -wk.w.err, wk.w.err == EPERM ?
					 "SCHED_FIFO refused for the waker: needs root or CAP_SYS_NICE" :
					 "SCHED_FIFO refused for the waker");
		/*
		 * WAKER_UNSUPPORTED: W emitted the record; WAKER_FAILED: it
		 * said why; -1: no thread, waker_start() said why.
		 */
		ret = st == WAKER_FAILED || st < 0;
		goto out;
	}
	/* The slot to watch: a strided type's mm_cid may move when W starts. */
	watch_ops(&w, &to, ops_slot(&to, ctx->cpu));
	sp.w0 = w.w[0];
	sp.w1 = w.w[1];
	/* Everything both threads touch exists now: keep it resident. */
	locked = !mlockall(MCL_CURRENT);
	if (!locked)
		progress("preempt: mlockall failed (%s): page faults may land in gaps",
			 strerror(errno));

	for (int s = -ctx->warmup; s < ctx->samples; s++) {
		unsigned long s_start, s_check;
		long v0, v1, extra, i_both, multi, p_events;
		bool bracket_ok = false;
		int attempts;

		for (attempts = 1; ; attempts++) {
			/* Open the window with no wake-up between the reads. */
			do {
				s_start = __atomic_load_n(&wk.seq, __ATOMIC_ACQUIRE);
				v0 = __atomic_load_n(&wk.violations, __ATOMIC_RELAXED);
				take(sp.w0);
				take(sp.w1);
				getrusage(RUSAGE_THREAD, &ru0);
				sp.t0 = tsc_now();
			} while (__atomic_load_n(&wk.seq, __ATOMIC_ACQUIRE) != s_start);
			sp.s0 = s_start;
			spin_gaps(&sp, ctx->loops);
			/* Close it: no wake-up may fall between sp.s0 and s_check. */
			v1 = __atomic_load_n(&wk.violations, __ATOMIC_RELAXED);
			getrusage(RUSAGE_THREAD, &ru1);
			s_check = __atomic_load_n(&wk.seq, __ATOMIC_ACQUIRE);
			bracket_ok = s_check == sp.s0;
			if (bracket_ok || attempts == SAMPLE_TRIES)
				break;
			progress("preempt N=%d sample %d: a wake-up fell in the closing reads; again",
				 ctx->nr_ops, s);
		}
		if (s < 0)
			continue;
		emit_gaps(ctx, s, &sp, loop_ticks, ticks_per_ns, sp.s0 - s_start,
			  ru1.ru_nivcsw - ru0.ru_nivcsw, ru1.ru_nvcsw - ru0.ru_nvcsw,
			  v1 - v0, bracket_ok, attempts);
		ty.retaken += attempts > 1;
		/*
		 * Another task (a kworker) preempting S is a real preemption
		 * with a walk: an I-gap with both words rewritten is accepted
		 * when an involuntary switch beyond the waker's accounts for
		 * it. The host's classifier does the exact accounting.
		 */
		/* S is switched out once per P-event, however often W woke. */
		multi = ty.multi;
		p_events = ty.p;
		i_both = tally_sample(&ty, sp.rec, sp.n, ctx->nr_ops != 0);
		multi = ty.multi - multi;
		extra = ru1.ru_nivcsw - ru0.ru_nivcsw - (ty.p - p_events);
		if (i_both && i_both <= extra)
			ty.i_walked -= i_both;
		ty.waker += v1 - v0;
		/*
		 * A P-event that did not switch S out is wrong; a sample
		 * that measured something besides the preemptions (another
		 * task across a period, S blocking, a truncated or
		 * unbracketed window) is only disturbed, as
		 * analysis/preempt_gaps.py has it, and the gate fails when
		 * more than half the samples are.
		 */
		ty.unreconciled += extra < 0;
		ty.disturbed += multi || !bracket_ok || sp.truncated ||
			ru1.ru_nvcsw != ru0.ru_nvcsw;
		if (sp.truncated)
			progress("preempt N=%d sample %d: truncated after %lu of %ld wake-ups",
				 ctx->nr_ops, s, sp.s0 - s_start, ctx->loops);
	}
	waker_stop(&wk.w, th);

	/*
	 * The gate: with operations every P-event rewrote both watched words
	 * (resets_seen of resets_expected); with none, no gap rewrote any (the
	 * gaps that did are resets_seen of 0 expected). No I-event may rewrite
	 * a word and the waker's own words must have been rewritten.
	 */
	valid = !ty.p_events && !ty.i_walked && !ty.partial && !ty.waker &&
		!ty.unreconciled && 2 * ty.disturbed <= ctx->samples;
	snprintf(detail, sizeof(detail),
		 "P-gaps %ld (both words %ld), I-gaps %ld (any word %ld), "
		 "partial %ld, multi-wake %ld, inside %ld, waker violations %ld, "
		 "wake-ups without a switch %ld, samples disturbed %ld of %d, "
		 "retaken %ld",
		 ty.p, ty.p_walked, ty.i, ty.i_walked, ty.partial, ty.multi,
		 ty.inside, ty.waker, ty.unreconciled, ty.disturbed,
		 ctx->samples, ty.retaken);
	if (ctx->nr_ops)
		emit_gate(ctx, "walk-per-preemption", ty.p, ty.p_walked, valid, detail);
	else
		emit_gate(ctx, "walk-per-preemption", 0, ty.any,
			  valid, detail);
	ret = !valid;
out:
	if (locked)
		munlockall();
	free(sp.rec);
	ops_unregister(&to);
	return ret;
}
