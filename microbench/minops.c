// SPDX-License-Identifier: GPL-2.0
/*
 * minops.c - registration of operations with the minimal kernel-owned ABI
 * (the min flavour): prctl(PR_RSEQ_OPS, ADD) copies a description of the
 * word to zero and returns a handle, which DEL names. The nodes that
 * op_node_init() fills are turned into descriptions: only OP_NULL, an
 * 8-byte store of zero, exists in this ABI; the other types are refused
 * with -EPROTONOSUPPORT, which the records report as unsupported cells.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "minops.h"

/*
 * The handles of the calling thread's operations, in the order they were
 * added: reg.c removes a backend's operations newest first, so the last
 * entry is the one looked for, but any is found.
 */
struct held {
	const void *node;
	long handle;
};
static __thread struct held *held;
static __thread int nr_held, cap_held;

static long ops_prctl(unsigned long cmd, unsigned long a3, unsigned long a4,
		      unsigned long a5)
{
	long r = prctl(OB_PR_RSEQ_OPS, cmd, a3, a4, a5);

	return r < 0 ? -errno : r;
}

/*
 * Whether the kernel has the ABI: GET with no array answers how many
 * operations the thread holds. -ENOPROTOOPT for a kernel without
 * PR_RSEQ_OPS (-EINVAL from prctl), -ENXIO without an rseq registration.
 */
static int backend_begin(void)
{
	long r = ops_prctl(OB_PR_RSEQ_OPS_GET, 0, 0, 0);

	if (r == -EINVAL)
		return -ENOPROTOOPT;
	return r < 0 ? (int)r : 0;
}

static int backend_add(const void *n, enum op_type type)
{
	const struct ob_rseq_op_reset *r = n;
	struct ob_rseq_op op;
	long h;

	if (type != OP_NULL)
		return -EPROTONOSUPPORT;
	if (nr_held == cap_held) {
		int cap = cap_held ? 2 * cap_held : 16;
		struct held *p = realloc(held, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		held = p;
		cap_held = cap;
	}
	memset(&op, 0, sizeof(op));
	op.addr = r->dst;
	op.len = sizeof(uint64_t);
	op.type = OB_RSEQ_OP_TYPE_ZERO;
	h = ops_prctl(OB_PR_RSEQ_OPS_ADD, (unsigned long)&op, sizeof(op), 0);
	if (h < 0)
		return (int)h;
	held[nr_held].node = n;
	held[nr_held].handle = h;
	nr_held++;
	return 0;
}

static int backend_remove(const void *n, enum op_type type)
{
	int i;
	long r;

	(void)type;
	for (i = nr_held - 1; i >= 0 && held[i].node != n; i--)
		;
	if (i < 0)
		return -ENOENT;
	r = ops_prctl(OB_PR_RSEQ_OPS_DEL, held[i].handle, 0, 0);
	if (r < 0)
		return (int)r;
	held[i] = held[--nr_held];
	return 0;
}

static void backend_end(void)
{
	free(held);
	held = NULL;
	nr_held = cap_held = 0;
}

static const char *backend_refusal(int err)
{
	switch (err) {
	case -ENOPROTOOPT:
		return "kernel without PR_RSEQ_OPS (the handle ABI)";
	case -ENXIO:
		return "no rseq registration";
	case -ENOSPC:
		return "the kernel's limit of operations (ENOSPC)";
	case -EPROTONOSUPPORT:
		return "only zero stores in the handle ABI";
	default:
		return "PR_RSEQ_OPS_ADD refused";
	}
}

const struct ops_backend minops_backend = {
	.name = "min",
	.thread_begin = backend_begin,
	.add = backend_add,
	.remove = backend_remove,
	.thread_end = backend_end,
	.refusal = backend_refusal,
};
