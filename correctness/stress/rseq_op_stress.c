// SPDX-License-Identifier: GPL-2.0
/*
 * rseq_op_stress.c - adversarial and concurrent use of RSEQ operations.
 *
 * For DURATION seconds, forks victim processes, each running one scenario
 * of the table below with its own seed, the scenarios in rounds of one
 * permutation each drawn from SEED (each runs once before any runs
 * twice). SEED fixes the k-th victim's scenario and seed, whatever order
 * victims end in; only how many run depends on the machine. A scenario
 * either keeps the contract (the victim must live and exit 0) or breaks it
 * on purpose (it must die of SIGSEGV, and only after the breaking write).
 * Each victim writes its stage to a shared page: STAGE_BROKEN is set just
 * before the write that breaks the contract, so a SIGSEGV before it, a
 * survival after it, a wrong exit status or a hang is a wrong outcome.
 *
 * Usage: rseq_op_stress [-d SECONDS] [-j PARALLEL] [-s SEED] [-S SCENARIO] [-R|-M] [-v]
 *        rseq_op_stress [-R|-M] --list
 *
 * -R (--resident): a kernel that checks and copies a node at registration
 * and never reads it again (series v4 and v3, the ops and ops-v3 flavours,
 * and the kernel-resident variant of v2). There, what a scenario writes to
 * registered nodes is ignored: the victim must live, and the operations
 * must still apply as registered; only a destination page that goes away
 * or read-only for good still kills it. Two threads registering one node
 * at once may both link it.
 *
 * -M (--handles): the minimal kernel-owned ABI (the min flavour), where
 * PR_RSEQ_OPS_ADD copies a description of a word to zero and returns a
 * handle, PR_RSEQ_OPS_DEL takes the handle, and a limit the kernel keeps
 * to itself ends additions with -ENOSPC (found at start, "ops_limit" in
 * the summary). A node the scenarios register becomes a description (they
 * draw only zero stores then) and is kept in a table of handles; a node
 * no handle was given for is asked of the kernel by a handle the thread
 * does not hold, which it must refuse with -ENOENT. There is no node in
 * user memory, so the scenarios that write, unmap or link nodes, and
 * migrate-signal (no CPU-strided operation in the ABI), are not drawn;
 * limit, bad-register, exec and rseq-rereg check the ABI's own rules.
 *
 * The fault-* scenarios keep the contract under either semantics: a
 * sibling thread takes the destinations' pages away for a moment (fork,
 * MADV_DONTNEED, MADV_PAGEOUT, soft-dirty clearing, a THP split and
 * collapse, compaction of all memory, which migrates pages, reclaim in a
 * memory cgroup at its limit, which swaps them out, NUMA balancing's
 * scanner, which makes them PROT_NONE for a hinting fault), and the
 * victim must live and find every operation applied (ops-v3 killed such
 * victims). Where the kernel cannot cause the event (no swap, no
 * soft-dirty tracking, no THP, no compaction, no memory cgroup, one NUMA
 * node) a run is unsupported, with the reason, in the summary: see
 * sc_fault().
 * fault-compact and fault-memcg need root (the guest's): the first
 * compacts the whole machine's memory, the second makes a cgroup.
 *
 * A reset the program means to succeed is of a whole uint64_t word, 8
 * bytes, but 4 on a 32-bit kernel, which refuses 8 (uname() tells; a
 * 32-bit program on a 64-bit kernel resets 8). A 4-byte reset is of the
 * word's low-order half, at word + 4 on big-endian. Where a strided
 * node's dst_stride of 8 is no valid reset len (big-endian, a 32-bit
 * kernel), mutate-valid keeps each node of the kind it was registered as.
 *
 * Output: progress on stderr; one JSON summary line on stdout, e.g.
 *   {"seconds":60,"victims":812,"prctl_calls":91234,"walks_triggered":...,
 *    "violations_injected":301,"segv_expected":301,"segv_seen":301,
 *    "wrong":2,"victim_alarm_s":60,"fork_retries":0,"void_runs":0,
 *    "race_register":{"budget_s":5,"rounds":9120,"rounds_drawn":9120,
 *    "time_cut":0},"migrate_signal":{"budget_s":5,"moves":2410,
 *    "moves_drawn":2410,"time_cut":0},"transient_faults":{"budget_s":5,
 *    "rounds":5210,"rounds_drawn":5210,"time_cut":0},"unsupported":{
 *    "fault-pageout":{"runs":9,"why":"no swap: MADV_PAGEOUT leaves anonymous pages in place"}},
 *    "scenarios":{"self-cycle":{"runs":20,"wrong":2,"max_s":1.5,
 *    "exposed":19,"events":0,"unsupported":0,"wrong_how":{"exit 99":2}},...}}
 * (wrong_how: the wrong outcomes by exit status or killing signal; the
 * victims' exit statuses say why: 98 a node not reset by the walk (the
 * victim's own or one of its threads'), 97 a control word of
 * fault-dontneed or fault-compact that a store from user mode did not
 * reset, 99
 * alive after breaking the contract, 90-96 a refused or wrong prctl, 87 a
 * fault-* run whose sibling caused no event, 88 a victim never switched
 * out.
 * max_s: the slowest victim, against victim_alarm_s. exposed: the runs
 * that checked a registered RESET operation other than the oldest, the
 * only ones a kernel that applies only the oldest operation, the negative
 * control, can fail. fork_retries: victims started again after fork()
 * failed; void_runs: victims that found one CPU and tested nothing;
 * race_register: rounds run of those drawn, and the runs that the time
 * budget stopped early; migrate_signal: the same for its moves;
 * transient_faults: the same for the fault-* scenarios (a victim goes on
 * past its drawn rounds until its sibling tried once, so rounds can
 * exceed rounds_drawn); events: the events their siblings caused
 * (fault-numa: the rounds in which NUMA balancing's scanner went over the
 * victim's memory between the arming and the switch); moved: the words
 * whose page was on another frame at a check than after the arming before
 * it (a page migrated, or dropped and faulted in again); checks: the
 * checks of the words the fault-* victims made; raced_checks, raced_set,
 * raced_set_arm, ctl_raced_set: fault-dontneed's checks with a drop of the
 * words' pages in progress at the arming's end or at the check, the marks
 * found on dropped pages in them (those with the drop in progress at the
 * arming's end), and in the control: not judged (see fault_check());
 * unsupported: the
 * runs of a scenario whose event this kernel cannot cause, by scenario
 * with the first run's reason: such a run exits 0, a right outcome
 * counted here rather than passed in silence.)
 * Exit status: 0 when every outcome was right; 1 otherwise; 4 (kselftest
 * SKIP) when the kernel has no RSEQ operations.
 *
 * The kernel side (no oops, warning, KASAN report, lockdep splat, hang) is
 * checked by the caller on the guest console: correctness/stress.sh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* reg.c's registration helpers, MARK and STRIDE_SLOTS. */
#include "../../microbench/reg.h"

#define MAX_OPS		OB_RSEQ_OP_LIST_LIMIT
#define SLOTS		STRIDE_SLOTS
/*
 * Never a user address: x86-64's direct map on 64-bit, and on 32-bit the
 * page below the top, above TASK_SIZE of 32-bit kernels and compat tasks
 * (a 64-bit constant would truncate to a NULL pointer there). With up to
 * 511 words past it, it stays below 4 GiB.
 */
#if UINTPTR_MAX == 0xffffffffU
#define KERNEL_ADDR	0xffffe000ULL
#else
#define KERNEL_ADDR	0xffff888000000000ULL
#endif
#define VICTIM_ALARM	60
/*
 * race-register stops at its drawn rounds or after this much time, so
 * that spinners starved by the other victims stay far inside the alarm:
 * the tests allow a victim VICTIM_ALARM / 4.
 */
#define RACE_BUDGET_S	(VICTIM_ALARM / 12)
/*
 * migrate-signal stops at its drawn moves, or after this much time once
 * MOVES_MIN are done: a move is two migrations and a signal, which a
 * loaded host makes slow (victims of 12 to 16 s beside another guest,
 * 2026-12-07, against the quarter of the alarm that the tests allow).
 */
#define MOVE_BUDGET_S	(VICTIM_ALARM / 12)
#define MOVES_MIN	20

enum stage { STAGE_START, STAGE_KEPT, STAGE_BROKEN };
/* NONE: not drawn under -M, the ABI has no such thing */
enum expect { LIVE, SEGV, NONE };

/* Shared with the conductor: one per victim slot. */
struct report {
	volatile int stage;
	volatile long prctl_calls;
	volatile long walks;
	/* Checked a registered RESET node other than the oldest: see check_resets() */
	volatile int exposed;
	volatile int voided;	/* found nothing to test (one CPU) */
	/*
	 * race-register, or with fault_run a transient-fault scenario, or
	 * with move_run migrate-signal: rounds (moves) run, rounds drawn,
	 * stopped by RACE_BUDGET_S, FAULT_BUDGET_S or MOVE_BUDGET_S
	 */
	volatile long rounds, rounds_drawn;
	volatile int time_cut;
	volatile int fault_run, move_run;
	volatile long events;	/* transient faults: events the sibling caused */
	volatile long moved;	/* and words whose page changed frame: see fault_moved() */
	/*
	 * fault-*: checks made; fault-dontneed: those a drop raced with, the
	 * marks found on dropped pages in them (those where the drop was in
	 * progress at the arming's end apart) and in the control: not judged,
	 * see fault_check()
	 */
	volatile long checks, raced_checks, raced_set, raced_set_arm, ctl_raced_set;
	/* Where a fault-* victim was: its round, and the step (fault_steps[]) */
	volatile long fault_round;
	volatile int fault_step;
	char unsupported[96];	/* why this kernel cannot cause them: see sc_fault() */
	char why[640];
};

struct node {
	struct ob_rseq_op_reset_with_stride op;
	uint64_t pad;		/* 64 bytes: whole nodes per page */
};

/* A victim's world: nodes and words in pages of their own. */
struct world {
	struct report *rep;
	struct ob_rseq *area;
	struct node *nodes;	/* MAX_OPS nodes */
	uint64_t *words;	/* MAX_OPS words */
	uint64_t *slots;	/* SLOTS words, strided destinations */
	uint64_t *srcs;		/* source values */
	struct node *saved;	/* each node as it was when registered */
	bool reg[MAX_OPS];
	/* Registration order: the kernel keeps operations oldest first */
	unsigned int regseq[MAX_OPS], regs;
	int nr;
	unsigned int seed;
};

/* This thread's own rseq area, registered by microbench/reg.c. */
static __thread struct ob_rseq *area;
static size_t page;
static bool verbose;
static bool resident;	/* -R: the kernel applies the nodes as registered */
static bool handles;	/* -M: the handle ABI (PR_RSEQ_OPS); implies resident */
/* How many operations a thread may hold: MAX_OPS, or what -M's probe found */
static int ops_limit = MAX_OPS;
static bool must_die;	/* the victim's scenario expects SIGSEGV */
static uint32_t word_len;	/* full_len(): set by main() before any victim */

static int rseq_on(void)
{
	return rseq_register_thread(REG_OWN, &area);
}

/*
 * -M: this thread's handles, by the node each was registered from (a
 * fork()ed child holds its parent's, as the kernel's copy does).
 */
struct held {
	const void *node;
	long handle;
};
static __thread struct held held[MAX_OPS];
static __thread int nr_held;

static int rseq_off(void)
{
	nr_held = 0;	/* -M: the kernel drops the operations with rseq */
	return rseq_unregister_thread(REG_OWN, area);
}

/* PR_RSEQ_OPS: the result, or -errno */
static long ops_call(unsigned long cmd, unsigned long a3, unsigned long a4,
		     unsigned long a5)
{
	long r = prctl(OB_PR_RSEQ_OPS, cmd, a3, a4, a5);

	return r < 0 ? -errno : r;
}

/* -M: how many operations the kernel holds for this thread, or -errno */
static long held_count(void)
{
	return ops_call(OB_PR_RSEQ_OPS_GET, 0, 0, 0);
}

/* -M: the entry of held[] for @node (its newest registration), or -1 */
static int held_index(const void *node)
{
	int i;

	for (i = nr_held - 1; i >= 0 && held[i].node != node; i--)
		;
	return i;
}

/* -M: the handle @node was registered with, or -1 */
static long handle_of(const void *node)
{
	int i = held_index(node);

	return i < 0 ? -1 : held[i].handle;
}

/* -M: the lowest handle this thread does not hold */
static long free_handle(void)
{
	long h;
	int i;

	for (h = 0;; h++) {
		for (i = 0; i < nr_held && held[i].handle != h; i++)
			;
		if (i == nr_held)
			return h;
	}
}

/*
 * Register or unregister @node: prctl(PR_RSEQ_OP), or under -M its
 * description (only a RESET of zero has one) added with PR_RSEQ_OPS_ADD
 * and deleted by its handle. A node that holds no handle is deleted by a
 * handle this thread does not hold: the kernel must say -ENOENT, as the
 * list ABI does for a node not on the list. 0 or -errno.
 */
static long node_op(int cmd, const void *node, long a4, long a5)
{
	const struct ob_rseq_op_reset *n = node;
	struct ob_rseq_op d;
	long h;
	int i;

	if (!handles)
		return prctl(OB_PR_RSEQ_OP, cmd, (unsigned long)node, a4, a5) ? -errno : 0;
	if (cmd == OB_PR_RSEQ_OP_REGISTER) {
		/* Never drawn under -M: fill() and reg_one() draw zero stores */
		if (n->node.type != OB_RSEQ_OP_RESET || n->src)
			return -EOPNOTSUPP;
		if (nr_held == MAX_OPS)
			return -ENOSPC;
		memset(&d, 0, sizeof(d));
		d.addr = n->dst;
		d.len = n->len;
		d.type = OB_RSEQ_OP_TYPE_ZERO;
		h = ops_call(OB_PR_RSEQ_OPS_ADD, (unsigned long)&d, sizeof(d), a5);
		if (h < 0)
			return h;
		held[nr_held].node = node;
		held[nr_held].handle = h;
		nr_held++;
		return 0;
	}
	i = held_index(node);
	h = ops_call(OB_PR_RSEQ_OPS_DEL, i < 0 ? free_handle() : held[i].handle, a4, a5);
	if (!h && i >= 0)
		held[i] = held[--nr_held];
	return h;
}

/* A count of operations drawn for a thread, within what it may hold */
static int capped(int n)
{
	return n < ops_limit ? n : ops_limit;
}

static unsigned int rnd(struct world *w, unsigned int n)
{
	return n ? (unsigned int)rand_r(&w->seed) % n : 0;
}

static double since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) + (now.tv_nsec - t->tv_nsec) / 1e9;
}

/*
 * Whether the kernel is 64-bit, whatever this program is: its machine
 * names 64 bits, or is s390x (as the kernel's rseq selftests tell).
 */
static bool kernel_is_64bit(void)
{
	struct utsname u;

	if (uname(&u))
		return sizeof(long) == 8;
	return strstr(u.machine, "64") || !strcmp(u.machine, "s390x");
}

/*
 * The len of a reset of a whole uint64_t word: 8, but 4 on a 32-bit
 * kernel, which refuses 8 (a 32-bit program on a 64-bit kernel may use 8).
 */
static uint32_t full_len(void)
{
	return word_len;
}

/*
 * The dst (or src) of a reset of @len bytes of @word: its numeric
 * low-order half, which the checks compare. That is the word itself, but
 * word + 4 for 4 bytes on big-endian.
 */
static uint64_t low_half(const uint64_t *word, uint32_t len)
{
	uintptr_t a = (uintptr_t)word;

	if (len == 4 && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
		a += 4;
	return a;
}

/* A victim that got it wrong says why and leaves with a telling status. */
static void __attribute__((noreturn)) wrong(struct world *w, int status,
					    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->rep->why, sizeof(w->rep->why), fmt, ap);
	va_end(ap);
	_exit(status);
}

static long op(struct world *w, int cmd, void *node, long a4, long a5)
{
	struct node *n = node;
	long r;

	w->rep->prctl_calls++;
	r = node_op(cmd, node, a4, a5);
	/* What a kernel-resident variant now applies, whatever comes later */
	if (!r && cmd == OB_PR_RSEQ_OP_REGISTER && n >= w->nodes && n < w->nodes + MAX_OPS &&
	    !(((uintptr_t)n - (uintptr_t)w->nodes) % sizeof(*n))) {
		w->saved[n - w->nodes] = *n;
		w->regseq[n - w->nodes] = ++w->regs;
	}
	return r;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* Make the kernel walk the list: a signal's delivery always does. */
static void walk(struct world *w)
{
	w->rep->walks++;
	raise(SIGUSR1);
}

/* Also leave the CPU now and then: the exit path after a switch walks. */
static void walk_or_sleep(struct world *w)
{
	if (rnd(w, 4))
		walk(w);
	else
		poll(NULL, 0, 1);
}

static void fill(struct world *w, int i, int type)
{
	struct ob_rseq_op_reset_with_stride *n = &w->nodes[i].op;
	bool src = rnd(w, 2) && !handles;	/* -M: zero stores only */
	uint32_t len = rnd(w, 2) ? full_len() : 4;

	memset(&w->nodes[i], 0, sizeof(w->nodes[i]));
	n->node.type = type;
	n->src = src ? low_half(&w->srcs[i % 8], len) : 0;
	if (type == OB_RSEQ_OP_RESET) {
		struct ob_rseq_op_reset *r = (void *)n;

		r->dst = low_half(&w->words[i], len);
		r->len = len;	/* at 40, where a strided node has dst_stride */
	} else {
		n->dst = low_half(w->slots, len);
		n->dst_stride = 8;
		n->len = len;
	}
}

static int reg_one(struct world *w, int i)
{
	int type = rnd(w, 5) < 3 ? OB_RSEQ_OP_RESET : 1 + rnd(w, 2);
	long r;

	if (handles)	/* drawn as ever, so that a seed draws alike */
		type = OB_RSEQ_OP_RESET;

	fill(w, i, type);
	r = op(w, OB_PR_RSEQ_OP_REGISTER, &w->nodes[i], 0, 0);
	if (r)
		return r;
	w->reg[i] = true;
	w->nr++;
	return 0;
}

static void unreg_one(struct world *w, int i)
{
	long r = op(w, OB_PR_RSEQ_OP_UNREGISTER, &w->nodes[i], 0, 0);

	if (r)
		wrong(w, 90, "unregister of registered node %d: %ld", i, r);
	w->reg[i] = false;
	w->nr--;
}

/* Register n valid nodes 0..n-1. */
static void reg_n(struct world *w, int n)
{
	for (int i = 0; i < n; i++) {
		long r = reg_one(w, i);

		if (r)
			wrong(w, 90, "register of valid node %d of %d: %ld", i, n, r);
	}
}

/*
 * Arm the RESET words, walk, and check each registered one was reset: as
 * the node says now, or with -R as it said when it was registered.
 *
 * A check of a RESET node other than the oldest registered one (whatever
 * its type) marks the run exposed: the negative control applies only the
 * oldest operation, so exactly the exposed runs must fail on it. The
 * seed decides whether a run is, not the kernel; the summary counts them.
 */
static void check_resets(struct world *w)
{
	int oldest = -1;

	for (int i = 0; i < MAX_OPS; i++) {
		w->words[i] = MARK;
		if (w->reg[i] && (oldest < 0 || w->regseq[i] < w->regseq[oldest]))
			oldest = i;
	}
	walk(w);
	for (int i = 0; i < MAX_OPS; i++) {
		struct ob_rseq_op_reset *r = (void *)(resident ? &w->saved[i].op : &w->nodes[i].op);
		uint64_t want;

		if (!w->reg[i] || r->node.type != OB_RSEQ_OP_RESET)
			continue;
		if (i != oldest)
			w->rep->exposed = 1;
		want = r->src ? w->srcs[i % 8] : 0;
		if (r->len == 4 ? (uint32_t)w->words[i] != (uint32_t)want :
		    w->words[i] != want)
			wrong(w, 98, "node %d (len %u) not reset by the walk", i, r->len);
	}
}

static void keep(struct world *w)
{
	w->rep->stage = STAGE_KEPT;
}

static void broken(struct world *w)
{
	w->rep->stage = STAGE_BROKEN;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * After breaking the contract: walks until the kernel kills us. With -R,
 * where the nodes were checked and copied at registration, live through
 * the walks and find every operation applied as it was registered.
 */
static void __attribute__((noreturn)) expect_death(struct world *w)
{
	for (int i = 0; i < 50; i++)
		walk_or_sleep(w);
	if (must_die)
		wrong(w, 99, "survived 50 walks after breaking the contract");
	check_resets(w);
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* Scenarios that keep the contract: the victim must live.            */

static void sc_churn(struct world *w)
{
	int rounds = 20 + rnd(w, 60);

	keep(w);
	for (int r = 0; r < rounds; r++) {
		int i = rnd(w, 1 + rnd(w, 2) * (ops_limit - 1));

		if (w->reg[i])
			unreg_one(w, i);
		else if (reg_one(w, i))
			wrong(w, 90, "valid registration of node %d refused", i);
		if (!rnd(w, 4))
			check_resets(w);
		else
			walk_or_sleep(w);
	}
	check_resets(w);
}

/*
 * -M: -ENOSPC at the limit the probe found, as many held as added, a
 * handle freed is the lowest again (the ABI's rule), a deleted handle is
 * gone.
 */
static void sc_limit_handles(struct world *w)
{
	long r, h;
	int n, i;

	keep(w);
	for (n = 0; n < MAX_OPS; n++) {
		fill(w, n, OB_RSEQ_OP_RESET);
		r = op(w, OB_PR_RSEQ_OP_REGISTER, &w->nodes[n], 0, 0);
		if (r == -ENOSPC)
			break;
		if (r)
			wrong(w, 90, "valid operation %d refused: %ld", n, r);
		w->reg[n] = true;
		w->nr++;
	}
	if (n != ops_limit)
		wrong(w, 91, "-ENOSPC after %d operations, the probe's after %d", n, ops_limit);
	r = held_count();
	if (r != n)
		wrong(w, 91, "PR_RSEQ_OPS_GET counts %ld operations, %d were added", r, n);
	check_resets(w);
	i = rnd(w, n);
	h = handle_of(&w->nodes[i]);
	unreg_one(w, i);
	w->rep->prctl_calls++;
	r = ops_call(OB_PR_RSEQ_OPS_DEL, h, 0, 0);
	if (r != -ENOENT)
		wrong(w, 91, "deleting handle %ld twice gave %ld, not -ENOENT", h, r);
	if (reg_one(w, i))
		wrong(w, 91, "re-adding operation %d after a delete refused", i);
	if (handle_of(&w->nodes[i]) != h)
		wrong(w, 91, "re-added operation got handle %ld, not the lowest free, %ld",
		      handle_of(&w->nodes[i]), h);
	check_resets(w);
	for (i = 0; i < n; i++)
		unreg_one(w, i);
	r = held_count();
	if (r)
		wrong(w, 91, "PR_RSEQ_OPS_GET counts %ld operations after every delete", r);
	walk(w);
}

static void sc_limit(struct world *w)
{
	static struct ob_rseq_op_reset extra __attribute__((aligned(8)));
	long r;

	if (handles) {
		sc_limit_handles(w);
		return;
	}
	keep(w);
	reg_n(w, MAX_OPS);
	extra.len = full_len();
	extra.dst = low_half(&w->words[0], extra.len);
	r = op(w, OB_PR_RSEQ_OP_REGISTER, &extra, 0, 0);
	if (r != -ENOSPC)
		wrong(w, 91, "registration 2049 gave %ld, not -ENOSPC", r);
	check_resets(w);
	for (int i = 0; i < MAX_OPS; i++)
		unreg_one(w, i);
	r = op(w, OB_PR_RSEQ_OP_UNREGISTER, &w->nodes[0], 0, 0);
	if (r != -ENOENT)
		wrong(w, 91, "unregistering with none registered gave %ld, not -ENOENT", r);
	walk(w);
}

/*
 * -M: descriptions and calls the handle ABI refuses, each leaving what
 * the thread holds as it was; a handle not held, or a delete with an
 * argument set, refused too.
 */
static void sc_bad_register_handles(struct world *w)
{
	static struct {
		struct ob_rseq_op d;
		uint64_t tail;
	} b __attribute__((aligned(8)));
	static const uint32_t bad_len[] = { 0, 1, 2, 3, 5, 16 };
	static const char *const what[] = {
		"flags set", "handle set", "reserved set", "unknown type", "bad len",
		"no word", "misaligned word", "kernel word", "word in the rseq area",
		"short description", "longer description, tail set",
		"description past a page", "unmapped description", "arg5 set",
		"bad command",
	};
	void *unmapped;
	long r, held0;
	int i;

	keep(w);
	reg_n(w, capped(1 + rnd(w, 8)));
	held0 = held_count();
	unmapped = mmap(NULL, page, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(unmapped, page);
	for (unsigned int c = 0; c < sizeof(what) / sizeof(what[0]); c++) {
		unsigned long cmd = OB_PR_RSEQ_OPS_ADD, size = sizeof(b.d), a5 = 0;
		void *p = &b.d;

		memset(&b, 0, sizeof(b));
		b.d.len = full_len();
		b.d.addr = low_half(&w->words[0], b.d.len);
		switch (c) {
		case 0: b.d.flags = 1 + rnd(w, 0xfffe); break;
		case 1: b.d.handle = 1 + rnd(w, 1000); break;
		case 2: b.d.reserved = 1 + rnd(w, 1000); break;
		case 3: b.d.type = 1 + rnd(w, 0xfffe); break;
		case 4: b.d.len = bad_len[rnd(w, 6)]; break;
		case 5: b.d.addr = 0; break;
		case 6: b.d.addr += 1 + rnd(w, b.d.len - 1); break;
		case 7: b.d.addr = KERNEL_ADDR; break;
		case 8: b.d.addr = (uintptr_t)area + 8 * rnd(w, 4); break;
		case 9: size = 8 * rnd(w, 3); break;
		case 10: size = sizeof(b); b.tail = 1; break;
		case 11: size = page + 8; break;
		case 12: p = unmapped; break;
		case 13: a5 = 1; break;
		case 14: cmd = 4 + rnd(w, 100); break;
		}
		w->rep->prctl_calls++;
		r = ops_call(cmd, (unsigned long)p, size, a5);
		if (r >= 0)
			wrong(w, 92, "%s: accepted (%ld)", what[c], r);
		if (held_count() != held0)
			wrong(w, 92, "%s: refused (%ld), but the count changed", what[c], r);
		walk(w);
	}
	w->rep->prctl_calls += 2;
	r = ops_call(OB_PR_RSEQ_OPS_DEL, free_handle(), 0, 0);
	if (r != -ENOENT)
		wrong(w, 92, "deleting a handle not held gave %ld, not -ENOENT", r);
	for (i = 0; i < MAX_OPS && !w->reg[i]; i++)
		;
	r = ops_call(OB_PR_RSEQ_OPS_DEL, handle_of(&w->nodes[i]), 1, 0);
	if (r >= 0 || held_count() != held0)
		wrong(w, 92, "delete with arg4 set: %ld, %ld held of %ld", r, held_count(), held0);
	check_resets(w);
}

static void sc_bad_register(struct world *w)
{
	static struct ob_rseq_op_reset n __attribute__((aligned(8)));
	char *unmapped;
	long r;

	if (handles) {
		sc_bad_register_handles(w);
		return;
	}
	keep(w);
	reg_n(w, 1 + rnd(w, 8));
	unmapped = mmap(NULL, page, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(unmapped, page);
	struct { const char *what; int field; } cases[] = {
		{ "reserved byte set", 0 }, { "unknown type", 1 },
		{ "next set", 2 }, { "prev set", 3 }, { "misaligned node", 4 },
		{ "unmapped node", 5 }, { "kernel node", 6 }, { "bad command", 7 },
		{ "arg4 set", 8 }, { "arg5 set", 9 },
	};
	for (unsigned int c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		void *p = &n;
		int cmd = OB_PR_RSEQ_OP_REGISTER;
		long a4 = 0, a5 = 0;

		memset(&n, 0, sizeof(n));
		n.len = full_len();
		n.dst = low_half(&w->words[0], n.len);
		switch (cases[c].field) {
		case 0: n.node.reserved[rnd(w, 7)] = 1; break;
		case 1: n.node.type = 3 + rnd(w, 250); break;
		case 2: n.node.next = (uintptr_t)&n; break;
		case 3: n.node.prev = (uintptr_t)&n; break;
		case 4: p = (char *)&n + 1 + rnd(w, 7); break;
		case 5: p = unmapped; break;
		case 6: p = (void *)KERNEL_ADDR; break;
		case 7: cmd = 3 + rnd(w, 100); break;
		case 8: a4 = 1; break;
		case 9: a5 = 1; break;
		}
		r = op(w, cmd, p, a4, a5);
		if (!r)
			wrong(w, 92, "%s: registration accepted", cases[c].what);
		walk(w);
	}
	/* Unregistering what is not on our list is refused. */
	memset(&n, 0, sizeof(n));
	if (!op(w, OB_PR_RSEQ_OP_UNREGISTER, &n, 0, 0))
		wrong(w, 92, "unregistering an unregistered node accepted");
	check_resets(w);
}

/* A compiler barrier: a walk can come between any two of our stores. */
#define barrier()	__atomic_signal_fence(__ATOMIC_SEQ_CST)

/* The word a src or dst points into (NULL for none): at most 4 past it. */
static const uint64_t *word_of(uint64_t addr)
{
	return (const uint64_t *)(uintptr_t)(addr & ~7ULL);
}

/*
 * Make a registered node reset @len bytes of @dst from @src (NULL: zero),
 * at the halves low_half() gives, in an order that keeps every state
 * between two stores valid: a 4-byte reset's addresses may be word + 4
 * (big-endian), misaligned for 8 bytes, so len turns 4 before they move
 * there, and turns 8 only after they left.
 */
static void set_reset(uint32_t *lenp, uint64_t *srcp, uint64_t *dstp,
		      uint32_t len, const uint64_t *src, const uint64_t *dst)
{
	if (low_half(dst, len) != (uintptr_t)dst) {
		*lenp = len;
		barrier();
	}
	*srcp = src ? low_half(src, len) : 0;
	barrier();
	*dstp = low_half(dst, len);
	barrier();
	*lenp = len;
	barrier();
}

/* Make a registered node strided over the slots, stride 8, by @type. */
static void set_strided(struct world *w, struct ob_rseq_op_reset_with_stride *s,
			uint32_t len, int type)
{
	set_reset(&s->len, &s->src, &s->dst, len, word_of(s->src), w->slots);
	s->dst_stride = 8;
	barrier();
	s->node.type = type;
	barrier();
}

/*
 * Valid rewrites of a registered node's fields: type, src, dst, len and
 * stride, in an order that keeps every intermediate state valid, since
 * a preemption, and so a walk, can fall between any two stores. All
 * words are 8-byte aligned (set_reset() tells where a 4-byte reset's
 * addresses go). A reset's len shares its offset with a strided node's
 * dst_stride, kept at 8, so a node changes kind only where that stride
 * reads as a valid reset len, 8: little-endian, on a 64-bit kernel. On
 * big-endian (where the len reads the stride's high-order half, 0) or a
 * 32-bit kernel (which refuses len 8) each node keeps its kind.
 */
static void sc_mutate_valid(struct world *w)
{
	bool morph = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && full_len() == 8;
	int n = 1 + rnd(w, 64), rounds = 30 + rnd(w, 100);

	keep(w);
	reg_n(w, n);
	for (int i = 0; i < n; i++) {	/* start from strided, stride 8 (if morph) */
		struct ob_rseq_op_reset_with_stride *s = &w->nodes[i].op;

		if (morph || s->node.type != OB_RSEQ_OP_RESET)
			set_strided(w, s, full_len(), OB_RSEQ_OP_RESET_WITH_STRIDE_CPUID);
	}
	for (int r = 0; r < rounds; r++) {
		struct ob_rseq_op_reset_with_stride *s = &w->nodes[rnd(w, n)].op;
		struct ob_rseq_op_reset *t = (void *)s;
		bool reset = s->node.type == OB_RSEQ_OP_RESET;
		const uint64_t *word;
		uint32_t len;
		int type;

		switch (rnd(w, 4)) {
		case 0:		/* strided -> reset, or reset -> reset */
			word = &w->words[rnd(w, MAX_OPS - SLOTS)];
			len = rnd(w, 2) ? full_len() : 4;
			if (morph) {
				t->len = 8;	/* the stride's low-order half */
				barrier();
				s->node.type = OB_RSEQ_OP_RESET;
				barrier();
			} else if (!reset) {
				break;		/* keeps its kind */
			}
			set_reset(&t->len, &t->src, &t->dst, len, word_of(t->src), word);
			break;
		case 1:		/* -> strided, by CPU or by mm_cid */
			len = rnd(w, 2) ? full_len() : 4;
			type = 1 + rnd(w, 2);
			if (morph || !reset)
				set_strided(w, s, len, type);
			break;
		case 2:
			len = reset ? t->len : s->len;
			s->src = rnd(w, 2) ? low_half(&w->srcs[rnd(w, 8)], len) : 0;
			break;
		case 3:
			break;
		}
		barrier();
		walk_or_sleep(w);
	}
}

/* A read-only node is fine: the kernel only reads nodes. */
static void sc_ro_node(struct world *w)
{
	keep(w);
	reg_n(w, 1 + rnd(w, 128));
	mprotect(w->nodes, MAX_OPS * sizeof(struct node), PROT_READ);
	for (int i = 0; i < 10; i++)
		walk_or_sleep(w);
	mprotect(w->nodes, MAX_OPS * sizeof(struct node), PROT_READ | PROT_WRITE);
	check_resets(w);
}

struct thr {
	struct world *w;
	int id;
	pid_t target;		/* signaller: the thread it signals */
	volatile bool stop;
	int err;
};

static void *thread_ops(void *arg)
{
	struct thr *t = arg;
	static struct ob_rseq_op_reset tn[16][8] __attribute__((aligned(8)));
	static uint64_t tw[16][8];
	int n = 1 + t->id % 8, linked = 0;

	if (rseq_on()) {
		t->err = 1;
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		memset(&tn[t->id][i], 0, sizeof(tn[t->id][i]));
		tn[t->id][i].len = full_len();
		tn[t->id][i].dst = low_half(&tw[t->id][i], full_len());
		if (node_op(OB_PR_RSEQ_OP_REGISTER, &tn[t->id][i], 0, 0))
			t->err = 2;
		else
			linked++;
	}
	while (!t->stop) {
		for (int i = 0; i < n; i++)
			tw[t->id][i] = MARK;
		raise(SIGUSR1);	/* a process-wide raise goes to this thread */
		/* Two of this thread's own RESET nodes: one is not the oldest. */
		if (linked > 1)
			t->w->rep->exposed = 1;
		for (int i = 0; i < n; i++)
			if (tw[t->id][i])
				t->err = 3;
		if (t->id & 1)
			sched_yield();
	}
	return NULL;
}

static void *signaller(void *arg)
{
	struct thr *t = arg;
	pid_t pid = getpid();

	while (!t->stop) {
		syscall(SYS_tgkill, pid, t->target, SIGUSR1);
		sched_yield();
	}
	return NULL;
}

/* Many threads with operations, and a signal storm on the main thread. */
static void sc_threads(struct world *w)
{
	int nt = 2 + rnd(w, 14);
	struct thr t[16], sig = { .w = w };
	pthread_t th[16], sth;

	keep(w);
	reg_n(w, capped(1 + rnd(w, 256)));
	sig.target = gettid();
	pthread_create(&sth, NULL, signaller, &sig);
	for (int i = 0; i < nt; i++) {
		t[i] = (struct thr){ .w = w, .id = i };
		pthread_create(&th[i], NULL, thread_ops, &t[i]);
	}
	for (int r = 0; r < 20; r++)
		check_resets(w);
	for (int i = 0; i < nt; i++) {
		t[i].stop = true;
		pthread_join(th[i], NULL);
		/* 3: one of its nodes not reset, the walk's fault as in 98. */
		if (t[i].err)
			wrong(w, t[i].err == 3 ? 98 : 93, "thread %d: %s", i,
			      t[i].err == 3 ? "a node not reset by the walk" :
			      t[i].err == 2 ? "registration refused" :
			      "rseq registration refused");
	}
	sig.stop = true;
	pthread_join(sth, NULL);
}

/*
 * A thread moved to another CPU and signalled at once, while this thread
 * holds the destination, so that the signal is delivered before the moved
 * thread's IDs were updated there: its CPU-strided operation must never
 * write the slot of the CPU it left (another thread may own that slot by
 * then), and must have reset the slot of the new CPU before the handler ran.
 */
struct moved {
	struct world *w;
	pid_t tid;
	volatile int ready;
	volatile bool stop;
	volatile int handled;
	volatile uint64_t seen;
};

static struct moved *moving;

static void on_usr2(int sig)
{
	(void)sig;
	moving->seen = moving->w->slots[area->cpu_id];
	__atomic_add_fetch(&moving->handled, 1, __ATOMIC_RELEASE);
}

static void *moved_thread(void *arg)
{
	struct moved *m = arg;
	struct ob_rseq_op_reset_with_stride *n = &m->w->nodes[0].op;

	m->tid = gettid();
	memset(n, 0, sizeof(*n));
	n->node.type = OB_RSEQ_OP_RESET_WITH_STRIDE_CPUID;
	n->len = full_len();
	n->dst = low_half(m->w->slots, n->len);
	n->dst_stride = 8;
	if (rseq_on() || prctl(OB_PR_RSEQ_OP, OB_PR_RSEQ_OP_REGISTER,
			       (unsigned long)n, 0, 0)) {
		m->ready = -1;
		return NULL;
	}
	m->ready = 1;
	while (!m->stop)	/* user space, no syscalls */
		;
	return NULL;
}

static int pin(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set);
}

/* The first two CPUs this victim may use; false with fewer. */
static bool two_cpus(int cpus[2])
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return false;
	for (int cpu = 0; cpu < SLOTS && n < 2; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[n++] = cpu;
	return n == 2;
}

static void sc_migrate_signal(struct world *w)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	struct moved m = { .w = w };
	int cpus[2], moves = MOVES_MIN + rnd(w, 200), i;
	struct timespec t0;
	pthread_t th;

	keep(w);
	if (!two_cpus(cpus)) {
		w->rep->voided = 1;	/* nothing to move between: counted */
		return;
	}
	moving = &m;
	sigaction(SIGUSR2, &sa, NULL);
	for (int i = 0; i < SLOTS; i++)
		w->slots[i] = MARK;
	if (pin(0, cpus[1]))
		wrong(w, 80, "sched_setaffinity (self): %s", strerror(errno));
	pthread_create(&th, NULL, moved_thread, &m);
	while (!m.ready)
		sched_yield();
	if (m.ready < 0)
		wrong(w, 81, "moved thread: rseq or PR_RSEQ_OP_REGISTER failed");
	if (pin(m.tid, cpus[0]))
		wrong(w, 80, "sched_setaffinity: %s", strerror(errno));
	w->rep->move_run = 1;
	w->rep->rounds_drawn = moves;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < moves; i++) {
		int from = cpus[i % 2], to = cpus[(i + 1) % 2];
		int handled = m.handled;

		if (i >= MOVES_MIN && since(&t0) >= MOVE_BUDGET_S)
			break;
		if (pin(0, to))
			wrong(w, 80, "sched_setaffinity (self): %s", strerror(errno));
		w->slots[to] = MARK;
		if (pin(m.tid, to))
			wrong(w, 80, "sched_setaffinity: %s", strerror(errno));
		w->slots[from] = MARK;	/* nobody may write it from now on */
		w->rep->walks++;
		syscall(SYS_tgkill, getpid(), m.tid, SIGUSR2);
		while (__atomic_load_n(&m.handled, __ATOMIC_ACQUIRE) == handled)
			sched_yield();
		if (w->slots[from] != MARK)
			wrong(w, 82, "move %d: slot of CPU %d written after the thread left it",
			      i, from);
		if (m.seen)
			wrong(w, 83, "move %d: slot of CPU %d not reset before the handler",
			      i, to);
		w->rep->rounds = i + 1;	/* published at once, as fault_check() does */
	}
	w->rep->time_cut = i < moves;
	m.stop = true;
	pthread_join(th, NULL);
}

/*
 * Two threads on two CPUs register the same node at the same moment: one
 * links it, the other is refused with -EINVAL. Both linking it would put
 * the node on two lists.
 */
struct racer {
	struct world *w;
	struct racer *other;
	int cpu;
	int rounds;
	bool timer;		/* this one decides when time is up */
	int done;		/* rounds run */
	volatile long result;
	volatile bool failed;
};

static volatile int race_ctr[3];
static int race_stop;
static struct timespec race_t0;

static void race_wait(int i, int target)
{
	__atomic_add_fetch(&race_ctr[i], 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&race_ctr[i], __ATOMIC_ACQUIRE) < target)
		;
}

/*
 * The results of one round of two threads registering one node: one links
 * it and the other finds it linked (-EINVAL). With -R both may link it,
 * each getting an operation of its own: a kernel that reads nodes once
 * needs no lock (series v3), and never follows the links both wrote.
 */
static bool race_ok(long mine, long other)
{
	if (handles)	/* each thread adds an operation of its own */
		return !mine && !other;
	return (!mine && other == -EINVAL) || (mine == -EINVAL && !other) ||
	       (resident && !mine && !other);
}

static void *racer(void *arg)
{
	struct racer *r = arg;
	void *node = &r->w->nodes[0];

	if (pin(0, r->cpu) || rseq_on())
		r->failed = true;
	race_wait(2, 2);
	if (r->failed || r->other->failed)
		return NULL;
	for (int i = 0; i < r->rounds; i++) {
		race_wait(0, 2 * (i + 1));
		r->result = node_op(OB_PR_RSEQ_OP_REGISTER, node, 0, 0);
		r->w->rep->prctl_calls++;
		race_wait(1, 2 * (i + 1));
		if (!resident && !r->result && !r->other->result)
			return NULL;	/* linked twice: stop before a walk */
		if (!r->result && node_op(OB_PR_RSEQ_OP_UNREGISTER, node, 0, 0))
			r->result = -1000;
		/*
		 * One racer reads the clock, before the barrier that publishes
		 * it to the other: two clocks could disagree, and the one going
		 * on would spin forever at the next barrier.
		 */
		if (r->timer && since(&race_t0) >= RACE_BUDGET_S)
			__atomic_store_n(&race_stop, 1, __ATOMIC_RELAXED);
		race_wait(2, 2 * (i + 2));
		r->done = i + 1;
		/* Both read both results: they stop together, or go on. */
		if (!race_ok(r->result, r->other->result) ||
		    __atomic_load_n(&race_stop, __ATOMIC_RELAXED))
			return NULL;
	}
	return NULL;
}

static void sc_race_register(struct world *w)
{
	struct racer r[2];
	int cpus[2], rounds = 50 + rnd(w, 500);
	pthread_t th[2];

	keep(w);
	if (!two_cpus(cpus)) {
		w->rep->voided = 1;	/* nobody to race with: counted */
		return;
	}
	fill(w, 0, OB_RSEQ_OP_RESET);
	for (int i = 0; i < 2; i++)
		r[i] = (struct racer){ .w = w, .other = &r[!i], .cpu = cpus[i],
				       .rounds = rounds, .timer = !i, .result = 1 };
	clock_gettime(CLOCK_MONOTONIC, &race_t0);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, racer, &r[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	w->rep->rounds = r[0].done;
	w->rep->rounds_drawn = rounds;
	w->rep->time_cut = race_stop && r[0].done < rounds;
	if (w->rep->time_cut)
		fprintf(stderr, "rseq_op_stress: race-register: %d of %d rounds in %d s, the budget\n",
			r[0].done, rounds, RACE_BUDGET_S);
	if (r[0].failed || r[1].failed)
		wrong(w, 84, "racing thread: sched_setaffinity or rseq failed");
	if (!resident && !r[0].result && !r[1].result)
		wrong(w, 85, "one node linked by two threads at once");
	else if (!race_ok(r[0].result, r[1].result))
		wrong(w, 86, "racing registration: results %ld and %ld, want 0 and %d%s",
		      r[0].result, r[1].result, -EINVAL, resident ? ", or 0 and 0" : "");
}

/* fork() keeps the operations; the child's walks use its own copy. */
static void sc_fork(struct world *w)
{
	int status;
	pid_t pid;

	keep(w);
	reg_n(w, capped(1 + rnd(w, 512)));
	pid = fork();
	if (!pid) {
		/*
		 * A report of its own: a parent that fails its checks leaves
		 * without waiting, and the conductor hands the shared one to
		 * the next victim. The child checks the same nodes, so it
		 * would expose what the parent does.
		 */
		static struct report own;

		memcpy(&own, w->rep, sizeof(own));
		w->rep = &own;
		for (int i = 0; i < 5; i++)
			check_resets(w);
		_exit(0);
	}
	for (int i = 0; i < 5; i++)
		check_resets(w);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		wrong(w, 94, "forked child ended with status %#x", status);
}

/* execve() drops the operations with the registration. */
static void sc_exec(struct world *w)
{
	keep(w);
	reg_n(w, capped(1 + rnd(w, 64)));
	if (handles)
		execl("/proc/self/exe", "rseq_op_stress", "-M", "--exec-check", (char *)NULL);
	else
		execl("/proc/self/exe", "rseq_op_stress", "--exec-check", (char *)NULL);
	wrong(w, 95, "execl: %s", strerror(errno));
}

static int exec_check(void)
{
	static struct ob_rseq_op_reset n __attribute__((aligned(8)));

	if (rseq_on())
		return 95;
	if (handles)	/* none held, and handle 0 unknown */
		return held_count() || ops_call(OB_PR_RSEQ_OPS_DEL, 0, 0, 0) != -ENOENT ?
		       97 : 0;
	if (area->flags & OB_RSEQ_OP_ENABLED)
		return 96;
	if (prctl(OB_PR_RSEQ_OP, OB_PR_RSEQ_OP_UNREGISTER, (unsigned long)&n, 0, 0) == 0 ||
	    errno != ENOENT)
		return 97;
	return 0;
}

/* rseq unregistration drops the operations; links must be cleared. */
static void sc_rseq_rereg(struct world *w)
{
	int n = capped(1 + rnd(w, 32));
	long r;

	keep(w);
	reg_n(w, n);
	if (rseq_off())
		wrong(w, 96, "rseq unregistration failed");
	walk(w);
	r = op(w, OB_PR_RSEQ_OP_REGISTER, &w->nodes[n], 0, 0);
	if (r != -ENXIO)
		wrong(w, 96, "registration without rseq gave %ld, not -ENXIO", r);
	if (rseq_on())
		wrong(w, 96, "rseq re-registration failed");
	if (handles) {	/* no links: the operations went with rseq */
		r = held_count();
		if (r)
			wrong(w, 96, "%ld operations held after rseq re-registration", r);
		for (int i = 0; i < n; i++)
			if (op(w, OB_PR_RSEQ_OP_REGISTER, &w->nodes[i], 0, 0))
				wrong(w, 96, "operation %d refused after re-registration", i);
		check_resets(w);
		return;
	}
	if (!op(w, OB_PR_RSEQ_OP_REGISTER, &w->nodes[0], 0, 0))
		wrong(w, 96, "node with stale links accepted");
	for (int i = 0; i < n; i++) {
		w->nodes[i].op.node.next = 0;
		w->nodes[i].op.node.prev = 0;
		if (op(w, OB_PR_RSEQ_OP_REGISTER, &w->nodes[i], 0, 0))
			wrong(w, 96, "cleared node %d refused", i);
	}
	check_resets(w);
}

/* ------------------------------------------------------------------ */
/* Scenarios that break the contract: the victim must die of SIGSEGV. */

static struct ob_rseq_op_reset *rnode(struct world *w, int i)
{
	return (struct ob_rseq_op_reset *)&w->nodes[i].op;
}

/* Register min..max RESET nodes, all valid, and walk them once. */
static int setup_resets(struct world *w, int min, int max)
{
	int n = capped(min + rnd(w, max - min + 1));

	for (int i = 0; i < n; i++) {
		memset(&w->nodes[i], 0, sizeof(w->nodes[i]));
		rnode(w, i)->len = full_len();
		rnode(w, i)->dst = low_half(&w->words[i], full_len());
		if (op(w, OB_PR_RSEQ_OP_REGISTER, &w->nodes[i], 0, 0))
			wrong(w, 90, "valid RESET node %d refused", i);
		w->reg[i] = true;
	}
	w->nr = n;
	keep(w);
	check_resets(w);
	return n;
}

static void sc_self_cycle(struct world *w)
{
	int n = setup_resets(w, 1, 64), i = rnd(w, n);

	broken(w);
	rnode(w, i)->node.next = (uintptr_t)rnode(w, i);
	expect_death(w);
}

/*
 * Point one node's next at any node but its successor: the walk then
 * loops, or skips nodes and meets the sentinel early. Either way it
 * cannot visit exactly nr_ops nodes and close on the sentinel.
 */
static void sc_cycle(struct world *w)
{
	int n = setup_resets(w, 2, 64), j = rnd(w, n), i = rnd(w, n);

	if ((uintptr_t)rnode(w, i) == rnode(w, j)->node.next)
		i = (i + 1) % n;
	if ((uintptr_t)rnode(w, i) == rnode(w, j)->node.next)
		i = j;
	broken(w);
	rnode(w, j)->node.next = (uintptr_t)rnode(w, i);
	expect_death(w);
}

static void sc_bad_link(struct world *w)
{
	int n = setup_resets(w, 1, 64), i = rnd(w, n);
	uint64_t bad[] = {
		0, 1, KERNEL_ADDR, ~0ULL, KERNEL_ADDR - 4096,
		(uintptr_t)w->area + 8,	/* inside struct rseq, not the sentinel */
	};
	void *gone = mmap(NULL, page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	munmap(gone, page);
	broken(w);
	rnode(w, i)->node.next = rnd(w, 7) ? bad[rnd(w, 6)] : (uintptr_t)gone;
	expect_death(w);
}

/* The list closes on the sentinel before nr_ops nodes were walked. */
static void sc_early_close(struct world *w)
{
	int n = setup_resets(w, 2, 64), j = rnd(w, n);
	uint64_t sentinel = (uintptr_t)&w->area->op_list;

	while (rnode(w, j)->node.next == sentinel)
		j = (j + 1) % n;
	broken(w);
	rnode(w, j)->node.next = sentinel;
	expect_death(w);
}

static void sc_bad_field(struct world *w)
{
	int n = setup_resets(w, 1, 256), i = rnd(w, n);
	struct ob_rseq_op_reset *r = rnode(w, i);
	void *gone = mmap(NULL, page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	munmap(gone, page);
	broken(w);
	switch (rnd(w, 8)) {
	case 0: r->len = (uint32_t[]){ 0, 1, 2, 3, 5, 16, 4096, ~0U }[rnd(w, 8)]; break;
	case 1: r->node.type = 3 + rnd(w, 253); break;
	case 2: r->dst += 1 + rnd(w, 3); break;
	case 3: r->dst = KERNEL_ADDR + 8 * rnd(w, 512); break;
	case 4: r->dst = (uintptr_t)gone; break;
	case 5: r->src = (uintptr_t)gone; break;
	case 6: r->src = (uintptr_t)&w->srcs[0] + 2; break;
	case 7: r->src = KERNEL_ADDR; break;
	}
	expect_death(w);
}

/* The destination page goes read-only or away under a registered node. */
static void sc_dst_page(struct world *w)
{
	setup_resets(w, 1, 512);
	broken(w);
	if (rnd(w, 2))
		mprotect(w->words, MAX_OPS * sizeof(uint64_t), PROT_READ);
	else
		munmap(w->words, MAX_OPS * sizeof(uint64_t));
	expect_death(w);
}

static void sc_node_unmapped(struct world *w)
{
	setup_resets(w, 1, 512);
	broken(w);
	munmap(w->nodes, MAX_OPS * sizeof(struct node));
	expect_death(w);
}

struct rewriter {
	struct world *w;
	int n;
	volatile bool go;
};

/* Another thread rewrites the list validly, then breaks it. */
static void *rewrite(void *arg)
{
	struct rewriter *rw = arg;
	struct world *w = rw->w;
	int rounds = 100 + rnd(w, 5000);

	while (!rw->go)
		;
	for (int r = 0; r < rounds; r++) {
		struct ob_rseq_op_reset *t = rnode(w, rnd(w, rw->n));
		uint32_t len = rnd(w, 2) ? full_len() : 4;
		const uint64_t *src = rnd(w, 2) ? &w->srcs[rnd(w, 8)] : NULL;

		set_reset(&t->len, &t->src, &t->dst, len, src, &w->words[rnd(w, MAX_OPS)]);
	}
	broken(w);
	rnode(w, rnd(w, rw->n))->node.type = 3 + rnd(w, 253);
	return NULL;
}

static void sc_concurrent_break(struct world *w)
{
	struct rewriter rw = { .w = w };
	pthread_t th;

	rw.n = setup_resets(w, 1, 128);
	pthread_create(&th, NULL, rewrite, &rw);
	rw.go = true;
	for (;;) {
		walk(w);
		if (w->rep->stage == STAGE_BROKEN)
			expect_death(w);
	}
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		_exit(80);
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* Transient faults: the contract is kept, the victim must live.      */

/*
 * Ordinary kernel events take a valid destination's page away for a
 * moment, or make it read-only: a fork() by another thread write-protects
 * it for copy on write, MADV_DONTNEED and MADV_PAGEOUT unmap it, clearing
 * the soft-dirty bits write-protects it, a THP split and collapse replace
 * its page table, compaction migrates it to another frame, reclaim in a
 * memory cgroup at its limit swaps it out, NUMA balancing's scanner makes
 * it PROT_NONE so that the next access takes a hinting fault (which may
 * migrate it to the node of the CPU that took it). A store from user mode
 * faults the page back in and carries on; so must the operations,
 * however the event falls between the kernel's fault-in of a destination
 * and its store (series v3 tried once more with page faults disabled, and
 * killed the task on a second fault).
 *
 * The victim registers FAULT_WORDS RESET operations, one word on each of
 * as many pages, and in each round arms every word, sometimes has a signal
 * delivered and checks, then leaves the CPU until it was switched out and
 * checks that every word was reset; a sibling thread causes the event in
 * a loop meanwhile and counts it. The victim sleeps in every round, so the
 * sibling always gets to run: a run in which it caused no event is wrong.
 * A kernel that cannot cause the event at all makes the run unsupported,
 * with the reason, in the summary: counted, never passed in silence.
 */
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#define FAULT_WORDS	64
/* Rounds or this much time, whichever ends first: see RACE_BUDGET_S */
#define FAULT_BUDGET_S	(VICTIM_ALARM / 12)
/* Both halves set: a 4-byte store where 8 were due leaves one set */
#define FAULT_MARK	(MARK << 32 | MARK)
/* The largest PMD (huge page) fault-thp-collapse maps and collapses */
#define FAULT_PMD_MAX	(32UL << 20)

enum fault_kind {
	BY_FORK, BY_DONTNEED, BY_PAGEOUT, BY_SOFT_DIRTY, BY_COLLAPSE, BY_COMPACT, BY_MEMCG,
	BY_NUMA
};

/*
 * fault-memcg: the victim in a memory cgroup of its own, named after its
 * pid under the cgroup2 hierarchy, limited to MEMCG_MAX; its sibling
 * touches twice that in each event, and reclaim in the cgroup swaps out
 * what it can, the words' pages among them.
 */
#define MEMCG_MAX	(2UL << 20)
#define MEMCG_NAME	"rseq_op_stress.%d"

/*
 * fault-numa: NUMA balancing's scanner goes over a process's memory from
 * the tick of one of its threads once that thread has used the CPU for a
 * scan period (100 to 200 ms in the stress guest, which tunes it; 1 s to
 * 60 s by default) and the process's next scan is due, and makes its
 * pages PROT_NONE. The victim keeps the CPU after each arming until it
 * sees that the scanner went over the words' pages (numa_scanned()), at
 * most NUMA_WAIT_MS; then the switch that follows is the first access to
 * them since. Its events are the rounds in which it saw that. A victim
 * that sees none in NUMA_GIVE_UP_S is wrong (exit 87); make test never
 * runs fault-numa, and so never holds its victims to a quarter of the
 * alarm as it does the others (tests/test_stress.py).
 */
#define NUMA_WAIT_MS	1000
#define NUMA_GIVE_UP_S	(VICTIM_ALARM / 2)

struct disturber {
	enum fault_kind how;
	char *region;		/* the words' pages */
	size_t len;		/* of the region */
	size_t stride;		/* pages from one word's page to the next */
	uint64_t *word[FAULT_WORDS];	/* node i resets word[i] */
	/*
	 * BY_DONTNEED and BY_COMPACT: the control, words that the victim
	 * resets itself with a store from user mode, on pages dropped and
	 * kept (or compacted) the same way
	 */
	char *ctl_region;
	uint64_t *ctl[FAULT_WORDS];
	/* BY_SOFT_DIRTY: /proc/self/clear_refs; BY_COMPACT: compact_memory */
	int fd;
	const char *memcg_why;	/* BY_MEMCG: why no cgroup, or NULL */
	char *numa_probe[2];	/* BY_NUMA: the pages before and after the words' */
	int pmfd;		/* /proc/self/pagemap, for fault_wrong() */
	uint64_t pm_arm[FAULT_WORDS];	/* after the last arming, by fault_page() */
	long arm_switches;	/* switches during the last arming */
	long vm0[3];		/* vm_moves() when the victim started */
	unsigned int seed;	/* the sibling's own: w->seed is the victim's */
	volatile int stop;
	volatile long events, tries;
	/* Odd while the sibling causes an event: see fault_wrong() */
	unsigned long seq;
	/*
	 * BY_DONTNEED: odd while the sibling's MADV_DONTNEED of the words'
	 * pages is in progress, and its value when the last arming began and
	 * when it ended (after every store of the mark; fault_wrong() says
	 * both); the same for the control's pages: see fault_check()
	 */
	unsigned long region_seq, arm_seq[2], ctl_seq, ctl_arm_seq;
	volatile int err;	/* errno of the last try that failed */
};

/*
 * The page of word @i, in units of the stride. Even words are on the
 * first half of the pages, odd ones on the second: MADV_DONTNEED drops
 * only the first half, as a word on a dropped page reads zero whether the
 * kernel reset it or not. The second half's words still tell, and each of
 * them comes right after a dropped one in the list (oldest first): a
 * kernel that lost its place after a fault would miss it.
 */
static size_t fault_page(int i)
{
	return (i % 2) * (FAULT_WORDS / 2) + i / 2;
}

/* Where the cgroup2 hierarchy is mounted (the guest's script mounts it) */
static bool cgroup2_root(char *root, size_t size)
{
	char dir[256], type[64];
	FILE *f = fopen("/proc/self/mounts", "r");
	bool found = false;

	while (f && !found && fscanf(f, "%*s %255s %63s %*[^\n]", dir, type) == 2) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(root, size, "%s", dir);
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* Write @val to @file of the cgroup2 directory @dir: 0, or errno. */
static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[512];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		err = errno;
	close(fd);
	return err;
}

/*
 * Move this process into a memory cgroup of its own, limited to
 * MEMCG_MAX: NULL, or why not (the run is then unsupported). Before the
 * region is made, so that its pages are charged there. The parent removes
 * the cgroup when the victim ends (memcg_remove()).
 */
static const char *memcg_enter(void)
{
	static char why[96];
	char root[256], dir[512], max[32];
	struct sysinfo si;
	int err;

	if (!sysinfo(&si) && !si.totalswap)
		return "no swap: a memory cgroup at its limit would OOM-kill the victim";
	if (!cgroup2_root(root, sizeof(root)))
		return "no cgroup2 hierarchy mounted";
	/* Where it is on already, this may fail: memory.max then tells. */
	cg_write(root, "cgroup.subtree_control", "+memory");
	snprintf(dir, sizeof(dir), "%s/" MEMCG_NAME, root, (int)getpid());
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(why, sizeof(why), "mkdir of a cgroup in %.40s: %s (not root?)", root,
			 strerror(errno));
		return why;
	}
	snprintf(max, sizeof(max), "%lu", MEMCG_MAX);
	err = cg_write(dir, "memory.max", max);
	if (err) {
		snprintf(why, sizeof(why), "memory.max: %s (no memory controller: CONFIG_MEMCG?)",
			 strerror(err));
		return why;
	}
	err = cg_write(dir, "cgroup.procs", "0");
	if (err) {
		snprintf(why, sizeof(why), "moving into the cgroup: %s", strerror(err));
		return why;
	}
	return NULL;
}

/*
 * The parent, after victim @pid of fault-memcg ended: its cgroup, empty
 * now, removed. Says so when the cgroup's OOM killer killed in it (a
 * victim killed by signal 9 is then that, not a kernel's lost reset),
 * and when the cgroup cannot be removed.
 */
static void memcg_remove(pid_t pid)
{
	char root[256], dir[512], path[560], key[32];
	long val;
	FILE *f;

	if (!cgroup2_root(root, sizeof(root)))
		return;
	snprintf(dir, sizeof(dir), "%s/" MEMCG_NAME, root, (int)pid);
	snprintf(path, sizeof(path), "%s/memory.events", dir);
	f = fopen(path, "r");
	if (!f)
		return;		/* no cgroup: the victim did not get that far */
	while (fscanf(f, "%31s %ld", key, &val) == 2)
		if (!strcmp(key, "oom_kill") && val)
			fprintf(stderr, "rseq_op_stress: fault-memcg victim %d: its cgroup's OOM killer killed %ld time(s)\n",
				(int)pid, val);
	fclose(f);
	if (rmdir(dir))
		fprintf(stderr, "rseq_op_stress: removing %s: %s\n", dir, strerror(errno));
}

/*
 * Touch twice the cgroup's limit, then give it back: reclaim swaps out.
 * The words' pages are made cold first, so that reclaim takes them before
 * the fresh ones this touches (the victim writes them every round).
 */
static int memcg_pressure(const struct disturber *d)
{
	size_t len = 2 * MEMCG_MAX;
	char *p;

	if (madvise(d->region, d->len, MADV_COLD) && errno != EINVAL)
		return errno;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	for (size_t off = 0; off < len; off += page)
		p[off] = 1;
	munmap(p, len);
	return 0;
}

/* One event: 0, the errno of a try that failed, or -1 for none yet. */
static int disturb_once(struct disturber *d)
{
	size_t hole;
	pid_t pid;

	switch (d->how) {
	case BY_FORK:
		pid = fork();
		if (!pid)
			_exit(0);
		if (pid < 0)
			return errno;
		while (waitpid(pid, NULL, 0) < 0)
			if (errno != EINTR)
				return errno;
		return 0;
	case BY_DONTNEED: {
		int err;

		__atomic_add_fetch(&d->region_seq, 1, __ATOMIC_SEQ_CST);
		err = madvise(d->region, FAULT_WORDS / 2 * page, MADV_DONTNEED) ? errno : 0;
		__atomic_add_fetch(&d->region_seq, 1, __ATOMIC_SEQ_CST);
		if (err)
			return err;
		__atomic_add_fetch(&d->ctl_seq, 1, __ATOMIC_SEQ_CST);
		err = madvise(d->ctl_region, FAULT_WORDS / 2 * page, MADV_DONTNEED) ? errno : 0;
		__atomic_add_fetch(&d->ctl_seq, 1, __ATOMIC_SEQ_CST);
		return err;
	}
	case BY_PAGEOUT:
		return madvise(d->region, d->len, MADV_PAGEOUT) ? errno : 0;
	case BY_SOFT_DIRTY:
		/* The file offset does not matter: each write clears again. */
		return write(d->fd, "4", 1) == 1 ? 0 : errno;
	case BY_COLLAPSE:
		/*
		 * Drop a page no word is on, which splits a huge page into
		 * PTEs, then collapse the region into a huge page again: both
		 * take the words' mappings away for a moment.
		 */
		hole = fault_page(rand_r(&d->seed) % FAULT_WORDS) * d->stride +
		       1 + rand_r(&d->seed) % (d->stride - 1);
		if (madvise(d->region + hole * page, page, MADV_DONTNEED))
			return errno;
		return madvise(d->region, d->len, MADV_COLLAPSE) ? errno : 0;
	case BY_COMPACT:
		/*
		 * Every zone compacted: movable pages migrate to free ones.
		 * At offset 0 each time: a sysctl write past it is ignored.
		 */
		return pwrite(d->fd, "1", 1, 0) == 1 ? 0 : errno;
	case BY_MEMCG:
		return memcg_pressure(d);
	case BY_NUMA:
		/*
		 * The scanner is the kernel's, and the victim counts the
		 * events (numa_wait()): the sibling is a second thread of the
		 * process, as in the others, and does nothing.
		 */
		return -1;
	}
	return EINVAL;
}

static void *disturb(void *arg)
{
	struct disturber *d = arg;

	while (!d->stop) {
		int err;

		__atomic_add_fetch(&d->seq, 1, __ATOMIC_SEQ_CST);
		err = disturb_once(d);
		__atomic_add_fetch(&d->seq, 1, __ATOMIC_SEQ_CST);

		d->tries++;
		if (err > 0)
			d->err = err;
		else if (!err)
			d->events++;
		/*
		 * Events that swap pages out go through the guest's disk: in a
		 * loop without a pause they starved the victim's own accesses
		 * (a fault-pageout victim was 3 rounds in when its 60 s alarm
		 * killed it). A millisecond's sleep leaves the victim time to
		 * get its pages back. Compaction pauses longer (beside it,
		 * 3 of 96 fault-dontneed victims met their alarm). NUMA's
		 * sibling sleeps: the scanner runs from the tick of a thread
		 * that used the CPU for a scan period, the victim, which
		 * sees its own scans. The others only yield.
		 */
		if (d->how == BY_PAGEOUT || d->how == BY_MEMCG)
			poll(NULL, 0, 1);
		else if (d->how == BY_COMPACT)
			/* Compaction of all memory: the whole guest waits on it */
			poll(NULL, 0, 10);
		else if (d->how == BY_NUMA)
			poll(NULL, 0, 10);
		else
			/* Others on this CPU first: the other victims have alarms too. */
			sched_yield();
	}
	return NULL;
}

/* This thread's context switches so far, voluntary or not. */
static long nr_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

/*
 * Leave the CPU until this thread was switched out: on its way back to
 * user space the kernel applies its operations. A 1 ms sleep blocks, and
 * so is a switch; the count makes sure (a sleep cut short by a signal
 * need not have blocked).
 */
static void switch_out(struct world *w)
{
	long n = nr_switches();

	w->rep->walks++;
	for (int i = 0; i < 1000; i++) {
		poll(NULL, 0, 1);
		if (nr_switches() != n)
			return;
	}
	wrong(w, 88, "not switched out in 1000 sleeps of 1 ms");
}

/* The pagemap entry of @addr's page: bit 63 present, 0-54 its frame. */
static uint64_t pagemap_of(struct disturber *d, const void *addr)
{
	uint64_t pm = 0;

	if (d->pmfd < 0 ||
	    pread(d->pmfd, &pm, sizeof(pm), (uintptr_t)addr / page * sizeof(pm)) != sizeof(pm))
		pm = 0;
	return pm;
}

/* The pagemap entries of the words' pages, by page (fault_page()) */
static void fault_pagemap(struct disturber *d, uint64_t pm[FAULT_WORDS])
{
	/* Pages in a row: one read */
	if (d->stride == 1 && d->pmfd >= 0 &&
	    pread(d->pmfd, pm, FAULT_WORDS * sizeof(*pm),
		  (uintptr_t)d->region / page * sizeof(*pm)) == FAULT_WORDS * sizeof(*pm))
		return;
	for (int i = 0; i < FAULT_WORDS; i++)
		pm[fault_page(i)] = pagemap_of(d, d->word[i]);
}

static void fault_arm(struct disturber *d)
{
	long sw = nr_switches();

	d->arm_seq[0] = __atomic_load_n(&d->region_seq, __ATOMIC_SEQ_CST);
	for (int i = 0; i < FAULT_WORDS; i++) {
		*(volatile uint64_t *)d->word[i] = FAULT_MARK;
		if (d->ctl_region)
			*(volatile uint64_t *)d->ctl[i] = FAULT_MARK;
	}
	/* The marks stored (and their faults taken) before the reading */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	d->arm_seq[1] = __atomic_load_n(&d->region_seq, __ATOMIC_SEQ_CST);
	d->ctl_arm_seq = __atomic_load_n(&d->ctl_seq, __ATOMIC_SEQ_CST);
	d->arm_switches = nr_switches() - sw;
	fault_pagemap(d, d->pm_arm);
}

/*
 * The words whose page is present on another frame than after the last
 * arming: migrated with its content (compaction, a THP collapse), or
 * dropped and faulted in again. Counted at every check, so that a run
 * says whether its pages moved at all while the operations were due.
 */
static int fault_moved(struct disturber *d)
{
	const uint64_t frame = (1ULL << 55) - 1;
	uint64_t pm[FAULT_WORDS];
	int n = 0;

	fault_pagemap(d, pm);
	for (int i = 0; i < FAULT_WORDS; i++)
		n += (pm[i] & d->pm_arm[i]) >> 63 && (pm[i] & frame) != (d->pm_arm[i] & frame);
	return n;
}

/*
 * Every word reset (its low-order half for a 4-byte reset, as in
 * check_resets()). Each check covers nodes other than the oldest (node
 * 0): the run is exposed to the control's planted bug.
 */
static bool fault_word_set(struct disturber *d, int i)
{
	uint64_t v = *(volatile uint64_t *)d->word[i];

	return full_len() == 4 ? (uint32_t)v != 0 : v != 0;
}

/*
 * Page moves so far in the whole system, from /proc/vmstat: pages migrated,
 * PMDs split, huge pages collapsed (each -1 where the kernel does not
 * count them).
 */
static void vm_moves(long v[3])
{
	static const char *const key[3] = {
		"pgmigrate_success", "thp_split_pmd", "thp_collapse_alloc" };
	char name[64];
	long val;
	FILE *f = fopen("/proc/vmstat", "r");

	for (int i = 0; i < 3; i++)
		v[i] = -1;
	if (!f)
		return;
	while (fscanf(f, "%63s %ld", name, &val) == 2)
		for (int i = 0; i < 3; i++)
			if (!strcmp(name, key[i]))
				v[i] = val;
	fclose(f);
}

/*
 * The word at @addr read by the kernel on this CPU, through the
 * translation a copy from user memory uses (write() to a pipe: a copy
 * from user mode's address in kernel mode), into @by_copy, and through
 * the page table alone (/proc/self/mem: the frame it maps, read through
 * the kernel's own mapping of it, no TLB entry for @addr involved), into
 * @by_table: each as text, "failed" where the read failed. The CPU
 * numbers around the copy in @cpu.
 */
static void read_back(const void *addr, char by_copy[24], char by_table[24], int cpu[2])
{
	uint64_t v;
	int p[2], fd;

	strcpy(by_copy, "failed");
	strcpy(by_table, "failed");
	cpu[0] = sched_getcpu();
	if (!pipe(p)) {
		if (write(p[1], addr, sizeof(v)) == sizeof(v) && read(p[0], &v, sizeof(v)) == sizeof(v))
			snprintf(by_copy, 24, "%#llx", (unsigned long long)v);
		close(p[0]);
		close(p[1]);
	}
	cpu[1] = sched_getcpu();
	fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (pread64(fd, &v, sizeof(v), (off64_t)(uintptr_t)addr) == sizeof(v))
			snprintf(by_table, 24, "%#llx", (unsigned long long)v);
		close(fd);
	}
}

/*
 * A word was found set: say what tells the cases apart before giving up.
 * The first one read again three ways, before anything else: by a load
 * from user mode, by the kernel through a copy from user memory on this
 * CPU, and through the page table alone (read_back()). The readings
 * count only where this thread did not leave the CPU (a walk would reset
 * the words) and the sibling caused no event (a drop would) while they
 * were taken, which the message says. Then 0 through the page table but
 * set from user mode is a stale translation of user mode; set through
 * the page table but 0 through the copy, a stale one of the kernel's;
 * set all three ways, a store that never reached any frame the page
 * table or a translation names. Then: which words were set (even
 * ones are on the pages MADV_DONTNEED drops), the first one's page frame
 * after the arming and now (a page replaced by a copy in between changes
 * frame and keeps its content), the page moves of the whole system
 * meanwhile, and whether a second switch resets it: if it does, the
 * first exit did not store to that word at all; if it does not, the
 * kernel's stores do not reach the page the task reads.
 */
static void fault_wrong(struct world *w, struct disturber *d, const char *after, int first,
			unsigned long chk_seq)
{
	unsigned long seq = __atomic_load_n(&d->seq, __ATOMIC_SEQ_CST);
	long sw = nr_switches(), vm[3];
	uint64_t v = *(volatile uint64_t *)d->word[first], pm, again;
	uint64_t set = 0;
	int nset = 0, even = 0, cpu[2];
	char by_copy[24], by_table[24];
	bool quiet;

	for (int i = 0; i < FAULT_WORDS; i++) {
		if (fault_word_set(d, i)) {
			set |= 1ULL << i;
			nset++;
			even += !(i % 2);
		}
	}
	read_back(d->word[first], by_copy, by_table, cpu);
	quiet = nr_switches() == sw && !(seq & 1) &&
		__atomic_load_n(&d->seq, __ATOMIC_SEQ_CST) == seq;
	pm = pagemap_of(d, d->word[first]);
	vm_moves(vm);
	sw = nr_switches();
	for (int i = 0; i < 1000 && nr_switches() == sw; i++)
		poll(NULL, 0, 1);
	again = *(volatile uint64_t *)d->word[first];
	wrong(w, 98, "word %d of %d not reset after a %s: %#llx; read again (%s): by the kernel's "
	      "copy on CPU %d-%d %s, through the page table %s; %d set (%d even, mask %#llx); "
	      "its page after arming %#llx (%ld switches in it), now %#llx; "
	      "after %ld more switches %#llx; since the victim started: %ld pages migrated, "
	      "%ld PMDs split, %ld collapsed; the sibling's drops (odd: one in progress) "
	      "%lu at the arming, %lu after it, %lu at the check",
	      first, FAULT_WORDS, after, (unsigned long long)v,
	      quiet ? "no switch, no event meanwhile" : "not conclusive: a switch or an event meanwhile",
	      cpu[0], cpu[1], by_copy, by_table, nset, even,
	      (unsigned long long)set, (unsigned long long)d->pm_arm[fault_page(first)], d->arm_switches,
	      (unsigned long long)pm, nr_switches() - sw, (unsigned long long)again,
	      vm[0] - d->vm0[0], vm[1] - d->vm0[1], vm[2] - d->vm0[2],
	      d->arm_seq[0], d->arm_seq[1], chk_seq);
}

/*
 * The control's reset, right after the kernel's: a store from user mode
 * to each control word, read back with the kernel's words. A control word
 * found set means a store from user mode was lost as well, which no RSEQ
 * operation was involved in.
 */
static void ctl_reset(struct disturber *d)
{
	if (!d->ctl_region)
		return;
	for (int i = 0; i < FAULT_WORDS; i++)
		*(volatile uint64_t *)d->ctl[i] = 0;
}

static void fault_check(struct world *w, struct disturber *d, const char *after)
{
	unsigned long chk_seq, ctl_chk_seq;
	bool raced, raced_arm, ctl_raced;

	/* After the walk and the control's reset, before the loads */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	chk_seq = __atomic_load_n(&d->region_seq, __ATOMIC_SEQ_CST);
	ctl_chk_seq = __atomic_load_n(&d->ctl_seq, __ATOMIC_SEQ_CST);
	/*
	 * fault-dontneed: a word on a dropped page (an even one) is judged
	 * only when no drop of those pages was in progress at the arming's
	 * end nor here. MADV_DONTNEED clears the PTEs, then flushes the TLBs
	 * as it ends: in between, a translation from before the clear can
	 * still name the old page while a fault maps a new one, and a store
	 * through one and a load through the other disagree. A mark can then
	 * outlive a reset: stored into the new page by a fault while the
	 * reset went to the old one through a translation that the flush had
	 * not reached yet (the drop in progress from before that store to
	 * after the walk, so at the arming's end), or stored into the old
	 * page and read from it again while the reset went to the new one
	 * (in progress from before the walk to after the loads, so here).
	 * Where kernel and user mode do not share a translation (QEMU's TCG
	 * keeps a TLB for each, and a fault in user mode leaves the kernel's
	 * as it is; page table isolation on hardware) the kernel's reset can
	 * meet the first, as any store of the kernel's to user memory can
	 * (a copy to user, rseq's own IDs); a store from user mode racing
	 * with the drop can be lost the same way, which is why the control's
	 * words, reset from user mode, follow the same rule (with the
	 * control's own drop). The odd words, on pages kept, are judged every
	 * time; the marks left unjudged are counted (raced_set, and
	 * raced_set_arm for those of the first kind, in the summary).
	 */
	raced_arm = d->how == BY_DONTNEED && (d->arm_seq[1] & 1);
	raced = d->how == BY_DONTNEED && ((d->arm_seq[1] | chk_seq) & 1);
	ctl_raced = d->how == BY_DONTNEED && ((d->ctl_arm_seq | ctl_chk_seq) & 1);

	w->rep->checks++;
	w->rep->raced_checks += raced;
	w->rep->exposed = 1;
	/* Published at once: a victim that fails here still tells */
	w->rep->moved += fault_moved(d);
	w->rep->events = d->events;
	for (int i = 0; d->ctl_region && i < FAULT_WORDS; i++) {
		uint64_t v = *(volatile uint64_t *)d->ctl[i];

		if (!v)
			continue;
		if (ctl_raced && !(i % 2)) {
			w->rep->ctl_raced_set++;
			continue;
		}
		wrong(w, 97, "control word %d of %d, reset from user mode, still %#llx "
		      "after a %s: a store from user mode lost", i, FAULT_WORDS,
		      (unsigned long long)v, after);
	}
	for (int i = 0; i < FAULT_WORDS; i++) {
		if (!fault_word_set(d, i))
			continue;
		if (raced && !(i % 2)) {
			w->rep->raced_set++;
			w->rep->raced_set_arm += raced_arm;
			continue;
		}
		fault_wrong(w, d, after, i, chk_seq);
	}
}

/* Says why this kernel cannot cause the event: the run is unsupported. */
static void unsupported(struct world *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->rep->unsupported, sizeof(w->rep->unsupported), fmt, ap);
	va_end(ap);
}

/* The PMD size that THP maps, or 0 when the kernel does not say. */
static size_t pmd_size(void)
{
	unsigned long sz = 0;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");

	if (f) {
		if (fscanf(f, "%lu", &sz) != 1)
			sz = 0;
		fclose(f);
	}
	return sz;
}

/*
 * The region and its words: FAULT_WORDS pages, or for BY_COLLAPSE a
 * PMD-aligned PMD-sized region (2 MiB with 4 KiB pages) with the words
 * spread over it, so that pages without a word lie between them. Each
 * word at an offset of its page drawn from the seed. False (and the run
 * unsupported) where the THP region cannot be had.
 */
static bool fault_region(struct world *w, struct disturber *d)
{
	d->stride = 1;
	d->len = FAULT_WORDS * page;
	if (d->how == BY_COLLAPSE) {
		size_t pmd = pmd_size();

		/* No hpage_pmd_size: no THP, which the probe then tells. */
		if (!pmd)
			pmd = 2UL << 20;
		if (pmd > FAULT_PMD_MAX || pmd / page < 2 * FAULT_WORDS) {
			unsupported(w, "PMD size %zu KiB: more than %lu KiB, or under %d pages",
				    pmd >> 10, FAULT_PMD_MAX >> 10, 2 * FAULT_WORDS);
			return false;
		}
		d->len = pmd;
		d->stride = pmd / page / FAULT_WORDS;
		d->region = map(2 * pmd);
		d->region = (char *)(((uintptr_t)d->region + pmd - 1) & ~(uintptr_t)(pmd - 1));
		/* THP "madvise" mode: huge pages from the first fault on. */
		madvise(d->region, d->len, MADV_HUGEPAGE);
	} else if (d->how == BY_NUMA) {
		/*
		 * One mapping: a probe page, the words' pages, a probe page.
		 * Small pages only: a hinting fault on a huge page (or a large
		 * folio) makes all of it present again, the words' pages with
		 * the probe's.
		 */
		d->numa_probe[0] = map(d->len + 2 * page);
		madvise(d->numa_probe[0], d->len + 2 * page, MADV_NOHUGEPAGE);
		d->region = d->numa_probe[0] + page;
		d->numa_probe[1] = d->region + d->len;
		/* Pages of their own, not the zero page, which is never protected */
		*(volatile char *)d->numa_probe[0] = 1;
		*(volatile char *)d->numa_probe[1] = 1;
	} else {
		d->region = map(d->len);
	}
	for (int i = 0; i < FAULT_WORDS; i++) {
		char *pg = d->region + fault_page(i) * d->stride * page;

		d->word[i] = (uint64_t *)pg + rnd(w, page / sizeof(uint64_t));
		*d->word[i] = FAULT_MARK;	/* populated before the probes */
	}
	if (d->how == BY_DONTNEED || d->how == BY_COMPACT) {
		d->ctl_region = map(d->len);
		for (int i = 0; i < FAULT_WORDS; i++)
			d->ctl[i] = (uint64_t *)(d->ctl_region + fault_page(i) * page) +
				    (d->word[i] - (uint64_t *)((uintptr_t)d->word[i] & -page));
	}
	return true;
}

/*
 * This thread's minor faults so far, a NUMA hinting fault among them.
 * getrusage() twice: the first writes its result to the stack, whose page
 * the scanner protects too, and the second counts that fault.
 */
static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

/*
 * fault-numa: whether the scanner made the words' pages PROT_NONE since
 * the last look. A read of each probe page, before and after the words'
 * pages in their mapping, which nothing else touches, then takes a NUMA
 * hinting fault; a pass of the scanner goes over a mapping of small pages
 * in address order, so the pages between them were protected as well.
 * Both must fault: a pass that protected only the stack, which the
 * getrusage() calls touch, adds one fault, not one at each probe.
 */
static bool numa_scanned(struct disturber *d)
{
	long before = minor_faults(), mid;

	(void)*(volatile char *)d->numa_probe[0];
	mid = minor_faults();
	(void)*(volatile char *)d->numa_probe[1];
	return mid != before && minor_faults() != mid;
}

/* fault-numa: whether a read of every word takes no fault (all present) */
static bool numa_words_present(struct disturber *d)
{
	long before = minor_faults();

	for (int i = 0; i < FAULT_WORDS; i++)
		(void)*(volatile uint64_t *)d->word[i];
	return minor_faults() == before;
}

/*
 * fault-numa, the victim after arming: keep the CPU until the scanner
 * went over the words' pages, or NUMA_WAIT_MS passed; its own ticks may
 * start the scan. Then the switch that follows applies the operations to
 * pages that are PROT_NONE: an event. A preemption meanwhile applies them
 * too, and is an event as well when the scanner went over the pages
 * since the arming and the words are found present (the walk's stores
 * took the hinting faults: a scan after the walk would leave them
 * PROT_NONE for the read). Either way the words are checked; when no
 * event, armed again, and the wait goes on.
 */
static void numa_wait(struct world *w, struct disturber *d)
{
	struct timespec t0, t1;
	bool event;
	long sw;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	numa_scanned(d);	/* a scan before the arming does not count */
	sw = nr_switches();
	while (since(&t0) * 1000 < NUMA_WAIT_MS) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		while (since(&t1) < 1e-3)
			;
		if (nr_switches() != sw) {
			event = numa_scanned(d) && numa_words_present(d);
			fault_check(w, d, "preemption");
			if (event) {
				d->events++;
				return;
			}
			fault_arm(d);
			numa_scanned(d);
			sw = nr_switches();
		} else if (numa_scanned(d) && nr_switches() == sw) {
			d->events++;
			return;
		}
	}
}

/*
 * fault-numa: NUMA balancing on for ordinary tasks (kernel.numa_balancing
 * bit 0, which the kernel leaves clear with a single node: the stress
 * guest boots the debug kernel with numa=fake=2), and at least two nodes
 * this process may use (task_numa_work() does nothing for a task whose
 * cpuset allows one): its cpuset's, or without cpusets the online ones.
 */
static bool numa_supported(struct world *w)
{
	char line[256], list[200] = "";
	FILE *f = fopen("/proc/sys/kernel/numa_balancing", "r");
	int mode = 0;

	if (!f) {
		unsupported(w, "no /proc/sys/kernel/numa_balancing: no CONFIG_NUMA_BALANCING");
		return false;
	}
	if (fscanf(f, "%d", &mode) != 1)
		mode = 0;
	fclose(f);
	if (!(mode & 1)) {
		unsupported(w, "kernel.numa_balancing is %d: one NUMA node (boot with numa=fake=2), or turned off",
			    mode);
		return false;
	}
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Mems_allowed_list: %199s", list) == 1)
			break;
	if (f)
		fclose(f);
	if (!*list) {
		f = fopen("/sys/devices/system/node/online", "r");
		if (f) {
			if (fscanf(f, "%199s", list) != 1)
				*list = 0;
			fclose(f);
		}
	}
	if (!strpbrk(list, ",-")) {
		unsupported(w, "this process may use one NUMA node only ('%s')", list);
		return false;
	}
	return true;
}

/*
 * Whether this kernel can cause the event at all; if not, the run is
 * unsupported. A fork or a MADV_DONTNEED always can. The others succeed
 * where they do nothing: writing 4 to clear_refs without soft-dirty
 * tracking (CONFIG_MEM_SOFT_DIRTY), MADV_PAGEOUT without swap (an
 * anonymous page has nowhere to go). Soft-dirty tracking is seen at work
 * in the pagemap: a page written after the clearing is soft-dirty (bit
 * 55) only where it is tracked. EINVAL: no MADV_PAGEOUT (before 5.4), no
 * MADV_COLLAPSE (before 6.1, or no CONFIG_TRANSPARENT_HUGEPAGE).
 */
static bool fault_supported(struct world *w, struct disturber *d)
{
	struct sysinfo si;
	uint64_t pm;

	switch (d->how) {
	case BY_FORK:
	case BY_DONTNEED:
		return true;
	case BY_PAGEOUT:
		if (!sysinfo(&si) && !si.totalswap) {
			unsupported(w, "no swap: MADV_PAGEOUT leaves anonymous pages in place");
			return false;
		}
		if (madvise(d->region, d->len, MADV_PAGEOUT) && errno == EINVAL) {
			unsupported(w, "MADV_PAGEOUT: EINVAL (before Linux 5.4)");
			return false;
		}
		return true;
	case BY_SOFT_DIRTY:
		d->fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
		if (d->fd < 0 || write(d->fd, "4", 1) != 1) {
			unsupported(w, "writing 4 to /proc/self/clear_refs: %s", strerror(errno));
			return false;
		}
		*d->word[0] = FAULT_MARK;
		/*
		 * The clearing cleared the bit: a write sets it again where
		 * the kernel tracks it (a page never written, or a mapping
		 * never cleared, may show it without tracking anything).
		 */
		*(volatile uint64_t *)d->word[0] = FAULT_MARK;
		/* Just written, so present: an entry of 0 is a failed read. */
		pm = pagemap_of(d, d->word[0]);
		if (!pm) {
			unsupported(w, "reading /proc/self/pagemap: %s",
				    d->pmfd < 0 ? "cannot open it" : strerror(errno));
			return false;
		}
		if (!(pm >> 55 & 1)) {
			unsupported(w, "no soft-dirty bit after a write: no CONFIG_MEM_SOFT_DIRTY");
			return false;
		}
		return true;
	case BY_COLLAPSE:
		if (madvise(d->region, d->len, MADV_COLLAPSE) && errno == EINVAL) {
			unsupported(w, "MADV_COLLAPSE: EINVAL (no CONFIG_TRANSPARENT_HUGEPAGE, THP off, or before 6.1)");
			return false;
		}
		return true;
	case BY_MEMCG:
		if (d->memcg_why) {
			unsupported(w, "%s", d->memcg_why);
			return false;
		}
		return true;
	case BY_COMPACT:
		d->fd = open("/proc/sys/vm/compact_memory", O_WRONLY | O_CLOEXEC);
		if (d->fd < 0) {
			unsupported(w, "opening /proc/sys/vm/compact_memory: %s (no CONFIG_COMPACTION, or not root)",
				    strerror(errno));
			return false;
		}
		return true;
	case BY_NUMA:
		return numa_supported(w);
	}
	return false;
}

/*
 * Whether the run may end: the sibling tried once, and in fault-numa a
 * scan came between an arming and a switch (the scanner is slow to come
 * on a loaded guest: such a victim goes on until one did, up to
 * NUMA_GIVE_UP_S).
 */
static bool fault_tried(const struct disturber *d)
{
	return d->tries && (d->how != BY_NUMA || d->events);
}

/* What a fault-* victim was doing, for a victim killed (by its alarm) */
enum { STEP_SETUP, STEP_ARM, STEP_SIGNAL, STEP_NUMA, STEP_SWITCH, STEP_CHECK, STEP_STOP };
static const char *const fault_steps[] = {
	"setting up", "arming", "at a signal (its walk, check and arming)",
	"waiting for a NUMA scan", "leaving the CPU", "checking", "stopping its sibling",
};

static void sc_fault(struct world *w, enum fault_kind how)
{
	struct disturber d = { .how = how, .fd = -1,
			       .pmfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC) };
	/* fault-numa's rounds wait for the scanner, up to a second each */
	int rounds = how == BY_NUMA ? 5 + rnd(w, 10) : 50 + rnd(w, 150), r;
	struct timespec t0;
	pthread_t th;
	bool cut = false;

	keep(w);
	w->rep->fault_run = 1;
	if (ops_limit < FAULT_WORDS) {	/* -M: the kernel's limit */
		snprintf(w->rep->unsupported, sizeof(w->rep->unsupported),
			 "a limit of %d operations, below its %d words", ops_limit, FAULT_WORDS);
		return;
	}
	/*
	 * The budget counts from here: the first faults of a huge page may
	 * compact memory, a probe's MADV_COLLAPSE drains every CPU's LRU
	 * caches, which a loaded machine is slow to run.
	 */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (how == BY_MEMCG)
		d.memcg_why = memcg_enter();
	if (!fault_region(w, &d) || !fault_supported(w, &d))
		return;		/* exit 0, counted as unsupported by the reason */
	for (int i = 0; i < FAULT_WORDS; i++) {
		struct ob_rseq_op_reset *n = rnode(w, i);

		/* Not in w->reg[]: check_resets() checks w->words, not these. */
		memset(&w->nodes[i], 0, sizeof(w->nodes[i]));
		n->len = full_len();
		n->dst = low_half(d.word[i], n->len);
		if (op(w, OB_PR_RSEQ_OP_REGISTER, n, 0, 0))
			wrong(w, 90, "valid RESET node %d of %d refused", i, FAULT_WORDS);
	}
	d.seed = rand_r(&w->seed);
	vm_moves(d.vm0);
	if (pthread_create(&th, NULL, disturb, &d))
		wrong(w, 80, "pthread_create: the disturbing thread");
	/*
	 * The drawn rounds, and on until the sibling tried once, in the
	 * budget; but never cut before a round ran with the sibling's first
	 * try done: a set-up that used up the budget on a loaded guest (a
	 * fault-memcg victim beside three others swapping) is no sibling
	 * that caused nothing. A sibling that never ends its first try meets
	 * the victim's alarm.
	 */
	for (r = 0; r < rounds || !fault_tried(&d); r++) {
		if (how == BY_NUMA && !d.events && since(&t0) >= NUMA_GIVE_UP_S)
			wrong(w, 87, "no NUMA scan of the words' pages seen in %d s and %d rounds",
			      NUMA_GIVE_UP_S, r);
		if (r && fault_tried(&d) && since(&t0) >= FAULT_BUDGET_S) {
			cut = true;
			break;
		}
		w->rep->fault_round = r;
		w->rep->fault_step = STEP_ARM;
		fault_arm(&d);
		if (rnd(w, 2)) {
			w->rep->fault_step = STEP_SIGNAL;
			walk(w);	/* the delivery of a signal applies them too */
			ctl_reset(&d);
			fault_check(w, &d, "signal");
			fault_arm(&d);
		}
		if (how == BY_NUMA) {
			w->rep->fault_step = STEP_NUMA;
			numa_wait(w, &d);
		}
		w->rep->fault_step = STEP_SWITCH;
		switch_out(w);
		w->rep->fault_step = STEP_CHECK;
		ctl_reset(&d);
		fault_check(w, &d, "switch");
	}
	w->rep->fault_step = STEP_STOP;
	d.stop = 1;
	pthread_join(th, NULL);
	w->rep->rounds = r;
	w->rep->rounds_drawn = rounds;
	w->rep->time_cut = cut && r < rounds;
	w->rep->events = d.events;
	if (!d.events)
		wrong(w, 87, "no event in %ld tries and %d rounds%s%s", d.tries, r,
		      d.err ? ": " : "", d.err ? strerror(d.err) : "");
}

static void sc_fault_fork(struct world *w)
{
	sc_fault(w, BY_FORK);
}

static void sc_fault_dontneed(struct world *w)
{
	sc_fault(w, BY_DONTNEED);
}

static void sc_fault_pageout(struct world *w)
{
	sc_fault(w, BY_PAGEOUT);
}

static void sc_fault_soft_dirty(struct world *w)
{
	sc_fault(w, BY_SOFT_DIRTY);
}

static void sc_fault_thp_collapse(struct world *w)
{
	sc_fault(w, BY_COLLAPSE);
}

static void sc_fault_compact(struct world *w)
{
	sc_fault(w, BY_COMPACT);
}

static void sc_fault_memcg(struct world *w)
{
	sc_fault(w, BY_MEMCG);
}

static void sc_fault_numa(struct world *w)
{
	sc_fault(w, BY_NUMA);
}

/*
 * @resident: the outcome with -R, where writes to registered nodes are
 * ignored; @handle: with -M, where there are no nodes
 */
struct scenario {
	const char *name;
	enum expect expect;
	void (*fn)(struct world *w);
	enum expect resident;
	enum expect handle;
};

static const struct scenario scenarios[] = {
	{ "churn", LIVE, sc_churn, LIVE, LIVE },
	{ "limit", LIVE, sc_limit, LIVE, LIVE },
	{ "bad-register", LIVE, sc_bad_register, LIVE, LIVE },
	{ "mutate-valid", LIVE, sc_mutate_valid, LIVE, NONE },
	{ "ro-node", LIVE, sc_ro_node, LIVE, NONE },
	{ "threads", LIVE, sc_threads, LIVE, LIVE },
	{ "migrate-signal", LIVE, sc_migrate_signal, LIVE, NONE },
	{ "race-register", LIVE, sc_race_register, LIVE, LIVE },
	{ "fork", LIVE, sc_fork, LIVE, LIVE },
	{ "exec", LIVE, sc_exec, LIVE, LIVE },
	{ "rseq-rereg", LIVE, sc_rseq_rereg, LIVE, LIVE },
	{ "self-cycle", SEGV, sc_self_cycle, LIVE, NONE },
	{ "cycle", SEGV, sc_cycle, LIVE, NONE },
	{ "bad-link", SEGV, sc_bad_link, LIVE, NONE },
	{ "early-close", SEGV, sc_early_close, LIVE, NONE },
	{ "bad-field", SEGV, sc_bad_field, LIVE, NONE },
	{ "dst-page", SEGV, sc_dst_page, SEGV, SEGV },
	{ "node-unmapped", SEGV, sc_node_unmapped, LIVE, NONE },
	{ "concurrent-break", SEGV, sc_concurrent_break, LIVE, NONE },
	{ "fault-fork", LIVE, sc_fault_fork, LIVE, LIVE },
	{ "fault-dontneed", LIVE, sc_fault_dontneed, LIVE, LIVE },
	{ "fault-pageout", LIVE, sc_fault_pageout, LIVE, LIVE },
	{ "fault-soft-dirty", LIVE, sc_fault_soft_dirty, LIVE, LIVE },
	{ "fault-thp-collapse", LIVE, sc_fault_thp_collapse, LIVE, LIVE },
	{ "fault-compact", LIVE, sc_fault_compact, LIVE, LIVE },
	{ "fault-memcg", LIVE, sc_fault_memcg, LIVE, LIVE },
	{ "fault-numa", LIVE, sc_fault_numa, LIVE, LIVE },
};

#define NR_SCENARIOS	(int)(sizeof(scenarios) / sizeof(scenarios[0]))

static enum expect expect_of(const struct scenario *sc)
{
	return handles ? sc->handle : resident ? sc->resident : sc->expect;
}

static void __attribute__((noreturn)) victim(const struct scenario *sc,
					     struct report *rep, unsigned int seed)
{
	struct world w = { .rep = rep, .area = area, .seed = seed };
	struct sigaction sa = { .sa_handler = on_usr1 };

	alarm(VICTIM_ALARM);
	must_die = expect_of(sc) == SEGV;
	sigaction(SIGUSR1, &sa, NULL);
	if (rseq_on())
		wrong(&w, 81, "rseq registration failed");
	w.nodes = map(MAX_OPS * sizeof(struct node));
	w.words = map(MAX_OPS * sizeof(uint64_t));
	w.slots = map(page);
	w.srcs = map(page);
	w.saved = map(MAX_OPS * sizeof(struct node));
	for (int i = 0; i < 8; i++)
		w.srcs[i] = 0x1111111111111111ULL * (i + 1);
	sc->fn(&w);
	_exit(0);
}

struct tally {
	long runs, wrong, exposed;
	long events, moved, unsupported;	/* transient faults: see sc_fault() */
	/* see fault_check() */
	long checks, raced_checks, raced_set, raced_set_arm, ctl_raced_set;
	char unsupported_why[96];	/* the first run's reason */
	double max_s;		/* the slowest victim, against VICTIM_ALARM */
	/* The wrong outcomes: by exit status, and by signal (+256). */
	long how[256 + 128];
};

/* A wrong outcome's kind, as the summary names it. */
static void how_name(char *buf, size_t len, int i)
{
	if (i < 256)
		snprintf(buf, len, "exit %d", i);
	else
		snprintf(buf, len, "signal %d", i - 256);
}

/* @s as a JSON string: the reasons quote strerror(), whose words are not ours. */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/*
 * -M: how many operations a thread may hold, from its first -ENOSPC (at
 * most MAX_OPS, this program's arrays), the operations then deleted; or
 * the first refusal's -errno.
 */
static int probe_limit(void)
{
	static uint64_t word;
	struct ob_rseq_op d = {
		.addr = low_half(&word, full_len()), .len = full_len(),
		.type = OB_RSEQ_OP_TYPE_ZERO,
	};
	long h;
	int n;

	for (n = 0; n < MAX_OPS; n++) {
		h = ops_call(OB_PR_RSEQ_OPS_ADD, (unsigned long)&d, sizeof(d), 0);
		if (h == -ENOSPC)
			break;
		if (h < 0)
			return h;
	}
	for (h = 0; h < n; h++)
		ops_call(OB_PR_RSEQ_OPS_DEL, h, 0, 0);
	return n;
}

/*
 * The next victim's scenario among the @n of @set (indices into
 * scenarios[]): in rounds, each round a permutation drawn from the seed,
 * so that every scenario runs once before any runs twice (a draw per
 * victim left some out of short runs).
 */
static int next_scenario(unsigned int *seed, const int *set, int n)
{
	static int order[NR_SCENARIOS], left;

	if (!left) {
		for (int i = 0; i < n; i++)
			order[i] = set[i];
		for (int i = n - 1; i > 0; i--) {
			int j = rand_r(seed) % (i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		left = n;
	}
	return order[--left];
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "list", no_argument, NULL, 'L' },
		{ "exec-check", no_argument, NULL, 'X' },
		{ "resident", no_argument, NULL, 'R' },
		{ "handles", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	long secs = 60, victims = 0, prctls = 0, walks = 0, violations = 0;
	long segv_expected = 0, segv_seen = 0, wrongs = 0;
	long fork_retries = 0, voids = 0, race_rounds = 0, race_drawn = 0, race_cut = 0;
	long fault_rounds = 0, fault_drawn = 0, fault_cut = 0;
	long moves = 0, moves_drawn = 0, move_cut = 0;
	int par = 2, c, verbose_shown = 0;
	unsigned int seed = time(NULL), seed0, vstream;
	struct tally tally[NR_SCENARIOS] = { 0 };
	struct report *reps;
	struct { pid_t pid; int sc; struct timespec t; } slot[16] = { 0 };
	struct { bool drawn; int sc; unsigned int seed; } next = { 0 };
	int set[NR_SCENARIOS], nset = 0, k;
	char *name;
	struct timespec t0, now;

	/* -R and -M change what --list prints and -S takes: read them first. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-R") || !strcmp(argv[i], "--resident"))
			resident = true;
		if (!strcmp(argv[i], "-M") || !strcmp(argv[i], "--handles"))
			handles = resident = true;
	}
	while ((c = getopt_long(argc, argv, "d:j:s:S:RMv", lopts, NULL)) != -1) {
		switch (c) {
		case 'R':
		case 'M':
			/* Read before getopt (see above): on their own only */
			if (!(c == 'R' ? resident : handles)) {
				fprintf(stderr, "rseq_op_stress: give -%c on its own, not among other options\n",
					c);
				return 2;
			}
			break;
		case 'S':
			/*
			 * One scenario, or several separated by commas; on a
			 * copy, as the re-exec below passes argv on.
			 */
			name = strdup(optarg);
			if (!name) {
				perror("rseq_op_stress: strdup");
				return 2;
			}
			for (name = strtok(name, ","); name; name = strtok(NULL, ",")) {
				for (k = NR_SCENARIOS - 1; k >= 0; k--)
					if (!strcmp(scenarios[k].name, name))
						break;
				if (k < 0) {
					fprintf(stderr, "rseq_op_stress: no scenario '%s'; --list names them\n",
						name);
					return 2;
				}
				if (expect_of(&scenarios[k]) == NONE) {
					fprintf(stderr, "rseq_op_stress: scenario '%s' needs what the handle ABI (-M) does not have (nodes in user memory, or a CPU-strided operation); -M --list names its scenarios\n",
						name);
					return 2;
				}
				for (int i = 0; i < nset; i++)
					if (set[i] == k)
						k = -1;
				if (k >= 0)
					set[nset++] = k;
			}
			break;
		case 'd': secs = atol(optarg); break;
		case 'j': par = atoi(optarg); break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		case 'v': verbose = true; break;
		case 'L':
			for (int i = 0; i < NR_SCENARIOS; i++)
				if (expect_of(&scenarios[i]) != NONE)
					printf("%-18s %s\n", scenarios[i].name,
					       expect_of(&scenarios[i]) == SEGV ? "breaks the contract: SIGSEGV" :
					       scenarios[i].expect == SEGV ? "writes to registered nodes: ignored, lives" :
					       "keeps the contract: lives");
			return 0;
		case 'X':
			return exec_check();
		default:
			fprintf(stderr, "usage: rseq_op_stress [-d SECONDS] [-j 1..16] [-s SEED] [-S SCENARIO[,SCENARIO...]] [-R|-M] [-v] | [-R|-M] --list\n");
			return 2;
		}
	}
	if (!nset)
		for (k = 0; k < NR_SCENARIOS; k++)
			if (expect_of(&scenarios[k]) != NONE)
				set[nset++] = k;
	if (par < 1 || par > 16 || secs < 1) {
		fprintf(stderr, "rseq_op_stress: -j takes 1..16, -d a positive number of seconds\n");
		return 2;
	}
	/* Our own rseq areas: glibc must not register its own. */
	reexec_without_glibc_rseq(argv, "rseq_op_stress", false);
	page = sysconf(_SC_PAGESIZE);
	word_len = kernel_is_64bit() ? 8 : 4;
	if (handles) {
		if (rseq_on() || held_count() < 0) {
			printf("{\"skip\":\"no PR_RSEQ_OPS (the handle ABI) in this kernel\"}\n");
			return 4;
		}
		ops_limit = probe_limit();
		if (ops_limit < 1) {
			fprintf(stderr, "rseq_op_stress: the first PR_RSEQ_OPS_ADD of a valid operation: %s\n",
				strerror(ops_limit ? -ops_limit : ENOSPC));
			return 1;
		}
		fprintf(stderr, "rseq_op_stress: the handle ABI: -ENOSPC after %d operations%s\n",
			ops_limit, ops_limit == MAX_OPS ? " (no limit below this program's)" : "");
	} else if (rseq_on() || !(area->flags & OB_RSEQ_OP_AVAILABLE)) {
		printf("{\"skip\":\"no RSEQ operations in this kernel\"}\n");
		return 4;
	}
	rseq_off();
	reps = mmap(NULL, 16 * sizeof(*reps), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (reps == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	seed0 = seed;
	/*
	 * The victims' seeds come from a stream of their own, the scenarios'
	 * from @seed: both are drawn in the order victims start, so that
	 * victim k runs scenario k with seed k whichever victim ends first.
	 */
	vstream = ~seed0;
	fprintf(stderr, "rseq_op_stress: %ld s, %d victims at a time, seed %u\n",
		secs, par, seed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		bool time_up;
		int status, s;
		pid_t pid;

		clock_gettime(CLOCK_MONOTONIC, &now);
		time_up = now.tv_sec - t0.tv_sec >= secs;
		for (s = 0; s < par && !time_up; s++) {
			if (slot[s].pid)
				continue;
			/* Drawn only for a victim about to start */
			if (!next.drawn) {
				next.sc = next_scenario(&seed, set, nset);
				next.seed = rand_r(&vstream);
				next.drawn = true;
			}
			clock_gettime(CLOCK_MONOTONIC, &slot[s].t);
			memset(&reps[s], 0, sizeof(reps[s]));
			pid = fork();
			if (pid < 0) {
				/* The same victim again once a slot frees: counted */
				fork_retries++;
				fprintf(stderr, "rseq_op_stress: fork of victim %ld: %s; tried again when a victim ends\n",
					victims + 1, strerror(errno));
				break;
			}
			if (!pid)
				victim(&scenarios[next.sc], &reps[s], next.seed);
			slot[s].pid = pid;
			slot[s].sc = next.sc;
			next.drawn = false;
			victims++;
		}
		pid = wait(&status);
		if (pid < 0 && errno == ECHILD && next.drawn && !time_up) {
			/* A fork failed with no victim alive: wait, then retry */
			usleep(10000);
			continue;
		}
		if (pid < 0)
			break;
		for (s = 0; s < par && slot[s].pid != pid; s++)
			;
		if (s == par)
			continue;
		{
			const struct scenario *sc = &scenarios[slot[s].sc];
			struct report *r = &reps[s];
			bool segv = WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
			char where[96];
			double took = since(&slot[s].t);

			if (sc->fn == sc_fault_memcg)
				memcg_remove(pid);
			bool ok;

			tally[slot[s].sc].runs++;
			tally[slot[s].sc].exposed += r->exposed;
			if (took > tally[slot[s].sc].max_s)
				tally[slot[s].sc].max_s = took;
			prctls += r->prctl_calls;
			walks += r->walks;
			voids += r->voided;
			if (r->fault_run) {
				fault_rounds += r->rounds;
				fault_drawn += r->rounds_drawn;
				fault_cut += r->time_cut;
			} else if (r->move_run) {
				moves += r->rounds;
				moves_drawn += r->rounds_drawn;
				move_cut += r->time_cut;
			} else {
				race_rounds += r->rounds;
				race_drawn += r->rounds_drawn;
				race_cut += r->time_cut;
			}
			tally[slot[s].sc].events += r->events;
			tally[slot[s].sc].moved += r->moved;
			tally[slot[s].sc].checks += r->checks;
			tally[slot[s].sc].raced_checks += r->raced_checks;
			tally[slot[s].sc].raced_set += r->raced_set;
			tally[slot[s].sc].raced_set_arm += r->raced_set_arm;
			tally[slot[s].sc].ctl_raced_set += r->ctl_raced_set;
			if (r->unsupported[0] && !tally[slot[s].sc].unsupported++) {
				/* Said once: an unsupported run ends at once, and often */
				memcpy(tally[slot[s].sc].unsupported_why, r->unsupported,
				       sizeof(r->unsupported));
				tally[slot[s].sc].unsupported_why[sizeof(r->unsupported) - 1] = 0;
				fprintf(stderr, "rseq_op_stress: %s unsupported here: %s\n",
					sc->name, tally[slot[s].sc].unsupported_why);
			}
			if (expect_of(sc) == SEGV) {
				segv_expected++;
				violations++;
				ok = segv && r->stage == STAGE_BROKEN;
			} else {
				ok = WIFEXITED(status) && !WEXITSTATUS(status);
			}
			segv_seen += segv;
			if (!ok) {
				wrongs++;
				tally[slot[s].sc].wrong++;
				tally[slot[s].sc].how[WIFSIGNALED(status) ?
					256 + WTERMSIG(status) :
					WEXITSTATUS(status)]++;
				where[0] = 0;
				if (r->fault_run)
					snprintf(where, sizeof(where), " (fault round %ld, %s)",
						 r->fault_round,
						 (unsigned int)r->fault_step < sizeof(fault_steps) /
						 sizeof(fault_steps[0]) ? fault_steps[r->fault_step] : "?");
				if (verbose_shown++ < 20)
					fprintf(stderr, "rseq_op_stress: WRONG: %s: %s%d at stage %d%s%s%s\n",
						sc->name,
						WIFSIGNALED(status) ? "killed by signal " : "exit status ",
						WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
						r->stage, r->why[0] ? ": " : "", r->why, where);
			} else if (verbose) {
				fprintf(stderr, "rseq_op_stress: ok: %s\n", sc->name);
			}
			slot[s].pid = 0;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	printf("{\"semantics\":\"%s\",\"ops_limit\":%d,\"seconds\":%ld,\"seed\":%u,\"victims\":%ld,\"prctl_calls\":%ld,"
	       "\"walks_triggered\":%ld,\"violations_injected\":%ld,"
	       "\"segv_expected\":%ld,\"segv_seen\":%ld,\"wrong\":%ld,"
	       "\"victim_alarm_s\":%d,\"fork_retries\":%ld,\"void_runs\":%ld,"
	       "\"race_register\":{\"budget_s\":%d,\"rounds\":%ld,\"rounds_drawn\":%ld,"
	       "\"time_cut\":%ld},\"migrate_signal\":{\"budget_s\":%d,\"moves\":%ld,"
	       "\"moves_drawn\":%ld,\"time_cut\":%ld},"
	       "\"transient_faults\":{\"budget_s\":%d,\"rounds\":%ld,"
	       "\"rounds_drawn\":%ld,\"time_cut\":%ld},\"unsupported\":{",
	       handles ? "handle" : resident ? "resident" : "list", ops_limit,
	       (long)(now.tv_sec - t0.tv_sec), seed0, victims, prctls, walks,
	       violations, segv_expected, segv_seen, wrongs, VICTIM_ALARM, fork_retries, voids,
	       RACE_BUDGET_S, race_rounds, race_drawn, race_cut,
	       MOVE_BUDGET_S, moves, moves_drawn, move_cut,
	       FAULT_BUDGET_S, fault_rounds, fault_drawn, fault_cut);
	for (int i = 0, n = 0; i < NR_SCENARIOS; i++) {
		if (!tally[i].unsupported)
			continue;
		printf("%s\"%s\":{\"runs\":%ld,\"why\":", n++ ? "," : "", scenarios[i].name,
		       tally[i].unsupported);
		json_str(tally[i].unsupported_why);
		printf("}");
	}
	printf("},\"scenarios\":{");
	for (int i = 0; i < NR_SCENARIOS; i++) {
		bool first = true;

		printf("%s\"%s\":{\"runs\":%ld,\"wrong\":%ld,\"max_s\":%.1f,\"exposed\":%ld,"
		       "\"events\":%ld,\"moved\":%ld,\"checks\":%ld,\"raced_checks\":%ld,"
		       "\"raced_set\":%ld,\"raced_set_arm\":%ld,\"ctl_raced_set\":%ld,"
		       "\"unsupported\":%ld,\"wrong_how\":{",
		       i ? "," : "", scenarios[i].name, tally[i].runs, tally[i].wrong,
		       tally[i].max_s, tally[i].exposed, tally[i].events, tally[i].moved,
		       tally[i].checks, tally[i].raced_checks, tally[i].raced_set,
		       tally[i].raced_set_arm, tally[i].ctl_raced_set, tally[i].unsupported);
		for (int k = 0; k < 256 + 128; k++) {
			char name[16];

			if (!tally[i].how[k])
				continue;
			how_name(name, sizeof(name), k);
			printf("%s\"%s\":%ld", first ? "" : ",", name, tally[i].how[k]);
			first = false;
		}
		printf("}}");
	}
	printf("}}\n");
	return wrongs ? 1 : 0;
}
