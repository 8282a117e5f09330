// SPDX-License-Identifier: GPL-2.0
/*
 * rseq_op_preload.c - give every rseq selftest thread an RSEQ operation.
 *
 * LD_PRELOAD=./rseq_op_preload.so ./param_test ...
 *
 * Interposes librseq's __rseq_register_current_thread(): after the real one
 * registered the thread's rseq area, registers one RESET operation on a
 * thread-local word, so that the selftest runs with the operation walk on
 * its exit path: a RESET node of the list ABI (ops, v2, the RFC), or,
 * against the headers of a kernel with the handle ABI (min: RSEQ_OP_SIZE_VER0
 * in linux/rseq.h), a zero operation added with PR_RSEQ_OPS. Refusals
 * (the list ABI's of legacy registrations) are counted, not errors. At
 * exit, prints one line:
 *   rseq_op_preload: threads=N with_ops=M refused=R
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include <linux/rseq.h>

#ifdef RSEQ_OP_SIZE_VER0
/* The handle ABI: the kernel keeps a copy, and names it by a handle. */
#define PR_RSEQ_OPS		83
#define PR_RSEQ_OPS_ADD		1
#define PR_RSEQ_OPS_DEL		2

static __thread struct rseq_op op;
static __thread long handle;

static int op_register(uint64_t *w)
{
	memset(&op, 0, sizeof(op));
	op.addr = (uintptr_t)w;
	op.len = sizeof(*w);
	op.type = RSEQ_OP_TYPE_ZERO;
	handle = prctl(PR_RSEQ_OPS, PR_RSEQ_OPS_ADD, (unsigned long)&op, sizeof(op), 0);
	return handle < 0 ? -1 : 0;
}

static int op_unregister(void)
{
	return prctl(PR_RSEQ_OPS, PR_RSEQ_OPS_DEL, handle, 0, 0);
}
#else
#ifndef PR_RSEQ_OP
#define PR_RSEQ_OP		82
#define PR_RSEQ_OP_REGISTER	1
#define PR_RSEQ_OP_UNREGISTER	2
#endif

static __thread struct rseq_op_reset op;

static int op_register(uint64_t *w)
{
	memset(&op, 0, sizeof(op));
	op.node.type = RSEQ_OP_RESET;
	op.dst = (uintptr_t)w;
	op.len = sizeof(*w);
	return prctl(PR_RSEQ_OP, PR_RSEQ_OP_REGISTER, (unsigned long)&op, 0, 0);
}

static int op_unregister(void)
{
	return prctl(PR_RSEQ_OP, PR_RSEQ_OP_UNREGISTER, (unsigned long)&op, 0, 0);
}
#endif

static __thread uint64_t word;
static __thread int registered;
static unsigned long nr_threads, nr_ops, nr_refused;

int __rseq_register_current_thread(bool nolibc, bool legacy);

int __rseq_register_current_thread(bool nolibc, bool legacy)
{
	static int (*real)(bool, bool);
	int ret;

	if (!real)
		real = (int (*)(bool, bool))dlsym(RTLD_NEXT, "__rseq_register_current_thread");
	if (!real)
		return -1;
	ret = real(nolibc, legacy);
	if (ret || registered)
		return ret;
	__atomic_add_fetch(&nr_threads, 1, __ATOMIC_RELAXED);
	if (op_register(&word) == 0) {
		registered = 1;
		__atomic_add_fetch(&nr_ops, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&nr_refused, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

int rseq_unregister_current_thread(void);

int rseq_unregister_current_thread(void)
{
	static int (*real)(void);

	if (!real)
		real = (int (*)(void))dlsym(RTLD_NEXT, "rseq_unregister_current_thread");
	if (!real)
		return -1;
	if (registered && op_unregister() == 0)
		registered = 0;
	return real();
}

static void __attribute__((destructor)) report(void)
{
	fprintf(stderr, "rseq_op_preload: threads=%lu with_ops=%lu refused=%lu\n",
		nr_threads, nr_ops, nr_refused);
}
