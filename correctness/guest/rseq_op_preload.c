// SPDX-License-Identifier: GPL-2.0
/*
 * rseq_op_preload.c - give every rseq selftest thread an RSEQ operation.
 *
 * LD_PRELOAD=./rseq_op_preload.so ./param_test ...
 *
 * Interposes librseq's __rseq_register_current_thread(): after the real one
 * registered the thread's rseq area, registers one RESET operation on a
 * thread-local word, so that the selftest runs with the operation walk on
 * its exit path. Legacy (v1) registrations are refused operations by the
 * kernel; that is counted, not an error. At exit, prints one line:
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

#ifndef PR_RSEQ_OP
#define PR_RSEQ_OP		82
#define PR_RSEQ_OP_REGISTER	1
#define PR_RSEQ_OP_UNREGISTER	2
#endif

static __thread struct rseq_op_reset op;
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
	memset(&op, 0, sizeof(op));
	op.node.type = RSEQ_OP_RESET;
	op.dst = (uintptr_t)&word;
	op.len = sizeof(word);
	if (prctl(PR_RSEQ_OP, PR_RSEQ_OP_REGISTER, (unsigned long)&op, 0, 0) == 0) {
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
	if (registered &&
	    prctl(PR_RSEQ_OP, PR_RSEQ_OP_UNREGISTER, (unsigned long)&op, 0, 0) == 0)
		registered = 0;
	return real();
}

static void __attribute__((destructor)) report(void)
{
	fprintf(stderr, "rseq_op_preload: threads=%lu with_ops=%lu refused=%lu\n",
		nr_threads, nr_ops, nr_refused);
}
