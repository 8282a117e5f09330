// SPDX-License-Identifier: GPL-2.0
/*
 * prime-signals.c - a workload with a known number of operation-list walks.
 *
 * Registers N RESET operations (default 7) on glibc's own rseq area, then
 * raises COUNT signals (default 1009, a prime) with an empty handler. The
 * ops kernel walks the list once per delivery, on the way out to the
 * handler. Context switches of the thread walk the list too: they are
 * counted from the first registration to the last unregistration (after
 * it, nothing walks), and printed, so that a tracer's count can be
 * checked:
 *     walks = signals + switches
 * exactly when no switch fell inside a raise() (it then shares the
 * signal's walk), and signals <= walks <= signals + switches always.
 * switches_registering counts those that fell between the first and the
 * last registration: a walk there applies fewer than N nodes.
 * The process names itself "primesig", for tracers to filter on.
 *
 * Usage: prime-signals [COUNT [N]]
 * Output: one JSON line, e.g.
 *     {"signals":1009,"nr_ops":7,"switches":0,"switches_registering":0,
 *      "resets_checked":1}
 * Exit status: 0; 1 when the operations could not be registered or the
 * last signal did not reset the words; 4 (kselftest SKIP) without them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/rseq.h>

#include "../microbench/rseq-op-abi.h"

#define MAX_OPS	OB_RSEQ_OP_LIST_LIMIT

static struct ob_rseq_op_reset nodes[MAX_OPS] __attribute__((aligned(8)));
static uint64_t words[MAX_OPS];

static void empty_handler(int sig)
{
	(void)sig;
}

static long switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

int main(int argc, char **argv)
{
	long count = argc > 1 ? strtol(argv[1], NULL, 0) : 1009;
	int n = argc > 2 ? atoi(argv[2]) : 7, i, reset = 1;
	struct sigaction sa;
	long sw, sw_reg;

	if (count < 1 || n < 1 || n > MAX_OPS) {
		fprintf(stderr, "usage: prime-signals [COUNT>0 [1<=N<=%d]]\n",
			MAX_OPS);
		return 2;
	}
	prctl(PR_SET_NAME, "primesig", 0, 0, 0);
	if (__rseq_size <= 32) {
		fprintf(stderr, "prime-signals: glibc's rseq area is %u bytes "
			"(legacy): no operations on it\n", __rseq_size);
		return 4;
	}
	sw = switches();
	for (i = 0; i < n; i++) {
		nodes[i].node.type = OB_RSEQ_OP_RESET;
		nodes[i].dst = (uintptr_t)&words[i];
		nodes[i].len = sizeof(uint64_t);
		if (prctl(OB_PR_RSEQ_OP, OB_PR_RSEQ_OP_REGISTER,
			  (unsigned long)&nodes[i], 0, 0)) {
			fprintf(stderr, "prime-signals: PR_RSEQ_OP register: %s\n",
				strerror(errno));
			return errno == EINVAL && i == 0 ? 4 : 1;
		}
	}
	sw_reg = switches() - sw;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = empty_handler;
	sigaction(SIGUSR1, &sa, NULL);

	for (long s = 0; s < count; s++) {
		if (s == count - 1)
			for (i = 0; i < n; i++)
				words[i] = ~0ULL;
		raise(SIGUSR1);
	}
	for (i = 0; i < n; i++)
		if (words[i])
			reset = 0;
	/* Nothing walks after this: the count of switches ends here. */
	for (i = n - 1; i >= 0; i--)
		if (prctl(OB_PR_RSEQ_OP, OB_PR_RSEQ_OP_UNREGISTER,
			  (unsigned long)&nodes[i], 0, 0)) {
			fprintf(stderr, "prime-signals: PR_RSEQ_OP unregister: %s\n",
				strerror(errno));
			return 1;
		}
	sw = switches() - sw;
	printf("{\"signals\":%ld,\"nr_ops\":%d,\"switches\":%ld,"
	       "\"switches_registering\":%ld,\"resets_checked\":%d}\n",
	       count, n, sw, sw_reg, reset);
	return reset ? 0 : 1;
}
