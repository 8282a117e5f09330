// SPDX-License-Identifier: GPL-2.0
/*
 * tcmodel.c - what RSEQ operations buy: a model of TCMalloc's per-CPU fast
 * path, run with a legacy rseq registration and with one RSEQ operation.
 *
 *   tcmodel --mode legacy|ops [options] WHAT[,WHAT...]|all
 *   tcmodel --list
 *
 * TCMalloc caches a pointer to the current CPU's slab in an 8-byte
 * per-thread word, tcmalloc_slabs, with bit 63 set while the pointer is
 * valid. Each allocation or free is an rseq critical section that loads the
 * word and takes its fast path only while bit 63 is set. When the word is
 * invalid, the thread recovers: it reads its CPU from the rseq area,
 * recomputes the slab address, publishes it through a second small critical
 * section and checks the CPU's "stopped" flag. The kernel must clear bit 63
 * whenever the thread was preempted, migrated, signalled or fenced with
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ); plain syscalls need
 * nothing. Two ways to get that here:
 *
 *   legacy  TCMalloc's way: the thread registers its own 32-byte rseq area
 *           (glibc's registration turned off) with the word at the area's
 *           address less 4, so that its upper half is cpu_id_start. The
 *           kernel rewrites cpu_id_start with a CPU number after every
 *           switch, signal and fence, which clears bit 63. 7.2 keeps that
 *           only for 32-byte registrations.
 *   ops     glibc's own (v2) area is kept, the word is a thread-local of
 *           its own and one RSEQ_OP_RESET with a NULL source zeroes it on
 *           the same events.
 *
 * Each WHAT is one timed cell, a loop of iterations read with the TSC
 * (under QEMU icount a tick is one guest instruction):
 *   pair      one allocation and one free on the fast path (steady state)
 *   recovery  the word invalidated by hand, as the kernel would, then a pair
 *   syscall   getppid(), then a pair: no invalidation is needed
 *   signal    raise() with an empty handler, then a pair
 *   fence     membarrier(PRIVATE_EXPEDITED_RSEQ) of the thread's own CPU
 *             (its IPI function runs locally), then a pair
 *   migrate   sched_setaffinity() to the other CPU, then a pair
 *   preempt   pairs in a loop while a SCHED_FIFO waker on the same CPU
 *             wakes every --period-us: the iterations a wake-up fell into
 *   getcpu    sched_getcpu(): through glibc's rseq area (ops mode) or its
 *             fallback (legacy mode, glibc's registration off)
 * and one cell that is only a gate:
 *   remote    a drainer thread on the other CPU marks the worker's CPU
 *             stopped, fences it with membarrier and waits until the
 *             worker has run again, TCMalloc's cross-CPU drain
 *
 * The correctness gate runs in every cell. Before each event an event
 * counter is bumped, after it a "done" counter catches up. The recovery's
 * critical section records the event counter when it publishes the
 * pointer, and every allocation's and free's critical section compares it
 * with the "done" counter: a valid word cached before an event that has
 * completed since is a stale use. Both loads are inside the critical
 * section, so an event that lands between them aborts it and cannot make a
 * false one. A cell is valid when it saw no stale use and, for the events
 * that must invalidate, at least one recovery per event (a recovery that
 * found the CPU stopped counts as a slow operation, not as a recovery). --no-ops (ops mode)
 * sets everything up but registers no operation: the gate must then fail.
 *
 * Records: one JSON object per line on stdout ("tcm" per sample,
 * "tcm-unsupported" when the kernel or libc refuses the mode, one "clock"),
 * progress on stderr. Exit status 0, 1 when a gate failed, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "minops.h"

#define SLAB_SHIFT	12		/* one 4 KiB slab region per CPU (OB_CPUS) */
#define CLASS_HDR	8		/* offset of size class 1's header */
#define CLASS_BEGIN	16		/* its slots, in words from the slab */
#define CLASS_END	80
#define CACHED_BIT	63

enum what {
	W_PAIR, W_RECOVERY, W_SYSCALL, W_SIGNAL, W_FENCE, W_MIGRATE,
	W_PREEMPT, W_GETCPU, W_REMOTE, W_NR,
};

static const struct {
	const char *name;
	bool event;	/* each iteration has an event that must invalidate */
	const char *summary;
} whats[] = {
	[W_PAIR] = { "pair", false, "one allocation and one free, fast path" },
	[W_RECOVERY] = { "recovery", true, "word invalidated by hand, then a pair" },
	[W_SYSCALL] = { "syscall", false, "getppid(), then a pair (no invalidation needed)" },
	[W_SIGNAL] = { "signal", true, "raise(), empty handler, then a pair" },
	[W_FENCE] = { "fence", true, "membarrier RSEQ fence of the own CPU, then a pair" },
	[W_MIGRATE] = { "migrate", true, "sched_setaffinity() to the other CPU, then a pair" },
	[W_PREEMPT] = { "preempt", true, "pairs while a SCHED_FIFO waker preempts (one CPU)" },
	[W_GETCPU] = { "getcpu", false, "sched_getcpu(): glibc's rseq area or its fallback" },
	[W_REMOTE] = { "remote", true, "gate only: drainer on the other CPU stops and fences ours" },
};

enum mode { M_LEGACY, M_OPS };

/* A 32-byte rseq area with TCMalloc's word just below it. */
struct legacy_tls {
	uint32_t pad[7];
	uint32_t slabs_lo;	/* the word's lower half */
	struct {
		uint32_t cpu_id_start;	/* and its upper half */
		uint32_t cpu_id;
		uint64_t rseq_cs;
		uint32_t flags;
		uint32_t pad2[3];
	} area;
} __attribute__((aligned(64)));

/* The word (bytes 28..35) and the area in one cache line, as in TCMalloc. */
_Static_assert(offsetof(struct legacy_tls, area) == 32, "legacy area offset");

static __thread struct legacy_tls legacy_tls;
static __thread uint64_t ops_slabs __attribute__((aligned(64)));
static __thread struct ob_rseq_op_reset ops_node __attribute__((aligned(64)));

/* What the worker's critical sections see; shared with waker and drainer. */
struct model {
	char *rseq;			/* the thread's rseq area */
	uint64_t *slabs;		/* tcmalloc_slabs */
	char *base;			/* OB_CPUS slab regions */
	uint64_t gen __attribute__((aligned(64)));	/* events started */
	uint64_t done;			/* events completed */
	uint64_t cgen __attribute__((aligned(64)));	/* gen the cache was taken at */
	uint64_t aborts;
	long recoveries, stale, slow, pairs;
	volatile int stopped[OB_CPUS] __attribute__((aligned(64)));
};

static struct model m;
static enum mode mode = M_LEGACY;
static bool no_ops;
static struct run_opts ro = {
	.loops = 1000, .samples = 6, .warmup = 1, .cpu = -1, .cpu2 = -1,
	.period_us = 331,
};
static long preempt_loops = 150;
static void *items[CLASS_END];

/* Results of a critical section that did not complete its operation. */
enum { CS_DONE, CS_RECOVER, CS_STALE, CS_SLOW };

/*
 * The critical sections. The descriptor goes into rseq_cs (offset 8 of
 * the area); the abort handler, behind the signature, counts the abort and
 * starts over. Size class 1's header at CLASS_HDR of the slab holds
 * current (+0), begin (+4) and end (+6), in words from the slab's start.
 */
#define RSEQ_CS(start, post, abort)					\
	".pushsection __rseq_cs, \"aw\"\n\t"				\
	".balign 32\n\t"						\
	"3:\n\t"							\
	".long 0, 0\n\t"						\
	".quad " start ", " post " - " start ", " abort "\n\t"	\
	".popsection\n\t"						\
	"6:\n\t"							\
	"leaq 3b(%%rip), %%rax\n\t"					\
	"movq %%rax, 8(%[rseq])\n\t"

#define STR_(x)	#x
#define STR(x)	STR_(x)
#define RSEQ_ABORT							\
	".pushsection __rseq_failure, \"ax\"\n\t"			\
	".byte 0x0f, 0xb9, 0x3d\n\t"					\
	".long " STR(OB_RSEQ_SIG) "\n\t"					\
	"4:\n\t"							\
	"incq %[aborts]\n\t"						\
	"jmp 6b\n\t"							\
	".popsection\n\t"

/* The fast path's prologue: a valid word, cached after every completed event. */
#define CS_CHECK_WORD							\
	"movq (%[slabs]), %%rax\n\t"					\
	"btrq $63, %%rax\n\t"						\
	"jnc %l[recover]\n\t"						\
	"movq %[done], %%rcx\n\t"					\
	"cmpq %[cgen], %%rcx\n\t"					\
	"ja %l[stale]\n\t"

static __attribute__((noinline)) int tcm_pop(void **item)
{
	asm goto(RSEQ_CS("1f", "2f", "4f")
		 "1:\n\t"
		 CS_CHECK_WORD
		 "movzwl 8(%%rax), %%ecx\n\t"
		 "cmpw 12(%%rax), %%cx\n\t"
		 "jbe %l[slow]\n\t"
		 "movq -8(%%rax,%%rcx,8), %%rdx\n\t"
		 "decl %%ecx\n\t"
		 "movw %%cx, 8(%%rax)\n\t"	/* commit */
		 "2:\n\t"
		 "movq %%rdx, (%[item])\n\t"
		 RSEQ_ABORT
		 : : [rseq] "r"(m.rseq), [slabs] "r"(m.slabs), [done] "m"(m.done),
		     [cgen] "m"(m.cgen), [item] "r"(item), [aborts] "m"(m.aborts)
		 : "rax", "rcx", "rdx", "memory", "cc"
		 : recover, stale, slow);
	return CS_DONE;
recover:
	return CS_RECOVER;
stale:
	return CS_STALE;
slow:
	return CS_SLOW;
}

static __attribute__((noinline)) int tcm_push(void *item)
{
	asm goto(RSEQ_CS("1f", "2f", "4f")
		 "1:\n\t"
		 CS_CHECK_WORD
		 "movzwl 8(%%rax), %%ecx\n\t"
		 "cmpw 14(%%rax), %%cx\n\t"
		 "jae %l[slow]\n\t"
		 "movq %[it], (%%rax,%%rcx,8)\n\t"
		 "incl %%ecx\n\t"
		 "movw %%cx, 8(%%rax)\n\t"	/* commit */
		 "2:\n\t"
		 RSEQ_ABORT
		 : : [rseq] "r"(m.rseq), [slabs] "r"(m.slabs), [done] "m"(m.done),
		     [cgen] "m"(m.cgen), [it] "r"(item), [aborts] "m"(m.aborts)
		 : "rax", "rcx", "memory", "cc"
		 : recover, stale, slow);
	return CS_DONE;
recover:
	return CS_RECOVER;
stale:
	return CS_STALE;
slow:
	return CS_SLOW;
}

/*
 * Recovery: publish the slab of the CPU in the area's cpu_id (offset 4),
 * with the event counter it was taken at, in one critical section; then
 * check the CPU's stopped flag. False when the CPU is stopped: the caller
 * takes the slow path.
 */
static __attribute__((noinline)) bool tcm_cache(void)
{
	unsigned int cpu;

	asm volatile(RSEQ_CS("1f", "2f", "4f")
		     "1:\n\t"
		     "movl 4(%[rseq]), %%eax\n\t"
		     "movq %[gen], %%rdx\n\t"
		     "movq %%rdx, %[cgen]\n\t"
		     "shlq $12, %%rax\n\t"
		     "addq %[base], %%rax\n\t"
		     "btsq $63, %%rax\n\t"
		     "movq %%rax, (%[slabs])\n\t"	/* commit */
		     "2:\n\t"
		     RSEQ_ABORT
		     : [cgen] "=m"(m.cgen), [aborts] "+m"(m.aborts)
		     : [rseq] "r"(m.rseq), [slabs] "r"(m.slabs), [gen] "m"(m.gen),
		       [base] "r"(m.base)
		     : "rax", "rdx", "memory", "cc");
	cpu = __atomic_load_n((uint32_t *)(m.rseq + 4), __ATOMIC_RELAXED);
	if (cpu >= OB_CPUS || m.stopped[cpu]) {
		/* Uncache: the next operation recovers again. */
		__atomic_and_fetch(m.slabs, ~(1ULL << CACHED_BIT), __ATOMIC_RELAXED);
		return false;
	}
	return true;
}

/* The model's central free list: what the slow path hands out. */
static void *central_item = &central_item;

/*
 * What a critical section left to do: recover (and count a stale use), or
 * take the slow path. True when the operation is done, on the slow path;
 * false to try the fast path again.
 */
static bool settle(int r)
{
	switch (r) {
	case CS_STALE:
		m.stale++;
		if (tcm_cache())
			return false;
		break;
	case CS_RECOVER:
		/* A recovery that found the CPU stopped is a slow operation. */
		if (tcm_cache()) {
			m.recoveries++;
			return false;	/* retry the fast path */
		}
		break;
	default:
		break;
	}
	m.slow++;
	return true;
}

/* One allocation and one free of the same object. */
static __attribute__((noinline)) void pair(void)
{
	void *item = NULL;
	int r;

	while ((r = tcm_pop(&item)) != CS_DONE) {
		if (settle(r)) {
			item = central_item;
			break;
		}
	}
	while ((r = tcm_push(item)) != CS_DONE)
		if (settle(r))
			break;
	__atomic_store_n(&m.pairs, m.pairs + 1, __ATOMIC_RELEASE);
}

/* An event that must invalidate the word: started, then completed. */
static inline void event_start(void)
{
	__atomic_store_n(&m.gen, m.gen + 1, __ATOMIC_SEQ_CST);
}

static inline void event_done(void)
{
	__atomic_store_n(&m.done, __atomic_load_n(&m.gen, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
}

/* The kernel's store, done by hand: a CPU number into the word's upper half. */
static inline void invalidate_by_hand(void)
{
	uint32_t cpu = __atomic_load_n((uint32_t *)(m.rseq + 4), __ATOMIC_RELAXED);

	__atomic_store_n((uint32_t *)((char *)m.slabs + 4), cpu, __ATOMIC_RELAXED);
}

static long membarrier(int cmd, unsigned int flags, int cpu)
{
	return syscall(__NR_membarrier, cmd, flags, cpu);
}

static void empty_handler(int sig)
{
	(void)sig;
}

static const char *mode_name(void)
{
	return mode == M_LEGACY ? "legacy" : "ops";
}

/*
 * The records' head, as opbench's (emit_rec_head()): the model's one NULL
 * reset on glibc's area (ops mode) or none on a legacy area, and its
 * waker, which holds none. Then the cell and the mode.
 */
static void head(const char *kind, enum what w)
{
	const struct rec_head h = {
		.bench = "tcmodel", .nr_ops = mode == M_OPS, .type = OP_NULL,
		.reg = mode == M_OPS ? REG_GLIBC : REG_LEGACY, .cpu = ro.cpu,
		.layout = LAYOUT_PACKED, .waker_ops = false,
		.period_us = ro.period_us, .warmup = ro.warmup, .no_ops = no_ops,
	};

	emit_rec_head(&h, kind);
	printf(",\"what\":\"%s\",\"mode\":\"%s\"", whats[w].name, mode_name());
}

static void unsupported(enum what w, int err, const char *why)
{
	head("tcm-unsupported", w);
	printf(",\"errno\":%d,\"why\":\"%s\"}\n", -err, why);
	fflush(stdout);
	progress("%s, %s mode: unsupported here: %s", whats[w].name, mode_name(), why);
}

/*
 * Register the thread for the mode, and cache the first slab. Returns 0, or
 * -errno with *why set.
 */
static int thread_register(const char **why)
{
	static __thread bool done;
	int err;

	if (done)
		return 0;
	if (mode == M_LEGACY) {
		if (syscall(__NR_rseq, &legacy_tls.area, 32, 0, OB_RSEQ_SIG)) {
			*why = "legacy rseq registration refused";
			return -errno;
		}
		m.rseq = (char *)&legacy_tls.area;
		m.slabs = (uint64_t *)&legacy_tls.slabs_lo;
	} else {
		struct ob_rseq *area;

		err = rseq_register_thread(REG_GLIBC, &area);
		if (err) {
			*why = "glibc registered no rseq area";
			return err;
		}
		m.rseq = (char *)area;
		m.slabs = &ops_slabs;
		memset(&ops_node, 0, sizeof(ops_node));
		op_node_init(&ops_node, OP_NULL, &ops_slabs, NULL);	/* reset to zero */
		/* prctl(PR_RSEQ_OP), or --via min's PR_RSEQ_OPS */
		err = 0;
		if (!no_ops && ops_backend)
			err = ops_backend->thread_begin();
		if (!no_ops && !err)
			err = op_node_register(&ops_node, OP_NULL);
		if (err) {
			*why = ops_refusal(err, area);
			return err;
		}
	}
	done = true;
	m.gen = m.done = 0;
	m.cgen = 0;
	return 0;
}

/* A waker thread's own registration: the same kind as the worker's. */
static void helper_register(void)
{
	struct ob_rseq *area;
	int err;

	/* In ops mode glibc registered this thread (v2) already. */
	if (mode == M_LEGACY && (err = rseq_register_thread(REG_LEGACY, &area)))
		progress("waker: legacy registration refused: %s", strerror(-err));
}

/*
 * A helper thread's start: registered (helper_register()) and pinned to
 * @cpu. Returns 0, or the errno after storing @failed into *@state.
 */
static int helper_start(int cpu, int *state, int failed)
{
	int err;

	helper_register();
	err = -pin_self(cpu);
	if (err)
		__atomic_store_n(state, failed, __ATOMIC_RELEASE);
	return err;
}

/* The per-sample counters, and the gate over them. */
struct counts {
	long events, recoveries, stale, slow, aborts;
	long unattributed;	/* preempt: preemptions during a clock read */
	long missed;		/* preempt: preemptions no recovery followed */
};

static void counts_start(struct counts *c)
{
	c->events = __atomic_load_n(&m.gen, __ATOMIC_ACQUIRE);
	c->recoveries = m.recoveries;
	c->stale = m.stale;
	c->slow = m.slow;
	c->aborts = m.aborts;
	c->unattributed = 0;
	c->missed = 0;
}

static void counts_end(struct counts *c)
{
	c->events = __atomic_load_n(&m.gen, __ATOMIC_ACQUIRE) - c->events;
	c->recoveries = m.recoveries - c->recoveries;
	c->stale = m.stale - c->stale;
	c->slow = m.slow - c->slow;
	c->aborts = m.aborts - c->aborts;
}

/*
 * The gate of one sample: no stale use, and a recovery for every event
 * (preempt: after every preemption the worker saw, in the pair it fell
 * into or the next).
 */
static const char *gate(enum what w, const struct counts *c)
{
	if (c->stale)
		return "stale use: a cached slab used after an event that must invalidate it";
	if (c->missed)
		return "a preemption that no recovery followed: it left the word valid";
	if (whats[w].event && c->recoveries < c->events)
		return "fewer recoveries than events: an event left the word valid";
	return "";
}

/* One sample's record; returns its validity. */
static bool emit(enum what w, int sample, uint64_t *dt, long n, long iters,
		 const struct counts *c)
{
	struct quantiles q = { };
	const char *why = gate(w, c);

	if (n)
		quantiles(dt, n, &q);
	else if (!*why && w != W_REMOTE)
		why = "no iteration timed";
	head("tcm", w);
	printf(",\"sample\":%d,\"iterations\":%ld,\"timed\":%ld,\"clock\":\"tsc\","
	       "\"tsc_median\":%llu,\"tsc_p10\":%llu,\"tsc_p90\":%llu,"
	       "\"events\":%ld,\"recoveries\":%ld,\"stale\":%ld,\"slow\":%ld,"
	       "\"aborts\":%ld,\"unattributed\":%ld,\"missed\":%ld,"
	       "\"valid\":%s,\"why\":\"%s\"}\n",
	       sample, iters, n, (unsigned long long)q.med,
	       (unsigned long long)q.p10, (unsigned long long)q.p90, c->events,
	       c->recoveries, c->stale, c->slow, c->aborts, c->unattributed, c->missed,
	       *why ? "false" : "true", why);
	fflush(stdout);
	if (*why)
		progress("%s, %s mode%s, sample %d: GATE FAILED: %s (events %ld, recoveries %ld, stale %ld)",
		    whats[w].name, mode_name(), no_ops ? " (--no-ops)" : "",
		    sample, why, c->events, c->recoveries, c->stale);
	return !*why;
}

/* The single-thread cells: one event (or none) and one pair per iteration. */
static bool run_loop(enum what w)
{
	uint64_t *dt = calloc(ro.loops, sizeof(*dt));
	bool valid = true;
	int cpus[2] = { ro.cpu, ro.cpu2 }, at = 0;
	long failed = 0;

	if (!dt) {
		fprintf(stderr, "tcmodel: out of memory\n");
		exit(1);
	}
	for (int s = -ro.warmup; s < ro.samples; s++) {
		struct counts c;

		counts_start(&c);
		for (long i = 0; i < ro.loops; i++) {
			uint64_t t0 = tsc_now();

			switch (w) {
			case W_PAIR:
				break;
			case W_RECOVERY:
				event_start();
				invalidate_by_hand();
				event_done();
				break;
			case W_SYSCALL:
				syscall(__NR_getppid);
				break;
			case W_SIGNAL:
				event_start();
				raise(SIGUSR1);
				event_done();
				break;
			case W_FENCE:
				event_start();
				if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
					       MEMBARRIER_CMD_FLAG_CPU, cpus[at]))
					failed++;
				event_done();
				break;
			case W_MIGRATE:
				event_start();
				at ^= 1;
				if (pin_self(cpus[at]))
					failed++;
				event_done();
				break;
			case W_GETCPU:
				dt[i] = sched_getcpu();	/* keep the call */
				break;
			default:
				break;
			}
			if (w != W_GETCPU)
				pair();
			dt[i] = tsc_now() - t0;
		}
		counts_end(&c);
		if (failed) {
			fprintf(stderr, "tcmodel: %s: %ld of %ld events failed (%s)\n",
				whats[w].name, failed, ro.loops,
				w == W_FENCE ? "membarrier" : "sched_setaffinity");
			valid = false;
			break;
		}
		if (s >= 0)
			valid &= emit(w, s, dt, ro.loops, ro.loops, &c);
	}
	if (at)
		pin_self(ro.cpu);
	free(dt);
	return valid;
}

/*
 * preempt: the waker (common.h), on the worker's CPU, at a higher priority.
 * Each wake-up is an event: the worker is off the CPU while it runs.
 */
static inline void waker_arm(void *arg)
{
	(void)arg;
}

static inline void waker_woken(void *arg)
{
	(void)arg;
	event_start();
	event_done();
}

static void *waker_fn(void *arg)
{
	struct waker *wk = arg;

	wk->err = helper_start(ro.cpu, &wk->state, WAKER_FAILED);
	if (wk->err)
		return NULL;
	wk->err = waker_fifo();
	if (wk->err) {
		__atomic_store_n(&wk->state, WAKER_NO_FIFO, __ATOMIC_RELEASE);
		return NULL;
	}
	/*
	 * A late wake-up starts the period again: a second wake-up at once
	 * would be a second event in the same stretch off the CPU.
	 */
	waker_periods(wk, waker_arm, waker_woken, NULL, true);
	return NULL;
}

/*
 * Pairs in a loop, one TSC read between two of them: a timeline. The done
 * counter is read just before and just after each TSC read; an interval
 * between two reads in which it moved held a preemption, and its length is
 * the figure. When it moved during a TSC read itself, the preemption may
 * belong to either interval: neither is timed (counted as unattributed).
 * A sample ends after preempt_loops timed preemptions (or 20 times the
 * time they should take: then the waker is not preempting, and the gate
 * says so through the missing events).
 */
static bool run_preempt(void)
{
	uint64_t *dt = calloc(preempt_loops, sizeof(*dt));
	struct waker wk = { .period_us = ro.period_us };
	pthread_t th;
	bool valid = true;
	int st;

	if (!dt) {
		fprintf(stderr, "tcmodel: out of memory\n");
		exit(1);
	}
	st = waker_start(&wk, &th, waker_fn, &wk);
	if (st < 0) {
		free(dt);
		return false;
	}
	if (st != WAKER_RUNNING) {
		unsupported(W_PREEMPT, -(wk.err ? wk.err : EPERM),
			    "the waker cannot run SCHED_FIFO on the worker's CPU");
		free(dt);
		return true;
	}
	for (int s = -ro.warmup; s < ro.samples; s++) {
		double limit = now_ns() + 20.0 * preempt_loops * ro.period_us * 1000;
		struct counts c;
		long n = 0, iters = 0;

		uint64_t t_last, d_last, da, db, t;
		long r_before, pend_r = 0, seen = 0;
		bool pending = false;

		counts_start(&c);
		do {
			d_last = __atomic_load_n(&m.done, __ATOMIC_ACQUIRE);
			t_last = tsc_now();
		} while (__atomic_load_n(&m.done, __ATOMIC_ACQUIRE) != d_last);
		while (n < preempt_loops && now_ns() < limit) {
			for (int k = 0; k < 64 && n < preempt_loops; k++) {
				r_before = m.recoveries;
				pair();
				if (pending && m.recoveries <= pend_r)
					c.missed++;
				pending = false;
				da = __atomic_load_n(&m.done, __ATOMIC_ACQUIRE);
				t = tsc_now();
				db = __atomic_load_n(&m.done, __ATOMIC_ACQUIRE);
				iters++;
				if (da != db || da != d_last) {
					/* recovered in this pair or the next */
					seen++;
					pending = true;
					pend_r = r_before;
				}
				if (da != db)
					c.unattributed++;
				else if (da != d_last)
					dt[n++] = t - t_last;
				t_last = t;
				d_last = db;
			}
		}
		pair();		/* the last preemption's recovery */
		if (pending && m.recoveries <= pend_r)
			c.missed++;
		counts_end(&c);
		/*
		 * The events of this cell are the preemptions the worker saw:
		 * two wake-ups in one stretch off the CPU (a late timer) make
		 * one invalidation, and one recovery.
		 */
		c.events = seen;
		if (s >= 0)
			valid &= emit(W_PREEMPT, s, dt, n, iters, &c);
	}
	waker_stop(&wk, th);
	free(dt);
	return valid;
}

/* remote: the drainer on the other CPU; the worker runs pairs meanwhile. */
struct drainer {
	long events;
	int err;
	int finished;
};

static void wait_pairs(long n)
{
	long p = __atomic_load_n(&m.pairs, __ATOMIC_ACQUIRE);

	while (__atomic_load_n(&m.pairs, __ATOMIC_ACQUIRE) < p + n)
		sched_yield();
}

/*
 * Only the stale check proves anything here: a recovery follows each drain
 * whatever the kernel does, since the slow path uncaches the word while
 * the CPU is stopped.
 */
static void *drainer_fn(void *arg)
{
	struct drainer *d = arg;

	d->err = helper_start(ro.cpu2, &d->finished, 1);
	if (d->err)
		return NULL;
	wait_pairs(2);
	for (long i = 0; i < d->events; i++) {
		m.stopped[ro.cpu] = 1;
		event_start();
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
			       MEMBARRIER_CMD_FLAG_CPU, ro.cpu)) {
			d->err = errno;
			m.stopped[ro.cpu] = 0;
			break;
		}
		event_done();
		/* The worker runs on, on the slow path while its CPU is stopped. */
		wait_pairs(2);
		m.stopped[ro.cpu] = 0;
		wait_pairs(2);
	}
	__atomic_store_n(&d->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool run_remote(void)
{
	bool valid = true;

	for (int s = -ro.warmup; s < ro.samples; s++) {
		struct drainer d = { .events = ro.loops / 10 > 0 ? ro.loops / 10 : 1 };
		struct counts c;
		pthread_t th;
		int ret;

		counts_start(&c);
		ret = pthread_create(&th, NULL, drainer_fn, &d);
		if (ret) {
			fprintf(stderr, "tcmodel: remote: cannot start the drainer: %s\n",
				strerror(ret));
			return false;
		}
		while (!__atomic_load_n(&d.finished, __ATOMIC_ACQUIRE))
			pair();
		pthread_join(th, NULL);
		counts_end(&c);
		if (d.err) {
			fprintf(stderr, "tcmodel: remote: the drainer failed: %s\n",
				strerror(d.err));
			return false;
		}
		if (s >= 0)
			valid &= emit(W_REMOTE, s, NULL, 0, 0, &c);
	}
	return valid;
}

static void *sleeper_fn(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static int start_sleeper(void)
{
	static bool started;
	pthread_t th;

	if (!started && !pthread_create(&th, NULL, sleeper_fn, NULL))
		started = true;
	return started ? 0 : -1;
}

static int run_what(enum what w)
{
	const char *why = "";
	int err;

	if (w == W_GETCPU) {
		/* glibc's own path: nothing of the model is registered. */
		return !run_loop(w);
	}
	err = thread_register(&why);
	if (err) {
		unsupported(w, err, why);
		return 0;
	}
	if ((w == W_FENCE || w == W_REMOTE) &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0)) {
		unsupported(w, -errno, "membarrier RSEQ fences refused");
		return 0;
	}

	if ((w == W_MIGRATE || w == W_REMOTE) && ro.cpu == ro.cpu2) {
		unsupported(w, -EINVAL, "one CPU only: needs two");
		return 0;
	}
	progress("%s, %s mode%s: %d x %ld", whats[w].name, mode_name(),
	    no_ops ? " (--no-ops)" : "", ro.samples,
	    w == W_PREEMPT ? preempt_loops : ro.loops);
	if (!tcm_cache()) {
		fprintf(stderr, "tcmodel: CPU %d stopped at start\n", ro.cpu);
		return 1;
	}
	switch (w) {
	case W_PREEMPT:
		return !run_preempt();
	case W_REMOTE:
		return !run_remote();
	default:
		return !run_loop(w);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tcmodel --mode legacy|ops [options] WHAT[,WHAT...]|all\n"
		"       tcmodel --list\n"
		"options:\n"
		"  -m, --mode M        legacy: own 32-byte area, the word below it;\n"
		"                      ops: glibc's area and one RSEQ_OP_RESET\n"
		"  -l, --loops N       iterations per sample (default 1000; remote:\n"
		"                      N/10 drains)\n"
		"  -p, --preempt-loops N  preemptions per preempt sample (default 150)\n"
		"  -s, --samples N     samples per cell (default 6)\n"
		"  -w, --warmup N      untimed samples first (default 1)\n"
		"  -c, --cpu N         the worker's CPU (default: last allowed)\n"
		"  -C, --cpu2 N        the other CPU: migrate, remote (default: first)\n"
		"  -f, --flavour NAME  flavour label (default: from uname -r)\n"
		"      --period-us N   preempt: the waker's period (default 331)\n"
		"      --no-ops        ops mode: register no operation (the gate must fail)\n"
		"      --via WAY       ops mode: how the operation is registered: prctl\n"
		"                      (default, PR_RSEQ_OP) or min (PR_RSEQ_OPS)\n"
		"  -q, --quiet\n"
		"  -h, --help\n");
}

static int parse_whats(char *s, bool *want)
{
	for (char *t = strtok(s, ","); t; t = strtok(NULL, ",")) {
		int i;

		if (!strcmp(t, "all")) {
			for (i = 0; i < W_NR; i++)
				want[i] = true;
			continue;
		}
		for (i = 0; i < W_NR && strcmp(t, whats[i].name); i++)
			;
		if (i == W_NR) {
			fprintf(stderr, "tcmodel: no cell '%s' (see --list)\n", t);
			return -1;
		}
		want[i] = true;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		RUN_OPTS_LONG,
		{ "preempt-loops", required_argument, NULL, 'p' },
		{ "no-ops", no_argument, NULL, 'N' },
		{ "via", required_argument, NULL, 'V' },
		{ "list", no_argument, NULL, 'L' },
		{ }
	};
	bool want[W_NR] = { }, have_mode = false;
	struct sigaction sa = { .sa_handler = empty_handler };
	char *list;
	int opt, ret = 0;

	ob_prog = "tcmodel";
	while ((opt = getopt_long(argc, argv, "m:p:" RUN_OPTS_SHORT, lopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "legacy")) {
				mode = M_LEGACY;
			} else if (!strcmp(optarg, "ops")) {
				mode = M_OPS;
			} else {
				fprintf(stderr, "tcmodel: --mode '%s': want legacy or ops\n", optarg);
				return 2;
			}
			have_mode = true;
			break;
		case 'p':
			preempt_loops = parse_num("--preempt-loops", optarg, 1);
			break;
		case 'N':
			no_ops = true;
			break;
		case 'V':
			if (!strcmp(optarg, "min")) {
				ops_backend = &minops_backend;
			} else if (strcmp(optarg, "prctl")) {
				fprintf(stderr, "tcmodel: --via '%s': want prctl or min\n", optarg);
				return 2;
			}
			break;
		case 'L':
			for (int i = 0; i < W_NR; i++)
				printf("%-9s %s\n", whats[i].name, whats[i].summary);
			return 0;
		default:
			opt = run_opt(opt, optarg, &ro, usage);
			if (opt != RUN_OPT_TAKEN)
				return opt;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "tcmodel: name the cells, or 'all' (see --list)\n");
		usage(stderr);
		return 2;
	}
	if (!have_mode) {
		fprintf(stderr, "tcmodel: --mode legacy or --mode ops is required\n");
		return 2;
	}
	if (no_ops && mode != M_OPS) {
		fprintf(stderr, "tcmodel: --no-ops is for --mode ops (legacy registers no operation)\n");
		return 2;
	}
	list = strdup(argv[optind]);
	if (!list || parse_whats(list, want))
		return 2;
	free(list);
	if (ro.cpu >= OB_CPUS || ro.cpu2 >= OB_CPUS) {
		fprintf(stderr, "tcmodel: CPUs above %d are not modelled\n", OB_CPUS - 1);
		return 2;
	}
	ob_identify();
	default_cpus(&ro.cpu, &ro.cpu2, OB_CPUS);
	if (ro.cpu < 0 || ro.cpu2 < 0) {
		fprintf(stderr, "tcmodel: no usable CPU\n");
		return 2;
	}
	/*
	 * legacy needs glibc's registration off; ops needs it on. getcpu
	 * measures glibc itself, with its registration off (legacy) or on.
	 */
	if (mode == M_LEGACY)
		reexec_without_glibc_rseq(argv, "tcmodel", !ob_quiet);
	if (pin_self(ro.cpu)) {
		fprintf(stderr, "tcmodel: cannot pin to CPU %d: %s (see --cpu)\n", ro.cpu,
			strerror(errno));
		return 2;
	}
	m.base = aligned_alloc(1 << SLAB_SHIFT, (size_t)OB_CPUS << SLAB_SHIFT);
	if (!m.base) {
		fprintf(stderr, "tcmodel: out of memory\n");
		return 1;
	}
	memset(m.base, 0, (size_t)OB_CPUS << SLAB_SHIFT);
	for (int c = 0; c < OB_CPUS; c++) {
		uint16_t *h = (uint16_t *)(m.base + ((size_t)c << SLAB_SHIFT) + CLASS_HDR);
		void **slots = (void **)(m.base + ((size_t)c << SLAB_SHIFT));

		h[0] = (CLASS_BEGIN + CLASS_END) / 2;	/* current: half full */
		h[2] = CLASS_BEGIN;
		h[3] = CLASS_END;
		for (int i = CLASS_BEGIN; i < h[0]; i++)
			slots[i] = &items[i];
	}
	sigaction(SIGUSR1, &sa, NULL);
	/*
	 * The kernel skips the membarrier fences of a process with one thread
	 * (and of a machine with one CPU online): every run has a second
	 * thread that sleeps, as any process that needs the fences has, so
	 * that every cell runs in the same process shape.
	 */
	if (start_sleeper()) {
		fprintf(stderr, "tcmodel: cannot start a second thread\n");
		return 1;
	}
	emit_clock();
	for (int w = 0; w < W_NR; w++) {
		if (!want[w])
			continue;
		prctl(PR_SET_NAME, (unsigned long)"tcmodel", 0, 0, 0);
		ret |= run_what(w);
	}
	return ret;
}
