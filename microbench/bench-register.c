// SPDX-License-Identifier: GPL-2.0
/*
 * bench-register.c - the prctl() round trip that registers one operation
 * and unregisters it again.
 *
 * N is the number of operations the thread holds through the cell; each
 * iteration registers one more node (the cell's type, in front of the list)
 * and unregisters it. This is the price of the work a design does at
 * registration: the walker series links the node and, at unregistration,
 * finds it on the user list; the kernel-resident variant also checks and
 * copies the node, and allocates (N = 0: every iteration allocates and
 * frees its array). The BPF design (--via bpf) stores the operation at the
 * end of the thread's slot of its map and removes it again: no system call
 * at all. Neither call schedules, so no walk runs: the watched
 * words of the N operations must stay armed, as in the syscall benchmark.
 * At N = RSEQ_OP_LIST_LIMIT the kernel must refuse one more node with
 * ENOSPC: a gate checks it, and the cell is recorded as unsupported.
 *
 * The gate: the timed node is pristine after the loop; a sleep that
 * switched the thread out (sched_out()) resets the N operations and leaves
 * the unregistered node's word alone; registered once more, the node's word
 * is reset by the next such sleep. Each detail says how many polls it took.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "opbench.h"

/* The node registered in every iteration, and its destination. */
static struct ob_rseq_op_reset_with_stride timed __attribute__((aligned(64)));
static uint64_t timed_words[STRIDE_SLOTS] __attribute__((aligned(64)));

/* Register (@cmd OB_PR_RSEQ_OP_REGISTER) or unregister the timed node, the
 * way the cell's design registers (prctl, or reg.c's ops_backend). */
static int timed_reg(int cmd, enum op_type type)
{
	return cmd == OB_PR_RSEQ_OP_REGISTER ? op_node_register(&timed, type) :
		op_node_unregister(&timed, type);
}

static void timed_arm(void)
{
	for (int i = 0; i < STRIDE_SLOTS; i++)
		timed_words[i] = MARK;
}

static bool timed_written(void)
{
	for (int i = 0; i < STRIDE_SLOTS; i++)
		if (__atomic_load_n(&timed_words[i], __ATOMIC_RELAXED) != MARK)
			return true;
	return false;
}

/* A gate's detail after sched_out() took @polls (0: none switched). */
static const char *slept(char *buf, size_t len, int polls, const char *what)
{
	if (polls)
		snprintf(buf, len, "%s, switched out after %d poll() of 1 ms",
			 what, polls);
	else
		snprintf(buf, len, "%s, no switch in %d poll() of 1 ms: no walk was due",
			 what, SCHED_OUT_MAX);
	return buf;
}

int bench_register(struct bench_ctx *ctx)
{
	struct thread_ops to;
	struct watch w = { };
	struct iters it;
	bool valid = true;
	int n = ctx->nr_ops, ret, polls;
	char detail[128];
	long seen;

	ret = cell_begin(ctx, ctx->cpu, &to, NULL);
	if (ret != CELL_READY)
		return ret;
	/* A node of the cell's type, as reg.c makes them, writing timed_words */
	memset(&timed, 0, sizeof(timed));
	op_node_init(&timed, ctx->type, timed_words, &to.src);
	ret = ctx->no_ops ? 0 : timed_reg(OB_PR_RSEQ_OP_REGISTER, ctx->type);
	if (n >= OB_RSEQ_OP_LIST_LIMIT) {
		/* The kernel must refuse one more: say so, or fail the gate. */
		emit_gate(ctx, "full-list-refuses", 0, ret, ret == -ENOSPC,
			  "one more node with the list full: ENOSPC expected");
		if (!ret)
			timed_reg(OB_PR_RSEQ_OP_UNREGISTER, ctx->type);
		else if (ret == -ENOSPC)
			emit_unsupported(ctx, ret, "the list is full: no node can be added to it");
		ops_unregister(&to);
		return ret != -ENOSPC;
	}
	if (ret) {
		emit_unsupported(ctx, ret, ops_refusal(ret, to.area));
		ops_unregister(&to);
		return 0;
	}
	if (!ctx->no_ops) {
		ret = timed_reg(OB_PR_RSEQ_OP_UNREGISTER, ctx->type);
		if (ret) {
			/* Registered and stuck on the list: no further cell can trust it. */
			fprintf(stderr, "opbench: register N=%d: unregistering the timed node failed: %s\n",
				n, strerror(-ret));
			emit_gate(ctx, "timed-node-unregisters", 0, ret, false,
				  "unregistration of the node just registered");
			return 2;
		}
	}
	if (iters_alloc(&it, ctx->loops)) {
		ops_unregister(&to);
		return 1;
	}
	watch_ops(&w, &to, ops_slot(&to, ctx->cpu));
	it.full = watch_full(&w);

	for (int s = -ctx->warmup; s < ctx->samples && valid; s++) {
		sample_start(ctx);
		for (long i = 0; i < ctx->loops; i++) {
			uint64_t t0;

			watch_arm(&w);
			t0 = tsc_now();
			if (!ctx->no_ops) {
				ret = timed_reg(OB_PR_RSEQ_OP_REGISTER, ctx->type);
				ret = ret ?: timed_reg(OB_PR_RSEQ_OP_UNREGISTER, ctx->type);
			}
			it.dt[i & it.mask] = tsc_now() - t0;
			it.bits[i & it.mask] = watch_read(&w);
			if (ret) {
				fprintf(stderr, "opbench: register N=%d: prctl failed in iteration %ld: %s\n",
					n, i, strerror(-ret));
				valid = false;
				break;
			}
		}
		if (s >= 0 && valid)
			valid &= emit_sample(ctx, s, &it, "register+unregister", 0);
	}
	iters_free(&it);

	/* Unregistered, the node is pristine again and is not applied. */
	emit_gate(ctx, "timed-node-pristine", 0, (long)(timed.node.next | timed.node.prev) != 0,
		  !timed.node.next && !timed.node.prev, "links after the last unregistration");
	valid &= !timed.node.next && !timed.node.prev;
	ops_arm(&to);
	timed_arm();
	polls = sched_out(SCHED_OUT_MAX);
	seen = ops_count_exact(&to, ops_slot(&to, ctx->cpu));
	emit_gate(ctx, "held-operations-walk", n, seen, polls && seen == n,
		  slept(detail, sizeof(detail), polls, "timed node unregistered"));
	valid &= polls && seen == n;
	/* Without a switch no walk ran: not writing the node proves nothing. */
	emit_gate(ctx, "unregistered-node-not-applied", 0, timed_written(),
		  polls && !timed_written(),
		  slept(detail, sizeof(detail), polls,
			"the timed node's words after that sleep"));
	valid &= polls && !timed_written();
	/* Registered once more, it is applied. */
	timed_arm();
	ret = ctx->no_ops ? -EINVAL : timed_reg(OB_PR_RSEQ_OP_REGISTER, ctx->type);
	polls = sched_out(SCHED_OUT_MAX);
	emit_gate(ctx, "registered-node-applied", 1, timed_written(),
		  polls && !ret && timed_written(),
		  slept(detail, sizeof(detail), polls, "the timed node registered again"));
	valid &= polls && !ret && timed_written();
	if (!ret && timed_reg(OB_PR_RSEQ_OP_UNREGISTER, ctx->type)) {
		fprintf(stderr, "opbench: register N=%d: the timed node cannot be unregistered\n", n);
		return 2;
	}
	ops_unregister(&to);
	return !valid;
}
