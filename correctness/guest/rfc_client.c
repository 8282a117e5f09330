// SPDX-License-Identifier: GPL-2.0
/*
 * rfc_client - a user of RSEQ operations written against the RFC's uapi
 * header ("[RFC PATCH 0/5] rseq: add support for RSEQ operations"), with
 * every name that header gives: the anonymous union in struct rseq
 * (rseq_op_list, op_used[2], reserved), the node layouts, the flags, the
 * list limit and the prctl numbers. correctness/selftests-build.sh builds it
 * against each flavour's exported headers, so a name the series dropped or
 * renamed fails the build; in the guest it registers operations and checks
 * that the kernel applies them and keeps the RFC's layout of the sentinel.
 *
 * Run with glibc's rseq registration off (it registers its own area).
 * Exit status: 0 pass, 1 fail, 4 skip (kernel without RSEQ operations).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/prctl.h>
#include <linux/rseq.h>

#include "sched_out.h"

#define SIG		0x53053053

/* The RFC's names and layout, checked at build time. */
_Static_assert(offsetof(struct rseq, rseq_op_list) == 32, "sentinel at 32");
_Static_assert(offsetof(struct rseq, op_used) == 32, "op_used aliases the links");
_Static_assert(offsetof(struct rseq, reserved) == 48, "reserved at 48");
_Static_assert(offsetof(struct rseq_op_reset, src) == 24, "src at 24");
_Static_assert(offsetof(struct rseq_op_reset, dst) == 32, "dst at 32");
_Static_assert(offsetof(struct rseq_op_reset, len) == 40, "len at 40");
_Static_assert(offsetof(struct rseq_op_reset_with_stride, dst_stride) == 40,
	       "dst_stride at 40");
_Static_assert(offsetof(struct rseq_op_reset_with_stride, len) == 48, "len at 48");
_Static_assert(RSEQ_OP_LIST_LIMIT == 2048, "limit");
_Static_assert(PR_RSEQ_OP == 82 && PR_RSEQ_OP_REGISTER == 1 &&
	       PR_RSEQ_OP_UNREGISTER == 2, "prctl numbers");

static __thread struct rseq area __attribute__((aligned(64)));
static struct rseq_op_reset reset;
static struct rseq_op_reset_with_stride strided;
static uint64_t word, slots[8192];

static int fail(const char *what)
{
	fprintf(stderr, "rfc_client: %s\n", what);
	return 1;
}

int main(void)
{
	unsigned long size = getauxval(AT_RSEQ_FEATURE_SIZE);
	unsigned int cpu;

	if (size < 32)
		size = 32;
	if (size > sizeof(area))
		size = sizeof(area);
	if (syscall(__NR_rseq, &area, (unsigned int)size, 0, SIG))
		return fail(errno == EBUSY ? "rseq already registered: set GLIBC_TUNABLES=glibc.pthread.rseq=0"
					   : "rseq registration failed");
	if (!(area.flags & RSEQ_CS_FLAG_RSEQ_OP_AVAILABLE)) {
		printf("rfc_client: kernel without RSEQ operations: skip\n");
		return 4;
	}
	/* An empty list: both links of the sentinel point at it. */
	if (area.op_used[0] != (uintptr_t)&area.rseq_op_list ||
	    area.op_used[1] != (uintptr_t)&area.rseq_op_list)
		return fail("sentinel not linked to itself after registration");

	reset.node.type = RSEQ_OP_RESET;
	reset.dst = (uintptr_t)&word;
	reset.len = sizeof(word);
	strided.node.type = RSEQ_OP_RESET_WITH_STRIDE_CPUID;
	strided.dst = (uintptr_t)slots;
	strided.dst_stride = sizeof(slots[0]);
	strided.len = sizeof(slots[0]);
	if (prctl(PR_RSEQ_OP, PR_RSEQ_OP_REGISTER, &reset, 0, 0) ||
	    prctl(PR_RSEQ_OP, PR_RSEQ_OP_REGISTER, &strided, 0, 0))
		return fail("PR_RSEQ_OP_REGISTER refused a pristine node");
	if (!(area.flags & RSEQ_CS_FLAG_RSEQ_OP_ENABLED))
		return fail("RSEQ_CS_FLAG_RSEQ_OP_ENABLED not set");
	/* Registered last, first in the list. */
	if (area.op_used[0] != (uintptr_t)&strided)
		return fail("op_used[0] does not name the first node");

	word = 1;
	memset(slots, 0xff, sizeof(slots));
	sched_out();
	cpu = area.cpu_id;
	if (cpu >= sizeof(slots) / sizeof(slots[0]))
		return fail("CPU number beyond the test's slots");
	if (__atomic_load_n(&word, __ATOMIC_RELAXED) != 0)
		return fail("RSEQ_OP_RESET not applied after a sleep");
	if (__atomic_load_n(&slots[cpu], __ATOMIC_RELAXED) != 0)
		return fail("RSEQ_OP_RESET_WITH_STRIDE_CPUID not applied to the CPU's slot");

	if (prctl(PR_RSEQ_OP, PR_RSEQ_OP_UNREGISTER, &reset, 0, 0) ||
	    prctl(PR_RSEQ_OP, PR_RSEQ_OP_UNREGISTER, &strided, 0, 0))
		return fail("PR_RSEQ_OP_UNREGISTER refused a registered node");
	if (area.flags & RSEQ_CS_FLAG_RSEQ_OP_ENABLED)
		return fail("RSEQ_CS_FLAG_RSEQ_OP_ENABLED still set with no node");
	printf("rfc_client: RFC names and layout build; operations applied on CPU %u\n", cpu);
	return 0;
}
